//! OpenAI Chat Completions (`POST /v1/chat/completions`, research §2) and Responses
//! (`POST /v1/responses`, research §3). Both share the envelope and the data-URL image rule.
//!
//! OpenAI does not compare a data URL's label with the bytes (research §2.2): only bytes that are not
//! PNG/JPEG/GIF/WebP are refused. `http(s)` image URLs are accepted without fetching (documented choice:
//! the real API would download them; this mock never fetches a URL found in a request).

use super::{AgentBlock, text_of, url_scheme};
use crate::b64::{self, Flavor};
use crate::ids;
use crate::image::{self, ImageKind};
use crate::script::{Piece, Reply, Turn, splice, split_json, sse};
use crate::verdict::{Checked, Rejection};
use serde_json::{Map, Value, json};
use std::time::{SystemTime, UNIX_EPOCH};

/// 20 MB per image, 50 MB of image bytes per request (research §2.2). [INF] MiB, decoded bytes.
const MAX_IMAGE_BYTES: usize = 20 * 1024 * 1024;
const MAX_REQUEST_IMAGE_BYTES: usize = 50 * 1024 * 1024;
/// [INF] the newer documented limit (1,500; older docs: 500).
const MAX_IMAGES: usize = 1500;

/// The error catalogue (research §2.4, §3.2): verbatim where observed, `[INF]` otherwise.
mod msg {
    /// [INF] from memory: the API's answer to a body that is not JSON.
    pub const BAD_JSON: &str = "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON. If you have trouble figuring out how to fix this, please contact us through our help center at help.openai.com.)";
    pub const BAD_BASE64: &str = "Invalid base64 image_url."; // E-O3
    pub const NOT_IMAGE_MIME: &str = "Invalid MIME type. Only image types are supported."; // E-O4
    pub const UNSUPPORTED_IMAGE: &str = "You uploaded an unsupported image. Please make sure your image has of one the following formats: ['png', 'jpeg', 'gif', 'webp']."; // E-O5
    /// [INF] the 2024-06 variant of E-O5, used for an image over 20 MB.
    pub const IMAGE_TOO_BIG: &str = "You uploaded an unsupported image. Please make sure your image is below 20 MB in size and is of one the following formats: ['png', 'jpeg', 'gif', 'webp'].";
    pub const NOT_VALID_IMAGE: &str = "The image data you provided does not represent a valid image. Please check your input and try again with one of the supported image formats: ['image/jpeg', 'image/png', 'image/gif', 'image/webp']."; // Responses §3.2
    pub const CHAT_ROLES: &str =
        "'system', 'assistant', 'user', 'function', 'tool', and 'developer'"; // [INF]
    pub const CHAT_PARTS: &str =
        "'text', 'image_url', 'input_audio', 'refusal', 'audio', and 'file'"; // [INF]
    pub const RESPONSES_ROLES: &str = "'assistant', 'system', 'developer', and 'user'"; // [INF]
    pub const RESPONSES_PARTS: &str = "'input_text', 'input_image', 'output_text', 'refusal', 'input_file', 'computer_screenshot', and 'summary_text'"; // [INF]
    /// [INF] from memory (typo "preceeding" included).
    pub const ORPHAN_TOOL: &str = "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.";

