//! The differential runner end to end: the reference over the subprocess path is clean, a
//! pass-through SUT is caught with small shrunk inputs, a faulty SUT is survived and reported,
//! and a run is deterministic for a seed.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use normfuzz::campaign::{Campaign, Outcome, Progress, Shard, run};
use normfuzz::protocol::Op;
use normfuzz::report::upstream::RuntimeId;
use normfuzz::rule::Rule;
use normfuzz::sut::{ProcessSut, ReferenceSut, Sut};

fn campaign(ops: &[Op], cases: u64, seed: u64) -> Campaign {
    Campaign {
        cases: Some(cases),
        ..Campaign::new(ops.to_vec(), seed)
    }
}

fn run_process(command: &str, campaign: &Campaign, timeout: Duration) -> Outcome {
    let argv = ProcessSut::parse_command(command).expect("command");
    run(
        campaign,
        || ProcessSut::start(argv.clone(), timeout),
        &Progress::default(),
    )
    .expect("campaign runs")
}

fn python() -> Option<&'static str> {
    std::process::Command::new("python3")
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|_| "python3")
}

#[test]
fn serve_reference_over_the_subprocess_path_is_clean() {
    crate::on_job_stack(|| {
        let command = format!("{} serve-reference", env!("CARGO_BIN_EXE_normfuzz"));
        let outcome = run_process(
            &command,
            &campaign(&Op::ALL, 3_000, 7),
            Duration::from_secs(5),
        );
        assert_eq!(outcome.cases(), 3_000);
        let gate: Vec<_> = outcome
            .findings
            .iter()
            .filter(|f| f.gate)
            .map(|f| (&f.id, &f.input))
            .collect();
        assert!(gate.is_empty(), "{gate:?}");
    });
}

#[test]
fn pass_through_sut_is_caught_with_minimal_inputs() {
    crate::on_job_stack(|| {
        let Some(python) = python() else {
            eprintln!("SKIPPED: python3 not found");
            return;
        };
        let command = format!(
            "{python} {}/../examples/sut-echo/echo.py",
            env!("CARGO_MANIFEST_DIR")
        );
        let outcome = run_process(
            &command,
            &campaign(&[Op::CoerceToolResult, Op::NeutralizeText], 600, 1),
            Duration::from_secs(5),
        );
        let s1 = outcome
            .findings
            .iter()
            .find(|f| f.rule == normfuzz::rule::Rule::S1 && f.op == Op::NeutralizeText)
            .expect("S1 found on neutralize_text");
        // A directive line alone (a corner's `MEDIA:` line with its URL is 41 bytes of JSON).
        assert!(
            s1.input.to_string().len() <= 64,
            "S1 not shrunk: {}",
            s1.input
        );
        let s2 = outcome
            .findings
            .iter()
            .find(|f| f.rule == normfuzz::rule::Rule::S2)
            .expect("S2 found");
        // Apart from an image's bytes: a valid sample image (one without its media type is
        // refused too) is drawn whole, and whole-part edits keep a block's data.
        let mut envelope = s2.input.clone();
        for block in envelope["content"].as_array_mut().into_iter().flatten() {
            if let Some(data) = block.get_mut("data") {
                *data = serde_json::json!("");
            }
        }
        assert!(
            envelope.to_string().len() <= 200,
            "S2 not shrunk: {}",
            s2.input
        );
        assert!(outcome.failed(false) > 0);
    });
}

