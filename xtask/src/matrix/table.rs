//! The matrix table: one row per runtime@version and level, one column per rule, each cell
//! judged from the runtime's campaign report (`index.json`; the e2e level's from `normfuzz e2e`,
//! already judged against its baseline) against its baseline of known findings. Pure: it reads
//! JSON into rows (`render.rs` writes them as Markdown and JSON), so it is tested without any
//! runtime.

use std::path::Path;

use anyhow::{Context, Result};
use serde::Deserialize;
use serde_json::Value;

use super::runtime::Runtime;

/// A runtime version's known findings: `[[known]]` entries with an op (default
/// `coerce_tool_result`), a rule id and why the finding is real.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Baseline {
    #[serde(default)]
    pub known: Vec<Known>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Known {
    #[serde(default = "default_op")]
    pub op: String,
    pub rule: String,
    /// The findings it knows and where it was read (`normfuzz conform` matches and checks
    /// them); accepted here, not read.
    #[serde(default, rename = "signature")]
    _signature: serde::de::IgnoredAny,
    #[serde(default, rename = "evidence")]
    _evidence: serde::de::IgnoredAny,
    #[serde(default, rename = "docs")]
    _docs: serde::de::IgnoredAny,
    pub class: Class,
    pub cause: String,
    pub reason: String,
}

// A baseline entry's impact class, read in the runtime's code: the harness's own type, compiled
// here from the same source (std and serde only), as `fs.rs` is in `main.rs`.
#[path = "../../../harness/src/campaign/impact/class.rs"]
#[expect(
    dead_code,
    reason = "`--fail-on` parsing is the harness's: xtask only reads classes"
)]
mod class;
pub use class::Class;

/// One baseline entry as the table prints it: `rule` names the case for an e2e entry.
#[derive(Debug, Clone)]
pub struct Reason {
    pub rule: String,
    pub class: Class,
    pub cause: String,
    pub reason: String,
}

fn default_op() -> String {
    "coerce_tool_result".into()
}

impl Baseline {
    pub fn load(path: &Path) -> Result<Baseline> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read baseline {}", path.display()))?;
        Self::parse(&text).with_context(|| format!("invalid baseline {}", path.display()))
    }

    pub fn parse(text: &str) -> Result<Baseline> {
        Ok(toml::from_str(text)?)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Judged, no gate failure, nothing known.
    Pass,
    /// Gate failures, every one listed in the baseline.
    Known,
    /// A gate failure the baseline does not list: the run fails.
    New,
    /// Listed in the baseline but not reached by this run (a short run may miss it).
    NotReached,
    /// The rule is not judged on the ops the shim offers.
    NotApplicable,
    /// e2e: a baseline entry whose case ran and no longer shows the finding (the run fails).
    Stale,
}

