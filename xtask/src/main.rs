//! `cargo xtask`: the project's entry points (CI gate, benchmarks).
//!
//! Each task is a sequence of cargo invocations run from the workspace root; failures stop the
//! task with a non-zero exit.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

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
            Task::Ci => ci(&root),
            Task::Bench => bench(&root),
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
            } => fuzz(&root, &target, time, jobs, repro.as_deref()),
        }
    }
}

/// The libFuzzer targets of `fuzz/` (`[[bin]]` names, also `normfuzz_fuzz::TARGETS`).
const FUZZ_TARGETS: [&str; 6] = [
    "coerce_bytes",
    "neutralize",
    "url_policy",
    "reply_turn",
    "providers",
    "retry",
];
/// libFuzzer instrumentation on stable, without cargo-fuzz. The explicit `--target` keeps these
/// flags off build scripts and proc macros; `--cfg fuzzing` is what `libfuzzer-sys` expects.
const FUZZ_RUSTFLAGS: &str = "-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
     -Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
     -Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing -Cdebug-assertions -Coverflow-checks";
const FUZZ_TRIPLE: &str = "x86_64-unknown-linux-gnu";

/// What one target's run showed.
struct FuzzRun {
    target: &'static str,
    exec_per_sec: String,
    cov: String,
    corpus_before: usize,
    corpus_after: usize,
    crash: Option<PathBuf>,
}

fn fuzz(root: &Path, which: &str, time: u64, jobs: u32, repro: Option<&Path>) -> Result<()> {
    let targets: Vec<&'static str> = if which == "all" {
        FUZZ_TARGETS.to_vec()
    } else {
        match FUZZ_TARGETS.iter().find(|t| **t == which) {
            Some(t) => vec![*t],
            None => bail!("unknown fuzz target {which:?}; one of {FUZZ_TARGETS:?} or `all`"),
        }
    };
    let target_dir = root.join("target/fuzz");
    let mut build = cargo(
        root,
        &[
            "build",
            "--release",
            "--quiet",
            "-p",
            "normfuzz-fuzz",
            "--features",
            "libfuzzer",
            "--target",
            FUZZ_TRIPLE,
            "--bins",
        ],
    );
    build
        .env("RUSTFLAGS", FUZZ_RUSTFLAGS)
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env("CARGO_TARGET_DIR", &target_dir);
    step(
        "cargo build --release -p normfuzz-fuzz --features libfuzzer (sanitizer coverage, target/fuzz)",
        build,
    )?;
    let bin_dir = target_dir.join(FUZZ_TRIPLE).join("release");
    if let Some(file) = repro {
        let [target] = targets[..] else {
            bail!("--repro needs one target, not `all`");
        };
        eprintln!("==> {} {}", bin_dir.join(target).display(), file.display());
        let status = Command::new(bin_dir.join(target))
            .arg(file)
            .status()
            .with_context(|| format!("cannot start fuzz target {target}"))?;
        if !status.success() {
            bail!("{target} fails on {} ({status})", file.display());
        }
        eprintln!("{target} passes on {}", file.display());
        return Ok(());
    }
    let mut runs = Vec::new();
    for target in targets {
        runs.push(fuzz_one(root, &bin_dir, target, time, jobs)?);
    }
    println!("target        exec/s      cov   corpus");
    for run in &runs {
        println!(
            "{:<12} {:>7} {:>8}   {} -> {} (+{}){}",
            run.target,
            run.exec_per_sec,
            run.cov,
            run.corpus_before,
            run.corpus_after,
            run.corpus_after.saturating_sub(run.corpus_before),
            if run.crash.is_some() { "   CRASH" } else { "" }
        );
    }
    let crashes: Vec<_> = runs.iter().filter(|r| r.crash.is_some()).collect();
    if crashes.is_empty() {
        return Ok(());
    }
    for run in &crashes {
        if let Some(file) = &run.crash {
            let rel = file.strip_prefix(root).unwrap_or(file);
            println!(
                "repro: cargo xtask fuzz {} --repro {}",
                run.target,
                rel.display()
            );
        }
    }
    std::process::exit(1);
}

fn count_files(dir: &Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |entries| {
        entries.flatten().filter(|e| e.path().is_file()).count()
    })
}

