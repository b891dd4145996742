//! What each input block of a tool result must become, and the pairwise check of an output
//! block against it (F1–F5, C1–C6).

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use super::super::kept_text::{keeps, text_survives};
use super::super::violation::{Violation, gate};
use crate::excerpt::bounded;
use crate::oracle::directive::{may_be_directive, terminators};
use crate::oracle::image::is_valid_input_image;
use crate::rule::Rule;

/// Bound for the JSON text of an unknown or malformed block (C6), marker included.
const C6_TEXT_MAX: usize = 8 * 1024;
/// Bound for any placeholder built from a non-text block (F4): a label, a URI and a media type,
/// each of which a normalizer may cut to the C6 bound.
const PLACEHOLDER_MAX: usize = 3 * C6_TEXT_MAX + 256;
/// Room for S1 prefixes a SUT may add, per line of a bounded text.
const PREFIX_ROOM: usize = 32;
/// Fields longer than this may be cut by a bounded placeholder, so they are not required whole.
const KEEP_MAX: usize = 4 * 1024;
/// Of a media type only its first bytes are required: a placeholder may bound it at any length
/// that keeps what RFC 6838 (4.2) recommends a type or subtype name stay within.
const MIME_HEAD: usize = 64;

/// What an input block must become.
enum Expect<'v> {
    /// Empty or blank text: may be dropped (providers reject it).
    Droppable,
    Text(&'v str),
    /// A `text` block whose `text` is not a string: malformed (C1), rendered as its JSON.
    MalformedText,
    ValidImage(&'v str),
    InvalidImage {
        mime: Option<&'v str>,
        data: Option<&'v str>,
    },
    Audio(Option<&'v str>),
    Link {
        uri: &'v str,
        label: Option<&'v str>,
    },
    ResourceText(&'v str),
    ResourceBlob {
        uri: &'v str,
        mime: Option<&'v str>,
        /// The blob's text when its media type is textual and its bytes are UTF-8 (C5).
        text: Option<String>,
    },
    /// Unknown type or malformed block (C6): bounded JSON text.
    Unknown(Option<&'v str>),
    /// A text that may also be rendered under a reversible encoding: a text block standing alone
    /// where the `content` array belongs, which a SUT may take for a malformed content and write
    /// as its JSON (C6). The text's information must be there (F2).
    Encoded(&'v str),
    /// Two readings the spec both allows (a field blank to one reader and not to another): the
    /// block passes when either does, and is judged by the first otherwise.
    Either(Box<Expect<'v>>, Box<Expect<'v>>),
}

pub fn str_field<'v>(v: &'v Value, key: &str) -> Option<&'v str> {
    v.get(key).and_then(Value::as_str)
}

/// The oracle's own blank: White_Space or a control character (what providers refuse as empty).
/// Renderers hide controls, so a field holding only those carries nothing; but they are not
/// blank to every reader, so where a SUT may use such a field as given, [`Expect::Either`]
/// accepts that too.
pub fn is_blank(text: &str) -> bool {
    text.chars().all(|c| c.is_whitespace() || c.is_control())
}

/// A media type whose content is text (C5): `text/*`, JSON, XML, YAML, CSV and the `+json`
/// and `+xml` structured suffixes, parameters and ASCII case aside.
static TEXTUAL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*(text/[^;]*|[^/;]*/((x-)?yaml|json|xml|csv|[^;]*\+(json|xml)))\s*(;|$)")
        .expect("valid regex")
});

/// A resource blob's text, when C5 asks for it: a textual media type and canonical base64
/// (read by the mock providers' strict decoder) of UTF-8 bytes that are not blank.
pub(super) fn blob_text(resource: &Value) -> Option<String> {
    let mime = str_field(resource, "mimeType")?.to_ascii_lowercase();
    if !TEXTUAL.is_match(&mime) {
        return None;
    }
    let blob = str_field(resource, "blob")?;
    let bytes = mock_providers::b64::decode(mock_providers::b64::Flavor::Strict, blob)?;
    String::from_utf8(bytes).ok().filter(|t| !is_blank(t))
}

fn expect(block: &Value) -> Expect<'_> {
    let Some(kind) = block.as_object().and(str_field(block, "type")) else {
        return Expect::Unknown(None);
    };
    let non_empty = |key| str_field(block, key).filter(|s| !s.is_empty());
    match kind {
        "text" => match block.get("text") {
            Some(Value::String(text)) if is_blank(text) => Expect::Droppable,
            Some(Value::String(text)) => Expect::Text(text),
            _ => Expect::MalformedText,
        },
        "image" if is_valid_input_image(block) => {
            Expect::ValidImage(str_field(block, "data").unwrap_or_default())
        }
        "image" => Expect::InvalidImage {
            mime: non_empty("mimeType"),
            data: non_empty("data"),
        },
        "audio" => Expect::Audio(non_empty("mimeType")),
        "resource_link" => match str_field(block, "uri") {
            Some(uri) => {
                let link = Expect::Link {
                    uri,
                    // C4's first non-empty label; a blank one carries nothing to keep, so a SUT
                    // may drop it (for the name or the URI alone).
                    label: non_empty("title")
                        .or_else(|| non_empty("name"))
                        .filter(|l| !is_blank(l)),
                };
                if is_blank(uri) {
                    // No link to the reference (C6), but a URI all the same to a SUT that uses
                    // it as given.
                    Expect::Either(Box::new(Expect::Unknown(Some(kind))), Box::new(link))
                } else {
                    link
                }
            }
            None => Expect::Unknown(Some(kind)),
        },
        "resource" => {
            let resource = block.get("resource").filter(|r| r.is_object());
            match resource.and_then(|r| str_field(r, "uri").map(|uri| (r, uri))) {
                Some((r, uri)) => {
                    let blob = Expect::ResourceBlob {
                        uri,
                        mime: str_field(r, "mimeType").filter(|s| !s.is_empty()),
                        text: blob_text(r),
                    };
                    match str_field(r, "text") {
                        Some(text) if !is_blank(text) => Expect::ResourceText(text),
                        // A blank text is no text to the reference, but it is the resource's
                        // text, as given, to a SUT that reads blank more narrowly.
                        Some(text) => {
                            Expect::Either(Box::new(blob), Box::new(Expect::ResourceText(text)))
                        }
                        None => blob,
                    }
                }
                None => Expect::Unknown(Some(kind)),
            }
        }
        other => Expect::Unknown(Some(other)),
    }
    .require_type_if(small_json(block))
}

