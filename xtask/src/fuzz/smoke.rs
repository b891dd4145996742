//! The fuzz smoke of `cargo xtask ci`: `.clusterfuzzlite/build.sh` as ClusterFuzzLite runs it,
//! its outputs checked, then every target a fixed number of runs on its unpacked seed corpus.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, ensure};

use super::build::{Build, Flavor, build, build_logged};
use super::report::{ReportTo, write_report};
use super::targets;
use crate::fs::{fresh_dir, visible_files};

/// Executions per target in the CI smoke: a count with a fixed `-seed`, not a time, so a slow
/// machine explores as much as a fast one (paths still vary a little: per-process hash seeds).
pub const SMOKE_RUNS: u64 = 60_000;
/// Safety cap per target for a very slow machine (about 12 s here for the slowest target).
const SMOKE_CAP_SECONDS: u64 = 60;

/// The smoke: every target run on its unpacked seed corpus with its dictionary. One check per
/// target; a failed build is an error.
pub fn smoke(root: &Path, report: &ReportTo, normfuzz: Option<&Path>) -> Result<(u64, u64)> {
    eprintln!("==> fuzz smoke: build.sh, then each target {SMOKE_RUNS} runs (seed 1) on its seeds");
    let started = Instant::now();
    let build = build(root, Flavor::Real, "ci")?;
    let built = started.elapsed();
    run_smoke(
        root,
        &build,
        report,
        normfuzz,
        &format!("build {:.0} s", built.as_secs_f64()),
    )
}

/// The smoke's build (build.sh as in [`smoke`]), its output in `log`: `cargo xtask ci` makes it
/// beside another step and prints the log when it joins it.
pub struct SmokeBuild(Build);

/// Builds what [`smoke_runs`] runs, build.sh's and cargo's output written to `log`.
pub fn smoke_build(root: &Path, log: &Path) -> Result<SmokeBuild> {
    build_logged(root, Flavor::Real, "ci", Some(log)).map(SmokeBuild)
}

/// The smoke's checks and runs on a [`smoke_build`], each target [`SMOKE_RUNS`] runs from seed 1
/// (the caller names the step).
pub fn smoke_runs(
    root: &Path,
    build: &SmokeBuild,
    report: &ReportTo,
    normfuzz: Option<&Path>,
) -> Result<(u64, u64)> {
    run_smoke(root, &build.0, report, normfuzz, "built beside the tests")
}

/// Checks build.sh's outputs and runs each target; `built` says how the build went, for the
/// closing line.
fn run_smoke(
    root: &Path,
    build: &Build,
    report: &ReportTo,
    normfuzz: Option<&Path>,
    built: &str,
) -> Result<(u64, u64)> {
    let started = Instant::now();
    let work = build.target_dir.join("smoke");
    fresh_dir(&work)?;
    let targets = targets::all(root)?;
    let (mut passed, mut failed) = (0, 0);
    let logs: Vec<PathBuf> = targets
        .iter()
        .map(|t| work.join(format!("{t}.log")))
        .collect();
    // Target and seeds unpacked, for each that passed; printed with its figures from the report.
    let mut ok = Vec::new();
    for (target, log) in targets.iter().zip(&logs) {
        match smoke_one(root, build, &work, target, log) {
            Ok(seeds) => {
                passed += 1;
                ok.push((target, seeds));
            }
            Err(err) => {
                eprintln!("xtask: fuzz smoke {target}: {err:#}");
                failed += 1;
            }
        }
    }
    let ran: Vec<&Path> = logs
        .iter()
        .map(PathBuf::as_path)
        .filter(|l| l.is_file())
        .collect();
    let stats = write_report(root, &ran, report, normfuzz)?;
    for (target, seeds) in ok {
        let (exec_per_sec, cov) = stats.shown(target);
        eprintln!("fuzz smoke: {target} ok ({seeds} seeds, {exec_per_sec} exec/s, cov {cov})");
    }
    eprintln!(
        "fuzz smoke: {passed} passed, {failed} failed ({built}, checks and runs {:.0} s)",
        started.elapsed().as_secs_f64()
    );
    Ok((passed, failed))
}

/// One target: build.sh's three outputs, its seed zip unpacked (it must hold every checked-in
/// input), then the run. Returns the number of seeds.
fn smoke_one(
    root: &Path,
    build: &Build,
    work: &Path,
    target: &str,
    log_path: &Path,
) -> Result<usize> {
    for file in [
        build.bin(target),
        build.dict(target),
        build.seed_zip(target),
    ] {
        let len = std::fs::metadata(&file).map_or(0, |m| m.len());
        ensure!(len > 0, "build.sh left no {}", file.display());
    }
    // Unpack the seed zip as ClusterFuzzLite does; it must hold every checked-in input.
    let corpus = work.join("corpus").join(target);
    let unzip = Command::new("python3")
        .args(["-m", "zipfile", "-e"])
        .arg(build.seed_zip(target))
        .arg(&corpus)
        .status()
        .context("cannot run python3 to unpack the seed corpus")?;
    ensure!(unzip.success(), "cannot unpack {target}_seed_corpus.zip");
    let checked_in = visible_files(&root.join("corpus/fuzz").join(target)).len()
        + visible_files(&root.join("corpus/regressions/fuzz").join(target)).len();
    let unpacked = visible_files(&corpus).len();
    ensure!(
        unpacked == checked_in,
        "{target}_seed_corpus.zip holds {unpacked} inputs, the tree {checked_in}"
    );
    let log = File::create(log_path).with_context(|| format!("creating {}", log_path.display()))?;
    let status = build
        .libfuzzer(
            target,
            SMOKE_CAP_SECONDS,
            &format!("{}/{target}-", work.display()),
        )
        .arg("-seed=1")
        .arg(format!("-runs={SMOKE_RUNS}"))
        .arg(&corpus)
        .stdout(Stdio::null())
        .stderr(log)
        .status()
        .with_context(|| format!("cannot start {target}"))?;
    ensure!(
        status.success(),
        "{target} failed ({status}) on its seeds; log {}",
        log_path.display()
    );
    Ok(unpacked)
}