    pub fn missing(param: &str) -> String {
        format!("Missing required parameter: '{param}'.") // E-O9
    }
    pub fn wrong_type(param: &str, expected: &str, got: &str) -> String {
        format!("Invalid type for '{param}': expected {expected}, but got {got} instead.") // E-O1
    }
    pub fn bad_value(value: &str, supported: &str) -> String {
        format!("Invalid value: '{value}'. Supported values are: {supported}.") // [INF]
    }
    pub fn empty_array(param: &str) -> String {
        format!(
            "Invalid '{param}': empty array. Expected an array with minimum length 1, but got an empty array instead."
        ) // [INF]
    }
    pub fn image_not_from_user(i: usize, role: &str) -> String {
        format!(
            "Invalid 'messages[{i}]'. Image URLs are only allowed for messages with role 'user', but this message with role '{role}' contains an image URL."
        ) // E-O8
    }
    pub fn no_data_prefix(chat: bool, param: &str) -> String {
        let example = "Expected a base64-encoded data URL with an image MIME type (e.g. 'data:image/png;base64,aW1nIGJ5dGVzIGhlcmU='), but got a value without the 'data:' prefix.";
        // E-O2 for Chat; the Responses wording follows its observed empty-base64 message. [INF]
        if chat {
            format!("Invalid image URL: '{param}'. {example}")
        } else {
            format!("Invalid '{param}'. {example}")
        }
    }
    pub fn empty_base64(param: &str) -> String {
        format!(
            "Invalid '{param}'. Expected a base64-encoded data URL with an image MIME type (e.g. 'data:image/png;base64,aW1nIGJ5dGVzIGhlcmU='), but got empty base64-encoded bytes."
        ) // §3.2
    }
    /// [INF] from memory.
    pub fn unanswered_tool_calls(ids: &str) -> String {
        format!(
            "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: {ids}"
        )
    }
    /// [INF] from memory.
    pub fn unknown_tool_call_id(id: &str) -> String {
        format!(
            "Invalid parameter: 'tool_call_id' of '{id}' not found in 'tool_calls' of previous message."
        )
    }
    /// [INF] from memory (Responses).
    pub fn no_tool_call(id: &str) -> String {
        format!("No tool call found for function call output with call_id {id}.")
    }
    /// [INF] from memory (Responses).
    pub fn no_tool_output(id: &str) -> String {
        format!("No tool output found for function call {id}.")
    }
    /// [INF] no observed text for either limit (research §8).
    pub fn too_many_images(n: usize, max: usize) -> String {
        format!(
            "Invalid request: {n} images were provided, but at most {max} images are allowed per request."
        )
    }
    pub fn too_many_image_bytes(n: usize, max: usize) -> String {
        format!(
            "Invalid request: the images total {n} bytes, but at most {max} bytes of images are allowed per request."
        )
    }
}

/// Which of the two APIs is judging (their messages and paths differ).
#[derive(Clone, Copy, PartialEq)]
enum Api {
    Chat,
    Responses,
}

fn reject(message: impl Into<String>, param: Option<&str>, code: Option<&str>) -> Rejection {
    let id = ids::openai();
    Rejection {
        status: 400,
        body: json!({"error": {"message": message.into(), "type": "invalid_request_error", "param": param, "code": code}}),
        headers: vec![("x-request-id".into(), id)],
    }
}

fn missing(param: &str) -> Rejection {
    reject(
        msg::missing(param),
        Some(param),
        Some("missing_required_parameter"),
    )
}

fn invalid_value(message: String, param: &str) -> Rejection {
    reject(message, Some(param), Some("invalid_value"))
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn wrong_type(param: &str, expected: &str, got: &Value) -> Rejection {
    reject(
        msg::wrong_type(param, expected, kind_of(got)),
        Some(param),
        Some("invalid_type"),
    )
}

/// Parses the body and requires a string `model`.
fn parse(body: &[u8]) -> Result<Map<String, Value>, Rejection> {
    let Ok(Value::Object(request)) = serde_json::from_slice::<Value>(body) else {
        return Err(reject(msg::BAD_JSON, None, None));
    };
    match request.get("model") {
        None => Err(missing("model")),
        Some(Value::String(_)) => Ok(request),
        Some(other) => Err(wrong_type("model", "a string", other)),
    }
}

fn required_str<'a>(
    obj: &'a Map<String, Value>,
    path: &str,
    key: &str,
) -> Result<&'a str, Rejection> {
    let param = format!("{path}.{key}");
    match obj.get(key) {
        None => Err(missing(&param)),
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(wrong_type(&param, "a string", other)),
    }
}

fn object<'a>(v: &'a Value, param: &str) -> Result<&'a Map<String, Value>, Rejection> {
    v.as_object()
        .ok_or_else(|| wrong_type(param, "an object", v))
}

/// An image reference found during the schema pass, judged after it.
struct ImageRef<'a> {
    /// Where the URL sits (`messages[0].content[1].image_url.url`, `input[2].output[0].image_url`).
    param: String,
    url: &'a str,
}

// ---------------------------------------------------------------- Chat Completions