/// The value after `key` (`cov:`, `exec/s:`, `corp:`) in a libFuzzer status line.
fn stat_after<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let mut words = line.split_whitespace();
    words.find(|w| *w == key)?;
    words.next()
}

fn fuzz_one(
    root: &Path,
    bin_dir: &Path,
    target: &'static str,
    time: u64,
    jobs: u32,
) -> Result<FuzzRun> {
    let bin = bin_dir.join(target);
    let seeds = root.join("corpus/fuzz").join(target);
    let regressions = root.join("corpus/regressions/fuzz").join(target);
    let scratch = root.join("target/fuzz/corpus").join(target);
    let artifacts = root.join("target/fuzz/artifacts").join(target);
    let log_path = root.join("target/fuzz/logs").join(format!("{target}.log"));
    for dir in [&scratch, &artifacts] {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::create_dir_all(root.join("target/fuzz/logs"))?;
    // Old artifacts would be mistaken for this run's crash.
    for entry in std::fs::read_dir(&artifacts)?.flatten() {
        let _ = std::fs::remove_file(entry.path());
    }
    if let Ok(entries) = std::fs::read_dir(&seeds) {
        for entry in entries.flatten() {
            let to = scratch.join(entry.file_name());
            if entry.path().is_file() && !to.exists() {
                std::fs::copy(entry.path(), &to)?;
            }
        }
    }
    let corpus_before = count_files(&scratch);
    let mut cmd = Command::new(&bin);
    cmd.arg(format!("-max_total_time={time}"))
        .arg(format!(
            "-dict={}",
            root.join("fuzz/dicts")
                .join(format!("{target}.dict"))
                .display()
        ))
        .arg(format!("-artifact_prefix={}/", artifacts.display()))
        .arg("-timeout=20")
        .arg("-print_final_stats=1");
    if jobs > 1 {
        cmd.arg(format!("-fork={jobs}"));
    }
    cmd.arg(&scratch);
    if regressions.is_dir() {
        cmd.arg(&regressions);
    }
    let log = std::fs::File::create(&log_path)?;
    cmd.stdout(Stdio::null()).stderr(log);
    eprintln!(
        "==> fuzz {target} for {time} s ({} jobs; log {})",
        jobs.max(1),
        log_path.display()
    );
    let status = cmd
        .status()
        .with_context(|| format!("cannot start {}", bin.display()))?;
    let text = std::fs::read_to_string(&log_path).unwrap_or_default();
    let last_status = text
        .lines()
        .rev()
        .find(|l| l.contains(" cov: ") && l.contains("exec/s:"));
    let exec_per_sec = text
        .lines()
        .find_map(|l| l.strip_prefix("stat::average_exec_per_sec:"))
        .map(str::trim)
        .or_else(|| last_status.and_then(|l| stat_after(l, "exec/s:")))
        .unwrap_or("?")
        .to_string();
    let cov = last_status
        .and_then(|l| stat_after(l, "cov:"))
        .unwrap_or("?")
        .to_string();
    let mut run = FuzzRun {
        target,
        exec_per_sec,
        cov,
        corpus_before,
        corpus_after: count_files(&scratch),
        crash: None,
    };
    let mut found: Vec<PathBuf> = std::fs::read_dir(&artifacts)?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name().is_some_and(|n| {
                let n = n.to_string_lossy();
                ["crash-", "leak-", "timeout-", "oom-", "slow-unit-"]
                    .iter()
                    .any(|k| n.starts_with(k))
                    && !n.starts_with("slow-unit-")
            })
        })
        .collect();
    found.sort();
    if status.success() && found.is_empty() {
        return Ok(run);
    }
    let Some(artifact) = found.first() else {
        bail!(
            "{target} exited with {status} and left no artifact; see {}",
            log_path.display()
        );
    };
    eprintln!("==> {target}: {} found; minimizing", artifact.display());
    let name = artifact
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "crash".into());
    std::fs::create_dir_all(&regressions)?;
    let stored = regressions.join(&name);
    let minimized = artifacts.join(format!("minimized-{name}"));
    let min_status = Command::new(&bin)
        .arg("-minimize_crash=1")
        .arg("-runs=20000")
        .arg("-max_total_time=60")
        .arg("-timeout=20")
        .arg(format!("-exact_artifact_path={}", minimized.display()))
        .arg(artifact)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(
            root.join("target/fuzz/logs")
                .join(format!("{target}.minimize.log")),
        )?)
        .status();
    let best = if min_status.is_ok() && minimized.is_file() {
        &minimized
    } else {
        artifact
    };
    std::fs::copy(best, &stored)
        .with_context(|| format!("storing {} as {}", best.display(), stored.display()))?;
    eprintln!(
        "==> {target}: stored {} ({} bytes, from {} bytes); first lines of the report:",
        stored.display(),
        std::fs::metadata(&stored).map_or(0, |m| m.len()),
        std::fs::metadata(artifact).map_or(0, |m| m.len()),
    );
    for line in text
        .lines()
        .skip_while(|l| !l.contains("panicked") && !l.contains("ERROR: libFuzzer"))
        .take(4)
    {
        eprintln!("    {line}");
    }
    run.crash = Some(stored);
    Ok(run)
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

