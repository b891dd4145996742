//! What `cargo xtask ci` needs beyond a Rust toolchain, provisioned before the gate starts, so
//! that README's test command passes on a fresh Debian machine and `.ci/run` is that command
//! alone: rustfmt and clippy (rustup), Node/npm and Chromium (Debian's packages; installing them
//! needs root), check-jsonschema (PyPI) and mdbook (crates.io), each installed once per pinned
//! version into `~/.cache/normfuzz/tools/`. The gate runs on the machine's python3 (Debian 12's
//! 3.11: coverage falls back to `sys.settrace` before 3.12); only the AstrBot e2e smoke needs a
//! newer one (astrbot 4.29.3 declares Requires-Python >=3.12), looked for on PATH and under
//! pyenv since no registry the gate may use ships one. Without it that smoke is skipped, and
//! says why.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

use crate::fs::cache_root;
use crate::matrix::install::find_python_here;
use crate::matrix::{Install, load_all};

/// The check-jsonschema release the workflow schemas are checked with.
const CHECK_JSONSCHEMA: (&str, &str) = ("check-jsonschema", "0.39.0");
/// The mdbook release the guide is built with.
const MDBOOK: (&str, &str) = ("mdbook", "0.5.4");
/// Written last into a tool's folder: a folder without it is a broken install, made again.
const COMPLETE: &str = ".normfuzz-complete";

/// The provisioned tools the gate runs by path (mdbook, a long build on a fresh machine, is
/// `mdbook()`'s: the gate builds it beside its own build).
pub struct Tools {
    pub check_jsonschema: PathBuf,
    /// Why the `python_for` runtime's e2e smoke cannot run here (no Python its packages
    /// accept), if so.
    pub python_missing: Option<String>,
}

/// Provisions what the gate needs; `python_for` is the runtime (a folder of
/// `harness/runtimes/`) whose `python` minimum must be met.
pub fn provision(root: &Path, python_for: &str) -> Result<Tools> {
    eprintln!(
        "    rustfmt, clippy, Node, Chromium, python3-venv; check-jsonschema and mdbook cached"
    );
    for (component, subcommand) in [("rustfmt", "fmt"), ("clippy", "clippy")] {
        if !succeeds(&mut crate::cargo(root, &[subcommand, "--version"])) {
            run(Command::new("rustup").args(["component", "add", component]))
                .with_context(|| format!("cannot add the rustup component {component}"))?;
        }
    }
    // The MCP SDK tests and the openclaw install need npm; report.html is checked in headless
    // Chromium at the path Debian's package installs it to (harness/tests/it/html_report.rs).
    let mut packages = Vec::new();
    if !on_path("node") || !on_path("npm") {
        packages.extend(["nodejs", "npm"]);
    }
    if !Path::new("/usr/bin/chromium").is_file() {
        packages.push("chromium");
    }
    // check-jsonschema's venv: Debian's python3 makes one only with python3-venv.
    if !succeeds(Command::new("python3").args(["-c", "import ensurepip, venv"])) {
        packages.push("python3-venv");
    }
    apt_install(&packages, running_as_root()?)?;
    let python_missing = python(root, python_for)?;
    Ok(Tools {
        check_jsonschema: check_jsonschema()?,
        python_missing,
    })
}

/// The cached check-jsonschema, installed from PyPI into a venv of its own on first use.
fn check_jsonschema() -> Result<PathBuf> {
    cached(&cache_root().join("tools"), CHECK_JSONSCHEMA, |dir| {
        run(Command::new("python3").arg("-m").arg("venv").arg(dir))?;
        run(Command::new(dir.join("bin/pip")).args([
            "install",
            "--quiet",
            "--disable-pip-version-check",
            &format!("{}=={}", CHECK_JSONSCHEMA.0, CHECK_JSONSCHEMA.1),
        ]))
    })
}

/// The cached mdbook, built from crates.io on first use (8 minutes on a shared 2-core machine).
pub fn mdbook() -> Result<PathBuf> {
    cached(&cache_root().join("tools"), MDBOOK, |dir| {
        // Without default features: no `serve`/`watch` (a web server and a file watcher the
        // gate does not use), fewer crates to build.
        // Run in the tool's folder, so that no repository's .cargo/config applies.
        let mut install = crate::cargo(
            dir,
            &["install", "--locked", "--quiet", "--no-default-features"],
        );
        run(install
            .args(["--version", MDBOOK.1, "--root"])
            .arg(dir)
            .arg(MDBOOK.0))
    })
}

