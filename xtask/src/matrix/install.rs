//! Installs a runtime's pinned packages into its cache folder once: an npm prefix for Node
//! runtimes, a virtualenv for Python ones. As in the e2e installer
//! (harness/src/e2e/install.rs), a marker naming what was installed is written last,
//! atomically: an interrupted or changed install is redone from scratch, never half-trusted.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail};

use super::{Install, Runtime};
use crate::fs::write_atomic;

/// Makes sure `runtime` is installed under `<cache root>/runtimes/unit-<name>-<version>`;
/// returns that folder.
pub fn ensure(runtime: &Runtime, root: &Path) -> Result<PathBuf> {
    let Install::Packages {
        ecosystem,
        packages,
        python,
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
    ensure_packages(&runtime.label(), &dir, *ecosystem, packages, *python)?;
    Ok(dir)
}

/// Makes sure `packages` are installed in `dir` (an npm prefix, or a venv in `dir/venv` made
/// with the newest Python of at least `python`, else `python3`); `label` names the install in
/// its marker and messages.
pub fn ensure_packages(
    label: &str,
    dir: &Path,
    ecosystem: Ecosystem,
    packages: &[String],
    python: Option<PythonVersion>,
) -> Result<()> {
    let marker = dir.join(".normfuzz-installed.json");
    // Chosen before the marker is read: another interpreter (one installed or removed since)
    // means another venv. Without a minimum, `python3` as before (and no key in the marker, so
    // existing installs stay valid).
    let interpreter = match python {
        Some(min) => Some(find_python_here(min)?),
        None => None,
    };
    let mut want = serde_json::json!({
        "runtime": label,
        "ecosystem": ecosystem,
        "install": packages,
    });
    if let Some(found) = &interpreter {
        want["python"] = serde_json::json!(format!("{} ({})", found.path.display(), found.version));
    }
    let installed = std::fs::read(&marker)
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok());
    if installed.as_ref() != Some(&want) {
        if dir.exists() {
            std::fs::remove_dir_all(dir)
                .with_context(|| format!("cannot clear the old install in {}", dir.display()))?;
        }
        std::fs::create_dir_all(dir)?;
        let start = Instant::now();
        eprintln!(
            "installing {label} into {}: {}",
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
                        .current_dir(dir)
                        .args(["install", "--no-audit", "--no-fund", "--loglevel=error"])
                        .args(packages),
                    dir,
                )?;
            }
            Ecosystem::Pypi => {
                let python = interpreter
                    .as_ref()
                    .map_or_else(|| PathBuf::from("python3"), |found| found.path.clone());
                run(
                    Command::new(python)
                        .args(["-m", "venv"])
                        .arg(dir.join("venv")),
                    dir,
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
                    dir,
                )?;
            }
        }
        write_atomic(&marker, format!("{want:#}\n").as_bytes())?;
        eprintln!(
            "installed {label} in {:.0} s",
            start.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Ecosystem {
    Npm,
    Pypi,
}

/// The newest Python 3 minor version `find_python` looks for.
const NEWEST_PYTHON_MINOR: u32 = 13;

/// A Python 3 version, `3.<minor>`: what `python = "3.12"` in runtime.toml asks for at least.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct PythonVersion {
    pub minor: u32,
}

impl PythonVersion {
    pub fn parse(text: &str) -> Result<PythonVersion> {
        match text.split_once('.') {
            Some(("3", minor))
                if !minor.is_empty() && minor.bytes().all(|b| b.is_ascii_digit()) =>
            {
                Ok(PythonVersion {
                    minor: minor.parse()?,
                })
            }
            _ => bail!("{text:?} is not a Python version: write `python = \"3.X\"` (a minimum)"),
        }
    }
}

impl std::fmt::Display for PythonVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "3.{}", self.minor)
    }
}

/// An interpreter `find_python` ran and found recent enough.
#[derive(Debug)]
pub struct Interpreter {
    pub path: PathBuf,
    pub version: PythonVersion,
}

/// [`find_python`] on this machine: its PATH and pyenv root.
pub fn find_python_here(min: PythonVersion) -> Result<Interpreter> {
    find_python(min, std::env::var_os("PATH").as_deref(), &pyenv_root())
}

/// `$PYENV_ROOT`, else `~/.pyenv`.
fn pyenv_root() -> PathBuf {
    std::env::var_os("PYENV_ROOT")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".pyenv")))
        .unwrap_or_else(|| PathBuf::from(".pyenv"))
}

