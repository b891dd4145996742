//! `resolve_retry_images` (S4, R1–R6) and `sanitize_tool_names` (P2).

use serde_json::Value;

use super::violation::{Violation, gate, shape};
use crate::excerpt::bounded;
use crate::rule::Rule;

/// P2's limits, as the spec states them.
const MAX_NAMES: usize = 20;
const MAX_NAME_CHARS: usize = 100;

fn has_images(v: &Value) -> bool {
    !v.is_null() && v.as_array().is_none_or(|a| !a.is_empty())
}

pub(super) fn resolve_retry_images(
    input: &Value,
    output: &Value,
    expected: Option<&Value>,
) -> Vec<Violation> {
    let Some(images) = output.get("images") else {
        return shape("`images` missing");
    };
    let given = input.get("images").filter(|v| !v.is_null());
    let attempt = input.get("attempt").and_then(Value::as_u64).unwrap_or(0);
    let failure = input.get("previousFailure").and_then(Value::as_str);
    let primary = input.get("primaryProvider").and_then(Value::as_str);
    let candidate = input
        .get("candidateProvider")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let context = format!("attempt {attempt}, failure {failure:?}, {primary:?} -> {candidate}");
    let Some(given) = given else {
        return if has_images(images) {
            vec![gate(Rule::R6, "images appeared from nothing", context)]
        } else {
            Vec::new()
        };
    };
    // The first rule that applies decides (R1, R2, R4, R3, R5), as the spec orders them.
    let (rule, strip) = if attempt == 0 && failure.is_none() {
        (Rule::R1, false)
    } else if failure == Some("format") {
        (Rule::R2, true)
    } else if primary.is_none_or(|p| p.trim().is_empty()) {
        (Rule::R4, true)
    } else if !primary.is_some_and(|p| p.eq_ignore_ascii_case(candidate)) {
        (Rule::R3, true)
    } else {
        (Rule::R5, false)
    };
    let mut out = Vec::new();
    if strip && has_images(images) {
        out.push(gate(
            rule,
            "images carried on a retry that must strip them",
            context.clone(),
        ));
        // To another (or an unknown) provider: a user's images reach a third party.
        if matches!(rule, Rule::R3 | Rule::R4) {
            out.push(gate(
                Rule::S4,
                "images carried to another provider",
                context,
            ));
        }
    } else if !strip && images != given {
        out.push(gate(
            rule,
            "images changed where they must be kept",
            context,
        ));
    }
    // S4, asymmetric: images kept where the reference strips them.
    if out.is_empty()
        && has_images(images)
        && expected.is_some_and(|e| e.get("images").is_some_and(|i| !has_images(i)))
    {
        out.push(gate(
            Rule::S4,
            "kept images the reference strips",
            format!("attempt {attempt}, failure {failure:?}"),
        ));
    }
    out
}

/// The spec's P2 applied to one name, or `None` when it sanitizes to nothing.
fn sanitized(name: &str) -> Option<String> {
    let kept: String = name
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
        .take(MAX_NAME_CHARS)
        .collect();
    (!kept.is_empty()).then_some(kept)
}

pub(super) fn sanitize_tool_names(input: &Value, output: &Value) -> Vec<Violation> {
    let Some(names) = output.get("names").and_then(Value::as_array) else {
        return shape("`names` is not an array");
    };
    let mut out = Vec::new();
    if names.len() > MAX_NAMES {
        out.push(gate(
            Rule::P2,
            "more than 20 tool names",
            names.len().to_string(),
        ));
    }
    if let Some(bad) = names.iter().find(|n| {
        n.as_str().is_none_or(|n| {
            sanitized(n).as_deref() != Some(n) || n.chars().count() > MAX_NAME_CHARS
        })
    }) {
        out.push(gate(
            Rule::P2,
            "tool name not sanitized",
            bounded(&bad.to_string(), 300).into_owned(),
        ));
    }
    // Every name comes from an input name, in the input's order.
    let allowed: Vec<String> = input
        .get("names")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter_map(sanitized)
        .collect();
    let mut rest = allowed.iter();
    if out.is_empty()
        && !names
            .iter()
            .filter_map(Value::as_str)
            .all(|n| rest.any(|a| a == n))
    {
        out.push(gate(
            Rule::P2,
            "tool names invented or reordered",
            bounded(&Value::Array(names.clone()).to_string(), 300).into_owned(),
        ));
    }
    out
}