#[test]
fn faulty_sut_is_survived_reported_and_restarted() {
    crate::on_job_stack(|| {
        let Some(python) = python() else {
            eprintln!("SKIPPED: python3 not found");
            return;
        };
        let command = format!(
            "{python} {}/tests/suts/faulty.py",
            env!("CARGO_MANIFEST_DIR")
        );
        let outcome = run_process(
            &command,
            &campaign(&[Op::NeutralizeText], 150, 3),
            Duration::from_millis(300),
        );
        assert_eq!(outcome.cases(), 150, "the run went on after every fault");
        let found: Vec<(Rule, &str)> = outcome
            .findings
            .iter()
            .filter(|f| f.gate)
            .map(|f| (f.rule, f.kind.as_str()))
            .collect();
        // Crashes and hangs are B1 (their kind tells them apart); a garbled answer is `protocol`.
        for fault in [Rule::B1, Rule::Protocol] {
            assert!(
                found.iter().any(|(r, _)| *r == fault),
                "{fault} not reported: {found:?}"
            );
        }
        for kind in ["process exited", "no answer in time"] {
            assert!(
                found.iter().any(|(_, k)| *k == kind),
                "{kind} not reported: {found:?}"
            );
        }
    });
}

#[test]
fn sut_without_handshake_is_a_clear_error() {
    crate::on_job_stack(|| {
        let err = ProcessSut::start(vec!["true".into()], Duration::from_secs(1))
            .err()
            .expect("no handshake");
        assert!(err.to_string().contains("handshake"), "{err}");
        let err = ProcessSut::start(vec!["echo".into(), "hello".into()], Duration::from_secs(1))
            .err()
            .expect("bad handshake");
        assert!(err.to_string().contains("handshake"), "{err}");
    });
}

#[test]
fn same_seed_same_cases() {
    crate::on_job_stack(|| {
        let c = campaign(&Op::ALL, 1_000, 42);
        let a = run(&c, || Ok(ReferenceSut), &Progress::default()).unwrap();
        let b = run(&c, || Ok(ReferenceSut), &Progress::default()).unwrap();
        assert_eq!(
            serde_json::to_string(&a.per_op).unwrap(),
            serde_json::to_string(&b.per_op).unwrap()
        );
    });
}

/// An in-process SUT with two bugs: `neutralize_text` passes its text through (S1) and
/// `check_media_url` allows every URL (U1–U7); every other op answers as the reference does.
struct EchoNeutralize;

impl Sut for EchoNeutralize {
    fn name(&self) -> &str {
        "echo neutralize, allow every URL"
    }

    fn ops(&self) -> &[Op] {
        &Op::ALL
    }

    fn call_until(
        &mut self,
        batch: &[(Op, &serde_json::Value)],
        _until: Option<std::time::Instant>,
        _wait: normfuzz::sut::Wait,
        seen: &mut dyn FnMut(&normfuzz::protocol::Answer) -> std::ops::ControlFlow<()>,
    ) -> anyhow::Result<Vec<normfuzz::protocol::Answer>> {
        let mut answers = ReferenceSut.call(batch)?;
        for ((op, input), answer) in batch.iter().zip(&mut answers) {
            match op {
                Op::NeutralizeText => {
                    *answer = normfuzz::protocol::Answer::Output((*input).clone());
                }
                Op::CheckMediaUrl => {
                    *answer =
                        normfuzz::protocol::Answer::Output(serde_json::json!({"allowed": true}));
                }
                _ => {}
            }
            let _ = seen(answer);
        }
        Ok(answers)
    }
}

