//! Gemini `generateContent` / `streamGenerateContent` (docs/research/providers.md §4).
//!
//! Proto3 JSON semantics: camelCase and snake_case field names are both accepted, `data` is proto `bytes`
//! (standard or URL-safe base64, padding optional), and paths in messages use the proto (snake_case)
//! names. No declared-type-vs-bytes check (no evidence, docs/research/providers.md §4.2); bytes that are no image fail.

use super::{AgentBlock, url_scheme};
use crate::b64::{self, Flavor};
use crate::ids;
use crate::image;
use crate::script::{Failure, FailureKind, Piece, Reply, Turn, splice, sse};
use crate::verdict::{Checked, Rejection};
use serde_json::{Map, Value, json};

/// Inline request limit: 100 MB since 2026-01 (docs/research/providers.md §4.2). [INF] MiB, on the whole body.
const MAX_REQUEST_BYTES: usize = 100 * 1024 * 1024;
/// Gemini 2.x limit (docs/research/providers.md §4.2, from docs).
const MAX_IMAGES: usize = 3600;
/// The image types of docs/research/providers.md §4.2 (GIF is not among them); case-sensitive. [INF]
const IMAGE_TYPES: [&str; 5] = [
    "image/png",
    "image/jpeg",
    "image/webp",
    "image/heic",
    "image/heif",
];
/// Non-image inline types Gemini documents; accepted without inspection. [INF]
const OTHER_TYPE_PREFIXES: [&str; 4] = ["audio/", "video/", "text/", "application/pdf"];
/// The members of `Part`'s `data` oneof, as (camelCase, snake_case).
const DATA_FIELDS: [(&str, &str); 7] = [
    ("text", "text"),
    ("inlineData", "inline_data"),
    ("fileData", "file_data"),
    ("functionCall", "function_call"),
    ("functionResponse", "function_response"),
    ("executableCode", "executable_code"),
    ("codeExecutionResult", "code_execution_result"),
];

/// The error catalogue (docs/research/providers.md §4.4): verbatim where observed, `[INF]` otherwise.
mod msg {
    pub const UNPROCESSABLE: &str = "Unable to process input image. Please retry or report in https://developers.generativeai.google/guide/troubleshooting";
    pub const INVALID_ARGUMENT: &str = "Request contains an invalid argument.";
    pub const ROOT_NOT_OBJECT: &str =
        "Invalid JSON payload received. Unknown name \"\": Root element must be a message."; // [INF] from memory
    pub const BAD_JSON: &str = "Invalid JSON payload received. Unexpected token."; // [INF] from memory
    pub const NO_CONTENTS: &str = "* GenerateContentRequest.contents: contents is not specified\n"; // [INF] from memory
    pub const BAD_ROLE: &str = "Please use a valid role: user, model."; // [INF] from memory
    pub const RESPONSE_NOT_AFTER_CALL: &str =
        "Please ensure that function response turn comes immediately after a function call turn."; // [INF] from memory
    pub const CALL_RESPONSE_COUNT: &str = "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn."; // [INF] from memory

    pub fn empty_parts(i: usize) -> String {
        format!("* GenerateContentRequest.contents[{i}].parts: contents.parts must not be empty.\n")
    }
    pub fn no_data(path: &str) -> String {
        format!(
            "* GenerateContentRequest.{path}.data: required oneof field 'data' must have one initialized field\n"
        )
    }
    /// [INF] from memory (proto JSON parser wording).
    pub fn oneof_twice(path: &str, field: &str) -> String {
        format!(
            "Invalid value at '{path}' (oneof), oneof field 'data' is already set. Cannot set '{field}'"
        )
    }
    /// [INF] proto JSON parser wording for a value of the wrong JSON type.
    pub fn bad_value(path: &str, proto: &str, value: &str) -> String {
        format!(
            "Invalid value at '{path}' (type.googleapis.com/google.ai.generativelanguage.v1beta.{proto}), {value}"
        )
    }
    pub fn unsupported_mime(m: &str) -> String {
        format!("Unsupported MIME type: {m}")
    }
    pub fn bad_base64(path: &str, value: &str) -> String {
        format!("Invalid value at '{path}' (TYPE_BYTES), Base64 decoding failed for \"{value}\"")
    }
    /// [INF] from memory.
    pub fn empty_function_name(path: &str) -> String {
        format!("* GenerateContentRequest.{path}.function_response.name: Name cannot be empty.\n")
    }
    /// [INF] docs/research/providers.md §8: not observed.
    pub fn too_many_images(n: usize, max: usize) -> String {
        format!("* GenerateContentRequest.contents: too many images in the request: {n} > {max}\n")
    }
    /// docs/research/providers.md §4.2 (2023 observation, limit updated). [INF] status.
    pub fn too_large(max: usize) -> String {
        format!("Request payload size exceeds the limit: {max} bytes.")
    }
}