fn cargo(root: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(root).args(args);
    cmd
}

fn step(name: &str, mut cmd: Command) -> Result<()> {
    eprintln!("==> {name}");
    let status = cmd
        .status()
        .with_context(|| format!("cannot start {name}"))?;
    if !status.success() {
        bail!("{name} failed ({status})");
    }
    Ok(())
}

fn build_normfuzz(root: &Path) -> Result<PathBuf> {
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

fn ci(root: &Path) -> Result<()> {
    step(
        "cargo fmt --check",
        cargo(root, &["fmt", "--all", "--check"]),
    )?;
    step(
        "cargo clippy",
        cargo(
            root,
            &[
                "clippy",
                "--workspace",
                "--all-targets",
                "--release",
                "--",
                "-D",
                "warnings",
            ],
        ),
    )?;
    let (mut passed, mut failed) = run_tests(root)?;
    // The product's own gate, as a user runs it: the reference over the subprocess path must be
    // clean, and the pass-through example SUT must be caught.
    let normfuzz = build_normfuzz(root)?;
    let reports = root.join("target/ci-reports");
    let campaigns = [
        (
            "conform: serve-reference is clean",
            format!("{} serve-reference", normfuzz.display()),
            "20000",
            0,
            "reference",
        ),
        (
            "conform: sut-echo is caught",
            "python3 examples/sut-echo/echo.py".to_string(),
            "2000",
            1,
            "echo",
        ),
    ];
    for (name, sut, cases, want_exit, folder) in campaigns {
        eprintln!("==> {name}");
        let report = reports.join(folder);
        let status = Command::new(&normfuzz)
            .current_dir(root)
            .args([
                "conform", "--sut", &sut, "--cases", cases, "--seed", "1", "--report",
            ])
            .arg(&report)
            .status()
            .with_context(|| format!("cannot run {name}"))?;
        if status.code() == Some(want_exit) {
            passed += 1;
        } else {
            eprintln!(
                "xtask: {name}: exit {status}, expected {want_exit}; report in {}",
                report.display()
            );
            failed += 1;
        }
    }
    println!("{passed} passed, {failed} failed");
    if failed > 0 {
        bail!("{failed} checks failed");
    }
    Ok(())
}

/// Runs `cargo test` in release mode, echoing its output and summing its `test result:` lines.
fn run_tests(root: &Path) -> Result<(u64, u64)> {
    eprintln!("==> cargo test --workspace --release");
    let mut child = cargo(root, &["test", "--workspace", "--release"])
        .stdout(Stdio::piped())
        .spawn()
        .context("cannot start cargo test")?;
    let stdout = child.stdout.take().context("cargo test has no stdout")?;
    let (mut passed, mut failed) = (0, 0);
    for line in BufReader::new(stdout).lines() {
        let line = line.context("reading cargo test output")?;
        println!("{line}");
        if let Some(rest) = line.strip_prefix("test result: ") {
            passed += count(rest, " passed");
            failed += count(rest, " failed");
        }
    }
    let status = child.wait()?;
    if !status.success() && failed == 0 {
        bail!("cargo test failed ({status})");
    }
    Ok((passed, failed))
}

/// The number before `label` in a libtest summary such as `ok. 12 passed; 0 failed; ...`.
fn count(summary: &str, label: &str) -> u64 {
    summary
        .split(';')
        .find_map(|part| {
            part.trim()
                .trim_start_matches("ok. ")
                .trim_start_matches("FAILED. ")
                .strip_suffix(label.trim())
        })
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

fn bench(root: &Path) -> Result<()> {
    step("cargo bench", {
        let mut cmd = cargo(root, &["bench", "-p", "normfuzz", "--bench", "reference"]);
        cmd.env("CARGO_TERM_COLOR", "never");
        cmd
    })?;
    let criterion = root.join("target/criterion");
    println!("\nratios (reference time / baseline time; below 1 means faster than the baseline):");
    for (group, baseline) in [
        ("coerce_text", "serde_json_roundtrip"),
        ("coerce_image", "serde_json_roundtrip"),
        ("neutralize", "memmem_scan"),
        ("neutralize", "memchr_colon_scan"),
    ] {
        let dir = criterion.join(group).join("reference");
        let mut params: Vec<String> = std::fs::read_dir(&dir)
            .with_context(|| format!("no results in {}", dir.display()))?
            .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
            .filter(|p| p != "report")
            .collect();
        params.sort_by_key(|p| p.parse::<u64>().unwrap_or(u64::MAX));
        for param in params {
            let ours = mean_ns(&dir.join(&param))?;
            let theirs = mean_ns(&criterion.join(group).join(baseline).join(&param))?;
            println!(
                "  {group:<13} {param:>20}: {:.2}x {baseline} ({:.1} vs {:.1} µs)",
                ours / theirs,
                ours / 1e3,
                theirs / 1e3
            );
        }
    }
    campaign_throughput(root)?;
    Ok(())
}

/// Cases per second through the whole runner (generate, SUT, reference, judge), in process and
/// through a pipelined `serve-reference` subprocess, for a simple op and for all ops.
fn campaign_throughput(root: &Path) -> Result<()> {
    let normfuzz = build_normfuzz(root)?;
    let serve = format!("{} serve-reference", normfuzz.display());
    println!("\ncampaign throughput (cases/s, seed 1):");
    for (label, sut, ops, jobs) in [
        (
            "in process, neutralize_text",
            "reference",
            Some("neutralize_text"),
            "1",
        ),
        (
            "subprocess, neutralize_text",
            serve.as_str(),
            Some("neutralize_text"),
            "1",
        ),
        (
            "subprocess, neutralize_text, 2 jobs",
            serve.as_str(),
            Some("neutralize_text"),
            "2",
        ),
        ("subprocess, all ops, 2 jobs", serve.as_str(), None, "2"),
    ] {
        let report = root
            .join("target/bench-reports")
            .join(label.replace([',', ' '], "_"));
        let mut cmd = Command::new(&normfuzz);
        cmd.args([
            "conform", "--sut", sut, "--jobs", jobs, "--cases", "100000", "--report",
        ])
        .arg(&report);
        if let Some(ops) = ops {
            cmd.args(["--ops", ops]);
        }
        let output = cmd
            .stderr(Stdio::null())
            .output()
            .with_context(|| format!("cannot run {label}"))?;
        let index: serde_json::Value =
            serde_json::from_slice(&std::fs::read(report.join("index.json"))?)?;
        let (cases, ms) = (
            index["cases"].as_f64().unwrap_or(0.0),
            index["elapsedMs"].as_f64().unwrap_or(1.0),
        );
        println!(
            "  {label:<38} {:>9.0}  ({})",
            cases * 1000.0 / ms.max(1.0),
            output.status
        );
    }
    Ok(())
}

fn mean_ns(dir: &Path) -> Result<f64> {
    let path = dir.join("new/estimates.json");
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let value: serde_json::Value = serde_json::from_str(&text)?;
    value["mean"]["point_estimate"]
        .as_f64()
        .with_context(|| format!("no mean in {}", path.display()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn counts_libtest_summaries() {
        let ok =
            "ok. 12 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.01s";
        assert_eq!(
            (super::count(ok, " passed"), super::count(ok, " failed")),
            (12, 0)
        );
        let bad = "FAILED. 3 passed; 2 failed; 0 ignored";
        assert_eq!(
            (super::count(bad, " passed"), super::count(bad, " failed")),
            (3, 2)
        );
    }
}
