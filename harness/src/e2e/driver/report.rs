//! A finished run, written out: each finding with its baseline status (known, new) and its
//! evidence file, the stale baseline entries, `index.json` and the report formats, the console
//! summary and the exit code.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Result;
use serde::Serialize;
use serde_json::{Value, json};

use super::case::{CaseOutcome, Isolation, read_json};
use crate::campaign::impact::{Class, Evidence, Profile, derive};
use crate::e2e::adapter::Adapter;
use crate::e2e::baseline::Baseline;
use crate::e2e::cases::{E2eCase, Scenario};
use crate::e2e::checks::{E2eFinding, Layer};
use crate::e2e::one_turn::{self, Via};
use crate::excerpt::bounded;
use crate::fs::write_atomic;
use crate::oracle::mcp_schema as schema;
use crate::report::{E2eCaseView, E2eFindingView, E2eView};
use crate::rule::Rule;

/// One finding with its baseline status and impact: a known one's class and cause as the
/// baseline reads them in the runtime's code; a new one's class derived from its evidence and
/// the runtime's profile.
#[derive(Debug, Serialize)]
struct Judged {
    case: String,
    #[serde(flatten)]
    finding: E2eFinding,
    known: bool,
    class: Class,
    #[serde(skip_serializing_if = "Option::is_none")]
    cause: Option<String>,
}

/// What the report tells about a run besides its outcomes.
pub(super) struct Run<'a> {
    pub(super) adapter: &'a Adapter,
    pub(super) version: &'a str,
    /// The adapter file's name, as `cargo xtask e2e --runtime` takes it.
    pub(super) runtime_name: &'a str,
    pub(super) isolation: Isolation,
    pub(super) seed: u64,
    pub(super) scenario: Scenario,
    pub(super) baseline: &'a Baseline,
    pub(super) baseline_path: Option<&'a Path>,
    /// The classes whose new findings fail the run (`--fail-on`).
    pub(super) fail_on: &'a [Class],
    pub(super) plan: &'a [E2eCase],
    pub(super) report: &'a Path,
    pub(super) start: Instant,
    pub(super) via: Via,
}

