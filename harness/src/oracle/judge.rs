//! Invariant checkers: one per rule id, judged on a SUT's input and output alone.
//!
//! They avoid the reference's code paths on purpose: S1 uses `directive_check` (not the
//! neutralizer), S2 uses the mock providers' hand-written image reader and base64 decoder (not
//! `image.rs`), S3 uses `std::net` predicates and its own name list (not the IANA tables of
//! `url_policy`), and the provider check runs the mock providers' validators in process. The
//! reference output is used only to classify the remaining differences as divergences.

use std::collections::HashSet;
use std::net::IpAddr;

use serde::Serialize;
use serde_json::Value;

use crate::oracle::directive::{is_directive_line, lines};
use crate::protocol::{Answer, Fault, Op};

/// Largest base64 image accepted by every provider (S2).
const MAX_IMAGE_BASE64: usize = 5_242_880;
const MAX_IMAGE_SIDE: u32 = 8000;
const S2_MIME_TYPES: [&str; 3] = ["image/png", "image/jpeg", "image/webp"];

/// One broken rule on one case.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Violation {
    /// Rule id (`S1`, `F2`, `provider`, `crash`, `divergence`, ...).
    pub rule: &'static str,
    /// Gate failure (true) or divergence (false).
    pub gate: bool,
    /// Stable, data-free description: part of the deduplication signature.
    pub kind: String,
    /// What exactly was seen, for the report.
    pub detail: String,
}

fn gate(rule: &'static str, kind: impl Into<String>, detail: impl Into<String>) -> Violation {
    Violation {
        rule,
        gate: true,
        kind: kind.into(),
        detail: detail.into(),
    }
}

/// Judges one answered case. `reference` is the reference's answer to the same input.
pub fn judge(op: Op, input: &Value, answer: &Answer, reference: &Answer) -> Vec<Violation> {
    let output = match answer {
        Answer::Output(output) => output,
        Answer::Fault(fault) => return vec![fault_violation(fault)],
        Answer::Refused(message) => {
            return match reference {
                Answer::Refused(_) => Vec::new(),
                _ => vec![Violation {
                    rule: "divergence",
                    gate: false,
                    kind: "refused an input the reference answers".into(),
                    detail: crate::excerpt::bounded(message, 500).into_owned(),
                }],
            };
        }
    };
    let mut found = match op {
        Op::CoerceToolResult => coerce_tool_result(input, output),
        Op::NeutralizeText => neutralize_text(input, output),
        Op::CheckMediaUrl => check_media_url(input, output),
        Op::ParseReply => parse_reply(input, output),
        Op::NormalizeStream => normalize_stream(input, output),
        Op::ResolveRetryImages => resolve_retry_images(input, output),
        Op::SanitizeToolNames => sanitize_tool_names(input, output),
    };
    if found.is_empty()
        && let Answer::Output(expected) = reference
        && comparable(op, expected) != comparable(op, output)
    {
        found.push(Violation {
            rule: "divergence",
            gate: false,
            kind: "output differs from the reference".into(),
            detail: format!(
                "reference: {}",
                crate::excerpt::bounded(&expected.to_string(), 500)
            ),
        });
    }
    found
}

/// The part of an output that must match the reference; `reason` is free text in the protocol.
fn comparable(op: Op, output: &Value) -> Value {
    match op {
        Op::CheckMediaUrl => output.get("allowed").cloned().unwrap_or(Value::Null),
        _ => output.clone(),
    }
}

fn fault_violation(fault: &Fault) -> Violation {
    match fault {
        Fault::Hang { timeout_ms } => gate(
            "hang",
            "no answer in time",
            format!("no answer within {timeout_ms} ms"),
        ),
        Fault::Crash { status, stderr } => gate(
            "crash",
            "process exited",
            format!("{status}; stderr: {}", crate::excerpt::tail(stderr, 2000)),
        ),
        Fault::Protocol { line, problem } => gate("protocol", problem.clone(), line.clone()),
    }
}

/// S1 over one delivered or forwarded text.
fn s1(text: &str, place: &str, out: &mut Vec<Violation>) {
    if let Some(line) = lines(text).find(|l| is_directive_line(l)) {
        out.push(gate(
            "S1",
            format!("directive line in {place}"),
            crate::excerpt::bounded(line, 300).into_owned(),
        ));
    }
}

