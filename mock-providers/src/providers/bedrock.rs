//! Bedrock Converse (`POST /model/{modelId}/converse` and `/converse-stream`), docs/research/providers.md §5, answering as
//! a Claude model does behind Bedrock (the strictest family observed: declared format checked against
//! the bytes, 5 MB measured on base64). Other model families are not modelled.
//!
//! Two layers, as measured live (docs/research/providers.md §5.3): Smithy constraint validation of the whole request
//! (every violation listed, `N validation error(s) detected: ...`, 1-based `member` paths [INF]), then
//! Bedrock's own checks and the model's, the latter prefixed `The model returned the following errors: `.

use super::{AgentBlock, is_blank, text_of};
use crate::b64::{self, Flavor};
use crate::ids;
use crate::image::{self, ImageKind};
use crate::script::{Failure, FailureKind, Piece, Reply, Turn, splice, split_json};
use crate::verdict::{Checked, Rejection};
use serde_json::{Map, Value, json};

const FORMATS: [&str; 4] = ["gif", "jpeg", "png", "webp"];
const MAX_IMAGES: usize = 20;
const MAX_DIMENSION: u32 = 8000;
/// Claude's limit on the base64 string (= 3.75 MiB raw, Bedrock's documented limit).
const MAX_IMAGE_B64_LEN: usize = 5_242_880;

const VALIDATION: &str = "ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/";
/// [INF] error type of a body the REST layer cannot deserialize.
const SERIALIZATION: &str =
    "SerializationException:http://internal.amazon.com/coral/com.amazon.coral.service/";

/// The error catalogue (docs/research/providers.md §5.3): verbatim where observed, `[INF]` otherwise.
mod msg {
    pub const MODEL_PREFIX: &str = "The model returned the following errors: ";
    pub const UNDECODABLE: &str = "Could not process image"; // [INF] Anthropic's E11 behind the prefix
    pub const BAD_BODY: &str = "Unable to deserialize the request body"; // [INF]

    pub fn not_null(path: &str) -> String {
        format!("Value null at '{path}' failed to satisfy constraint: Member must not be null")
    }
    pub fn not_in_enum(value: &str, path: &str, set: &str) -> String {
        format!(
            "Value '{value}' at '{path}' failed to satisfy constraint: Member must satisfy enum value set: [{set}]"
        )
    }
    pub fn too_short(path: &str) -> String {
        format!(
            "Value at '{path}' failed to satisfy constraint: Member must have length greater than or equal to 1"
        ) // [INF]
    }
    pub fn detected(violations: &[String]) -> String {
        let n = violations.len();
        let plural = if n == 1 { "error" } else { "errors" };
        format!(
            "{n} validation {plural} detected: {}",
            violations.join("; ")
        )
    }
    pub fn empty_content(i: usize) -> String {
        format!(
            "The content field in the Message object at messages.{i} is empty. Add a ContentBlock object to the content field and try again."
        )
    }
    /// [INF] from memory.
    pub fn blank_text(i: usize, j: usize) -> String {
        format!(
            "The text field in the ContentBlock object at messages.{i}.content.{j} is blank. Add text to the text field, and try again."
        )
    }
    /// [INF] from memory.
    pub fn missing_tool_results(i: usize, ids: &str) -> String {
        format!("Expected toolResult blocks at messages.{i}.content for the following Ids: {ids}")
    }
    /// [INF] from memory.
    pub fn extra_tool_results(i: usize) -> String {
        format!(
            "The number of toolResult blocks at messages.{i}.content exceeds the number of toolUse blocks of previous turn."
        )
    }
    /// [INF] not observed; the documented limit (docs/research/providers.md §5.2).
    pub fn too_many_images(n: usize, max: usize) -> String {
        format!("Too many images in the request: {n} > {max}. You can include up to {max} images.")
    }
    pub fn mismatch(declared: &str, actual: &str) -> String {
        format!(
            "The image was specified using the {declared} media type, but the image appears to be a {actual} image"
        )
    }
    pub fn image_too_big(len: usize, max: usize) -> String {
        format!("image exceeds 5 MB maximum: {len} bytes > {max} bytes")
    }
    /// [INF] Anthropic's E8 behind the prefix.
    pub fn too_wide(max: u32) -> String {
        format!("At least one of the image dimensions exceed max allowed size: {max} pixels")
    }
}