impl State {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            State::Pass => "pass",
            State::Known => "known",
            State::New => "new",
            State::NotReached => "known, not reached",
            State::NotApplicable => "n/a",
            State::Stale => "stale",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Cell {
    pub state: State,
    /// Cases that broke the rule.
    pub hits: u64,
    /// Finding files, relative to the table's folder.
    pub findings: Vec<String>,
}

#[derive(Debug)]
pub struct Row {
    pub label: String,
    pub package: String,
    pub function: String,
    pub cases: u64,
    pub elapsed_ms: u64,
    /// Cases per second while no job was shrinking (`steadyCasesPerSecond`); none for e2e
    /// turns, which are not shrunk, and for a campaign that was always shrinking.
    pub steady_rate: Option<f64>,
    /// The harness's share of the campaign's CPU, its own against the SUT processes'
    /// (`cpu.harnessShare`); none for e2e turns.
    pub harness_cpu: Option<f64>,
    pub divergent: u64,
    /// The runtime's own coverage of its named functions (`index.json`'s `coverage`), as
    /// "lines L/N, branches B/M"; `None` for a run whose SUT reports none.
    pub coverage: Option<String>,
    /// (rule id, cell), in the report's rule order.
    pub cells: Vec<(String, Cell)>,
    /// The baseline's entries, printed under the table.
    pub reasons: Vec<Reason>,
    /// Why the runtime could not be run (install or campaign failure).
    pub error: Option<String>,
}

impl Row {
    /// A row from a campaign's `index.json`, written by `normfuzz conform --baseline` (which
    /// marks each gate finding known or new and lists the entries it did not reach: the one
    /// judgement the matrix, `conform` and a runtime's own CI share); `baseline` gives the
    /// reasons printed under the table; `report` is the report folder relative to the table.
    pub fn from_index(runtime: &Runtime, index: &Value, baseline: &Baseline, report: &str) -> Row {
        let matrix = &index["matrix"];
        let ops: Vec<&str> = strings(&matrix["ops"]);
        let finding = |id: &str| {
            index["findings"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|f| f["id"] == id && f["gate"] == true)
        };
        let file_of = |id: &str| {
            finding(id)
                .and_then(|f| f["file"].as_str())
                .map(|file| format!("{report}/{file}"))
        };
        // New is what fails the run, as `conform` judges it: a gate finding the baseline does
        // not know (none without a standing, a report written without a baseline) of a class
        // in the report's `failOn` (default bug and hardening; a spec finding passes).
        let fail_on: Vec<&str> = match index["failOn"].as_array() {
            Some(classes) => classes.iter().filter_map(Value::as_str).collect(),
            None => vec!["bug", "hardening"],
        };
        let is_new = |id: &str| {
            finding(id).is_some_and(|f| {
                f["baseline"] != "known"
                    && f["class"]
                        .as_str()
                        .is_none_or(|class| fail_on.contains(&class))
            })
        };
        let not_reached = |op: &str, rule: &str| {
            index["baseline"]["notReached"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|k| k["op"] == op && k["rule"] == rule)
        };
        let mut cells = Vec::new();
        for rule in strings(&matrix["rules"]) {
            if rule == "divergence" {
                continue;
            }
            let (mut judged, mut hits, mut findings) = (false, 0, Vec::new());
            let (mut new, mut failed, mut listed) = (false, false, false);
            for op in &ops {
                let cell = &matrix["cells"][rule][op];
                let state = cell["state"].as_str().unwrap_or("n/a");
                judged |= state != "n/a";
                listed |= not_reached(op, rule);
                if state == "fail" {
                    failed = true;
                    new |= strings(&cell["findings"]).into_iter().any(is_new);
                    hits += cell["hits"].as_u64().unwrap_or(0);
                    findings.extend(strings(&cell["findings"]).into_iter().filter_map(file_of));
                }
            }
            let state = match (judged, failed, new, listed) {
                (false, ..) => State::NotApplicable,
                (true, true, true, _) => State::New,
                (true, true, false, _) => State::Known,
                (true, false, _, true) => State::NotReached,
                (true, false, _, false) => State::Pass,
            };
            cells.push((
                rule.to_string(),
                Cell {
                    state,
                    hits,
                    findings,
                },
            ));
        }
        Row {
            label: runtime.label(),
            package: format!("{}@{}", runtime.package, runtime.version),
            function: runtime.function.clone(),
            cases: index["cases"].as_u64().unwrap_or(0),
            elapsed_ms: index["elapsedMs"].as_u64().unwrap_or(0),
            steady_rate: index["steadyCasesPerSecond"].as_f64(),
            harness_cpu: index["cpu"]["harnessShare"].as_f64(),
            divergent: index["perOp"]
                .as_object()
                .into_iter()
                .flat_map(|m| m.values())
                .filter_map(|t| t["divergent"].as_u64())
                .sum(),
            coverage: coverage(&index["coverage"]),
            cells,
            reasons: baseline
                .known
                .iter()
                .map(|k| Reason {
                    // Entries of other ops than the default name theirs, as e2e ones their case.
                    rule: if k.op == default_op() {
                        k.rule.clone()
                    } else {
                        format!("{} ({})", k.rule, k.op)
                    },
                    class: k.class,
                    cause: k.cause.clone(),
                    reason: k.reason.clone(),
                })
                .collect(),
            error: None,
        }
    }

