//! Reference coercion of an MCP `CallToolResult` into an agent tool result (rules C1–C8, S1, S2,
//! F1–F5).
//!
//! The input is any JSON value, read without a schema: unknown types, missing or mistyped fields,
//! extra keys and non-object blocks are data to coerce one block at a time, so one bad block
//! costs one placeholder and never its siblings (F5). The output can hold only text and
//! validated images ([`AgentBlock`]); every text passes through the neutralizer (S1). Strings are
//! borrowed from the input where JSON escaping allows: a 5 MB image passes through uncopied.

use std::borrow::Cow;

use serde::Serialize;
use serde_json_borrow::Value;

use crate::excerpt::bounded;
use crate::reference::borrowed_json::{
    ContentItem, StrSource, Streamed, escaped_offset, parse, parse_streaming_content, write_escaped,
};
use crate::reference::image::{ImageReject, validate_image};
use crate::reference::json_text::{BLOCK_TEXT_MAX, render, render_object};
use crate::reference::neutralize::{
    MARKER, directive_at, each_marked_piece, marker_offsets, neutralize, neutralize_owned,
    with_markers,
};

/// An image that passed S2. Fields are private: the only way to make one is [`ValidImage::new`],
/// so an invalid image block cannot be constructed, let alone emitted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ValidImage<'a> {
    data: Cow<'a, str>,
    #[serde(rename = "mimeType")]
    mime_type: &'static str,
}

impl<'a> ValidImage<'a> {
    /// Validates `data` against S2; the MIME type becomes the one the bytes really are.
    pub fn new(data: Cow<'a, str>, declared_mime: &str) -> Result<Self, ImageReject> {
        let valid = validate_image(&data, declared_mime)?;
        Ok(Self {
            data,
            mime_type: valid.format.mime(),
        })
    }

    pub fn data(&self) -> &str {
        &self.data
    }

    pub fn mime_type(&self) -> &'static str {
        self.mime_type
    }
}

/// One block of an agent tool result: text or a valid image, nothing else.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum AgentBlock<'a> {
    Text {
        text: Cow<'a, str>,
        #[serde(skip)]
        json: JsonForm<'a>,
    },
    Image(ValidImage<'a>),
}

/// How a text block's text is written as JSON, when the coercion read it from JSON text: its
/// JSON form as read (between the quotes, every escape the one [`write_escaped`] writes) with
/// the neutralizer's marker inserted at each of the offsets (in that form). Writing the text is
/// then a copy instead of an escape scan. It is how the text is written, not part of the
/// value: any two compare equal, and the default (escape the text) is always right.
#[derive(Debug, Clone, Default)]
pub struct JsonForm<'a>(Option<(&'a str, Vec<usize>)>);

impl PartialEq for JsonForm<'_> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for JsonForm<'_> {}

/// What the model loop receives for one tool call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AgentToolResult<'a> {
    pub content: Vec<AgentBlock<'a>>,
    #[serde(rename = "isError")]
    pub is_error: bool,
}

impl AgentToolResult<'_> {
    /// The result as compact JSON, byte-identical to its `Serialize` form. Image data is
    /// validated base64, which has no character JSON escapes, so it is copied as is instead of
    /// going through the escape scan: for a 5 MB screenshot that scan is most of the cost.
    pub fn to_json_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(
            64 + self
                .content
                .iter()
                .map(|b| match b {
                    AgentBlock::Text { text, json } => {
                        32 + match &json.0 {
                            Some((source, markers)) => source.len() + markers.len() * MARKER.len(),
                            None => text.len(),
                        }
                    }
                    AgentBlock::Image(image) => image.data.len() + 64,
                })
                .sum::<usize>(),
        );
        out.extend_from_slice(b"{\"content\":[");
        for (i, block) in self.content.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            match block {
                AgentBlock::Text { text, json } => {
                    out.extend_from_slice(b"{\"type\":\"text\",\"text\":");
                    match &json.0 {
                        Some((source, markers)) => {
                            out.push(b'"');
                            each_marked_piece(source, markers, |piece| {
                                out.extend_from_slice(piece.as_bytes());
                            });
                            out.push(b'"');
                        }
                        None => write_escaped(&mut out, text),
                    }
                    out.push(b'}');
                }
                AgentBlock::Image(image) => {
                    out.extend_from_slice(b"{\"type\":\"image\",\"data\":\"");
                    out.extend_from_slice(image.data.as_bytes());
                    out.extend_from_slice(b"\",\"mimeType\":\"");
                    out.extend_from_slice(image.mime_type.as_bytes());
                    out.extend_from_slice(b"\"}");
                }
            }
        }
        out.extend_from_slice(if self.is_error {
            b"],\"isError\":true}"
        } else {
            b"],\"isError\":false}"
        });
        out
    }
}

