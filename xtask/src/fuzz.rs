//! `cargo xtask fuzz`, `cargo xtask planted-bug` and the fuzz smoke of `cargo xtask ci`.
//!
//! Every build of the libFuzzer targets goes through `.clusterfuzzlite/build.sh`, the script
//! ClusterFuzzLite runs, so the flags live in one place and CI proves that script works on
//! stable; its outputs (`$OUT/<target>`, `.dict`, `_seed_corpus.zip`) are what the runs use.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use tempfile::TempDir;

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
/// Executions per target in the CI smoke: a count with a fixed `-seed`, not a time, so a slow
/// machine explores as much as a fast one (paths still vary a little: per-process hash seeds).
const SMOKE_RUNS: u64 = 60_000;
/// Safety cap per target for a very slow machine (about 12 s here for the slowest target).
const SMOKE_CAP_SECONDS: u64 = 60;
/// Upper bound for `cargo xtask planted-bug` to find the planted bug.
const PLANTED_BUG_SECONDS: u64 = 300;

/// Which build of the targets.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// The product as it is.
    Real,
    /// With the `planted-bug` feature: the neutralizer misses one blank on purpose.
    PlantedBug,
}

impl Flavor {
    /// Its own cargo target dir, so neither build invalidates the other; scratch corpora,
    /// artifacts and logs live there too.
    fn target_dir(self, root: &Path) -> PathBuf {
        root.join(match self {
            Flavor::Real => "target/fuzz",
            Flavor::PlantedBug => "target/fuzz-planted",
        })
    }

    fn features(self) -> &'static str {
        match self {
            Flavor::Real => "",
            Flavor::PlantedBug => "planted-bug",
        }
    }

    fn flag(self) -> &'static str {
        match self {
            Flavor::Real => "",
            Flavor::PlantedBug => " --planted-bug",
        }
    }
}

/// The targets as `.clusterfuzzlite/build.sh` left them in `$OUT`.
struct Build {
    target_dir: PathBuf,
    out: TempDir,
}

impl Build {
    fn file(&self, name: &str) -> PathBuf {
        self.out.path().join(name)
    }

    fn bin(&self, target: &str) -> PathBuf {
        self.file(target)
    }

    fn dict(&self, target: &str) -> PathBuf {
        self.file(&format!("{target}.dict"))
    }

    fn seed_zip(&self, target: &str) -> PathBuf {
        self.file(&format!("{target}_seed_corpus.zip"))
    }

    /// A fuzzing run of `target` for `seconds` with its dictionary; libFuzzer writes what it
    /// stops on as `<artifact_prefix>crash-<sha1>` (or `timeout-`, `oom-`, `leak-`).
    fn libfuzzer(&self, target: &str, seconds: u64, artifact_prefix: &str) -> Command {
        let mut cmd = Command::new(self.bin(target));
        cmd.arg(format!("-max_total_time={seconds}"))
            .arg(format!("-dict={}", self.dict(target).display()))
            .arg(format!("-artifact_prefix={artifact_prefix}"))
            .arg("-timeout=20")
            .arg("-print_final_stats=1");
        cmd
    }
}

/// Runs `.clusterfuzzlite/build.sh` as ClusterFuzzLite does, with `SRC` a scratch folder whose
/// `normfuzz` is this workspace and `OUT` a fresh one; cargo builds in the flavor's persistent
/// target dir, so a rerun only relinks what changed. `profile` is a cargo profile (`release`,
/// or the workspace's cheaper `ci` for the smoke).
fn build(root: &Path, flavor: Flavor, profile: &str) -> Result<Build> {
    let src = tempfile::tempdir().context("creating a scratch SRC")?;
    std::os::unix::fs::symlink(root, src.path().join("normfuzz"))
        .context("linking the workspace into SRC")?;
    let out = tempfile::tempdir().context("creating a scratch OUT")?;
    let target_dir = flavor.target_dir(root);
    let mut cmd = Command::new("bash");
    cmd.arg(root.join(".clusterfuzzlite/build.sh"))
        .env("SRC", src.path())
        .env("OUT", out.path())
        .env("CARGO_TARGET_DIR", &target_dir)
        .env("NORMFUZZ_FUZZ_FEATURES", flavor.features())
        .env("NORMFUZZ_FUZZ_PROFILE", profile);
    step(
        &format!(
            ".clusterfuzzlite/build.sh (features: {}; profile {profile}; {})",
            format!("libfuzzer {}", flavor.features()).trim_end(),
            target_dir
                .strip_prefix(root)
                .unwrap_or(&target_dir)
                .display()
        ),
        cmd,
    )?;
    Ok(Build { target_dir, out })
}

