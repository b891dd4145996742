//! A campaign's report in its four formats, from an outcome with one gate failure and one
//! divergence whose input is hostile: the JUnit XML parses back with the expected suites, cases
//! and failures (divergences fail only under --strict), the HTML shows no markup from the input
//! and loads nothing, and the Markdown is appended to the step summary without truncating it.

use std::collections::BTreeMap;
use std::path::Path;

use normfuzz::campaign::cpu::CpuUse;
use normfuzz::campaign::{Faults, Finding, Outcome, Sample, Tally};
use normfuzz::oracle::signature::{Action, Signature};
use normfuzz::protocol::{Answer, Op};
use normfuzz::rule::Rule;
use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus};
use serde_json::json;

const HOSTILE: &str = "ok\n</textarea></pre><script>alert(\"x\")</script>\u{202e}MEDIA:/etc/passwd";

fn outcome() -> Outcome {
    let s1 = Finding {
        id: "neutralize_text-S1-09c4fe0f".into(),
        op: Op::NeutralizeText,
        rule: Rule::S1,
        gate: true,
        kind: "directive line in the text".into(),
        detail: "MEDIA:/etc/passwd".into(),
        signature: Signature {
            kind: "directive line in the text".into(),
            action: Action::Kept,
            features: vec!["lead:hidden-or-symbol".into(), "line:after-lf".into()],
        },
        triggers: vec![vec!["lead:hidden-or-symbol".into(), "line:after-lf".into()]],
        cause: Some("directive-line-in-the-text-kept".into()),
        hits: 40,
        input: json!({"text": HOSTILE}),
        sut: Answer::Output(json!({"text": HOSTILE})),
        reference: Answer::Output(json!({"text": "ok\n[neutralized] MEDIA:/etc/passwd"})),
        seed: 1,
        first_seen_ms: 0,
        source: None,
        impact: None,
        baseline: None,
    };
    let divergence = Finding {
        id: "check_media_url-divergence-1a2b3c4d".into(),
        op: Op::CheckMediaUrl,
        rule: Rule::Divergence,
        gate: false,
        kind: "output differs from the reference".into(),
        detail: "reference: {\"allowed\":false}".into(),
        signature: Signature::default(),
        triggers: Vec::new(),
        cause: None,
        hits: 3,
        input: json!({"url": "https://<script>.example/"}),
        sut: Answer::Output(json!({"allowed": true, "reason": "<b>fine</b>"})),
        reference: Answer::Output(json!({"allowed": false, "reason": "invalid_host"})),
        seed: 1,
        first_seen_ms: 0,
        source: None,
        impact: None,
        baseline: None,
    };
    let tally = |cases, failed, divergent, rules: &[(Rule, u64)]| Tally {
        cases,
        passed: cases - failed - divergent,
        failed,
        divergent,
        left_out: 0,
        rules: rules.iter().copied().collect(),
    };
    let per_op = BTreeMap::from([
        (Op::NeutralizeText, tally(100, 40, 0, &[(Rule::S1, 40)])),
        (
            Op::CheckMediaUrl,
            tally(100, 0, 3, &[(Rule::Divergence, 3)]),
        ),
    ]);
    let sample = |elapsed_ms, cases| Sample {
        elapsed_ms,
        cases,
        failed: cases / 5,
        findings: 2,
        verdict_cells: 4,
        reference_shapes: cases / 20,
        ..Sample::default()
    };
    Outcome {
        sut: "hostile <sut>".into(),
        seed: 1,
        elapsed_ms: 800,
        jobs: 2,
        shrink_ms: 600,
        steady_cases: 120,
        steady_job_ms: 400,
        per_op,
        findings: vec![s1, divergence],
        faults: Faults {
            hangs: 3,
            hang_ms: 1_500,
            crashes: 1,
            garbled: 0,
            slow: 0,
            late: 2,
        },
        cpu: CpuUse {
            harness_ms: 300,
            sut_ms: 1_700,
        },
        fail_on: normfuzz::campaign::impact::DEFAULT_FAIL_ON.to_vec(),
        baseline: None,
        timeline: vec![sample(250, 60), sample(500, 140), sample(800, 200)],
        coverage: None,
        steering: None,
    }
}

fn write(dir: &Path, strict: bool, step_summary: Option<&Path>) {
    normfuzz::report::write(
        dir,
        &outcome(),
        "python3 sut.py --flag 'x'",
        strict,
        None,
        step_summary,
    )
    .expect("report written");
}

fn junit(dir: &Path) -> Report {
    let xml = std::fs::read_to_string(dir.join("junit.xml")).expect("junit.xml");
    Report::deserialize_from_str(&xml).unwrap_or_else(|e| panic!("junit.xml parses: {e}\n{xml}"))
}