/// `bin/<name>` in `<tools>/<name>-<version>/`, installed there by `install` unless a complete
/// install is there already; a folder left by a failed or interrupted install is removed first.
fn cached(
    tools: &Path,
    (name, version): (&str, &str),
    install: impl FnOnce(&Path) -> Result<()>,
) -> Result<PathBuf> {
    let dir = tools.join(format!("{name}-{version}"));
    let bin = dir.join("bin").join(name);
    if dir.join(COMPLETE).is_file() && bin.is_file() {
        return Ok(bin);
    }
    eprintln!("    installing {name} {version} into {}", dir.display());
    if dir.exists() {
        std::fs::remove_dir_all(&dir)
            .with_context(|| format!("cannot remove the broken install {}", dir.display()))?;
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    // A venv cannot be moved once made, so the install is made in place and marked complete.
    install(&dir).with_context(|| format!("cannot install {name} {version}"))?;
    if !bin.is_file() {
        bail!("installing {name} {version} left no {}", bin.display());
    }
    crate::fs::write_atomic(&dir.join(COMPLETE), version.as_bytes())?;
    Ok(bin)
}

/// Whether this process runs as root (apt-get needs it).
fn running_as_root() -> Result<bool> {
    let uid = Command::new("id")
        .arg("-u")
        .output()
        .context("cannot run `id -u`")?;
    Ok(String::from_utf8_lossy(&uid.stdout).trim() == "0")
}

/// Installs Debian packages with apt-get, or explains how when this user cannot.
fn apt_install(packages: &[&str], as_root: bool) -> Result<()> {
    if packages.is_empty() {
        return Ok(());
    }
    let list = packages.join(" ");
    if !on_path("apt-get") {
        bail!("the gate needs the Debian packages {list}, and there is no apt-get: install them");
    }
    if !as_root {
        bail!(
            "the gate needs the Debian packages {list}, and apt-get needs root: run \
             `sudo apt-get update && sudo apt-get install -y {list}`, then this command again"
        );
    }
    eprintln!("    apt-get install {list}");
    run(Command::new("apt-get").arg("update").arg("-qq"))?;
    run(Command::new("apt-get")
        .args(["install", "-y", "-qq"])
        .args(packages)
        .env("DEBIAN_FRONTEND", "noninteractive"))
}

/// Why the runtime's e2e smoke cannot run here, said before the build: its `python` minimum
/// (its packages' Requires-Python) is not met by any Python on this machine.
fn python(root: &Path, runtime: &str) -> Result<Option<String>> {
    for (_, unit) in load_all(&root.join("harness/runtimes"), &[runtime.to_string()])? {
        if let Install::Packages {
            python: Some(min), ..
        } = unit.install
            && let Err(e) = find_python_here(min)
        {
            let why = format!(
                "the {runtime} e2e smoke needs Python >= {min} (its package requires it; \
                 nothing else in the gate does): {e:#}"
            );
            eprintln!("    {why}\n    the gate skips that smoke");
            return Ok(Some(why));
        }
    }
    Ok(None)
}

/// Whether `name` is an executable file in a folder of PATH.
fn on_path(name: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| is_executable(&dir.join(name))))
}

fn is_executable(file: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    file.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Whether `cmd` runs and exits 0 (its output discarded).
fn succeeds(cmd: &mut Command) -> bool {
    cmd.stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Runs a provisioning command, its output shown; fails on a non-zero exit.
fn run(cmd: &mut Command) -> Result<()> {
    let program = cmd.get_program().to_owned();
    let status = cmd
        .stdin(Stdio::null())
        .status()
        .with_context(|| format!("cannot run {}", Path::new(&program).display()))?;
    if !status.success() {
        let args: Vec<&OsStr> = cmd.get_args().collect();
        bail!(
            "{} {args:?} failed ({status})",
            Path::new(&program).display()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_install(dir: &Path) -> Result<()> {
        std::fs::create_dir_all(dir.join("bin"))?;
        std::fs::write(dir.join("bin/tool"), "")?;
        Ok(())
    }

    #[test]
    fn a_tool_is_installed_once_per_version() {
        let tools = tempfile::tempdir().unwrap();
        let bin = cached(tools.path(), ("tool", "1.0"), fake_install).unwrap();
        assert_eq!(bin, tools.path().join("tool-1.0/bin/tool"));
        // Cached: the installer is not called again.
        let again = cached(tools.path(), ("tool", "1.0"), |_| bail!("installed twice")).unwrap();
        assert_eq!(again, bin);
        // Another pinned version is another install.
        let err = cached(tools.path(), ("tool", "2.0"), |_| bail!("no network")).unwrap_err();
        assert!(
            format!("{err:#}").contains("cannot install tool 2.0: no network"),
            "{err:#}"
        );
    }

    #[test]
    fn an_interrupted_install_is_made_again() {
        let tools = tempfile::tempdir().unwrap();
        // A failure after the binary was written (a venv whose pip install failed) is not
        // complete: the next run removes the folder and installs again.
        let err = cached(tools.path(), ("tool", "1.0"), |dir| {
            fake_install(dir)?;
            bail!("pip failed")
        });
        assert!(err.is_err());
        let stale = tools.path().join("tool-1.0/stale");
        std::fs::write(&stale, "").unwrap();
        cached(tools.path(), ("tool", "1.0"), fake_install).unwrap();
        assert!(!stale.exists(), "the broken install was removed first");
        // An installer that leaves no binary fails with its path.
        let err = cached(tools.path(), ("other", "1.0"), |_| Ok(())).unwrap_err();
        assert!(format!("{err:#}").contains("left no"), "{err:#}");
    }

    #[test]
    fn apt_get_without_root_says_how() {
        apt_install(&[], false).unwrap();
        // The machines this runs on are Debian's: apt-get is there.
        let err = apt_install(&["nodejs", "npm"], false).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the gate needs the Debian packages nodejs npm, and apt-get needs root: run \
             `sudo apt-get update && sudo apt-get install -y nodejs npm`, then this command again"
        );
    }

    #[test]
    fn finds_executables_on_path() {
        assert!(on_path("sh"));
        assert!(!on_path("no-such-tool-normfuzz"));
    }
}
