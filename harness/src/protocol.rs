//! SUT protocol v1 (`shared/spec/sut-protocol.md`): JSON Lines over stdio between normfuzz and a
//! system under test. A published contract: these types are its exact wire form.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Protocol version written in the handshake's `normfuzz` field.
pub const VERSION: u64 = 1;

/// The operations a SUT may expose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    CoerceToolResult,
    NeutralizeText,
    CheckMediaUrl,
    ParseReply,
    NormalizeStream,
    ResolveRetryImages,
    SanitizeToolNames,
}

impl Op {
    pub const ALL: [Op; 7] = [
        Op::CoerceToolResult,
        Op::NeutralizeText,
        Op::CheckMediaUrl,
        Op::ParseReply,
        Op::NormalizeStream,
        Op::ResolveRetryImages,
        Op::SanitizeToolNames,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Op::CoerceToolResult => "coerce_tool_result",
            Op::NeutralizeText => "neutralize_text",
            Op::CheckMediaUrl => "check_media_url",
            Op::ParseReply => "parse_reply",
            Op::NormalizeStream => "normalize_stream",
            Op::ResolveRetryImages => "resolve_retry_images",
            Op::SanitizeToolNames => "sanitize_tool_names",
        }
    }

    pub fn parse(name: &str) -> Option<Op> {
        Op::ALL.into_iter().find(|op| op.as_str() == name)
    }
}

impl std::fmt::Display for Op {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The first line a SUT writes. Unknown op names are ignored (a newer SUT may offer more).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Handshake {
    pub normfuzz: u64,
    #[serde(default)]
    pub name: String,
    pub ops: Vec<String>,
}

impl Handshake {
    pub fn known_ops(&self) -> Vec<Op> {
        let mut ops: Vec<Op> = self.ops.iter().filter_map(|name| Op::parse(name)).collect();
        ops.sort();
        ops.dedup();
        ops
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Request {
    pub id: u64,
    pub op: Op,
    pub input: Value,
}

/// A SUT's answer to one request.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    /// `{"id", "output"}`.
    Output(Value),
    /// `{"id", "error"}`: the SUT refused the input; counted and compared, not a crash.
    Refused(String),
    /// No usable answer: the case is a robustness finding and the SUT is restarted.
    Fault(Fault),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Fault {
    /// No answer within the per-request timeout.
    Hang { timeout_ms: u64 },
    /// The process exited.
    Crash { status: String, stderr: String },
    /// A line that is not JSON, or carries the wrong id or neither `output` nor `error`.
    Protocol { line: String, problem: String },
}

/// Reads one answer line for request `id`.
pub fn parse_answer(line: &str, id: u64) -> Answer {
    let protocol = |problem: &str| {
        let shown = crate::excerpt::bounded(line, 2048).into_owned();
        Answer::Fault(Fault::Protocol {
            line: shown,
            problem: problem.to_string(),
        })
    };
    let Ok(Value::Object(mut obj)) = serde_json::from_str::<Value>(line) else {
        return protocol("not a JSON object");
    };
    if obj.get("id").and_then(Value::as_u64) != Some(id) {
        return protocol(&format!("expected id {id}"));
    }
    match (obj.remove("output"), obj.remove("error")) {
        (Some(output), None) => Answer::Output(output),
        (None, Some(Value::String(message))) => Answer::Refused(message),
        (None, Some(_)) => protocol("`error` is not a string"),
        (Some(_), Some(_)) => protocol("both `output` and `error`"),
        (None, None) => protocol("neither `output` nor `error`"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers() {
        assert_eq!(
            parse_answer(r#"{"id":3,"output":{"a":1}}"#, 3),
            Answer::Output(serde_json::json!({"a":1}))
        );
        assert_eq!(
            parse_answer(r#"{"id":3,"error":"no"}"#, 3),
            Answer::Refused("no".into())
        );
        for (line, problem) in [
            ("garbage", "not a JSON object"),
            (r#"{"id":4,"output":1}"#, "expected id 3"),
            (r#"{"id":3}"#, "neither `output` nor `error`"),
            (
                r#"{"id":3,"output":1,"error":"x"}"#,
                "both `output` and `error`",
            ),
            (r#"{"id":3,"error":5}"#, "`error` is not a string"),
        ] {
            match parse_answer(line, 3) {
                Answer::Fault(Fault::Protocol { problem: p, .. }) => {
                    assert_eq!(p, problem, "{line}")
                }
                other => panic!("{line}: {other:?}"),
            }
        }
    }

    #[test]
    fn op_names_round_trip() {
        for op in Op::ALL {
            assert_eq!(Op::parse(op.as_str()), Some(op));
            assert_eq!(
                serde_json::to_value(op).unwrap(),
                serde_json::json!(op.as_str())
            );
        }
    }
}