/// Shrinking never adds a feature the case lacked: a pass-through SUT keeps a resource link as
/// it is (F4), and without its `name` it would still, but the result would then break the MCP
/// schema, a feature the case did not have. The minimal input keeps the name, so an entry drafted
/// from it covers the case it came from.
#[test]
fn shrinking_adds_no_feature_the_case_lacked() {
    use proptest::strategy::{Just, Strategy};
    use proptest::test_runner::TestRunner;

    struct PassThrough;
    impl Sut for PassThrough {
        fn name(&self) -> &str {
            "pass-through"
        }
        fn ops(&self) -> &[Op] {
            &[Op::CoerceToolResult]
        }
        fn call_until(
            &mut self,
            batch: &[(Op, &serde_json::Value)],
            _until: Option<std::time::Instant>,
            _wait: normfuzz::sut::Wait,
            seen: &mut dyn FnMut(&normfuzz::protocol::Answer) -> std::ops::ControlFlow<()>,
        ) -> anyhow::Result<Vec<normfuzz::protocol::Answer>> {
            let answers: Vec<_> = batch
                .iter()
                .map(|(_, input)| normfuzz::protocol::Answer::Output(passed(input)))
                .collect();
            for answer in &answers {
                let _ = seen(answer);
            }
            Ok(answers)
        }
    }
    // The blocks as they came, with the output's `isError`.
    fn passed(input: &serde_json::Value) -> serde_json::Value {
        let mut output = input.clone();
        if let Some(result) = output.as_object_mut() {
            result.insert("isError".into(), false.into());
        }
        output
    }
    let input = serde_json::json!({"content": [
        {"type": "resource_link", "uri": "https://example.com/a.pdf", "name": "a.pdf"}
    ]});
    let op = Op::CoerceToolResult;
    let output = normfuzz::protocol::Answer::Output(passed(&input));
    let expected = ReferenceSut.call(&[(op, &input)]).unwrap().pop().unwrap();
    let violation = normfuzz::oracle::judge::judge(op, &input, &output, &expected)
        .into_iter()
        .find(|v| v.gate)
        .expect("a gate failure on a link passed through");
    let signature =
        normfuzz::oracle::signature::Signature::of(op, &input, &output, &expected, &violation);
    assert!(!signature.features.contains(&"schema-invalid".to_string()));
    let tree = Just(input).new_tree(&mut TestRunner::default()).unwrap();
    let shrunk = normfuzz::campaign::shrink::shrink(
        &mut PassThrough,
        op,
        tree,
        &violation,
        &signature,
        false,
        normfuzz::sut::Wait::Calibrated,
        None,
        &Progress::default(),
    )
    .unwrap();
    let normfuzz::campaign::shrink::Shrunk::Smallest { input, .. } = shrunk else {
        panic!("not shrunk: {shrunk:?}");
    };
    assert_eq!(input["content"][0]["name"], "a.pdf", "{input}");
    assert!(normfuzz::oracle::mcp_schema::is_valid(&input), "{input}");
}

/// `--shard K/N`: the shards of a campaign run disjoint cases that together are the cases of
/// the unsharded campaign with N × jobs jobs: the same count per op, the same verdicts per
/// rule, the same distinct findings.
#[test]
fn shards_together_run_the_unsharded_cases() {
    crate::on_job_stack(|| {
        let mut whole = campaign(&Op::ALL, 2_000, 9);
        whole.jobs = 3;
        let unsharded = run(&whole, || Ok(EchoNeutralize), &Progress::default()).unwrap();
        let mut per_op: std::collections::BTreeMap<Op, normfuzz::campaign::Tally> =
            Default::default();
        let mut keys = std::collections::BTreeSet::new();
        let mut cases = 0;
        for index in 0..3 {
            let mut part = campaign(&Op::ALL, 2_000, 9);
            part.shard = Shard { index, count: 3 };
            let outcome = run(&part, || Ok(EchoNeutralize), &Progress::default()).unwrap();
            assert!(
                outcome.cases() > 0 && outcome.cases() < 2_000,
                "{}",
                outcome.cases()
            );
            cases += outcome.cases();
            for (op, tally) in outcome.per_op {
                let sum = per_op.entry(op).or_default();
                sum.cases += tally.cases;
                sum.passed += tally.passed;
                sum.failed += tally.failed;
                sum.divergent += tally.divergent;
                for (rule, n) in tally.rules {
                    *sum.rules.entry(rule).or_default() += n;
                }
            }
            keys.extend(outcome.findings.iter().map(|f| f.id.clone()));
        }
        assert_eq!(cases, 2_000);
        assert_eq!(
            serde_json::to_string(&per_op).unwrap(),
            serde_json::to_string(&unsharded.per_op).unwrap()
        );
        let unsharded_keys: std::collections::BTreeSet<String> =
            unsharded.findings.iter().map(|f| f.id.clone()).collect();
        assert!(
            unsharded_keys.iter().any(|id| id.contains("-S1-")),
            "{unsharded_keys:?}"
        );
        assert_eq!(keys, unsharded_keys);
    });
}

