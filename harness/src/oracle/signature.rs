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

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::block_features::{block_features, json_type, refused_whole_features};
use super::directive::{self, may_be_directive};
use super::image::is_valid_input_image;
use super::judge::{
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

/// Which blocks of a tool result a finding is about: those whose fate is its action. `All` when
/// the action is not told block by block (a count or an order changed, a crash).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Concerned {
    All,
    Blocks(Vec<usize>),
}

/// What the SUT did, read from its answer against the input, and the blocks it was read from.
fn reading(op: Op, input: &Value, answer: &Answer, violation: &Violation) -> (Action, Concerned) {
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
fn content(result: &Value) -> Vec<&Value> {
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
            let embedded = !super::url::embedded_ipv4(ip).is_empty();
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
