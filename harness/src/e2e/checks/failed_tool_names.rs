//! P2 and P3 end to end (spec: S4, seed 004): the tool names a primary model made up in the
//! attempt that failed, as they reach the fallback. The name must not reach any fallback as the
//! model spelled it when P2 would change it (only `[A-Za-z0-9_-]`, at most 100 characters), and
//! must not reach a fallback on another API at all, sanitized or not (S4: "never sent
//! cross-provider"; P3 keeps even the sanitized warning to a same-provider retry).
//!
//! Each made-up name embeds the case's marker (`hostile::marker`, alphanumerics only, so any
//! sanitizing keeps it): a request holding the marker holds the name in some form; one holding
//! the name's JSON spelling holds it as the model sent it. The judge reads bodies as text, so it
//! needs no per-API reading.

use serde_json::{Value, json};

use super::{E2eFinding, Layer};
use crate::rule::Rule;

/// What P2 leaves of a name unchanged: only `[A-Za-z0-9_-]`, at most 100 characters. Written
/// here, not taken from the reference, so the judge stays an oracle of its own.
fn p2_clean(name: &str) -> bool {
    name.chars().count() <= 100
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Findings for the failed attempt's made-up tool names (`name`, `marker`) in `to_fallback`,
/// the fallback's requests in capture order.
pub fn check_failed_tool_names(
    names: &[(String, String)],
    same_provider: bool,
    to_fallback: &[&Value],
) -> Vec<E2eFinding> {
    let bodies: Vec<(u64, String)> = to_fallback
        .iter()
        .map(|r| (r["seq"].as_u64().unwrap_or(0), r["body"].to_string()))
        .collect();
    let mut findings = Vec::new();
    for (name, marker) in names {
        // The name as a JSON string's body: how a body holding it verbatim spells it.
        let spelled = Value::String(name.clone()).to_string();
        let spelled = &spelled[1..spelled.len() - 1];
        let raw = bodies.iter().find(|(_, b)| b.contains(spelled));
        if let Some((seq, _)) = raw.filter(|_| !p2_clean(name)) {
            findings.push(E2eFinding::new(
                Rule::P2,
                Layer::Model,
                format!(
                    "the failed attempt's made-up tool name {name:?} reached the fallback's \
                     request {seq} unsanitized (P2: only [A-Za-z0-9_-], at most 100 characters)"
                ),
                json!({"name": name, "request": seq}),
            ));
        }
        let marker = marker.to_ascii_lowercase();
        let any = bodies
            .iter()
            .find(|(_, b)| b.to_ascii_lowercase().contains(&marker));
        if let Some((seq, _)) = any.filter(|_| !same_provider) {
            findings.push(E2eFinding::new(
                Rule::P3,
                Layer::Model,
                format!(
                    "the failed attempt's made-up tool name reached the fallback on another API \
                     (request {seq}){} (S4: never sent cross-provider)",
                    if raw.is_some() { "" } else { ", sanitized" }
                ),
                json!({"name": name, "marker": marker, "request": seq}),
            ));
        }
    }
    findings
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(seq: u64, text: &str) -> Value {
        json!({"seq": seq, "body": {"messages": [{"role": "assistant", "content": text}]}})
    }

    fn rules(findings: &[E2eFinding]) -> Vec<&str> {
        findings.iter().map(|f| f.rule.as_str()).collect()
    }

    #[test]
    fn a_raw_name_is_p2_anywhere_and_any_form_of_it_is_p3_across_providers() {
        let names = [("../../escaped-nfzABC".to_string(), "nfzabc".to_string())];
        let raw = request(4, "called ../../escaped-nfzABC");
        let sanitized = request(5, "called escaped-nfzABC");
        let clean = request(6, "called get_attachment");
        assert_eq!(
            rules(&check_failed_tool_names(&names, false, &[&clean, &raw])),
            ["P2", "P3"]
        );
        assert_eq!(
            rules(&check_failed_tool_names(&names, true, &[&raw])),
            ["P2"]
        );
        let f = check_failed_tool_names(&names, false, &[&sanitized]);
        assert_eq!(rules(&f), ["P3"]);
        assert!(
            f[0].reason.contains("(request 5), sanitized"),
            "{}",
            f[0].reason
        );
        assert!(check_failed_tool_names(&names, true, &[&sanitized]).is_empty());
        assert!(check_failed_tool_names(&names, false, &[&clean]).is_empty());
        // A name P2 leaves as it is is no P2 finding, only P3 across providers.
        let plain = [("tool_nfzabc".to_string(), "nfzabc".to_string())];
        let same = request(1, "tool_nfzabc");
        assert_eq!(
            rules(&check_failed_tool_names(&plain, false, &[&same])),
            ["P3"]
        );
    }

    #[test]
    fn control_characters_are_found_as_json_escapes() {
        let names = [("nfzabc\n\u{7f}".to_string(), "nfzabc".to_string())];
        let raw = request(2, "nfzabc\n\u{7f}");
        assert_eq!(
            rules(&check_failed_tool_names(&names, true, &[&raw])),
            ["P2"]
        );
    }
}
