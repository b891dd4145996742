//! `normfuzz e2e` end to end against a stand-in runtime (tests/runtimes/fake_runtime.py): the
//! sandbox, the mock providers and MCP server, the judge and the baseline, without installing
//! a real runtime. The real one runs in `cargo xtask ci` (`cargo xtask e2e --runtime openclaw`).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// The fake adapter in a temp folder with `FAKE_MODE` set to `mode`.
fn adapter(dir: &Path, mode: &str) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/runtimes");
    let toml = std::fs::read_to_string(src.join("fake.toml"))
        .unwrap()
        .replace("FAKE_MODE = \"good\"", &format!("FAKE_MODE = \"{mode}\""));
    std::fs::copy(src.join("fake_runtime.py"), dir.join("fake_runtime.py")).unwrap();
    let path = dir.join("fake.toml");
    std::fs::write(&path, toml).unwrap();
    path
}

fn mock_providers() -> PathBuf {
    // Built by cargo for this test run: the binary of the same workspace, next to normfuzz.
    let path = Path::new(env!("CARGO_BIN_EXE_normfuzz")).with_file_name("mock-providers");
    if !path.is_file() {
        let status = Command::new(env!("CARGO"))
            .args(["build", "-p", "mock-providers"])
            .args(cfg!(not(debug_assertions)).then_some("--release"))
            .status()
            .unwrap();
        assert!(status.success(), "cannot build mock-providers");
    }
    path
}

fn e2e(dir: &Path, mode: &str, baseline: Option<&str>) -> (i32, Value) {
    let report = dir.join(format!("report-{mode}-{}", baseline.map_or(0, str::len)));
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_normfuzz"));
    cmd.arg("e2e")
        .arg("--adapter")
        .arg(adapter(dir, mode))
        .args(["--cases", "10", "--jobs", "2", "--seed", "3"])
        .arg("--report")
        .arg(&report)
        .arg("--cache")
        .arg(dir.join("cache"))
        .arg("--mock-providers")
        .arg(mock_providers());
    if let Some(text) = baseline {
        let path = dir.join(format!("baseline-{}.toml", text.len()));
        std::fs::write(&path, text).unwrap();
        cmd.arg("--baseline").arg(path);
    }
    let output = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let index: Value = serde_json::from_slice(
        &std::fs::read(report.join("index.json"))
            .unwrap_or_else(|_| panic!("no index.json; stderr:\n{stderr}")),
    )
    .unwrap();
    (output.status.code().unwrap_or(-1), index)
}

fn found(index: &Value) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = index["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["case"].as_str().unwrap().to_string(),
                f["rule"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn a_runtime_that_follows_the_rules_passes_and_a_buggy_one_is_caught() {
    let dir = tempfile::tempdir().unwrap();
    let (code, good) = e2e(dir.path(), "good", None);
    assert_eq!(good["errors"], 0, "{good:#}");
    assert_eq!(found(&good), Vec::<(String, String)>::new(), "{good:#}");
    assert_eq!(code, 0);
    assert_eq!(good["cases"].as_array().unwrap().len(), 10);

    let (code, bad) = e2e(dir.path(), "bad", None);
    assert_eq!(code, 1);
    let bad_found = found(&bad);
    for expected in [
        ("seed001-image-without-data", "F5"),
        ("reply-media-etc-passwd-split", "S3"),
        ("tool-text-plants-media", "S1"),
        ("reply-media-metadata-url", "S3"),
    ] {
        assert!(
            bad_found.contains(&(expected.0.to_string(), expected.1.to_string())),
            "{expected:?} missing from {bad_found:?}"
        );
    }
    // Each finding is stored with the captured request and a repro line.
    let stored: Value = serde_json::from_slice(
        &std::fs::read(
            dir.path()
                .join("report-bad-0/findings/seed001-image-without-data--F5.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(stored["capturedRequest"]["provider"], "openai-chat");
    assert!(
        stored["repro"]
            .as_str()
            .unwrap()
            .contains("--case seed001-image-without-data")
    );

    // Every finding in the baseline: green. One more entry that does not reproduce: stale, red.
    let baseline: String = bad_found
        .iter()
        .map(|(case, rule)| {
            format!("[[known]]\ncase = \"{case}\"\nrule = \"{rule}\"\nreason = \"fake\"\n")
        })
        .collect();
    let (code, known) = e2e(dir.path(), "bad", Some(&baseline));
    assert_eq!((code, &known["new"]), (0, &Value::from(0)), "{known:#}");
    let stale =
        format!("{baseline}[[known]]\ncase = \"valid-image\"\nrule = \"F1\"\nreason = \"fixed\"\n");
    let (code, with_stale) = e2e(dir.path(), "bad", Some(&stale));
    assert_eq!(code, 1);
    assert_eq!(with_stale["stale"].as_array().unwrap().len(), 1);
}

/// A runtime killed mid-turn (SIGKILL after the model's first answer): every case ends, each as
/// a B1 finding naming the signal, and the run reports them without a harness error.
#[test]
fn a_runtime_killed_mid_turn_is_reported_and_the_run_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let (code, killed) = e2e(dir.path(), "killed", None);
    assert_eq!(code, 1, "{killed:#}");
    assert_eq!(killed["errors"], 0, "{killed:#}");
    let cases: Vec<&str> = killed["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(cases.len(), 10);
    let found = found(&killed);
    for case in cases {
        assert!(
            found.contains(&(case.to_string(), "B1".to_string())),
            "{case}: {found:?}"
        );
    }
    let reasons: Vec<&str> = killed["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == "B1")
        .filter_map(|f| f["reason"].as_str())
        .collect();
    assert!(
        reasons.len() == 10 && reasons.iter().all(|r| r.contains("signal 9")),
        "{reasons:?}"
    );
}