fn shape(what: &str) -> Vec<Violation> {
    vec![gate(
        "protocol",
        format!("output shape: {what}"),
        what.to_string(),
    )]
}

// ---------------------------------------------------------------------------------------------
// coerce_tool_result: S1, S2, F1–F5, provider acceptance

fn coerce_tool_result(input: &Value, output: &Value) -> Vec<Violation> {
    let mut out = Vec::new();
    let Some(blocks) = output.get("content").and_then(Value::as_array) else {
        return shape("`content` is not an array");
    };
    let Some(is_error) = output.get("isError").and_then(Value::as_bool) else {
        return shape("`isError` is not a boolean");
    };
    let mut out_texts = Vec::new();
    let mut out_images = Vec::new();
    for (j, block) in blocks.iter().enumerate() {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => match block.get("text").and_then(Value::as_str) {
                Some(text) => {
                    s1(text, "a text block", &mut out);
                    out_texts.push((j, text));
                }
                None => out.push(gate(
                    "F4",
                    "text block without string text",
                    block.to_string(),
                )),
            },
            Some("image") => match s2_problem(block) {
                None => out_images.push((
                    j,
                    block
                        .get("data")
                        .and_then(Value::as_str)
                        .unwrap_or_default(),
                )),
                Some(problem) => out.push(gate(
                    "S2",
                    problem,
                    crate::excerpt::bounded(&block.to_string(), 300).into_owned(),
                )),
            },
            other => out.push(gate(
                "F4",
                "block that is neither text nor image",
                format!("type {other:?}"),
            )),
        }
    }
    let input_blocks: Vec<&Value> = match input.get("content") {
        Some(Value::Array(items)) => items.iter().collect(),
        _ => Vec::new(),
    };
    // F3: isError preserved, one block per non-blank input block.
    let want_error = matches!(input.get("isError"), Some(Value::Bool(true)));
    if input.is_object() && is_error != want_error {
        out.push(gate(
            "F3",
            "isError not preserved",
            format!(
                "input isError {:?}, output {is_error}",
                input.get("isError")
            ),
        ));
    }
    let droppable = |b: &&Value| {
        b.get("type").and_then(Value::as_str) == Some("text")
            && b.get("text")
                .and_then(Value::as_str)
                .is_some_and(crate::reference::coerce::is_blank)
    };
    // Blank text blocks may be dropped or kept (providers judge kept ones).
    let least = input_blocks.iter().filter(|b| !droppable(b)).count();
    if least > 0 && !(least..=input_blocks.len()).contains(&blocks.len()) {
        out.push(gate(
            "F3",
            "block count changed",
            format!(
                "{least} non-blank input blocks, {} output blocks",
                blocks.len()
            ),
        ));
    }
    // F1: every valid input image is an output image with identical data, in order.
    let mut last = None;
    for block in &input_blocks {
        if block.get("type").and_then(Value::as_str) == Some("image") && s2_problem(block).is_none()
        {
            let data = block
                .get("data")
                .and_then(Value::as_str)
                .unwrap_or_default();
            match out_images
                .iter()
                .find(|(j, d)| *d == data && last.is_none_or(|l| *j > l))
            {
                Some((j, _)) => last = Some(*j),
                None => out.push(gate(
                    "F1",
                    "valid image lost or reordered",
                    format!("{} base64 characters", data.len()),
                )),
            }
        }
    }
    // F2: every non-blank text survives, changed at most by S1's prefix; F4: payloads never in text.
    for block in &input_blocks {
        let kind = block.get("type").and_then(Value::as_str);
        if kind == Some("text")
            && let Some(text) = block.get("text").and_then(Value::as_str)
            && !crate::reference::coerce::is_blank(text)
            && !out_texts.iter().any(|(_, t)| text_survives(text, t))
        {
            out.push(gate(
                "F2",
                "text lost or changed",
                crate::excerpt::bounded(text, 300).into_owned(),
            ));
        }
        for payload in ["data", "blob"].iter().filter_map(|k| payload_of(block, k)) {
            if out_texts.iter().any(|(_, t)| t.contains(payload)) {
                out.push(gate(
                    "F4",
                    "base64 payload copied into text",
                    format!("{} characters", payload.len()),
                ));
            }
        }
        if kind == Some("resource_link")
            && let Some(uri) = block.get("uri").and_then(Value::as_str)
            && !out_texts.iter().any(|(_, t)| t.contains(uri))
        {
            out.push(gate(
                "F4",
                "resource link URI not kept",
                crate::excerpt::bounded(uri, 300).into_owned(),
            ));
        }
    }
    if out.is_empty() {
        out.extend(provider_rejections(&Value::Array(blocks.clone())));
    }
    out
}