impl AgentToolResult<'_> {
    /// The same result owning its strings.
    pub fn into_owned(self) -> AgentToolResult<'static> {
        AgentToolResult {
            content: self
                .content
                .into_iter()
                .map(|block| match block {
                    AgentBlock::Text { text, .. } => AgentBlock::Text {
                        text: Cow::Owned(text.into_owned()),
                        json: JsonForm::default(),
                    },
                    AgentBlock::Image(ValidImage { data, mime_type }) => {
                        AgentBlock::Image(ValidImage {
                            data: Cow::Owned(data.into_owned()),
                            mime_type,
                        })
                    }
                })
                .collect(),
            is_error: self.is_error,
        }
    }
}

/// Parses `input` as JSON, nested to any depth, and coerces it; a parse error is the only
/// error. Strings are borrowed from `input` where JSON escaping allows. The blocks of the
/// result's `content` array are coerced as the borrowing parser reads them, each dropped before
/// the next is read (no value is built for the whole array, nor an object for each block); a
/// result whose content coerces to nothing (C7 shows the whole result) is parsed whole. What
/// the borrowing parser leaves to serde_json (an error, an escaped key, nesting beyond its
/// limit) is parsed into serde_json's own value iteratively, and that result owns its strings.
pub fn coerce_json(input: &str) -> Result<AgentToolResult<'_>, serde_json::Error> {
    use crate::protocol::json;
    let mut content = Vec::new();
    let streamed = parse_streaming_content(input, &mut |item| {
        content.extend(match item {
            // A text block's text is moved out of the entries (dropped next), not copied.
            ContentItem::Object {
                entries,
                sources,
                lines,
            } => {
                if let Some(at) = c1_text_at(entries)
                    && let Value::Str(text) = &mut entries[at].1
                {
                    let read = sources.get(at).map(|&source| (source, lines));
                    text_block(std::mem::take(text), read)
                } else {
                    coerce_object(entries)
                }
            }
            ContentItem::Other(block) => coerce_block(block),
        })
    });
    let whole = match streamed {
        Some(Streamed::Whole(value)) => return Ok(coerce_tool_result(&value)),
        Some(Streamed::Content(Value::Object(obj))) if !content.is_empty() => {
            return Ok(with_content(obj.as_vec(), content));
        }
        // Two `content` keys, or a content that coerced to nothing (C7 shows the whole result).
        Some(_) => parse(input),
        None => None,
    };
    if let Some(value) = whole {
        let result = coerce_tool_result(&value);
        // Nested within the parser's limit: the ordinary recursive drop is bounded.
        drop(value);
        return Ok(result);
    }
    let owned = json::parse_value(input.as_bytes())?;
    let view = json::borrow(&owned);
    let result = coerce_tool_result(&view).into_owned();
    json::drop_borrowed(view);
    json::drop_value(owned);
    Ok(result)
}

/// Coerces any JSON value standing for a `CallToolResult`.
pub fn coerce_tool_result<'a>(result: &Value<'a>) -> AgentToolResult<'a> {
    let Value::Object(obj) = result else {
        // C8: never an error to the model loop, just a description of what came back.
        return AgentToolResult {
            content: vec![composed(format!(
                "[tool result is not a JSON object: {}]",
                render(result, Some(BLOCK_TEXT_MAX))
            ))],
            is_error: false,
        };
    };
    let obj = obj.as_vec();
    let content = match field(obj, "content") {
        Some(Value::Array(blocks)) => blocks.iter().filter_map(coerce_block).collect(),
        None | Some(Value::Null) => Vec::new(),
        // A lone block where an array belongs is still that block's content.
        Some(single) => coerce_block(single).into_iter().collect(),
    };
    with_content(obj, content)
}

/// The tool result of the result object `obj` whose content blocks coerced to `content`.
fn with_content<'a>(obj: Entries<'_, 'a>, mut content: Vec<AgentBlock<'a>>) -> AgentToolResult<'a> {
    // F3: only JSON `true` is an error.
    let is_error = matches!(field(obj, "isError"), Some(Value::Bool(true)));
    if content.is_empty() {
        content.push(empty_content_text(obj, is_error));
    }
    AgentToolResult { content, is_error }
}

