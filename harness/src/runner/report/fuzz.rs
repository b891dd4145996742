//! `normfuzz fuzz-report`: reads libFuzzer's stderr logs, one per target (the target is the
//! file's stem), and writes the same four formats as a campaign.
//!
//! What is read from a log: the status lines (`#4096\tNEW    cov: 1594 ft: 3000 corp: 120/4Kb
//! ... exec/s: 14800 ...`, or `#4096: cov: ... exec/s: ... time: 3s` under `-fork`), the end
//! (`Done N runs in S second(s)`, or `INFO: exiting: CODE time: Ss` under `-fork`), the final
//! stats of `-print_final_stats=1` (`stat::average_exec_per_sec: N`), and a crash: a Rust panic
//! (`thread '...' panicked at FILE:LINE:COL:` and its message), a sanitizer or libFuzzer report
//! (`==PID== ERROR: libFuzzer: deadly signal`, `timeout`, `out-of-memory`, ...) and the
//! artifact (`Test unit written to PATH`).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::Serialize;

use super::{html, junit, markdown, write_formats};

/// Status-line samples kept per target, evenly spread over the run.
const MAX_SAMPLES: usize = 400;
/// Lines of the crash report kept as its excerpt, at most `EXCERPT_MAX` bytes.
const EXCERPT_LINES: usize = 40;
const EXCERPT_MAX: usize = 4000;

/// One libFuzzer status line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FuzzSample {
    /// `#N`: executions so far.
    pub execs: u64,
    pub cov: Option<u64>,
    pub ft: Option<u64>,
    /// Inputs in the corpus (`corp: 120/4Kb` → 120).
    pub corpus: Option<u64>,
    /// libFuzzer's `exec/s:`, executions divided by whole seconds since start.
    pub exec_per_sec: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Ran to its end (`Done ...`, or a zero exit under `-fork`) without a crash.
    Clean,
    /// A panic, sanitizer or libFuzzer error report (crash, timeout, out of memory, leak).
    Crashed,
    /// Neither an end nor a crash: the run was interrupted or never got going.
    Incomplete,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Clean => "clean",
            Status::Crashed => "crashed",
            Status::Incomplete => "incomplete",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Crash {
    /// The panic message and location, or the error report's headline.
    pub reason: String,
    /// The input libFuzzer wrote (`Test unit written to PATH`).
    pub artifact: Option<String>,
    /// The report's first lines.
    pub excerpt: String,
}

/// What one target's log shows.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FuzzRun {
    pub target: String,
    pub log: String,
    pub status: Status,
    pub execs: u64,
    pub seconds: Option<u64>,
    /// Average over the run: the final stats, else the last status line (or executions over
    /// seconds under `-fork`, whose status lines give only the latest job's rate).
    pub exec_per_sec: Option<u64>,
    pub new_units: Option<u64>,
    pub peak_rss_mb: Option<u64>,
    pub crash: Option<Crash>,
    /// Status lines, at most `MAX_SAMPLES`, the last one always kept.
    pub series: Vec<FuzzSample>,
}

impl FuzzRun {
    /// The last status line: the final coverage and corpus.
    pub fn last(&self) -> Option<&FuzzSample> {
        self.series.last()
    }

    /// `cargo xtask fuzz TARGET --repro ARTIFACT` when the crash left an artifact.
    pub fn repro(&self) -> Option<String> {
        let artifact = self.crash.as_ref()?.artifact.as_ref()?;
        Some(format!(
            "cargo xtask fuzz {} --repro {}",
            super::shell_quote(&self.target),
            super::shell_quote(artifact)
        ))
    }
}

/// Reads every log; the target names (file stems) must differ.
pub fn read_logs(paths: &[PathBuf]) -> Result<Vec<FuzzRun>> {
    let mut seen = HashSet::new();
    let mut runs = Vec::new();
    for path in paths {
        let run = read_log(path)?;
        if !seen.insert(run.target.clone()) {
            bail!(
                "two logs for target `{}` (the target is the file name without extension): {}",
                run.target,
                path.display()
            );
        }
        runs.push(run);
    }
    Ok(runs)
}

/// Reads one log; its target is the file's stem (`logs/neutralize.log` → `neutralize`).
pub fn read_log(path: &Path) -> Result<FuzzRun> {
    let target = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .filter(|s| !s.is_empty())
        .with_context(|| format!("{}: no file name to take the target from", path.display()))?;
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    // A panic message may quote the fuzz input: keep going past bytes that are not UTF-8.
    parse_log(
        &target,
        &path.display().to_string(),
        &String::from_utf8_lossy(&bytes),
    )
}