/// Whether `output` carries `input` with at most a prefix inserted on directive lines (F2).
fn text_survives(input: &str, output: &str) -> bool {
    if input == output {
        return true;
    }
    let ins: Vec<&str> = lines(input).collect();
    let outs: Vec<&str> = lines(output).collect();
    ins.len() == outs.len()
        && ins
            .iter()
            .zip(&outs)
            .all(|(i, o)| i == o || (is_directive_line(i) && is_insertion(i, o)))
}

/// Whether `o` is `i` with one run of text inserted somewhere.
pub(crate) fn is_insertion(i: &str, o: &str) -> bool {
    let prefix = i.bytes().zip(o.bytes()).take_while(|(a, b)| a == b).count();
    let suffix = i
        .bytes()
        .rev()
        .zip(o.bytes().rev())
        .take_while(|(a, b)| a == b)
        .count();
    o.len() > i.len() && prefix + suffix >= i.len()
}

fn payload_of<'v>(block: &'v Value, key: &str) -> Option<&'v str> {
    let value = block
        .get(key)
        .or_else(|| block.get("resource").and_then(|r| r.get(key)))?;
    value.as_str().filter(|s| s.len() >= 16)
}

/// S2 judged with the mock providers' own decoder and image reader.
fn s2_problem(block: &Value) -> Option<&'static str> {
    let Some(data) = block
        .get("data")
        .and_then(Value::as_str)
        .filter(|d| !d.is_empty())
    else {
        return Some("image without data");
    };
    let mime = block
        .get("mimeType")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !S2_MIME_TYPES.contains(&mime) {
        return Some("image media type not accepted by every provider");
    }
    if data.len() > MAX_IMAGE_BASE64 {
        return Some("image larger than 5242880 base64 characters");
    }
    let Some(bytes) = mock_providers::b64::decode(mock_providers::b64::Flavor::Strict, data) else {
        return Some("image data is not canonical base64");
    };
    let Some(info) = mock_providers::image::inspect(&bytes) else {
        return Some("image bytes are not a readable image");
    };
    if info.kind.media_type() != mime {
        return Some("image bytes do not match the media type");
    }
    match info.size {
        Some((w, h)) if w > 0 && h > 0 && w <= MAX_IMAGE_SIDE && h <= MAX_IMAGE_SIDE => None,
        Some(_) => Some("image dimensions out of range"),
        None => Some("image header unreadable"),
    }
}