/// The single text block for a result object whose content gave nothing to show (C7).
fn empty_content_text<'a>(obj: Entries<'_, 'a>, is_error: bool) -> AgentBlock<'a> {
    if let Some(Value::Str(kind)) = field(obj, "resultType")
        && kind == "input_required"
    {
        // MCP 2026-07-28: the tool asks the client for input; not an empty result.
        return composed(format!(
            "[tool requires input before it can return a result: {}]",
            render_object(obj, Some(BLOCK_TEXT_MAX))
        ));
    }
    match field(obj, "structuredContent") {
        // C7 names objects; 2026-07-28 allows any JSON value, and showing it beats showing nothing.
        Some(structured) if !structured.is_null() => composed(render(structured, None)),
        _ if is_error => composed("[tool failed without returning content]".to_string()),
        _ => composed("[tool returned no content]".to_string()),
    }
}

/// Coerces one content block; `None` only for an empty or blank text block (F3 allows dropping
/// those, and providers reject them).
fn coerce_block<'a>(block: &Value<'a>) -> Option<AgentBlock<'a>> {
    match block {
        Value::Object(obj) => coerce_object(obj.as_vec()),
        _ => Some(composed(render(block, Some(BLOCK_TEXT_MAX)))),
    }
}

/// Where a C1 text block (`type` `"text"`, `text` a string) has its `text`.
fn c1_text_at(obj: Entries<'_, '_>) -> Option<usize> {
    if !matches!(field(obj, "type"), Some(Value::Str(kind)) if kind == "text") {
        return None;
    }
    let at = obj.iter().rposition(|(k, _)| *k == "text")?;
    matches!(obj[at].1, Value::Str(_)).then_some(at)
}

/// C1 for a text block's text: `None` for an empty or blank one (F3 allows dropping those, and
/// providers reject them), else the text neutralized. `read` is how the borrowing parser found
/// it written, with the line starts it recorded: then the neutralizer is given those instead of
/// scanning for them, and a text written with canonical escapes (or none) keeps its JSON form.
fn text_block<'a>(
    text: Cow<'a, str>,
    read: Option<(StrSource<'a>, &[(usize, usize)])>,
) -> Option<AgentBlock<'a>> {
    if is_blank(&text) {
        return None;
    }
    let (markers, json) = match (read, &text) {
        (Some((StrSource::Plain, _)), Cow::Borrowed(plain)) => {
            let markers = marker_offsets(plain);
            let json = Some((*plain, markers.clone()));
            (markers, json)
        }
        (Some((StrSource::Escaped { json, lines }, all)), _) => {
            // At most one marker a line: allocated once, at the first directive (growing them
            // was a tenth of coercing text with a directive every other line).
            let most = lines.1 - lines.0 + 1;
            let (mut markers, mut json_markers) = (Vec::new(), Vec::new());
            // Each line start as text and JSON offsets: a directive found from it is placed in both.
            for line in std::iter::once((0, 0)).chain(all[lines.0..lines.1].iter().copied()) {
                if let Some(directive) = directive_at(&text, line.0) {
                    if markers.is_empty() {
                        markers = Vec::with_capacity(most);
                        json_markers = Vec::with_capacity(if json.is_some() { most } else { 0 });
                    }
                    markers.push(directive.start);
                    if let Some(json) = json {
                        json_markers.push(escaped_offset(json, line, directive.start));
                    }
                }
            }
            (markers, json.map(|json| (json, json_markers)))
        }
        _ => (marker_offsets(&text), None),
    };
    let text = if markers.is_empty() {
        text
    } else {
        Cow::Owned(with_markers(&text, &markers))
    };
    Some(AgentBlock::Text {
        text,
        json: JsonForm(json),
    })
}

