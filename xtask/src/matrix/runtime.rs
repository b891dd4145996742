//! A runtime of the matrix as its `harness/runtimes/<name>/runtime.toml` describes it: pinned
//! packages, how they install, the function under test and its shim.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::Deserialize;

use super::install::{Ecosystem, PythonVersion};

/// One runtime of the matrix: `harness/runtimes/<name>/runtime.toml`.
#[derive(Debug)]
pub struct Runtime {
    /// The folder name, also the row's name.
    pub name: String,
    /// The package under test and its pinned version.
    pub package: String,
    pub version: String,
    /// The function the shim calls (the guide and the report name it).
    pub function: String,
    /// How the matrix installs the runtime: its own pinned packages, or its e2e adapter's.
    pub install: Install,
    /// The shim's argv; `${cache}` is the install folder, `${adapter}` this file's folder.
    pub command: Vec<String>,
    /// The baseline of known findings for this version, next to this file.
    pub baseline: String,
    /// How long the shim may take to send its handshake, for a runtime whose imports take
    /// longer than the protocol's 10 s on a loaded machine (`conform --handshake-timeout-ms`).
    pub handshake_timeout_ms: Option<u64>,
    /// The functions or files whose coverage the shim reports (`NORMFUZZ_COVERAGE`, the SUT
    /// protocol's coverage extension): `<file glob>[:<function>]`.
    pub coverage: Vec<String>,
}

impl Runtime {
    pub fn label(&self) -> String {
        format!("{}@{}", self.name, self.version)
    }

    /// Reads a `runtime.toml`: exactly one of `ecosystem` with `install`, or `e2e_install = true`;
    /// `python` (a minimum `3.X`) only for a pypi runtime.
    pub fn parse(text: &str) -> Result<Runtime> {
        let raw: RawRuntime = toml::from_str(text)?;
        let python = match (&raw.python, raw.ecosystem) {
            (None, _) => None,
            (Some(text), Some(Ecosystem::Pypi)) => Some(PythonVersion::parse(text)?),
            (Some(_), _) => {
                bail!("`python` (the minimum Python) is only for `ecosystem = \"pypi\"`")
            }
        };
        let install = match (raw.ecosystem, raw.install, raw.e2e_install) {
            (Some(ecosystem), Some(packages), false) => Install::Packages {
                ecosystem,
                packages,
                python,
            },
            (None, None, true) => Install::E2eAdapter,
            (_, _, true) => bail!(
                "`e2e_install = true` installs the runtime with its e2e adapter: \
                 `ecosystem` and `install` must be absent"
            ),
            _ => bail!(
                "a runtime is installed by `ecosystem` and `install` (both), or by its e2e \
                 adapter (`e2e_install = true`)"
            ),
        };
        Ok(Runtime {
            name: raw.name,
            package: raw.package,
            version: raw.version,
            function: raw.function,
            install,
            command: raw.command,
            baseline: raw.baseline,
            handshake_timeout_ms: raw.handshake_timeout_ms,
            coverage: raw.coverage,
        })
    }
}

/// How a runtime of the matrix is installed.
#[derive(Debug)]
pub enum Install {
    /// Pinned npm specs or pip requirements, installed together into the runtime's cache folder.
    Packages {
        ecosystem: Ecosystem,
        packages: Vec<String>,
        /// The oldest Python the packages run on (`python = "3.12"`); the venv is made with
        /// the newest interpreter found that satisfies it (`install::find_python`). None:
        /// `python3`.
        python: Option<PythonVersion>,
    },
    /// By the `[[install]]` steps of the runtime's e2e adapter (`e2e.toml` next to it), through
    /// `normfuzz install`: one install serves both levels (openclaw needs its own Node).
    E2eAdapter,
}

/// `runtime.toml` as written; [`Runtime::parse`] checks which install it names.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRuntime {
    name: String,
    package: String,
    version: String,
    function: String,
    ecosystem: Option<Ecosystem>,
    install: Option<Vec<String>>,
    python: Option<String>,
    #[serde(default)]
    e2e_install: bool,
    command: Vec<String>,
    baseline: String,
    handshake_timeout_ms: Option<u64>,
    #[serde(default)]
    coverage: Vec<String>,
}

/// Every `<dir>/<name>/runtime.toml`, in name order, narrowed to `only` when given.
pub(crate) fn load_all(dir: &Path, only: &[String]) -> Result<Vec<(PathBuf, Runtime)>> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))? {
        let path = entry?.path();
        let file = path.join("runtime.toml");
        if !file.is_file() {
            continue;
        }
        let text = std::fs::read_to_string(&file)?;
        let runtime =
            Runtime::parse(&text).with_context(|| format!("invalid {}", file.display()))?;
        found.push((path, runtime));
    }
    found.sort_by(|a, b| a.1.name.cmp(&b.1.name));
    for name in only {
        if !found.iter().any(|(_, r)| &r.name == name) {
            let known: Vec<&str> = found.iter().map(|(_, r)| r.name.as_str()).collect();
            bail!("no runtime {name:?}; known: {}", known.join(", "));
        }
    }
    found.retain(|(_, r)| only.is_empty() || only.contains(&r.name));
    Ok(found)
}