/// Where `cargo xtask fuzz` writes its report (`normfuzz fuzz-report` over the runs' logs).
pub enum ReportTo {
    /// `reports/fuzz-<unix time>/`.
    Default,
    Dir(PathBuf),
    Nowhere,
}

impl ReportTo {
    pub fn new(dir: Option<PathBuf>, no_report: bool) -> ReportTo {
        match (dir, no_report) {
            (_, true) => ReportTo::Nowhere,
            (Some(dir), false) => ReportTo::Dir(dir),
            (None, false) => ReportTo::Default,
        }
    }

    /// `dir` instead of `reports/fuzz-<unix time>`.
    pub fn or_default_dir(self, dir: PathBuf) -> ReportTo {
        match self {
            ReportTo::Default => ReportTo::Dir(dir),
            other => other,
        }
    }
}

/// Writes the four report files from libFuzzer logs with `normfuzz fuzz-report`: `normfuzz` as
/// given, or built in release mode as `cargo xtask conform` builds it. Its exit 1 only repeats
/// a crash the caller reports itself.
fn write_report(root: &Path, logs: &[&Path], to: &ReportTo, normfuzz: Option<&Path>) -> Result<()> {
    let out = match to {
        ReportTo::Nowhere => return Ok(()),
        ReportTo::Default => None,
        ReportTo::Dir(dir) => Some(dir),
    };
    let normfuzz = match normfuzz {
        Some(path) => path.to_path_buf(),
        None => crate::build_normfuzz(root)?,
    };
    let mut cmd = Command::new(normfuzz);
    cmd.current_dir(root).arg("fuzz-report");
    if let Some(dir) = out {
        cmd.arg("--out").arg(dir);
    }
    let status = cmd
        .args(logs)
        .status()
        .context("cannot run normfuzz fuzz-report")?;
    ensure!(
        matches!(status.code(), Some(0 | 1)),
        "normfuzz fuzz-report failed ({status})"
    );
    Ok(())
}

/// A crash one run found, minimized and stored.
struct Crash {
    stored: PathBuf,
    bytes: u64,
    original_bytes: u64,
    minimized: bool,
}

/// What one target's run showed.
struct FuzzRun {
    target: &'static str,
    exec_per_sec: String,
    cov: String,
    corpus_before: usize,
    corpus_after: usize,
    /// libFuzzer's stderr.
    log: PathBuf,
    /// From start to exit: with a crash, the time to find it.
    elapsed: Duration,
    crash: Option<Crash>,
}

fn select(which: &str) -> Result<Vec<&'static str>> {
    if which == "all" {
        return Ok(FUZZ_TARGETS.to_vec());
    }
    match FUZZ_TARGETS.iter().find(|t| **t == which) {
        Some(t) => Ok(vec![*t]),
        None => bail!("unknown fuzz target {which:?}; one of {FUZZ_TARGETS:?} or `all`"),
    }
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
    let targets = select(which)?;
    let build = build(root, flavor, "release")?;
    if let Some(file) = repro {
        let [target] = targets[..] else {
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
    let logs: Vec<&Path> = runs.iter().map(|r| r.log.as_path()).collect();
    write_report(root, &logs, report, None)?;
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

/// Files in `dir` that the replay test and build.sh take (hidden ones are scratch).
fn visible_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.is_file()
                && !p
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        })
        .collect();
    files.sort();
    files
}

/// Copies `from` to `to` through a temporary file in `to`'s folder: libFuzzer, `cargo test` and
/// git never see a half-written file (the hidden temporary name is skipped by the replay test).
fn copy_atomic(from: &Path, to: &Path) -> Result<()> {
    let dir = to
        .parent()
        .with_context(|| format!("{} has no folder", to.display()))?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".tmp-")
        .tempfile_in(dir)
        .with_context(|| format!("creating a temporary file in {}", dir.display()))?;
    let mut source = File::open(from).with_context(|| format!("opening {}", from.display()))?;
    std::io::copy(&mut source, tmp.as_file_mut())
        .with_context(|| format!("copying {}", from.display()))?;
    tmp.persist(to)
        .with_context(|| format!("storing {}", to.display()))?;
    Ok(())
}

