//! `cargo xtask e2e --runtime NAME`: builds normfuzz and the mock servers, then runs
//! `normfuzz e2e` with the runtime's adapter file, `harness/runtimes/NAME/e2e.toml` (for an SDK's
//! adapter with `unit_install`, the runtime matrix's installer puts its packages in place
//! first). The e2e smoke of `cargo xtask ci` runs the same with the binaries the tests
//! were run with.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};

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

/// Installs `runtime`'s unit-level packages into the cache (`cargo xtask matrix`'s installer),
/// unless they are there already.
pub fn install_unit(root: &Path, runtime: &str) -> Result<()> {
    let runtimes = root.join("harness/runtimes");
    for (_, unit) in crate::matrix::load_all(&runtimes, &[runtime.to_string()])? {
        crate::matrix::install::ensure(&unit, &crate::fs::cache_root())?;
    }
    Ok(())
}

/// Runs the e2e campaign with `normfuzz` (`mock-providers` next to it); returns its exit code.
pub fn e2e(root: &Path, normfuzz: &Path, runtime: &str, args: &[String]) -> Result<i32> {
    let dir = root.join("harness/runtimes").join(runtime);
    let adapter = dir.join(crate::matrix::E2E_ADAPTER);
    let text = std::fs::read_to_string(&adapter).with_context(|| {
        format!(
            "no e2e adapter for runtime {runtime:?}: cannot read {}",
            adapter.display()
        )
    })?;
    let table: toml::Table =
        toml::from_str(&text).with_context(|| format!("invalid {}", adapter.display()))?;
    // An SDK's adapter reuses its unit-level install (`unit_install`), made here (a no-op once
    // made, as after `cargo xtask ci`'s early install); any other adapter's own `[[install]]`
    // steps are run by `normfuzz e2e`.
    if table.get("unit_install").and_then(toml::Value::as_bool) == Some(true) {
        install_unit(root, runtime)?;
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
