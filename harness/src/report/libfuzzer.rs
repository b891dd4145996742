//! The libFuzzer log model: what one target's stderr log shows, parsed (`normfuzz fuzz-report`
//! reads one log per target, the target being the file's stem). Imports no renderer; `fuzz.rs`
//! writes it as the four formats, and `cargo xtask fuzz` reads its figures back from the
//! `index.json` that writes (`execPerSec`, the last `series` entry's `cov`).
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

use super::view::shell_quote;

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
            shell_quote(&self.target),
            shell_quote(artifact)
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
    if fork && seconds.is_none() {
        // Interrupted or crashed under `-fork`: no exit line, the last status line's time.
        seconds = last_fork_time(&lines);
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
        seconds,
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

    /// From xtask's former parser of its own: the rate of the whole run (over all processes
    /// under `-fork`) and the last coverage, in-process and `-fork=N`.
    #[test]
    fn average_rate_and_coverage_in_process_and_fork_logs() {
        let stats = |log: &str| {
            let run = parse_log("t", "t.log", log).expect("parses");
            (run.exec_per_sec, run.last().and_then(|s| s.cov))
        };
        let in_process = "#4096\tpulse  cov: 812 ft: 1500 corp: 40/2Kb lim: 43 exec/s: 2048 rss: 60Mb\n\
             #9000\tNEW    cov: 815 ft: 1510 corp: 41/2Kb lim: 43 exec/s: 3000 rss: 61Mb L: 9/40\n\
             stat::number_of_executed_units: 9100\nstat::average_exec_per_sec:     3033\n";
        assert_eq!(stats(in_process), (Some(3033), Some(815)));
        // From `cargo xtask fuzz retry --time 20 --jobs 2`: 249250 runs in 20 s over two jobs,
        // while the last job alone averaged 4683.
        let fork = "INFO: -fork=2: 692 seed inputs, starting to fuzz in /tmp/libFuzzerTemp.FuzzWithFork27100.dir\n\
             #15362: cov: 1566 ft: 4792 corp: 692 exec/s: 7681 oom/timeout/crash: 0/0/0 time: 2s job: 1 dft_time: 0\n\
             #249250: cov: 1621 ft: 4947 corp: 768 exec/s: 4683 oom/timeout/crash: 0/0/0 time: 20s job: 7 dft_time: 0\n\
             INFO: fuzzed for 20 seconds, wrapping up soon\nINFO: exiting: 0 time: 20s\n";
        assert_eq!(stats(fork), (Some(12462), Some(1621)));
        // A fork-mode crash (neutralize with the planted bug, --jobs 2): the inner job's log
        // follows, with its own status lines and final stats.
        let fork_crash = "INFO: -fork=2: 439 seed inputs, starting to fuzz in /tmp/libFuzzerTemp.FuzzWithFork6947.dir\n\
             #2620: cov: 3440 ft: 6844 corp: 439 exec/s: 2620 oom/timeout/crash: 0/0/0 time: 2s job: 2 dft_time: 0\n\
             INFO: log from the inner process:\n\
             #2616\tREDUCE cov: 3372 ft: 6331 corp: 318/13840b lim: 65 exec/s: 2616 rss: 33Mb L: 37/65\n\
             stat::number_of_executed_units: 2620\nstat::average_exec_per_sec:     2620\n";
        assert_eq!(stats(fork_crash), (Some(1310), Some(3440)));
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
