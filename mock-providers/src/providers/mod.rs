//! One module per provider API: its validator, its error catalogue (as data, in one place), the minimal
//! valid request the harness wraps tool results in, and its scripted answers. The two OpenAI APIs share
//! what they have in common through `openai_common`.

pub(crate) mod anthropic;
pub(crate) mod bedrock;
pub(crate) mod gemini;
pub(crate) mod ollama;
pub(crate) mod openai_chat;
mod openai_common;
pub(crate) mod openai_responses;

use crate::script::Failure;
use crate::verdict::{Checked, Provider, Rejection};
use serde_json::Value;
use std::time::{SystemTime, UNIX_EPOCH};

/// `provider`'s own answer to a scripted failure of a request for `model` (status, envelope,
/// retry headers): each API's catalogue is in its module's `failure`.
pub(crate) fn failure(provider: Provider, f: &Failure, model: &str) -> Rejection {
    let mut rejection = match provider {
        Provider::Anthropic => anthropic::failure(f),
        Provider::OpenAiChat => openai_chat::failure(f, model),
        Provider::OpenAiResponses => openai_responses::failure(f, model),
        Provider::Gemini => gemini::failure(f),
        Provider::Bedrock => bedrock::failure(f),
        Provider::Ollama => ollama::failure(f),
    };
    if let Some(message) = &f.message {
        replace_message(&mut rejection.body, message);
    }
    rejection
}

/// Puts `message` where the envelope keeps its error message: the first `message` string,
/// depth first (Anthropic, OpenAI, Gemini, Bedrock), else Ollama's `error` string.
fn replace_message(body: &mut Value, message: &str) -> bool {
    match body {
        Value::Array(items) => items.iter_mut().any(|v| replace_message(v, message)),
        Value::Object(map) => {
            for key in ["message", "error"] {
                if let Some(Value::String(s)) = map.get_mut(key) {
                    *s = message.to_string();
                    return true;
                }
            }
            map.values_mut().any(|v| replace_message(v, message))
        }
        _ => false,
    }
}

/// Now plus `secs`, as RFC 3339 in UTC (`2026-11-26T14:12:44Z`): Anthropic's rate-limit resets.
pub(crate) fn rfc3339_in(secs: u32) -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let t = now + u64::from(secs);
    let (days, rest) = (t / 86_400, t % 86_400);
    // Howard Hinnant's civil_from_days, for days since 1970-01-01 (never negative here).
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// Builds `provider`'s minimal valid request whose tool result carries `blocks`, the agent blocks the
/// harness produces: `[{"type":"text","text":S} | {"type":"image","data":B64,"mimeType":M}, ...]`.
///
/// Each block lands where that provider's runtimes put it. Any other block is carried verbatim (or, where
/// the wire format has no generic slot, as its JSON text) so the provider judges it. OpenAI Chat cannot
/// carry images in a `tool` message (docs/research/providers.md §2.1), so its images go in the next `user` message, as
/// agent runtimes do.
pub fn tool_result_request(provider: Provider, blocks: &Value) -> Vec<u8> {
    // Serializing a `Value` cannot fail.
    serde_json::to_vec(&tool_result_value(provider, blocks)).unwrap_or_default()
}

/// [`crate::validate`] of `provider`'s [`tool_result_request`] carrying `blocks`, judged on the
/// request as built instead of on its bytes parsed back: the same verdict (serializing a `Value`
/// and parsing it again gives the same `Value`; a size limit is checked on the length the bytes
/// would have) for two serializations and a parse less, which the in-process oracle pays per case.
pub(crate) fn check_tool_result(provider: Provider, blocks: &Value) -> Checked {
    let request = tool_result_value(provider, blocks);
    match provider {
        Provider::Anthropic => {
            anthropic::check_size(serialized_len(&request))?;
            anthropic::check(&request)
        }
        Provider::OpenAiChat => openai_chat::check(&request),
        Provider::OpenAiResponses => openai_responses::check(&request),
        Provider::Gemini => {
            gemini::check_size(serialized_len(&request))?;
            gemini::check(&request)
        }
        Provider::Bedrock => bedrock::check(&request),
        Provider::Ollama => ollama::check(&request),
    }
}

