//! `junit.xml` for CI test reporters (GitHub, GitLab, Jenkins), written with `quick-junit`.
//!
//! A campaign is one test suite per op the SUT was tested on and one test case per rule judged
//! on that op, named `<op>/<rule>` with class name `normfuzz.<op>`: the same names on every
//! run, so a CI keeps each rule's history (as Schemathesis and Autobahn keep stable case ids).
//! `assertions` is the number of cases the rule was judged on.
//!
//! A broken rule is a `<failure>` typed with the rule id: message `kind: detail`, body the
//! minimal input, both answers and the repro command. A divergence (an answer that breaks no
//! rule but differs from the reference) is a `<failure type="divergence">` only under
//! `--strict`, where it fails the run. Otherwise its test case passes, with the divergences in
//! `<system-out>` and a `verdict=divergence` property: the run's exit status says pass, and a
//! JUnit failure would contradict it, while `<skipped>` would claim the check did not run (and
//! many reporters hide skips).
//!
//! A fuzz run is one suite with one test case per target: a crash is a `<failure>`, a log that
//! ends before libFuzzer's `Done` an `<error>` (the target was not shown to be clean).

use std::time::Duration;

use anyhow::{Context, Result};
use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};
use serde::Serialize;

use super::libfuzzer::{FuzzRun, Status};
use super::matrix::{Cell, State};
use super::view::{CampaignView, E2eView};
use crate::campaign::Finding;
use crate::rule::Rule;

/// Bytes of each JSON value and detail in a failure body; the finding's file has all of it.
const BODY_VALUE_MAX: usize = 4096;
/// Bytes of a failure message (one line in most reporters).
const MESSAGE_MAX: usize = 300;

fn to_xml(report: &Report) -> Result<String> {
    report.to_string().context("cannot write the JUnit XML")
}

pub fn campaign(campaign: &CampaignView<'_>) -> Result<String> {
    let outcome = campaign.outcome;
    let mut report = Report::new("normfuzz conform");
    report.set_time(Duration::from_millis(
        u64::try_from(outcome.elapsed_ms).unwrap_or(u64::MAX),
    ));
    for &op in &campaign.matrix.ops {
        let mut suite = TestSuite::new(op.as_str());
        suite.add_properties([
            Property::new("sut", &outcome.sut),
            Property::new("sut_command", campaign.sut_command),
            Property::new("seed", outcome.seed.to_string()),
            Property::new("strict", campaign.strict.to_string()),
        ]);
        for (rule, cell) in campaign.matrix.judged(op) {
            let mut case = TestCase::new(format!("{op}/{rule}"), status(campaign, rule, cell));
            case.set_classname(format!("normfuzz.{op}"))
                .set_assertions(usize::try_from(cell.cases).unwrap_or(usize::MAX));
            if cell.state == State::Divergence && !campaign.strict {
                case.add_property(Property::new("verdict", "divergence"));
                case.set_system_out(divergence_note(campaign, cell));
            }
            for class in classes(cell) {
                case.add_property(Property::new("impact", class.as_str()));
            }
            suite.add_test_case(case);
        }
        report.add_test_suite(suite);
    }
    to_xml(&report)
}

fn status(campaign: &CampaignView<'_>, rule: Rule, cell: &Cell<'_>) -> TestCaseStatus {
    let outcome = campaign.outcome;
    let failing = match cell.state {
        // Only findings that fail the campaign fail the cell: known ones and those of a class
        // `--fail-on` does not name are listed, not failed.
        State::Fail => {
            cell.findings.is_empty()
                || cell
                    .findings
                    .iter()
                    .any(|f| outcome.fails(f, campaign.strict))
        }
        State::Divergence => campaign.strict,
        State::Pass | State::NotApplicable => false,
    };
    if !failing {
        return TestCaseStatus::success();
    }
    let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
    status.set_type(rule.as_str());
    let message = match cell.findings.as_slice() {
        [] => format!(
            "{} violations in {} cases; no minimal case: another rule was reported first on \
             these cases",
            cell.hits, cell.cases
        ),
        [first, rest @ ..] => {
            let class = first
                .impact
                .as_ref()
                .map_or(String::new(), |i| format!("[{}] ", i.class));
            let mut message = format!("{class}{}: {}", first.kind, first.detail.replace('\n', "⏎"));
            message = crate::excerpt::bounded(&message, MESSAGE_MAX).into_owned();
            if !rest.is_empty() {
                message.push_str(&format!(" (and {} more kinds)", rest.len()));
            }
            message
        }
    };
    status.set_message(message);
    if !cell.findings.is_empty() {
        status.set_description(findings_body(campaign, cell));
    }
    status
}

/// The impact classes of a cell's findings, each once.
fn classes(cell: &Cell<'_>) -> Vec<crate::campaign::impact::Class> {
    let mut classes: Vec<_> = cell
        .findings
        .iter()
        .filter_map(|f| f.impact.as_ref().map(|i| i.class))
        .collect();
    classes.sort();
    classes.dedup();
    classes
}

fn divergence_note(campaign: &CampaignView<'_>, cell: &Cell<'_>) -> String {
    format!(
        "{} of {} cases differ from the reference; not a gate failure without --strict.\n\n{}",
        cell.hits,
        cell.cases,
        findings_body(campaign, cell)
    )
}

