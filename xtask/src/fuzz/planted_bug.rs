//! `cargo xtask planted-bug`: the end-to-end proof that the fuzzer finds bugs.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};

use super::build::{Flavor, build};
use super::report::{ReportTo, write_report};
use super::run::fuzz_one;
use crate::cargo;
use crate::fs::{fresh_dir, visible_files};

/// Upper bound for `cargo xtask planted-bug` to find the planted bug.
const PLANTED_BUG_SECONDS: u64 = 300;

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
/// at the end, whatever happened, so the tree stays clean. The run's report (and the exec/s
/// printed) comes from `normfuzz fuzz-report`, in `target/fuzz-planted/report`.
pub fn planted_bug(root: &Path) -> Result<()> {
    let target = "neutralize";
    let started = Instant::now();
    let build = build(root, Flavor::PlantedBug, "release")?;
    let build_time = started.elapsed();
    // From the seeds alone: an earlier run's corpus would shorten the time to find.
    fresh_dir(&build.target_dir.join("corpus").join(target))?;
    let regressions = root.join("corpus/regressions/fuzz").join(target);
    let before = visible_files(&regressions);
    let run = fuzz_one(root, &build, target.to_string(), PLANTED_BUG_SECONDS, 1)?;
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
    // The run's figures, parsed by `normfuzz fuzz-report` (in the flavor's target dir).
    let report = ReportTo::Dir(build.target_dir.join("report"));
    let stats = write_report(root, &[run.log.as_path()], &report, None)?;
    let (exec_per_sec, _) = stats.shown(target);
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
        "  time to find:  {:.1} s of fuzzing ({exec_per_sec} exec/s, {PLANTED_BUG_SECONDS} s allowed)",
        run.elapsed.as_secs_f64(),
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
