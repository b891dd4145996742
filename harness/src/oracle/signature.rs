//! Cause signatures: what tells two bugs under one rule apart. A finding's signature is its
//! kind (the judge's data-free description), what the SUT did (`Action`: dropped, JSON-wrapped,
//! merged, re-typed, ...) and the features of the input that trigger it (block types, `isError`,
//! `structuredContent`, `_meta`, annotations, media-type families, a directive's disguise, a
//! URL's host form). A baseline entry matches a signature, not a rule, so a second bug under a
//! known rule is new (`campaign::baseline`).
//!
//! Features are coarse on purpose: a baseline entry lists the features of its minimal input and
//! matches every finding whose input has them all, so an incidental detail of one shrunk input
//! must not become a feature another run's input of the same cause lacks. Two rules follow:
//! a feature names a presence, never an absence (shrinking reaches absences: no media type is
//! no feature), and a tool result's features are the result's own and those of the blocks the
//! action was read from (`Concerned`), the other blocks being incidental.

mod action;
mod features;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use action::Action;
use action::reading;
use features::features;

use super::judge::Violation;
use crate::protocol::{Answer, Op};

/// What tells one cause from another under a rule.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Signature {
    pub kind: String,
    pub action: Action,
    /// Sorted, each once.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub features: Vec<String>,
}

impl Signature {
    /// The signature of `violation` on a case of `op` with `input`, the SUT's `answer` and the
    /// reference's `reference` (read only as data: the reason it gave a URL).
    pub fn of(
        op: Op,
        input: &Value,
        answer: &Answer,
        reference: &Answer,
        violation: &Violation,
    ) -> Signature {
        let (action, concerned) = reading(op, input, answer, violation);
        Signature {
            kind: violation.kind.clone(),
            action,
            features: features(op, input, answer, reference, violation.rule, &concerned),
        }
    }

    /// Whether `other` is a finding of this cause: the same kind and action, and an input with
    /// every feature listed here.
    pub fn covers(&self, other: &Signature) -> bool {
        self.kind == other.kind
            && self.action == other.action
            && within(&self.features, &other.features)
    }

    /// `action; feature, feature`, for reports.
    pub fn describe(&self) -> String {
        match self.features.is_empty() {
            true => self.action.as_str().to_string(),
            false => format!("{}; {}", self.action.as_str(), self.features.join(", ")),
        }
    }
}

/// Feature sets a finding's cases showed, at most: past it, a case's set is left out.
pub const MAX_TRIGGERS: usize = 16;

/// Whether every feature of `small` is in `big`.
pub fn within(small: &[String], big: &[String]) -> bool {
    small.iter().all(|f| big.contains(f))
}

