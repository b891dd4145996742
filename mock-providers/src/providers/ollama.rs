//! Ollama `POST /api/chat` (docs/research/providers.md §6). The server is Go: the body is decoded by `encoding/json`
//! (first JSON value only; trailing bytes ignored), `images` entries are `[]byte` (base64 via
//! `StdEncoding`). No declared type exists, so bytes are not sniffed (no evidence of a check).

use super::{AgentBlock, syntax_error, text_of};
use crate::b64;
use crate::script::{Failure, FailureKind, Piece, Reply, Turn, splice};
use crate::verdict::{Checked, Rejection};
use serde_json::{Value, json};

/// [INF] model names served by the single-image `mllama` architecture (docs/research/providers.md §6.2).
const SINGLE_IMAGE_MODELS: [&str; 1] = ["llama3.2-vision"];
/// Scripted answers carry a fixed timestamp: nothing reads it, and it keeps answers reproducible.
const CREATED_AT: &str = "2025-01-01T00:00:00.000000000Z";

/// The error catalogue (docs/research/providers.md §6.2): verbatim where observed or read from source, `[INF]` otherwise.
mod msg {
    pub const MISSING_BODY: &str = "missing request body";
    pub const MODEL_REQUIRED: &str = "model is required"; // [INF] from memory
    pub const UNEXPECTED_EOF: &str = "unexpected EOF"; // Go json.Decoder on truncated input
    pub const ONE_IMAGE: &str =
        "this model only supports one image while more than one image requested";

    pub fn illegal_base64(offset: usize) -> String {
        format!("illegal base64 data at input byte {offset}")
    }
    /// [INF] Go's syntax error wording, simplified to its most common context.
    pub fn invalid_character(c: char) -> String {
        format!("invalid character '{c}' looking for beginning of value")
    }
    /// Go's `UnmarshalTypeError` wording. [INF] field paths.
    pub fn cannot_unmarshal(kind: &str, field: &str, go_type: &str) -> String {
        format!("json: cannot unmarshal {kind} into Go {field} of type {go_type}")
    }
}

fn reject(message: impl Into<String>) -> Rejection {
    Rejection {
        status: 400,
        body: json!({"error": message.into()}),
        headers: Vec::new(),
    }
}

/// Scripted failures, `{"error": "..."}` as Ollama's server writes every error
/// (https://github.com/ollama/ollama/blob/main/docs/api.md#errors). Ollama has no rate limit:
/// a full request queue is its 503 `ErrMaxQueue` (server/sched.go), answered to `rate_limit` and
/// `overloaded` alike; no retry header.
pub(crate) fn failure(f: &Failure) -> Rejection {
    let error = |status: u16, message: &str| Rejection {
        status,
        body: json!({"error": message}),
        headers: Vec::new(),
    };
    match f.kind {
        FailureKind::RateLimit | FailureKind::Overloaded => error(
            503,
            "server busy, please try again.  maximum pending requests exceeded",
        ),
        // [INF] the runner crash a 500 usually reports.
        FailureKind::ServerError => {
            error(500, "llama runner process has terminated: exit status 2")
        }
        FailureKind::Image => reject(msg::illegal_base64(0)),
        FailureKind::Format => reject(msg::cannot_unmarshal(
            "number",
            "struct field Message.messages.images",
            "api.ImageData",
        )),
    }
}

fn go_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn type_error(v: &Value, field: &str, go_type: &str) -> Rejection {
    reject(msg::cannot_unmarshal(go_kind(v), field, go_type))
}

pub(crate) fn validate(body: &[u8]) -> Checked {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(reject(msg::MISSING_BODY));
    }
    // Go's decoder reads the first value and ignores what follows it.
    let request = match serde_json::Deserializer::from_slice(body)
        .into_iter::<Value>()
        .next()
    {
        Some(Ok(v)) => v,
        Some(Err(e)) if e.is_eof() => return Err(reject(msg::UNEXPECTED_EOF)),
        Some(Err(e)) => {
            let at = syntax_error(body, &e).offset;
            let c = String::from_utf8_lossy(body.get(at..).unwrap_or_default())
                .chars()
                .next()
                .unwrap_or('?');
            return Err(reject(msg::invalid_character(c)));
        }
        None => return Err(reject(msg::MISSING_BODY)),
    };
    check(&request)
}

