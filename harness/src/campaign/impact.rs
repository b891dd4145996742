//! Impact classes (spec: "Impact classes"): what a finding means to the runtime that has it.
//! The verdict says whether a case fails the gate; the class says whether the runtime's own
//! users are harmed (`bug`), the rule's premise is missing there or a later layer refuses it
//! (`hardening`), or the information is all there in another form (`spec`). It is derived from
//! the run's evidence and the runtime's profile (`harness/runtimes/<name>/profile.toml`, read
//! from its code), never typed by hand alone: baselines carry the class a person read in the
//! code, and a run fails when the two disagree.

use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::oracle::mcp_schema;
use crate::protocol::{Answer, Fault, Op};
use crate::rule::Rule;

mod class;

pub use class::Class;

/// The classes that fail a campaign unless `--fail-on` says otherwise: a spec finding is a
/// divergence, never a gate failure.
pub const DEFAULT_FAIL_ON: [Class; 2] = [Class::Bug, Class::Hardening];

/// `--fail-on` of `conform` and `e2e`: the impact classes whose new findings fail a run.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct FailOn {
    /// Impact classes whose new findings fail the run (comma-separated: bug, hardening, spec)
    /// [default: bug,hardening]; a finding of another class is reported and passes. In
    /// `conform` a spec finding is a divergence: it fails only under --strict.
    #[arg(long = "fail-on", value_name = "CLASSES", value_delimiter = ',',
          value_parser = Class::parse)]
    pub classes: Option<Vec<Class>>,
}

impl FailOn {
    /// The classes given, else the default.
    pub fn classes(&self) -> Vec<Class> {
        self.classes
            .clone()
            .unwrap_or_else(|| DEFAULT_FAIL_ON.to_vec())
    }

    /// The classes a report's `index.json` records (`failOn`), else the default: a report from
    /// before `--fail-on` was recorded ran with it.
    pub fn of_index(index: &Value) -> Result<Vec<Class>> {
        let classes = match index.get("failOn") {
            Some(classes) if !classes.is_null() => Some(
                serde_json::from_value(classes.clone()).context("`failOn` is not a class list")?,
            ),
            _ => None,
        };
        Ok(FailOn { classes }.classes())
    }
}

/// The conventions of a runtime that a finding's class depends on, each read in its code: the
/// `_evidence` fields say where.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// The runtime or its delivery acts on line-start `MEDIA:` lines or other reply directives.
    pub directives: bool,
    pub directives_evidence: String,
    /// A tool result stays in the history sent again on later turns (a provider 4xx on it
    /// fails every later turn: a poisoned session).
    pub history_replayed: bool,
    pub history_evidence: String,
    /// The runtime's own folders (S5): `${state}`, `${workspace}`, `${tmp}`, `${home}`,
    /// `${cache}`, each optionally followed by a subpath (`Adapter::own_folders` places them).
    pub folders: Vec<String>,
    pub folders_evidence: String,
    /// The time-outs it documents.
    #[serde(default, rename = "timeout")]
    pub timeouts: Vec<Timeout>,
}

/// A time-out a runtime (or the MCP client it uses) documents.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Timeout {
    pub kind: TimeoutKind,
    pub what: String,
    pub ms: u64,
    pub evidence: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TimeoutKind {
    /// A tool call's answer: what a tool result that never arrives meets.
    ToolCall,
    /// Connecting to an MCP server.
    Connect,
    /// A whole run or turn.
    Run,
}

impl Profile {
    /// The file beside a runtime's adapter.
    pub const FILE: &'static str = "profile.toml";

    /// The profile in `dir` (a runtime's adapter folder), or the reference's contract.
    pub fn beside(dir: &Path) -> Result<Profile> {
        let path = dir.join(Profile::FILE);
        match path.is_file() {
            true => Profile::load(&path),
            false => Ok(Profile::reference_contract()),
        }
    }

    pub fn load(path: &Path) -> Result<Profile> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read profile {}", path.display()))?;
        toml::from_str(&text).with_context(|| format!("invalid profile {}", path.display()))
    }

    /// The reference's own contract, for a SUT without a profile: it acts on directives and
    /// replays its history, and documents no time-out (every finding can harm its users).
    pub fn reference_contract() -> Profile {
        let given = "not given: the reference's contract (normfuzz conform --profile FILE)";
        Profile {
            directives: true,
            directives_evidence: given.into(),
            history_replayed: true,
            history_evidence: given.into(),
            folders: vec!["${state}".into(), "${workspace}".into(), "${tmp}".into()],
            folders_evidence: given.into(),
            timeouts: Vec::new(),
        }
    }

    /// The time-out a tool call meets, if the runtime documents one.
    pub fn tool_call_timeout(&self) -> Option<&Timeout> {
        self.timeouts
            .iter()
            .find(|t| t.kind == TimeoutKind::ToolCall)
    }
}