    /// The e2e level's row from `normfuzz e2e`'s `index.json` (each finding already marked
    /// known or new against the e2e baseline, stale entries listed); `report` as above.
    pub fn from_e2e_index(runtime: &Runtime, index: &Value, report: &str) -> Row {
        let findings: Vec<&Value> = index["findings"].as_array().into_iter().flatten().collect();
        let stale: Vec<&Value> = index["stale"].as_array().into_iter().flatten().collect();
        // An SDK's adapter (`[output] directives = false`) delivers nothing: S3 and D3 judge
        // deliveries only.
        let delivers = index["adapter"]
            .as_str()
            .and_then(|path| std::fs::read_to_string(path).ok())
            .and_then(|text| toml::from_str::<toml::Table>(&text).ok())
            .and_then(|adapter| adapter.get("output")?.get("directives")?.as_bool())
            .unwrap_or(true);
        // A fallback run (`--scenario fallback`) judges the retry rules instead, a vision run
        // (`--scenario vision`) what its screenshot's tool result brought the agent model.
        let scenario = index["scenario"].as_str().unwrap_or_default();
        let fallback = scenario == "fallback";
        let vision = scenario == "vision";
        let rules: &[&str] = match scenario {
            "fallback" => &FALLBACK_RULES,
            "vision" => &VISION_RULES,
            _ => &E2E_RULES,
        };
        let cells = rules
            .iter()
            .map(|&rule| {
                let hit: Vec<&&Value> = findings.iter().filter(|f| f["rule"] == rule).collect();
                let state = if hit.iter().any(|f| f["known"] != true) {
                    State::New
                } else if stale.iter().any(|s| s["rule"] == rule) {
                    State::Stale
                } else if hit.is_empty() && !delivers && DELIVERY_RULES.contains(&rule) {
                    State::NotApplicable
                } else if hit.is_empty() {
                    State::Pass
                } else {
                    State::Known
                };
                let files = hit.iter().filter_map(|f| {
                    let case = f["case"].as_str()?;
                    let layer = f["layer"].as_str()?;
                    Some(format!("{report}/findings/{case}--{rule}--{layer}.json"))
                });
                let cell = Cell {
                    state,
                    hits: hit.len() as u64,
                    findings: files.collect(),
                };
                (rule.to_string(), cell)
            })
            .collect();
        let cases: Vec<&Value> = index["cases"].as_array().into_iter().flatten().collect();
        let errors: Vec<&str> = cases.iter().filter_map(|c| c["error"].as_str()).collect();
        let baseline = index["baseline"]
            .as_str()
            .and_then(|path| std::fs::read_to_string(path).ok())
            .and_then(|text| toml::from_str::<E2eBaseline>(&text).ok())
            .unwrap_or_default();
        Row {
            label: if fallback || vision {
                format!("{} (e2e {scenario})", runtime.label())
            } else {
                format!("{} (e2e)", runtime.label())
            },
            package: format!("{}@{}", runtime.package, runtime.version),
            function: if fallback {
                format!(
                    "a turn whose primary model fails and falls back to another provider \
                     (harness/runtimes/{}/e2e.toml [fallback])",
                    runtime.name
                )
            } else if vision {
                format!(
                    "a browser screenshot of a hostile page, described by a vision model that \
                     answers, fails or is absent (harness/runtimes/{}/e2e.toml [vision])",
                    runtime.name
                )
            } else {
                format!(
                    "one agent turn through the public API (harness/runtimes/{}/e2e.toml)",
                    runtime.name
                )
            },
            cases: cases.len() as u64,
            elapsed_ms: index["elapsedMs"].as_u64().unwrap_or(0),
            steady_rate: None,
            harness_cpu: None,
            divergent: 0,
            coverage: None,
            cells,
            // The entries of this row's rules: a fallback row lists the retry rules' entries.
            reasons: baseline
                .known
                .into_iter()
                .filter(|k| rules.contains(&k.rule.as_str()))
                // The vision cases' entries are the vision row's alone.
                .filter(|k| k.case.starts_with(VISION_CASE_PREFIX) == vision)
                .map(|k| Reason {
                    rule: format!("{} ({})", k.rule, k.case),
                    class: k.class,
                    cause: k.cause,
                    reason: k.reason,
                })
                .collect(),
            error: errors.first().map(|first| {
                format!(
                    "{} of {} cases could not be judged: {first}",
                    errors.len(),
                    cases.len()
                )
            }),
        }
    }

    /// The row of the real servers' results (`conform --inputs`), judged as the unit row is;
    /// the baseline's reasons are printed once, under the unit row.
    pub fn from_real_servers_index(
        runtime: &Runtime,
        index: &Value,
        baseline: &Baseline,
        report: &str,
    ) -> Row {
        Row {
            label: format!("{} {REAL_SERVERS}", runtime.label()),
            reasons: Vec::new(),
            ..Row::from_index(runtime, index, baseline, report)
        }
    }