/// The value after `key` (`cov:`, `exec/s:`) in a libFuzzer status line; the same words appear
/// in fork mode's `#N: cov: X ft: Y corp: Z exec/s: E oom/timeout/crash: ...` lines.
fn stat_after<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let mut words = line.split_whitespace();
    words.find(|w| *w == key)?;
    words.next()
}

/// exec/s (of the whole run, over all processes) and coverage from a libFuzzer log, in-process
/// or `-fork=N`.
fn stats(log: &str) -> (String, String) {
    // A crashing fork-mode job's own log (status lines, final stats) follows this line; the
    // run's figures are the parent's, before it.
    let log = log
        .split("INFO: log from the inner process:")
        .next()
        .unwrap_or(log);
    let last_status = log
        .lines()
        .rev()
        .find(|l| l.contains(" cov: ") && l.contains("exec/s:"));
    // In-process, the final stats hold the run's average. Fork mode prints none, and the exec/s
    // of its `#N: ... time: Ts job: J` lines is the last finished job's own average, a fraction
    // of the run's rate with several jobs: N executions in T seconds is the rate.
    let fork_rate = last_status.filter(|l| l.contains(" job: ")).and_then(|l| {
        let runs: u64 = l.strip_prefix('#')?.split(':').next()?.parse().ok()?;
        let secs: u64 = stat_after(l, "time:")?.strip_suffix('s')?.parse().ok()?;
        (secs > 0).then(|| (runs / secs).to_string())
    });
    let exec_per_sec = log
        .lines()
        .find_map(|l| l.strip_prefix("stat::average_exec_per_sec:"))
        .map(|s| s.trim().to_string())
        .or(fork_rate)
        .or_else(|| {
            last_status
                .and_then(|l| stat_after(l, "exec/s:"))
                .map(str::to_string)
        })
        .unwrap_or_else(|| "?".into());
    let cov = last_status
        .and_then(|l| stat_after(l, "cov:"))
        .unwrap_or("?");
    (exec_per_sec, cov.to_string())
}

/// Empties `dir` (creating it if needed).
fn fresh_dir(dir: &Path) -> Result<()> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).with_context(|| format!("clearing {}", dir.display()))?;
    }
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))
}