impl<'v> Expect<'v> {
    /// A cut JSON rendering may end before `type`: it is required only of small blocks.
    fn require_type_if(self, small: bool) -> Self {
        match self {
            Expect::Unknown(Some(_)) if !small => Expect::Unknown(None),
            Expect::Either(a, b) => Expect::Either(
                Box::new(a.require_type_if(small)),
                Box::new(b.require_type_if(small)),
            ),
            other => other,
        }
    }

    /// A malformed block to some reading (F5 is about its siblings).
    fn may_be_malformed(&self) -> bool {
        match self {
            Expect::Unknown(_) | Expect::MalformedText => true,
            Expect::Either(a, b) => a.may_be_malformed() || b.may_be_malformed(),
            _ => false,
        }
    }

    /// The bound of the text this block may become (F4): a placeholder's, plus a textual blob's
    /// text, which C5 keeps whole.
    fn placeholder_max(&self) -> usize {
        match self {
            Expect::ResourceBlob {
                text: Some(text), ..
            } => PLACEHOLDER_MAX + text.len() + PREFIX_ROOM * text.lines().count(),
            _ => PLACEHOLDER_MAX,
        }
    }
}

/// Whether `v`'s compact JSON surely fits in half the C6 bound (an over-estimate of its size,
/// walked with a stack so any depth is safe).
fn small_json(v: &Value) -> bool {
    let mut size = 0;
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        size += match v {
            Value::String(s) => 2 + 6 * s.len(),
            Value::Array(items) => {
                stack.extend(items);
                2 + items.len()
            }
            Value::Object(map) => {
                stack.extend(map.values());
                2 + map.keys().map(|k| 4 + 6 * k.len()).sum::<usize>()
            }
            _ => 32,
        };
        if size > C6_TEXT_MAX / 2 {
            return false;
        }
    }
    true
}

