//! The features of a case's input that can tell causes apart under a rule: a tool result's
//! flags and concerned blocks, a directive's disguise, a URL's host form, a retry's or a tool
//! name list's shape.

use std::collections::BTreeSet;

use serde_json::Value;

use super::action::{Concerned, content};
use crate::oracle::block_features::{block_features, json_type, refused_whole_features};
use crate::oracle::directive::{self, may_be_directive};
use crate::oracle::judge::str_field;
use crate::protocol::{Answer, Op};
use crate::rule::Rule;

/// The input's features that can tell causes apart under `rule`, sorted.
pub fn features(
    op: Op,
    input: &Value,
    answer: &Answer,
    reference: &Answer,
    rule: Rule,
    concerned: &Concerned,
) -> Vec<String> {
    let mut found = BTreeSet::new();
    match op {
        // A directive's cause is its disguise, not the blocks around it.
        Op::CoerceToolResult if matches!(rule, Rule::S1 | Rule::D1) => {}
        // An image's cause is the image: its media type and bytes.
        Op::CoerceToolResult if rule == Rule::S2 => {
            tool_result_features(input, &Concerned::All, &mut found);
            found.retain(|f| is_image_feature(f));
        }
        Op::CoerceToolResult => tool_result_features(input, concerned, &mut found),
        Op::CheckMediaUrl => {
            if let Some(url) = str_field(input, "url") {
                url_features(url, &mut found);
            }
            if let Answer::Output(expected) = reference
                && let Some(reason) = str_field(expected, "reason").filter(|r| r.len() <= 40)
            {
                found.insert(format!("refused:{reason}"));
            }
            found.retain(|f| url_rule_reads(rule, f));
        }
        Op::ResolveRetryImages => retry_features(input, &mut found),
        Op::SanitizeToolNames => names_features(input, &mut found),
        Op::NeutralizeText | Op::ParseReply | Op::NormalizeStream => {}
    }
    // A directive's disguise tells S1's causes apart: read on the lines the SUT let through.
    if matches!(rule, Rule::S1 | Rule::D1)
        && let Answer::Output(output) = answer
    {
        for text in output_texts(output) {
            directive_features(text, &mut found);
        }
    }
    found.into_iter().collect()
}

/// Whether `feature` of a URL can tell causes apart under `rule`: each U rule is about one part
/// of the URL (its scheme, userinfo, IP literal or name); the other parts, and the reason the
/// reference gave first, are incidental. U1 (parsing) may hang on any of them.
fn url_rule_reads(rule: Rule, feature: &str) -> bool {
    let prefixes: &[&str] = match rule {
        Rule::U2 => &["scheme:"],
        Rule::U3 => &["userinfo"],
        Rule::U4 | Rule::U5 => &["host:"],
        Rule::U6 | Rule::U7 => &["name:", "tld:"],
        _ => &[""],
    };
    prefixes.iter().any(|p| feature.starts_with(p))
}

/// The features of a tool result that describe its images (what S2's causes differ by).
pub fn is_image_feature(feature: &str) -> bool {
    ["mime:image", "image:", "block:image"]
        .iter()
        .any(|p| feature.starts_with(p))
}

/// Every string of `v` under a `text` key, or `v` itself when it is a string.
fn output_texts(v: &Value) -> Vec<&str> {
    let mut found = Vec::new();
    let mut stack = vec![(None, v)];
    while let Some((key, value)) = stack.pop() {
        match value {
            Value::String(s) if key.is_none_or(|k| k == "text") => found.push(s.as_str()),
            Value::Array(items) => stack.extend(items.iter().map(|v| (key, v))),
            Value::Object(map) => stack.extend(map.iter().map(|(k, v)| (Some(k.as_str()), v))),
            _ => {}
        }
    }
    found
}

