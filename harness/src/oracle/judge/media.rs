//! `check_media_url` (U1–U8), `parse_reply` (S1, S3, D2, D3) and `normalize_stream` (S1 per
//! delivery and on the joined stream, S3, D3, B3).

use std::collections::HashSet;
use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use super::kept_text::{kept_directive, kept_directive_violation, s1};
use super::violation::{Violation, gate, shape};
use crate::excerpt::bounded;
use crate::oracle::directive::mentions_media;
use crate::oracle::path::{canonical_media, media_problem};
use crate::oracle::url::{is_global_special_row, remote_problem};
use crate::rule::Rule;

/// D2's reply tags, as the spec names them (case-insensitive, blanks allowed inside).
static REPLY_TAG: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\[\[\s*(audio_as_voice|reply_to_current|reply_to\s*:[^\]\n]*)\s*\]\]")
        .expect("valid regex")
});

pub(super) fn check_media_url(
    input: &Value,
    output: &Value,
    expected: Option<&Value>,
) -> Vec<Violation> {
    let Some(allowed) = output.get("allowed").and_then(Value::as_bool) else {
        return shape("`allowed` is not a boolean");
    };
    let url = input.get("url").and_then(Value::as_str).unwrap_or_default();
    let mut out = Vec::new();
    if output.get("reason").is_some_and(|r| !r.is_string()) {
        out.push(gate(
            Rule::U8,
            "reason is not a string",
            bounded(&output["reason"].to_string(), 200).into_owned(),
        ));
    }
    if !allowed {
        return out;
    }
    if let Some((rule, kind)) = remote_problem(url) {
        out.push(gate(rule, kind, bounded(url, 300).into_owned()));
    } else if let Some(expected) = expected
        && expected.get("allowed") == Some(&Value::Bool(false))
        && let Some(rule) = mandated(url, expected.get("reason").and_then(Value::as_str))
    {
        out.push(gate(
            rule,
            "accepted a URL the reference refuses for a rule-mandated reason",
            format!(
                "{} (reference: {})",
                bounded(url, 300),
                expected["reason"].as_str().unwrap_or_default()
            ),
        ));
    }
    out
}

/// The rule behind a reference refusal when the spec mandates it; `None` for the reference's
/// stricter choices (raw syntax WHATWG repairs, wildcard names spelling no address, special
/// rows the registry marks globally reachable), where refusing is only a divergence.
fn mandated(url: &str, reason: Option<&str>) -> Option<Rule> {
    let ip_rule = || match url::Url::parse(url).ok()?.host()? {
        url::Host::Ipv4(_) => Some(Rule::U4),
        url::Host::Ipv6(_) => Some(Rule::U5),
        url::Host::Domain(_) => Some(Rule::U7),
    };
    match reason? {
        "parse" => Some(Rule::U1),
        "scheme" => Some(Rule::U2),
        "userinfo" => Some(Rule::U3),
        "ip-not-global" if !is_global_special_row(url) => ip_rule(),
        "special-name" | "single-label" | "empty-label" => Some(Rule::U6),
        _ => None,
    }
}

pub(super) fn parse_reply(
    input: &Value,
    output: &Value,
    _expected: Option<&Value>,
) -> Vec<Violation> {
    let (Some(text), Some(media)) = (
        output.get("text").and_then(Value::as_str),
        output.get("mediaUrls").and_then(Value::as_array),
    ) else {
        return shape("`text` or `mediaUrls` missing");
    };
    let mut out = Vec::new();
    s1(text, "the reply text", &mut out);
    let mut seen = HashSet::new();
    media_problems(input, media, &mut seen, &mut out);
    if let Some(embeds) = output.get("embeds").and_then(Value::as_array) {
        embed_problems(embeds, &mut out);
    }
    let reply = input
        .get("text")
        .and_then(Value::as_str)
        .unwrap_or_default();
    // Whether the input spelled it or a removal joined it (`[[reply_to[embed ref="v" /]_current]]`).
    if let Some(tag) = REPLY_TAG.find(text) {
        out.push(gate(
            Rule::D2,
            "reply tag left in the text",
            bounded(tag.as_str(), 200).into_owned(),
        ));
    }
    let voice = REPLY_TAG
        .captures_iter(reply)
        .any(|c| c[1].eq_ignore_ascii_case("audio_as_voice"));
    if voice && output.get("audioAsVoice") != Some(&Value::Bool(true)) {
        out.push(gate(
            Rule::D2,
            "[[audio_as_voice]] not turned into its flag",
            String::new(),
        ));
    }
    out
}

