//! A finding: the first failing case of its kind, shrunk, with its signature, hits and class.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::impact::Impact;
use crate::oracle::signature::Signature;
use crate::protocol::{Answer, Op};
use crate::rule::Rule;

/// One distinct bug: the minimal input that shows it, both answers, and the rule.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Finding {
    /// Stable id: op, rule and a hash of the signature.
    pub id: String,
    pub op: Op,
    pub rule: Rule,
    pub gate: bool,
    pub kind: String,
    pub detail: String,
    /// What tells its cause from others under the rule: kind, what the SUT did and the
    /// features of its (minimal) input (reports from before signatures: the default).
    #[serde(default)]
    pub signature: Signature,
    /// The fewest features each of its cases needed: the minimal sets (under inclusion) of its
    /// cases' features and its minimal input's (`signature::add_trigger`). A baseline drafted
    /// from the run has an entry per set, so it covers every case the run had.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub triggers: Vec<Vec<String>>,
    /// The cause it is counted under: its baseline entry's, or one drafted from its signature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<String>,
    /// How many generated cases hit this cause before dedup.
    pub hits: u64,
    pub input: Value,
    pub sut: Answer,
    pub reference: Answer,
    /// The seed and job whose case was shrunk to `input`.
    pub seed: u64,
    /// Milliseconds from the campaign's start to the first case that hit it.
    pub first_seen_ms: u64,
    /// Where the input came from, when the campaign ran a list of inputs (`Campaign::inputs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// What it means to the runtime, derived from its evidence and the SUT's profile
    /// (`Outcome::classify`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub impact: Option<Impact>,
    /// Known to the campaign's baseline, or new (`Outcome::judge_baseline`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<Standing>,
}

/// A finding's standing against the baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Standing {
    Known,
    New,
}