pub(crate) fn validate_chat(body: &[u8]) -> Checked {
    let request = parse(body)?;
    let messages = match request.get("messages") {
        None => return Err(missing("messages")),
        Some(Value::Array(m)) if m.is_empty() => {
            return Err(reject(
                msg::empty_array("messages"),
                Some("messages"),
                Some("empty_array"),
            ));
        }
        Some(Value::Array(m)) => m,
        Some(other) => return Err(wrong_type("messages", "an array of objects", other)),
    };
    let mut images = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        chat_message(i, m, &mut images)?;
    }
    chat_tool_pairing(messages)?;
    check_images(Api::Chat, &images)
}

fn chat_message<'a>(i: usize, m: &'a Value, images: &mut Vec<ImageRef<'a>>) -> Checked {
    let path = format!("messages[{i}]");
    let m = object(m, &path)?;
    let role = required_str(m, &path, "role")?;
    if ![
        "system",
        "developer",
        "user",
        "assistant",
        "tool",
        "function",
    ]
    .contains(&role)
    {
        return Err(invalid_value(
            msg::bad_value(role, msg::CHAT_ROLES),
            &format!("{path}.role"),
        ));
    }
    let content_path = format!("{path}.content");
    let parts = match m.get("content") {
        None if role == "assistant" => return Ok(()),
        None => return Err(missing(&content_path)),
        Some(Value::Null) if role == "assistant" => return Ok(()),
        Some(Value::String(_)) => return Ok(()),
        Some(Value::Array(p)) if p.is_empty() => {
            return Err(reject(
                msg::empty_array(&content_path),
                Some(&content_path),
                Some("empty_array"),
            ));
        }
        Some(Value::Array(p)) => p,
        Some(other) => {
            return Err(wrong_type(
                &content_path,
                "one of a string or array of objects",
                other,
            ));
        }
    };
    for (j, part) in parts.iter().enumerate() {
        let part_path = format!("{content_path}[{j}]");
        let part = object(part, &part_path)?;
        match required_str(part, &part_path, "type")? {
            "text" => {
                required_str(part, &part_path, "text")?;
            }
            "image_url" => {
                if role != "user" {
                    return Err(invalid_value(msg::image_not_from_user(i, role), &path));
                }
                let image_path = format!("{part_path}.image_url");
                let image = match part.get("image_url") {
                    None => return Err(missing(&image_path)),
                    Some(v) => object(v, &image_path)?,
                };
                let url = required_str(image, &image_path, "url")?;
                images.push(ImageRef {
                    param: format!("{image_path}.url"),
                    url,
                });
            }
            "input_audio" | "refusal" | "audio" | "file" => {}
            other => {
                return Err(invalid_value(
                    msg::bad_value(other, msg::CHAT_PARTS),
                    &format!("{part_path}.type"),
                ));
            }
        }
    }
    Ok(())
}