/// The output's blocks in a tool result, sent to every mock provider in process.
fn provider_rejections(blocks: &Value) -> Vec<Violation> {
    mock_providers::Provider::ALL
        .into_iter()
        .filter_map(|provider| {
            let body = mock_providers::tool_result_request(provider, blocks);
            match mock_providers::validate(provider, &body) {
                mock_providers::Verdict::Accepted => None,
                verdict @ mock_providers::Verdict::Rejected { status, .. } => Some(gate(
                    "provider",
                    format!("{} answered {status}", provider.name()),
                    verdict.message().unwrap_or_default().to_string(),
                )),
            }
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// neutralize_text: S1, D1 fidelity

fn neutralize_text(input: &Value, output: &Value) -> Vec<Violation> {
    let (Some(before), Some(after)) = (
        input.get("text").and_then(Value::as_str),
        output.get("text").and_then(Value::as_str),
    ) else {
        return shape("`text` is not a string");
    };
    let mut out = Vec::new();
    s1(after, "the text", &mut out);
    if out.is_empty() && !text_survives(before, after) {
        out.push(gate(
            "F2",
            "non-directive text changed",
            crate::excerpt::bounded(before, 300).into_owned(),
        ));
    }
    out
}

// ---------------------------------------------------------------------------------------------
// check_media_url: S3

fn check_media_url(input: &Value, output: &Value) -> Vec<Violation> {
    let Some(allowed) = output.get("allowed").and_then(Value::as_bool) else {
        return shape("`allowed` is not a boolean");
    };
    let url = input.get("url").and_then(Value::as_str).unwrap_or_default();
    match (allowed, remote_problem(url)) {
        (true, Some(problem)) => vec![gate(
            "S3",
            problem,
            crate::excerpt::bounded(url, 300).into_owned(),
        )],
        _ => Vec::new(),
    }
}

/// Why `url` is not public `https:` (S3), judged with `std::net` and a short name list.
pub fn remote_problem(url: &str) -> Option<&'static str> {
    let Ok(parsed) = url::Url::parse(url) else {
        return Some("accepted an unparseable URL");
    };
    if parsed.scheme() != "https" {
        return Some("accepted a non-https URL");
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Some("accepted a URL with userinfo");
    }
    match parsed.host() {
        None => Some("accepted a URL without host"),
        Some(url::Host::Ipv4(ip)) => {
            (!ip_is_public(IpAddr::V4(ip))).then_some("accepted a private IPv4 host")
        }
        Some(url::Host::Ipv6(ip)) => {
            (!ip_is_public(IpAddr::V6(ip))).then_some("accepted a private IPv6 host")
        }
        Some(url::Host::Domain(name)) => {
            let name = name.trim_end_matches('.');
            let internal = [
                "localhost",
                "local",
                "internal",
                "localdomain",
                "lan",
                "home",
                "corp",
                "intranet",
                "test",
                "invalid",
                "example",
                "onion",
                "alt",
                "arpa",
            ];
            let last = name.rsplit('.').next().unwrap_or(name);
            if !name.contains('.') || internal.contains(&last) || name.split('.').any(str::is_empty)
            {
                Some("accepted an internal host name")
            } else {
                None
            }
        }
    }
}

fn ip_is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            !(v4.is_private()
                || v4.is_loopback()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_documentation()
                || a == 0
                || a >= 240
                || (a == 100 && (64..128).contains(&b))
                || (a == 198 && (b == 18 || b == 19))
                || (a == 192 && b == 0 && v4.octets()[2] == 0))
        }
        IpAddr::V6(v6) => {
            // Forms that embed an IPv4 address are judged by it (U5): mapped and compatible,
            // NAT64, 6to4, Teredo (server and obfuscated client).
            if let Some(v4) = v6.to_ipv4() {
                return ip_is_public(IpAddr::V4(v4));
            }
            let s = v6.segments();
            let v4 = |hi: u16, lo: u16| {
                IpAddr::V4(std::net::Ipv4Addr::from(
                    (u32::from(hi) << 16) | u32::from(lo),
                ))
            };
            match (s[0], s[1]) {
                (0x64, 0xff9b) if s[2..6] == [0, 0, 0, 0] => return ip_is_public(v4(s[6], s[7])),
                (0x2002, _) => return ip_is_public(v4(s[1], s[2])),
                (0x2001, 0) => {
                    return ip_is_public(v4(s[2], s[3])) && ip_is_public(v4(!s[6], !s[7]));
                }
                _ => {}
            }
            // Global unicast, minus IETF protocol assignments and documentation prefixes.
            (0x2000..0x4000).contains(&s[0])
                && !(s[0] == 0x2001 && (s[1] < 0x200 || s[1] == 0xdb8))
                && !(s[0] == 0x3fff && s[1] < 0x1000)
        }
    }
}

// ---------------------------------------------------------------------------------------------
// parse_reply and normalize_stream: S1, S3 (remote and local), D3

fn parse_reply(input: &Value, output: &Value) -> Vec<Violation> {
    let (Some(text), Some(media)) = (
        output.get("text").and_then(Value::as_str),
        output.get("mediaUrls").and_then(Value::as_array),
    ) else {
        return shape("`text` or `mediaUrls` missing");
    };
    let mut out = Vec::new();
    s1(text, "the reply text", &mut out);
    media_problems(input, media, &mut out);
    out
}

fn normalize_stream(input: &Value, output: &Value) -> Vec<Violation> {
    let Some(deliveries) = output.get("deliveries").and_then(Value::as_array) else {
        return shape("`deliveries` is not an array");
    };
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    for delivery in deliveries {
        if let Some(text) = delivery.get("text").and_then(Value::as_str) {
            s1(text, "a delivery", &mut out);
        }
        let media = delivery
            .get("mediaUrls")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        media_problems(input, &media, &mut out);
        for target in media.iter().filter_map(Value::as_str) {
            if !seen.insert(canonical_media(target)) {
                out.push(gate(
                    "D3",
                    "media delivered twice in a turn",
                    crate::excerpt::bounded(target, 300).into_owned(),
                ));
            }
        }
    }
    out
}