/// The checks after parsing: `request` is the body's first JSON value.
pub(crate) fn check(request: &Value) -> Checked {
    let Value::Object(request) = request else {
        return Err(type_error(request, "value", "api.ChatRequest"));
    };
    let model = match request.get("model") {
        None | Some(Value::Null) => "",
        Some(Value::String(m)) => m,
        Some(other) => {
            return Err(type_error(
                other,
                "struct field ChatRequest.model",
                "string",
            ));
        }
    };
    let messages = match request.get("messages") {
        None | Some(Value::Null) => &[][..],
        Some(Value::Array(m)) => m,
        Some(other) => {
            return Err(type_error(
                other,
                "struct field ChatRequest.messages",
                "[]api.Message",
            ));
        }
    };
    let mut images = 0;
    for m in messages {
        let Value::Object(m) = m else {
            return Err(type_error(
                m,
                "struct field ChatRequest.messages",
                "api.Message",
            ));
        };
        let list = match m.get("images") {
            None | Some(Value::Null) => &[][..],
            Some(Value::Array(list)) => list,
            Some(other) => {
                return Err(type_error(
                    other,
                    "struct field Message.messages.images",
                    "[]api.ImageData",
                ));
            }
        };
        for image in list {
            match image {
                Value::Null => {}
                Value::String(s) => {
                    if let Some(offset) = b64::go_corrupt_offset(s.as_bytes()) {
                        return Err(reject(msg::illegal_base64(offset)));
                    }
                }
                other => {
                    return Err(type_error(
                        other,
                        "struct field Message.messages.images",
                        "api.ImageData",
                    ));
                }
            }
            images += 1;
        }
    }
    // Type errors come from decoding, which happens before the handler looks at the model.
    if model.is_empty() {
        return Err(reject(msg::MODEL_REQUIRED));
    }
    if images > 1 && SINGLE_IMAGE_MODELS.iter().any(|m| model.starts_with(m)) {
        return Err(reject(msg::ONE_IMAGE));
    }
    Ok(())
}

pub(crate) fn tool_result_request(blocks: &[AgentBlock]) -> Value {
    let mut texts = Vec::new();
    let mut images = Vec::new();
    for b in blocks {
        match b {
            AgentBlock::Text(t) => texts.push(text_of(t)),
            AgentBlock::Image { data, .. } => images.push((*data).clone()),
            AgentBlock::Other(v) => texts.push(v.to_string()),
        }
    }
    let mut tool = json!({"role": "tool", "tool_name": "tool", "content": texts.join("\n")});
    if !images.is_empty() {
        tool["images"] = Value::Array(images);
    }
    json!({"model": "llava", "stream": false, "messages": [
        {"role": "user", "content": "Use the tool."},
        {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "tool", "arguments": {}}}]},
        tool
    ]})
}

/// Chat answer: one object, or NDJSON lines ending with `"done": true`. Streaming is the default.
pub(crate) fn reply(turn: &Turn, request: &Value) -> Reply {
    let model = text_of(request.get("model").unwrap_or(&Value::Null));
    let stream = request.get("stream") != Some(&Value::Bool(false));
    let message = match turn {
        Turn::Text { .. } => json!({"role": "assistant", "content": Piece::MARK}),
        Turn::ToolCall {
            id,
            name,
            arguments,
        } => {
            let mut call = json!({"function": {"name": name, "arguments": arguments}});
            if let Some(id) = id {
                call["id"] = json!(id);
            }
            json!({"role": "assistant", "content": "", "tool_calls": [call]})
        }
    };
    let done = |message: Value| {
        json!({"model": model, "created_at": CREATED_AT, "message": message, "done": true, "done_reason": "stop",
            "total_duration": 1, "load_duration": 1, "prompt_eval_count": 25, "prompt_eval_duration": 1,
            "eval_count": 15, "eval_duration": 1})
    };
    if !stream {
        return Reply::json(splice(&done(message), &turn.whole_text()));
    }
    let chunk = |message: &Value| json!({"model": model, "created_at": CREATED_AT, "message": message, "done": false});
    let mut out = String::new();
    match turn {
        Turn::Text { .. } => {
            for piece in turn.pieces() {
                out.push_str(&splice(&chunk(&message), &piece));
                out.push('\n');
            }
        }
        Turn::ToolCall { .. } => {
            out.push_str(&chunk(&message).to_string());
            out.push('\n');
        }
    }
    out.push_str(&done(json!({"role": "assistant", "content": ""})).to_string());
    out.push('\n');
    Reply::ndjson(out)
}
