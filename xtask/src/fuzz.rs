//! `cargo xtask fuzz`: libFuzzer targets built on stable and run with seeds, dictionaries and crash minimization.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

use crate::{cargo, step};

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

pub fn fuzz(root: &Path, which: &str, time: u64, jobs: u32, repro: Option<&Path>) -> Result<()> {
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