/// Parses one target's libFuzzer stderr.
pub fn parse_log(target: &str, log: &str, text: &str) -> Result<FuzzRun> {
    let lines: Vec<&str> = text.lines().collect();
    // Under `-fork` the parent prints `#N: ...` lines and may dump a child's log (its own
    // `#N\t...`, `Done` and `stat::` lines, counted from that job's start): read only the parent.
    let fork = lines
        .iter()
        .any(|l| l.starts_with("INFO: -fork=") || status_line(l).is_some_and(|(f, _)| f));
    let samples: Vec<FuzzSample> = lines
        .iter()
        .filter_map(|l| status_line(l))
        .filter(|(f, _)| *f == fork)
        .map(|(_, s)| s)
        .collect();
    let stat = |key: &str| -> Option<u64> {
        lines
            .iter()
            .filter(|_| !fork)
            .find_map(|l| l.strip_prefix(key)?.trim().parse().ok())
    };
    let last = samples.last().copied();
    let mut seconds = None;
    let mut execs = stat("stat::number_of_executed_units:").or(last.map(|s| s.execs));
    let mut ended = false;
    let mut fork_exit = None;
    for line in &lines {
        if let Some((runs, secs)) = done_line(line).filter(|_| !fork) {
            (execs, seconds, ended) = (Some(runs), Some(secs), true);
        }
        if let Some((code, secs)) = fork_exit_line(line).filter(|_| fork) {
            (seconds, ended, fork_exit) = (Some(secs), true, Some(code));
        }
    }
    let exec_per_sec = match (fork, execs, seconds) {
        (true, Some(n), Some(s)) if s > 0 => Some(n / s),
        (true, ..) => last.and_then(|s| s.exec_per_sec),
        (false, ..) => stat("stat::average_exec_per_sec:").or(last.and_then(|s| s.exec_per_sec)),
    };
    let crash = crash_report(&lines).or_else(|| {
        fork_exit.filter(|code| *code != 0).map(|code| Crash {
            reason: format!("libFuzzer -fork exited with {code}"),
            artifact: None,
            excerpt: String::new(),
        })
    });
    if samples.is_empty() && !ended && crash.is_none() && !text.contains("INFO: Seed: ") {
        bail!(
            "{log}: not a libFuzzer log (no `#N ... cov:` status line, no `Done N runs` line, \
             no crash report)"
        );
    }
    let status = match (&crash, ended) {
        (Some(_), _) => Status::Crashed,
        (None, true) => Status::Clean,
        (None, false) => Status::Incomplete,
    };
    Ok(FuzzRun {
        target: target.to_string(),
        log: log.to_string(),
        status,
        execs: execs.unwrap_or(0),
        seconds: seconds.or_else(|| last_fork_time(&lines).filter(|_| fork)),
        exec_per_sec,
        new_units: stat("stat::new_units_added:"),
        peak_rss_mb: stat("stat::peak_rss_mb:"),
        crash,
        series: thin(samples),
    })
}

/// `#N\tWORD cov: ...` → (false, sample); `#N: cov: ...` (the `-fork` parent) → (true, sample).
fn status_line(line: &str) -> Option<(bool, FuzzSample)> {
    let rest = line.strip_prefix('#')?;
    let digits = rest.find(|c: char| !c.is_ascii_digit())?;
    let execs = rest[..digits].parse().ok()?;
    let after = &rest[digits..];
    let fork = after.starts_with(": ");
    if !fork && !after.starts_with('\t') {
        return None;
    }
    let value = |key: &str| -> Option<u64> {
        let mut words = after.split_whitespace();
        words.find(|w| *w == key)?;
        words.next()?.split('/').next()?.parse().ok()
    };
    let sample = FuzzSample {
        execs,
        cov: value("cov:"),
        ft: value("ft:"),
        corpus: value("corp:"),
        exec_per_sec: value("exec/s:"),
    };
    Some((fork, sample))
}

/// `Done 189212 runs in 21 second(s)` → (189212, 21).
fn done_line(line: &str) -> Option<(u64, u64)> {
    let rest = line.strip_prefix("Done ")?;
    let (runs, rest) = rest.split_once(" runs in ")?;
    let seconds = rest.strip_suffix(" second(s)")?;
    Some((runs.parse().ok()?, seconds.parse().ok()?))
}

/// `INFO: exiting: 0 time: 21s` → (0, 21).
fn fork_exit_line(line: &str) -> Option<(i64, u64)> {
    let rest = line.strip_prefix("INFO: exiting: ")?;
    let (code, rest) = rest.split_once(" time: ")?;
    Some((code.parse().ok()?, rest.strip_suffix('s')?.parse().ok()?))
}

