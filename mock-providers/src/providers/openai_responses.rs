//! OpenAI Responses (`POST /v1/responses`, docs/research/providers.md §3). The envelope, the parameter checks and the
//! image rule it shares with Chat Completions are in `openai_common`.

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

/// The Responses error catalogue (docs/research/providers.md §3.2): verbatim where observed, `[INF]` otherwise.
mod msg {
    pub use crate::providers::openai_common::msg::bad_value;

    pub const RESPONSES_ROLES: &str = "'assistant', 'system', 'developer', and 'user'"; // [INF]
    pub const RESPONSES_PARTS: &str = "'input_text', 'input_image', 'output_text', 'refusal', 'input_file', 'computer_screenshot', and 'summary_text'"; // [INF]

    /// [INF] from memory (Responses).
    pub fn no_tool_call(id: &str) -> String {
        format!("No tool call found for function call output with call_id {id}.")
    }
    /// [INF] from memory (Responses).
    pub fn no_tool_output(id: &str) -> String {
        format!("No tool output found for function call {id}.")
    }
}

pub(crate) fn validate(body: &[u8]) -> Checked {
    check(&parse(body)?)
}

/// The checks after parsing: `request` is the parsed body.
pub(crate) fn check(request: &Value) -> Checked {
    let request = request_object(request)?;
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

// ---------------------------------------------------------------- requests and answers

pub(crate) fn tool_result_request(blocks: &[AgentBlock]) -> Value {
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

/// Responses answer: a `response` object, or its named SSE events (docs/research/providers.md §3.3).
/// `cut` (an error envelope) ends a streamed text after its deltas with the `error` event of the
/// Responses stream (`{"type": "error", "code", "message", "param", "sequence_number"}`).
pub(crate) fn reply(turn: &Turn, request: &Value, stream: bool, cut: Option<&Value>) -> Reply {
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
            if let Some(error) = cut {
                let e = &error["error"];
                event(
                    json!({"type": "error", "code": e["code"], "message": e["message"], "param": e["param"]}),
                    None,
                );
                return Reply::sse(out);
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

/// A scripted failure: the envelope both OpenAI APIs share (`openai_common::failure`).
pub(crate) fn failure(f: &Failure, model: &str) -> Rejection {
    openai_common::failure(Api::Responses, f, model)
}