fn reject(message: impl Into<String>) -> Rejection {
    Rejection {
        status: 400,
        body: json!({"error": {"code": 400, "message": message.into(), "status": "INVALID_ARGUMENT"}}),
        headers: Vec::new(),
    }
}

/// Scripted failures: `{"error": {"code", "message", "status"}}` with the status of
/// https://ai.google.dev/gemini-api/docs/troubleshooting (429 RESOURCE_EXHAUSTED, 500 INTERNAL,
/// 503 UNAVAILABLE, 400 INVALID_ARGUMENT). Gemini sends no retry header: the delay is a
/// `google.rpc.RetryInfo` detail of the 429 body (https://ai.google.dev/gemini-api/docs/rate-limits;
/// message as quoted at https://discuss.ai.google.dev/t/we-are-getting-an-error-calling-the-gemini-api-error-calling-model-gemini-3-6-flash-resource-exhausted/189883).
pub(crate) fn failure(f: &Failure) -> Rejection {
    let envelope = |code: u16, status: &str, message: &str| Rejection {
        status: code,
        body: json!({"error": {"code": code, "message": message, "status": status}}),
        headers: Vec::new(),
    };
    match f.kind {
        FailureKind::RateLimit => {
            let mut r = envelope(
                429,
                "RESOURCE_EXHAUSTED",
                "You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.",
            );
            r.body["error"]["details"] = json!([{
                "@type": "type.googleapis.com/google.rpc.RetryInfo",
                "retryDelay": format!("{}s", f.retry_after),
            }]);
            r
        }
        // [INF] wording; status from the troubleshooting table.
        FailureKind::ServerError => envelope(
            500,
            "INTERNAL",
            "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting",
        ),
        // As tabled at https://docs.llmgateway.io/troubleshooting/gemini-429-resource-exhausted.
        FailureKind::Overloaded => envelope(
            503,
            "UNAVAILABLE",
            "The model is overloaded. Please try again later.",
        ),
        FailureKind::Image => reject(msg::UNPROCESSABLE),
        FailureKind::Format => reject(msg::unsupported_mime("image/gif")),
    }
}

/// A proto field by its camelCase or snake_case name.
fn field<'a>(obj: &'a Map<String, Value>, camel: &str, snake: &str) -> Option<&'a Value> {
    obj.get(camel).or_else(|| obj.get(snake))
}

/// An `inlineData` blob found during the structural pass, judged after it.
struct Blob<'a> {
    /// Path of the blob (`contents[0].parts[1].inline_data`).
    path: String,
    blob: &'a Map<String, Value>,
}

pub(crate) fn validate(body: &[u8]) -> Checked {
    check_size(body.len())?;
    let request: Value = serde_json::from_slice(body).map_err(|_| reject(msg::BAD_JSON))?;
    check(&request)
}

pub(crate) fn check_size(bytes: usize) -> Checked {
    if bytes > MAX_REQUEST_BYTES {
        return Err(reject(msg::too_large(MAX_REQUEST_BYTES)));
    }
    Ok(())
}

/// The checks after parsing: `request` is the parsed body.
pub(crate) fn check(request: &Value) -> Checked {
    let request = request
        .as_object()
        .ok_or_else(|| reject(msg::ROOT_NOT_OBJECT))?;
    let contents = match request.get("contents") {
        None => return Err(reject(msg::NO_CONTENTS)),
        Some(Value::Array(c)) if c.is_empty() => return Err(reject(msg::NO_CONTENTS)),
        Some(Value::Array(c)) => c,
        Some(other) => {
            return Err(reject(msg::bad_value(
                "contents",
                "Content",
                &other.to_string(),
            )));
        }
    };
    let mut blobs = Vec::new();
    for (i, content) in contents.iter().enumerate() {
        check_content(i, content, &mut blobs)?;
    }
    check_function_turns(contents)?;
    if blobs.len() > MAX_IMAGES {
        return Err(reject(msg::too_many_images(blobs.len(), MAX_IMAGES)));
    }
    blobs.iter().try_for_each(check_blob)
}

