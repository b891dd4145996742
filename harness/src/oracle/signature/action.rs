//! What the SUT did to the information a finding is about (`Action`), read from its answer
//! against the input, and the blocks of a tool result it was read from (`Concerned`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::oracle::image::is_valid_input_image;
use crate::oracle::judge::{
    Violation, content_blocks, is_blank, json_readings, keeps_information, str_field, text_survives,
};
use crate::protocol::{Answer, Fault, Op};
use crate::rule::Rule;

/// What the SUT did to the information a finding is about.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    /// Gone from the output: not verbatim, not escaped, not inside a JSON text.
    Dropped,
    /// There, JSON-escaped or as a string of a JSON document the SUT wrote.
    JsonWrapped,
    /// There verbatim, joined with other blocks into fewer blocks.
    Merged,
    /// There, spread over more blocks than the input had.
    Split,
    /// There verbatim, with text of the SUT's own around or inside it.
    Changed,
    /// In another order.
    Reordered,
    /// The result became an error (`isError` set, or one error text) and the content is gone.
    ReplacedByError,
    /// A block of another type stands where it was (an image as text, a text as an image, a
    /// non-text block passed on as it is, an image with another media type).
    Retyped,
    /// `isError` set on a result that did not have it, or cleared on one that did.
    ErrorFlagSet,
    ErrorFlagCleared,
    /// A label, URI or media type of a block is missing from its placeholder.
    DroppedLabel,
    DroppedUri,
    DroppedMediaType,
    /// A base64 payload copied into text.
    CopiedPayload,
    /// Text the rules bound was not bounded.
    Unbounded,
    /// A directive line, an invalid image or a refused URL passed (the safety rules).
    Kept,
    /// An image carried where the rules strip it, or stripped where they keep it (retries).
    KeptImages,
    StrippedImages,
    /// A crash, a hang, an answer the protocol refuses.
    Crashed,
    Hung,
    Malformed,
    /// Anything the kinds above do not describe: the kind alone tells the cause.
    #[default]
    Other,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Dropped => "dropped",
            Action::JsonWrapped => "json-wrapped",
            Action::Merged => "merged",
            Action::Split => "split",
            Action::Changed => "changed",
            Action::Reordered => "reordered",
            Action::ReplacedByError => "replaced-by-error",
            Action::Retyped => "retyped",
            Action::ErrorFlagSet => "error-flag-set",
            Action::ErrorFlagCleared => "error-flag-cleared",
            Action::DroppedLabel => "dropped-label",
            Action::DroppedUri => "dropped-uri",
            Action::DroppedMediaType => "dropped-media-type",
            Action::CopiedPayload => "copied-payload",
            Action::Unbounded => "unbounded",
            Action::Kept => "kept",
            Action::KeptImages => "kept-images",
            Action::StrippedImages => "stripped-images",
            Action::Crashed => "crashed",
            Action::Hung => "hung",
            Action::Malformed => "malformed",
            Action::Other => "other",
        }
    }

    /// The same information in another encoding (spec: "Impact classes"): a finding with this
    /// action keeps everything the rule asks for.
    pub fn keeps_information(self) -> bool {
        matches!(self, Action::JsonWrapped | Action::Merged | Action::Split)
    }
}

/// Which blocks of a tool result a finding is about: those whose fate is its action. `All` when
/// the action is not told block by block (a count or an order changed, a crash).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Concerned {
    All,
    Blocks(Vec<usize>),
}

/// What the SUT did, read from its answer against the input, and the blocks it was read from.
pub(super) fn reading(
    op: Op,
    input: &Value,
    answer: &Answer,
    violation: &Violation,
) -> (Action, Concerned) {
    let output = match answer {
        Answer::Fault(Fault::Crash { .. }) => return (Action::Crashed, Concerned::All),
        Answer::Fault(Fault::Hang { .. }) => return (Action::Hung, Concerned::All),
        Answer::Fault(Fault::Protocol { .. }) => return (Action::Malformed, Concerned::All),
        Answer::Refused(_) => return (Action::ReplacedByError, Concerned::All),
        Answer::Output(output) => output,
    };
    let action = match violation.rule {
        Rule::Protocol => Action::Malformed,
        Rule::S1 | Rule::S2 | Rule::S3 | Rule::D1 => Action::Kept,
        r if r.as_str().starts_with('U') => Action::Kept,
        Rule::S4 | Rule::R1 | Rule::R2 | Rule::R3 | Rule::R4 | Rule::R5 | Rule::R6 => {
            retry_action(input, output)
        }
        _ if op == Op::CoerceToolResult => return tool_result_action(input, output, violation),
        _ => Action::Other,
    };
    (action, Concerned::All)
}