/// F3 order and count, and per block F1, F2, C1–C6 and the F4 bound. `lone`: the one input
/// block stood where the `content` array belongs.
pub(super) fn blocks_match(
    input_blocks: &[&Value],
    lone: bool,
    blocks: &[Value],
    texts: &[&str],
    images: &[&str],
    out: &mut Vec<Violation>,
) {
    let expects: Vec<Expect<'_>> = input_blocks
        .iter()
        .map(|b| match expect(b) {
            Expect::Text(text) if lone => Expect::Either(
                Box::new(Expect::Text(text)),
                Box::new(Expect::Encoded(text)),
            ),
            e => e,
        })
        .collect();
    let required = expects
        .iter()
        .filter(|e| !matches!(e, Expect::Droppable))
        .count();
    if required == 0 {
        return;
    }
    if !(required..=expects.len()).contains(&blocks.len()) {
        // Order is lost; still no valid image and no text may be missing anywhere.
        let lost: Vec<Violation> = expects
            .iter()
            .filter_map(|e| match e {
                Expect::ValidImage(data) if !images.contains(data) => Some(lost_image(data)),
                Expect::Text(text) if !texts.iter().any(|t| text_survives(text, t)) => {
                    Some(lost_text(text))
                }
                _ => None,
            })
            .collect();
        let malformed = expects.iter().any(Expect::may_be_malformed);
        // F5 is siblings gone: an image no longer an image, or a text nowhere in the output.
        // Siblings merged into one JSON text with their content (a runtime that always sends
        // one, maybe wrapped in an error object's string) are a count change and changed texts
        // (F3, F2), malformed neighbour or not. A text counts as there as a string of an output
        // text read as JSON (three levels deep), or verbatim when it is too long (16 bytes) to
        // turn up by chance.
        // Read only where it decides: most count changes have no malformed neighbour.
        let gone = || {
            let readings = json_readings(texts);
            expects.iter().any(|e| match e {
                Expect::ValidImage(data) => !images.contains(data),
                Expect::Text(text) => !readings
                    .iter()
                    .any(|t| t == text || (text.len() >= 16 && t.contains(text))),
                _ => false,
            })
        };
        let (rule, kind) = if malformed && blocks.len() < required && gone() {
            (Rule::F5, "a malformed block took its siblings down")
        } else {
            (Rule::F3, "block count changed")
        };
        out.push(gate(
            rule,
            kind,
            format!(
                "{required} non-blank input blocks, {} output blocks",
                blocks.len()
            ),
        ));
        out.extend(lost);
        return;
    }
    let mut j = 0;
    let mut still_required = required;
    for e in &expects {
        if matches!(e, Expect::Droppable) {
            // A kept blank block is matched only when more blocks remain than are required and
            // the block at hand is blank text: a dropped one (`""`) beside a kept one (`"\u{7f}"`)
            // must not shift the blocks that follow onto the wrong inputs.
            let kept_blank = blocks.get(j).is_some_and(|b| {
                b.get("type").and_then(Value::as_str) == Some("text")
                    && str_field(b, "text").is_some_and(is_blank)
            });
            if blocks.len() - j > still_required && kept_blank {
                j += 1;
            }
            continue;
        }
        still_required -= 1;
        if let Some(v) = check_pair(e, &blocks[j]) {
            // Found at another position: the block is there, the order is not (F3). Block
            // counts may match by accident (one block dropped, another added), so any expected
            // block whose check passes against some other output block is present, whatever
            // its kind. A bound the block at hand breaks is no loss: it stays.
            let elsewhere = !is_bound(&v)
                && match e {
                    Expect::ValidImage(data) => images.contains(data),
                    Expect::Text(text) => texts.iter().any(|t| text_survives(text, t)),
                    _ => blocks
                        .iter()
                        .enumerate()
                        .any(|(k, b)| k != j && check_pair(e, b).is_none()),
                };
            out.push(if elsewhere {
                gate(Rule::F3, "blocks reordered", v.detail)
            } else {
                v
            });
        }
        j += 1;
    }
}