    pub fn failed_real_servers(runtime: &Runtime, error: &str) -> Row {
        Row {
            label: format!("{} {REAL_SERVERS}", runtime.label()),
            ..Row::failed(runtime, error)
        }
    }

    pub fn failed_e2e(runtime: &Runtime, error: &str) -> Row {
        Row {
            label: format!("{} (e2e)", runtime.label()),
            ..Row::failed(runtime, error)
        }
    }

    pub fn failed(runtime: &Runtime, error: &str) -> Row {
        Row {
            label: runtime.label(),
            package: format!("{}@{}", runtime.package, runtime.version),
            function: runtime.function.clone(),
            cases: 0,
            elapsed_ms: 0,
            steady_rate: None,
            harness_cpu: None,
            divergent: 0,
            coverage: None,
            cells: Vec::new(),
            reasons: Vec::new(),
            error: Some(error.to_string()),
        }
    }

    /// No new or stale finding and the runtime ran.
    pub fn green(&self) -> bool {
        self.error.is_none()
            && self
                .cells
                .iter()
                .all(|(_, c)| !matches!(c.state, State::New | State::Stale))
    }

    pub fn cases_per_second(&self) -> f64 {
        if self.elapsed_ms == 0 {
            0.0
        } else {
            self.cases as f64 * 1000.0 / self.elapsed_ms as f64
        }
    }

    pub fn summary(&self) -> String {
        if let Some(err) = &self.error {
            return format!("{}: not run: {err}", self.label);
        }
        let count = |s: State| self.cells.iter().filter(|(_, c)| c.state == s).count();
        format!(
            "{}: {} cases ({:.0}/s), {} rules pass, {} known, {} new",
            self.label,
            self.cases,
            self.cases_per_second(),
            count(State::Pass) + count(State::NotReached),
            count(State::Known),
            count(State::New)
        )
    }
}

/// The label mark of a runtime's row of real servers' results.
const REAL_SERVERS: &str = "(real servers)";

/// The rules the e2e judge checks on every turn that ran (harness/src/e2e/checks.rs:
/// the model's view and the delivered reply; checks/writes.rs: the turn's writes; driver/case.rs:
/// B1 and the mocks' verdicts).
const E2E_RULES: [&str; 10] = [
    "S1", "S3", "S5", "D3", "F1", "F2", "F4", "F5", "B1", "provider",
];

/// The rules a fallback run judges: images across providers (R3) and on the same provider
/// (R5, R2), the failed attempt's tool names (P2, P3), a completed tool run again (P4), writes
/// outside its folders, and what the providers refused.
const FALLBACK_RULES: [&str; 9] = ["R2", "R3", "R5", "P2", "P3", "P4", "S5", "B1", "provider"];

/// The rules a vision run judges (checks/vision.rs: the agent model's view of the screenshot's
/// tool result; the reply's delivery, writes and the turn as in every e2e run).
const VISION_RULES: [&str; 8] = ["S1", "S2", "F1", "S3", "D3", "S5", "B1", "provider"];

/// The ids of the vision scenario's cases begin so (`harness/src/e2e/vision.rs`).
const VISION_CASE_PREFIX: &str = "vision-";

/// The e2e rules judged only on what a runtime delivered (media).
const DELIVERY_RULES: [&str; 2] = ["S3", "D3"];

/// The e2e baseline's entries, for the reasons printed under the table (`normfuzz e2e` judges
/// with it; other fields are not needed here).
#[derive(Debug, Default, Deserialize)]
struct E2eBaseline {
    #[serde(default)]
    known: Vec<E2eKnown>,
}

#[derive(Debug, Deserialize)]
struct E2eKnown {
    case: String,
    rule: String,
    class: Class,
    cause: String,
    reason: String,
}

/// "lines L/N, branches B/M" over a report's coverage units (`?` for a branch count its SUT
/// never learned), or `None` when the report has none.
fn coverage(units: &Value) -> Option<String> {
    let units = units.as_array()?;
    let sum = |key: &str| units.iter().filter_map(|u| u[key].as_u64()).sum::<u64>();
    let branches = match units.iter().all(|u| u["branches"].is_u64()) {
        true => sum("branches").to_string(),
        false => "?".into(),
    };
    Some(format!(
        "lines {}/{}, branches {}/{branches}",
        sum("linesReached"),
        sum("lines"),
        sum("branchesReached")
    ))
}

fn strings(value: &Value) -> Vec<&str> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::Install;
    use crate::matrix::install::Ecosystem;
    use crate::matrix::render::{markdown, to_json};
    use serde_json::json;
    use std::collections::BTreeSet;

