//! `cargo xtask e2e --runtime NAME`: builds normfuzz and the mock servers, then runs
//! `normfuzz e2e` with the runtime's adapter file (`harness/runtimes/NAME.toml`).

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::{cargo, step};

/// Runs the e2e campaign; returns normfuzz's exit code.
pub fn e2e(root: &Path, runtime: &str, args: &[String]) -> Result<i32> {
    let adapter = root
        .join("harness/runtimes")
        .join(format!("{runtime}.toml"));
    if !adapter.is_file() {
        bail!(
            "no adapter for runtime {runtime:?}: {} does not exist",
            adapter.display()
        );
    }
    step(
        "cargo build --release -p normfuzz -p mock-providers",
        cargo(
            root,
            &[
                "build",
                "--release",
                "--quiet",
                "-p",
                "normfuzz",
                "-p",
                "mock-providers",
            ],
        ),
    )?;
    let status = Command::new(root.join("target/release/normfuzz"))
        .current_dir(root)
        .arg("e2e")
        .arg("--adapter")
        .arg(&adapter)
        .args(args)
        .status()
        .context("cannot run normfuzz e2e")?;
    Ok(status.code().unwrap_or(2))
}
