//! `coerce_tool_result`: S1, S2, F1–F5, C1–C8 and provider acceptance.
//!
//! Output blocks are matched to input blocks in order (F3: one output block per input block,
//! blank text blocks may be dropped), and each pair is judged by what its input block is: a
//! text must survive (F2), a valid image must pass byte-identical (F1), other blocks must become
//! bounded text that keeps what a model needs and never a payload (C2–C6, F4). Counts may match
//! by accident (one block dropped, another added): a block that fails its pair but passes
//! against another output block is there, out of order (F3), not lost.

mod blocks;

use serde_json::Value;

use super::kept_text::{kept_directive, kept_directive_violation, s1};
use super::violation::{Violation, gate, shape};
use crate::excerpt::bounded;
use crate::oracle::image::s2_problem;
use crate::oracle::providers::provider_rejections;
use crate::rule::Rule;
use blocks::{blob_text, blocks_match, strings};
pub use blocks::{is_blank, json_readings, keeps_information, str_field};

pub(super) fn judge(input: &Value, output: &Value, expected: Option<&Value>) -> Vec<Violation> {
    let Some(content @ Value::Array(blocks)) = output.get("content") else {
        return shape("`content` is not an array");
    };
    let Some(is_error) = output.get("isError").and_then(Value::as_bool) else {
        return shape("`isError` is not a boolean");
    };
    let mut out = Vec::new();
    let mut texts = Vec::new();
    let mut images = Vec::new();
    for block in blocks {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => match block.get("text").and_then(Value::as_str) {
                Some(text) => {
                    s1(text, "a text block", &mut out);
                    texts.push(text);
                }
                None => out.push(gate(
                    Rule::F4,
                    "text block without string text",
                    bounded(&block.to_string(), 300).into_owned(),
                )),
            },
            Some("image") => match s2_problem(block) {
                None => images.push(str_field(block, "data").unwrap_or_default()),
                Some(problem) => out.push(gate(
                    Rule::S2,
                    problem,
                    bounded(&block.to_string(), 300).into_owned(),
                )),
            },
            other => out.push(gate(
                Rule::F4,
                "block that is neither text nor image",
                format!("type {other:?}"),
            )),
        }
    }
    match input.as_object() {
        None => not_an_object(blocks, is_error, &mut out),
        Some(result) => {
            let want_error = matches!(result.get("isError"), Some(Value::Bool(true)));
            if is_error != want_error {
                out.push(gate(
                    Rule::F3,
                    "isError not preserved",
                    format!(
                        "input isError {:?}, output {is_error}",
                        result.get("isError")
                    ),
                ));
            }
            if matches!(result.get("content"), None | Some(Value::Null)) {
                structured_content(result.get("structuredContent"), blocks, &mut out);
            }
            let (input_blocks, lone) = content_blocks(input);
            blocks_match(&input_blocks, lone, blocks, &texts, &images, &mut out);
            payload_free(&input_blocks, &texts, &mut out);
        }
    }
    if let Some(expected) = expected {
        more_permissive(input, expected, &texts, &images, &mut out);
    }
    if out.is_empty() {
        // The output's own array, not a copy of it (its images may be megabytes).
        out.extend(provider_rejections(content));
    }
    out
}

/// The blocks of a tool result's `content`, and whether they are a lone block where an array
/// belongs (still that block, or, to a SUT that reads it as a malformed content, JSON to render
/// whole).
pub fn content_blocks(result: &Value) -> (Vec<&Value>, bool) {
    match result.get("content") {
        Some(Value::Array(items)) => (items.iter().collect(), false),
        None | Some(Value::Null) => (Vec::new(), false),
        Some(single) => (vec![single], true),
    }
}

/// C8: a result that is not an object becomes one text block describing it, not an error.
fn not_an_object(blocks: &[Value], is_error: bool, out: &mut Vec<Violation>) {
    let one_text =
        blocks.len() == 1 && blocks[0].get("type").and_then(Value::as_str) == Some("text");
    if !one_text {
        out.push(gate(
            Rule::C8,
            "a result that is not an object is not one text block",
            format!("{} output blocks", blocks.len()),
        ));
    }
    if is_error {
        out.push(gate(
            Rule::F3,
            "isError set for a result without isError",
            "isError true".to_string(),
        ));
    }
}

