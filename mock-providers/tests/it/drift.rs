//! `mock-providers drift` against the mock server itself on 127.0.0.1 (dummy keys, every provider's
//! `--base-url` on loopback): the checked-in case file shows no drift, an altered expectation shows
//! exactly that drift, a provider without its key is skipped. Nothing leaves the machine.

use mock_providers::Provider;
use mock_providers::server::{Config, MockProviders};
use serde_json::Value;
use std::path::Path;
use std::process::Output;

const CASES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/drift/cases.jsonl");

/// The variables drift reads; removed from the child's environment so that no real key is used.
const KEYS: [&str; 4] = [
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "GEMINI_API_KEY",
    "OLLAMA_HOST",
];

/// Runs `drift` with `keys` as its only provider variables and every provider sent to `server`;
/// returns the output and the `--out` JSON.
fn drift(
    server: &MockProviders,
    cases: &Path,
    providers: &str,
    keys: &[&str],
) -> (Output, Option<Value>) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("drift.json");
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_mock-providers"));
    cmd.arg("drift")
        .arg("--cases")
        .arg(cases)
        .args(["--provider", providers, "--out"])
        .arg(&out)
        .args(["--timeout", "30"]);
    for p in Provider::ALL {
        cmd.arg("--base-url")
            .arg(format!("{}={}", p.name(), server.uri()));
    }
    for k in KEYS {
        cmd.env_remove(k);
    }
    for k in keys {
        cmd.env(k, "dummy-key");
    }
    let output = cmd.output().unwrap();
    let json = std::fs::read(&out)
        .ok()
        .map(|b| serde_json::from_slice(&b).unwrap());
    (output, json)
}

async fn server() -> MockProviders {
    MockProviders::start(Config::default()).await.unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn verdicts(json: &Value, verdict: &str) -> Vec<Value> {
    json["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["verdict"] == verdict)
        .cloned()
        .collect()
}

#[tokio::test]
async fn the_mock_does_not_drift_from_itself() {
    let server = server().await;
    let all: Vec<&str> = Provider::ALL.iter().map(|p| p.name()).collect();
    let (out, json) = drift(&server, Path::new(CASES), &all.join(","), &KEYS);
    let json = json.unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let lines = std::fs::read_to_string(CASES).unwrap().lines().count();
    let results = json["results"].as_array().unwrap();
    assert_eq!(results.len(), 2 * lines, "two requests per case");
    let not_replayed = verdicts(&json, "not replayed");
    assert_eq!(
        verdicts(&json, "same").len() + not_replayed.len(),
        results.len()
    );
    // Only the size-limit cases, whose bodies are too large for the file.
    assert!(not_replayed.len() <= 8, "{not_replayed:?}");
    assert!(json["skipped"].as_array().unwrap().is_empty());
    for p in Provider::ALL {
        assert!(
            results.iter().any(|r| r["provider"] == p.name()),
            "{} not replayed",
            p.name()
        );
    }
    assert!(
        stdout(&out).contains("| provider | case | expected | got | verdict |"),
        "{}",
        stdout(&out)
    );
}

#[tokio::test]
async fn an_altered_expectation_is_reported_as_drift() {
    let server = server().await;
    let dir = tempfile::tempdir().unwrap();
    let altered = dir.path().join("cases.jsonl");
    let mut lines: Vec<Value> = std::fs::read_to_string(CASES)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|c: &Value| c["provider"] == "anthropic")
        .collect();
    let rule = lines[0]["rule"].as_str().unwrap().to_string();
    let message = lines[0]["message"].as_str().unwrap().to_string();
    lines[0]["message"] = Value::from("the real API says otherwise");
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&altered, text).unwrap();

    let (out, json) = drift(&server, &altered, "anthropic", &["ANTHROPIC_API_KEY"]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let drifted = verdicts(&json.unwrap(), "drift");
    assert_eq!(drifted.len(), 1, "{drifted:?}");
    assert_eq!(drifted[0]["case"], rule.as_str());
    assert_eq!(drifted[0]["request"], "bad");
    assert_eq!(drifted[0]["got"]["message"], message.as_str());
    let row = stdout(&out)
        .lines()
        .filter(|l| l.ends_with("| DRIFT |"))
        .map(str::to_string)
        .collect::<Vec<_>>();
    assert_eq!(row.len(), 1, "{}", stdout(&out));
    assert!(
        row[0].starts_with(&format!(
            "| anthropic | {rule} | 400 the real API says otherwise | 400 "
        )),
        "{}",
        row[0]
    );
}

#[tokio::test]
async fn a_provider_without_its_key_is_skipped() {
    let server = server().await;
    let (out, json) = drift(
        &server,
        Path::new(CASES),
        "anthropic,gemini",
        &["ANTHROPIC_API_KEY"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let json = json.unwrap();
    assert_eq!(json["skipped"][0]["provider"], "gemini");
    assert_eq!(json["skipped"][0]["reason"], "GEMINI_API_KEY is not set");
    assert!(
        json["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["provider"] == "anthropic")
    );
    assert!(
        stdout(&out).contains("- gemini (") && stdout(&out).contains("GEMINI_API_KEY is not set"),
        "{}",
        stdout(&out)
    );
}

#[tokio::test]
async fn usage_errors_exit_2_with_the_reason() {
    let server = server().await;
    let (out, _) = drift(&server, Path::new(CASES), "anthropic,claude", &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unknown provider \"claude\""), "{err}");
    let (out, _) = drift(&server, Path::new("no/such/cases.jsonl"), "anthropic", &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("reading no/such/cases.jsonl"), "{err}");
}