/// Compares the outcomes (in plan order) with the baseline, writes the report and prints the
/// summary; fails the run on a new finding of a class in `fail_on`, an error or a stale
/// baseline entry.
pub(super) fn finish(run: &Run<'_>, outcomes: &[CaseOutcome]) -> Result<ExitCode> {
    let Run {
        adapter,
        version,
        runtime_name,
        isolation,
        seed,
        scenario,
        baseline,
        baseline_path,
        fail_on,
        plan,
        report,
        start,
        via,
    } = *run;
    let profile = Profile::beside(&adapter.dir)?;
    let judged: Vec<Judged> = outcomes
        .iter()
        .flat_map(|o| {
            let profile = &profile;
            o.findings.iter().map(move |f| {
                let entry = baseline.entry(&o.id, f.rule.as_str(), f.layer);
                let class = entry.map_or_else(
                    || {
                        let result = plan.iter().find(|c| c.id == o.id).map(|c| &c.result);
                        let evidence = Evidence {
                            schema_invalid: result.map(|r| !schema::is_valid(r)),
                            hang: (f.rule == Rule::B1).then(|| f.reason.contains("did not finish")),
                            ..Evidence::default()
                        };
                        derive(f.rule, &evidence, profile).class
                    },
                    |k| k.class,
                );
                Judged {
                    case: o.id.clone(),
                    finding: f.clone(),
                    known: entry.is_some(),
                    class,
                    cause: entry.map(|k| k.cause.clone()),
                }
            })
        })
        .collect();
    let ran: BTreeSet<&str> = outcomes
        .iter()
        .filter(|o| o.error.is_none())
        .map(|o| o.id.as_str())
        .collect();
    let found: BTreeSet<(&str, &str, Layer)> = judged
        .iter()
        .map(|j| (j.case.as_str(), j.finding.rule.as_str(), j.finding.layer))
        .collect();
    let stale = baseline.stale(&ran, &via.layers(), &found);
    let new = judged.iter().filter(|j| !j.known).count();
    let fails = |j: &Judged| !j.known && fail_on.contains(&j.class);
    let errors = outcomes.iter().filter(|o| o.error.is_some()).count();
    let repro = |case: &str| {
        format!(
            "cargo xtask e2e --runtime {runtime_name}{} --case {case}{}{}",
            if scenario == Scenario::ToolResult {
                String::new()
            } else {
                format!(" --scenario {}", scenario.as_str())
            },
            if case.contains("gen-") {
                format!(" --seed {seed}")
            } else {
                String::new()
            },
            if via == Via::Channel {
                " --via channel"
            } else {
                ""
            }
        )
    };

    for j in &judged {
        let dir = report.join("cases").join(&j.case);
        let file = report.join(finding_file(&j.case, &j.finding));
        let outcome = outcomes.iter().find(|o| o.id == j.case);
        write_atomic(
            &file,
            format!(
                "{:#}\n",
                json!({
                    "case": j.case, "rule": j.finding.rule, "layer": j.finding.layer,
                    "reason": j.finding.reason, "known": j.known, "evidence": j.finding.evidence,
                    "api": outcome.map(|o| &o.api),
                    "input": plan.iter().find(|c| c.id == j.case),
                    "capturedRequest": tool_result_request(&dir),
                    "delivered": match via {
                        Via::Payload => read_json(&dir.join(one_turn::STDOUT)).map(|v| bounded_value(&v)),
                        Via::Channel => one_turn::read_jsonl(&dir.join(one_turn::CHANNEL))
                            .ok()
                            .map(|calls| bounded_value(&Value::Array(calls))),
                    },
                    "files": dir.strip_prefix(report).unwrap_or(&dir),
                    "repro": repro(&j.case),
                })
            )
            .as_bytes(),
        )?;
    }
    let index = json!({
        "adapter": adapter.file,
        "runtime": adapter.label(),
        "runtimeVersion": version,
        "isolation": isolation,
        "via": via,
        "scenario": scenario,
        "seed": seed,
        "elapsedMs": start.elapsed().as_millis() as u64,
        "medianTurnMs": median_turn_ms(outcomes),
        "baseline": baseline_path,
        "failOn": fail_on,
        "cases": outcomes,
        "findings": judged,
        "new": new,
        "stale": stale.iter().map(|k| json!({"case": k.case, "rule": k.rule, "layer": k.layer, "reason": k.reason})).collect::<Vec<_>>(),
        "errors": errors,
    });
    let elapsed = start.elapsed().as_secs_f64();
    let view = E2eView {
        runtime: format!("{} ({version})", adapter.label()),
        facts: vec![
            ("isolation", format!("{isolation:?}")),
            ("via", via.as_str().to_string()),
            ("seed", seed.to_string()),
            ("time", format!("{elapsed:.0} s")),
            (
                "median turn",
                format!("{:.1} s", median_turn_ms(outcomes) as f64 / 1000.0),
            ),
            (
                "baseline",
                baseline_path
                    .as_ref()
                    .map_or("none".into(), |p| p.display().to_string()),
            ),
        ],
        cases: outcomes
            .iter()
            .map(|o| E2eCaseView {
                id: o.id.clone(),
                api: o.api.clone(),
                about: o.about.clone(),
                elapsed_ms: o.elapsed_ms,
                error: o.error.clone(),
                findings: judged
                    .iter()
                    .filter(|j| j.case == o.id)
                    .map(|j| E2eFindingView {
                        rule: j.finding.rule.to_string(),
                        layer: j.finding.layer.to_string(),
                        reason: j.finding.reason.clone(),
                        known: j.known,
                        fails: fails(j),
                        evidence: j.finding.evidence.clone(),
                        repro: repro(&o.id),
                        file: finding_file(&o.id, &j.finding),
                    })
                    .collect(),
            })
            .collect(),
        stale: stale
            .iter()
            .map(|k| {
                (
                    k.case.clone(),
                    format!("{} ({})", k.rule, k.layer),
                    k.reason.clone(),
                )
            })
            .collect(),
    };
    crate::report::write_e2e(
        report,
        &index,
        &view,
        crate::report::step_summary_path().as_deref(),
    )?;

    let failing_cases = outcomes
        .iter()
        .filter(|o| o.error.is_some() || judged.iter().any(|j| j.case == o.id && fails(j)))
        .count();
    let failed = failing_cases + stale.len();
    println!(
        "{}: {} cases (median turn {:.1} s), {} findings ({} known, {new} new), {} stale, {errors} errors; report in {}",
        adapter.label(),
        outcomes.len(),
        median_turn_ms(outcomes) as f64 / 1000.0,
        judged.len(),
        judged.len() - new,
        stale.len(),
        report.display()
    );
    for k in &stale {
        println!(
            "stale baseline entry: {} {} {} ({}) no longer reproduces",
            k.case, k.rule, k.layer, k.reason
        );
    }
    for j in judged.iter().filter(|j| !j.known) {
        println!(
            "NEW {} {} ({}, {}{}): {}  repro: {}",
            j.case,
            j.finding.rule,
            j.finding.layer,
            j.class,
            if fails(j) {
                ""
            } else {
                ", passes: not in --fail-on"
            },
            j.finding.reason,
            repro(&j.case)
        );
    }
    println!("{} passed, {failed} failed", outcomes.len() - failing_cases);
    Ok(ExitCode::from(u8::from(failed > 0)))
}

