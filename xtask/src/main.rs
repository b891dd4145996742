//! `cargo xtask`: the project's entry points (CI gate, benchmarks).
//!
//! Each task is a sequence of cargo invocations run from the workspace root; failures stop the
//! task with a non-zero exit.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

mod bench;
mod ci;
mod fuzz;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "cargo xtask", about = "normfuzz project tasks")]
struct Cli {
    #[command(subcommand)]
    task: Task,
}

#[derive(Subcommand)]
enum Task {
    /// The CI gate: format check, clippy with warnings denied, every test in release mode.
    ///
    /// Ends with a line `N passed, N failed` summing every test binary.
    Ci,
    /// Run the criterion benchmarks and print the speed ratios README quotes.
    Bench,
    /// Build normfuzz in release mode and run `normfuzz conform` with these arguments.
    ///
    /// Without `--sut`, the SUT is the reference itself over the subprocess path
    /// (`normfuzz serve-reference`); without `--cases`/`--time`, 20000 cases.
    Conform {
        /// Arguments for `normfuzz conform` (see `normfuzz conform --help`).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Build the libFuzzer targets (`fuzz/`) on stable with sanitizer coverage and run them.
    ///
    /// Each target runs for `--time` seconds on a scratch corpus (`target/fuzz/corpus/<target>`,
    /// seeded from `corpus/fuzz/<target>/`) with its dictionary. A crash is minimized, stored under
    /// `corpus/regressions/fuzz/<target>/` and printed with a one-line repro; the task then
    /// exits 1. Otherwise it prints exec/s, coverage and corpus growth per target.
    Fuzz {
        /// A target name (`coerce_bytes`, `neutralize`, `url_policy`, `reply_turn`, `providers`,
        /// `retry`) or `all`.
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
            Task::Bench => bench::bench(&root),
            Task::Conform { args } => {
                let normfuzz = build_normfuzz(&root)?;
                let status = Command::new(&normfuzz)
                    .arg("conform")
                    .args(conform_args(&normfuzz, args))
                    .status()?;
                std::process::exit(status.code().unwrap_or(2));
            }
            Task::Fuzz {
                target,
                time,
                jobs,
                repro,
            } => fuzz::fuzz(&root, &target, time, jobs, repro.as_deref()),
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

pub(crate) fn build_normfuzz(root: &Path) -> Result<PathBuf> {
    step(
        "cargo build --release -p normfuzz",
        cargo(root, &["build", "--release", "-p", "normfuzz", "--quiet"]),
    )?;
    Ok(root.join("target/release/normfuzz"))
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