fn check_content<'a>(i: usize, content: &'a Value, blobs: &mut Vec<Blob<'a>>) -> Checked {
    let path = format!("contents[{i}]");
    let content = content
        .as_object()
        .ok_or_else(|| reject(msg::bad_value(&path, "Content", &content.to_string())))?;
    match content.get("role") {
        None => {}
        Some(Value::String(r)) if r == "user" || r == "model" || r.is_empty() => {}
        Some(_) => return Err(reject(msg::BAD_ROLE)),
    }
    let parts = match content.get("parts") {
        None => return Err(reject(msg::empty_parts(i))),
        Some(Value::Array(p)) if p.is_empty() => return Err(reject(msg::empty_parts(i))),
        Some(Value::Array(p)) => p,
        Some(other) => {
            return Err(reject(msg::bad_value(
                &format!("{path}.parts"),
                "Part",
                &other.to_string(),
            )));
        }
    };
    for (j, part) in parts.iter().enumerate() {
        let part_path = format!("{path}.parts[{j}]");
        let part = part
            .as_object()
            .ok_or_else(|| reject(msg::bad_value(&part_path, "Part", &part.to_string())))?;
        // `{"text": ""}` is the proto default, which the API treats as unset. [INF]
        let set: Vec<(&str, &str, &Value)> = DATA_FIELDS
            .iter()
            .filter_map(|&(camel, snake)| Some((camel, snake, field(part, camel, snake)?)))
            .filter(|(_, _, v)| !matches!(v, Value::String(s) if s.is_empty()))
            .collect();
        let (_, snake, value) = match set.as_slice() {
            [] => return Err(reject(msg::no_data(&part_path))),
            [one] => *one,
            [_, (second, _, _), ..] => return Err(reject(msg::oneof_twice(&part_path, second))),
        };
        let data_path = format!("{part_path}.{snake}");
        match snake {
            "inline_data" => blobs.push(Blob {
                blob: blob_object(&data_path, value)?,
                path: data_path,
            }),
            "file_data" => check_file_data(value)?,
            "function_response" => check_function_response(&part_path, value, blobs)?,
            _ => {}
        }
    }
    Ok(())
}

fn blob_object<'a>(path: &str, v: &'a Value) -> Result<&'a Map<String, Value>, Rejection> {
    v.as_object()
        .ok_or_else(|| reject(msg::bad_value(path, "Blob", &v.to_string())))
}

/// File URIs: Files API and public `https` (since 2026-01), `gs://` (docs/research/providers.md §4.3). Never fetched.
/// [INF] Anything else (e.g. `http:`) is answered with the generic invalid-argument message.
fn check_file_data(v: &Value) -> Checked {
    let uri = v
        .as_object()
        .and_then(|o| field(o, "fileUri", "file_uri"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    match url_scheme(uri).as_deref() {
        Some("https" | "gs") => Ok(()),
        _ => Err(reject(msg::INVALID_ARGUMENT)),
    }
}

fn check_function_response<'a>(
    part_path: &str,
    v: &'a Value,
    blobs: &mut Vec<Blob<'a>>,
) -> Checked {
    let path = format!("{part_path}.function_response");
    let response = v
        .as_object()
        .ok_or_else(|| reject(msg::bad_value(&path, "FunctionResponse", &v.to_string())))?;
    if response
        .get("name")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        return Err(reject(msg::empty_function_name(part_path)));
    }
    let Some(parts) = response.get("parts").and_then(Value::as_array) else {
        return Ok(());
    };
    for (k, p) in parts.iter().enumerate() {
        let p_path = format!("{path}.parts[{k}]");
        let p = p.as_object().ok_or_else(|| {
            reject(msg::bad_value(
                &p_path,
                "FunctionResponsePart",
                &p.to_string(),
            ))
        })?;
        if let Some(blob) = field(p, "inlineData", "inline_data") {
            let blob_path = format!("{p_path}.inline_data");
            blobs.push(Blob {
                blob: blob_object(&blob_path, blob)?,
                path: blob_path,
            });
        } else if let Some(file) = field(p, "fileData", "file_data") {
            check_file_data(file)?;
        } else {
            return Err(reject(msg::no_data(&p_path)));
        }
    }
    Ok(())
}

fn count_parts(content: &Value, camel: &str, snake: &str) -> usize {
    content
        .get("parts")
        .and_then(Value::as_array)
        .map_or(0, |parts| {
            parts
                .iter()
                .filter(|p| p.as_object().and_then(|o| field(o, camel, snake)).is_some())
                .count()
        })
}

