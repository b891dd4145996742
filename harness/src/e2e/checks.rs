//! The end-to-end judge: what reached the model (the captured provider requests) and what the
//! runtime delivered (its output), checked per rule id against the case's input.
//!
//! Expectations come from the input blocks themselves, not from the reference's wording: a
//! runtime may word its placeholders as it likes (a divergence), but it must not lose a text, a
//! URI or a valid image (F1–F5), forward or deliver a directive line (S1), or deliver media the
//! policy rejects (S3, D3). URL and path verdicts reuse the conform judge's independent oracles.
//!
//! `checks/view.rs` reads the two sides out of a turn's files (the model's view, one extractor
//! per provider API; the delivered items); this file judges them.

pub mod channel;
pub mod failed_tool_names;
pub mod fallback;
pub mod hostile;
mod view;
pub mod vision;
pub mod writes;

use std::collections::HashSet;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::cases::E2eCase;
use crate::excerpt::bounded;
use crate::oracle::directive::{directive_lines, is_directive_line, lines};
use crate::oracle::image::is_valid_input_image;
use crate::oracle::judge::is_insertion;
use crate::oracle::path::{canonical_media, has_scheme, local_problem};
use crate::oracle::url::remote_problem;
use crate::rule::Rule;
pub use view::{Delivered, ModelView, delivered, model_view};

/// Where in the path from tool result to user a finding was seen (issue 17): a runtime may
/// refuse at delivery what its API still returns, so each layer is judged and baselined apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Layer {
    /// What reached the model (the captured provider requests), and the turn itself (B1).
    Model,
    /// What the runtime's own API returned as the reply (`agent exec --json`'s payloads).
    Payload,
    /// What the chat channel received: message texts, captions, uploaded files.
    Delivered,
}

impl Layer {
    pub fn as_str(self) -> &'static str {
        match self {
            Layer::Model => "model",
            Layer::Payload => "payload",
            Layer::Delivered => "delivered",
        }
    }
}

impl std::fmt::Display for Layer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct E2eFinding {
    pub rule: Rule,
    pub layer: Layer,
    pub reason: String,
    /// Bounded evidence: the offending text, URL, block or provider answer.
    pub evidence: Value,
}

impl E2eFinding {
    pub fn new(rule: Rule, layer: Layer, reason: impl Into<String>, evidence: Value) -> E2eFinding {
        E2eFinding {
            rule,
            layer,
            reason: reason.into(),
            evidence,
        }
    }
}

fn model(rule: Rule, reason: impl Into<String>, evidence: Value) -> E2eFinding {
    E2eFinding::new(rule, Layer::Model, reason, evidence)
}

/// Why a block cannot be coerced as what it claims to be (the reference's placeholder cases).
fn malformed(block: &Value) -> Option<String> {
    let kind = block["type"].as_str().unwrap_or("?");
    let bad = match kind {
        "text" => !block["text"].is_string(),
        "image" => !is_valid_input_image(block),
        "audio" => !block["data"].is_string(),
        "resource_link" => !block["uri"].is_string(),
        "resource" => !block["resource"]["uri"].is_string(),
        _ => true,
    };
    bad.then(|| format!("{kind} block {}", bounded(&block.to_string(), 200)))
}