fn chat_tool_pairing(messages: &[Value]) -> Checked {
    let role = |m: &Value| {
        m.get("role")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let call_ids = |m: &Value| -> Vec<String> {
        m.get("tool_calls")
            .and_then(Value::as_array)
            .map(|calls| {
                calls
                    .iter()
                    .filter_map(|c| Some(c.get("id")?.as_str()?.to_string()))
                    .collect()
            })
            .unwrap_or_default()
    };
    // The tool_calls of the assistant message the current run of tool messages answers.
    let mut open: Option<(usize, Vec<String>, Vec<String>)> = None;
    for (i, m) in messages.iter().enumerate() {
        let param = format!("messages.[{i}].role");
        if role(m) == "tool" {
            let Some((_, calls, pending)) = open.as_mut() else {
                return Err(reject(msg::ORPHAN_TOOL, Some(&param), None));
            };
            let id = m
                .get("tool_call_id")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if !calls.iter().any(|c| c == id) {
                return Err(reject(
                    msg::unknown_tool_call_id(id),
                    Some(&format!("messages.[{i}].tool_call_id")),
                    None,
                ));
            }
            pending.retain(|p| p != id);
            continue;
        }
        if let Some((at, _, pending)) = open.take()
            && !pending.is_empty()
        {
            return Err(reject(
                msg::unanswered_tool_calls(&pending.join(", ")),
                Some(&format!("messages.[{at}].role")),
                None,
            ));
        }
        let calls = call_ids(m);
        if role(m) == "assistant" && !calls.is_empty() {
            open = Some((i, calls.clone(), calls));
        }
    }
    match open {
        Some((at, _, pending)) if !pending.is_empty() => Err(reject(
            msg::unanswered_tool_calls(&pending.join(", ")),
            Some(&format!("messages.[{at}].role")),
            None,
        )),
        _ => Ok(()),
    }
}

// ---------------------------------------------------------------- Responses

pub(crate) fn validate_responses(body: &[u8]) -> Checked {
    let request = parse(body)?;
    let items = match request.get("input") {
        None | Some(Value::String(_)) => return Ok(()),
        Some(Value::Array(items)) => items,
        Some(other) => {
            return Err(wrong_type(
                "input",
                "one of a string or array of objects",
                other,
            ));
        }
    };
    let mut images = Vec::new();
    for (i, item) in items.iter().enumerate() {
        responses_item(i, item, &mut images)?;
    }
    responses_tool_pairing(items)?;
    check_images(Api::Responses, &images)
}

fn responses_item<'a>(i: usize, item: &'a Value, images: &mut Vec<ImageRef<'a>>) -> Checked {
    let path = format!("input[{i}]");
    let item = object(item, &path)?;
    let kind = match item.get("type") {
        None if item.contains_key("role") => "message",
        None => return Err(missing(&format!("{path}.type"))),
        Some(_) => required_str(item, &path, "type")?,
    };
    match kind {
        "message" => {
            let role = required_str(item, &path, "role")?;
            if !["user", "assistant", "system", "developer"].contains(&role) {
                return Err(invalid_value(
                    msg::bad_value(role, msg::RESPONSES_ROLES),
                    &format!("{path}.role"),
                ));
            }
            match item.get("content") {
                None => Err(missing(&format!("{path}.content"))),
                Some(Value::String(_)) => Ok(()),
                Some(Value::Array(parts)) => {
                    responses_parts(&format!("{path}.content"), parts, images)
                }
                Some(other) => Err(wrong_type(
                    &format!("{path}.content"),
                    "one of a string or array of objects",
                    other,
                )),
            }
        }
        "function_call" => {
            for key in ["call_id", "name", "arguments"] {
                required_str(item, &path, key)?;
            }
            Ok(())
        }
        "function_call_output" => {
            required_str(item, &path, "call_id")?;
            match item.get("output") {
                None => Err(missing(&format!("{path}.output"))),
                Some(Value::String(_)) => Ok(()),
                Some(Value::Array(parts)) => {
                    responses_parts(&format!("{path}.output"), parts, images)
                }
                Some(other) => Err(wrong_type(
                    &format!("{path}.output"),
                    "one of a string or array of objects",
                    other,
                )),
            }
        }
        // Reasoning, item references, built-in tool items: outside this mock's scope.
        _ => Ok(()),
    }
}

fn responses_parts<'a>(path: &str, parts: &'a [Value], images: &mut Vec<ImageRef<'a>>) -> Checked {
    for (j, part) in parts.iter().enumerate() {
        let part_path = format!("{path}[{j}]");
        let part = object(part, &part_path)?;
        match required_str(part, &part_path, "type")? {
            "input_text" | "output_text" => {
                required_str(part, &part_path, "text")?;
            }
            "input_image" => {
                let param = format!("{part_path}.image_url");
                match part.get("image_url") {
                    Some(Value::String(url)) => images.push(ImageRef { param, url }),
                    None | Some(Value::Null)
                        if part.get("file_id").is_some_and(Value::is_string) => {}
                    None | Some(Value::Null) => return Err(missing(&param)),
                    Some(other) => return Err(wrong_type(&param, "an image URL", other)),
                }
            }
            "input_file" | "refusal" | "computer_screenshot" | "summary_text" => {}
            other => {
                return Err(invalid_value(
                    msg::bad_value(other, msg::RESPONSES_PARTS),
                    &format!("{part_path}.type"),
                ));
            }
        }
    }
    Ok(())
}

