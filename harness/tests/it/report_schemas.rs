//! A runtime's CI with a baseline, through the CLI: the first run drafts the baseline
//! (`--write-baseline`), the next is green against it without shrinking the known findings, a
//! finding the baseline leaves out fails the run, an entry the run did not reach is reported.
//! Every report these runs write validates against the published schemas
//! (`docs/schemas/*.schema.json`) and its `results.sarif` against the OASIS SARIF 2.1.0 schema.

use std::path::{Path, PathBuf};
use std::process::Command;

use normfuzz::protocol::Op;
use normfuzz::rule::Rule;
use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Read as the harness reads answers: a minimal input may be nested deeper than serde_json's
/// default limit.
fn read_json(path: &Path) -> Value {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    normfuzz::protocol::json::parse_value(&bytes).unwrap_or_else(|e| panic!("{path:?}: {e}"))
}

fn validator(path: &Path) -> jsonschema::Validator {
    jsonschema::validator_for(&read_json(path)).expect("the schema compiles")
}

fn assert_valid(validator: &jsonschema::Validator, file: &Path) {
    let value = read_json(file);
    let errors: Vec<String> = validator
        .iter_errors(&value)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{file:?}:\n{}", errors.join("\n"));
}

/// `index.json`, every finding file and `results.sarif` of a report validate.
fn assert_report_valid(dir: &Path) {
    let schemas = root().join("docs/schemas");
    assert_valid(
        &validator(&schemas.join("conform-index.schema.json")),
        &dir.join("index.json"),
    );
    let finding = validator(&schemas.join("finding.schema.json"));
    let mut findings = 0;
    for entry in std::fs::read_dir(dir.join("findings")).unwrap() {
        assert_valid(&finding, &entry.unwrap().path());
        findings += 1;
    }
    assert!(findings > 0, "the run has findings to validate");
    let sarif = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/schemas/sarif-schema-2.1.0.json");
    assert_valid(&validator(&sarif), &dir.join("results.sarif"));
}