/// A retry decision: more images out than the reference keeps is `KeptImages`.
fn retry_action(input: &Value, output: &Value) -> Action {
    let count = |v: &Value| {
        v.get("images")
            .and_then(Value::as_array)
            .map_or(0, Vec::len)
    };
    match count(output) >= count(input) && count(input) > 0 {
        true => Action::KeptImages,
        false => Action::StrippedImages,
    }
}

/// The blocks of a tool result's `content` (a lone block where an array belongs is that block).
pub(super) fn content(result: &Value) -> Vec<&Value> {
    content_blocks(result).0
}

/// What happened to the information of a tool result that a fidelity or coercion rule is about,
/// and the blocks that had that fate.
fn tool_result_action(input: &Value, output: &Value, violation: &Violation) -> (Action, Concerned) {
    let kind = violation.kind.as_str();
    let out_blocks = content(output);
    let out_texts: Vec<&str> = out_blocks
        .iter()
        .filter(|b| str_field(b, "type") == Some("text"))
        .filter_map(|b| str_field(b, "text"))
        .collect();
    let out_images: Vec<&Value> = out_blocks
        .iter()
        .copied()
        .filter(|b| str_field(b, "type") == Some("image"))
        .collect();
    let error_out = output.get("isError") == Some(&Value::Bool(true));
    let error_in = input.get("isError") == Some(&Value::Bool(true));
    let whole = |action| (action, Concerned::All);
    let flags_only = |action| (action, Concerned::Blocks(Vec::new()));
    match kind {
        // The flag is the result's: no block is concerned.
        "isError not preserved" | "isError set for a result without isError" => {
            let action = match error_out {
                true => Action::ErrorFlagSet,
                false => Action::ErrorFlagCleared,
            };
            return flags_only(action);
        }
        // An order is no block's: what tells its cause is the result's flags.
        "blocks reordered" => return flags_only(Action::Reordered),
        "base64 payload copied into text" => return whole(Action::CopiedPayload),
        k if k.contains("not bounded") => return whole(Action::Unbounded),
        "a non-text block did not become text" | "block that is neither text nor image" => {
            let others = content(input)
                .iter()
                .enumerate()
                .filter(|(_, b)| !matches!(str_field(b, "type"), Some("text" | "image")))
                .map(|(i, _)| i)
                .collect();
            return (Action::Retyped, Concerned::Blocks(others));
        }
        _ => {}
    }
    if !input.is_object() {
        return whole(match (error_out, out_blocks.len()) {
            (true, _) => Action::ReplacedByError,
            (_, 0) => Action::Dropped,
            _ => Action::Split,
        });
    }
    let in_blocks = content(input);
    let required = in_blocks
        .iter()
        .filter(|b| {
            !(str_field(b, "type") == Some("text") && str_field(b, "text").is_some_and(is_blank))
        })
        .count();
    let readings = json_readings(&out_texts);
    // The fate of each piece of information the input carried, and the blocks that had it.
    let mut fates: BTreeMap<Action, Vec<usize>> = BTreeMap::new();
    for (i, block) in in_blocks.iter().enumerate() {
        let fate = match str_field(block, "type") {
            Some("text") => {
                let Some(text) = str_field(block, "text").filter(|t| !is_blank(t)) else {
                    continue;
                };
                Some(text_fate(
                    text,
                    &out_texts,
                    &readings,
                    out_blocks.len(),
                    required,
                ))
            }
            Some("image") if is_valid_input_image(block) => {
                let data = str_field(block, "data").unwrap_or_default();
                Some(image_fate(block, data, &out_images, &out_texts))
            }
            Some("resource_link" | "resource" | "audio" | "image") => {
                placeholder_fate(block, &out_texts)
            }
            _ => None,
        };
        if let Some(fate) = fate.filter(|f| *f != Action::Other) {
            fates.entry(fate).or_default().push(i);
        }
    }
    if let Some(Value::Object(structured)) = input.get("structuredContent")
        && in_blocks.is_empty()
        && structured
            .keys()
            .any(|k| !out_texts.iter().any(|t| t.contains(k.as_str())))
    {
        fates.entry(Action::Dropped).or_default();
    }
    let lost = fates
        .keys()
        .any(|f| !f.keeps_information() && *f != Action::Changed);
    if error_out && !error_in && lost {
        let dropped = fates
            .iter()
            .filter(|(f, _)| !f.keeps_information())
            .flat_map(|(_, blocks)| blocks.iter().copied())
            .collect();
        return (Action::ReplacedByError, Concerned::Blocks(dropped));
    }
    // The worst fate tells: a loss before a change of form.
    let worst = fates
        .iter()
        .find(|(f, _)| !f.keeps_information())
        .or_else(|| fates.iter().next());
    if let Some((action, blocks)) = worst {
        return (*action, Concerned::Blocks(blocks.clone()));
    }
    // A count changed and no block tells how: the result's flags do.
    flags_only(match out_blocks.len().cmp(&required) {
        std::cmp::Ordering::Less => Action::Merged,
        std::cmp::Ordering::Greater => Action::Split,
        std::cmp::Ordering::Equal => Action::Other,
    })
}

