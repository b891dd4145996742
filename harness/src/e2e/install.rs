//! Installs a runtime into its cache folder on first use (npm, one prefix per step) and reuses it
//! afterwards. A marker written last, atomically, holds the install steps: an interrupted or
//! changed install is redone from scratch instead of half-trusted.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::adapter::{Adapter, expand_all};
use crate::fs::write_atomic;

/// The install folder of `adapter` under a cache root (default: [`crate::fs::cache_root`]); a
/// `unit_install` runtime's is the runtime matrix's (`unit-<name>-<version>`).
pub fn runtime_dir(adapter: &Adapter, cache_root: Option<PathBuf>) -> PathBuf {
    let prefix = if adapter.unit_install { "unit-" } else { "" };
    cache_root
        .unwrap_or_else(crate::fs::cache_root)
        .join("runtimes")
        .join(format!("{prefix}{}-{}", adapter.name, adapter.version))
}

/// PATH for the runtime: the adapter's folders first, then the caller's.
pub fn runtime_path(adapter: &Adapter, cache: &Path) -> Result<String> {
    let vars = std::collections::BTreeMap::from([("cache", cache.display().to_string())]);
    let mut parts = expand_all(&adapter.run.path, &vars)?;
    if let Some(path) = std::env::var_os("PATH") {
        parts.push(path.to_string_lossy().into_owned());
    }
    Ok(parts.join(":"))
}

/// Makes sure `adapter` is installed under `cache`; returns the runtime's version line.
pub fn ensure(adapter: &Adapter, cache: &Path) -> Result<String> {
    let marker = cache.join(".normfuzz-installed.json");
    if adapter.unit_install {
        if !marker.is_file() {
            bail!(
                "{} is not installed in {}: `cargo xtask e2e --runtime {}` (or `cargo xtask matrix \
                 --runtimes {}`) installs it",
                adapter.label(),
                cache.display(),
                adapter.name,
                adapter.name
            );
        }
        return version(adapter, cache);
    }
    let want = serde_json::json!({
        "runtime": adapter.label(),
        "steps": adapter.install.iter().map(|s| serde_json::json!({
            "dir": s.dir, "package": s.package, "npmArgs": s.npm_args})).collect::<Vec<_>>(),
    });
    // One installer at a time per runtime (two runs started together, a matrix next to an
    // e2e run): the others wait for it here, then find the marker. The lock file lives beside
    // the install folder, which an install clears.
    let parent = cache.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent)
        .with_context(|| format!("cannot create {}", parent.display()))?;
    let mut lock_path = cache.as_os_str().to_owned();
    lock_path.push(".lock");
    let lock_path = PathBuf::from(lock_path);
    let lock = std::fs::File::create(&lock_path)
        .with_context(|| format!("cannot create {}", lock_path.display()))?;
    lock.lock()
        .with_context(|| format!("cannot lock {}", lock_path.display()))?;
    let installed = std::fs::read(&marker)
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok());
    if installed.as_ref() != Some(&want) {
        install(adapter, cache)?;
        write_atomic(&marker, format!("{want:#}\n").as_bytes())?;
    }
    drop(lock);
    version(adapter, cache)
}

fn install(adapter: &Adapter, cache: &Path) -> Result<()> {
    if cache.exists() {
        std::fs::remove_dir_all(cache)
            .with_context(|| format!("cannot clear the old install in {}", cache.display()))?;
    }
    std::fs::create_dir_all(cache)?;
    let path = runtime_path(adapter, cache)?;
    let steps = adapter.install.len();
    for (i, step) in adapter.install.iter().enumerate() {
        let npm = which("npm").context(
            "npm is needed to install the runtime (Debian: apt-get install -y nodejs npm)",
        )?;
        let dir = cache.join(&step.dir);
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        write_atomic(
            &dir.join("package.json"),
            b"{\"name\": \"normfuzz-runtime\", \"private\": true}\n",
        )?;
        let label = format!(
            "installing {} ({}/{steps}): npm install {}",
            adapter.label(),
            i + 1,
            step.package
        );
        let log = dir.join("npm-install.log");
        let mut child = Command::new(&npm)
            .current_dir(&dir)
            .args(["install", "--no-audit", "--no-fund", "--loglevel=error"])
            .args(&step.npm_args)
            .arg(&step.package)
            .env("PATH", &path)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&log)?)
            .stderr(std::fs::File::create(dir.join("npm-install.err"))?)
            .spawn()
            .with_context(|| format!("cannot start {}", npm.display()))?;
        let spinner = indicatif::ProgressBar::new_spinner();
        spinner.set_message(label.clone());
        spinner.enable_steady_tick(Duration::from_millis(200));
        let start = Instant::now();
        let status = child.wait()?;
        spinner.finish_and_clear();
        if !status.success() {
            let err = std::fs::read_to_string(dir.join("npm-install.err")).unwrap_or_default();
            bail!(
                "{label} failed ({status}):\n{}",
                err.lines()
                    .rev()
                    .take(20)
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .collect::<Vec<_>>()
                    .join("\n")
            );
        }
        eprintln!("{label}: done in {:.0} s", start.elapsed().as_secs_f64());
    }
    Ok(())
}

fn version(adapter: &Adapter, cache: &Path) -> Result<String> {
    let vars = std::collections::BTreeMap::from([("cache", cache.display().to_string())]);
    let argv = expand_all(&adapter.run.version_command, &vars)?;
    let (program, args) = argv.split_first().context("empty run.version_command")?;
    let output = Command::new(program)
        .args(args)
        .env("PATH", runtime_path(adapter, cache)?)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run {argv:?}"))?;
    if !output.status.success() {
        bail!(
            "{} does not run: {argv:?} exited {}: {}",
            adapter.label(),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
}

/// The first `name` on PATH.
pub fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
    })
}