/// A violation of a size bound by the output block itself (F4, C6): not a loss, so no other
/// block's match excuses it.
fn is_bound(v: &Violation) -> bool {
    matches!(v.kind.as_str(), PLACEHOLDER_UNBOUNDED | UNKNOWN_UNBOUNDED)
}

const PLACEHOLDER_UNBOUNDED: &str = "placeholder not bounded";
const UNKNOWN_UNBOUNDED: &str = "unknown block not bounded to 8 KiB";

fn lost_image(data: &str) -> Violation {
    gate(
        Rule::F1,
        "valid image lost or reordered",
        format!("{} base64 characters", data.len()),
    )
}

fn lost_text(text: &str) -> Violation {
    gate(
        Rule::F2,
        "text lost or changed",
        bounded(text, 300).into_owned(),
    )
}

/// The output texts, and every string inside those of them that are JSON documents, read again
/// the same way down to three levels (a JSON list of the texts inside an error object's string).
pub fn json_readings(texts: &[&str]) -> Vec<String> {
    let mut readings: Vec<String> = texts.iter().map(|t| t.to_string()).collect();
    let mut level = readings.clone();
    for _ in 0..3 {
        let mut next = Vec::new();
        for text in &level {
            if let Ok(value) = serde_json::from_str::<Value>(text) {
                next.extend(strings(&value).into_iter().map(|(_, s)| s.to_string()));
            }
        }
        readings.extend(next.iter().cloned());
        level = next;
    }
    readings
}

/// Judges one output block against the input block it stands for.
fn check_pair(e: &Expect<'_>, block: &Value) -> Option<Violation> {
    let text = match block.get("type").and_then(Value::as_str) {
        Some("text") => str_field(block, "text"),
        _ => None,
    };
    let bounded_by =
        |limit: usize, t: &str| t.len() <= limit + PREFIX_ROOM * (1 + t.lines().count());
    // Spelled the same by every JSON writer: printable ASCII without quotes or backslashes.
    let plain = |s: &str| {
        s.len() <= KEEP_MAX
            && s.bytes()
                .all(|b| (b' '..=b'~').contains(&b) && b != b'"' && b != b'\\')
    };
    match (e, text) {
        (Expect::Either(first, second), _) => {
            check_pair(first, block).filter(|_| check_pair(second, block).is_some())
        }
        (Expect::Droppable, _) => None,
        (Expect::ValidImage(data), _) => {
            (str_field(block, "data") != Some(data)).then(|| lost_image(data))
        }
        (Expect::Text(input), Some(t)) => (!text_survives(input, t)).then(|| lost_text(input)),
        (Expect::Text(input), None) => Some(lost_text(input)),
        // Kept as an image with its media type corrected to what its bytes are (F1 allows it):
        // the image S2 judges is the output block.
        (
            Expect::InvalidImage {
                data: Some(data), ..
            },
            None,
        ) if is_corrected_image(block, data) => None,
        (_, None) => Some(gate(
            Rule::F4,
            "a non-text block did not become text",
            bounded(&block.to_string(), 300).into_owned(),
        )),
        (Expect::MalformedText, Some(t)) => (!t.trim_start().starts_with('{')).then(|| {
            gate(
                Rule::C1,
                "a text block without string text not rendered as its JSON",
                bounded(t, 300).into_owned(),
            )
        }),
        (Expect::Unknown(kind), Some(t)) => {
            if !bounded_by(C6_TEXT_MAX, t) {
                Some(gate(
                    Rule::C6,
                    UNKNOWN_UNBOUNDED,
                    format!("{} bytes", t.len()),
                ))
            } else if kind.is_some_and(|k| plain(k) && !keeps(t, k)) {
                Some(gate(
                    Rule::C6,
                    "unknown block's JSON not kept",
                    bounded(t, 300).into_owned(),
                ))
            } else {
                None
            }
        }
        (Expect::Encoded(input), Some(t)) => {
            (!text_survives(input, t) && !keeps_information(t, input)).then(|| lost_text(input))
        }
        (_, Some(t)) if !bounded_by(e.placeholder_max(), t) => Some(gate(
            Rule::F4,
            PLACEHOLDER_UNBOUNDED,
            format!("{} bytes", t.len()),
        )),
        (Expect::InvalidImage { mime, .. }, Some(t)) => missing(
            t,
            &[mime.map(mime_head)],
            Rule::C2,
            "invalid image placeholder without its media type",
        ),
        (Expect::Audio(mime), Some(t)) => missing(
            t,
            &[mime.map(mime_head)],
            Rule::C3,
            "audio placeholder without its media type",
        ),
        (Expect::Link { uri, label }, Some(t)) => missing(
            t,
            &[Some(uri), *label],
            Rule::C4,
            "resource link without its label or URI",
        ),
        (Expect::ResourceText(text), Some(t)) => (!keeps_information(t, text)).then(|| {
            gate(
                Rule::C5,
                "embedded resource text not kept",
                bounded(text, 300).into_owned(),
            )
        }),
        (Expect::ResourceBlob { uri, mime, text }, Some(t)) => missing(
            t,
            &[Some(uri), mime.map(mime_head)],
            Rule::C5,
            "embedded resource without its URI or media type",
        )
        .or_else(|| {
            let text = text.as_deref()?;
            (!keeps_information(t, text)).then(|| {
                gate(
                    Rule::C5,
                    "textual resource blob's text not kept",
                    bounded(text, 300).into_owned(),
                )
            })
        }),
    }
}

