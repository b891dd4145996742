//! `normfuzz e2e` end to end against a stand-in runtime (tests/runtimes/fake_runtime.py): the
//! sandbox, the mock providers and MCP server, the judge and the baseline, without installing
//! a real runtime. The real one runs in `cargo xtask ci` (`cargo xtask e2e --runtime openclaw`).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

/// The fake adapter in a temp folder with `FAKE_MODE` set to `mode`.
fn adapter(dir: &Path, mode: &str) -> PathBuf {
    stand_in(dir, "fake.toml", "fake_runtime.py", mode)
}

/// The stand-in `toml` (tests/runtimes/) and its `script` in `dir`, with `FAKE_MODE` = `mode`.
pub(super) fn stand_in(dir: &Path, toml: &str, script: &str, mode: &str) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/runtimes");
    let text = std::fs::read_to_string(src.join(toml))
        .unwrap()
        .replace("FAKE_MODE = \"good\"", &format!("FAKE_MODE = \"{mode}\""));
    std::fs::copy(src.join(script), dir.join(script)).unwrap();
    // fake_fallback.py imports its HTTP and MCP client code from the runtime beside it.
    std::fs::copy(src.join("fake_runtime.py"), dir.join("fake_runtime.py")).unwrap();
    let path = dir.join(toml);
    std::fs::write(&path, text).unwrap();
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
    e2e_via(dir, mode, baseline, "payload")
}

fn e2e_via(dir: &Path, mode: &str, baseline: Option<&str>, via: &str) -> (i32, Value) {
    let report = dir.join(format!(
        "report-{mode}-{via}-{}",
        baseline.map_or(0, str::len)
    ));
    run_e2e(
        dir,
        &adapter(dir, mode),
        &report,
        &["--cases", "11", "--jobs", "2", "--seed", "3", "--via", via],
        baseline,
    )
}

/// `normfuzz e2e` with `adapter` and `args` into `report`: its exit code and index.json.
pub(super) fn run_e2e(
    dir: &Path,
    adapter: &Path,
    report: &Path,
    args: &[&str],
    baseline: Option<&str>,
) -> (i32, Value) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_normfuzz"));
    cmd.arg("e2e")
        .arg("--adapter")
        .arg(adapter)
        .args(args)
        .arg("--report")
        .arg(report)
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

/// (case, rule, layer) of every finding.
pub(super) fn found(index: &Value) -> Vec<(String, String, String)> {
    let mut v: Vec<(String, String, String)> = index["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let s = |k: &str| f[k].as_str().unwrap().to_string();
            (s("case"), s("rule"), s("layer"))
        })
        .collect();
    v.sort();
    v
}

pub(super) fn has(found: &[(String, String, String)], case: &str, rule: &str, layer: &str) -> bool {
    found.contains(&(case.into(), rule.into(), layer.into()))
}