fn case<'r>(report: &'r Report, suite: &str, name: &str) -> &'r TestCase {
    let suite = report
        .test_suites
        .iter()
        .find(|s| s.name.as_str() == suite)
        .unwrap_or_else(|| panic!("suite {suite}"));
    suite
        .test_cases
        .iter()
        .find(|c| c.name.as_str() == name)
        .unwrap_or_else(|| panic!("case {name} in {}", suite.name.as_str()))
}

fn failure_type(case: &TestCase) -> Option<&str> {
    match &case.status {
        TestCaseStatus::NonSuccess {
            kind: NonSuccessKind::Failure,
            ty,
            ..
        } => Some(ty.as_ref().map_or("", |t| t.as_str())),
        _ => None,
    }
}

#[test]
fn junit_has_a_suite_per_op_a_case_per_rule_and_the_failures() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), false, None);
    let report = junit(dir.path());
    let suites: Vec<&str> = report.test_suites.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(suites, ["neutralize_text", "check_media_url"]);
    let names: Vec<&str> = report.test_suites[0]
        .test_cases
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(
        names,
        [
            "neutralize_text/S1",
            "neutralize_text/F2",
            "neutralize_text/B1",
            "neutralize_text/B2",
            "neutralize_text/D1",
            "neutralize_text/protocol",
            "neutralize_text/divergence"
        ]
    );
    let s1 = case(&report, "neutralize_text", "neutralize_text/S1");
    assert_eq!(failure_type(s1), Some("S1"));
    let TestCaseStatus::NonSuccess {
        message,
        description,
        ..
    } = &s1.status
    else {
        unreachable!()
    };
    let message = message.as_ref().expect("message").as_str();
    assert!(
        message.starts_with("directive line in the text: MEDIA:"),
        "{message}"
    );
    let body = description.as_ref().expect("body").as_str();
    for part in [
        "minimal input:",
        "reference answer:",
        "SUT answer:",
        "repro: normfuzz repro ",
    ] {
        assert!(body.contains(part), "{part} in {body}");
    }
    assert_eq!(
        failure_type(case(&report, "neutralize_text", "neutralize_text/F2")),
        None
    );
    // Not strict: the divergence passes, with its evidence in system-out.
    let divergence = case(&report, "check_media_url", "check_media_url/divergence");
    assert_eq!(failure_type(divergence), None);
    let out = divergence.system_out.as_ref().expect("system-out").as_str();
    assert!(out.contains("3 of 100 cases differ"), "{out}");
    assert_eq!(report.failures, 1);
}

#[test]
fn junit_fails_divergences_under_strict() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), true, None);
    let report = junit(dir.path());
    let divergence = case(&report, "check_media_url", "check_media_url/divergence");
    assert_eq!(failure_type(divergence), Some("divergence"));
    assert_eq!(report.failures, 2);
}