/// `block` is an image of the input's `data`, byte for byte, that passes S2 as it stands: the
/// input declared a type the providers refuse or one its bytes are not, and the SUT named the
/// type the bytes are.
fn is_corrected_image(block: &Value, data: &str) -> bool {
    str_field(block, "type") == Some("image")
        && str_field(block, "data") == Some(data)
        && crate::oracle::image::s2_problem(block).is_none()
}

/// The part of a media type a placeholder must keep: its first [`MIME_HEAD`] bytes, without the
/// line they cut when that line, read whole, may be a directive: cut, its `MEDIA` word may lose
/// its colon and read as no directive, so the line would be required without the S1 prefix a
/// SUT may have put inside it.
fn mime_head(mime: &str) -> &str {
    if mime.len() <= MIME_HEAD {
        return mime;
    }
    let head = &mime[..crate::excerpt::floor_boundary(mime, MIME_HEAD)];
    let last = terminators(head).last();
    let start = last.as_ref().map_or(0, |t| t.end);
    let end = terminators(&mime[start..])
        .next()
        .map_or(mime.len(), |t| start + t.start);
    if may_be_directive(&mime[start..end]) {
        last.map_or("", |t| &head[..t.start])
    } else {
        head
    }
}

/// `text` keeps `field`'s information (spec: the C judges test the information, not the
/// wording): verbatim as `keeps` reads it, or under a standard reversible escaping: as the
/// content of a JSON string (JavaScript's and serde_json's escapes, or Python's `json.dumps`
/// with every non-ASCII character escaped), or as a string of an output text read as JSON.
pub fn keeps_information(text: &str, field: &str) -> bool {
    if keeps(text, field) {
        return true;
    }
    json_escaped_forms(field)
        .iter()
        .any(|e| text.contains(&e[..crate::excerpt::floor_boundary(e, 100)]))
        || json_readings(&[text])
            .iter()
            .skip(1)
            .any(|s| s == field || keeps(s, field))
}