/// The result's own features (its flags, its `content`'s shape, whether it breaks the MCP schema)
/// and those of the concerned blocks: the other blocks are incidental to the cause.
fn tool_result_features(input: &Value, concerned: &Concerned, found: &mut BTreeSet<String>) {
    let Some(result) = input.as_object() else {
        found.insert(format!("result:{}", json_type(input)));
        return;
    };
    match result.get("content") {
        Some(Value::Array(_)) => {}
        None | Some(Value::Null) => {
            found.insert("content:missing".into());
        }
        Some(other) => {
            found.insert(format!("content:{}", json_type(other)));
        }
    }
    match result.get("isError") {
        None | Some(Value::Bool(false)) => {}
        Some(Value::Bool(true)) => {
            found.insert("isError".into());
        }
        Some(_) => {
            found.insert("isError:not-bool".into());
        }
    }
    for key in ["structuredContent", "_meta"] {
        if result.contains_key(key) {
            found.insert(key.into());
        }
    }
    refused_whole_features(input, found);
    for (i, block) in content(input).into_iter().enumerate() {
        if let Concerned::Blocks(blocks) = concerned
            && !blocks.contains(&i)
        {
            continue;
        }
        block_features(block, found);
    }
}

/// The disguise of each directive line of `text` (S1's reading, else the wider one): what
/// stands before the word, how the word and its colon are spelled, and what ended the line
/// before it. The plain form (first line, nothing before, `MEDIA:` in capitals) has no feature,
/// so an entry lists only the disguises its cause needs.
fn directive_features(text: &str, found: &mut BTreeSet<String>) {
    let mut lines = Vec::new();
    let mut start = 0;
    let mut before: Option<&str> = None;
    let mut ends: Vec<(usize, usize)> = directive::terminators(text)
        .map(|r| (r.start, r.end))
        .collect();
    ends.push((text.len(), text.len()));
    for (end, next) in ends {
        lines.push((before, &text[start..end]));
        before = Some(&text[end..next]);
        start = next;
    }
    let strict: Vec<_> = lines
        .iter()
        .filter(|(_, l)| directive::is_directive_line(l))
        .collect();
    let chosen = match strict.is_empty() {
        true => lines.iter().filter(|(_, l)| may_be_directive(l)).collect(),
        false => strict,
    };
    for (before, line) in chosen {
        match before {
            None => {}
            Some("\n" | "\r\n") => {
                found.insert("line:after-lf".into());
            }
            Some(_) => {
                found.insert("line:after-other-break".into());
            }
        }
        let word_at = line
            .char_indices()
            .find(|(_, c)| c.is_alphanumeric())
            .map_or(line.len(), |(i, _)| i);
        if let Some(lead) = lead_class(&line[..word_at]) {
            found.insert(format!("lead:{lead}"));
        }
        if let Some(word) = word_class(&line[word_at..]) {
            found.insert(format!("word:{word}"));
        }
    }
}

fn lead_class(lead: &str) -> Option<&'static str> {
    Some(if lead.is_empty() {
        return None;
    } else if lead.chars().all(|c| c == ' ' || c == '\t') {
        "ascii-blank"
    } else if lead.chars().any(char::is_control) {
        "control"
    } else if lead.chars().all(char::is_whitespace) {
        "unicode-blank"
    } else if lead
        .chars()
        .any(|c| !c.is_whitespace() && !c.is_ascii_punctuation())
    {
        "hidden-or-symbol"
    } else {
        "punctuation"
    })
}

fn word_class(rest: &str) -> Option<&'static str> {
    let Some(word) = rest.get(..5).filter(|w| w.eq_ignore_ascii_case("media")) else {
        // Not five ASCII letters: a hidden character inside, or compatibility forms.
        let hidden = rest.chars().take(8).any(|c| {
            matches!(c, '\u{ad}' | '\u{200b}'..='\u{200f}' | '\u{2060}'..='\u{2064}' | '\u{feff}')
        });
        return Some(if hidden { "hidden-inside" } else { "compat" });
    };
    match (word, rest[5..].starts_with(':')) {
        (_, false) => Some("compat-colon"),
        ("MEDIA", true) => None,
        // Lower and mixed case break the same matchers: one feature.
        _ => Some("case-folded"),
    }
}