/// [`coerce_block`] for an object block, given as its entries.
fn coerce_object<'a>(obj: Entries<'_, 'a>) -> Option<AgentBlock<'a>> {
    // C6: compact JSON of the block, bounded, payloads omitted.
    let unknown = || composed(render_object(obj, Some(BLOCK_TEXT_MAX)));
    if let Some(at) = c1_text_at(obj)
        && let Value::Str(text) = &obj[at].1
    {
        return text_block(text.clone(), None);
    }
    let kind = match field(obj, "type") {
        Some(Value::Str(kind)) => kind.as_ref(),
        _ => return Some(unknown()),
    };
    let converted = match kind {
        // C1, a `text` that is not a string
        "text" => unknown(),
        // C2
        "image" => image(obj),
        // C3
        "audio" => composed(format!("[audio {}]", mime_label(obj))),
        // C4. A blank `uri` is no link (MCP requires a URI): rendered as `<uri>` alone it would be
        // a blank text block, which providers reject and re-coercion drops, so it goes to C6.
        "resource_link" => match string(obj, "uri") {
            Some(uri) if !is_blank(uri) => {
                let uri = bounded(uri, BLOCK_TEXT_MAX);
                let label = ["title", "name"]
                    .into_iter()
                    .find_map(|k| string(obj, k).filter(|s| !s.is_empty()));
                match label {
                    Some(label) => composed(format!("[{}] {uri}", bounded(label, BLOCK_TEXT_MAX))),
                    None => composed(uri.into_owned()),
                }
            }
            _ => unknown(),
        },
        // C5
        "resource" => match field(obj, "resource") {
            Some(Value::Object(res)) => {
                let res = res.as_vec();
                match (string(res, "uri"), field(res, "text")) {
                    (Some(_), Some(Value::Str(text))) if !is_blank(text) => AgentBlock::Text {
                        text: neutralize_owned(text.clone()),
                        json: JsonForm::default(),
                    },
                    (Some(uri), _) => composed(blob_text(res, uri)),
                    (None, _) => unknown(),
                }
            }
            _ => unknown(),
        },
        // C6
        _ => unknown(),
    };
    Some(converted)
}

/// C2: a valid image passes through with its data untouched (F1); anything else is named.
fn image<'a>(obj: Entries<'_, 'a>) -> AgentBlock<'a> {
    let checked = match (field(obj, "data"), field(obj, "mimeType")) {
        (None, _) => Err(ImageReject::MissingData),
        (Some(Value::Str(_)), Some(Value::Str(mime))) if mime.is_empty() => {
            Err(ImageReject::MissingMimeType)
        }
        (Some(Value::Str(data)), Some(Value::Str(mime))) => ValidImage::new(data.clone(), mime),
        (Some(Value::Str(data)), _) if data.is_empty() => Err(ImageReject::EmptyData),
        (Some(Value::Str(_)), _) => Err(ImageReject::MissingMimeType),
        (Some(_), _) => Err(ImageReject::DataNotString),
    };
    match checked {
        Ok(valid) => AgentBlock::Image(valid),
        Err(reason) => composed(format!(
            "[image {} omitted: {}]",
            mime_label(obj),
            reason.as_str()
        )),
    }
}

/// Text built by the coercion itself; it may embed untrusted fields, so it is neutralized too.
fn composed<'a>(text: String) -> AgentBlock<'a> {
    let text = match neutralize(&text) {
        Cow::Borrowed(_) => text,
        Cow::Owned(n) => n,
    };
    AgentBlock::Text {
        text: Cow::Owned(text),
        json: JsonForm::default(),
    }
}

/// C5 for a resource without text: `[resource <mimeType|unknown>] <uri>` and, when its media
/// type is textual and its blob decodes to UTF-8, the decoded text on the following lines (the
/// caller neutralizes it with the rest): a file server that sends a text file as a blob must not
/// cost the model the file.
fn blob_text(res: Entries<'_, '_>, uri: &str) -> String {
    let mut text = format!(
        "[resource {}] {}",
        mime_label(res),
        bounded(uri, BLOCK_TEXT_MAX)
    );
    let decoded = match (string(res, "mimeType"), string(res, "blob")) {
        (Some(mime), Some(blob)) if is_textual(mime) => base64_simd::STANDARD
            .decode_to_vec(blob.as_bytes())
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok()),
        _ => None,
    };
    if let Some(decoded) = decoded.filter(|d| !is_blank(d)) {
        text.push('\n');
        text.push_str(&decoded);
    }
    text
}

/// A media type whose content is text (C5): `text/*`, JSON, XML, YAML and CSV, and the
/// `+json`/`+xml` structured suffixes; parameters (`; charset=...`) and ASCII case ignored.
fn is_textual(mime: &str) -> bool {
    let essence = mime.split(';').next().unwrap_or_default().trim();
    let Some((kind, subtype)) = essence.split_once('/') else {
        return false;
    };
    let subtype = subtype.to_ascii_lowercase();
    kind.eq_ignore_ascii_case("text")
        || matches!(subtype.as_str(), "json" | "xml" | "yaml" | "x-yaml" | "csv")
        || subtype.ends_with("+json")
        || subtype.ends_with("+xml")
}