fn media_problems(input: &Value, media: &[Value], out: &mut Vec<Violation>) {
    let roots: Vec<&str> = input
        .get("roots")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for target in media {
        let Some(target) = target.as_str() else {
            out.push(gate(
                "protocol",
                "output shape: media entry is not a string",
                target.to_string(),
            ));
            continue;
        };
        let problem = if has_scheme(target) {
            remote_problem(target)
        } else {
            local_problem(target, &roots)
        };
        if let Some(problem) = problem {
            out.push(gate(
                "S3",
                problem,
                crate::excerpt::bounded(target, 300).into_owned(),
            ));
        }
    }
}

pub(crate) fn has_scheme(target: &str) -> bool {
    target.split_once(':').is_some_and(|(scheme, _)| {
        scheme.len() > 1
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    })
}

/// A local path is accepted only inside a root, after lexical normalization.
pub(crate) fn local_problem(target: &str, roots: &[&str]) -> Option<&'static str> {
    if target.contains('\0') {
        return Some("accepted a path with NUL");
    }
    let absolute = if target.starts_with('/') {
        target.to_string()
    } else {
        match roots.first() {
            Some(root) => format!("{root}/{target}"),
            None => return Some("accepted a local path with no root configured"),
        }
    };
    let path = lexical(&absolute)?;
    let inside = roots
        .iter()
        .filter_map(|r| lexical(r))
        .any(|root| path == root || path.starts_with(&format!("{}/", root.trim_end_matches('/'))));
    (!inside).then_some("accepted a local path outside the roots")
}

/// `a/./b/../c` → `a/c`; `None` when `..` climbs above the start.
fn lexical(path: &str) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    Some(format!("/{}", parts.join("/")))
}

pub(crate) fn canonical_media(target: &str) -> String {
    if has_scheme(target) {
        url::Url::parse(target)
            .map(|u| u.to_string())
            .unwrap_or_else(|_| target.to_string())
    } else {
        lexical(target).unwrap_or_else(|| target.to_string())
    }
}

// ---------------------------------------------------------------------------------------------
// resolve_retry_images (S4, R1–R6) and sanitize_tool_names (P2)

fn resolve_retry_images(input: &Value, output: &Value) -> Vec<Violation> {
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
    let first = attempt == 0 && failure.is_none();
    let strip = !first
        && (failure == Some("format")
            // A blank primary id is unknown (R4).
            || primary.is_none_or(|p| p.trim().is_empty() || !p.eq_ignore_ascii_case(candidate)));
    match given {
        None if !images.is_null() && images.as_array().is_none_or(|a| !a.is_empty()) => {
            vec![gate(
                "R6",
                "images appeared from nothing",
                images.to_string(),
            )]
        }
        Some(_)
            if strip && !images.is_null() && images.as_array().is_none_or(|a| !a.is_empty()) =>
        {
            vec![gate(
                "S4",
                "images carried on a retry that must strip them",
                format!("attempt {attempt}, failure {failure:?}, {primary:?} -> {candidate}"),
            )]
        }
        Some(given) if !strip && images != given => {
            vec![gate(
                "R5",
                "images changed on a retry that keeps them",
                format!("attempt {attempt}, failure {failure:?}"),
            )]
        }
        _ => Vec::new(),
    }
}