fn reject(error_type: &str, message: impl Into<String>) -> Rejection {
    Rejection {
        status: 400,
        body: json!({"message": message.into()}),
        headers: vec![
            ("x-amzn-ErrorType".into(), error_type.into()),
            ("x-amzn-RequestId".into(), ids::aws()),
        ],
    }
}

fn validation(message: impl Into<String>) -> Rejection {
    reject(VALIDATION, message)
}

fn model_error(message: impl Into<String>) -> Rejection {
    validation(format!("{}{}", msg::MODEL_PREFIX, message.into()))
}

fn serialization() -> Rejection {
    reject(SERIALIZATION, msg::BAD_BODY)
}

/// Scripted failures: `{"message"}` with the exception named by `x-amzn-ErrorType`, statuses of
/// https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html#API_runtime_Converse_Errors
/// (ThrottlingException 429, InternalServerException 500, ServiceUnavailableException 503,
/// ValidationException 400). Bedrock sends no retry header: the AWS SDKs back off on their own.
pub(crate) fn failure(f: &Failure) -> Rejection {
    let exception = |status: u16, error_type: &str, message: &str| Rejection {
        status,
        body: json!({"message": message}),
        headers: vec![
            (
                "x-amzn-ErrorType".into(),
                format!("{error_type}:http://internal.amazon.com/coral/com.amazon.bedrock/"),
            ),
            ("x-amzn-RequestId".into(), ids::aws()),
        ],
    };
    match f.kind {
        // https://www.repost.aws/knowledge-center/bedrock-throttling-error quotes this message.
        FailureKind::RateLimit => exception(
            429,
            "ThrottlingException",
            "Too many requests, please wait before trying again.",
        ),
        // [INF] wording.
        FailureKind::ServerError => exception(
            500,
            "InternalServerException",
            "The system encountered an unexpected error during processing. Try your request again.",
        ),
        // [INF] wording, as runtimes' issue threads quote it.
        FailureKind::Overloaded => exception(
            503,
            "ServiceUnavailableException",
            "Bedrock is unable to process your request.",
        ),
        FailureKind::Image => model_error(msg::UNDECODABLE),
        FailureKind::Format => validation(msg::detected(&[msg::not_in_enum(
            "jpg",
            "messages.1.member.content.1.member.image.format",
            &FORMATS.join(", "),
        )])),
    }
}

/// An image found by the Smithy pass, judged after it.
struct ImageRef<'a> {
    /// Anthropic-style path of the bytes as the model reports it (`messages.0.content.1.image.source.bytes`).
    model_path: String,
    format: &'a str,
    /// `None` for an S3 source (never fetched; accepted).
    bytes: Option<&'a str>,
}

pub(crate) fn validate(body: &[u8]) -> Checked {
    let Ok(request) = serde_json::from_slice::<Value>(body) else {
        return Err(serialization());
    };
    check(&request)
}

/// The checks after parsing: `request` is the parsed body.
pub(crate) fn check(request: &Value) -> Checked {
    let Value::Object(request) = request else {
        return Err(serialization());
    };
    let messages = match request.get("messages") {
        None | Some(Value::Null) => {
            return Err(validation(msg::detected(&[msg::not_null("messages")])));
        }
        Some(Value::Array(m)) => m,
        Some(_) => return Err(serialization()),
    };
    let mut violations = Vec::new();
    let mut images = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        smithy_message(i, m, &mut violations, &mut images)?;
    }
    if !violations.is_empty() {
        return Err(validation(msg::detected(&violations)));
    }
    check_content(messages)?;
    check_tool_pairing(messages)?;
    if images.len() > MAX_IMAGES {
        return Err(validation(msg::too_many_images(images.len(), MAX_IMAGES)));
    }
    images.iter().try_for_each(check_image)
}

