//! A judge's verdict: the rule a case broke, and whether that fails the gate or is only a
//! divergence. Every op's judge and the provider verdicts build them.

use serde::Serialize;

use crate::rule::Rule;

/// One broken rule on one case.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Violation {
    pub rule: Rule,
    /// Gate failure (true) or divergence (false).
    pub gate: bool,
    /// Stable, data-free description: part of the deduplication signature.
    pub kind: String,
    /// What exactly was seen, for the report.
    pub detail: String,
}

/// A gate failure under `rule`.
pub fn gate(rule: Rule, kind: impl Into<String>, detail: impl Into<String>) -> Violation {
    Violation {
        rule,
        gate: true,
        kind: kind.into(),
        detail: detail.into(),
    }
}

pub(super) fn divergence(kind: impl Into<String>, detail: impl Into<String>) -> Violation {
    Violation {
        rule: Rule::Divergence,
        gate: false,
        kind: kind.into(),
        detail: detail.into(),
    }
}

pub(super) fn shape(what: &str) -> Vec<Violation> {
    vec![gate(
        Rule::Protocol,
        format!("output shape: {what}"),
        what.to_string(),
    )]
}