/// How a URL's host is written, and what it carries besides.
fn url_features(url: &str, found: &mut BTreeSet<String>) {
    let Ok(parsed) = url::Url::parse(url) else {
        found.insert("url:unparseable".into());
        return;
    };
    found.insert(format!(
        "scheme:{}",
        match parsed.scheme() {
            s @ ("https" | "http" | "file" | "data") => s,
            _ => "other",
        }
    ));
    if !parsed.username().is_empty() || parsed.password().is_some() {
        found.insert("userinfo".into());
    }
    if parsed.port().is_some() {
        found.insert("port".into());
    }
    let written = url.split_once("://").map_or("", |(_, rest)| {
        rest.split(['/', '?', '#']).next().unwrap_or_default()
    });
    let written_host = written.rsplit('@').next().unwrap_or_default();
    if written_host.contains('%') {
        found.insert("host:percent-encoded".into());
    }
    if !written_host.is_ascii() {
        found.insert("host:non-ascii".into());
    }
    match parsed.host() {
        None => {
            found.insert("host:none".into());
        }
        Some(url::Host::Ipv4(_)) => {
            let plain = written_host
                .split(':')
                .next()
                .is_some_and(|h| h.parse::<std::net::Ipv4Addr>().is_ok());
            found.insert(format!(
                "host:ipv4{}",
                if plain { "" } else { "-respelled" }
            ));
        }
        Some(url::Host::Ipv6(ip)) => {
            let embedded = !crate::oracle::url::embedded_ipv4(ip).is_empty();
            found.insert(format!(
                "host:ipv6{}",
                if embedded { "-embedded-ipv4" } else { "" }
            ));
        }
        Some(url::Host::Domain(name)) => {
            if name.ends_with('.') {
                found.insert("name:trailing-dot".into());
            }
            let name = name.trim_end_matches('.');
            let last = name.rsplit('.').next().unwrap_or_default();
            if !name.contains('.') {
                found.insert("name:single-label".into());
            }
            if name == "localhost" || name.ends_with(".localhost") {
                found.insert("name:localhost".into());
            } else if name.split('.').any(|l| l.starts_with("xn--")) {
                found.insert("name:idna".into());
            } else if name.split('.').filter(|l| l.parse::<u8>().is_ok()).count() >= 4
                || name
                    .split(['.', '-'])
                    .filter(|l| l.parse::<u8>().is_ok())
                    .count()
                    >= 4
            {
                found.insert("name:embeds-ip".into());
            } else if name.contains('.') && last.chars().all(|c| c.is_ascii_alphabetic()) {
                found.insert(format!("tld:{}", tld_class(last)));
            }
        }
    }
}

fn tld_class(tld: &str) -> &'static str {
    match tld {
        "local" | "internal" | "localdomain" | "lan" | "home" | "corp" | "intranet" | "test"
        | "invalid" | "example" | "onion" | "alt" | "arpa" => "special",
        _ => "public",
    }
}

fn retry_features(input: &Value, found: &mut BTreeSet<String>) {
    let attempt = input.get("attempt").and_then(Value::as_u64);
    found.insert(
        match attempt {
            Some(0) => "attempt:first",
            Some(_) => "attempt:retry",
            None => "attempt:other",
        }
        .into(),
    );
    let failure = str_field(input, "previousFailure");
    found.insert(format!(
        "failure:{}",
        match failure {
            None => "none",
            Some("format") => "format",
            Some(_) => "other",
        }
    ));
    let primary = str_field(input, "primaryProvider").map(str::to_ascii_lowercase);
    let candidate = str_field(input, "candidateProvider").map(str::to_ascii_lowercase);
    found.insert(
        match (&primary, &candidate) {
            (None, _) => "provider:primary-unknown",
            (Some(p), Some(c)) if p == c => "provider:same",
            _ => "provider:other",
        }
        .into(),
    );
    if str_field(input, "primaryProvider") != primary.as_deref()
        || str_field(input, "candidateProvider") != candidate.as_deref()
    {
        found.insert("provider:case-differs".into());
    }
    let images = input
        .get("images")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    found.insert(format!(
        "images:{}",
        if images == 0 { "none" } else { "some" }
    ));
}

