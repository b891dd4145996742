//! `results.sarif`: a campaign's findings as SARIF 2.1.0, which GitHub code scanning (and most
//! scanners' viewers) read. One result per finding: its rule, impact class, minimal input and
//! repro; `partialFingerprints` carries the finding's stable id so the same finding is one alert
//! across runs, and with a baseline `baselineState` says new or unchanged. Written with
//! serde_json rather than a SARIF crate: the one Rust crate (serde-sarif) generates its types
//! from the schema at build time with a code generator; the ~20 fields used here are checked
//! against the OASIS schema itself instead (`tests/it/report_schemas.rs`).

use serde_json::{Value, json};

use super::view::{CampaignView, finding_file};
use crate::campaign::Finding;
use crate::campaign::Standing;

const SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";
/// Longest minimal input a result carries (the finding file has all of it).
const INPUT_MAX: usize = 2048;

pub(super) fn campaign(campaign: &CampaignView<'_>) -> Value {
    let outcome = campaign.outcome;
    let mut rules: Vec<_> = outcome.findings.iter().map(|f| f.rule).collect();
    rules.sort();
    rules.dedup();
    // Code scanning places every result at a file of the repository: the SUT's own script,
    // else the finding file.
    let sut_file = campaign.sut_file();
    json!({
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "normfuzz",
                "version": env!("CARGO_PKG_VERSION"),
                "rules": rules.iter().map(|r| json!({
                    "id": r.as_str(),
                    "shortDescription": {"text": r.summary()},
                    "properties": {"category": format!("{:?}", r.class()).to_lowercase()},
                })).collect::<Vec<_>>(),
            }},
            "invocations": [{
                "executionSuccessful": true,
                "commandLine": campaign.sut_command,
            }],
            "results": outcome.findings.iter().map(|f| {
                let rule_index = rules.iter().position(|r| *r == f.rule);
                result(campaign, f, rule_index, sut_file)
            }).collect::<Vec<_>>(),
        }],
    })
}

fn result(
    campaign: &CampaignView<'_>,
    f: &Finding,
    rule_index: Option<usize>,
    sut_file: Option<&str>,
) -> Value {
    let outcome = campaign.outcome;
    // error: fails the run; warning: a gate finding kept green (known, or a class not failed
    // on); note: a divergence.
    let level = if outcome.fails(f, campaign.strict) {
        "error"
    } else if f.gate {
        "warning"
    } else {
        "note"
    };
    let class = f.impact.as_ref().map(|i| i.class.as_str());
    let mut message = format!("{} on {}: {}: {}", f.rule, f.op, f.kind, f.detail);
    if let Some(class) = class {
        message = format!("[{class}] {message}");
    }
    let uri = sut_file.map_or_else(|| finding_file(f), str::to_string);
    let input = crate::excerpt::bounded(&f.input.to_string(), INPUT_MAX).into_owned();
    let mut value = json!({
        "ruleId": f.rule.as_str(),
        "level": level,
        "message": {"text": crate::excerpt::bounded(&message, 1000)},
        "locations": [{"physicalLocation": {
            "artifactLocation": {"uri": uri, "uriBaseId": "%SRCROOT%"},
            "region": {"startLine": 1},
        }}],
        "partialFingerprints": {"normfuzzFinding/v1": f.id},
        "properties": {
            "op": f.op,
            "kind": f.kind,
            "class": class,
            "why": f.impact.as_ref().map(|i| &i.why),
            "hits": f.hits,
            "minimalInput": input,
            "findingFile": finding_file(f),
            "repro": campaign.repro(f),
        },
    });
    if let Some(index) = rule_index {
        value["ruleIndex"] = json!(index);
    }
    if let Some(standing) = f.baseline {
        value["baselineState"] = json!(match standing {
            Standing::Known => "unchanged",
            Standing::New => "new",
        });
    }
    value
}