/// The `time: Ns` of the last `-fork` status line.
fn last_fork_time(lines: &[&str]) -> Option<u64> {
    lines.iter().rev().find_map(|l| {
        status_line(l).filter(|(fork, _)| *fork)?;
        let (_, rest) = l.split_once(" time: ")?;
        rest.split_whitespace()
            .next()?
            .strip_suffix('s')?
            .parse()
            .ok()
    })
}

/// The first crash in the log: a Rust panic or a `==PID== ERROR: ...` report.
fn crash_report(lines: &[&str]) -> Option<Crash> {
    let panic = lines.iter().position(|l| l.contains(" panicked at "));
    let error = lines.iter().position(|l| is_error_report(l));
    let start = panic.into_iter().chain(error).min()?;
    let reason = match panic {
        Some(i) => panic_reason(lines, i),
        // No panic: `start` is the error report.
        None => lines[start]
            .split_once("ERROR: ")
            .map_or(lines[start], |(_, r)| r)
            .trim()
            .to_string(),
    };
    let artifact = lines[start..].iter().find_map(|l| {
        let (_, path) = l.split_once("Test unit written to ")?;
        Some(path.trim().to_string())
    });
    // From the first report line to the artifact (and its `Base64:` line), without the
    // backtrace's frames: the panic, the error, the mutation and the artifact fit in a screen.
    let mut excerpt = Vec::new();
    let mut after_artifact = false;
    for line in lines[start..].iter().filter(|l| !is_backtrace_frame(l)) {
        if excerpt.len() == EXCERPT_LINES || (after_artifact && !line.starts_with("Base64: ")) {
            break;
        }
        after_artifact |= line.contains("Test unit written to ");
        excerpt.push(*line);
    }
    let excerpt = excerpt.join("\n");
    Some(Crash {
        reason,
        artifact,
        excerpt: crate::excerpt::bounded(&excerpt, EXCERPT_MAX).into_owned(),
    })
}

