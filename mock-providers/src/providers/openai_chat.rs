//! OpenAI Chat Completions (`POST /v1/chat/completions`, docs/research/providers.md §2). The envelope, the parameter
//! checks and the image rule it shares with Responses are in `openai_common`.

use super::openai_common::{
    self, Api, ImageRef, call_id, check_images, data_url, invalid_value, missing, now, object,
    parse, reject, request_object, required_str, wrong_type,
};
use super::{AgentBlock, text_of};
use crate::ids;
use crate::script::Failure;
use crate::script::{Piece, Reply, Turn, splice, split_json, sse};
use crate::verdict::{Checked, Rejection};
use serde_json::{Value, json};

/// The Chat Completions error catalogue (docs/research/providers.md §2.4): verbatim where observed, `[INF]` otherwise.
mod msg {
    pub use crate::providers::openai_common::msg::bad_value;

    pub const CHAT_ROLES: &str =
        "'system', 'assistant', 'user', 'function', 'tool', and 'developer'"; // [INF]
    pub const CHAT_PARTS: &str =
        "'text', 'image_url', 'input_audio', 'refusal', 'audio', and 'file'"; // [INF]
    /// [INF] from memory (typo "preceeding" included).
    pub const ORPHAN_TOOL: &str = "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.";

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
    /// [INF] from memory.
    pub fn unanswered_tool_calls(ids: &str) -> String {
        format!(
            "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: {ids}"
        )
    }
    /// As observed (mcp-use/mcp-use#90).
    pub fn name_pattern(param: &str) -> String {
        format!(
            "Invalid '{param}': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'."
        )
    }
    /// [INF] from memory.
    pub fn unknown_tool_call_id(id: &str) -> String {
        format!(
            "Invalid parameter: 'tool_call_id' of '{id}' not found in 'tool_calls' of previous message."
        )
    }
}

pub(crate) fn validate(body: &[u8]) -> Checked {
    check(&parse(body)?)
}

/// The checks after parsing: `request` is the parsed body.
pub(crate) fn check(request: &Value) -> Checked {
    let request = request_object(request)?;
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
    history_tool_names(messages)?;
    check_images(Api::Chat, &images)
}

/// A tool call of an earlier assistant message must name its function as a tool definition
/// may: `^[a-zA-Z0-9_-]+$` (observed: `Invalid 'messages[9].tool_calls[0].function.name':
/// string does not match pattern. ...`, code `invalid_value`, mcp-use/mcp-use#90 and #94). A
/// runtime that replays a name the model made up to a fallback on this API gets this 400.
/// The documented 64-character limit is a tool definition's; a replayed name held to it was
/// not observed, so length is not checked here.
fn history_tool_names(messages: &[Value]) -> Checked {
    for (i, m) in messages.iter().enumerate() {
        let calls = m.get("tool_calls").and_then(Value::as_array);
        for (j, call) in calls.into_iter().flatten().enumerate() {
            let Some(name) = call.pointer("/function/name").and_then(Value::as_str) else {
                continue;
            };
            let valid = !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
            if !valid {
                let param = format!("messages[{i}].tool_calls[{j}].function.name");
                return Err(invalid_value(msg::name_pattern(&param), &param));
            }
        }
    }
    Ok(())
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

// ---------------------------------------------------------------- requests and answers

pub(crate) fn tool_result_request(blocks: &[AgentBlock]) -> Value {
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

/// Chat Completions answer: a `chat.completion`, or `chat.completion.chunk` SSE ending in `[DONE]`.
/// `cut` (an error envelope) ends a streamed text after its deltas with a `data: {"error": ...}`
/// chunk and no `[DONE]`, the mid-stream error the SDKs read (openai-python `Stream.__stream__`,
/// @ai-sdk/openai's chat chunk schema).
pub(crate) fn reply(turn: &Turn, request: &Value, stream: bool, cut: Option<&Value>) -> Reply {
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
            if let Some(error) = cut {
                out.push_str(&sse(None, &error.to_string()));
                return Reply::sse(out);
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

/// A scripted failure: the envelope both OpenAI APIs share (`openai_common::failure`).
pub(crate) fn failure(f: &Failure, model: &str) -> Rejection {
    openai_common::failure(Api::Chat, f, model)
}