fn smithy_message<'a>(
    i: usize,
    m: &'a Value,
    violations: &mut Vec<String>,
    images: &mut Vec<ImageRef<'a>>,
) -> Checked {
    let path = format!("messages.{}.member", i + 1);
    let m = m.as_object().ok_or_else(serialization)?;
    match m.get("role") {
        None | Some(Value::Null) => violations.push(msg::not_null(&format!("{path}.role"))),
        Some(Value::String(r)) if r == "user" || r == "assistant" => {}
        Some(Value::String(r)) => violations.push(msg::not_in_enum(
            r,
            &format!("{path}.role"),
            "user, assistant",
        )),
        Some(_) => return Err(serialization()),
    }
    let blocks = match m.get("content") {
        None | Some(Value::Null) => {
            violations.push(msg::not_null(&format!("{path}.content")));
            return Ok(());
        }
        Some(Value::Array(b)) => b,
        Some(_) => return Err(serialization()),
    };
    for (j, block) in blocks.iter().enumerate() {
        let block_path = format!("{path}.content.{}.member", j + 1);
        let block = block.as_object().ok_or_else(serialization)?;
        let model_path = format!("messages.{i}.content.{j}");
        if let Some(image) = block.get("image") {
            smithy_image(
                &format!("{block_path}.image"),
                format!("{model_path}.image.source.bytes"),
                image,
                violations,
                images,
            )?;
        }
        if let Some(result) = block.get("toolResult") {
            let result = result.as_object().ok_or_else(serialization)?;
            let result_path = format!("{block_path}.toolResult");
            if !result.get("toolUseId").is_some_and(Value::is_string) {
                violations.push(msg::not_null(&format!("{result_path}.toolUseId")));
            }
            let Some(items) = result.get("content").and_then(Value::as_array) else {
                violations.push(msg::not_null(&format!("{result_path}.content")));
                continue;
            };
            for (k, item) in items.iter().enumerate() {
                if let Some(image) = item.get("image") {
                    let item_path = format!("{result_path}.content.{}.member.image", k + 1);
                    let model_item =
                        format!("{model_path}.tool_result.content.{k}.image.source.bytes");
                    smithy_image(&item_path, model_item, image, violations, images)?;
                }
            }
        }
    }
    Ok(())
}

fn smithy_image<'a>(
    path: &str,
    model_path: String,
    image: &'a Value,
    violations: &mut Vec<String>,
    images: &mut Vec<ImageRef<'a>>,
) -> Checked {
    let image = image.as_object().ok_or_else(serialization)?;
    let format = match image.get("format") {
        None | Some(Value::Null) => {
            violations.push(msg::not_null(&format!("{path}.format")));
            ""
        }
        // Case-sensitive: `JPEG`, `jpg` and `""` are refused (docs/research/providers.md §5.3).
        Some(Value::String(f)) if FORMATS.contains(&f.as_str()) => f,
        Some(Value::String(f)) => {
            violations.push(msg::not_in_enum(
                f,
                &format!("{path}.format"),
                &FORMATS.join(", "),
            ));
            f
        }
        Some(_) => return Err(serialization()),
    };
    let source: &Map<String, Value> = match image.get("source") {
        None | Some(Value::Null) => {
            violations.push(msg::not_null(&format!("{path}.source")));
            return Ok(());
        }
        Some(s) => s.as_object().ok_or_else(serialization)?,
    };
    let bytes = match (source.get("bytes"), source.get("s3Location")) {
        (Some(Value::String(b)), None) => Some(b.as_str()),
        (None, Some(Value::Object(_))) => None,
        // A union must have exactly one member. [INF] deserialization failure.
        _ => return Err(serialization()),
    };
    if bytes == Some("") {
        violations.push(msg::too_short(&format!("{path}.source.bytes")));
    }
    images.push(ImageRef {
        model_path,
        format,
        bytes,
    });
    Ok(())
}

