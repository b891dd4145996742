//! The reference normalizer: the executable form of the rules in `docs/spec/rules.md`.
//!
//! `call` answers the SUT protocol's ops, protocol JSON in and out; it is used in process by the
//! differential runner and over stdio by `normfuzz serve-reference`. The submodules are the
//! normalizer's steps: tool-result coercion (`coerce`, `image`, `json_text`), untrusted text
//! (`neutralize`, `stream`, `vision`), final replies and delivery (`reply`, `embed`,
//! `media_policy`, `turn`, `sse`), remote URLs (`url_policy`) and fallback retries (`retry`).

pub mod coerce;
pub mod embed;
pub mod image;
pub mod json_text;
pub mod media_policy;
pub mod neutralize;
pub mod reply;
pub mod retry;
pub mod sse;
pub mod stream;
pub mod turn;
pub mod url_policy;
pub mod vision;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::protocol::Op;

/// Answers one request as the reference does; `Err` is a refusal (`{"error": ...}`).
pub fn call(op: Op, input: &Value) -> Result<Value, String> {
    match op {
        Op::CoerceToolResult => {
            let borrowed = serde_json_borrow::Value::from(input);
            to_json(&crate::reference::coerce::coerce_tool_result(&borrowed))
        }
        Op::NeutralizeText => {
            let text = input
                .get("text")
                .and_then(Value::as_str)
                .ok_or("input.text must be a string")?;
            Ok(json!({ "text": crate::reference::neutralize::neutralize(text) }))
        }
        Op::CheckMediaUrl => {
            let url = input
                .get("url")
                .and_then(Value::as_str)
                .ok_or("input.url must be a string")?;
            let verdict = crate::reference::url_policy::check_media_url(url);
            Ok(json!({ "allowed": verdict.allowed, "reason": verdict.reason.as_str() }))
        }
        Op::ParseReply => to_json(&parse::<crate::reference::reply::ParseReplyInput>(input)?.run()),
        Op::NormalizeStream => to_json(&parse::<crate::reference::turn::NormalizeStreamInput>(input)?.run()),
        Op::ResolveRetryImages => to_json(&parse::<crate::reference::retry::RetryImagesInput>(input)?.run()),
        Op::SanitizeToolNames => {
            to_json(&parse::<crate::reference::retry::SanitizeToolNamesInput>(input)?.run())
        }
    }
}

fn parse<T: DeserializeOwned>(input: &Value) -> Result<T, String> {
    T::deserialize(input).map_err(|e| format!("input does not match the op's schema: {e}"))
}

fn to_json(output: &impl Serialize) -> Result<Value, String> {
    serde_json::to_value(output).map_err(|e| format!("output not serializable: {e}"))
}

/// Serves the reference over the SUT protocol: handshake, then one answer line per request line.
/// Output is flushed whenever no further request is already buffered, so pipelined batches
/// cost one write each.
pub fn serve<R: std::io::Read>(
    mut input: std::io::BufReader<R>,
    mut output: impl std::io::Write,
) -> std::io::Result<()> {
    use std::io::BufRead;
    let ops: Vec<&str> = Op::ALL.iter().map(|op| op.as_str()).collect();
    let handshake =
        json!({ "normfuzz": crate::protocol::VERSION, "name": "normfuzz reference", "ops": ops });
    writeln!(output, "{handshake}")?;
    output.flush()?;
    let mut line = Vec::new();
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            return output.flush();
        }
        let answer = match serde_json::from_slice::<crate::protocol::Request>(&line) {
            Ok(request) => match call(request.op, &request.input) {
                Ok(out) => json!({ "id": request.id, "output": out }),
                Err(message) => json!({ "id": request.id, "error": message }),
            },
            Err(e) => {
                let id = serde_json::from_slice::<Value>(&line)
                    .ok()
                    .and_then(|v| v.get("id").cloned())
                    .unwrap_or(Value::Null);
                json!({ "id": id, "error": format!("bad request: {e}") })
            }
        };
        serde_json::to_writer(&mut output, &answer)?;
        output.write_all(b"\n")?;
        // Never block on input with answers unflushed: the harness may be waiting for them.
        if input.buffer().is_empty() {
            output.flush()?;
        }
    }
}