fn mime_label(obj: Entries<'_, '_>) -> String {
    match string(obj, "mimeType") {
        Some(mime) if !mime.is_empty() => bounded(mime, 256).into_owned(),
        _ => "unknown".to_string(),
    }
}

/// An object's entries in source order, duplicate keys kept: what the borrowing parser streams
/// and what `ObjectAsVec::as_vec` holds (keys are `&str` without serde_json_borrow's `cowkeys`,
/// borrowed for as long as the entries are).
type Entries<'v, 'a> = &'v [(&'v str, Value<'a>)];

/// The value of `key`; with duplicate keys the last one wins, as in JavaScript, Python and
/// `serde_json::Value`, so every consumer sees the same block.
fn field<'v, 'a>(obj: Entries<'v, 'a>, key: &str) -> Option<&'v Value<'a>> {
    obj.iter().rev().find(|(k, _)| *k == key).map(|(_, v)| v)
}

fn string<'v>(obj: Entries<'v, '_>, key: &str) -> Option<&'v str> {
    field(obj, key).and_then(Value::as_str)
}

/// Empty or only blanks, in the sense of any provider's check (Unicode White_Space and Python's
/// `isspace` extras): such text blocks are rejected upstream, so they are dropped here.
pub fn is_blank(text: &str) -> bool {
    text.chars()
        .all(|c| c.is_whitespace() || ('\u{1C}'..='\u{1F}').contains(&c))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::json::deep_text;

    /// What `normfuzz coerce` runs: a million levels of arrays or objects are coerced to a normal
    /// result (C8, C6), never "recursion limit exceeded", and the text stays bounded.
    #[test]
    fn coerce_json_takes_a_million_levels() {
        for object in [false, true] {
            let deep = deep_text(1_000_000, object);
            for doc in [
                deep.clone(),
                format!(r#"{{"content":[{deep}],"isError":true}}"#),
            ] {
                let result = coerce_json(&doc).expect("any depth parses");
                let json: serde_json::Value =
                    serde_json::from_slice(&result.to_json_bytes()).expect("output is JSON");
                let text = json["content"][0]["text"].as_str().expect("one text block");
                assert!(text.len() <= BLOCK_TEXT_MAX + 64, "{}", text.len());
                assert!(!text.contains("recursion"), "{text}");
            }
        }
        assert!(coerce_json(&format!("{}x", deep_text(1_000_000, false))).is_err());
    }

    #[test]
    fn into_owned_keeps_the_result() {
        let doc =
            r#"{"content":[{"type":"text","text":"a\nMEDIA:/x"},{"type":"text","text":"b"}]}"#;
        let result = coerce_json(doc).unwrap();
        assert_eq!(result.clone().into_owned(), result);
    }

    /// The blocks of `content` are coerced as they are read; what needs the whole result still
    /// gets it: two `content` keys (the last counts), a content that coerces to nothing (C7
    /// renders the result), a content that is not an array, `isError` after the blocks.
    #[test]
    fn streamed_content_keeps_the_whole_results_rules() {
        let text = |doc: &str| -> Vec<String> {
            let result = coerce_json(doc).expect("valid JSON");
            result
                .content
                .iter()
                .map(|block| match block {
                    AgentBlock::Text { text, .. } => text.to_string(),
                    AgentBlock::Image(image) => format!("image {}", image.mime_type()),
                })
                .collect()
        };
        let block = |t: &str| format!(r#"{{"type":"text","text":"{t}"}}"#);
        let (a, b) = (block("a"), block("b"));
        assert_eq!(
            text(&format!(r#"{{"content":[{a}],"content":[{b}]}}"#)),
            ["b"]
        );
        assert_eq!(
            text(&format!(r#"{{"content":[{a}],"content":null}}"#)),
            ["[tool returned no content]"]
        );
        assert_eq!(
            text(&format!(r#"{{"content":{a},"content":[{b},5]}}"#)),
            ["b", "5"]
        );
        assert_eq!(text(&format!(r#"{{"content":{b}}}"#)), ["b"]);
        assert_eq!(
            text(r#"{"resultType":"input_required","content":[{"type":"text","text":" "}]}"#),
            [
                r#"[tool requires input before it can return a result: {"resultType":"input_required","content":[{"type":"text","text":" "}]}]"#
            ]
        );
        let late = format!(r#"{{"content":[{a},[1,{b}]],"isError":true}}"#);
        let late_error = coerce_json(&late).unwrap();
        assert!(late_error.is_error);
        assert_eq!(late_error.content.len(), 2);
        let dup_keys = r#"{"content":[{"type":"video","type":"text","text":"x","text":"y"}]}"#;
        assert_eq!(text(dup_keys), ["y"]);
        assert_eq!(text("[1]"), ["[tool result is not a JSON object: [1]]"]);
    }

    proptest::proptest! {
        /// The text a SUT is sent, coerced as `normfuzz coerce` and `serve-reference` coerce it
        /// (the borrowing parser), gives what the in-process reference gives for the same value
        /// (serde_json's value, viewed), on near-valid results and on any JSON.
        #[test]
        fn coercing_the_text_equals_coercing_the_value(
            value in proptest::prop_oneof![
                crate::generate::cases::hostile_json(),
                crate::generate::cases::near_valid_result(),
            ],
            pretty: bool,
        ) {
            let text = if pretty {
                serde_json::to_string_pretty(&value).unwrap()
            } else {
                serde_json::to_string(&value).unwrap()
            };
            let view = crate::protocol::json::borrow(&value);
            let want = coerce_tool_result(&view).to_json_bytes();
            proptest::prop_assert!(crate::reference::borrowed_json::parse(&text).is_some());
            let got = coerce_json(&text).unwrap().to_json_bytes();
            proptest::prop_assert_eq!(String::from_utf8(got).unwrap(), String::from_utf8(want).unwrap());
        }
    }

    /// A text block read from JSON text is written back from its JSON form when its escapes
    /// are canonical, and neutralized at the line starts the parser recorded: the bytes must be
    /// what escaping the value's text gives, on every spelling.
    fn assert_written_as_the_value(doc: &str) {
        let value: serde_json::Value = serde_json::from_str(doc).expect("valid JSON");
        let want = coerce_tool_result(&crate::protocol::json::borrow(&value));
        let got = coerce_json(doc).expect("valid JSON");
        assert_eq!(got, want, "{doc}");
        assert_eq!(
            String::from_utf8(got.to_json_bytes()).unwrap(),
            String::from_utf8(want.to_json_bytes()).unwrap(),
            "{doc}"
        );
    }

    #[test]
    fn json_forms_are_written_as_the_text() {
        for text in [
            r"\u0041 \/ MEDIA:\/x",
            r"a\u000AMEDIA:/x",
            r"a\u000aMEDIA:/x\n",
            "a\u{2028}MEDIA:/x",
            "a\u{85}  MEDIA:/x",
            r"a\r\nMEDIA:/x\r\n",
            r"a\n\t\tMEDIA:/x\n\t MEDIA:/y",
            r"a\n\u0009 MEDIA:/x",
            r"\nMEDIA:/x",
            r"\u2028MEDIA:/x\u2029",
            r"MEDIA:/x\n",
            r"x\n",
            r"\ud83d\ude00\nMEDIA:\u00e9",
            r"\u001F\u0001MEDIA:/x\n\u001f",
            r#"\"q\"\n  \u200b MEDIA:/x"#,
            r"\n\n\n",
            "plain MEDIA:/x",
            "MEDIA:/x \u{2028}MEDIA:/y",
        ] {
            assert_written_as_the_value(&format!(
                r#"{{"content":[{{"type":"text","text":"{text}"}},{{"text":"{text}","type":"text"}}]}}"#
            ));
        }
    }

    proptest::proptest! {
        #[test]
        fn json_forms_are_written_as_the_text_on_any_spelling(
            (_, json) in crate::reference::borrowed_json::tests::spelled_text(),
            (_, other) in crate::reference::borrowed_json::tests::spelled_text(),
            line in proptest::sample::select(vec![
                "\\n", "\\u000a", "\\r\\n", "\\n\\t ", "\\u2028", "\\f", "\\u001c", "\\t",
            ]),
        ) {
            // A directive after an escaped line terminator, in text spelled any way around it.
            let text = format!("{json}{line}MEDIA:/x{other}");
            assert_written_as_the_value(&format!(
                r#"{{"content":[{{"type":"text","text":"{text}"}},{{"type":"text","text":"{other}","text":"{json}{other}"}}],"isError":true}}"#
            ));
        }
    }
}