pub(super) fn normalize_stream(
    input: &Value,
    output: &Value,
    expected: Option<&Value>,
) -> Vec<Violation> {
    let Some(deliveries) = output.get("deliveries").and_then(Value::as_array) else {
        return shape("`deliveries` is not an array");
    };
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    let mut texts = Vec::new();
    for delivery in deliveries {
        if let Some(text) = delivery.get("text").and_then(Value::as_str) {
            s1(text, "a delivery", &mut out);
            texts.push(text);
        }
        let media = delivery
            .get("mediaUrls")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        media_problems(input, media, &mut seen, &mut out);
    }
    if out.is_empty() {
        // S1 holds for the joined stream too: a directive split across deliveries.
        s1(&texts.concat(), "the joined stream", &mut out);
    }
    untrusted_media(input, deliveries, &mut out);
    if let Some(expected) = expected {
        let mut reference: Vec<&str> = expected
            .get("deliveries")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|d| d.get("text").and_then(Value::as_str))
            .collect();
        // Lines are compared in each delivery and in the joined stream: a line split across
        // deliveries is whole only there.
        let (reference_joined, sut_joined) = (reference.concat(), texts.concat());
        reference.push(&reference_joined);
        texts.push(&sut_joined);
        let chunks: String = input
            .get("chunks")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let last = input
            .get("final")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if let Some(line) = kept_directive([chunks.as_str(), last], &reference, &texts) {
            out.push(kept_directive_violation(line));
        }
    }
    out
}

/// S3: streamed blocks are untrusted (D1), so media may come only from the final reply. When
/// the final reply names no `MEDIA` at all, every delivered target came from a streamed block.
fn untrusted_media(input: &Value, deliveries: &[Value], out: &mut Vec<Violation>) {
    let last = input
        .get("final")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if mentions_media(last) {
        return;
    }
    let delivered = deliveries
        .iter()
        .filter_map(|d| d.get("mediaUrls").and_then(Value::as_array))
        .flatten()
        .find_map(Value::as_str);
    if let Some(target) = delivered {
        out.push(gate(
            Rule::S3,
            "media delivered from an untrusted streamed block",
            bounded(target, 300).into_owned(),
        ));
    }
}

/// A stream answer's delivered text, joined, and its media targets in order.
fn joined(answer: &Value) -> (String, Vec<&Value>) {
    let deliveries = answer.get("deliveries").and_then(Value::as_array);
    let text: String = deliveries
        .into_iter()
        .flatten()
        .filter_map(|d| d.get("text").and_then(Value::as_str))
        .collect();
    let media = deliveries
        .into_iter()
        .flatten()
        .filter_map(|d| d.get("mediaUrls").and_then(Value::as_array))
        .flatten()
        .collect();
    (text, media)
}

/// B3's metamorphic half: the same stream as one chunk must deliver the same text and media.
pub(super) fn same_stream(answer: &Value, merged: &Value) -> Option<Violation> {
    let ((text, media), (whole_text, whole_media)) = (joined(answer), joined(merged));
    if text != whole_text {
        Some(gate(
            Rule::B3,
            "delivered text depends on the chunking",
            format!(
                "chunked: {:?}; as one chunk: {:?}",
                bounded(&text, 200),
                bounded(&whole_text, 200)
            ),
        ))
    } else if media != whole_media {
        Some(gate(
            Rule::B3,
            "delivered media depend on the chunking",
            bounded(&format!("{media:?} vs {whole_media:?}"), 400).into_owned(),
        ))
    } else {
        None
    }
}

/// A stored canvas block is rendered for the user: its `url` is fetched, so it is same-origin
/// or public `https:` (S3), and its `title` and `viewId` are shown (S1).
fn embed_problems(embeds: &[Value], out: &mut Vec<Violation>) {
    // Same origin: resolved against an app origin, the URL stays on it (`//host`, `/\\host`
    // and absolute URLs leave it, as a browser resolves them).
    static APP: LazyLock<url::Url> =
        LazyLock::new(|| url::Url::parse("https://app.invalid/").expect("valid URL"));
    for embed in embeds {
        let preview = &embed["preview"];
        if let Some(url) = preview.get("url").and_then(Value::as_str) {
            let same_origin = APP.join(url).is_ok_and(|u| u.origin() == APP.origin());
            if !same_origin && let Some((rule, kind)) = remote_problem(url) {
                out.push(gate(
                    rule,
                    format!("canvas embed URL: {kind}"),
                    bounded(url, 300).into_owned(),
                ));
            }
        }
        for key in ["title", "viewId"] {
            if let Some(text) = preview.get(key).and_then(Value::as_str) {
                s1(text, "a canvas embed's title or view id", out);
            }
        }
    }
}

/// S3 (and the U-rules) for each delivered media target, and D3 across the turn.
fn media_problems(
    input: &Value,
    media: &[Value],
    seen: &mut HashSet<String>,
    out: &mut Vec<Violation>,
) {
    let roots: Vec<&str> = input
        .get("roots")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for target in media {
        let Some(target) = target.as_str() else {
            out.push(gate(
                Rule::Protocol,
                "output shape: media entry is not a string",
                target.to_string(),
            ));
            continue;
        };
        if let Some((rule, kind)) = media_problem(target, &roots) {
            out.push(gate(rule, kind, bounded(target, 300).into_owned()));
        }
        if !seen.insert(canonical_media(target)) {
            out.push(gate(
                Rule::D3,
                "media delivered twice in a turn",
                bounded(target, 300).into_owned(),
            ));
        }
    }
}