    fn runtime() -> Runtime {
        Runtime {
            name: "demo".into(),
            package: "demo-pkg".into(),
            version: "1.2.3".into(),
            function: "`convert` in demo.js".into(),
            install: Install::Packages {
                ecosystem: Ecosystem::Npm,
                packages: vec!["demo-pkg@1.2.3".into()],
                python: None,
            },
            command: vec!["node".into()],
            baseline: "demo.baseline.toml".into(),
            handshake_timeout_ms: None,
            coverage: vec!["demo.js:convert".into()],
        }
    }

    /// A campaign index as `normfuzz conform` writes it: S1 and S2 failed, F1 passed, the
    /// retry rule R1 is not judged on coerce_tool_result; no baseline (every finding new).
    fn index() -> Value {
        index_against(&[], &[])
    }

    /// The same index judged against a baseline that knows the findings `known` (ids) and did
    /// not reach the rules `not_reached` on coerce_tool_result.
    fn index_against(known: &[&str], not_reached: &[&str]) -> Value {
        let standing = |id: &str| if known.contains(&id) { "known" } else { "new" };
        let not_reached: Vec<Value> = not_reached
            .iter()
            .map(|rule| json!({"op": "coerce_tool_result", "rule": rule}))
            .collect();
        json!({
            "baseline": {"notReached": not_reached},
            "cases": 2000, "elapsedMs": 1000, "steadyCasesPerSecond": 2500.0,
            "cpu": {"harnessMs": 130, "sutMs": 870, "harnessShare": 0.13},
            "perOp": {"coerce_tool_result": {"cases": 2000, "divergent": 7}},
            "coverage": [{"name": "demo.js:convert", "file": "/x/demo.js", "lines": 10,
                "linesReached": 7, "branches": 4, "branchesReached": 3, "unreached": [1, 2, 3]}],
            "matrix": {
                "ops": ["coerce_tool_result"],
                "rules": ["S1", "S2", "F1", "R1", "divergence"],
                "cells": {
                    "S1": {"coerce_tool_result": {"state": "fail", "hits": 3, "findings": ["c-S1-a"]}},
                    "S2": {"coerce_tool_result": {"state": "fail", "hits": 9, "findings": ["c-S2-a", "c-S2-b"]}},
                    "F1": {"coerce_tool_result": {"state": "pass", "hits": 0, "findings": []}},
                    "R1": {"coerce_tool_result": {"state": "n/a", "hits": 0, "findings": []}},
                    "divergence": {"coerce_tool_result": {"state": "divergence", "hits": 7, "findings": ["c-d"]}}
                }
            },
            "findings": [
                {"id": "c-S1-a", "gate": true, "file": "findings/c-S1-a.json", "baseline": standing("c-S1-a")},
                {"id": "c-S2-a", "gate": true, "file": "findings/c-S2-a.json", "baseline": standing("c-S2-a")},
                {"id": "c-S2-b", "gate": true, "file": "findings/c-S2-b.json", "baseline": standing("c-S2-b")},
                {"id": "c-d", "gate": false, "file": "findings/c-d.json"}
            ]
        })
    }

