//! The runtime's own coverage through the CLI: a SUT offering the protocol's coverage extension
//! (the fake SUT on the shared Python shim's coverage code) gets it in `index.json` (valid
//! against the published schema), the timeline, `summary.md` and `report.html`; a SUT without
//! it is said to report none. A steered run keeps the inputs that reached new coverage in its
//! `--corpus` folder, and the next run starts from them.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A 300-case `neutralize_text` run of the fake coverage SUT, with or without a scope.
fn run(report: &Path, scope: Option<&str>) -> Value {
    run_with(report, scope, &[])
}

fn run_with(report: &Path, scope: Option<&str>, extra: &[&str]) -> Value {
    let sut = root().join("harness/tests/suts/coverage/sut.py");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_normfuzz"));
    cmd.args([
        "conform",
        "--cases",
        "300",
        "--seed",
        "2",
        "--ops",
        "neutralize_text",
    ])
    .arg("--sut")
    .arg(format!("python3 {}", sut.display()))
    .arg("--report")
    .arg(report)
    .args(extra)
    .env_remove("NORMFUZZ_COVERAGE")
    .env_remove("GITHUB_STEP_SUMMARY");
    if let Some(scope) = scope {
        cmd.env("NORMFUZZ_COVERAGE", scope);
    }
    let out = cmd.output().expect("normfuzz runs");
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let index = std::fs::read(report.join("index.json")).expect("index.json");
    serde_json::from_slice(&index).expect("index.json is JSON")
}

#[test]
fn a_campaign_reports_the_runtimes_coverage_or_says_it_has_none() {
    let dir = tempfile::tempdir().expect("temp dir");
    let with = dir.path().join("with");
    let index = run(&with, Some("coverage/sut.py:neutralize"));
    let schema = std::fs::read(root().join("docs/schemas/conform-index.schema.json")).unwrap();
    let schema: Value = serde_json::from_slice(&schema).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(&index)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    let units = index["coverage"].as_array().expect("coverage units");
    assert_eq!(units.len(), 1);
    let unit = &units[0];
    assert_eq!(unit["name"], "sut.py:neutralize");
    assert_eq!(unit["lines"], 7, "{unit}");
    assert!(unit["linesReached"].as_u64() > Some(0), "{unit}");
    let last = index["timeline"]
        .as_array()
        .and_then(|t| t.last())
        .expect("timeline");
    assert_eq!(last["runtimeLines"], unit["linesReached"], "{last}");
    assert_eq!(last["runtimeBranches"], unit["branchesReached"], "{last}");
    let summary = std::fs::read_to_string(with.join("summary.md")).unwrap();
    let figures = format!(
        "Runtime coverage: {} of 7 lines",
        unit["linesReached"].as_u64().unwrap()
    );
    assert!(summary.contains(&figures), "{summary}");
    let page = std::fs::read_to_string(with.join("report.html")).unwrap();
    assert!(
        page.contains("<h2>Runtime coverage</h2><table>"),
        "the units table"
    );

    let without = dir.path().join("without");
    let index = run(&without, None);
    assert!(index["coverage"].is_null(), "{}", index["coverage"]);
    let summary = std::fs::read_to_string(without.join("summary.md")).unwrap();
    assert!(
        summary.contains("Runtime coverage: not reported"),
        "{summary}"
    );
}

#[test]
fn a_steered_run_keeps_its_corpus_for_the_next() {
    let dir = tempfile::tempdir().expect("temp dir");
    let corpus = dir.path().join("corpus");
    let flag = ["--corpus", corpus.to_str().expect("UTF-8 path")];
    let scope = Some("coverage/sut.py:neutralize");
    run_with(&dir.path().join("first"), scope, &flag);
    let entries = || std::fs::read_dir(corpus.join("neutralize_text")).map_or(0, |d| d.count());
    let first = entries();
    // At least the first answer reached new lines.
    assert!(first >= 1, "{first} corpus entries");
    let index = run_with(&dir.path().join("second"), scope, &flag);
    assert!(index["cases"].as_u64() == Some(300), "{}", index["cases"]);
    // Started from the kept corpus, one case in four is a mutant of it.
    let steering = &index["steering"];
    assert!(
        steering["corpus"]["neutralize_text"].as_u64() >= Some(first as u64),
        "{steering}"
    );
    assert_eq!(steering["steeredCases"], 75, "{steering}");
    assert!(entries() >= first, "the corpus only grows");
}
