//! Anthropic Messages (`POST /v1/messages`), docs/research/providers.md §1.
//!
//! Order (docs/research/providers.md §7.1): JSON parse → schema (first violation only, pydantic-style paths with union
//! tags) → empty text → tool_use/tool_result pairing → image count → per image: empty → base64 → size →
//! magic number → dimensions. The order between the semantic passes is [INF].
//!
//! The scripted answers to accepted requests are in `answer`.

use super::{AgentBlock, SyntaxError, is_blank, syntax_error, url_scheme};
use crate::b64::{self, Flavor};
use crate::ids;
use crate::image::{self, ImageKind};
use crate::script::{Failure, FailureKind};
use crate::verdict::{Checked, Rejection};
use serde_json::{Map, Value, json};

mod answer;
// Only the HTTP server answers requests (see lib.rs).
#[cfg(feature = "server")]
pub(crate) use answer::reply;

/// Base64 string length limit per image, measured on the string (docs/research/providers.md §1.4).
const MAX_IMAGE_B64_LEN: usize = 5_242_880;
const MAX_DIMENSION: u32 = 8000;
/// Above `MANY_IMAGES` images per request the dimension limit drops to `MANY_IMAGES_DIMENSION`.
const MANY_IMAGES: usize = 20;
const MANY_IMAGES_DIMENSION: u32 = 2000;
/// Observed errors say `> 100` (research E10); the 600 limit of newer docs applies to 1M-context models.
const MAX_MEDIA: usize = 100;
/// 32 MB request limit, enforced by Cloudflare (docs/research/providers.md §1.4). [INF] MiB.
const MAX_REQUEST_BYTES: usize = 32 * 1024 * 1024;
const MEDIA_TYPES: [&str; 4] = ["image/jpeg", "image/png", "image/gif", "image/webp"];

/// The error catalogue: verbatim where observed (docs/research/providers.md §1.7), `[INF]` otherwise.
mod msg {
    pub const FIELD_REQUIRED: &str = "Field required";
    pub const NOT_A_STRING: &str = "Input should be a valid string"; // [INF] pydantic
    pub const NOT_A_LIST: &str = "Input should be a valid list"; // [INF] pydantic
    pub const NOT_AN_INT: &str = "Input should be a valid integer"; // [INF] pydantic
    pub const NOT_A_DICT: &str =
        "Input should be a valid dictionary or object to extract fields from"; // [INF]
    pub const NO_TAG: &str = "Unable to extract tag using discriminator 'type'"; // [INF] pydantic
    pub const ROLE: &str = "Input should be 'user' or 'assistant'"; // [INF] pydantic
    pub const MEDIA_TYPE: &str =
        "Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'"; // E3
    pub const BLOCK_TAGS: &str = "'document', 'image', 'redacted_thinking', 'search_result', 'server_tool_use', 'text', 'thinking', 'tool_result', 'tool_use', 'web_search_tool_result'"; // E13
    pub const TOOL_RESULT_TAGS: &str =
        "'document', 'image', 'search_result', 'text', 'tool_reference'"; // [INF] SDK union
    pub const SOURCE_TAGS: &str = "'base64', 'file', 'url'"; // [INF] docs/research/providers.md §1.7 notes
    pub const EMPTY_TEXT: &str = "messages: text content blocks must be non-empty"; // E14
    pub const BLANK_TEXT: &str = "messages: text content blocks must contain non-whitespace text"; // [INF] from memory
    pub const EMPTY_IMAGE: &str = "image cannot be empty"; // E4
    pub const BAD_BASE64: &str = "invalid base64 data"; // E5
    pub const UNDECODABLE: &str = "Could not process image"; // E11, no path
    pub const HTTP_URL: &str = "Only HTTPS URLs are supported."; // E12, no path
    pub const TOO_LARGE: &str = "Request exceeds the maximum size"; // 413, docs/research/providers.md §1.4