    #[test]
    fn cells_are_judged_against_the_baseline() {
        let baseline = Baseline::parse(
            "[[known]]\nrule = \"S2\"\nclass = \"bug\"\ncause = \"c\"\nreason = \"r\"\n\n\
             [[known]]\nrule = \"F1\"\nclass = \"bug\"\ncause = \"c\"\nreason = \"r\"\n",
        )
        .unwrap();
        let judged = index_against(&["c-S2-a", "c-S2-b"], &["F1"]);
        let row = Row::from_index(&runtime(), &judged, &baseline, "demo-1.2.3");
        let state = |rule: &str| row.cells.iter().find(|(r, _)| r == rule).unwrap().1.state;
        assert_eq!(state("S1"), State::New);
        assert_eq!(state("S2"), State::Known);
        assert_eq!(state("F1"), State::NotReached);
        assert_eq!(state("R1"), State::NotApplicable);
        assert!(row.cells.iter().all(|(r, _)| r != "divergence"));
        assert!(!row.green(), "a new S1 finding fails the row");
        assert_eq!(row.divergent, 7);
        assert_eq!(row.coverage.as_deref(), Some("lines 7/10, branches 3/4"));
        let mut without = judged.clone();
        without["coverage"] = Value::Null;
        let row_without = Row::from_index(&runtime(), &without, &baseline, "demo-1.2.3");
        assert_eq!(row_without.coverage, None, "no coverage reported");
        without["coverage"] =
            json!([{"linesReached": 1, "lines": 2, "branchesReached": 0, "branches": null}]);
        let unknown = Row::from_index(&runtime(), &without, &baseline, "demo-1.2.3");
        assert_eq!(unknown.coverage.as_deref(), Some("lines 1/2, branches 0/?"));
        assert_eq!(row.cases_per_second(), 2000.0);
        let s2 = &row.cells.iter().find(|(r, _)| r == "S2").unwrap().1;
        assert_eq!(s2.hits, 9);
        assert_eq!(
            s2.findings,
            [
                "demo-1.2.3/findings/c-S2-a.json",
                "demo-1.2.3/findings/c-S2-b.json"
            ]
        );

        let all_known = Baseline::parse(
            "[[known]]\nrule = \"S1\"\nclass = \"hardening\"\ncause = \"c\"\nreason = \"r\"\n\
             [[known]]\nrule = \"S2\"\nclass = \"bug\"\ncause = \"c\"\nreason = \"r\"\n",
        )
        .unwrap();
        let judged = index_against(&["c-S1-a", "c-S2-a", "c-S2-b"], &[]);
        assert!(Row::from_index(&runtime(), &judged, &all_known, "x").green());

        // A spec finding no entry lists passes, as in `conform`; unless the run failed on spec.
        let mut spec = index_against(&["c-S2-a", "c-S2-b"], &[]);
        spec["findings"][0]["class"] = json!("spec");
        assert!(Row::from_index(&runtime(), &spec, &all_known, "x").green());
        spec["failOn"] = json!(["bug", "hardening", "spec"]);
        assert!(!Row::from_index(&runtime(), &spec, &all_known, "x").green());
    }

    /// The real servers' row is judged as the unit row, and leaves the baseline's reasons to it.
    #[test]
    fn the_real_servers_row_is_the_unit_judgement_without_the_reasons() {
        let baseline = Baseline::parse(
            "[[known]]\nrule = \"S2\"\nclass = \"bug\"\ncause = \"c\"\nreason = \"r\"\n",
        )
        .unwrap();
        let judged = index_against(&["c-S2-a", "c-S2-b"], &[]);
        let unit = Row::from_index(&runtime(), &judged, &baseline, "x");
        let real = Row::from_real_servers_index(&runtime(), &judged, &baseline, "x");
        assert_eq!(real.label, "demo@1.2.3 (real servers)");
        assert_eq!(real.reasons.len(), 0);
        assert_eq!(unit.reasons.len(), 1);
        let states = |row: &Row| {
            row.cells
                .iter()
                .map(|(r, c)| (r.clone(), c.state))
                .collect::<Vec<_>>()
        };
        assert_eq!(states(&real), states(&unit));
        assert_eq!(
            Row::failed_real_servers(&runtime(), "e").label,
            "demo@1.2.3 (real servers)"
        );
    }