fn conform(dir: &Path, report: &str, extra: &[&str]) -> (i32, String) {
    let echo = root().join("examples/sut-echo/echo.py");
    let out = Command::new(env!("CARGO_BIN_EXE_normfuzz"))
        .current_dir(dir)
        .args([
            "conform", "--cases", "400", "--seed", "3", "--report", report,
        ])
        .args([
            "--ops",
            "coerce_tool_result,neutralize_text,check_media_url",
        ])
        .arg("--sut")
        .arg(format!("python3 {}", echo.display()))
        .args(extra)
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_baseline_keeps_known_findings_green_and_fails_on_new_ones() {
    crate::on_job_stack(|| {
        if Command::new("python3").arg("--version").output().is_err() {
            eprintln!("SKIPPED: python3 not found");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let (code, stderr) = conform(dir.path(), "first", &["--write-baseline", "known.toml"]);
        assert_eq!(code, 1, "the echo SUT fails without a baseline: {stderr}");
        assert_report_valid(&dir.path().join("first"));
        let first = read_json(&dir.path().join("first/index.json"));
        assert!(first["baseline"].is_null());
        let drafted = std::fs::read_to_string(dir.path().join("known.toml")).unwrap();
        assert!(
            drafted.contains("TODO: read in the SUT's code"),
            "{drafted}"
        );

        // Known findings keep the run green, and are not shrunk again.
        let (code, stderr) = conform(dir.path(), "second", &["--baseline", "known.toml"]);
        assert_eq!(code, 0, "{stderr}");
        assert_report_valid(&dir.path().join("second"));
        let second = read_json(&dir.path().join("second/index.json"));
        assert_eq!(second["verdict"], "pass");
        assert_eq!(second["baseline"]["new"], 0);
        assert!(
            second["baseline"]["known"].as_u64().unwrap() > 3,
            "{second:#}"
        );
        let gate: Vec<&Value> = second["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["gate"] == true)
            .collect();
        assert!(gate.iter().all(|f| f["baseline"] == "known"), "{gate:#?}");
        let summary = std::fs::read_to_string(dir.path().join("second/summary.md")).unwrap();
        assert!(summary.contains("**0 new, "), "{summary}");
        let sarif = read_json(&dir.path().join("second/results.sarif"));
        let results = sarif["runs"][0]["results"].as_array().unwrap();
        assert!(
            results
                .iter()
                .filter(|r| r["level"] != "note")
                .all(|r| r["baselineState"] == "unchanged" && r["level"] == "warning"),
            "{results:#?}"
        );
        // The first run shrank every finding; the second only its divergences (not in the
        // baseline), on the same cases.
        let shrink_ms = |index: &Value| index["shrinkMs"].as_u64().unwrap();
        assert!(
            shrink_ms(&second) < shrink_ms(&first),
            "{} ms vs {} ms",
            shrink_ms(&second),
            shrink_ms(&first)
        );

        // An entry left out is new and fails the run; one of a rule the run does not break is
        // listed as not reached (reported, not failed).
        let mut table: toml::Table = toml::from_str(&drafted).unwrap();
        let known = table["known"].as_array_mut().unwrap();
        let dropped = known.remove(0);
        let (dropped_op, dropped_rule) = (
            dropped["op"].as_str().unwrap(),
            dropped["rule"].as_str().unwrap(),
        );
        known.push(toml::Value::Table(
            toml::from_str(
                "op = \"check_media_url\"\nrule = \"U8\"\nclass = \"spec\"\ncause = \"never\"\n\
                 reason = \"a rule the echo SUT keeps\"\n",
            )
            .unwrap(),
        ));
        std::fs::write(
            dir.path().join("edited.toml"),
            toml::to_string(&table).unwrap(),
        )
        .unwrap();
        let (code, stderr) = conform(dir.path(), "third", &["--baseline", "edited.toml"]);
        assert_eq!(code, 1, "{stderr}");
        assert_report_valid(&dir.path().join("third"));
        let third = read_json(&dir.path().join("third/index.json"));
        assert_eq!(third["verdict"], "fail");
        assert!(third["baseline"]["new"].as_u64().unwrap() >= 1);
        let new: Vec<&Value> = third["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["baseline"] == "new")
            .collect();
        assert!(
            new.iter()
                .all(|f| f["op"] == dropped_op && f["rule"] == dropped_rule),
            "{new:#?} vs {dropped:?}"
        );
        assert_eq!(third["baseline"]["notReached"][0]["rule"], "U8");
        assert!(
            stderr.contains("not reached: U8 on check_media_url"),
            "{stderr}"
        );

        // A baseline is never overwritten unless it is the one the run reads.
        let (code, stderr) = conform(dir.path(), "fourth", &["--write-baseline", "known.toml"]);
        assert_eq!(code, 2, "{stderr}");
        assert!(
            stderr.contains("--write-baseline replaces a baseline only"),
            "{stderr}"
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("known.toml")).unwrap(),
            drafted
        );
    });
}

/// `conform --inputs` runs exactly the real servers' results, one case a line, and each finding
/// names the line it was first seen on; a line that is not a capture is refused by number.
#[test]
fn inputs_run_each_real_result_once_and_findings_name_their_source() {
    if Command::new("python3").arg("--version").output().is_err() {
        eprintln!("SKIPPED: python3 not found");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let corpus = root().join("corpus/real-servers");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&corpus)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    let lines: usize = files
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap().lines().count())
        .sum();
    let echo = format!(
        "python3 {}",
        root().join("examples/sut-echo/echo.py").display()
    );
    let run = |files: &[PathBuf], report: &str| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_normfuzz"));
        command
            .current_dir(dir.path())
            .args(["conform", "--report", report, "--sut", &echo]);
        for file in files {
            command.arg("--inputs").arg(file);
        }
        let out = command.env_remove("GITHUB_STEP_SUMMARY").output().unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, stderr) = run(&files, "real");
    assert_eq!(code, 1, "the echo SUT fails on real results: {stderr}");
    assert_report_valid(&dir.path().join("real"));
    let index = read_json(&dir.path().join("real/index.json"));
    assert_eq!(index["cases"], lines as u64, "{index:#}");
    assert_eq!(
        index["matrix"]["ops"],
        serde_json::json!(["coerce_tool_result"])
    );
    for entry in std::fs::read_dir(dir.path().join("real/findings")).unwrap() {
        let finding = read_json(&entry.unwrap().path());
        let source = finding["source"].as_str().unwrap_or_default();
        assert!(
            source.contains('@') && source.contains(".jsonl line "),
            "{finding:#}"
        );
    }
    assert!(stderr.contains("first seen on "), "{stderr}");

    let bad = dir.path().join("bad.jsonl");
    std::fs::write(
        &bad,
        "{\"server\": \"s\", \"version\": \"1\", \"tool\": \"t\"}\n",
    )
    .unwrap();
    let (code, stderr) = run(&[bad], "bad");
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("bad.jsonl: line 1: missing field `result`"),
        "{stderr}"
    );
}

/// The published schemas name exactly the harness's ops and rules: a new op or rule changes
/// them in the same commit.
#[test]
fn the_schemas_name_every_op_and_rule() {
    for file in ["conform-index.schema.json", "finding.schema.json"] {
        let schema = read_json(&root().join("docs/schemas").join(file));
        let names = |def: &str| -> Vec<String> {
            schema["$defs"][def]["enum"]
                .as_array()
                .unwrap_or_else(|| panic!("{file}: no $defs.{def}.enum"))
                .iter()
                .map(|v| v.as_str().unwrap().to_string())
                .collect()
        };
        let ops: Vec<String> = Op::ALL.iter().map(|o| o.as_str().to_string()).collect();
        let rules: Vec<String> = Rule::ALL.iter().map(|r| r.as_str().to_string()).collect();
        assert_eq!(names("op"), ops, "{file}");
        assert_eq!(names("rule"), rules, "{file}");
    }
}