/// Where a text of the input went.
fn text_fate(
    text: &str,
    out_texts: &[&str],
    readings: &[String],
    out_count: usize,
    required: usize,
) -> Action {
    if out_texts.iter().any(|t| text_survives(text, t)) {
        return Action::Other;
    }
    if out_texts.iter().any(|t| t.contains(text)) {
        return match out_count < required {
            true => Action::Merged,
            false => Action::Changed,
        };
    }
    let escaped = serde_json::to_string(text).unwrap_or_default();
    let escaped = escaped.trim_matches('"');
    if readings
        .iter()
        .skip(out_texts.len())
        .any(|r| r == text || r.contains(text))
        || (!escaped.is_empty() && out_texts.iter().any(|t| t.contains(escaped)))
    {
        return Action::JsonWrapped;
    }
    Action::Dropped
}

/// Where a valid image of the input went.
fn image_fate(block: &Value, data: &str, out_images: &[&Value], out_texts: &[&str]) -> Action {
    let same = out_images
        .iter()
        .find(|b| str_field(b, "data") == Some(data));
    match same {
        Some(b) if str_field(b, "mimeType") == str_field(block, "mimeType") => Action::Other,
        Some(_) => Action::Retyped,
        None if out_texts.iter().any(|t| t.contains(data)) => Action::CopiedPayload,
        None => Action::Dropped,
    }
}

/// Which field of a non-text block no output text keeps, if one is missing.
fn placeholder_fate(block: &Value, out_texts: &[&str]) -> Option<Action> {
    let kept = |field: &str| out_texts.iter().any(|t| keeps_information(t, field));
    fn wanted(v: Option<&str>) -> Option<&str> {
        v.filter(|s| !is_blank(s) && s.len() <= 1024)
    }
    let resource = block.get("resource").unwrap_or(block);
    if let Some(uri) = wanted(str_field(resource, "uri"))
        && !kept(uri)
    {
        return Some(Action::DroppedUri);
    }
    let label = wanted(str_field(block, "title")).or(wanted(str_field(block, "name")));
    if str_field(block, "type") == Some("resource_link")
        && let Some(label) = label
        && !kept(label)
    {
        return Some(Action::DroppedLabel);
    }
    if let Some(mime) = wanted(str_field(resource, "mimeType"))
        && !kept(mime)
    {
        return Some(Action::DroppedMediaType);
    }
    if let Some(text) = wanted(str_field(resource, "text"))
        && !kept(text)
    {
        return Some(Action::Dropped);
    }
    None
}
