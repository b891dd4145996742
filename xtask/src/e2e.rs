//! `cargo xtask e2e --runtime NAME`: builds normfuzz and the mock servers, then runs
//! `normfuzz e2e` with the runtime's adapter file (`harness/runtimes/NAME.toml`). The e2e smoke
//! of `cargo xtask ci` runs the same with the binaries the tests were run with.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::{cargo, step};

/// `normfuzz` and `mock-providers` (the MCP server the runtime starts) in release mode.
pub fn build(root: &Path) -> Result<PathBuf> {
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
    Ok(root.join("target/release/normfuzz"))
}

/// Runs the e2e campaign with `normfuzz` (`mock-providers` next to it); returns its exit code.
pub fn e2e(root: &Path, normfuzz: &Path, runtime: &str, args: &[String]) -> Result<i32> {
    let adapter = root
        .join("harness/runtimes")
        .join(format!("{runtime}.toml"));
    if !adapter.is_file() {
        bail!(
            "no adapter for runtime {runtime:?}: {} does not exist",
            adapter.display()
        );
    }
    let status = Command::new(normfuzz)
        .current_dir(root)
        .arg("e2e")
        .arg("--adapter")
        .arg(&adapter)
        .args(args)
        .status()
        .context("cannot run normfuzz e2e")?;
    Ok(status.code().unwrap_or(2))
}