#[test]
fn html_shows_hostile_text_as_text_and_loads_nothing() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), false, None);
    let html = std::fs::read_to_string(dir.path().join("report.html")).expect("report.html");
    for raw in ["<script", "</textarea>", "<b>fine", "<sut>", "\u{202e}"] {
        assert!(!html.contains(raw), "raw {raw:?} in the page");
    }
    assert!(html.contains("&lt;/textarea&gt;&lt;/pre&gt;&lt;script&gt;"));
    assert!(html.contains(r#"<span class="esc">\u202e</span>"#));
    assert!(html.contains("default-src 'none'"), "no CSP");
    // Self-contained: nothing that would fetch (URLs in the findings are text in a <pre>).
    for fetches in [
        " src=",
        "<link",
        "<img",
        "<iframe",
        "<object",
        "<embed",
        "url(",
        "@import",
        "href=\"http",
        "href=\"//",
    ] {
        assert!(!html.contains(fetches), "{fetches} in the page");
    }
    assert!(html.contains(r#"id="matrix""#));
    assert!(html.contains(r##"<a href="#f-neutralize_text-S1-09c4fe0f">"##));
    assert!(html.contains(r#"id="f-neutralize_text-S1-09c4fe0f""#));
    assert_eq!(html.matches("<svg").count(), 2, "two plots");
}

#[test]
fn summary_is_appended_to_the_step_summary() {
    let dir = tempfile::tempdir().unwrap();
    let step_summary = dir.path().join("step_summary.md");
    std::fs::write(&step_summary, "## an earlier step\n\nits text\n").unwrap();
    write(&dir.path().join("a"), false, Some(&step_summary));
    write(&dir.path().join("b"), false, Some(&step_summary));
    let text = std::fs::read_to_string(&step_summary).unwrap();
    let summary = std::fs::read_to_string(dir.path().join("a/summary.md")).unwrap();
    assert!(
        text.starts_with("## an earlier step\n\nits text\n"),
        "{text}"
    );
    assert_eq!(text.matches("# normfuzz conformance").count(), 2, "{text}");
    assert!(text.contains(&summary));
    // Text from the run sits in code spans, where Markdown and HTML are inert.
    assert!(
        summary.starts_with("# normfuzz conformance: ` hostile <sut> `\n"),
        "{summary}"
    );
    assert!(
        summary.contains("minimal input: ` {\"text\":\"ok\\n</textarea>"),
        "{summary}"
    );
}

#[test]
fn index_holds_what_the_other_formats_show() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), false, None);
    let index: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("index.json")).unwrap()).unwrap();
    assert_eq!(index["verdict"], "fail");
    assert_eq!(index["timeline"].as_array().map(Vec::len), Some(3));
    assert_eq!(index["timeline"][2]["referenceShapes"], 10);
    // Two jobs: 120 cases in 0.4 s of job time while no job shrank, 0.2 s each.
    let cases = index["cases"].as_f64().unwrap();
    assert_eq!(index["shrinkMs"], 600);
    assert_eq!(index["casesPerSecond"], cases / 0.8);
    assert_eq!(index["steadyCasesPerSecond"], 600.0);
    assert_eq!(index["faults"]["hangs"], 3);
    assert_eq!(index["faults"]["hangMs"], 1_500);
    let summary = std::fs::read_to_string(dir.path().join("summary.md")).unwrap();
    assert!(
        summary.contains("600 cases/s while no job shrank, 0.6 s shrinking beside the jobs"),
        "{summary}"
    );
    assert!(
        summary.contains("4 restarts (3 hangs costing 1.5 s of job time, 1 crashes"),
        "{summary}"
    );
    assert_eq!(index["faults"]["late"], 2);
    assert_eq!(index["cpu"]["harnessShare"], 0.15);
    for shown in [
        "2 slow answers waited for past the calibrated time-out (no restart)",
        "the harness 15% of the CPU (0.3 s against the SUT's 1.7 s)",
    ] {
        assert!(summary.contains(shown), "{shown} not in {summary}");
    }
    assert_eq!(
        index["matrix"]["cells"]["S1"]["neutralize_text"]["state"],
        "fail"
    );
    assert_eq!(
        index["matrix"]["cells"]["S1"]["check_media_url"]["state"],
        "not_applicable"
    );
    assert_eq!(
        index["matrix"]["cells"]["divergence"]["check_media_url"]["state"],
        "divergence"
    );
    let repro = index["findings"][0]["repro"].as_str().unwrap();
    assert!(
        repro.ends_with("--sut 'python3 sut.py --flag '\\''x'\\'''"),
        "{repro}"
    );
    assert!(
        dir.path()
            .join("findings/neutralize_text-S1-09c4fe0f.json")
            .is_file()
    );
}

/// `--fail-on` decides which impact classes fail the gate: a hardening-only S1 passes a gate on
/// bugs (its JUnit case passes and names the class), fails the default one, and a finding that
/// was not classed fails either way; a divergence fails only under strict.
#[test]
fn fail_on_chooses_the_classes_that_fail_the_gate() {
    use normfuzz::campaign::impact::{Class, Impact};
    let mut outcome = outcome();
    outcome.findings[0].impact = Some(Impact {
        class: Class::Hardening,
        why: "no MEDIA: convention".into(),
    });
    assert!(!outcome.passes(false), "hardening fails the default gate");
    outcome.fail_on = vec![Class::Bug];
    assert!(outcome.passes(false));
    assert!(!outcome.passes(true), "strict: the divergence fails");
    let dir = tempfile::tempdir().unwrap();
    normfuzz::report::write(dir.path(), &outcome, "sut", false, None, None).unwrap();
    let index: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("index.json")).unwrap()).unwrap();
    assert_eq!(index["verdict"], "pass");
    assert_eq!(index["failOn"], json!(["bug"]));
    assert_eq!(index["findings"][0]["class"], "hardening");
    let report = junit(dir.path());
    let s1 = case(&report, "neutralize_text", "neutralize_text/S1");
    assert_eq!(failure_type(s1), None);
    assert!(
        s1.properties
            .iter()
            .any(|p| p.name.as_str() == "impact" && p.value.as_str() == "hardening")
    );
    let summary = std::fs::read_to_string(dir.path().join("summary.md")).unwrap();
    assert!(
        summary.contains("(gate failure, hardening: no MEDIA: convention, 40 hits)"),
        "{summary}"
    );
    outcome.findings[0].impact = None;
    assert!(!outcome.passes(false), "an unclassed gate finding fails");
}