/// The newest Python 3.X with `min` <= X <= 3.13: for each X from the newest down, `python3.X` in
/// each folder of `path` (the PATH value), then `<pyenv>/versions/3.X*/bin/python3.X`, newest
/// first. Each candidate is run and must report its version: a pyenv shim on PATH exists even
/// when the version it names is not selected, and then fails. The error names every candidate
/// and why it was refused.
pub fn find_python(min: PythonVersion, path: Option<&OsStr>, pyenv: &Path) -> Result<Interpreter> {
    let mut tried = Vec::new();
    for minor in (min.minor..=NEWEST_PYTHON_MINOR.max(min.minor)).rev() {
        let name = format!("python3.{minor}");
        let mut candidates: Vec<PathBuf> = path
            .map(|p| {
                std::env::split_paths(p)
                    .map(|dir| dir.join(&name))
                    .collect()
            })
            .unwrap_or_default();
        let mut versions: Vec<PathBuf> = std::fs::read_dir(pyenv.join("versions"))
            .into_iter()
            .flatten()
            .flatten()
            .filter(|entry| {
                // 3.12, 3.12.1, 3.12-dev; not 3.120.
                let name = entry.file_name();
                let rest = name
                    .to_str()
                    .and_then(|n| n.strip_prefix(&format!("3.{minor}")));
                rest.is_some_and(|r| !r.starts_with(|c: char| c.is_ascii_digit()))
            })
            .map(|entry| entry.path().join("bin").join(&name))
            .collect();
        versions.sort_by(|a, b| b.cmp(a));
        candidates.extend(versions);
        let mut seen = false;
        for candidate in candidates.into_iter().filter(|c| c.is_file()) {
            seen = true;
            match version_of(&candidate) {
                Some(version) if version >= min => {
                    return Ok(Interpreter {
                        path: candidate,
                        version,
                    });
                }
                Some(version) => tried.push(format!("{} is {version}", candidate.display())),
                None => tried.push(format!("{} does not run", candidate.display())),
            }
        }
        if !seen {
            tried.push(format!(
                "no {name} on PATH nor under {}",
                pyenv.join("versions").join(format!("3.{minor}*")).display()
            ));
        }
    }
    bail!(
        "no Python >= {min} found ({}); Debian 12's packages stop at 3.11 and no registry \
         ships one: install one, e.g. `pyenv install {min}`, and put `python{min}` on PATH",
        tried.join("; ")
    )
}

/// `(3, X)` as the interpreter prints it, or None when it does not run (a pyenv shim of a
/// version that is not selected exits 127).
fn version_of(python: &Path) -> Option<PythonVersion> {
    let out = Command::new(python)
        .args(["-c", "import sys; print(sys.version_info[:2])"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?;
    let (major, minor) = text
        .trim()
        .strip_prefix('(')?
        .strip_suffix(')')?
        .split_once(',')?;
    (major.trim() == "3").then_some(())?;
    Some(PythonVersion {
        minor: minor.trim().parse().ok()?,
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes an executable `name` into `dir` that runs the shell line `body`.
    fn fake_python(dir: &Path, name: &str, body: &str) {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// A PATH entry that runs and is new enough wins over pyenv; one that lies about its version
    /// or fails is passed over, and the error names every candidate and how to install one.
    #[test]
    fn find_python_checks_each_candidate_and_explains_a_miss() {
        let min = PythonVersion::parse("3.12").unwrap();
        let bin = tempfile::tempdir().unwrap();
        let pyenv = tempfile::tempdir().unwrap();
        let versions = pyenv.path().join("versions/3.12.1/bin");
        std::fs::create_dir_all(&versions).unwrap();
        std::fs::create_dir_all(pyenv.path().join("versions/3.120/bin")).unwrap();
        fake_python(bin.path(), "python3.13", "echo '(3, 11)'");
        fake_python(&versions, "python3.12", "echo '(3, 12)'");
        let path = bin.path().as_os_str();
        let found = find_python(min, Some(path), pyenv.path()).unwrap();
        assert_eq!(found.path, versions.join("python3.12"));
        assert_eq!(found.version, min);

        std::fs::remove_file(versions.join("python3.12")).unwrap();
        // A pyenv shim whose version is not selected.
        fake_python(bin.path(), "python3.12", "exit 127");
        let err = format!(
            "{:#}",
            find_python(min, Some(path), pyenv.path()).unwrap_err()
        );
        for says in [
            "no Python >= 3.12 found",
            &format!("{} is 3.11", bin.path().join("python3.13").display()),
            &format!("{} does not run", bin.path().join("python3.12").display()),
            "`pyenv install 3.12`",
            "Debian 12's packages stop at 3.11",
        ] {
            assert!(err.contains(says), "{says:?} not in {err}");
        }
        let none = format!(
            "{:#}",
            find_python(min, None, Path::new("/nonexistent")).unwrap_err()
        );
        assert!(
            none.contains("no python3.13 on PATH nor under /nonexistent/versions/3.13*"),
            "{none}"
        );
    }
}