fn responses_tool_pairing(items: &[Value]) -> Checked {
    let with_type = |t: &'static str| {
        items
            .iter()
            .filter(move |it| it.get("type").and_then(Value::as_str) == Some(t))
            .filter_map(|it| it.get("call_id")?.as_str())
    };
    let calls: Vec<&str> = with_type("function_call").collect();
    let outputs: Vec<&str> = with_type("function_call_output").collect();
    if let Some(id) = outputs.iter().find(|o| !calls.contains(o)) {
        return Err(reject(msg::no_tool_call(id), Some("input"), None));
    }
    if let Some(id) = calls.iter().find(|c| !outputs.contains(c)) {
        return Err(reject(msg::no_tool_output(id), Some("input"), None));
    }
    Ok(())
}

// ---------------------------------------------------------------- images (both APIs)

/// Why an image URL is refused, before mapping to each API's wording.
enum Fault {
    NotDataUrl,
    NotImageMime,
    BadBase64,
    EmptyBase64,
    NotAnImage,
    TooBig,
}

/// Judges one image URL; the decoded size when it is a data URL.
fn judge_url(url: &str) -> Result<usize, Fault> {
    match url_scheme(url).as_deref() {
        Some("http" | "https") => return Ok(0),
        Some("data") => {}
        _ => return Err(Fault::NotDataUrl),
    }
    let rest = url.get(5..).unwrap_or_default();
    let (meta, payload) = rest.split_once(',').ok_or(Fault::BadBase64)?;
    let mut params = meta.split(';');
    let mime = params.next().unwrap_or_default();
    if !mime.to_ascii_lowercase().starts_with("image/") {
        return Err(Fault::NotImageMime);
    }
    if !params.any(|p| p.eq_ignore_ascii_case("base64")) {
        return Err(Fault::BadBase64);
    }
    if payload.is_empty() {
        return Err(Fault::EmptyBase64);
    }
    let bytes = b64::decode(Flavor::OpenAi, payload).ok_or(Fault::BadBase64)?;
    if bytes.len() > MAX_IMAGE_BYTES {
        return Err(Fault::TooBig);
    }
    match image::inspect(&bytes) {
        Some(info) if info.kind != ImageKind::Heif => Ok(bytes.len()),
        _ => Err(Fault::NotAnImage),
    }
}

fn check_images(api: Api, images: &[ImageRef]) -> Checked {
    if images.len() > MAX_IMAGES {
        return Err(reject(
            msg::too_many_images(images.len(), MAX_IMAGES),
            None,
            None,
        ));
    }
    let mut total = 0usize;
    for image in images {
        let chat = api == Api::Chat;
        total += judge_url(image.url).map_err(|fault| match fault {
            Fault::NotDataUrl => {
                invalid_value(msg::no_data_prefix(chat, &image.param), &image.param)
            }
            Fault::EmptyBase64 if !chat => {
                invalid_value(msg::empty_base64(&image.param), &image.param)
            }
            Fault::EmptyBase64 | Fault::BadBase64 => {
                reject(msg::BAD_BASE64, None, Some("invalid_base64"))
            }
            Fault::NotImageMime => reject(msg::NOT_IMAGE_MIME, None, Some("invalid_image_format")),
            Fault::TooBig => reject(msg::IMAGE_TOO_BIG, None, Some("invalid_image_format")),
            Fault::NotAnImage if chat => {
                reject(msg::UNSUPPORTED_IMAGE, None, Some("invalid_image_format"))
            }
            Fault::NotAnImage => reject(msg::NOT_VALID_IMAGE, Some("input"), Some("invalid_value")),
        })?;
    }
    if total > MAX_REQUEST_IMAGE_BYTES {
        return Err(reject(
            msg::too_many_image_bytes(total, MAX_REQUEST_IMAGE_BYTES),
            None,
            None,
        ));
    }
    Ok(())
}

// ---------------------------------------------------------------- requests and answers

fn data_url(data: &Value, mime: &Value) -> String {
    format!("data:{};base64,{}", text_of(mime), text_of(data))
}