    /// `normfuzz e2e`'s index: an F5 finding known, an S1 new, a stale B1 entry.
    #[test]
    fn a_fallback_run_is_a_row_of_its_own_with_the_retry_rules() {
        let dir = tempfile::tempdir().unwrap();
        let baseline = dir.path().join("b.toml");
        std::fs::write(
            &baseline,
            "[[known]]\ncase = \"fb\"\nrule = \"R3\"\nlayer = \"model\"\nclass = \"bug\"\n\
             cause = \"keeps-images\"\nreason = \"r\"\n[[known]]\ncase = \"a\"\nrule = \"F5\"\n\
             layer = \"model\"\nclass = \"bug\"\ncause = \"c\"\nreason = \"r\"\n",
        )
        .unwrap();
        let index = json!({
            "elapsedMs": 4000, "scenario": "fallback", "baseline": baseline,
            "cases": [{"id": "fb", "error": null}],
            "findings": [{"case": "fb", "rule": "R3", "layer": "model", "known": true}],
            "stale": [],
        });
        let row = Row::from_e2e_index(&runtime(), &index, "demo-1.2.3-e2e-fallback");
        let state = |rule: &str| row.cells.iter().find(|(r, _)| r == rule).map(|c| c.1.state);
        assert_eq!(row.label, "demo@1.2.3 (e2e fallback)");
        assert_eq!(state("R3"), Some(State::Known));
        assert_eq!(state("P4"), Some(State::Pass));
        assert_eq!(
            state("F5"),
            None,
            "the tool-result rules are the other row's"
        );
        assert!(row.green());
        assert_eq!(row.reasons.len(), 1, "only the retry rules' entries");
        assert_eq!(row.reasons[0].rule, "R3 (fb)");
    }

    /// A vision run's row holds the vision cases' entries, the tool-result row the others.
    #[test]
    fn a_vision_run_is_a_row_of_its_own_with_its_cases_entries() {
        let dir = tempfile::tempdir().unwrap();
        let baseline = dir.path().join("b.toml");
        std::fs::write(
            &baseline,
            "[[known]]\ncase = \"vision-x\"\nrule = \"S1\"\nlayer = \"model\"\n\
             class = \"hardening\"\ncause = \"lf-only\"\nreason = \"r\"\n[[known]]\n\
             case = \"a\"\nrule = \"S1\"\nlayer = \"model\"\nclass = \"bug\"\ncause = \"c\"\n\
             reason = \"r\"\n",
        )
        .unwrap();
        let index = |scenario: Value, finding: &str| {
            json!({
                "elapsedMs": 4000, "scenario": scenario, "baseline": baseline,
                "cases": [{"id": finding, "error": null}],
                "findings": [{"case": finding, "rule": "S1", "layer": "model", "known": true}],
                "stale": [],
            })
        };
        let row = Row::from_e2e_index(&runtime(), &index(json!("vision"), "vision-x"), "v");
        let state =
            |row: &Row, rule: &str| row.cells.iter().find(|(r, _)| r == rule).map(|c| c.1.state);
        assert_eq!(row.label, "demo@1.2.3 (e2e vision)");
        assert_eq!(state(&row, "S1"), Some(State::Known));
        assert_eq!(state(&row, "S2"), Some(State::Pass));
        assert_eq!(
            state(&row, "F5"),
            None,
            "the MCP result's rules are the other row's"
        );
        assert_eq!(row.reasons.len(), 1);
        assert_eq!(row.reasons[0].rule, "S1 (vision-x)");
        let other = Row::from_e2e_index(&runtime(), &index(Value::Null, "a"), "e");
        assert_eq!(other.reasons.len(), 1);
        assert_eq!(other.reasons[0].rule, "S1 (a)");
    }

    #[test]
    fn e2e_cells_follow_the_e2e_judgement() {
        let index = json!({
            "elapsedMs": 4000, "baseline": null,
            "cases": [{"id": "a", "error": null}, {"id": "b", "error": null}],
            "findings": [{"case": "a", "rule": "F5", "layer": "model", "known": true},
                         {"case": "b", "rule": "S1", "layer": "payload", "known": false}],
            "stale": [{"case": "b", "rule": "B1", "reason": "r"}],
        });
        let row = Row::from_e2e_index(&runtime(), &index, "demo-1.2.3-e2e");
        let cell = |rule: &str| &row.cells.iter().find(|(r, _)| r == rule).unwrap().1;
        assert_eq!(row.label, "demo@1.2.3 (e2e)");
        assert_eq!(cell("F5").state, State::Known);
        assert_eq!(
            cell("F5").findings,
            ["demo-1.2.3-e2e/findings/a--F5--model.json"]
        );
        assert_eq!(cell("S1").state, State::New);
        assert_eq!(cell("B1").state, State::Stale);
        assert_eq!(cell("F1").state, State::Pass);
        assert_eq!(cell("S3").state, State::Pass);
        assert!(!row.green());
        // An SDK's adapter delivers nothing: S3 and D3 are not judged.
        let dir = tempfile::tempdir().unwrap();
        let adapter = dir.path().join("e2e.toml");
        std::fs::write(&adapter, "[output]\ndirectives = false\n").unwrap();
        let mut sdk = index.clone();
        sdk["adapter"] = json!(adapter);
        let row = Row::from_e2e_index(&runtime(), &sdk, "x");
        let state = |rule: &str| row.cells.iter().find(|(r, _)| r == rule).unwrap().1.state;
        assert_eq!(
            (state("S3"), state("D3")),
            (State::NotApplicable, State::NotApplicable)
        );
        assert_eq!(state("F1"), State::Pass);
        let mut green = index.clone();
        green["findings"][1]["known"] = json!(true);
        green["stale"] = json!([]);
        assert!(Row::from_e2e_index(&runtime(), &green, "x").green());
        green["cases"][1]["error"] = json!("the sandboxed turn failed");
        let broken = Row::from_e2e_index(&runtime(), &green, "x");
        assert!(!broken.green());
        assert!(
            broken
                .error
                .unwrap()
                .starts_with("1 of 2 cases could not be judged")
        );
    }

