//! `normfuzz fuzz-report` on real libFuzzer logs (`tests/fixtures/libfuzzer/`: a clean
//! `neutralize` run, its status lines thinned, and a `coerce_bytes` run that crashed on a
//! provider 400): what is parsed, the four files, the step summary and the exit status.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use normfuzz::report::fuzz::{Status, read_log};
use quick_junit::{NonSuccessKind, Report, TestCaseStatus};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/libfuzzer")
        .join(name)
}

fn fuzz_report(out: &Path, logs: &[PathBuf], step_summary: Option<&Path>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_normfuzz"));
    cmd.arg("fuzz-report").arg("--out").arg(out).args(logs);
    match step_summary {
        Some(path) => cmd.env("GITHUB_STEP_SUMMARY", path),
        None => cmd.env_remove("GITHUB_STEP_SUMMARY"),
    };
    cmd.output().expect("normfuzz runs")
}

#[test]
fn a_clean_log_is_read_to_its_final_stats() {
    let run = read_log(&fixture("neutralize.log")).expect("parses");
    assert_eq!(run.target, "neutralize");
    assert_eq!(run.status, Status::Clean);
    assert_eq!(
        (run.execs, run.seconds, run.exec_per_sec),
        (189_212, Some(21), Some(9_010))
    );
    assert_eq!((run.new_units, run.peak_rss_mb), (Some(2_609), Some(34)));
    let last = run.last().expect("status lines");
    assert_eq!(
        (last.execs, last.cov, last.ft, last.corpus),
        (189_212, Some(3_471), Some(7_552), Some(894))
    );
    assert_eq!(run.series.len(), 30);
    assert_eq!(run.series[0].execs, 6, "INITED comes first");
    assert!(run.series.windows(2).all(|w| w[0].execs < w[1].execs));
    assert!(run.crash.is_none());
}

#[test]
fn a_crash_is_read_with_its_reason_and_artifact() {
    let run = read_log(&fixture("coerce_bytes.log")).expect("parses");
    assert_eq!(run.status, Status::Crashed);
    assert_eq!(
        run.execs, 41_322,
        "from the final stats printed on the crash"
    );
    assert_eq!(run.seconds, None, "a crashed run prints no `Done` line");
    let crash = run.crash.as_ref().expect("crash");
    assert_eq!(
        crash.reason,
        "provider: anthropic answered 400 to a coerced result: Some(\"Could not process image\") \
         (panicked at fuzz/src/lib.rs:73:13)"
    );
    let artifact = "/work/main/target/fuzz/artifacts/coerce_bytes/crash-46c83578b8e3adbaca00558093bc30eb4a40c57d";
    assert_eq!(crash.artifact.as_deref(), Some(artifact));
    assert_eq!(
        run.repro().as_deref(),
        Some(format!("cargo xtask fuzz coerce_bytes --repro {artifact}").as_str())
    );
    assert!(
        crash
            .excerpt
            .contains("==19877== ERROR: libFuzzer: deadly signal")
    );
    assert!(crash.excerpt.ends_with("Base64: eyJjb250ZW50IjpbeyJ0eXBlIjoiaW1hZ2UiLCJkYXRhIjoiaVZCT1J3MEtHZ29BIiwibWltZVR5cGUiOiJpbWFnZS9wbmcifV19"));
    assert!(
        !crash.excerpt.contains("rust_begin_unwind"),
        "backtrace frames are left out"
    );
}

#[test]
fn crashed_target_fails_the_report_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let step_summary = dir.path().join("summary-of-the-job.md");
    std::fs::write(&step_summary, "# build\n\nok\n").unwrap();
    let out = dir.path().join("report");
    let output = fuzz_report(
        &out,
        &[fixture("coerce_bytes.log"), fixture("neutralize.log")],
        Some(&step_summary),
    );
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    for file in ["junit.xml", "index.json", "summary.md", "report.html"] {
        assert!(out.join(file).is_file(), "{file}");
    }
    let report =
        Report::deserialize_from_str(&std::fs::read_to_string(out.join("junit.xml")).unwrap())
            .expect("junit.xml parses");
    assert_eq!((report.tests, report.failures), (2, 1));
    let cases = &report.test_suites[0].test_cases;
    assert_eq!(cases[0].name.as_str(), "coerce_bytes");
    assert!(matches!(
        &cases[0].status,
        TestCaseStatus::NonSuccess { kind: NonSuccessKind::Failure, message: Some(m), .. }
            if m.as_str().contains("anthropic answered 400")
    ));
    assert_eq!(cases[1].name.as_str(), "neutralize");
    assert!(matches!(cases[1].status, TestCaseStatus::Success { .. }));
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    let appended = std::fs::read_to_string(&step_summary).unwrap();
    assert_eq!(appended, format!("# build\n\nok\n{summary}\n"));
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains(r#"id="crash-coerce_bytes""#));
    assert_eq!(
        html.matches("<polyline").count(),
        4,
        "two targets in two plots"
    );
    let index: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("index.json")).unwrap()).unwrap();
    assert_eq!(index["verdict"], "fail");
    assert_eq!(
        index["targets"][1]["series"].as_array().map(Vec::len),
        Some(30)
    );
}

#[test]
fn clean_targets_exit_0_and_bad_input_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let output = fuzz_report(&dir.path().join("ok"), &[fixture("neutralize.log")], None);
    assert_eq!(output.status.code(), Some(0), "{output:?}");

    let not_a_log = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let output = fuzz_report(&dir.path().join("bad"), &[not_a_log], None);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("Cargo.toml: not a libFuzzer log"),
        "{stderr}"
    );

    let output = fuzz_report(
        &dir.path().join("missing"),
        &[dir.path().join("nope.log")],
        None,
    );
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("cannot read"));

    let twice = [fixture("neutralize.log"), fixture("neutralize.log")];
    let output = fuzz_report(&dir.path().join("twice"), &twice, None);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("two logs for target `neutralize`"));
}