/// What a run saw of one finding, beyond its rule.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Evidence {
    /// The input is a tool result every vendored MCP schema version refuses (`None`: not a tool
    /// result, or not known).
    pub schema_invalid: Option<bool>,
    /// The SUT crashed (`Some(false)`) or hung (`Some(true)`).
    pub hang: Option<bool>,
    /// Bytes of a base64 payload of the input found in the SUT's text.
    pub payload_bytes: usize,
    /// A later layer refused what this one holds (the chat channel refused the payload's file).
    pub refused_downstream: bool,
    /// The information is all in the output in another form (JSON-escaped, merged or split
    /// blocks: `Action::keeps_information`), named by the action.
    pub kept_as: Option<&'static str>,
}

impl Evidence {
    /// The evidence a campaign's finding carries: its input and the SUT's answer.
    pub fn of_case(op: Op, input: &Value, answer: &Answer) -> Evidence {
        Evidence {
            schema_invalid: (op == Op::CoerceToolResult).then(|| !mcp_schema::is_valid(input)),
            hang: match answer {
                Answer::Fault(Fault::Hang { .. }) => Some(true),
                Answer::Fault(Fault::Crash { .. }) => Some(false),
                _ => None,
            },
            payload_bytes: match answer {
                Answer::Output(output) => payload_bytes(input, output),
                _ => 0,
            },
            refused_downstream: false,
            kept_as: None,
        }
    }
}

/// A finding's class and why, in one line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Impact {
    pub class: Class,
    pub why: String,
}

/// The class the spec gives a finding of `rule` with `evidence` in a runtime with `profile`.
pub fn derive(rule: Rule, evidence: &Evidence, profile: &Profile) -> Impact {
    let impact = |class, why: String| Impact { class, why };
    let poisoned = if profile.history_replayed {
        ", and on every later turn that replays it (a poisoned session)"
    } else {
        ""
    };
    if rule == Rule::Divergence {
        return impact(Class::Spec, "another form of the same information".into());
    }
    if evidence.refused_downstream {
        return impact(
            Class::Hardening,
            "defence in depth: a later layer (the runtime's provider adapter, fetch guard or \
             delivery) refuses or repairs what this layer holds"
                .into(),
        );
    }
    if rule == Rule::Provider {
        return impact(
            Class::Bug,
            format!("the provider answers 4xx on what the runtime built{poisoned}"),
        );
    }
    match evidence.hang {
        Some(false) => return impact(Class::Bug, "the runtime crashes".into()),
        Some(true) => {
            return match profile.tool_call_timeout() {
                Some(t) => impact(
                    Class::Hardening,
                    format!(
                        "no answer in normfuzz's time; the runtime's own {} ms time-out ({}) ends \
                         the call with an error the model sees",
                        t.ms, t.what
                    ),
                ),
                None => impact(
                    Class::Bug,
                    "the turn hangs: the runtime documents no time-out that ends it".into(),
                ),
            };
        }
        None => {}
    }
    if rule == Rule::S1 {
        return if profile.directives {
            impact(
                Class::Bug,
                "a directive line reaches a runtime that acts on directives".into(),
            )
        } else {
            impact(
                Class::Hardening,
                "neither the runtime nor its delivery acts on MEDIA: lines; only apps on top \
                 that do are exposed"
                    .into(),
            )
        };
    }
    if let Some(form) = evidence.kept_as.filter(|_| may_be_wording(rule)) {
        return impact(
            Class::Spec,
            format!("the same information in another form ({form})"),
        );
    }
    if rule == Rule::F4 && evidence.payload_bytes > 0 {
        return impact(
            Class::Bug,
            format!(
                "{} bytes of a base64 payload copied into the model's text",
                evidence.payload_bytes
            ),
        );
    }
    if is_content_rule(rule) && evidence.schema_invalid == Some(true) {
        return impact(
            Class::Hardening,
            "the input breaks the MCP schema, which lets a client refuse it whole".into(),
        );
    }
    impact(Class::Bug, harm(rule).into())
}