/// `s` as the content of a JSON string literal the way JavaScript and serde_json write it, and
/// the way Python's `json.dumps` does (every character outside printable ASCII as `\uXXXX`
/// UTF-16 units).
fn json_escaped_forms(s: &str) -> [String; 2] {
    let quoted = serde_json::to_string(s).unwrap_or_default();
    let escaped = quoted
        .strip_prefix('"')
        .and_then(|q| q.strip_suffix('"'))
        .unwrap_or_default()
        .to_string();
    let mut ascii = String::with_capacity(escaped.len());
    for c in escaped.chars() {
        if (' '..='~').contains(&c) {
            ascii.push(c);
        } else {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                ascii.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    [escaped, ascii]
}

/// A violation when `text` lacks one of the (short enough) `fields`.
fn missing(text: &str, fields: &[Option<&str>], rule: Rule, kind: &str) -> Option<Violation> {
    fields
        .iter()
        .flatten()
        .find(|f| f.len() <= KEEP_MAX && !keeps_information(text, f))
        .map(|f| {
            gate(
                rule,
                kind,
                format!("{:?} not in {:?}", bounded(f, 120), bounded(text, 200)),
            )
        })
}

/// Every string of `v` with the key it stands under, walked with a stack so any depth is safe.
pub(super) fn strings(v: &Value) -> Vec<(Option<&str>, &str)> {
    let mut found = Vec::new();
    let mut stack = vec![(None, v)];
    while let Some((key, value)) = stack.pop() {
        match value {
            Value::String(s) => found.push((key, s.as_str())),
            Value::Array(items) => stack.extend(items.iter().map(|v| (None, v))),
            Value::Object(map) => stack.extend(map.iter().map(|(k, v)| (Some(k.as_str()), v))),
            _ => {}
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A 1x1 PNG (the oracle does not reach the reference's image module for one).
    const PNG_1X1: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGM4IScHAAK2AQU0pnWqAAAAAElFTkSuQmCC";

    fn judged(input: &[Value], output: &[Value]) -> Vec<(Rule, String)> {
        let input: Vec<&Value> = input.iter().collect();
        let texts: Vec<&str> = output.iter().filter_map(|b| str_field(b, "text")).collect();
        let images: Vec<&str> = output
            .iter()
            .filter(|b| str_field(b, "type") == Some("image"))
            .filter_map(|b| str_field(b, "data"))
            .collect();
        let mut out = Vec::new();
        blocks_match(&input, false, output, &texts, &images, &mut out);
        out.into_iter().map(|v| (v.rule, v.kind)).collect()
    }

    /// astrbot 4.29.3: the tool text joined first (the resource's text at its start), the audio
    /// dropped, a label added before the image: three blocks for three, by accident. The
    /// resource lines up with the label, but its text is there: a reorder, not a C5 loss. The
    /// audio, nowhere, is still lost, and so is a resource text nowhere.
    #[test]
    fn counts_matching_by_accident_are_a_reorder_not_a_loss() {
        let png = PNG_1X1;
        let image = json!({"type": "image", "data": png, "mimeType": "image/png"});
        let resource =
            json!({"type": "resource", "resource": {"uri": "file:///a", "text": "\u{ae}"}});
        let audio = json!({"type": "audio", "data": "AAAA", "mimeType": "audio/mpeg"});
        let input = [image.clone(), resource, audio];
        let label = json!({"type": "text", "text": "[Image from tool call_1]"});
        let output = [
            json!({"type": "text", "text": "\u{ae}"}),
            label.clone(),
            image.clone(),
        ];
        let found = judged(&input, &output);
        assert!(!found.iter().any(|(r, _)| *r == Rule::C5), "{found:?}");
        assert!(
            found
                .iter()
                .any(|(r, k)| *r == Rule::F3 && k == "blocks reordered"),
            "{found:?}"
        );
        assert!(
            found
                .iter()
                .any(|(r, k)| *r == Rule::F4 && k == "a non-text block did not become text"),
            "the audio is nowhere: {found:?}"
        );
        let output = [json!({"type": "text", "text": "B"}), label, image];
        let found = judged(&input, &output);
        assert!(
            found.iter().any(|(r, _)| *r == Rule::C5),
            "the text is nowhere: {found:?}"
        );
    }
}