/// A function-response turn must follow a function-call turn and answer each of its calls.
fn check_function_turns(contents: &[Value]) -> Checked {
    let calls = |c: &Value| count_parts(c, "functionCall", "function_call");
    let responses = |c: &Value| count_parts(c, "functionResponse", "function_response");
    for (i, content) in contents.iter().enumerate() {
        let answered = responses(content);
        let previous_calls = i
            .checked_sub(1)
            .and_then(|p| contents.get(p))
            .map_or(0, calls);
        if answered > 0 && previous_calls == 0 {
            return Err(reject(msg::RESPONSE_NOT_AFTER_CALL));
        }
        if previous_calls > 0 && answered != previous_calls {
            return Err(reject(msg::CALL_RESPONSE_COUNT));
        }
    }
    Ok(())
}

fn check_blob(b: &Blob) -> Checked {
    let mime = field(b.blob, "mimeType", "mime_type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let is_image = IMAGE_TYPES.contains(&mime);
    if !is_image && !OTHER_TYPE_PREFIXES.iter().any(|p| mime.starts_with(p)) {
        return Err(reject(msg::unsupported_mime(mime)));
    }
    let data = match b.blob.get("data") {
        None => "",
        Some(Value::String(s)) => s,
        Some(other) => {
            return Err(reject(msg::bad_value(
                &format!("{}.data", b.path),
                "Blob",
                &other.to_string(),
            )));
        }
    };
    let Some(bytes) = b64::decode(Flavor::ProtoBytes, data) else {
        let path = format!("{}.data", b.path);
        let message = msg::bad_base64(&path, data);
        let mut rejection = reject(message.clone());
        rejection.body["error"]["details"] = json!([{
            "@type": "type.googleapis.com/google.rpc.BadRequest",
            "fieldViolations": [{"field": path, "description": message}]
        }]);
        return Err(rejection);
    };
    if is_image && image::inspect(&bytes).is_none() {
        return Err(reject(msg::UNPROCESSABLE));
    }
    Ok(())
}

pub(crate) fn tool_result_request(blocks: &[AgentBlock]) -> Value {
    let mut texts = Vec::new();
    let mut parts = Vec::new();
    for b in blocks {
        match b {
            AgentBlock::Text(t) => texts.push(json!({"type": "text", "text": t})),
            AgentBlock::Image { data, mime } => {
                parts.push(json!({"inlineData": {"mimeType": mime, "data": data}}))
            }
            AgentBlock::Other(v) => parts.push((*v).clone()),
        }
    }
    // Multimodal function response (docs/research/providers.md §4.1): text in `response`, media in `parts`.
    let mut response = json!({"name": "tool", "response": {"content": texts}});
    if !parts.is_empty() {
        response["parts"] = Value::Array(parts);
    }
    json!({"contents": [
        {"role": "user", "parts": [{"text": "Use the tool."}]},
        {"role": "model", "parts": [{"functionCall": {"name": "tool", "args": {}}}]},
        {"role": "user", "parts": [{"functionResponse": response}]}
    ]})
}

/// How a Gemini answer is framed: one object, SSE (`?alt=sse`), or a JSON array (stream without SSE).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    Json,
    Sse,
    Array,
}

pub(crate) fn reply(turn: &Turn, model: &str, framing: Framing) -> Reply {
    let response_id = ids::short();
    let event = |part: Value, finish: bool| {
        let mut candidate = json!({"content": {"parts": [part], "role": "model"}, "index": 0});
        if finish {
            candidate["finishReason"] = json!("STOP");
        }
        json!({"candidates": [candidate],
            "usageMetadata": {"promptTokenCount": 25, "candidatesTokenCount": 15, "totalTokenCount": 40},
            "modelVersion": model, "responseId": response_id})
    };
    // Each streamed event as a serialized JSON object.
    let events: Vec<String> = match turn {
        Turn::ToolCall {
            id,
            name,
            arguments,
        } => {
            let mut call = json!({"name": name, "args": arguments});
            if let Some(id) = id {
                call["id"] = json!(id);
            }
            vec![event(json!({"functionCall": call}), true).to_string()]
        }
        Turn::Text { .. } if framing == Framing::Json => {
            vec![splice(
                &event(json!({"text": Piece::MARK}), true),
                &turn.whole_text(),
            )]
        }
        Turn::Text { .. } => {
            let pieces = turn.pieces();
            let last = pieces.len().saturating_sub(1);
            pieces
                .iter()
                .enumerate()
                .map(|(n, p)| splice(&event(json!({"text": Piece::MARK}), n == last), p))
                .collect()
        }
    };
    match framing {
        Framing::Json => Reply::json(events.concat()),
        Framing::Sse => Reply::sse(events.iter().map(|e| sse(None, e)).collect()),
        Framing::Array => Reply::json(format!("[{}]", events.join(",\n"))),
    }
}