/// The classes a finding of `rule` may have in a runtime with `profile` when only the rule is
/// known (a baseline's cell, before a run): what `derive` gives over every evidence it could see.
pub fn possible(rule: Rule, profile: &Profile) -> Vec<Class> {
    let mut evidences = vec![
        Evidence::default(),
        Evidence {
            schema_invalid: Some(true),
            ..Evidence::default()
        },
        Evidence {
            refused_downstream: true,
            ..Evidence::default()
        },
        Evidence {
            payload_bytes: 1,
            ..Evidence::default()
        },
    ];
    // Only a fault (B1) has a crash or a hang behind it.
    if rule == Rule::B1 {
        evidences = [true, false]
            .map(|hang| Evidence {
                hang: Some(hang),
                ..Evidence::default()
            })
            .into();
    }

    let mut classes: Vec<Class> = evidences
        .iter()
        .map(|evidence| derive(rule, evidence, profile).class)
        .collect();
    if may_be_wording(rule) {
        classes.push(Class::Spec);
    }
    classes.sort();
    classes.dedup();
    classes
}

/// Rules whose cell may hold only another form of the same information: a reference wording or
/// bound (C rules, a text JSON-escaped in F2, blocks merged into one in F3, a reply tag a
/// runtime has no use for in D2), an invalid image the runtime repairs into the valid one it
/// encodes (C2: decodable base64 re-encoded canonically) or an address the reference refuses
/// beyond the IANA registries (U4 for IPv4, U5 for IPv6). Such a finding is `spec`; a run with
/// the evidence tells.
fn may_be_wording(rule: Rule) -> bool {
    matches!(
        rule,
        Rule::C1
            | Rule::C2
            | Rule::C3
            | Rule::C4
            | Rule::C5
            | Rule::C6
            | Rule::C7
            | Rule::F2
            | Rule::F3
            | Rule::D2
            | Rule::U4
            | Rule::U5
    )
}

/// Rules about the content of a tool result reaching the model: refusing a schema-invalid
/// result whole is allowed by MCP, so losing it is hardening.
fn is_content_rule(rule: Rule) -> bool {
    matches!(
        rule,
        Rule::F1
            | Rule::F2
            | Rule::F3
            | Rule::F4
            | Rule::F5
            | Rule::C1
            | Rule::C2
            | Rule::C3
            | Rule::C4
            | Rule::C5
            | Rule::C6
            | Rule::C7
            | Rule::C8
    )
}

/// The harm of a bug-class finding of `rule`, in the maintainer's terms.
fn harm(rule: Rule) -> &'static str {
    use Rule::*;
    match rule {
        S2 => "an image the providers refuse reaches them",
        S3 | U1 | U2 | U3 | U4 | U5 | U6 | U7 | U8 => {
            "a local file or a private or non-https URL is delivered or fetched"
        }
        S4 | R1 | R2 | R3 | R4 | R5 | R6 => "an image is carried to another provider on a retry",
        S5 => "a file is written outside the runtime's folders",
        F1 => "a valid image of the tool result never reaches the model as an image",
        F2 => "a text of the tool result never reaches the model",
        F3 => "the model gets other blocks, in another order, or loses isError",
        F4 => "a non-text block reaches the model without its label, URI or type, or unbounded",
        F5 => "one malformed block takes its valid siblings down",
        C1 | C2 | C3 | C4 | C5 | C6 | C7 => {
            "the label, URI, media type or resource text of a block never reaches the model"
        }
        C8 => "a tool result that is not an object fails the tool call",
        D1 | D2 | D3 => "a reply directive is delivered as text, or media is delivered twice",
        B2 | B3 => "the output depends on how often or in which pieces it was normalized",
        P1 | P2 | P3 => "a tool name from a failed attempt crosses a fallback wrongly",
        P4 => "a tool that already ran (a payment, a message sent) runs again on a fallback",
        B1 | Provider | Protocol | Divergence | S1 => "the SUT breaks the protocol",
    }
}

/// Bytes of the input's base64 payloads (image and audio `data`, resource `blob`, 16 or more
/// characters) that occur in the output's text.
fn payload_bytes(input: &Value, output: &Value) -> usize {
    let payloads: Vec<&str> = strings_under(input, &["data", "blob"])
        .into_iter()
        .filter(|p| p.len() >= 16)
        .collect();
    if payloads.is_empty() {
        return 0;
    }
    let texts = strings_under(output, &["text"]);
    payloads
        .iter()
        .filter(|p| texts.iter().any(|t| t.contains(*p)))
        .map(|p| p.len())
        .sum()
}

/// Nesting walked at most: payloads and texts sit a few levels down.
const WALK_DEPTH: usize = 16;