#[test]
fn shard_syntax() {
    crate::on_job_stack(|| {
        assert_eq!(Shard::parse("2/3").unwrap(), Shard { index: 1, count: 3 });
        assert_eq!(Shard::parse("1/1").unwrap(), Shard::WHOLE);
        for bad in ["0/3", "4/3", "3", "a/b", "1/0", ""] {
            assert!(Shard::parse(bad).is_err(), "{bad}");
        }
    });
}

/// `normfuzz merge-reports` of the N shards' reports equals the report of the unsharded run with
/// N jobs (same seed and cases): verdict, counts per op and rule, the rule × op matrix, and
/// every finding's id, rule, kind and hits. Only timings, the time series and which minimal
/// input a finding keeps may differ.
#[test]
fn merged_shard_reports_equal_the_unsharded_report() {
    crate::on_job_stack(|| {
        let dir = tempfile::tempdir().unwrap();
        let mut whole = campaign(&Op::ALL, 1_500, 5);
        whole.jobs = 2;
        let unsharded = run(&whole, || Ok(EchoNeutralize), &Progress::default()).unwrap();
        // A matrix runtime's report names it; the merged report must too.
        let runtime = RuntimeId::parse("echo@1.0").unwrap();
        let write = |out: &std::path::Path, outcome: &Outcome| {
            normfuzz::report::write(out, outcome, "echo", false, Some(&runtime), None).unwrap();
        };
        write(&dir.path().join("whole"), &unsharded);
        let mut shards = Vec::new();
        for index in 0..2 {
            let mut part = campaign(&Op::ALL, 1_500, 5);
            part.shard = Shard { index, count: 2 };
            let outcome = run(&part, || Ok(EchoNeutralize), &Progress::default()).unwrap();
            let out = dir.path().join(format!("shard{index}"));
            write(&out, &outcome);
            shards.push(out);
        }
        let merged = dir.path().join("merged");
        let status = std::process::Command::new(env!("CARGO_BIN_EXE_normfuzz"))
            .arg("merge-reports")
            .arg("--out")
            .arg(&merged)
            .args(&shards)
            .env_remove("GITHUB_STEP_SUMMARY")
            .status()
            .unwrap();
        assert_eq!(status.code(), Some(1), "the echo SUT fails the gate");
        let comparable = |dir: &std::path::Path| {
            let text = std::fs::read_to_string(dir.join("index.json")).unwrap();
            let mut index: serde_json::Value = serde_json::from_str(&text).unwrap();
            let map = index.as_object_mut().unwrap();
            for volatile in [
                "elapsedMs",
                "timeline",
                "shrinkMs",
                "casesPerSecond",
                "steadyCases",
                "steadyJobMs",
                "steadyCasesPerSecond",
                "cpu",
            ] {
                map.remove(volatile).unwrap();
            }
            for finding in map["findings"].as_array_mut().unwrap() {
                let finding = finding.as_object_mut().unwrap();
                finding.remove("firstSeenMs").unwrap();
                finding.remove("repro").unwrap();
            }
            index
        };
        let (expected, got) = (comparable(&dir.path().join("whole")), comparable(&merged));
        assert!(
            expected["findings"].as_array().unwrap().len() > 1,
            "{expected:#}"
        );
        assert_eq!(got, expected);
        assert_eq!(
            got["runtime"],
            serde_json::json!({"name": "echo", "version": "1.0"})
        );
        for file in ["junit.xml", "summary.md", "report.html"] {
            assert!(merged.join(file).is_file(), "{file}");
        }
    });
}