    pub fn wrong_tag(tag: &str, expected: &str) -> String {
        format!(
            "Input tag '{tag}' found using 'type' does not match any of the expected tags: {expected}"
        )
    }
    /// [INF] Python-json-style wording around serde_json's reason.
    pub fn bad_json(reason: &str, line: usize, column: usize, char_index: usize) -> String {
        format!(
            "The request body is not valid JSON: {reason}: line {line} column {column} (char {char_index})"
        )
    }
    /// [INF] from memory (the API's empty-content rule).
    pub fn empty_content(i: usize) -> String {
        format!(
            "messages.{i}: all messages must have non-empty content except for the optional final assistant message"
        )
    }
    pub fn unanswered_tool_use(i: usize, ids: &str) -> String {
        format!(
            "messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately after: {ids}. Each `tool_use` block must have a corresponding `tool_result` block in the next message."
        )
    }
    pub fn orphan_tool_result(path: &str, id: &str) -> String {
        format!(
            "{path}: unexpected `tool_use_id` found in `tool_result` blocks: {id}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
        )
    }
    pub fn too_much_media(images: usize, documents: usize, max: usize) -> String {
        format!("too many images and documents: {images} + {documents} > {max}")
    }
    pub fn image_too_big(len: usize, max: usize) -> String {
        format!("image exceeds 5 MB maximum: {len} bytes > {max} bytes")
    }
    pub fn mismatch(declared: &str, actual: &str) -> String {
        format!(
            "The image was specified using the {declared} media type, but the image appears to be a {actual} image"
        )
    }
    pub fn too_wide(max: u32) -> String {
        format!("At least one of the image dimensions exceed max allowed size: {max} pixels")
    }
    pub fn too_wide_many(max: u32) -> String {
        format!(
            "At least one of the image dimensions exceed max allowed size for many-image requests: {max} pixels"
        )
    }
}

fn reject(status: u16, kind: &str, message: impl Into<String>) -> Rejection {
    let id = ids::anthropic();
    Rejection {
        status,
        body: json!({"type": "error", "error": {"type": kind, "message": message.into()}, "request_id": id}),
        headers: vec![("request-id".into(), id)],
    }
}

fn invalid(message: impl Into<String>) -> Rejection {
    reject(400, "invalid_request_error", message)
}

/// Scripted failures. Envelope and statuses (429 `rate_limit_error`, 500 `api_error`, 529
/// `overloaded_error`): https://platform.claude.com/docs/en/api/errors (docs/research/providers.md §1).
/// A 429 carries `retry-after` (seconds) and the `anthropic-ratelimit-requests-*` headers, reset
/// as RFC 3339: https://platform.claude.com/docs/en/api/rate-limits (the SDKs honour `retry-after`).
pub(crate) fn failure(f: &Failure) -> Rejection {
    match f.kind {
        FailureKind::RateLimit => {
            let mut r = reject(
                429,
                "rate_limit_error",
                "This request would exceed the rate limit for your organization of 50 requests per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits. You can see the response headers for current usage. Please reduce the prompt length or the maximum tokens requested, or try again later. You may also contact sales at https://www.anthropic.com/contact-sales to discuss your options for a rate limit increase.", // [INF] wording
            );
            r.headers.extend([
                ("retry-after".into(), f.retry_after.to_string()),
                ("anthropic-ratelimit-requests-limit".into(), "50".into()),
                ("anthropic-ratelimit-requests-remaining".into(), "0".into()),
                (
                    "anthropic-ratelimit-requests-reset".into(),
                    super::rfc3339_in(f.retry_after),
                ),
            ]);
            r
        }
        FailureKind::ServerError => reject(500, "api_error", "Internal server error"),
        // https://platform.claude.com/docs/en/api/errors: "529 - overloaded_error"; the body
        // `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}` as quoted
        // at https://docs.llmgateway.io/troubleshooting/anthropic-529-overloaded.
        FailureKind::Overloaded => reject(529, "overloaded_error", "Overloaded"),
        FailureKind::Image => invalid(msg::UNDECODABLE), // E11
        FailureKind::Format => at(
            "messages.0.content.0.image.source.base64.media_type",
            msg::MEDIA_TYPE,
        ), // E3; [INF] the path, fixed whatever the request holds
    }
}

fn at(path: &str, message: &str) -> Rejection {
    invalid(format!("{path}: {message}"))
}

pub(crate) fn validate(body: &[u8]) -> Checked {
    check_size(body.len())?;
    let request: Value = serde_json::from_slice(body).map_err(|e| {
        let SyntaxError {
            reason,
            line,
            column,
            offset,
        } = syntax_error(body, &e);
        let char_index = String::from_utf8_lossy(body.get(..offset).unwrap_or_default())
            .chars()
            .count();
        invalid(msg::bad_json(&reason, line, column, char_index))
    })?;
    check(&request)
}

pub(crate) fn check_size(bytes: usize) -> Checked {
    if bytes > MAX_REQUEST_BYTES {
        return Err(reject(413, "request_too_large", msg::TOO_LARGE));
    }
    Ok(())
}

