//! `cargo xtask e2e --runtime NAME`: builds normfuzz and the mock servers, then runs
//! `normfuzz e2e` with the runtime's adapter file (`harness/runtimes/NAME.toml`, or an SDK's
//! `harness/runtimes/NAME/e2e.toml`, whose packages the runtime matrix's installer puts in
//! place first). The e2e smoke of `cargo xtask ci` runs the same with the binaries the tests
//! were run with.

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
    Ok(crate::target_dir(root).join("release/normfuzz"))
}

/// Runs the e2e campaign with `normfuzz` (`mock-providers` next to it); returns its exit code.
pub fn e2e(root: &Path, normfuzz: &Path, runtime: &str, args: &[String]) -> Result<i32> {
    let runtimes = root.join("harness/runtimes");
    let mut adapter = runtimes.join(format!("{runtime}.toml"));
    if !adapter.is_file() {
        adapter = runtimes.join(runtime).join(crate::matrix::E2E_ADAPTER);
        if !adapter.is_file() {
            bail!(
                "no adapter for runtime {runtime:?}: neither {runtime}.toml nor {runtime}/{} under {}",
                crate::matrix::E2E_ADAPTER,
                runtimes.display()
            );
        }
        // The SDK's adapter reuses its unit-level install (`unit_install`).
        for (_, unit) in crate::matrix::load_all(&runtimes, &[runtime.to_string()])? {
            crate::matrix::install::ensure(&unit, &crate::matrix::install::cache_root())?;
        }
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
