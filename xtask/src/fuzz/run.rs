//! `cargo xtask fuzz`: each target fuzzed on a scratch corpus seeded from `corpus/fuzz/`, a
//! crash minimized and stored as a regression, the report written by `normfuzz fuzz-report`.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::build::{Build, Flavor, build};
use super::report::{ReportTo, write_report};
use super::targets;
use crate::fs::{fresh_dir, visible_files, write_atomic};

/// A crash one run found, minimized and stored.
pub(super) struct Crash {
    pub(super) stored: PathBuf,
    pub(super) bytes: u64,
    pub(super) original_bytes: u64,
    pub(super) minimized: bool,
}

/// What one target's run showed; its exec/s and coverage are in its log, for
/// `normfuzz fuzz-report` to read.
pub(super) struct FuzzRun {
    pub(super) target: String,
    pub(super) corpus_before: usize,
    pub(super) corpus_after: usize,
    /// libFuzzer's stderr.
    pub(super) log: PathBuf,
    /// From start to exit: with a crash, the time to find it.
    pub(super) elapsed: Duration,
    pub(super) crash: Option<Crash>,
}

pub fn fuzz(
    root: &Path,
    which: &str,
    time: u64,
    jobs: u32,
    repro: Option<&Path>,
    flavor: Flavor,
    report: &ReportTo,
) -> Result<()> {
    let targets = targets::select(root, which)?;
    let build = build(root, flavor, "release")?;
    if let Some(file) = repro {
        let [target] = &targets[..] else {
            bail!("--repro needs one target, not `all`");
        };
        eprintln!("==> {target} {}", file.display());
        let status = Command::new(build.bin(target))
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
        runs.push(fuzz_one(root, &build, target, time, jobs)?);
    }
    let logs: Vec<&Path> = runs.iter().map(|r| r.log.as_path()).collect();
    let stats = write_report(root, &logs, report, None)?;
    println!("target        exec/s      cov   corpus");
    for run in &runs {
        let (exec_per_sec, cov) = stats.shown(&run.target);
        println!(
            "{:<12} {:>7} {:>8}   {} -> {} (+{}){}",
            run.target,
            exec_per_sec,
            cov,
            run.corpus_before,
            run.corpus_after,
            run.corpus_after.saturating_sub(run.corpus_before),
            if run.crash.is_some() { "   CRASH" } else { "" }
        );
    }
    let mut crashed = false;
    for run in &runs {
        if let Some(crash) = &run.crash {
            crashed = true;
            let rel = crash.stored.strip_prefix(root).unwrap_or(&crash.stored);
            println!(
                "repro: cargo xtask fuzz {}{} --repro {}",
                run.target,
                flavor.flag(),
                rel.display()
            );
        }
    }
    if crashed {
        std::process::exit(1);
    }
    Ok(())
}

/// Copies `from` to `to` atomically (`crate::fs::write_atomic`): libFuzzer, `cargo test` and
/// git never see a half-written file (the hidden temporary name is skipped by the replay test).
fn copy_atomic(from: &Path, to: &Path) -> Result<()> {
    let bytes = std::fs::read(from).with_context(|| format!("reading {}", from.display()))?;
    write_atomic(to, &bytes).with_context(|| format!("storing {}", to.display()))
}