fn fuzz_one(
    root: &Path,
    build: &Build,
    target: &'static str,
    time: u64,
    jobs: u32,
) -> Result<FuzzRun> {
    let bin = build.bin(target);
    let regressions = root.join("corpus/regressions/fuzz").join(target);
    let scratch = build.target_dir.join("corpus").join(target);
    let artifacts = build.target_dir.join("artifacts").join(target);
    let logs = build.target_dir.join("logs");
    let log_path = logs.join(format!("{target}.log"));
    std::fs::create_dir_all(&scratch).with_context(|| format!("creating {}", scratch.display()))?;
    std::fs::create_dir_all(&logs).with_context(|| format!("creating {}", logs.display()))?;
    // Old artifacts would be mistaken for this run's crash.
    fresh_dir(&artifacts)?;
    for seed in visible_files(&root.join("corpus/fuzz").join(target)) {
        let to = scratch.join(seed.file_name().unwrap_or_default());
        if !to.exists() {
            copy_atomic(&seed, &to)?;
        }
    }
    let corpus_before = visible_files(&scratch).len();
    let mut cmd = build.libfuzzer(target, time, &format!("{}/", artifacts.display()));
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
    let text = std::fs::read_to_string(&log_path).unwrap_or_default();
    let (exec_per_sec, cov) = stats(&text);
    let mut run = FuzzRun {
        target,
        exec_per_sec,
        cov,
        corpus_before,
        corpus_after: visible_files(&scratch).len(),
        log: log_path.clone(),
        elapsed,
        crash: None,
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
    // The panic (location and message) or libFuzzer's error line.
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

/// The fuzz smoke of `cargo xtask ci`: `.clusterfuzzlite/build.sh` as ClusterFuzzLite runs it,
/// its outputs checked, then every target run for a few seconds on its unpacked seed corpus
/// with its dictionary. One check per target; a failed build is an error.
pub fn smoke(root: &Path, report: &ReportTo, normfuzz: Option<&Path>) -> Result<(u64, u64)> {
    eprintln!("==> fuzz smoke: build.sh, then each target {SMOKE_RUNS} runs (seed 1) on its seeds");
    let started = Instant::now();
    let build = build(root, Flavor::Real, "ci")?;
    let built = started.elapsed();
    let work = build.target_dir.join("smoke");
    fresh_dir(&work)?;
    let (mut passed, mut failed) = (0, 0);
    let logs: Vec<PathBuf> = FUZZ_TARGETS
        .iter()
        .map(|t| work.join(format!("{t}.log")))
        .collect();
    for (target, log) in FUZZ_TARGETS.iter().zip(&logs) {
        match smoke_one(root, &build, &work, target, log) {
            Ok(()) => passed += 1,
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
    write_report(root, &ran, report, normfuzz)?;
    eprintln!(
        "fuzz smoke: {passed} passed, {failed} failed (build {:.0} s, total {:.0} s)",
        built.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    Ok((passed, failed))
}

fn smoke_one(root: &Path, build: &Build, work: &Path, target: &str, log_path: &Path) -> Result<()> {
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
    let text = std::fs::read_to_string(log_path).unwrap_or_default();
    let (exec_per_sec, cov) = stats(&text);
    ensure!(
        status.success(),
        "{target} failed ({status}) on its seeds; log {}",
        log_path.display()
    );
    eprintln!("fuzz smoke: {target} ok ({unpacked} seeds, {exec_per_sec} exec/s, cov {cov})");
    Ok(())
}

/// `cargo test -p normfuzz-fuzz --release --test replay`, with or without the planted bug.
fn replay(root: &Path, flavor: Flavor) -> Result<(Output, Duration)> {
    let mut args = vec!["test", "-p", "normfuzz-fuzz", "--release"];
    if flavor == Flavor::PlantedBug {
        args.extend(["--features", "planted-bug"]);
    }
    args.extend(["--test", "replay"]);
    eprintln!("==> cargo {}", args.join(" "));
    let started = Instant::now();
    let output = cargo(root, &args)
        .output()
        .context("cannot run cargo test")?;
    Ok((output, started.elapsed()))
}

/// Removes a file on drop, and its folder when that leaves it empty (git keeps no empty folder,
/// but a stray one would still show in listings).
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        if let Err(err) = std::fs::remove_file(&self.0) {
            eprintln!("xtask: cannot remove {}: {err}", self.0.display());
        }
        if let Some(dir) = self.0.parent() {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

/// The end-to-end proof that the fuzzer finds bugs: `neutralize` built with the planted bug is
/// fuzzed from its seeds until it crashes; the crash must be minimized and stored as a
/// regression, fail the replay test with the bug and pass it without. The stored file is removed
/// at the end, whatever happened, so the tree stays clean.
pub fn planted_bug(root: &Path) -> Result<()> {
    let target = "neutralize";
    let started = Instant::now();
    let build = build(root, Flavor::PlantedBug, "release")?;
    let build_time = started.elapsed();
    // From the seeds alone: an earlier run's corpus would shorten the time to find.
    fresh_dir(&build.target_dir.join("corpus").join(target))?;
    let regressions = root.join("corpus/regressions/fuzz").join(target);
    let before = visible_files(&regressions);
    let run = fuzz_one(root, &build, target, PLANTED_BUG_SECONDS, 1)?;
    let Some(crash) = run.crash else {
        bail!("the fuzzer did not find the planted bug in {PLANTED_BUG_SECONDS} s");
    };
    ensure!(
        !before.contains(&crash.stored),
        "{} was already checked in; not touching it",
        crash.stored.display()
    );
    // Deleted when this function returns, on every path.
    let stored = RemoveOnDrop(crash.stored.clone());
    let name = crash
        .stored
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    ensure!(
        crash.stored.parent() == Some(regressions.as_path()),
        "the crash was stored as {}, not under {}",
        crash.stored.display(),
        regressions.display()
    );
    ensure!(
        crash.minimized && crash.bytes <= crash.original_bytes,
        "the crash was not minimized ({} bytes from {})",
        crash.bytes,
        crash.original_bytes
    );

    let (with_bug, with_time) = replay(root, Flavor::PlantedBug)?;
    let out = format!(
        "{}{}",
        String::from_utf8_lossy(&with_bug.stdout),
        String::from_utf8_lossy(&with_bug.stderr)
    );
    ensure!(
        !with_bug.status.success(),
        "the replay test passes with the planted bug on {name}"
    );
    ensure!(
        out.contains(&format!("{name} fails its target")),
        "the replay test failed, but not on {name}:\n{out}"
    );
    // The panic message (the line after `panicked at`) and the replay test's own assertion.
    let messages: Vec<&str> = out
        .lines()
        .zip(out.lines().skip(1))
        .filter(|(l, _)| l.contains("panicked at"))
        .map(|(_, next)| next)
        .collect();

    let (without_bug, without_time) = replay(root, Flavor::Real)?;
    ensure!(
        without_bug.status.success(),
        "the replay test fails without the planted bug:\n{}{}",
        String::from_utf8_lossy(&without_bug.stdout),
        String::from_utf8_lossy(&without_bug.stderr)
    );
    let input = std::fs::read(&crash.stored)
        .with_context(|| format!("reading {}", crash.stored.display()))?;
    drop(stored);
    ensure!(
        !crash.stored.exists(),
        "cannot remove {}",
        crash.stored.display()
    );

    println!("planted bug: found, minimized, replayed, removed");
    println!(
        "  time to find:  {:.1} s of fuzzing ({} exec/s, {PLANTED_BUG_SECONDS} s allowed)",
        run.elapsed.as_secs_f64(),
        run.exec_per_sec
    );
    println!(
        "  input:         {} bytes, minimized from {}: {:?}",
        crash.bytes,
        crash.original_bytes,
        String::from_utf8_lossy(&input)
    );
    for message in messages {
        println!("  replay with the bug fails: {message}");
    }
    println!("  replay without the bug passes on the same file");
    println!(
        "  timings:       build {:.0} s, replay with bug {:.0} s, without {:.0} s, total {:.0} s",
        build_time.as_secs_f64(),
        with_time.as_secs_f64(),
        without_time.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::stats;

    #[test]
    fn stats_from_in_process_and_fork_logs() {
        let in_process = "#4096\tpulse  cov: 812 ft: 1500 corp: 40/2Kb lim: 43 exec/s: 2048 rss: 60Mb\n\
             #9000\tNEW    cov: 815 ft: 1510 corp: 41/2Kb lim: 43 exec/s: 3000 rss: 61Mb L: 9/40\n\
             stat::number_of_executed_units: 9100\nstat::average_exec_per_sec:     3033\n";
        assert_eq!(stats(in_process), ("3033".into(), "815".into()));
        // From `cargo xtask fuzz retry --time 20 --jobs 2`: 249250 runs in 20 s over two jobs,
        // while the last job alone averaged 4683.
        let fork = "INFO: -fork=2: 692 seed inputs, starting to fuzz in /tmp/libFuzzerTemp.FuzzWithFork27100.dir\n\
             #15362: cov: 1566 ft: 4792 corp: 692 exec/s: 7681 oom/timeout/crash: 0/0/0 time: 2s job: 1 dft_time: 0\n\
             #249250: cov: 1621 ft: 4947 corp: 768 exec/s: 4683 oom/timeout/crash: 0/0/0 time: 20s job: 7 dft_time: 0\n\
             INFO: fuzzed for 20 seconds, wrapping up soon\nINFO: exiting: 0 time: 20s\n";
        assert_eq!(stats(fork), ("12462".into(), "1621".into()));
        // A fork-mode crash (neutralize with the planted bug, --jobs 2): the inner job's log
        // follows, with its own status lines and final stats.
        let fork_crash = "INFO: -fork=2: 439 seed inputs, starting to fuzz in /tmp/libFuzzerTemp.FuzzWithFork6947.dir\n\
             #2620: cov: 3440 ft: 6844 corp: 439 exec/s: 2620 oom/timeout/crash: 0/0/0 time: 2s job: 2 dft_time: 0\n\
             INFO: log from the inner process:\n\
             #2616\tREDUCE cov: 3372 ft: 6331 corp: 318/13840b lim: 65 exec/s: 2616 rss: 33Mb L: 37/65\n\
             stat::number_of_executed_units: 2620\nstat::average_exec_per_sec:     2620\n";
        assert_eq!(stats(fork_crash), ("1310".into(), "3440".into()));
        assert_eq!(stats(""), ("?".into(), "?".into()));
    }
}