fn findings_body(campaign: &CampaignView<'_>, cell: &Cell<'_>) -> String {
    cell.findings
        .iter()
        .map(|f| finding_body(f, campaign.repro(f)))
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// What a reader of the CI log needs to see and replay one finding.
fn finding_body(f: &Finding, repro: &str) -> String {
    format!(
        "{id} ({hits} cases): {kind}\ndetail: {detail}\nminimal input:\n{input}\nreference answer:\n{reference}\nSUT answer:\n{sut}\nrepro: {repro}",
        id = f.id,
        hits = f.hits,
        kind = f.kind,
        detail = crate::excerpt::bounded(&f.detail, BODY_VALUE_MAX),
        input = shown_json(&f.input),
        reference = shown_json(&f.reference),
        sut = shown_json(&f.sut),
    )
}

fn shown_json(value: &impl Serialize) -> String {
    let json = super::pretty::to_vec(value).map_or_else(
        |e| format!("(not JSON: {e})"),
        |bytes| String::from_utf8_lossy(&bytes).into_owned(),
    );
    crate::excerpt::bounded(&json, BODY_VALUE_MAX).into_owned()
}

pub fn fuzz(runs: &[FuzzRun]) -> Result<String> {
    let mut report = Report::new("normfuzz fuzz");
    let mut suite = TestSuite::new("fuzz");
    for run in runs {
        let status = match (&run.status, &run.crash) {
            (Status::Crashed, Some(crash)) => {
                let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
                status
                    .set_type("crash")
                    .set_message(crate::excerpt::bounded(&crash.reason, MESSAGE_MAX))
                    .set_description(format!(
                        "artifact: {}\nrepro: {}\nlog: {}\n\n{}",
                        crash.artifact.as_deref().unwrap_or("none written"),
                        run.repro().unwrap_or_default(),
                        run.log,
                        crash.excerpt
                    ));
                status
            }
            (Status::Clean, _) => TestCaseStatus::success(),
            _ => {
                let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
                status.set_type("incomplete").set_message(format!(
                    "{} ends before libFuzzer's final `Done` line: interrupted, or it never \
                     started fuzzing",
                    run.log
                ));
                status
            }
        };
        let mut case = TestCase::new(&run.target, status);
        case.set_classname("normfuzz.fuzz")
            .add_property(Property::new("executions", run.execs.to_string()));
        if let Some(seconds) = run.seconds {
            case.set_time(Duration::from_secs(seconds));
        }
        if let Some(cov) = run.last().and_then(|s| s.cov) {
            case.add_property(Property::new("cov", cov.to_string()));
        }
        suite.add_test_case(case);
    }
    report.add_test_suite(suite);
    to_xml(&report)
}

/// An e2e run: one suite, one test case per case id (`e2e/<case>`). A new finding of a class
/// `--fail-on` names or an unjudgeable case fails it; the other findings (known ones, in the
/// runtime's baseline, and new ones of other classes) pass with their reasons in `<system-out>`; a stale baseline entry is a failing `baseline/<case>/<rule>` case.
pub fn e2e(view: &E2eView) -> Result<String> {
    let mut report = Report::new("normfuzz e2e");
    let mut suite = TestSuite::new(format!("e2e {}", view.runtime));
    for c in &view.cases {
        let new: Vec<_> = c.findings.iter().filter(|f| f.fails).collect();
        let status = if let Some(error) = &c.error {
            let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
            status
                .set_type("error")
                .set_message(crate::excerpt::bounded(error, MESSAGE_MAX));
            status
        } else if let Some(first) = new.first() {
            let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
            status
                .set_type(first.rule.as_str())
                .set_message(crate::excerpt::bounded(
                    &new.iter()
                        .map(|f| format!("{}: {}", f.label(), f.reason))
                        .collect::<Vec<_>>()
                        .join("; "),
                    MESSAGE_MAX,
                ))
                .set_description(
                    new.iter()
                        .map(|f| {
                            format!(
                                "{} {}\nevidence: {}\nrepro: {}\nfile: {}",
                                f.label(),
                                f.reason,
                                shown_json(&f.evidence),
                                f.repro,
                                f.file
                            )
                        })
                        .collect::<Vec<_>>()
                        .join("\n\n"),
                );
            status
        } else {
            TestCaseStatus::success()
        };
        let mut case = TestCase::new(format!("e2e/{}", c.id), status);
        case.set_classname(format!("normfuzz.e2e.{}", c.api))
            .set_time(Duration::from_millis(c.elapsed_ms));
        let passing: Vec<String> = c
            .findings
            .iter()
            .filter(|f| !f.fails)
            .map(|f| format!("{} {}: {}", f.standing(), f.label(), f.reason))
            .collect();
        if !passing.is_empty() {
            case.set_system_out(passing.join("\n"));
        }
        suite.add_test_case(case);
    }
    for (case, rule, reason) in &view.stale {
        let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
        status
            .set_type("stale")
            .set_message(format!("baseline entry no longer reproduces: {reason}"));
        let mut tc = TestCase::new(format!("baseline/{case}/{rule}"), status);
        tc.set_classname("normfuzz.e2e.baseline");
        suite.add_test_case(tc);
    }
    report.add_test_suite(suite);
    to_xml(&report)
}