pub(super) fn fuzz_one(
    root: &Path,
    build: &Build,
    target: String,
    time: u64,
    jobs: u32,
) -> Result<FuzzRun> {
    let bin = build.bin(&target);
    let regressions = root.join("corpus/regressions/fuzz").join(&target);
    let scratch = build.target_dir.join("corpus").join(&target);
    let artifacts = build.target_dir.join("artifacts").join(&target);
    let logs = build.target_dir.join("logs");
    let log_path = logs.join(format!("{target}.log"));
    std::fs::create_dir_all(&scratch).with_context(|| format!("creating {}", scratch.display()))?;
    std::fs::create_dir_all(&logs).with_context(|| format!("creating {}", logs.display()))?;
    // Old artifacts would be mistaken for this run's crash.
    fresh_dir(&artifacts)?;
    for seed in visible_files(&root.join("corpus/fuzz").join(&target)) {
        let to = scratch.join(seed.file_name().unwrap_or_default());
        if !to.exists() {
            copy_atomic(&seed, &to)?;
        }
    }
    let corpus_before = visible_files(&scratch).len();
    let mut cmd = build.libfuzzer(&target, time, &format!("{}/", artifacts.display()));
    if jobs > 1 {
        cmd.arg(format!("-fork={jobs}"));
    }
    cmd.arg(&scratch);
    if regressions.is_dir() {
        cmd.arg(&regressions);
    }
    let log =
        File::create(&log_path).with_context(|| format!("creating {}", log_path.display()))?;
    cmd.stdout(Stdio::null()).stderr(log);
    eprintln!(
        "==> fuzz {target} for {time} s ({} jobs; log {})",
        jobs.max(1),
        log_path.display()
    );
    let started = Instant::now();
    let status = cmd
        .status()
        .with_context(|| format!("cannot start {}", bin.display()))?;
    let elapsed = started.elapsed();
    let mut run = FuzzRun {
        corpus_before,
        corpus_after: visible_files(&scratch).len(),
        log: log_path.clone(),
        elapsed,
        crash: None,
        target: target.clone(),
    };
    // libFuzzer names what it stops on `crash-`, `leak-`, `timeout-` or `oom-` (also in fork
    // mode, whose jobs inherit the artifact prefix); `slow-unit-` files are not failures.
    let found: Vec<PathBuf> = visible_files(&artifacts)
        .into_iter()
        .filter(|p| {
            p.file_name().is_some_and(|n| {
                let n = n.to_string_lossy();
                ["crash-", "leak-", "timeout-", "oom-"]
                    .iter()
                    .any(|k| n.starts_with(k))
            })
        })
        .collect();
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
    std::fs::create_dir_all(&regressions)
        .with_context(|| format!("creating {}", regressions.display()))?;
    let stored = regressions.join(&name);
    let minimized = artifacts.join(format!("minimized-{name}"));
    let minimize_log = logs.join(format!("{target}.minimize.log"));
    let min_status = Command::new(&bin)
        .arg("-minimize_crash=1")
        .arg("-runs=20000")
        .arg("-max_total_time=60")
        .arg("-timeout=20")
        .arg(format!("-exact_artifact_path={}", minimized.display()))
        .arg(artifact)
        .stdout(Stdio::null())
        .stderr(
            File::create(&minimize_log)
                .with_context(|| format!("creating {}", minimize_log.display()))?,
        )
        .status();
    let was_minimized = min_status.is_ok() && minimized.is_file();
    let best = if was_minimized { &minimized } else { artifact };
    copy_atomic(best, &stored)?;
    let size = |p: &Path| std::fs::metadata(p).map_or(0, |m| m.len());
    let crash = Crash {
        bytes: size(&stored),
        original_bytes: size(artifact),
        minimized: was_minimized,
        stored,
    };
    eprintln!(
        "==> {target}: stored {} ({} bytes, from {} bytes{}); first lines of the report:",
        crash.stored.display(),
        crash.bytes,
        crash.original_bytes,
        if crash.minimized {
            ""
        } else {
            "; minimization failed, see the .minimize.log"
        },
    );
    // The panic (location and message) or libFuzzer's error line, as the log has them.
    let text = std::fs::read_to_string(&log_path).unwrap_or_default();
    for line in text
        .lines()
        .skip_while(|l| !l.contains("panicked") && !l.contains("ERROR: libFuzzer"))
        .take_while(|l| !l.contains("stack backtrace"))
        .take(3)
    {
        eprintln!("    {line}");
    }
    run.crash = Some(crash);
    Ok(run)
}