fn content_of(m: &Value) -> &[Value] {
    m.get("content")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// Empty messages and blank text in top-level content blocks. [INF] Text inside `toolResult.content`
/// (a different union, `ToolResultContentBlock`) is not checked.
fn check_content(messages: &[Value]) -> Checked {
    for (i, m) in messages.iter().enumerate() {
        let blocks = content_of(m);
        if blocks.is_empty() {
            return Err(validation(msg::empty_content(i)));
        }
        for (j, b) in blocks.iter().enumerate() {
            if let Some(Value::String(t)) = b.get("text")
                && is_blank(t)
            {
                return Err(validation(msg::blank_text(i, j)));
            }
        }
    }
    Ok(())
}

fn tool_ids<'a>(m: Option<&'a Value>, block: &str, key: &str) -> Vec<&'a str> {
    m.map_or(&[][..], content_of)
        .iter()
        .filter_map(|b| b.get(block)?.get(key)?.as_str())
        .collect()
}

fn check_tool_pairing(messages: &[Value]) -> Checked {
    for (i, m) in messages.iter().enumerate() {
        let previous = i.checked_sub(1).and_then(|p| messages.get(p));
        let results = tool_ids(Some(m), "toolResult", "toolUseId");
        if results.len() > tool_ids(previous, "toolUse", "toolUseId").len() {
            return Err(validation(msg::extra_tool_results(i)));
        }
        let uses = tool_ids(Some(m), "toolUse", "toolUseId");
        let next = tool_ids(messages.get(i + 1), "toolResult", "toolUseId");
        let missing: Vec<&str> = uses.into_iter().filter(|u| !next.contains(u)).collect();
        if !missing.is_empty() {
            return Err(validation(msg::missing_tool_results(
                i + 1,
                &missing.join(", "),
            )));
        }
    }
    Ok(())
}

fn check_image(image: &ImageRef) -> Checked {
    let Some(data) = image.bytes else {
        return Ok(());
    };
    let bytes = b64::decode(Flavor::Bedrock, data).ok_or_else(serialization)?;
    let at = |m: String| model_error(format!("{}: {m}", image.model_path));
    if data.len() > MAX_IMAGE_B64_LEN {
        return Err(at(msg::image_too_big(data.len(), MAX_IMAGE_B64_LEN)));
    }
    let info = image::inspect(&bytes)
        .filter(|i| i.kind != ImageKind::Heif)
        .ok_or_else(|| model_error(msg::UNDECODABLE))?;
    let declared = format!("image/{}", image.format);
    if info.kind.media_type() != declared {
        return Err(at(msg::mismatch(&declared, info.kind.media_type())));
    }
    match info.size {
        Some((w, h)) if w > 0 && h > 0 && w.max(h) <= MAX_DIMENSION => Ok(()),
        Some((w, h)) if w > 0 && h > 0 => Err(at(msg::too_wide(MAX_DIMENSION))),
        _ => Err(model_error(msg::UNDECODABLE)),
    }
}

pub(crate) fn tool_result_request(blocks: &[AgentBlock]) -> Value {
    let content: Vec<Value> = blocks
        .iter()
        .map(|b| match b {
            AgentBlock::Text(t) => json!({"text": t}),
            AgentBlock::Image { data, mime } => {
                // `image/png` → `png`; anything else is carried as is and judged by the enum.
                let mime = text_of(mime);
                let format = mime.strip_prefix("image/").unwrap_or(&mime);
                json!({"image": {"format": format, "source": {"bytes": data}}})
            }
            AgentBlock::Other(v) => (*v).clone(),
        })
        .collect();
    json!({"messages": [
        {"role": "user", "content": [{"text": "Use the tool."}]},
        {"role": "assistant", "content": [{"toolUse": {"toolUseId": "tooluse_mock1", "name": "tool", "input": {}}}]},
        {"role": "user", "content": [{"toolResult": {"toolUseId": "tooluse_mock1", "content": content, "status": "success"}}]}
    ]})
}