fn names_features(input: &Value, found: &mut BTreeSet<String>) {
    let Some(names) = input.get("names").and_then(Value::as_array) else {
        found.insert("names:not-array".into());
        return;
    };
    if names.len() > 20 {
        found.insert("names:over-20".into());
    }
    for name in names {
        let Some(name) = name.as_str() else {
            found.insert("name:not-string".into());
            continue;
        };
        if name.chars().count() > 100 {
            found.insert("name:over-100".into());
        }
        if name.is_empty() {
            found.insert("name:empty".into());
        }
        if name
            .chars()
            .any(|c| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
        {
            found.insert(
                match name.is_ascii() {
                    true => "name:ascii-outside-set",
                    false => "name:non-ascii",
                }
                .into(),
            );
        }
    }
    let mut seen = std::collections::HashSet::new();
    if names.iter().any(|n| !seen.insert(n.to_string())) {
        found.insert("names:duplicate".into());
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::oracle::judge::gate;
    use crate::oracle::signature::Signature;

    /// What `read` finds in `text`, sorted.
    fn found(read: fn(&str, &mut BTreeSet<String>), text: &str) -> Vec<String> {
        let mut found = BTreeSet::new();
        read(text, &mut found);
        found.into_iter().collect()
    }

    #[test]
    fn a_directives_disguise_is_a_feature() {
        let features = |text| found(directive_features, text);
        assert!(
            features("MEDIA:/x").is_empty(),
            "the plain form has no feature"
        );
        assert_eq!(
            features("a\r media:/x"),
            [
                "lead:ascii-blank",
                "line:after-other-break",
                "word:case-folded"
            ]
        );
        assert_eq!(
            features("a\r\nMeDiA:/x"),
            ["line:after-lf", "word:case-folded"]
        );
        assert!(features("a\n\u{3000}MEDIA:/x").contains(&"lead:unicode-blank".to_string()));
        assert!(features("\u{1}MEDIA:/x").contains(&"lead:control".to_string()));
        assert!(features("ＭＥＤＩＡ：/x").contains(&"word:compat".to_string()));
        assert!(features("M\u{200b}EDIA:/x").contains(&"word:hidden-inside".to_string()));
        assert!(features("no directive here").is_empty());
    }

    #[test]
    fn a_urls_host_form_is_a_feature() {
        let features = |url| found(url_features, url);
        assert!(features("https://localhost./a").contains(&"name:trailing-dot".to_string()));
        assert!(features("https://localhost./a").contains(&"name:localhost".to_string()));
        assert!(features("https://0x7f.1/").contains(&"host:ipv4-respelled".to_string()));
        assert!(features("https://127.0.0.1/").contains(&"host:ipv4".to_string()));
        assert!(
            features("https://[::ffff:127.0.0.1]/")
                .contains(&"host:ipv6-embedded-ipv4".to_string())
        );
        assert!(features("https://a.internal/").contains(&"tld:special".to_string()));
        assert!(features("http://u:p@example.com:8080/").contains(&"userinfo".to_string()));
        // Each U rule reads its own part of the URL: the rest is incidental.
        let of = |rule, url: &str| {
            Signature::of(
                Op::CheckMediaUrl,
                &json!({"url": url}),
                &Answer::Output(json!({"ok": true})),
                &Answer::Output(json!({"ok": false, "reason": "scheme"})),
                &gate(rule, "accepted", "d"),
            )
            .features
        };
        assert_eq!(of(Rule::U2, "http://u@127.0.0.1:8/"), ["scheme:http"]);
        assert_eq!(of(Rule::U3, "http://u@127.0.0.1:8/"), ["userinfo"]);
        assert_eq!(of(Rule::U4, "http://u@127.0.0.1:8/"), ["host:ipv4"]);
    }
}
