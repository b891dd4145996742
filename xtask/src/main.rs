//! `cargo xtask`: the project's entry points (CI gate, benchmarks, fuzzing).
//!
//! Each task is a sequence of cargo invocations run from the workspace root; failures stop the
//! task with a non-zero exit.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

mod bench;
mod capture;
mod ci;
mod docs;
mod e2e;
mod fuzz;
mod matrix;
mod mutants;
mod provision;
// The harness's file helpers (atomic writes, corpus listings), compiled here from the same
// source: std only, so xtask needs no dependency on the `normfuzz` crate for them.
#[path = "../../harness/src/fs.rs"]
mod fs;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};

/// `cargo xtask matrix`'s e2e turns per runtime when `--e2e-cases` is not given and `--cases`
/// is larger.
const DEFAULT_E2E_CASES_MAX: u64 = 16;

#[derive(Parser)]
#[command(name = "cargo xtask", about = "normfuzz project tasks")]
struct Cli {
    #[command(subcommand)]
    task: Task,
}

#[derive(Subcommand)]
enum Task {
    /// The CI gate (README's test command): provisions what it needs beyond Rust (see
    /// `provision`), then the format check, clippy with warnings denied, the guide's build and
    /// link check, every test (cargo profile `ci`), the conform campaigns, the speed gate, the
    /// mutant matrix, the fuzz smoke, the e2e smokes (AstrBot's skipped, saying why, without a
    /// Python 3.12+), the workflow schemas and the readline shim.
    ///
    /// Ends with each step's wall time and a line `N passed, N failed` summing every check
    /// (`, N skipped` after it when a step was).
    Ci,
    /// Install what `cargo xtask ci` needs beyond Rust, or say how: rustfmt and clippy (rustup),
    /// Node/npm and Chromium (apt-get, as root), check-jsonschema (PyPI) and mdbook (crates.io)
    /// cached per pinned version under `~/.cache/normfuzz/tools/` (`$NORMFUZZ_CACHE/tools/`),
    /// and whether a Python new enough for the AstrBot smoke (3.12+) is on PATH or under pyenv.
    Provision,
    /// Build the guide (`docs/`, mdBook) into `target/book/` and check every relative link and
    /// anchor of it, README.md and ARCHITECTURE.md (mdbook provisioned as for `ci`).
    Docs,
    /// Run the criterion benchmarks and print the speed ratios the guide's Speed chapter quotes.
    Bench {
        /// Also time this runtime's own coercion (`harness/runtimes/<ANCHOR>/bench.mjs`, the
        /// runtime installed as for e2e) on the same documents, and print one table of all.
        #[arg(long)]
        anchor: Option<String>,
    },
    /// Build normfuzz in release mode and run `normfuzz conform` with these arguments.
    ///
    /// Without `--sut`, the SUT is the reference itself over the subprocess path
    /// (`normfuzz serve-reference`); without `--cases`/`--time`, 20000 cases.
    Conform {
        /// Arguments for `normfuzz conform` (see `normfuzz conform --help`).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Run a real agent runtime against the mock endpoints (`normfuzz e2e`), installing it on
    /// first use.
    ///
    /// The runtime's adapter is `harness/runtimes/<RUNTIME>.toml`; its baseline of known findings
    /// keeps the run green on them and fails it on a new or stale one.
    E2e {
        /// Runtime name (an adapter file under harness/runtimes/).
        #[arg(long)]
        runtime: String,
        /// Further `normfuzz e2e` arguments: --cases N, --jobs N, --report DIR, --case ID, --seed S,
        /// --via channel, --scenario fallback, --scenario vision.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// The runtime matrix: install each runtime of `harness/runtimes/<name>/` at its pinned
    /// version (cached), run `normfuzz conform` against its protocol shim (unit level) and, when
    /// it has an `e2e.toml`, `normfuzz e2e` with as many cases (end-to-end level, about a second
    /// a turn), and when that has a `[fallback]`, `normfuzz e2e --scenario fallback` (at most its
    /// six seeds: a turn retries for up to minutes first), and when it has a `[vision]`,
    /// `normfuzz e2e --scenario vision` (at most its four seeds); judge the findings against the
    /// baselines; writes `reports/matrix/matrix.md` and `matrix.json`.
    ///
    /// Fails when a runtime has a finding its baseline does not list, or cannot be run.
    Matrix {
        /// Only these runtimes (folder names under harness/runtimes/, comma-separated).
        #[arg(long, value_delimiter = ',')]
        runtimes: Vec<String>,
        /// Cases per runtime.
        #[arg(long, default_value_t = 2000)]
        cases: u64,
        /// E2e turns per runtime with an e2e adapter (default: --cases, at most 16: a turn takes
        /// seconds, a hanging one up to its time-out, so 2,000 of them would take hours).
        #[arg(long, value_name = "N")]
        e2e_cases: Option<u64>,
        /// Campaign seed (the same seed gives the same cases).
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Parallel shim processes per runtime.
        #[arg(long, default_value_t = 1)]
        jobs: usize,
        /// Run only shard K of N of each runtime's campaign and e2e cases (`normfuzz conform
        /// --shard`, `normfuzz e2e --shard`), into `reports/matrix/shards/`; no table is written
        /// until `--merge`.
        #[arg(long, value_name = "K/N", value_parser = matrix::parse_shard)]
        shard: Option<(u64, u64)>,
        /// Join each runtime's shard reports (`normfuzz merge-reports`) and write the table.
        #[arg(long, conflicts_with = "shard")]
        merge: bool,
        /// Run this `normfuzz` binary instead of building one (a CI job given the build job's).
        #[arg(long, value_name = "PATH")]
        normfuzz: Option<PathBuf>,
    },
    /// Re-capture corpus/real-servers/: install the pinned MCP servers of
    /// `xtask/capture/servers.toml` and the official MCP client (into target/capture-servers/),
    /// call every tool of each through the client and store the raw results, one JSON line a
    /// call, in `corpus/real-servers/<server>@<version>.jsonl`. Needs npm and PyPI.
    CaptureServers,
    /// Build the libFuzzer targets (`fuzz/`) with `.clusterfuzzlite/build.sh` and run them.
    ///
    /// Each target runs for `--time` seconds on a scratch corpus (`target/fuzz/corpus/<target>`,
    /// seeded from `corpus/fuzz/<target>/`) with its dictionary. A crash is minimized, stored under
    /// `corpus/regressions/fuzz/<target>/` and printed with a one-line repro; the task then
    /// exits 1. Otherwise it prints exec/s, coverage and corpus growth per target.
    Fuzz {
        /// A target name (a `[[bin]]` of fuzz/Cargo.toml, e.g. `neutralize`) or `all`.
        #[arg(default_value = "all")]
        target: String,
        /// Seconds per target.
        #[arg(long, default_value_t = 60)]
        time: u64,
        /// Parallel fuzzing processes per target (libFuzzer `-fork=N` when above 1).
        #[arg(long, default_value_t = 1)]
        jobs: u32,
        /// Run the target once on this file (a stored crash) instead of fuzzing.
        #[arg(long)]
        repro: Option<PathBuf>,
        /// Build with the neutralizer's planted bug (feature `planted-bug`, in
        /// `target/fuzz-planted` so the normal build stays warm).
        #[arg(long)]
        planted_bug: bool,
        /// Report folder (`report.html`, `junit.xml`, `summary.md`, `index.json`) [default:
        /// reports/fuzz-<unix time>; with --smoke: target/ci-reports/fuzz].
        #[arg(long, value_name = "DIR")]
        report: Option<PathBuf>,
        /// Write no report (and skip building `normfuzz`, which writes it and reads the logs:
        /// exec/s and coverage are then printed as `?`).
        #[arg(long, conflicts_with = "report")]
        no_report: bool,
        /// Run the fuzz smoke of `cargo xtask ci` instead: build.sh's outputs checked, then every
        /// target a few seconds on its seed corpus.
        #[arg(long, conflicts_with_all = ["target", "time", "jobs", "repro", "planted_bug"])]
        smoke: bool,
    },
    /// Prove that the fuzzer finds bugs: fuzz `neutralize` built with a planted bug until it
    /// crashes (at most 300 s), require the minimized crash to be stored as a regression, to fail
    /// the replay test with the bug and to pass it without; then remove it and print timings.
    PlantedBug,
    /// Run the default gate (no `--strict`) against every single-bug variant of
    /// `examples/mutants/mutant.py` and print the kill matrix (`target/mutants/kill-matrix.md`).
    ///
    /// Fails when a mutant survives its budget or the faithful variant fails the gate.
    ///
    /// With `--pairs`, measures baselines instead: for each two variants A, B that break the
    /// same rule, a run against A drafts a baseline and one against both bugs (A+B) must fail
    /// on a new finding (`target/mutant-pairs.md`). Fails when A alone does not pass its own
    /// draft or the faithful variant drafts an entry; slipped pairs are the measurement.
    Mutants {
        /// Seconds each mutant may survive (with --pairs: seconds of each campaign).
        #[arg(long, default_value_t = 10.0)]
        budget: f64,
        /// Seconds the faithful variant runs (it must pass with 0 gate failures).
        #[arg(long, default_value_t = 60.0)]
        faithful: f64,
        /// Only these variants (comma-separated names from `mutant.py --list`).
        #[arg(long, value_delimiter = ',')]
        only: Vec<String>,
        /// Mutant campaigns at once (each is about one core: `normfuzz` and the shim answering in
        /// turn); the faithful variant runs alone. Not with --pairs.
        #[arg(long, default_value_t = 1, conflicts_with = "pairs")]
        jobs: usize,
        /// Measure baselines on pairs of variants (see above).
        #[arg(long)]
        pairs: bool,
        /// With --pairs: only pairs that break these rules (comma-separated, e.g. S1,F3).
        #[arg(long, value_delimiter = ',', requires = "pairs")]
        only_rule: Vec<String>,
        /// Run this normfuzz build instead of building one in release mode.
        #[arg(long, value_name = "FILE")]
        normfuzz: Option<PathBuf>,
    },
}

fn main() -> ExitCode {
    match Cli::parse().task.run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("xtask: error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

impl Task {
    fn run(self) -> Result<()> {
        let root = workspace_root();
        match self {
            Task::Ci => ci::ci(&root),
            Task::Provision => provision::provision(&root, ci::UNIT_INSTALLED_SMOKE)
                .and_then(|_| provision::mdbook())
                .map(drop),
            Task::Docs => {
                let links = docs::build_and_check(&root, &provision::mdbook()?)?;
                println!("the guide builds; {links} links resolve");
                Ok(())
            }
            Task::CaptureServers => capture::capture_servers(&root),
            Task::Bench { anchor } => bench::bench(&root, anchor.as_deref()),
            Task::Conform { args } => {
                let normfuzz = build_normfuzz(&root)?;
                let status = Command::new(&normfuzz)
                    .arg("conform")
                    .args(conform_args(&normfuzz, args))
                    .status()?;
                std::process::exit(status.code().unwrap_or(2));
            }
            Task::Matrix {
                runtimes,
                cases,
                e2e_cases,
                seed,
                jobs,
                shard,
                merge,
                normfuzz,
            } => {
                // The e2e level needs the mock MCP server next to normfuzz (both built here).
                let normfuzz = match normfuzz {
                    Some(path) => path,
                    None => e2e::build(&root)?,
                };
                let options = matrix::Options {
                    runtimes,
                    cases,
                    e2e_cases: e2e_cases.unwrap_or(cases.min(DEFAULT_E2E_CASES_MAX)),
                    seed,
                    jobs,
                    shard,
                    merge,
                };
                std::process::exit(matrix::matrix(&root, &normfuzz, &options)?)
            }
            Task::E2e { runtime, args } => {
                let normfuzz = e2e::build(&root)?;
                std::process::exit(e2e::e2e(&root, &normfuzz, &runtime, &args)?)
            }
            Task::Fuzz {
                smoke: true,
                report,
                no_report,
                ..
            } => {
                let to = fuzz::ReportTo::new(report, no_report)
                    .or_default_dir(root.join("target/ci-reports/fuzz"));
                let (passed, failed) = fuzz::smoke(&root, &to, None)?;
                println!("{passed} passed, {failed} failed");
                if failed > 0 {
                    bail!("{failed} fuzz targets failed the smoke");
                }
                Ok(())
            }
            Task::Fuzz {
                target,
                time,
                jobs,
                repro,
                planted_bug,
                report,
                no_report,
                smoke: false,
            } => {
                let flavor = if planted_bug {
                    fuzz::Flavor::PlantedBug
                } else {
                    fuzz::Flavor::Real
                };
                let to = fuzz::ReportTo::new(report, no_report);
                fuzz::fuzz(&root, &target, time, jobs, repro.as_deref(), flavor, &to)
            }
            Task::PlantedBug => fuzz::planted_bug(&root),
            Task::Mutants {
                budget,
                faithful,
                only,
                jobs,
                pairs,
                only_rule,
                normfuzz,
            } => {
                let normfuzz = match normfuzz {
                    Some(path) => std::path::absolute(&path)
                        .with_context(|| format!("bad --normfuzz {}", path.display()))?,
                    None => build_normfuzz(&root)?,
                };
                let problems = if pairs {
                    let options = mutants::pairs::Options {
                        budget,
                        faithful,
                        only,
                        only_rule,
                        out: root.join("target"),
                    };
                    mutants::pairs::pairs(&root, &normfuzz, &options)?
                } else {
                    let options = mutants::Options {
                        budget,
                        faithful,
                        only,
                        jobs,
                    };
                    mutants::mutants(&root, &normfuzz, &options)?
                };
                if !problems.is_empty() {
                    bail!("{}", problems.join("; "));
                }
                Ok(())
            }
        }
    }
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

pub(crate) fn cargo(root: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(root).args(args);
    cmd
}

pub(crate) fn step(name: &str, mut cmd: Command) -> Result<()> {
    eprintln!("==> {name}");
    let status = cmd
        .status()
        .with_context(|| format!("cannot start {name}"))?;
    if !status.success() {
        bail!("{name} failed ({status})");
    }
    Ok(())
}

/// `normfuzz` and `mock-providers` as `cargo test --workspace --profile ci` left them in
/// `target/ci` (its integration tests run both). `cargo build -p normfuzz` after that
/// would recompile most dependencies, since the tests' dev-dependencies widen shared crates'
/// features (serde's `alloc`, regex's `perf`, ...); the gate runs what it tested instead.
pub(crate) fn tested_normfuzz(root: &Path) -> Result<PathBuf> {
    let built = root.join("target/ci");
    for bin in ["normfuzz", "mock-providers"] {
        if !built.join(bin).is_file() {
            bail!("cargo test --profile ci left no target/ci/{bin}");
        }
    }
    Ok(built.join("normfuzz"))
}

pub(crate) fn build_normfuzz(root: &Path) -> Result<PathBuf> {
    step(
        "cargo build --release -p normfuzz",
        cargo(root, &["build", "--release", "-p", "normfuzz", "--quiet"]),
    )?;
    Ok(target_dir(root).join("release/normfuzz"))
}

/// Cargo's target folder: `$CARGO_TARGET_DIR`, else `target/` in the workspace.
pub(crate) fn target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from)
}

/// Fills in the defaults `cargo xtask conform` promises.
fn conform_args(normfuzz: &Path, mut args: Vec<String>) -> Vec<String> {
    let has = |args: &[String], flag: &str| {
        args.iter()
            .any(|a| a == flag || a.starts_with(&format!("{flag}=")))
    };
    if !has(&args, "--sut") {
        args.extend([
            "--sut".into(),
            format!("{} serve-reference", normfuzz.display()),
        ]);
    }
    if !has(&args, "--cases") && !has(&args, "--time") {
        args.extend(["--cases".into(), "20000".into()]);
    }
    args
}