    #[test]
    fn markdown_and_json_link_every_finding() {
        let row = Row::from_index(&runtime(), &index(), &Baseline::default(), "demo-1.2.3");
        let failed = Row::failed(&runtime(), "npm install failed\nmore");
        let known = Baseline::parse(
            "[[known]]\nrule = \"F1\"\nclass = \"bug\"\ncause = \"convert-drops-images\"\n\
             reason = \"drops images. More detail\"\n[[known]]\nrule = \"F2\"\nclass = \"bug\"\n\
             cause = \"convert-drops-images\"\nreason = \"r\"\n[[known]]\nrule = \"S1\"\n\
             class = \"hardening\"\ncause = \"convert-keeps-text\"\nreason = \"r\"\n",
        )
        .unwrap();
        let with_reason = Row::from_index(&runtime(), &index(), &known, "demo-1.2.3");
        let md = markdown(
            &[row, failed, with_reason],
            "2026-11-24",
            "cargo xtask matrix --cases 5",
        );
        assert!(md.contains(
            "- demo@1.2.3 F1 [bug, `convert-drops-images`]: drops images. More detail\n"
        ));
        // The page leads with the distinct bugs: one cause, two rules, its harm.
        assert!(md.starts_with("# Distinct bugs per runtime"), "{md}");
        assert!(md.contains("## demo-pkg@1.2.3: 1 bugs (2 entries), 1 hardening, 0 spec\n"));
        assert!(
            md.contains("- `convert-drops-images` (F1, F2): drops images.\n"),
            "{md}"
        );
        assert!(md.contains("Made on 2026-11-24 by `cargo xtask matrix --cases 5`"));
        assert!(md.contains(
            "| runtime | cases | cases/s | steady cases/s | harness CPU | divergent | runtime \
             coverage | S1 | S2 | F1 | R1 |"
        ));
        assert!(md.contains(
            "| demo@1.2.3 | 2000 | 2000 | 2500 | 13% | 7 | lines 7/10, branches 3/4 | **NEW** (3 cases) [1](demo-1.2.3/findings/c-S1-a.json) \
             | **NEW** (9 cases) [1](demo-1.2.3/findings/c-S2-a.json) \
             [2](demo-1.2.3/findings/c-S2-b.json) | pass | n/a |"
        ));
        assert!(md.contains("| demo@1.2.3 | not run: npm install failed |"));
        // Every table row has as many cells as the header.
        let widths: BTreeSet<usize> = md
            .lines()
            .take_while(|l| !l.contains("function under test"))
            .filter(|l| l.starts_with('|'))
            .map(|l| l.matches('|').count() - l.matches("\\|").count())
            .collect();
        assert_eq!(widths.len(), 1, "{md}");

        let row = Row::from_index(&runtime(), &index(), &Baseline::default(), "demo-1.2.3");
        let value = to_json(&[row], "2026-11-24", "c");
        assert_eq!(value["runtimes"][0]["cells"]["S1"]["state"], "new");
        assert_eq!(value["runtimes"][0]["green"], false);
        assert_eq!(value["runtimes"][0]["harnessCpuShare"], 0.13);
        assert_eq!(value["rules"], json!(["S1", "S2", "F1", "R1"]));
    }
}