#[test]
fn a_runtime_that_follows_the_rules_passes_and_a_buggy_one_is_caught() {
    let dir = tempfile::tempdir().unwrap();
    let (code, good) = e2e(dir.path(), "good", None);
    assert_eq!(good["errors"], 0, "{good:#}");
    assert_eq!(found(&good), [], "{good:#}");
    assert_eq!(code, 0);
    assert_eq!(good["cases"].as_array().unwrap().len(), 11);

    let (code, bad) = e2e(dir.path(), "bad", None);
    assert_eq!(code, 1);
    let bad_found = found(&bad);
    for (case, rule, layer) in [
        ("seed001-image-without-data", "F5", "model"),
        ("reply-media-etc-passwd-split", "S3", "payload"),
        ("tool-text-plants-media", "S1", "model"),
        ("reply-media-metadata-url", "S3", "payload"),
        ("seed001-image-without-data", "S5", "model"),
    ] {
        assert!(
            has(&bad_found, case, rule, layer),
            "{case} {rule} {layer} missing from {bad_found:?}"
        );
    }
    // The write outside its folders is listed with its bytes, and never reached the disk: the
    // turn ran chrooted into an overlay (when the sandbox has a mount namespace).
    let s5 = &bad["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "S5")
        .unwrap();
    let stored: Value = serde_json::from_slice(
        &std::fs::read(dir.path().join(format!(
            "report-bad-payload-0/findings/{}--S5--model.json",
            s5["case"].as_str().unwrap()
        )))
        .unwrap(),
    )
    .unwrap();
    let write = &stored["evidence"]["writes"][0];
    if stored["evidence"]["outsideObserved"] == true {
        assert_eq!(
            write["path"], "/var/tmp/normfuzz-fake-sessions.log",
            "{stored:#}"
        );
        assert!(write["head"].as_str().unwrap().starts_with("tool images: "));
        assert!(!Path::new("/var/tmp/normfuzz-fake-sessions.log").exists());
    }
    // Each finding is stored with the captured request and a repro line.
    let stored: Value = serde_json::from_slice(
        &std::fs::read(
            dir.path()
                .join("report-bad-payload-0/findings/seed001-image-without-data--F5--model.json"),
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

    // A new finding's impact class is derived (no profile beside this baseline: the reference's
    // contract): the image without data breaks the MCP schema, so losing its siblings is
    // hardening; a directive line in the model's text is a bug where directives are acted on.
    let class_of = |index: &Value, case: &str, rule: &str| {
        index["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["case"] == case && f["rule"] == rule)
            .map(|f| (f["class"].clone(), f.get("cause").cloned()))
            .unwrap()
    };
    assert_eq!(
        class_of(&bad, "seed001-image-without-data", "F5"),
        (json!("hardening"), None)
    );
    assert_eq!(
        class_of(&bad, "tool-text-plants-media", "S1"),
        (json!("bug"), None)
    );

    // Every finding in the baseline: green, each with the baseline's class and cause. One more
    // entry that does not reproduce: stale, red.
    let baseline = baseline_of(&bad_found);
    let (code, known) = e2e(dir.path(), "bad", Some(&baseline));
    assert_eq!((code, &known["new"]), (0, &Value::from(0)), "{known:#}");
    assert_eq!(
        class_of(&known, "seed001-image-without-data", "F5"),
        (json!("bug"), Some(json!("fake")))
    );
    let stale = format!(
        "{baseline}[[known]]\ncase = \"valid-image\"\nrule = \"F1\"\nlayer = \"model\"\nclass = \"bug\"\ncause = \"fake\"\nreason = \"fixed\"\n"
    );
    let (code, with_stale) = e2e(dir.path(), "bad", Some(&stale));
    assert_eq!(code, 1);
    assert_eq!(with_stale["stale"].as_array().unwrap().len(), 1);
    // A delivered-layer entry is not judged by a payload run: not stale there.
    let other_layer = format!(
        "{baseline}[[known]]\ncase = \"valid-image\"\nrule = \"F1\"\nlayer = \"delivered\"\nclass = \"bug\"\ncause = \"fake\"\nreason = \"channel only\"\n"
    );
    let (code, other) = e2e(dir.path(), "bad", Some(&other_layer));
    assert_eq!(
        (code, other["stale"].as_array().unwrap().len()),
        (0, 0),
        "{other:#}"
    );
}

fn baseline_of(found: &[(String, String, String)]) -> String {
    found
        .iter()
        .map(|(case, rule, layer)| {
            format!(
                "[[known]]\ncase = \"{case}\"\nrule = \"{rule}\"\nlayer = \"{layer}\"\nclass = \"bug\"\ncause = \"fake\"\nreason = \"fake\"\n"
            )
        })
        .collect()
}

/// `--fail-on`: only new findings of the classes it names fail the run. The bad fake's image
/// without data loses its siblings (F5, hardening: the input breaks the MCP schema) and its
/// tool text carries a directive line (S1, bug); a baseline knows every finding but one.
#[test]
fn only_new_findings_of_the_fail_on_classes_fail_an_e2e_run() {
    let dir = tempfile::tempdir().unwrap();
    let adapter = adapter(dir.path(), "bad");
    let run = |report: &str, baseline: Option<&str>, fail_on: Option<&str>| {
        let mut args = vec![
            "--case",
            "seed001-image-without-data",
            "--case",
            "tool-text-plants-media",
        ];
        args.extend(
            fail_on
                .map(|classes| ["--fail-on", classes])
                .into_iter()
                .flatten(),
        );
        run_e2e(
            dir.path(),
            &adapter,
            &dir.path().join(report),
            &args,
            baseline,
        )
    };
    let (code, all) = run("all", None, None);
    assert_eq!(code, 1, "{all:#}");
    let all_found = found(&all);
    let all_but = |case: &str, rule: &str| {
        let known: Vec<_> = all_found
            .iter()
            .filter(|(c, r, _)| !(c == case && r == rule))
            .cloned()
            .collect();
        assert_eq!(
            known.len() + 1,
            all_found.len(),
            "{case} {rule}: {all_found:?}"
        );
        baseline_of(&known)
    };

    let hardening_new = all_but("seed001-image-without-data", "F5");
    let (code, index) = run("hardening-default", Some(&hardening_new), None);
    assert_eq!((code, &index["new"]), (1, &json!(1)), "{index:#}");
    assert_eq!(index["failOn"], json!(["bug", "hardening"]));
    let (code, index) = run("hardening-bug", Some(&hardening_new), Some("bug"));
    assert_eq!((code, &index["new"]), (0, &json!(1)), "{index:#}");
    assert_eq!(index["failOn"], json!(["bug"]));

    let bug_new = all_but("tool-text-plants-media", "S1");
    let (code, index) = run("bug-bug", Some(&bug_new), Some("bug"));
    assert_eq!((code, &index["new"]), (1, &json!(1)), "{index:#}");
}

/// `--via channel`: the fake serves the mock Telegram Bot API as a gateway would. The good one
/// passes (its one expected image arrives); the bad one's leaks are caught on the delivered
/// layer: the canary planted at /tmp/screenshots/secret.png uploaded byte for byte (S3, when the sandbox can
/// bind the case's own folder over /tmp), a live directive line in a message (S1), the same
/// file uploaded twice (D3).
#[test]
fn a_channel_runtime_is_judged_on_what_the_channel_received() {
    // Not under /tmp: the turn binds the case's folder over /tmp, and must still see its own.
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let (code, good) = e2e_via(dir.path(), "good", None, "channel");
    assert_eq!((code, good["errors"].as_u64()), (0, Some(0)), "{good:#}");
    assert_eq!(found(&good), [], "{good:#}");
    assert_eq!(good["via"], "channel");

    let (code, bad) = e2e_via(dir.path(), "bad", None, "channel");
    assert_eq!((code, bad["errors"].as_u64()), (1, Some(0)), "{bad:#}");
    let bad_found = found(&bad);
    assert!(
        has(&bad_found, "tool-text-plants-media", "S1", "model"),
        "{bad_found:?}"
    );
    assert!(
        has(
            &bad_found,
            "reply-media-etc-passwd-split",
            "S1",
            "delivered"
        ),
        "{bad_found:?}"
    );
    assert!(
        has(&bad_found, "reply-duplicate-media", "D3", "delivered"),
        "{bad_found:?}"
    );
    assert!(
        bad_found.iter().all(|(_, _, layer)| layer != "payload"),
        "a channel run judges no payload: {bad_found:?}"
    );
    if bad["isolation"] != "none" {
        assert!(
            has(&bad_found, "reply-media-tmp-canary", "S3", "delivered"),
            "{bad_found:?}"
        );
        let stored: Value =
            serde_json::from_slice(
                &std::fs::read(dir.path().join(
                    "report-bad-channel-0/findings/reply-media-tmp-canary--S3--delivered.json",
                ))
                .unwrap(),
            )
            .unwrap();
        // The evidence is the captured multipart upload, its bytes kept beside the capture.
        // (The bad fake uploads it twice: two pieces of evidence, merged into a list.)
        let evidence = &stored["evidence"];
        let upload = &evidence.as_array().map_or(evidence, |e| &e[0])["upload"];
        assert_eq!(upload["fileName"], "secret.png", "{stored:#}");
        let saved = upload["saved"].as_str().unwrap();
        assert!(
            std::fs::read(saved)
                .unwrap()
                .windows(16)
                .any(|w| w == b"normfuzz-canary-")
        );
    }
    let (code, known) = e2e_via(dir.path(), "bad", Some(&baseline_of(&bad_found)), "channel");
    assert_eq!((code, &known["new"]), (0, &Value::from(0)), "{known:#}");
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
    assert_eq!(cases.len(), 11);
    let found = found(&killed);
    for case in cases {
        assert!(has(&found, case, "B1", "model"), "{case}: {found:?}");
    }
    let reasons: Vec<&str> = killed["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == "B1")
        .filter_map(|f| f["reason"].as_str())
        .collect();
    assert!(
        reasons.len() == 11 && reasons.iter().all(|r| r.contains("signal 9")),
        "{reasons:?}"
    );
}

/// `normfuzz merge-reports` of an e2e run's shards (`e2e --shard K/N`) writes the unsharded
/// run's report: the same cases in plan order, the same findings with their baseline verdicts,
/// the same stale entries, every format, and the same exit code.
#[test]
fn merged_e2e_shards_equal_the_unsharded_run() {
    let dir = tempfile::tempdir().unwrap();
    // Laid out as an SDK's adapter, `<name>/e2e.toml`: the report must name the file itself.
    let sdk = dir.path().join("fake");
    std::fs::create_dir(&sdk).unwrap();
    let adapter_file = sdk.join("e2e.toml");
    std::fs::rename(adapter(dir.path(), "bad"), &adapter_file).unwrap();
    std::fs::rename(
        dir.path().join("fake_runtime.py"),
        sdk.join("fake_runtime.py"),
    )
    .unwrap();
    let adapter = adapter_file;
    // One known finding and one stale entry, so the merge must judge against the baseline.
    let baseline = dir.path().join("baseline.toml");
    std::fs::write(
        &baseline,
        "[[known]]\ncase = \"seed001-image-without-data\"\nrule = \"F5\"\nlayer = \"model\"\nclass = \"bug\"\ncause = \"fake\"\nreason = \"known\"\n\
         [[known]]\ncase = \"valid-image\"\nrule = \"F1\"\nlayer = \"model\"\nclass = \"bug\"\ncause = \"fake\"\nreason = \"fixed\"\n",
    )
    .unwrap();
    let run = |report: &Path, shard: Option<&str>| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_normfuzz"));
        cmd.arg("e2e")
            .arg("--adapter")
            .arg(&adapter)
            .args(["--cases", "7", "--jobs", "2", "--seed", "3"])
            .arg("--report")
            .arg(report)
            .arg("--cache")
            .arg(dir.path().join("cache"))
            .arg("--mock-providers")
            .arg(mock_providers())
            .arg("--baseline")
            .arg(&baseline)
            .args(shard.map(|s| format!("--shard={s}")));
        cmd.output().unwrap().status.code()
    };
    let whole = dir.path().join("whole");
    let code = run(&whole, None);
    let shards: Vec<PathBuf> = (1..=3)
        .map(|k| dir.path().join(format!("shard{k}")))
        .collect();
    for (k, shard) in shards.iter().enumerate() {
        run(shard, Some(&format!("{}/3", k + 1)));
    }
    let merged = dir.path().join("merged");
    let out = Command::new(env!("CARGO_BIN_EXE_normfuzz"))
        .arg("merge-reports")
        .arg("--out")
        .arg(&merged)
        .args(&shards)
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        code,
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(code, Some(1), "the stale entry fails the run");
    // Everything but timings.
    let comparable = |dir: &Path| {
        let text = std::fs::read_to_string(dir.join("index.json")).unwrap();
        let mut index: Value = serde_json::from_str(&text).unwrap();
        for timing in ["elapsedMs", "medianTurnMs"] {
            index.as_object_mut().unwrap().remove(timing);
        }
        for case in index["cases"].as_array_mut().unwrap() {
            case.as_object_mut().unwrap().remove("elapsedMs");
        }
        index
    };
    let (expected, got) = (comparable(&whole), comparable(&merged));
    assert_eq!(expected["cases"].as_array().unwrap().len(), 7);
    assert!(
        !expected["stale"].as_array().unwrap().is_empty(),
        "{expected:#}"
    );
    assert!(expected["new"].as_u64().unwrap() > 0, "{expected:#}");
    assert_eq!(got, expected);
    let files = |dir: &Path| {
        let mut names: Vec<String> = std::fs::read_dir(dir.join("findings"))
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    assert_eq!(files(&merged), files(&whole));
    for file in ["summary.md", "junit.xml", "report.html"] {
        assert!(merged.join(file).is_file(), "{file}");
    }
}

/// The fallback scenario against a stand-in with a model fallback: one that strips images on a
/// cross-provider or format fallback and keeps the history passes; one that restarts on the
/// fallback with the user's message and its image is caught under R3 (with the source), R2 and
/// P4 (the tool ran twice, the fallback untold).
#[test]
fn a_fallback_that_strips_passes_and_one_that_forwards_and_replays_is_caught() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["--scenario", "fallback", "--cases", "6", "--jobs", "2"];
    let run = |mode: &str| {
        let adapter = stand_in(dir.path(), "fake-fallback.toml", "fake_fallback.py", mode);
        let report = dir.path().join(format!("report-fallback-{mode}"));
        run_e2e(dir.path(), &adapter, &report, &args, None)
    };
    let (code, good) = run("good");
    assert_eq!(good["errors"], 0, "{good:#}");
    assert_eq!(found(&good), [], "{good:#}");
    assert_eq!(code, 0);
    assert_eq!(good["scenario"], "fallback");
    let cases = good["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 6);
    // Every case fell back; the same-provider server error kept the user's and the tool's image.
    assert!(
        cases.iter().all(|c| c["fallback"]["fellBack"] == true),
        "{good:#}"
    );
    let same = cases
        .iter()
        .find(|c| c["id"] == "fallback-same-after-tool-server-error")
        .unwrap();
    let sources: Vec<&str> = same["fallback"]["atFallback"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["source"].as_str())
        .collect();
    assert!(
        sources.contains(&"prompt") && sources.contains(&"tool-run1"),
        "{same:#}"
    );

    let (code, bad) = run("bad");
    assert_eq!(code, 1);
    let bad_found = found(&bad);
    for (case, rule) in [
        ("fallback-cross-after-tool-overloaded", "R3"),
        ("fallback-cross-after-tool-overloaded", "P4"),
        ("fallback-cross-before-tool-rate-limit", "R3"),
        ("fallback-same-after-tool-format-400", "R2"),
        ("fallback-same-after-tool-format-400", "P4"),
    ] {
        assert!(
            has(&bad_found, case, rule, "model"),
            "{case} {rule} missing from {bad_found:?}"
        );
    }
    // The finding names the source: the user's prompt image, restarted with the user's message.
    let stored: Value = serde_json::from_slice(
        &std::fs::read(dir.path().join(
            "report-fallback-bad/findings/fallback-cross-after-tool-overloaded--R3--model.json",
        ))
        .unwrap(),
    )
    .unwrap();
    assert_eq!(
        stored["evidence"]["images"][0]["source"], "prompt",
        "{stored:#}"
    );
    assert!(
        stored["repro"]
            .as_str()
            .unwrap()
            .contains("--scenario fallback")
    );
}

/// The model's hostile moves (issue 25): send-style calls naming a canary outside the roots and
/// loopback URLs of the canary route, hostile call ids, names and arguments. The good fake
/// refuses the sends and passes; the bad one fetches and delivers them: each fetch is S3 on the
/// model layer with the field that named the URL, each delivery S3 where it was delivered.
#[test]
fn a_runtime_that_fetches_or_sends_what_the_model_names_is_caught_and_traced() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let hostile = [
        "model-send-canary-path",
        "model-send-loopback-url",
        "model-send-private-urls",
        "model-call-id-traversal-duplicate",
        "model-call-id-control-chars",
        "model-tool-name-traversal",
        "model-tool-arguments-traversal",
    ];
    let run = |mode: &str, via: &str, cases: &[&str]| {
        let mut args = vec!["--jobs", "2", "--via", via];
        for case in cases {
            args.extend(["--case", case]);
        }
        let report = dir.path().join(format!("report-hostile-{mode}-{via}"));
        run_e2e(dir.path(), &adapter(dir.path(), mode), &report, &args, None)
    };
    let (code, good) = run("good", "payload", &hostile);
    assert_eq!((code, good["errors"].as_u64()), (0, Some(0)), "{good:#}");
    assert_eq!(found(&good), [], "{good:#}");
    assert_eq!(good["cases"].as_array().unwrap().len(), hostile.len());

    let (code, bad) = run("bad", "payload", &hostile[..4]);
    assert_eq!((code, bad["errors"].as_u64()), (1, Some(0)), "{bad:#}");
    let bad_found = found(&bad);
    for (case, rule, layer) in [
        ("model-send-canary-path", "S3", "payload"),
        ("model-send-loopback-url", "S3", "model"),
        ("model-send-loopback-url", "S3", "payload"),
        ("model-send-private-urls", "S3", "model"),
        ("model-send-private-urls", "S3", "payload"),
    ] {
        assert!(
            has(&bad_found, case, rule, layer),
            "{case} {rule} {layer} missing from {bad_found:?}"
        );
    }
    // The fetch is traced to the send call's URL, and the finding's class is bug.
    let stored: Value =
        serde_json::from_slice(
            &std::fs::read(dir.path().join(
                "report-hostile-bad-payload/findings/model-send-loopback-url--S3--model.json",
            ))
            .unwrap(),
        )
        .unwrap();
    assert_eq!(stored["evidence"]["field"], "send", "{stored:#}");
    assert!(
        stored["evidence"]["url"]
            .as_str()
            .unwrap()
            .starts_with("http://127.0.0.1:"),
        "{stored:#}"
    );
    // The bad fake names its cached tool image after the call id, `../../../../escaped-<marker>`:
    // the file lands beside the case folders (in the overlay, not on the disk), S5, traced.
    if bad["isolation"] != "none" {
        let stored: Value = serde_json::from_slice(
            &std::fs::read(dir.path().join(
                "report-hostile-bad-payload/findings/model-call-id-traversal-duplicate--S5--model.json",
            ))
            .unwrap(),
        )
        .unwrap();
        let escaped: Vec<&Value> = stored["evidence"]["writes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|w| w["path"].as_str().unwrap().contains("/escaped-nfz"))
            .collect();
        assert_eq!(escaped.len(), 1, "{stored:#}");
        assert_eq!(escaped[0]["namedBy"], "model's tool-call id", "{stored:#}");
        assert!(escaped[0]["headBase64"] == true && escaped[0]["size"].as_u64() > Some(0));
        let path = escaped[0]["path"].as_str().unwrap();
        assert!(!Path::new(path).exists(), "{path} reached the disk");
    }
    let class = bad["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["case"] == "model-send-loopback-url" && f["layer"] == "model")
        .map(|f| f["class"].clone());
    assert_eq!(class, Some(json!("bug")));

    // Through a channel: the fetched canary's bytes arrive as an upload, traced to the URL.
    let (code, channel) = run("bad", "channel", &hostile[..2]);
    assert_eq!(
        (code, channel["errors"].as_u64()),
        (1, Some(0)),
        "{channel:#}"
    );
    let channel_found = found(&channel);
    assert!(
        has(&channel_found, "model-send-loopback-url", "S3", "delivered"),
        "{channel_found:?}"
    );
    if channel["isolation"] != "none" {
        assert!(
            has(&channel_found, "model-send-canary-path", "S3", "delivered"),
            "{channel_found:?}"
        );
    }
    let stored: Value = serde_json::from_slice(
        &std::fs::read(dir.path().join(
            "report-hostile-bad-channel/findings/model-send-loopback-url--S3--delivered.json",
        ))
        .unwrap(),
    )
    .unwrap();
    assert_eq!(stored["evidence"]["field"], "send", "{stored:#}");
}
