//! Installs a runtime's pinned packages into its cache folder once: an npm prefix for Node
//! runtimes, a virtualenv for Python ones. As in the e2e installer
//! (harness/src/runner/e2e/install.rs), a marker naming what was installed is written last,
//! atomically: an interrupted or changed install is redone from scratch, never half-trusted.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail};

use super::{Install, Runtime};
use crate::fs::write_atomic;

/// `$NORMFUZZ_CACHE`, else `$XDG_CACHE_HOME/normfuzz`, else `~/.cache/normfuzz`: the e2e
/// installer's cache root (`default_cache_root` there), so both share one cache.
pub fn cache_root() -> PathBuf {
    if let Some(dir) = std::env::var_os("NORMFUZZ_CACHE") {
        return PathBuf::from(dir);
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| PathBuf::from(".cache"));
    base.join("normfuzz")
}

/// Makes sure `runtime` is installed under `<cache root>/runtimes/unit-<name>-<version>`;
/// returns that folder.
pub fn ensure(runtime: &Runtime, root: &Path) -> Result<PathBuf> {
    let Install::Packages {
        ecosystem,
        packages,
    } = &runtime.install
    else {
        bail!(
            "{} is installed by its e2e adapter (`normfuzz install`), not by the matrix",
            runtime.label()
        );
    };
    let dir = root
        .join("runtimes")
        .join(format!("unit-{}-{}", runtime.name, runtime.version));
    let marker = dir.join(".normfuzz-installed.json");
    let want = serde_json::json!({
        "runtime": runtime.label(),
        "ecosystem": ecosystem,
        "install": packages,
    });
    let installed = std::fs::read(&marker)
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok());
    if installed.as_ref() != Some(&want) {
        if dir.exists() {
            std::fs::remove_dir_all(&dir)
                .with_context(|| format!("cannot clear the old install in {}", dir.display()))?;
        }
        std::fs::create_dir_all(&dir)?;
        let start = Instant::now();
        eprintln!(
            "installing {} into {}: {}",
            runtime.label(),
            dir.display(),
            packages.join(" ")
        );
        match ecosystem {
            Ecosystem::Npm => {
                write_atomic(
                    &dir.join("package.json"),
                    b"{\"name\": \"normfuzz-runtime\", \"private\": true}\n",
                )?;
                run(
                    Command::new("npm")
                        .current_dir(&dir)
                        .args(["install", "--no-audit", "--no-fund", "--loglevel=error"])
                        .args(packages),
                    &dir,
                )?;
            }
            Ecosystem::Pypi => {
                run(
                    Command::new("python3")
                        .args(["-m", "venv"])
                        .arg(dir.join("venv")),
                    &dir,
                )?;
                run(
                    Command::new(dir.join("venv/bin/python"))
                        .args([
                            "-m",
                            "pip",
                            "install",
                            "--quiet",
                            "--disable-pip-version-check",
                        ])
                        .args(packages),
                    &dir,
                )?;
            }
        }
        write_atomic(&marker, format!("{want:#}\n").as_bytes())?;
        eprintln!(
            "installed {} in {:.0} s",
            runtime.label(),
            start.elapsed().as_secs_f64()
        );
    }
    Ok(dir)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Ecosystem {
    Npm,
    Pypi,
}

/// Runs one install command with its output in `<dir>/install.log`; fails with the log's end.
fn run(command: &mut Command, dir: &Path) -> Result<()> {
    let log = dir.join("install.log");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log)?;
    let status = command
        .stdin(Stdio::null())
        .stdout(file.try_clone()?)
        .stderr(file)
        .status()
        .with_context(|| format!("cannot start {command:?}"))?;
    if !status.success() {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(20).collect();
        bail!(
            "{command:?} failed ({status}):\n{}",
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        );
    }
    Ok(())
}