/// The checks after parsing: `request` is the parsed body.
pub(crate) fn check(request: &Value) -> Checked {
    let Some(request) = request.as_object() else {
        return Err(invalid(msg::NOT_A_DICT));
    };
    let messages = check_top_level(request)?;
    for (i, m) in messages.iter().enumerate() {
        check_message(i, m)?;
    }
    check_text(messages)?;
    check_tool_pairing(messages)?;
    check_images(messages)
}

fn check_top_level(request: &Map<String, Value>) -> Result<&[Value], Rejection> {
    match request.get("model") {
        None => return Err(at("model", msg::FIELD_REQUIRED)),
        Some(Value::String(_)) => {}
        Some(_) => return Err(at("model", msg::NOT_A_STRING)),
    }
    let messages = match request.get("messages") {
        None => return Err(at("messages", msg::FIELD_REQUIRED)),
        Some(Value::Array(m)) => m,
        Some(_) => return Err(at("messages", msg::NOT_A_LIST)),
    };
    match request.get("max_tokens") {
        None => Err(at("max_tokens", msg::FIELD_REQUIRED)),
        Some(v) if v.is_u64() || v.is_i64() => Ok(messages),
        Some(_) => Err(at("max_tokens", msg::NOT_AN_INT)),
    }
}

fn check_message(i: usize, m: &Value) -> Checked {
    let path = format!("messages.{i}");
    let m = m.as_object().ok_or_else(|| at(&path, msg::NOT_A_DICT))?;
    match m.get("role") {
        None => return Err(at(&format!("{path}.role"), msg::FIELD_REQUIRED)),
        Some(Value::String(r)) if r == "user" || r == "assistant" => {}
        Some(_) => return Err(at(&format!("{path}.role"), msg::ROLE)),
    }
    match m.get("content") {
        None => Err(at(&format!("{path}.content"), msg::FIELD_REQUIRED)),
        Some(Value::String(_)) => Ok(()),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .enumerate()
            .try_for_each(|(j, b)| check_block(&format!("{path}.content.{j}"), b, msg::BLOCK_TAGS)),
        Some(_) => Err(at(&format!("{path}.content"), msg::NOT_A_LIST)),
    }
}

/// Requires `obj[key]` to be a string; the path carries the block's union tag.
fn required_str<'a>(
    obj: &'a Map<String, Value>,
    path: &str,
    key: &str,
) -> Result<&'a str, Rejection> {
    match obj.get(key) {
        None => Err(at(&format!("{path}.{key}"), msg::FIELD_REQUIRED)),
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(at(&format!("{path}.{key}"), msg::NOT_A_STRING)),
    }
}

/// The `type` tag of a block-like object, or the pydantic error for a missing or unknown tag.
fn tag<'a>(
    path: &str,
    v: &'a Value,
    expected: &str,
) -> Result<(&'a str, &'a Map<String, Value>), Rejection> {
    let obj = v.as_object().ok_or_else(|| at(path, msg::NOT_A_DICT))?;
    let tag = obj
        .get("type")
        .and_then(Value::as_str)
        .ok_or_else(|| at(path, msg::NO_TAG))?;
    if !expected.contains(&format!("'{tag}'")) {
        return Err(at(path, &msg::wrong_tag(tag, expected)));
    }
    Ok((tag, obj))
}

fn check_block(path: &str, block: &Value, expected: &str) -> Checked {
    let (tag, b) = tag(path, block, expected)?;
    let p = format!("{path}.{tag}");
    match tag {
        "text" => required_str(b, &p, "text").map(drop),
        "image" => check_image_schema(&p, b),
        "tool_use" => {
            required_str(b, &p, "id")?;
            required_str(b, &p, "name")?;
            match b.get("input") {
                None => Err(at(&format!("{p}.input"), msg::FIELD_REQUIRED)),
                Some(Value::Object(_)) => Ok(()),
                Some(_) => Err(at(&format!("{p}.input"), msg::NOT_A_DICT)),
            }
        }
        "tool_result" => {
            required_str(b, &p, "tool_use_id")?;
            match b.get("content") {
                None | Some(Value::String(_)) => Ok(()),
                Some(Value::Array(items)) => items.iter().enumerate().try_for_each(|(k, item)| {
                    check_block(&format!("{p}.content.{k}"), item, msg::TOOL_RESULT_TAGS)
                }),
                Some(_) => Err(at(&format!("{p}.content"), msg::NOT_A_LIST)),
            }
        }
        // Documents, thinking and server-tool blocks are outside this mock's scope: accepted as tagged.
        _ => Ok(()),
    }
}