pub(crate) fn chat_tool_result_request(blocks: &[AgentBlock]) -> Value {
    let mut texts = Vec::new();
    let mut images = Vec::new();
    for b in blocks {
        match b {
            AgentBlock::Text(t) => texts.push(json!({"type": "text", "text": t})),
            AgentBlock::Image { data, mime } => {
                images
                    .push(json!({"type": "image_url", "image_url": {"url": data_url(data, mime)}}));
            }
            AgentBlock::Other(v) => texts.push(json!({"type": "text", "text": v.to_string()})),
        }
    }
    // An empty parts array is refused; an empty string is the runtimes' "no text".
    let tool_content = if texts.is_empty() {
        json!("")
    } else {
        Value::Array(texts)
    };
    let mut messages = vec![
        json!({"role": "user", "content": "Use the tool."}),
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_mock1", "type": "function", "function": {"name": "tool", "arguments": "{}"}}]}),
        json!({"role": "tool", "tool_call_id": "call_mock1", "content": tool_content}),
    ];
    if !images.is_empty() {
        messages.push(json!({"role": "user", "content": images}));
    }
    json!({"model": "gpt-mock", "messages": messages})
}

pub(crate) fn responses_tool_result_request(blocks: &[AgentBlock]) -> Value {
    let output: Vec<Value> = blocks
        .iter()
        .map(|b| match b {
            AgentBlock::Text(t) => json!({"type": "input_text", "text": t}),
            AgentBlock::Image { data, mime } => {
                json!({"type": "input_image", "image_url": data_url(data, mime), "detail": "auto"})
            }
            AgentBlock::Other(v) => (*v).clone(),
        })
        .collect();
    json!({
        "model": "gpt-mock",
        "input": [
            {"role": "user", "content": "Use the tool."},
            {"type": "function_call", "call_id": "call_mock1", "name": "tool", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "call_mock1", "output": output}
        ]
    })
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn call_id(turn_id: &Option<String>) -> String {
    turn_id
        .clone()
        .unwrap_or_else(|| format!("call_{}", ids::short()))
}

/// Chat Completions answer: a `chat.completion`, or `chat.completion.chunk` SSE ending in `[DONE]`.
pub(crate) fn chat_reply(turn: &Turn, request: &Value, stream: bool) -> Reply {
    let model = text_of(request.get("model").unwrap_or(&Value::Null));
    let id = format!("chatcmpl-{}", ids::short());
    let created = now();
    let usage = json!({"prompt_tokens": 25, "completion_tokens": 15, "total_tokens": 40});
    if !stream {
        let (message, finish) = match turn {
            Turn::Text { .. } => (
                json!({"role": "assistant", "content": Piece::MARK, "refusal": null, "annotations": []}),
                "stop",
            ),
            Turn::ToolCall {
                id,
                name,
                arguments,
            } => (
                json!({"role": "assistant", "content": null, "refusal": null, "tool_calls": [
                    {"id": call_id(id), "type": "function", "function": {"name": name, "arguments": arguments.to_string()}}]}),
                "tool_calls",
            ),
        };
        let completion = json!({
            "id": id, "object": "chat.completion", "created": created, "model": model,
            "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": finish}],
            "usage": usage, "system_fingerprint": "fp_mock"
        });
        return Reply::json(splice(&completion, &turn.whole_text()));
    }
    let chunk = |delta: Value, finish: Value| {
        json!({"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
            "system_fingerprint": "fp_mock", "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]})
    };
    let mut out = sse(
        None,
        &chunk(json!({"role": "assistant", "content": ""}), Value::Null).to_string(),
    );
    let finish = match turn {
        Turn::Text { .. } => {
            for piece in turn.pieces() {
                out.push_str(&sse(
                    None,
                    &splice(&chunk(json!({"content": Piece::MARK}), Value::Null), &piece),
                ));
            }
            "stop"
        }
        Turn::ToolCall {
            id,
            name,
            arguments,
        } => {
            let start = json!({"tool_calls": [{"index": 0, "id": call_id(id), "type": "function", "function": {"name": name, "arguments": ""}}]});
            out.push_str(&sse(None, &chunk(start, Value::Null).to_string()));
            for part in split_json(arguments) {
                let delta = json!({"tool_calls": [{"index": 0, "function": {"arguments": part}}]});
                out.push_str(&sse(None, &chunk(delta, Value::Null).to_string()));
            }
            "tool_calls"
        }
    };
    out.push_str(&sse(None, &chunk(json!({}), json!(finish)).to_string()));
    if request.pointer("/stream_options/include_usage") == Some(&Value::Bool(true)) {
        let mut last = chunk(json!({}), Value::Null);
        last["choices"] = json!([]);
        last["usage"] = usage;
        out.push_str(&sse(None, &last.to_string()));
    }
    out.push_str(&sse(None, "[DONE]"));
    Reply::sse(out)
}

/// Responses answer: a `response` object, or its named SSE events (research §3.3).
pub(crate) fn responses_reply(turn: &Turn, request: &Value, stream: bool) -> Reply {
    let model = text_of(request.get("model").unwrap_or(&Value::Null));
    let resp_id = format!("resp_{}", ids::short());
    let item_id = format!("msg_{}", ids::short());
    let item = match turn {
        Turn::Text { .. } => {
            json!({"id": item_id, "type": "message", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": Piece::MARK, "annotations": []}]})
        }
        Turn::ToolCall {
            id,
            name,
            arguments,
        } => json!({"id": format!("fc_{}", ids::short()), "type": "function_call",
            "status": "completed", "call_id": call_id(id), "name": name, "arguments": arguments.to_string()}),
    };
    let response = |status: &str, output: Value| {
        json!({"id": resp_id, "object": "response", "created_at": now(), "status": status, "model": model,
            "output": output, "usage": {"input_tokens": 25, "output_tokens": 15, "total_tokens": 40}})
    };
    let whole = turn.whole_text();
    if !stream {
        return Reply::json(splice(&response("completed", json!([item])), &whole));
    }
    let mut out = String::new();
    let mut seq = 0;
    let mut event = |mut data: Value, piece: Option<&Piece>| {
        let name = data
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        data["sequence_number"] = json!(seq);
        seq += 1;
        let data = piece.map_or_else(|| data.to_string(), |p| splice(&data, p));
        out.push_str(&sse(Some(&name), &data));
    };
    event(
        json!({"type": "response.created", "response": response("in_progress", json!([]))}),
        None,
    );
    let mut added = item.clone();
    added["status"] = json!("in_progress");
    match turn {
        Turn::Text { .. } => {
            added["content"] = json!([]);
            event(
                json!({"type": "response.output_item.added", "output_index": 0, "item": added}),
                None,
            );
            let part = json!({"type": "output_text", "text": "", "annotations": []});
            let at = json!({"item_id": item_id, "output_index": 0, "content_index": 0});
            let with = |mut v: Value| {
                if let (Some(v), Some(at)) = (v.as_object_mut(), at.as_object()) {
                    v.extend(at.clone());
                }
                v
            };
            event(
                with(json!({"type": "response.content_part.added", "part": part})),
                None,
            );
            for piece in turn.pieces() {
                event(
                    with(
                        json!({"type": "response.output_text.delta", "delta": Piece::MARK, "logprobs": []}),
                    ),
                    Some(&piece),
                );
            }
            event(
                with(
                    json!({"type": "response.output_text.done", "text": Piece::MARK, "logprobs": []}),
                ),
                Some(&whole),
            );
            let done_part = json!({"type": "output_text", "text": Piece::MARK, "annotations": []});
            event(
                with(json!({"type": "response.content_part.done", "part": done_part})),
                Some(&whole),
            );
        }
        Turn::ToolCall { arguments, .. } => {
            added["arguments"] = json!("");
            let fc_id = item.get("id").cloned().unwrap_or_default();
            event(
                json!({"type": "response.output_item.added", "output_index": 0, "item": added}),
                None,
            );
            for part in split_json(arguments) {
                event(
                    json!({"type": "response.function_call_arguments.delta", "item_id": fc_id, "output_index": 0, "delta": part}),
                    None,
                );
            }
            event(
                json!({"type": "response.function_call_arguments.done", "item_id": fc_id, "output_index": 0, "arguments": arguments.to_string()}),
                None,
            );
        }
    }
    event(
        json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
        Some(&whole),
    );
    event(
        json!({"type": "response.completed", "response": response("completed", json!([item]))}),
        Some(&whole),
    );
    Reply::sse(out)
}
