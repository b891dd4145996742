//! Anthropic's scripted answers to accepted requests: a message, or the SSE event flow of docs/research/providers.md §1.10.

use crate::ids;
use crate::providers::text_of;
use crate::script::{Piece, Reply, Turn, splice, split_json, sse};
use serde_json::{Value, json};

/// The scripted answer to an accepted request, as a message or as the SSE event flow of docs/research/providers.md §1.10.
/// `cut` (an error body) ends a streamed text after its deltas with the `error` event
/// (https://docs.claude.com/en/docs/build-with-claude/streaming#error-events): no block stop,
/// no `message_stop`.
pub(crate) fn reply(turn: &Turn, request: &Value, stream: bool, cut: Option<&Value>) -> Reply {
    let model = text_of(request.get("model").unwrap_or(&Value::Null));
    let id = format!("msg_01{}", ids::short());
    let usage = json!({"input_tokens": 25, "output_tokens": 15});
    let (block, stop_reason) = match turn {
        Turn::Text { .. } => (json!({"type": "text", "text": Piece::MARK}), "end_turn"),
        Turn::ToolCall {
            id,
            name,
            arguments,
        } => {
            let call_id = id
                .clone()
                .unwrap_or_else(|| format!("toolu_01{}", ids::short()));
            (
                json!({"type": "tool_use", "id": call_id, "name": name, "input": arguments}),
                "tool_use",
            )
        }
    };
    if !stream {
        let message = json!({
            "id": id, "type": "message", "role": "assistant", "model": model, "content": [block],
            "stop_reason": stop_reason, "stop_sequence": null, "usage": usage
        });
        return Reply::json(splice(&message, &turn.whole_text()));
    }
    let mut out = String::new();
    let mut event = |name: &str, data: &Value, piece: Option<&Piece>| {
        let data = piece.map_or_else(|| data.to_string(), |p| splice(data, p));
        out.push_str(&sse(Some(name), &data));
    };
    event(
        "message_start",
        &json!({"type": "message_start", "message": {
        "id": id, "type": "message", "role": "assistant", "content": [], "model": model,
        "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 25, "output_tokens": 1}}}),
        None,
    );
    match turn {
        Turn::Text { .. } => {
            event(
                "content_block_start",
                &json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
                None,
            );
            event("ping", &json!({"type": "ping"}), None);
            for piece in turn.pieces() {
                let delta = json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": Piece::MARK}});
                event("content_block_delta", &delta, Some(&piece));
            }
            if let Some(error) = cut {
                event("error", error, None);
                return Reply::sse(out);
            }
        }
        Turn::ToolCall { arguments, .. } => {
            let mut start = block.clone();
            start["input"] = json!({});
            event(
                "content_block_start",
                &json!({"type": "content_block_start", "index": 0, "content_block": start}),
                None,
            );
            for part in split_json(arguments) {
                let delta = json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": part}});
                event("content_block_delta", &delta, None);
            }
        }
    }
    event(
        "content_block_stop",
        &json!({"type": "content_block_stop", "index": 0}),
        None,
    );
    event(
        "message_delta",
        &json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null}, "usage": {"output_tokens": 15}}),
        None,
    );
    event("message_stop", &json!({"type": "message_stop"}), None);
    Reply::sse(out)
}