/// `path` ends in `.image`.
fn check_image_schema(path: &str, image: &Map<String, Value>) -> Checked {
    let source_path = format!("{path}.source");
    let source = image
        .get("source")
        .ok_or_else(|| at(&source_path, msg::FIELD_REQUIRED))?;
    let (kind, source) = tag(&source_path, source, msg::SOURCE_TAGS)?;
    let p = format!("{source_path}.{kind}");
    match kind {
        "base64" => {
            // Both absent (docs/research/providers.md §1.8): `media_type` is reported, as in the observed body.
            match source.get("media_type") {
                None => return Err(at(&format!("{p}.media_type"), msg::FIELD_REQUIRED)),
                // Case-sensitive: `image/PNG` and `image/jpg` are refused (docs/research/providers.md §1.2).
                Some(Value::String(m)) if MEDIA_TYPES.contains(&m.as_str()) => {}
                Some(_) => return Err(at(&format!("{p}.media_type"), msg::MEDIA_TYPE)),
            }
            required_str(source, &p, "data").map(drop)
        }
        "url" => required_str(source, &p, "url").map(drop),
        _ => required_str(source, &p, "file_id").map(drop),
    }
}

/// Visits every content block of every message, including those nested in `tool_result.content`,
/// with its path (`messages.i.content.j` or `messages.i.content.j.tool_result.content.k`).
fn for_each_block<'a>(
    messages: &'a [Value],
    f: &mut dyn FnMut(&str, &'a Map<String, Value>) -> Checked,
) -> Checked {
    for (i, m) in messages.iter().enumerate() {
        let Some(blocks) = m.get("content").and_then(Value::as_array) else {
            continue;
        };
        for (j, b) in blocks.iter().enumerate() {
            let Some(b) = b.as_object() else { continue };
            let path = format!("messages.{i}.content.{j}");
            f(&path, b)?;
            if let Some(nested) = b.get("content").and_then(Value::as_array)
                && b.get("type").and_then(Value::as_str) == Some("tool_result")
            {
                for (k, n) in nested.iter().enumerate() {
                    if let Some(n) = n.as_object() {
                        f(&format!("{path}.tool_result.content.{k}"), n)?;
                    }
                }
            }
        }
    }
    Ok(())
}

fn block_type(b: &Map<String, Value>) -> Option<&str> {
    b.get("type").and_then(Value::as_str)
}

fn check_text(messages: &[Value]) -> Checked {
    for (i, m) in messages.iter().enumerate() {
        let empty = match m.get("content") {
            Some(Value::String(s)) => s.is_empty(),
            Some(Value::Array(a)) => a.is_empty(),
            _ => false,
        };
        let is_final_assistant =
            i + 1 == messages.len() && m.get("role").and_then(Value::as_str) == Some("assistant");
        if empty && !is_final_assistant {
            return Err(invalid(msg::empty_content(i)));
        }
    }
    for_each_block(messages, &mut |_, b| match (
        block_type(b),
        b.get("text").and_then(Value::as_str),
    ) {
        (Some("text"), Some("")) => Err(invalid(msg::EMPTY_TEXT)),
        (Some("text"), Some(t)) if is_blank(t) => Err(invalid(msg::BLANK_TEXT)),
        _ => Ok(()),
    })
}

/// Ids of the blocks tagged `tag` in message `m` (`id` for tool_use, `tool_use_id` for tool_result).
fn ids_of<'a>(m: Option<&'a Value>, tag: &str, key: &str) -> Vec<(usize, &'a str)> {
    m.and_then(|m| m.get("content"))
        .and_then(Value::as_array)
        .map(|blocks| {
            blocks
                .iter()
                .enumerate()
                .filter(|(_, b)| b.get("type").and_then(Value::as_str) == Some(tag))
                .filter_map(|(j, b)| Some((j, b.get(key)?.as_str()?)))
                .collect()
        })
        .unwrap_or_default()
}

fn role(m: Option<&Value>) -> Option<&str> {
    m?.get("role")?.as_str()
}