/// `   3: rust_fuzzer_test_input` and the `             at src/lib.rs:276:60` under it.
fn is_backtrace_frame(line: &str) -> bool {
    let trimmed = line.trim_start();
    trimmed.starts_with("at ")
        || trimmed
            .split_once(": ")
            .is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// `==19877== ERROR: libFuzzer: deadly signal`, `==1==ERROR: AddressSanitizer: ...`.
fn is_error_report(line: &str) -> bool {
    let Some(rest) = line.strip_prefix("==") else {
        return false;
    };
    let Some((pid, rest)) = rest.split_once("==") else {
        return false;
    };
    !pid.is_empty()
        && pid.bytes().all(|b| b.is_ascii_digit())
        && rest.trim_start().starts_with("ERROR:")
}

/// The message of the panic on line `i` and where it was raised. Since Rust 1.73 the message
/// follows on the next lines (`panicked at src/lib.rs:73:13:`); before, it was quoted inline.
fn panic_reason(lines: &[&str], i: usize) -> String {
    let (_, at) = lines[i].split_once(" panicked at ").unwrap_or_default();
    match at.strip_suffix(':') {
        Some(location) => {
            let message = lines
                .get(i + 1)
                .filter(|l| !l.starts_with("note: ") && !l.starts_with("stack backtrace:"))
                .copied()
                .unwrap_or("(no message)");
            format!("{} (panicked at {location})", message.trim())
        }
        None => format!("panicked at {at}"),
    }
}

/// At most `MAX_SAMPLES` samples, evenly spread, first and last kept.
fn thin(samples: Vec<FuzzSample>) -> Vec<FuzzSample> {
    if samples.len() <= MAX_SAMPLES {
        return samples;
    }
    let last = samples.len() - 1;
    (0..MAX_SAMPLES)
        .map(|k| samples[k * last / (MAX_SAMPLES - 1)])
        .collect()
}

/// Writes a fuzz run's report into `dir`; `step_summary` is `$GITHUB_STEP_SUMMARY` if set.
pub fn write(dir: &Path, runs: &[FuzzRun], step_summary: Option<&Path>) -> Result<()> {
    let clean = runs.iter().all(|r| r.status == Status::Clean);
    let index = serde_json::json!({
        "kind": "fuzz",
        "verdict": if clean { "pass" } else { "fail" },
        "targets": runs,
        "files": {"junit": "junit.xml", "summary": "summary.md", "html": "report.html"},
    });
    write_formats(
        dir,
        &index,
        &markdown::fuzz(runs),
        &junit::fuzz(runs)?,
        &html::fuzz(runs),
        step_summary,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_lines_in_both_modes() {
        let (fork, s) = status_line(
            "#4096\tNEW    cov: 1594 ft: 3000 corp: 120/4Kb lim: 43 exec/s: 14800 rss: 60Mb L: 12/40 MS: 3 ",
        )
        .expect("status line");
        assert!(!fork);
        assert_eq!(
            s,
            FuzzSample {
                execs: 4096,
                cov: Some(1594),
                ft: Some(3000),
                corpus: Some(120),
                exec_per_sec: Some(14800),
            }
        );
        let (fork, s) = status_line(
            "#51200: cov: 2100 ft: 4100 corp: 300 exec/s: 2500 oom/timeout/crash: 0/0/0 time: 21s job: 9 dft_time: 0",
        )
        .expect("fork status line");
        assert!(fork);
        assert_eq!((s.execs, s.cov, s.corpus), (51200, Some(2100), Some(300)));
        for not_status in [
            "#",
            "#abc\tNEW",
            "#12 NEW",
            "# comment",
            "\tNEW_FUNC[1/2]: 0x55",
        ] {
            assert_eq!(status_line(not_status), None, "{not_status}");
        }
    }

    #[test]
    fn fork_mode_reads_the_parent_only() {
        let log = "INFO: -fork=2: fuzzing in separate process(s)\n\
            #1000: cov: 900 ft: 1000 corp: 10 exec/s: 500 oom/timeout/crash: 0/0/0 time: 2s job: 1 dft_time: 0\n\
            #9\tINITED cov: 5 ft: 5 corp: 1/1b exec/s: 0 rss: 30Mb\n\
            Done 77 runs in 1 second(s)\n\
            #5000: cov: 1200 ft: 1500 corp: 40 exec/s: 400 oom/timeout/crash: 0/0/0 time: 10s job: 4 dft_time: 0\n\
            INFO: fuzzed for 10 seconds, wrapping up soon\n\
            INFO: exiting: 0 time: 10s\n";
        let run = parse_log("t", "t.log", log).expect("parses");
        assert_eq!(run.status, Status::Clean);
        assert_eq!(run.series.len(), 2, "the child's line is not the parent's");
        assert_eq!(
            (run.execs, run.seconds, run.exec_per_sec),
            (5000, Some(10), Some(500))
        );
        let crashed =
            parse_log("t", "t.log", &log.replace("exiting: 0", "exiting: 1")).expect("parses");
        assert_eq!(crashed.status, Status::Crashed);
    }

    #[test]
    fn interrupted_and_foreign_logs() {
        let run = parse_log(
            "t",
            "t.log",
            "INFO: Seed: 1\n#2\tINITED cov: 5 exec/s: 0 rss: 30Mb\n==7== libFuzzer: run interrupted; exiting\n",
        )
        .expect("parses");
        assert_eq!(run.status, Status::Incomplete);
        let err = parse_log("t", "notes.txt", "hello\nworld\n").expect_err("not libFuzzer");
        assert!(err.to_string().contains("not a libFuzzer log"), "{err}");
    }

    #[test]
    fn crash_reasons() {
        let old_panic = "INFO: Seed: 1\nthread '<unnamed>' panicked at 'boom', src/lib.rs:1:2\n";
        let crash = parse_log("t", "t", old_panic).unwrap().crash.unwrap();
        assert_eq!(crash.reason, "panicked at 'boom', src/lib.rs:1:2");
        let timeout = "INFO: Seed: 1\nALARM: working on the last Unit for 21 seconds\n\
            ==42== ERROR: libFuzzer: timeout after 21 seconds\n\
            artifact_prefix='a/'; Test unit written to a/timeout-1\nBase64: AA==\nstat::peak_rss_mb: 30\n";
        let crash = parse_log("t", "t", timeout).unwrap().crash.unwrap();
        assert_eq!(crash.reason, "libFuzzer: timeout after 21 seconds");
        assert_eq!(crash.artifact.as_deref(), Some("a/timeout-1"));
        assert!(crash.excerpt.ends_with("Base64: AA=="), "{}", crash.excerpt);
    }

    #[test]
    fn long_series_are_thinned_evenly() {
        let samples: Vec<FuzzSample> = (0..1000)
            .map(|execs| FuzzSample {
                execs,
                cov: None,
                ft: None,
                corpus: None,
                exec_per_sec: None,
            })
            .collect();
        let thinned = thin(samples);
        assert_eq!(thinned.len(), MAX_SAMPLES);
        assert_eq!((thinned[0].execs, thinned[MAX_SAMPLES - 1].execs), (0, 999));
    }
}