/// The median time of one case (sandbox, turn and judging), the figure the e2e speed target names.
fn median_turn_ms(outcomes: &[CaseOutcome]) -> u64 {
    let mut times: Vec<u64> = outcomes.iter().map(|o| o.elapsed_ms).collect();
    times.sort_unstable();
    match times.len() {
        0 => 0,
        n if n % 2 == 1 => times[n / 2],
        n => (times[n / 2 - 1] + times[n / 2]) / 2,
    }
}

/// `findings/<case>--<rule>--<layer>.json`: one file per rule and layer a case broke.
fn finding_file(case: &str, finding: &E2eFinding) -> String {
    format!("findings/{case}--{}--{}.json", finding.rule, finding.layer)
}

/// Long strings cut for the report (base64 images, system prompts).
fn bounded_value(v: &Value) -> Value {
    match v {
        Value::String(s) => json!(bounded(s, 2000)),
        Value::Array(a) => Value::Array(a.iter().map(bounded_value).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| (k.clone(), bounded_value(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The captured request carrying the tool result, from the tool result on (the system prompt
/// and tool list, ~100 KB, stay in `requests.jsonl`).
fn tool_result_request(dir: &Path) -> Value {
    let Ok(requests) = one_turn::requests(dir) else {
        return Value::Null;
    };
    // The first request the judge finds the tool result in, whatever its API.
    let carries = |r: &Value| {
        r["provider"].as_str().is_some_and(|provider| {
            crate::e2e::checks::model_view(provider, std::slice::from_ref(r)).is_some()
        })
    };
    requests.iter().find(|r| carries(r)).map_or(Value::Null, |r| {
        json!({
            "seq": r["seq"], "provider": r["provider"], "path": r["path"], "verdict": r["verdict"],
            "body": bounded_value(&r["body"]),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_turn_is_the_middle_time() {
        let outcome = |ms| CaseOutcome {
            id: String::new(),
            about: String::new(),
            api: String::new(),
            image_input: true,
            elapsed_ms: ms,
            error: None,
            findings: Vec::new(),
            fallback: None,
        };
        let median =
            |ms: &[u64]| median_turn_ms(&ms.iter().map(|&m| outcome(m)).collect::<Vec<_>>());
        assert_eq!(median(&[]), 0);
        assert_eq!(median(&[30, 10, 20]), 20);
        assert_eq!(median(&[40, 10, 30, 20]), 25);
    }
}