fn check_tool_pairing(messages: &[Value]) -> Checked {
    for (i, m) in messages.iter().enumerate() {
        let next = messages.get(i + 1);
        let uses = ids_of(Some(m), "tool_use", "id");
        if role(Some(m)) == Some("assistant") && !uses.is_empty() {
            let results = if role(next) == Some("user") {
                ids_of(next, "tool_result", "tool_use_id")
            } else {
                Vec::new()
            };
            let missing: Vec<&str> = uses
                .iter()
                .map(|&(_, id)| id)
                .filter(|id| !results.iter().any(|&(_, r)| r == *id))
                .collect();
            if !missing.is_empty() {
                return Err(invalid(msg::unanswered_tool_use(i, &missing.join(", "))));
            }
        }
        if role(Some(m)) == Some("user") {
            let previous = i.checked_sub(1).and_then(|p| messages.get(p));
            let offered = if role(previous) == Some("assistant") {
                ids_of(previous, "tool_use", "id")
            } else {
                Vec::new()
            };
            for (j, id) in ids_of(Some(m), "tool_result", "tool_use_id") {
                if !offered.iter().any(|&(_, u)| u == id) {
                    return Err(invalid(msg::orphan_tool_result(
                        &format!("messages.{i}.content.{j}"),
                        id,
                    )));
                }
            }
        }
    }
    Ok(())
}

fn check_images(messages: &[Value]) -> Checked {
    let (mut images, mut documents) = (0, 0);
    for_each_block(messages, &mut |_, b| {
        match block_type(b) {
            Some("image") => images += 1,
            Some("document") => documents += 1,
            _ => {}
        }
        Ok(())
    })?;
    if images + documents > MAX_MEDIA {
        return Err(invalid(msg::too_much_media(images, documents, MAX_MEDIA)));
    }
    let max_dimension = if images > MANY_IMAGES {
        MANY_IMAGES_DIMENSION
    } else {
        MAX_DIMENSION
    };
    for_each_block(messages, &mut |path, b| {
        let Some(source) = b.get("source").filter(|_| block_type(b) == Some("image")) else {
            return Ok(());
        };
        match source.get("type").and_then(Value::as_str) {
            Some("base64") => check_base64_image(
                &format!("{path}.image.source.base64"),
                source,
                max_dimension,
            ),
            Some("url") => {
                // Never fetched: an https URL is accepted as if the download succeeded (documented choice).
                let url = source
                    .get("url")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                match url_scheme(url.trim_start()).as_deref() {
                    Some("https") => Ok(()),
                    _ => Err(invalid(msg::HTTP_URL)),
                }
            }
            _ => Ok(()),
        }
    })
}

/// `path` ends in `.image.source.base64`.
fn check_base64_image(path: &str, source: &Value, max_dimension: u32) -> Checked {
    let data = source
        .get("data")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let declared = source
        .get("media_type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if data.is_empty() {
        return Err(at(path, msg::EMPTY_IMAGE));
    }
    let bytes = b64::decode(Flavor::Strict, data).ok_or_else(|| at(path, msg::BAD_BASE64))?;
    if data.len() > MAX_IMAGE_B64_LEN {
        return Err(at(path, &msg::image_too_big(data.len(), MAX_IMAGE_B64_LEN)));
    }
    let info = image::inspect(&bytes)
        .filter(|i| i.kind != ImageKind::Heif)
        .ok_or_else(|| invalid(msg::UNDECODABLE))?;
    if info.kind.media_type() != declared {
        return Err(at(path, &msg::mismatch(declared, info.kind.media_type())));
    }
    let (w, h) = info
        .size
        .filter(|&(w, h)| w > 0 && h > 0)
        .ok_or_else(|| invalid(msg::UNDECODABLE))?;
    if w.max(h) > max_dimension {
        let message = if max_dimension == MAX_DIMENSION {
            msg::too_wide(max_dimension)
        } else {
            msg::too_wide_many(max_dimension)
        };
        return Err(at(&format!("{path}.data"), &message));
    }
    Ok(())
}

pub(crate) fn tool_result_request(blocks: &[AgentBlock]) -> Value {
    let content: Vec<Value> = blocks
        .iter()
        .map(|b| match b {
            AgentBlock::Text(t) => json!({"type": "text", "text": t}),
            AgentBlock::Image { data, mime } => {
                json!({"type": "image", "source": {"type": "base64", "media_type": mime, "data": data}})
            }
            AgentBlock::Other(v) => (*v).clone(),
        })
        .collect();
    json!({
        "model": "claude-mock",
        "max_tokens": 1024,
        "messages": [
            {"role": "user", "content": "Use the tool."},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_01Mock", "name": "tool", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01Mock", "content": content}]}
        ]
    })
}