/// What a block must leave in the model's view, by rule.
enum Expect<'a> {
    /// F2: this text (S1's prefix aside).
    Text(&'a str),
    /// F4: this string (a URI, a MIME type, a resource's text) somewhere in the texts.
    Token(&'a str),
    /// F1: this image, as an image for an image-capable model or as a note for a text-only one.
    Image(&'a str),
}

fn expectations(block: &Value) -> Vec<Expect<'_>> {
    let s = |k: &str| block[k].as_str();
    match block["type"].as_str() {
        Some("text") => s("text")
            .filter(|t| !t.trim().is_empty())
            .map(Expect::Text)
            .into_iter()
            .collect(),
        Some("image") => s("data").map(Expect::Image).into_iter().collect(),
        Some("audio") => s("mimeType").map(Expect::Token).into_iter().collect(),
        Some("resource_link") => s("uri").map(Expect::Token).into_iter().collect(),
        Some("resource") => {
            let r = &block["resource"];
            match r["text"].as_str() {
                Some(t) if !t.trim().is_empty() => vec![Expect::Text(t)],
                _ => r["uri"].as_str().map(Expect::Token).into_iter().collect(),
            }
        }
        _ => Vec::new(),
    }
}

/// Whether `text` reaches `haystack`: verbatim, as a JSON string literal's body (a runtime
/// that sends the whole result as JSON text: escapes as JavaScript's `JSON.stringify` and
/// serde_json write them, or Python's `json.dumps` with all non-ASCII escaped), or line by line
/// with a prefix inserted on directive lines (the one change F2 allows).
fn text_reaches(text: &str, haystack: &[&str]) -> bool {
    let json = serde_json::to_string(text).unwrap_or_default();
    let json = json
        .get(1..json.len().saturating_sub(1))
        .unwrap_or_default();
    let ascii: String = json
        .chars()
        .flat_map(|c| match c {
            ' '..='~' => vec![c.to_string()],
            _ => c
                .encode_utf16(&mut [0; 2])
                .iter()
                .map(|u| format!("\\u{u:04x}"))
                .collect(),
        })
        .collect();
    if haystack
        .iter()
        .any(|h| h.contains(text) || h.contains(json) || h.contains(&ascii))
    {
        return true;
    }
    let hay_lines: Vec<&str> = haystack.iter().flat_map(|h| lines(h)).collect();
    lines(text).all(|line| {
        line.trim().is_empty()
            || hay_lines
                .iter()
                .any(|h| h.contains(line) || (is_directive_line(line) && is_insertion(line, h)))
    })
}

/// The base64 payloads that must never be copied into text (F4): a non-image block's `data` and
/// `resource.blob`. Narrower than `oracle::judge::payloads` (every depth, image blocks too):
/// that one adds F4 findings where a runtime renders an image block it does not forward as JSON
/// text (the fake runtime's `good` mode does for non-PNG images, on generated cases), so
/// switching to it changes verdicts.
fn payloads(block: &Value) -> Vec<&str> {
    [&block["data"], &block["resource"]["blob"]]
        .into_iter()
        .filter(|_| block["type"] != "image")
        .filter_map(Value::as_str)
        .filter(|p| p.len() >= 16)
        .collect()
}

/// F1–F5 and S1 on what reached the model.
pub fn check_model_view(case: &E2eCase, view: &ModelView) -> Vec<E2eFinding> {
    let mut out = Vec::new();
    let blocks: Vec<&Value> = match &case.result["content"] {
        Value::Array(blocks) => blocks.iter().collect(),
        _ => Vec::new(),
    };
    let bad: Vec<(usize, String)> = blocks
        .iter()
        .enumerate()
        .filter_map(|(i, b)| malformed(b).map(|why| (i, why)))
        .collect();
    let all_texts: Vec<&str> = view
        .tool_texts
        .iter()
        .chain(&view.other_texts)
        .map(String::as_str)
        .collect();
    let mut lost: Vec<(usize, Rule, String)> = Vec::new();
    for (i, block) in blocks.iter().enumerate() {
        for expect in expectations(block) {
            let missing = match expect {
                Expect::Text(t) => (!text_reaches(t, &all_texts))
                    .then(|| (Rule::F2, format!("text {:?}", bounded(t, 120)))),
                // A URI the provider is asked to fetch reached the model too.
                Expect::Token(t) => (!all_texts.iter().any(|h| h.contains(t))
                    && !view.urls.iter().any(|u| u == t))
                .then(|| {
                    (
                        Rule::F4,
                        format!(
                            "{} {:?}",
                            block["type"].as_str().unwrap_or("?"),
                            bounded(t, 120)
                        ),
                    )
                }),
                Expect::Image(data) => {
                    if malformed(block).is_some() {
                        None
                    } else if case.image_input {
                        (!view.images.iter().any(|(_, d)| d == data)).then(|| {
                            (
                                Rule::F1,
                                format!(
                                    "valid {} image",
                                    block["mimeType"].as_str().unwrap_or("?")
                                ),
                            )
                        })
                    } else {
                        // An SDK has no text-only model setting and sends the image as one:
                        // nothing is lost (whether the model takes it is the provider's call).
                        let sent = view.images.iter().any(|(_, d)| d == data);
                        (!sent
                            && !all_texts
                                .iter()
                                .any(|t| t.to_ascii_lowercase().contains("image")))
                        .then(|| {
                            (
                                Rule::F1,
                                "valid image for a text-only model: no note left".to_string(),
                            )
                        })
                    }
                }
            };
            if let Some((rule, what)) = missing {
                lost.push((i, rule, what));
            }
        }
        for payload in payloads(block) {
            if all_texts.iter().any(|t| t.contains(payload)) {
                out.push(model(
                    Rule::F4,
                    "a base64 payload was copied into text",
                    json!({"block": i}),
                ));
            }
        }
    }
    // A loss next to a malformed sibling is F5: the bad block took the good one down with it.
    let mut by_rule: Vec<(Rule, Vec<String>)> = Vec::new();
    for (i, rule, what) in lost {
        let culprit = bad.iter().find(|(j, _)| *j != i);
        let (rule, what) = match culprit {
            Some((j, why)) => (
                Rule::F5,
                format!("block {i} ({what}) lost next to malformed block {j}: {why}"),
            ),
            None => (rule, format!("block {i} lost: {what}")),
        };
        match by_rule.iter_mut().find(|(r, _)| *r == rule) {
            Some((_, list)) => list.push(what),
            None => by_rule.push((rule, vec![what])),
        }
    }
    for (rule, list) in by_rule {
        let reason = match rule {
            Rule::F5 => "one malformed block took its siblings down",
            Rule::F1 => "a valid image did not reach the model",
            Rule::F2 => "a text did not reach the model",
            _ => "a non-text block lost what the model needs",
        };
        out.push(model(
            rule,
            reason,
            json!({"lost": list, "toolResult": bounded(&view.tool_texts.join("\n"), 2000)}),
        ));
    }
    let forwarded: Vec<&str> = view
        .tool_texts
        .iter()
        .flat_map(|t| directive_lines(t))
        .collect();
    if !forwarded.is_empty() {
        out.push(model(
            Rule::S1,
            "a directive line was forwarded to the model in a tool result",
            json!({"lines": forwarded.iter().map(|l| bounded(l, 200)).collect::<Vec<_>>()}),
        ));
    }
    // A tool's URL the provider is asked to fetch is remote media the runtime accepted.
    let refused: Vec<Value> = view
        .urls
        .iter()
        .filter_map(|url| {
            remote_problem(url)
                .map(|(rule, why)| json!({"url": bounded(url, 300), "rule": rule, "why": why}))
        })
        .collect();
    if !refused.is_empty() {
        out.push(model(
            Rule::S3,
            "the provider is asked to fetch a URL the media policy refuses",
            json!({ "urls": refused }),
        ));
    }
    out
}

/// One finding per rule and layer: the reasons and evidence of repeated ones are gathered, so a
/// case has one stored finding per rule id and layer (`<case>--<rule>--<layer>.json`).
pub fn merge_by_rule(findings: Vec<E2eFinding>) -> Vec<E2eFinding> {
    let mut merged: Vec<(E2eFinding, Vec<Value>)> = Vec::new();
    for f in findings {
        match merged
            .iter_mut()
            .find(|(m, _)| m.rule == f.rule && m.layer == f.layer)
        {
            Some((m, evidence)) => {
                if !m.reason.split("; ").any(|r| r == f.reason) {
                    m.reason = format!("{}; {}", m.reason, f.reason);
                }
                evidence.push(f.evidence);
            }
            None => {
                let evidence = vec![f.evidence.clone()];
                merged.push((f, evidence));
            }
        }
    }
    merged
        .into_iter()
        .map(|(mut f, evidence)| {
            if evidence.len() > 1 {
                f.evidence = Value::Array(evidence);
            }
            f
        })
        .collect()
}

/// S1, S3 and D3 on what the runtime delivered: its API's reply ([`Layer::Payload`]) or what a
/// chat channel received ([`Layer::Delivered`]; uploads are judged by [`channel`] besides).
pub fn check_delivered(delivered: &Delivered, roots: &[String], layer: Layer) -> Vec<E2eFinding> {
    let mut out = Vec::new();
    let live: Vec<&str> = delivered
        .texts
        .iter()
        .flat_map(|t| directive_lines(t))
        .collect();
    if !live.is_empty() {
        out.push(E2eFinding::new(
            Rule::S1,
            layer,
            "a delivered text still holds a directive line",
            json!({"lines": live.iter().map(|l| bounded(l, 200)).collect::<Vec<_>>()}),
        ));
    }
    let roots: Vec<&str> = roots.iter().map(String::as_str).collect();
    let mut seen = HashSet::new();
    for target in &delivered.media {
        let problem = if has_scheme(target) && !target.starts_with("file:") {
            remote_problem(target).map(|(_, kind)| kind)
        } else if target.starts_with('~') {
            // The runtime resolves `~` to its home, which is never a media root here.
            Some("accepted a home-relative path outside the roots")
        } else {
            let path = target.strip_prefix("file://").unwrap_or(target);
            local_problem(path, &roots).map(|(_, kind)| kind)
        };
        if let Some(problem) = problem {
            out.push(E2eFinding::new(
                Rule::S3,
                layer,
                format!("delivered media: {problem}"),
                json!(bounded(target, 300)),
            ));
        }
        if !seen.insert(canonical_media(target)) {
            out.push(E2eFinding::new(
                Rule::D3,
                layer,
                "the same media was delivered twice",
                json!(bounded(target, 300)),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests;