/// The campaign accounts for its shrinking: the echo SUT has findings, each shrunk once, early;
/// the batches after them, with both jobs running and none shrinking, give the steady rate.
#[test]
fn shrinking_time_and_the_steady_rate_are_counted() {
    crate::on_job_stack(|| {
        let mut whole = campaign(&[Op::NeutralizeText], 20_000, 3);
        whole.jobs = 2;
        let outcome = run(&whole, || Ok(EchoNeutralize), &Progress::default()).unwrap();
        assert!(!outcome.findings.is_empty());
        assert!(
            outcome.steady_cases > 0 && outcome.steady_cases < outcome.cases(),
            "{} steady of {}",
            outcome.steady_cases,
            outcome.cases()
        );
        assert!(outcome.steady_rate().is_some_and(|r| r > 0.0));
    });
}

/// A finding file holds the minimal input as deep as a generated one (100,000 levels, past
/// serde_json's recursion limit of 128): `normfuzz repro` replays what the report writer wrote,
/// and `merge-reports` reads it back.
#[test]
fn repro_replays_a_finding_nested_as_deep_as_generated() {
    use normfuzz::generate::corners::nesting::{JOB_STACK, MAX_NESTING, Shape, nest};
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report");
    let written = report.clone();
    // Serializing and dropping the deep input recurse: on a stack sized for it, as the CLI's.
    std::thread::Builder::new()
        .stack_size(JOB_STACK)
        .spawn(move || {
            let mut outcome = run(
                &campaign(&[Op::NeutralizeText], 200, 1),
                || Ok(EchoNeutralize),
                &Progress::default(),
            )
            .unwrap();
            let finding = &mut outcome.findings[0];
            finding.op = Op::CoerceToolResult;
            finding.input = serde_json::json!({"content": [nest(MAX_NESTING, Shape::Alternating, serde_json::Value::Null)]});
            normfuzz::report::write(&written, &outcome, "reference", false, None, None)
                .unwrap();
        })
        .unwrap()
        .join()
        .unwrap();
    let file = std::fs::read_dir(report.join("findings"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let repro = std::process::Command::new(env!("CARGO_BIN_EXE_normfuzz"))
        .arg("repro")
        .arg(&file)
        .args(["--sut", "reference"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&repro.stderr);
    assert_eq!(repro.status.code(), Some(0), "{stderr}");
    let replayed: serde_json::Value = serde_json::from_slice(&repro.stdout).unwrap();
    assert_eq!(replayed["op"], "coerce_tool_result", "{replayed}");
    let merged = dir.path().join("merged");
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_normfuzz"))
        .arg("merge-reports")
        .arg("--out")
        .arg(&merged)
        .arg(&report)
        .env_remove("GITHUB_STEP_SUMMARY")
        .status()
        .unwrap();
    assert_eq!(
        status.code(),
        Some(1),
        "the echo SUT's findings fail the gate"
    );
}

/// Start-up is paid once per job: findings the gate does not need shrunk start no shrinker
/// SUT: the known ones, however many cases hit them, and divergences without `--strict` (listed
/// as found). Under `--strict` a divergence fails the run, so it is shrunk.
#[test]
fn known_findings_and_divergences_start_no_shrinker_sut() {
    crate::on_job_stack(|| {
        let starts = AtomicUsize::new(0);
        let make = || {
            starts.fetch_add(1, Ordering::SeqCst);
            Ok(EchoNeutralize)
        };
        let mut c = campaign(&[Op::CheckMediaUrl], 600, 3);
        let first = run(&c, make, &Progress::default()).unwrap();
        let gate: Vec<_> = first.findings.iter().filter(|f| f.gate).collect();
        assert!(!gate.is_empty(), "{:?}", first.findings);
        // Every rule it broke known, rule-wide.
        let entries: String = gate
            .iter()
            .map(|f| {
                format!(
                    "[[known]]\nop = \"check_media_url\"\nrule = \"{}\"\nclass = \"bug\"\n\
                     cause = \"allows-all\"\nreason = \"allows every URL\"\n",
                    f.rule
                )
            })
            .collect();
        c.baseline = Some(normfuzz::campaign::baseline::Baseline::parse(&entries).unwrap());
        starts.store(0, Ordering::SeqCst);
        let second = run(&c, make, &Progress::default()).unwrap();
        assert_eq!(second.cases(), 600);
        let known_hits: u64 = second
            .findings
            .iter()
            .filter(|f| f.gate)
            .map(|f| f.hits)
            .sum();
        assert!(known_hits > 0);
        let divergences: Vec<_> = second.findings.iter().filter(|f| !f.gate).collect();
        assert!(!divergences.is_empty(), "{:?}", second.findings);
        assert!(
            divergences.iter().all(|f| f.detail.contains("not shrunk")),
            "{divergences:?}"
        );
        assert_eq!(starts.load(Ordering::SeqCst), 1);
        // Under --strict the divergences fail the run: shrunk, on the job's SUT or one of its own.
        c.strict = true;
        starts.store(0, Ordering::SeqCst);
        let strict = run(&c, make, &Progress::default()).unwrap();
        let divergences: Vec<_> = strict.findings.iter().filter(|f| !f.gate).collect();
        assert!(!divergences.is_empty(), "{:?}", strict.findings);
        assert!(
            divergences.iter().all(|f| !f.detail.contains("not shrunk")),
            "{divergences:?}"
        );
        assert!(starts.load(Ordering::SeqCst) <= 2);
    });
}

/// A finding's file is named by its id, so two findings of one campaign never share one: two
/// entries of one cause, rule, kind and action (one signed with features, one rule-wide) know
/// two findings, whose ids tell the entries apart.
#[test]
fn findings_known_by_two_entries_of_one_cause_have_two_ids() {
    crate::on_job_stack(|| {
        let mut c = campaign(&[Op::CheckMediaUrl], 600, 3);
        let first = run(&c, || Ok(EchoNeutralize), &Progress::default()).unwrap();
        let entries: String = first
            .findings
            .iter()
            .filter(|f| f.gate && !f.signature.features.is_empty())
            .map(|f| {
                let head = format!(
                    "[[known]]\nop = \"check_media_url\"\nrule = \"{}\"\nclass = \"bug\"\n\
                     cause = \"allows-all\"\nreason = \"allows every URL\"\n",
                    f.rule
                );
                let signed = format!(
                    "{head}[known.signature]\n{}",
                    toml::to_string(&f.signature).unwrap()
                );
                signed + &head
            })
            .collect();
        assert!(!entries.is_empty(), "{:?}", first.findings);
        c.baseline = Some(normfuzz::campaign::baseline::Baseline::parse(&entries).unwrap());
        let second = run(&c, || Ok(EchoNeutralize), &Progress::default()).unwrap();
        let known: Vec<_> = second.findings.iter().filter(|f| f.gate).collect();
        let keys: std::collections::BTreeSet<_> = known
            .iter()
            .map(|f| (f.rule, f.signature.kind.as_str(), f.signature.action))
            .collect();
        assert!(
            known.len() > keys.len(),
            "no rule, kind and action was known by both entries: {known:?}"
        );
        let ids: std::collections::BTreeSet<_> = second.findings.iter().map(|f| &f.id).collect();
        assert_eq!(ids.len(), second.findings.len(), "{:?}", second.findings);
    });
}

/// A job done with its cases within the time a SUT takes to start hands its SUT to its
/// shrinker: a short campaign of a slow-starting runtime pays one start-up, not two.
#[test]
fn a_short_campaigns_shrinker_takes_its_jobs_sut() {
    crate::on_job_stack(|| {
        let starts = AtomicUsize::new(0);
        let make = || {
            starts.fetch_add(1, Ordering::SeqCst);
            std::thread::sleep(Duration::from_secs(2));
            Ok(EchoNeutralize)
        };
        let outcome = run(
            &campaign(&[Op::CheckMediaUrl], 200, 3),
            make,
            &Progress::default(),
        )
        .unwrap();
        let shrunk: Vec<_> = outcome.findings.iter().filter(|f| f.gate).collect();
        assert!(!shrunk.is_empty());
        assert!(
            shrunk.iter().all(|f| !f.detail.contains("not shrunk")),
            "{shrunk:?}"
        );
        assert_eq!(starts.load(Ordering::SeqCst), 1);
    });
}