/// The strings of `value` under one of `keys`, down to `WALK_DEPTH` levels.
fn strings_under<'a>(value: &'a Value, keys: &[&str]) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut stack = vec![(value, 0)];
    while let Some((value, depth)) = stack.pop() {
        match value {
            Value::Object(map) if depth < WALK_DEPTH => {
                for (key, v) in map {
                    match v {
                        Value::String(s) if keys.contains(&key.as_str()) => out.push(s.as_str()),
                        _ => stack.push((v, depth + 1)),
                    }
                }
            }
            Value::Array(items) if depth < WALK_DEPTH => {
                stack.extend(items.iter().map(|v| (v, depth + 1)));
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn profile(directives: bool, timeout: Option<u64>) -> Profile {
        Profile {
            directives,
            timeouts: timeout
                .map(|ms| Timeout {
                    kind: TimeoutKind::ToolCall,
                    what: "MCP tool call".into(),
                    ms,
                    evidence: "here".into(),
                })
                .into_iter()
                .collect(),
            ..Profile::reference_contract()
        }
    }

    fn class(rule: Rule, evidence: Evidence, profile: &Profile) -> Class {
        derive(rule, &evidence, profile).class
    }

    #[test]
    fn s1_is_a_bug_only_where_directives_are_acted_on() {
        let e = Evidence::default;
        assert_eq!(class(Rule::S1, e(), &profile(true, None)), Class::Bug);
        assert_eq!(
            class(Rule::S1, e(), &profile(false, None)),
            Class::Hardening
        );
        assert_eq!(
            possible(Rule::S1, &profile(false, None)),
            [Class::Hardening]
        );
    }

    #[test]
    fn a_hang_is_a_bug_only_without_the_runtimes_own_time_out() {
        let hang = || Evidence {
            hang: Some(true),
            ..Evidence::default()
        };
        assert_eq!(class(Rule::B1, hang(), &profile(false, None)), Class::Bug);
        let bounded = derive(Rule::B1, &hang(), &profile(false, Some(60_000)));
        assert_eq!(bounded.class, Class::Hardening);
        assert!(bounded.why.contains("60000 ms"), "{}", bounded.why);
        let crash = Evidence {
            hang: Some(false),
            ..Evidence::default()
        };
        assert_eq!(class(Rule::B1, crash, &profile(false, Some(1))), Class::Bug);
    }

    #[test]
    fn lost_content_of_a_schema_invalid_result_is_hardening() {
        let invalid = Evidence {
            schema_invalid: Some(true),
            ..Evidence::default()
        };
        let valid = Evidence {
            schema_invalid: Some(false),
            ..Evidence::default()
        };
        let p = profile(false, None);
        assert_eq!(class(Rule::F5, invalid.clone(), &p), Class::Hardening);
        assert_eq!(class(Rule::F5, valid, &p), Class::Bug);
        // A provider 4xx harms whatever the input was.
        assert_eq!(class(Rule::Provider, invalid, &p), Class::Bug);
    }

    #[test]
    fn payload_bytes_in_the_models_text_are_a_bug_and_counted() {
        let data = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAAB";
        let input = json!({"content": [{"type": "audio", "data": data, "mimeType": "audio/wav"}]});
        let copied =
            json!({"content": [{"type": "text", "text": format!("{{\"data\":\"{data}\"}}")}]});
        let e = Evidence::of_case(Op::CoerceToolResult, &input, &Answer::Output(copied));
        assert_eq!(e.payload_bytes, data.len());
        assert_eq!(e.schema_invalid, Some(false));
        let impact = derive(Rule::F4, &e, &profile(false, None));
        assert_eq!(impact.class, Class::Bug);
        assert!(impact.why.starts_with("32 bytes"), "{}", impact.why);
        let clean = json!({"content": [{"type": "text", "text": "[audio audio/wav]"}]});
        let e = Evidence::of_case(Op::CoerceToolResult, &input, &Answer::Output(clean));
        assert_eq!(e.payload_bytes, 0);
    }

    #[test]
    fn a_refusal_downstream_makes_it_hardening() {
        let e = Evidence {
            refused_downstream: true,
            ..Evidence::default()
        };
        assert_eq!(class(Rule::S3, e, &profile(true, None)), Class::Hardening);
        assert_eq!(
            class(Rule::S3, Evidence::default(), &profile(true, None)),
            Class::Bug
        );
    }

    #[test]
    fn profiles_of_every_runtime_load() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("runtimes");
        let mut loaded = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path().join(Profile::FILE);
            if path.is_file() {
                let profile = Profile::load(&path).unwrap();
                assert!(!profile.directives_evidence.trim().is_empty(), "{path:?}");
                loaded += 1;
            }
        }
        assert!(loaded >= 7, "{loaded} profiles");
    }
}