/// Adds `set` to `sets`, the minimal ones (under inclusion) of a finding's cases' feature sets:
/// a baseline entry per set then covers every case the finding had, each with the fewest
/// features that case needed. Returns whether `sets` changed.
pub fn add_trigger(sets: &mut Vec<Vec<String>>, set: &[String]) -> bool {
    if sets.iter().any(|s| within(s, set)) {
        return false;
    }
    sets.retain(|s| !within(set, s));
    if sets.len() < MAX_TRIGGERS {
        sets.push(set.to_vec());
        sets.sort();
    }
    true
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::oracle::judge::gate;
    use crate::rule::Rule;

    fn sig(input: Value, output: Value, rule: Rule, kind: &str) -> Signature {
        let v = gate(rule, kind, "d");
        Signature::of(
            Op::CoerceToolResult,
            &input,
            &Answer::Output(output),
            &Answer::Output(json!({})),
            &v,
        )
    }

    /// The same rule and kind, two causes: a text JSON-wrapped with `structuredContent` beside it,
    /// and a text dropped from an `isError` result.
    #[test]
    fn tells_wrapped_from_dropped_and_names_the_trigger() {
        let text = "line one\nline \"two\"";
        let wrapped = sig(
            json!({"content": [{"type": "text", "text": text}], "structuredContent": {"a": 1}}),
            json!({"content": [{"type": "text", "text": json!({"type": "text", "text": text}).to_string()}], "isError": false}),
            Rule::F2,
            "text lost or changed",
        );
        assert_eq!(wrapped.action, Action::JsonWrapped);
        assert!(wrapped.features.contains(&"structuredContent".to_string()));
        let dropped = sig(
            json!({"content": [{"type": "text", "text": text}], "isError": true}),
            json!({"content": [{"type": "text", "text": "Error"}], "isError": true}),
            Rule::F2,
            "text lost or changed",
        );
        assert_eq!(dropped.action, Action::Dropped);
        assert_eq!(dropped.features, ["block:text", "isError"]);
        assert!(!wrapped.covers(&dropped) && !dropped.covers(&wrapped));
        // An entry covers a finding whose input has more features than its own.
        let mut wider = dropped.clone();
        wider.features.push("_meta".into());
        wider.features.sort();
        assert!(dropped.covers(&wider) && !wider.covers(&dropped));
    }

    /// A block beside the one that was lost is incidental: not a feature; nor is an absent
    /// media type (the plain form shrinking reaches).
    #[test]
    fn features_are_the_concerned_blocks_and_the_results_flags() {
        let link = json!({"type": "resource_link", "uri": "https://example.com/a", "name": "a"});
        let lost = sig(
            json!({"content": [{"type": "text", "text": "hello"}, link], "_meta": {}}),
            json!({"content": [{"type": "text", "text": "https://example.com/a a"}]}),
            Rule::F2,
            "text lost or changed",
        );
        assert_eq!(lost.action, Action::Dropped);
        assert_eq!(lost.features, ["_meta", "block:text"]);
        let link_lost = sig(
            json!({"content": [{"type": "text", "text": "hello"}, link]}),
            json!({"content": [{"type": "text", "text": "hello"}]}),
            Rule::C4,
            "resource link without its label or URI",
        );
        assert_eq!(link_lost.action, Action::DroppedUri);
        assert_eq!(link_lost.features, ["block:resource_link"]);
        // A schema-invalid result says so, whichever block breaks it.
        let invalid = sig(
            json!({"content": [{"type": "text", "text": "hello"}, {"type": "image"}]}),
            json!({"content": [{"type": "text", "text": "Error"}], "isError": true}),
            Rule::F2,
            "text lost or changed",
        );
        assert_eq!(invalid.action, Action::ReplacedByError);
        assert_eq!(invalid.features, ["block:text", "schema-invalid"]);
    }

    /// The sets kept are the minimal ones: a case's set with one of them inside adds nothing,
    /// and one inside several replaces them.
    #[test]
    fn triggers_keep_the_minimal_feature_sets() {
        let set = |s: &[&str]| s.iter().map(|f| f.to_string()).collect::<Vec<_>>();
        let mut sets = Vec::new();
        assert!(add_trigger(&mut sets, &set(&["a", "b"])));
        assert!(add_trigger(&mut sets, &set(&["c"])));
        assert!(!add_trigger(&mut sets, &set(&["a", "b", "d"])));
        assert!(add_trigger(&mut sets, &set(&["b"])));
        assert_eq!(sets, [set(&["b"]), set(&["c"])]);
    }

    #[test]
    fn error_flag_direction_and_replacement_are_actions() {
        let cleared = sig(
            json!({"content": [{"type": "text", "text": "x"}], "isError": true}),
            json!({"content": [{"type": "text", "text": "x"}], "isError": false}),
            Rule::F3,
            "isError not preserved",
        );
        assert_eq!(cleared.action, Action::ErrorFlagCleared);
        let set = sig(
            json!({"content": [{"type": "text", "text": "x"}], "isError": "yes"}),
            json!({"content": [{"type": "text", "text": "x"}], "isError": true}),
            Rule::F3,
            "isError not preserved",
        );
        assert_eq!(set.action, Action::ErrorFlagSet);
        assert!(set.features.contains(&"isError:not-bool".to_string()));
        let replaced = sig(
            json!({"content": [{"type": "text", "text": "hello"}]}),
            json!({"content": [{"type": "text", "text": "tool failed"}], "isError": true}),
            Rule::F2,
            "text lost or changed",
        );
        assert_eq!(replaced.action, Action::ReplacedByError);
    }

    #[test]
    fn a_missing_placeholder_field_is_named() {
        let link = json!({"type": "resource_link", "uri": "file:///a.txt", "name": "Report"});
        let no_label = sig(
            json!({"content": [link.clone()]}),
            json!({"content": [{"type": "text", "text": "file:///a.txt"}], "isError": false}),
            Rule::C4,
            "resource link without its label or URI",
        );
        assert_eq!(no_label.action, Action::DroppedLabel);
        let no_uri = sig(
            json!({"content": [link]}),
            json!({"content": [{"type": "text", "text": "[Report]"}], "isError": false}),
            Rule::C4,
            "resource link without its label or URI",
        );
        assert_eq!(no_uri.action, Action::DroppedUri);
        assert!(no_uri.features.contains(&"block:resource_link".to_string()));
    }
}