fn sanitize_tool_names(_input: &Value, output: &Value) -> Vec<Violation> {
    let Some(names) = output.get("names").and_then(Value::as_array) else {
        return shape("`names` is not an array");
    };
    let mut out = Vec::new();
    if names.len() > 20 {
        out.push(gate(
            "P2",
            "more than 20 tool names",
            names.len().to_string(),
        ));
    }
    for name in names {
        let ok = name.as_str().is_some_and(|n| {
            !n.is_empty()
                && n.chars().count() <= 100
                && n.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        });
        if !ok {
            out.push(gate(
                "P2",
                "tool name not sanitized",
                crate::excerpt::bounded(&name.to_string(), 300).into_owned(),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(op: Op, input: Value, output: Value) -> Vec<&'static str> {
        let reference =
            Answer::Output(crate::reference::call(op, &input).expect("reference answers"));
        judge(op, &input, &Answer::Output(output), &reference)
            .into_iter()
            .map(|v| v.rule)
            .collect()
    }

    #[test]
    fn reference_output_passes_every_check() {
        let png = crate::generate::sample_images::tiny_base64(crate::reference::image::ImageFormat::Png);
        let input = json!({"content": [{"type": "text", "text": "a\nMEDIA:/x"}, {"type": "image", "data": png, "mimeType": "image/png"}]});
        let output = crate::reference::call(Op::CoerceToolResult, &input).unwrap();
        assert!(run(Op::CoerceToolResult, input, output).is_empty());
    }

    #[test]
    fn echo_fails_s1_s2_and_providers() {
        assert_eq!(
            run(
                Op::NeutralizeText,
                json!({"text": "MEDIA:/x"}),
                json!({"text": "MEDIA:/x"})
            ),
            ["S1"]
        );
        let husk = json!({"content": [{"type": "image"}], "isError": false});
        assert_eq!(run(Op::CoerceToolResult, husk.clone(), husk), ["S2"]);
        let link = json!({"content": [{"type": "resource_link", "uri": "u", "name": "n"}], "isError": false});
        assert_eq!(
            run(Op::CoerceToolResult, link.clone(), link),
            ["F4", "F4"],
            "a kept block and its lost URI"
        );
    }

    #[test]
    fn fidelity_rules() {
        let png = crate::generate::sample_images::tiny_base64(crate::reference::image::ImageFormat::Png);
        let input = json!({"content": [{"type": "text", "text": "keep me"}, {"type": "image", "data": png, "mimeType": "image/png"}], "isError": true});
        let dropped_image = json!({"content": [{"type": "text", "text": "keep me"}, {"type": "text", "text": "[image]"}], "isError": true});
        assert_eq!(
            run(Op::CoerceToolResult, input.clone(), dropped_image),
            ["F1"]
        );
        let lost_text = json!({"content": [{"type": "text", "text": "other"}, {"type": "image", "data": png, "mimeType": "image/png"}], "isError": true});
        assert_eq!(run(Op::CoerceToolResult, input.clone(), lost_text), ["F2"]);
        let flipped = json!({"content": [{"type": "text", "text": "keep me"}, {"type": "image", "data": png, "mimeType": "image/png"}], "isError": false});
        assert_eq!(run(Op::CoerceToolResult, input, flipped), ["F3"]);
    }

    #[test]
    fn url_and_media_rules() {
        for bad in [
            "https://127.0.0.1/x.png",
            "http://example.com/a.png",
            "https://[::ffff:10.0.0.1]/",
            "https://intranet/",
            "https://a.local/x",
            "https://u@example.com/",
        ] {
            assert_eq!(
                run(
                    Op::CheckMediaUrl,
                    json!({"url": bad}),
                    json!({"allowed": true})
                ),
                ["S3"],
                "{bad}"
            );
        }
        assert!(
            run(
                Op::CheckMediaUrl,
                json!({"url": "https://example.com/a.png"}),
                json!({"allowed": true, "reason": "ok"})
            )
            .is_empty()
        );
        assert_eq!(
            local_problem("/etc/passwd", &["/work"]),
            Some("accepted a local path outside the roots")
        );
        assert_eq!(
            local_problem("/work/../etc/passwd", &["/work"]),
            Some("accepted a local path outside the roots")
        );
        assert_eq!(local_problem("a/b.png", &["/work"]), None);
    }

    #[test]
    fn retry_and_tool_name_rules() {
        let png = json!([{"type": "image", "data": "x", "mimeType": "image/png"}]);
        let input = json!({"attempt": 1, "previousFailure": "rate_limit", "primaryProvider": "anthropic", "candidateProvider": "openai", "images": png});
        assert_eq!(
            run(Op::ResolveRetryImages, input, json!({"images": png})),
            ["S4"]
        );
        let same = json!({"attempt": 1, "previousFailure": "rate_limit", "primaryProvider": "anthropic", "candidateProvider": "Anthropic", "images": png});
        assert_eq!(
            run(Op::ResolveRetryImages, same, json!({"images": null})),
            ["R5"]
        );
        assert_eq!(
            run(
                Op::SanitizeToolNames,
                json!({"names": ["a b"]}),
                json!({"names": ["a b"]})
            ),
            ["P2"]
        );
    }

    #[test]
    fn faults_are_gate_failures() {
        let hang = judge(
            Op::NeutralizeText,
            &json!({}),
            &Answer::Fault(Fault::Hang { timeout_ms: 5 }),
            &Answer::Refused(String::new()),
        );
        assert_eq!(hang[0].rule, "hang");
        assert!(hang[0].gate);
    }
}