/// C7: no `content` but an object `structuredContent` is one text block carrying its JSON.
fn structured_content(structured: Option<&Value>, blocks: &[Value], out: &mut Vec<Violation>) {
    let Some(Value::Object(fields)) = structured else {
        return;
    };
    let text = match blocks {
        [block] => str_field(block, "text"),
        _ => None,
    };
    let Some(text) = text else {
        out.push(gate(
            Rule::C7,
            "structuredContent is not one text block",
            format!("{} output blocks", blocks.len()),
        ));
        return;
    };
    // Keys spelled the same in every JSON writer (no escapes) must appear.
    let plain = |k: &&String| {
        k.len() <= 100
            && k.bytes()
                .all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\\')
    };
    if let Some(missing) = fields
        .keys()
        .filter(plain)
        .take(32)
        .find(|k| !text.contains(k.as_str()))
    {
        out.push(gate(
            Rule::C7,
            "structuredContent not carried into the text",
            format!("key {missing:?} missing"),
        ));
    }
}

fn is_payload_key(key: Option<&str>) -> bool {
    matches!(key, Some("data" | "blob"))
}

/// Base64 payloads of a block (`data` and `blob` strings at any depth, 16 characters or more):
/// F4 and C6 say they never reach text.
pub fn payloads(block: &Value) -> Vec<&str> {
    strings(block)
        .into_iter()
        .filter(|(key, s)| is_payload_key(*key) && s.len() >= 16)
        .map(|(_, s)| s)
        .collect()
}

/// F4: no input payload in any output text, unless the input also carried it in a field that
/// is no payload (a text, a label, even a `type`): that field may show it.
fn payload_free(input_blocks: &[&Value], texts: &[&str], out: &mut Vec<Violation>) {
    let carried_as_text: Vec<&str> = input_blocks
        .iter()
        .flat_map(|b| strings(b))
        .filter(|(key, _)| !is_payload_key(*key))
        .map(|(_, s)| s)
        .collect();
    for payload in input_blocks.iter().flat_map(|b| payloads(b)) {
        if texts.iter().any(|t| t.contains(payload))
            && !carried_as_text.iter().any(|t| t.contains(payload))
        {
            out.push(gate(
                Rule::F4,
                "base64 payload copied into text",
                format!("{} characters", payload.len()),
            ));
            return;
        }
    }
}

/// Asymmetric verdicts: the SUT keeps a directive line or an image the reference does not.
fn more_permissive(
    input: &Value,
    expected: &Value,
    texts: &[&str],
    images: &[&str],
    out: &mut Vec<Violation>,
) {
    let blocks = expected.get("content").and_then(Value::as_array);
    let reference_texts: Vec<&str> = blocks
        .into_iter()
        .flatten()
        .filter_map(|b| str_field(b, "text"))
        .collect();
    let reference_images: Vec<&str> = blocks
        .into_iter()
        .flatten()
        .filter(|b| str_field(b, "type") == Some("image"))
        .filter_map(|b| str_field(b, "data"))
        .collect();
    // A textual blob's text reaches the model too (C5).
    let blob_texts: Vec<String> = match input.get("content") {
        Some(Value::Array(items)) => items.iter().collect(),
        other => other.into_iter().collect::<Vec<_>>(),
    }
    .into_iter()
    .filter_map(|b| b.get("resource"))
    .filter_map(blob_text)
    .collect();
    let fields = text_fields(input)
        .into_iter()
        .chain(blob_texts.iter().map(String::as_str));
    if let Some(line) = kept_directive(fields, &reference_texts, texts) {
        out.push(kept_directive_violation(line));
    }
    // An image the reference refused whose bytes the SUT kept, naming the type they are, is not
    // more permissive: its own block passes S2 (F1 allows the correction).
    let input_images: Vec<&str> = input
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|b| str_field(b, "type") == Some("image"))
        .filter_map(|b| str_field(b, "data"))
        .collect();
    if images
        .iter()
        .any(|d| !reference_images.contains(d) && !input_images.contains(d))
    {
        let reasons: Vec<&str> = reference_texts
            .iter()
            .copied()
            .filter(|t| t.starts_with("[image"))
            .collect();
        out.push(gate(
            Rule::S2,
            "kept an image the reference refuses",
            bounded(&reasons.join(" "), 300).into_owned(),
        ));
    }
}

/// Every string of the input that may reach a text, payloads excepted.
fn text_fields(input: &Value) -> Vec<&str> {
    strings(input)
        .into_iter()
        .filter(|(key, _)| !is_payload_key(*key))
        .map(|(_, s)| s)
        .collect()
}