/// Converse answer: JSON, or (for `/converse-stream`) binary AWS event-stream frames (docs/research/providers.md §5.4).
pub(crate) fn reply(turn: &Turn, stream: bool) -> Reply {
    let usage = json!({"inputTokens": 25, "outputTokens": 15, "totalTokens": 40});
    let metrics = json!({"latencyMs": 1});
    let (block, stop_reason) = match turn {
        Turn::Text { .. } => (json!({"text": Piece::MARK}), "end_turn"),
        Turn::ToolCall {
            id,
            name,
            arguments,
        } => {
            let id = id
                .clone()
                .unwrap_or_else(|| format!("tooluse_{}", ids::short()));
            (
                json!({"toolUse": {"toolUseId": id, "name": name, "input": arguments}}),
                "tool_use",
            )
        }
    };
    if !stream {
        let answer = json!({"output": {"message": {"role": "assistant", "content": [block]}},
            "stopReason": stop_reason, "usage": usage, "metrics": metrics});
        return Reply::json(splice(&answer, &turn.whole_text()));
    }
    let mut out = Vec::new();
    let mut frame =
        |event: &str, payload: String| out.extend(event_frame(event, payload.as_bytes()));
    frame("messageStart", json!({"role": "assistant"}).to_string());
    match turn {
        Turn::Text { .. } => {
            for piece in turn.pieces() {
                let delta = json!({"contentBlockIndex": 0, "delta": {"text": Piece::MARK}});
                frame("contentBlockDelta", splice(&delta, &piece));
            }
        }
        Turn::ToolCall { arguments, .. } => {
            let mut start = block.get("toolUse").cloned().unwrap_or_default();
            if let Some(start) = start.as_object_mut() {
                start.remove("input");
            }
            frame(
                "contentBlockStart",
                json!({"contentBlockIndex": 0, "start": {"toolUse": start}}).to_string(),
            );
            for part in split_json(arguments) {
                frame(
                    "contentBlockDelta",
                    json!({"contentBlockIndex": 0, "delta": {"toolUse": {"input": part}}})
                        .to_string(),
                );
            }
        }
    }
    frame(
        "contentBlockStop",
        json!({"contentBlockIndex": 0}).to_string(),
    );
    frame(
        "messageStop",
        json!({"stopReason": stop_reason}).to_string(),
    );
    frame(
        "metadata",
        json!({"usage": usage, "metrics": metrics}).to_string(),
    );
    Reply::event_stream(out)
}

/// One AWS event-stream message: prelude (total length, headers length, CRC32), headers, payload, CRC32.
pub fn event_frame(event_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut headers = Vec::new();
    for (name, value) in [
        (":event-type", event_type),
        (":content-type", "application/json"),
        (":message-type", "event"),
    ] {
        headers.push(name.len() as u8);
        headers.extend_from_slice(name.as_bytes());
        headers.push(7); // string
        headers.extend_from_slice(&(value.len() as u16).to_be_bytes());
        headers.extend_from_slice(value.as_bytes());
    }
    let total = 12 + headers.len() + payload.len() + 4;
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(&(total as u32).to_be_bytes());
    out.extend_from_slice(&(headers.len() as u32).to_be_bytes());
    out.extend_from_slice(&crc32(&out).to_be_bytes());
    out.extend_from_slice(&headers);
    out.extend_from_slice(payload);
    out.extend_from_slice(&crc32(&out).to_be_bytes());
    out
}

/// CRC-32 (IEEE 802.3, reflected), as the event-stream framing requires.
pub fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_matches_the_standard_check_value() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    }

    #[test]
    fn event_frames_carry_consistent_lengths_and_checksums() {
        let f = event_frame("messageStop", br#"{"stopReason":"end_turn"}"#);
        let total = u32::from_be_bytes(f[0..4].try_into().unwrap()) as usize;
        assert_eq!(total, f.len());
        assert_eq!(
            u32::from_be_bytes(f[8..12].try_into().unwrap()),
            crc32(&f[..8])
        );
        assert_eq!(
            u32::from_be_bytes(f[total - 4..].try_into().unwrap()),
            crc32(&f[..total - 4])
        );
    }
}