/// The length of `value` serialized, without keeping the bytes.
fn serialized_len(value: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing to `Count` cannot fail.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

fn tool_result_value(provider: Provider, blocks: &Value) -> Value {
    let blocks = agent_blocks(blocks);
    match provider {
        Provider::Anthropic => anthropic::tool_result_request(&blocks),
        Provider::OpenAiChat => openai_chat::tool_result_request(&blocks),
        Provider::OpenAiResponses => openai_responses::tool_result_request(&blocks),
        Provider::Gemini => gemini::tool_result_request(&blocks),
        Provider::Bedrock => bedrock::tool_result_request(&blocks),
        Provider::Ollama => ollama::tool_result_request(&blocks),
    }
}

/// One block of a normalized tool result, as the harness produces it.
pub(crate) enum AgentBlock<'a> {
    /// `text` field (Null when absent: the provider judges it).
    Text(&'a Value),
    Image {
        data: &'a Value,
        mime: &'a Value,
    },
    Other(&'a Value),
}

fn agent_blocks(blocks: &Value) -> Vec<AgentBlock<'_>> {
    fn one(b: &Value) -> AgentBlock<'_> {
        let field = |k: &str| b.get(k).unwrap_or(&Value::Null);
        match b.get("type").and_then(Value::as_str) {
            Some("text") => AgentBlock::Text(field("text")),
            Some("image") => AgentBlock::Image {
                data: field("data"),
                mime: field("mimeType"),
            },
            _ => AgentBlock::Other(b),
        }
    }
    match blocks {
        Value::Array(items) => items.iter().map(one).collect(),
        other => vec![AgentBlock::Other(other)],
    }
}

/// A JSON value as text: strings as they are, anything else as compact JSON.
pub(crate) fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Where and why a body is not JSON, for the providers that print it.
pub(crate) struct SyntaxError {
    /// serde_json's reason without its " at line L column C" suffix.
    pub reason: String,
    pub line: usize,
    pub column: usize,
    /// Byte offset of the error in the body (clamped to its length).
    pub offset: usize,
}

pub(crate) fn syntax_error(body: &[u8], e: &serde_json::Error) -> SyntaxError {
    let full = e.to_string();
    let reason = match full.rfind(" at line ") {
        Some(at) => full.get(..at).unwrap_or(&full).to_string(),
        None => full.clone(),
    };
    let line_start = body
        .iter()
        .enumerate()
        .filter(|&(_, &b)| b == b'\n')
        .nth(e.line().saturating_sub(2))
        .map_or(0, |(i, _)| i + 1);
    let line_start = if e.line() <= 1 { 0 } else { line_start };
    let offset = (line_start + e.column().saturating_sub(1)).min(body.len());
    SyntaxError {
        reason,
        line: e.line(),
        column: e.column(),
        offset,
    }
}

/// `s` is non-empty and only Unicode White_Space (what "blank" means for the text rules). [INF]
pub(crate) fn is_blank(s: &str) -> bool {
    s.chars().all(char::is_whitespace)
}

/// The scheme of a URL, lower-cased, when it has one (`https`, `http`, `data`, `gs`, ...).
pub(crate) fn url_scheme(url: &str) -> Option<String> {
    let (scheme, _) = url.split_once(':')?;
    let mut chars = scheme.chars();
    let valid = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    valid.then(|| scheme.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::script::FailureKind;

    #[test]
    fn a_scripted_message_replaces_each_envelopes_own() {
        let mut f = Failure::new(FailureKind::ServerError);
        f.message = Some("boom\nMEDIA:/etc/passwd".into());
        for provider in Provider::ALL {
            let body = failure(provider, &f, "m").body.to_string();
            assert!(body.contains("MEDIA:/etc/passwd"), "{provider:?}: {body}");
        }
    }
}
