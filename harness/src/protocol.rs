//! SUT protocol v1 (`docs/spec/sut-protocol.md`): JSON Lines over stdio between normfuzz and a
//! system under test. A published contract: these types are its exact wire form.

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub mod coverage;
pub mod json;

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
    /// The coverage extension's offer (`coverage::Reached::offered` reads it), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coverage: Option<Value>,
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

/// Appends one request line, `\n` included. Every request normfuzz sends is written here: the
/// input may be nested to any depth, and every control character, U+2028 and U+2029 is a
/// `\uXXXX` escape, so the line is one line to every line reader (see [`json::write_str`]).
pub fn write_request(out: &mut Vec<u8>, id: u64, op: Op, input: &Value) {
    out.extend_from_slice(b"{\"id\":");
    out.extend_from_slice(id.to_string().as_bytes());
    out.extend_from_slice(b",\"op\":\"");
    out.extend_from_slice(op.as_str().as_bytes());
    out.extend_from_slice(b"\",\"input\":");
    json::write_value(out, input);
    out.extend_from_slice(b"}\n");
}

/// Reads one request line, its input nested to any depth. The input may be too deep for
/// `Value`'s recursive `Drop`: drop it with [`json::drop_value`].
pub fn parse_request(line: &[u8]) -> Result<Request, serde_json::Error> {
    match serde_json::from_slice::<Request>(line) {
        Err(e) if json::is_recursion_limit(&e) => {}
        shallow => return shallow,
    }
    let mut fields = match json::parse_value(line)? {
        Value::Object(fields) => fields,
        other => {
            json::drop_value(other);
            return Err(serde::de::Error::custom("a request must be a JSON object"));
        }
    };
    let input = fields.remove("input");
    // Everything but the input is checked by the derived code, on a shallow copy.
    let head: serde_json::Map<String, Value> = ["id", "op"]
        .into_iter()
        .filter_map(|k| fields.remove(k).map(|v| (k.to_string(), v)))
        .chain([("input".to_string(), Value::Null)])
        .collect();
    json::drop_value(Value::Object(fields));
    let head = Value::Object(head);
    let checked = Request::deserialize(&head);
    json::drop_value(head);
    match (checked, input) {
        (Ok(request), Some(input)) => Ok(Request { input, ..request }),
        (Err(e), input) => {
            if let Some(input) = input {
                json::drop_value(input);
            }
            Err(e)
        }
        (Ok(_), None) => Err(serde::de::Error::missing_field("input")),
    }
}

/// A SUT's answer to one request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    /// `{"id", "output"}`.
    Output(Value),
    /// `{"id", "error"}`: the SUT refused the input; counted and compared, not a crash.
    Refused(String),
    /// No usable answer: the case is a robustness finding and the SUT is restarted.
    Fault(Fault),
}

impl Answer {
    /// No answer came in time.
    pub fn is_hang(&self) -> bool {
        matches!(self, Answer::Fault(Fault::Hang { .. }))
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Fault {
    /// No answer within `timeout_ms`: the full per-request time-out, or a calibrated one below
    /// it (`full_ms`, the full one).
    Hang {
        timeout_ms: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        full_ms: Option<u64>,
    },
    /// The process exited.
    Crash { status: String, stderr: String },
    /// A line that is not JSON, or carries the wrong id or neither `output` nor `error`.
    Protocol { line: String, problem: String },
}

/// Nesting an answer may have: the harness sends inputs at most 128 deep (serde_json's limit
/// for what it generates and reads back), an answer wraps its input in a few levels at most, and
/// the judges walk answers recursively.
pub const MAX_ANSWER_DEPTH: usize = 256;

/// How much of a faulty answer line a protocol fault keeps.
pub const FAULT_LINE_KEEP: usize = 2048;

/// Reads one answer line, as bytes, for request `id`: a line that is not UTF-8 is a protocol
/// fault (the protocol is UTF-8 JSON), never decoded lossily into an answer. Also answers the
/// line's `coverage` (the coverage extension), if any.
pub fn parse_answer_line(line: &[u8], id: u64) -> (Answer, Option<Value>) {
    match std::str::from_utf8(line) {
        Ok(line) => parse_answer(line, id),
        Err(e) => {
            let shown = String::from_utf8_lossy(line);
            let fault = Answer::Fault(Fault::Protocol {
                line: format!(
                    "(invalid byte at offset {}) {}",
                    e.valid_up_to(),
                    crate::excerpt::bounded(&shown, FAULT_LINE_KEEP)
                ),
                problem: "not valid UTF-8".to_string(),
            });
            (fault, None)
        }
    }
}

/// Reads one answer line for request `id`, and its `coverage` (the coverage extension), if any.
pub fn parse_answer(line: &str, id: u64) -> (Answer, Option<Value>) {
    let protocol = |problem: &str| {
        let shown = crate::excerpt::bounded(line, FAULT_LINE_KEEP).into_owned();
        let fault = Answer::Fault(Fault::Protocol {
            line: shown,
            problem: problem.to_string(),
        });
        (fault, None)
    };
    let mut obj = match json::parse_value(line.as_bytes()) {
        Ok(value) if json::depth_exceeds(&value, MAX_ANSWER_DEPTH) => {
            json::drop_value(value);
            return protocol(&format!("nested deeper than {MAX_ANSWER_DEPTH} levels"));
        }
        Ok(Value::Object(obj)) => obj,
        Ok(other) => {
            json::drop_value(other);
            return protocol("not a JSON object");
        }
        Err(_) => return protocol("not a JSON object"),
    };
    // The problem names the kind of mismatch, never the ids themselves: it is the finding's
    // kind, and one SUT bug must stay one finding (the line shows the id it carried).
    match obj.get("id").and_then(Value::as_u64) {
        Some(got) if got == id => {}
        Some(got) if got < id => {
            return protocol("wrong id: an earlier request's (answered twice, or late)");
        }
        Some(_) => return protocol("wrong id: a later request's (answers out of order)"),
        None => return protocol("wrong id: missing or not a u64"),
    }
    let coverage = obj.remove("coverage");
    match (obj.remove("output"), obj.remove("error")) {
        (Some(output), None) => (Answer::Output(output), coverage),
        (None, Some(Value::String(message))) => (Answer::Refused(message), coverage),
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
            parse_answer(r#"{"id":3,"output":{"a":1}}"#, 3).0,
            Answer::Output(serde_json::json!({"a":1}))
        );
        assert_eq!(
            parse_answer(r#"{"id":3,"error":"no"}"#, 3).0,
            Answer::Refused("no".into())
        );
        for (line, problem) in [
            ("garbage", "not a JSON object"),
            (
                r#"{"id":4,"output":1}"#,
                "wrong id: a later request's (answers out of order)",
            ),
            (
                r#"{"id":2,"output":1}"#,
                "wrong id: an earlier request's (answered twice, or late)",
            ),
            (r#"{"id":"3","output":1}"#, "wrong id: missing or not a u64"),
            ("[1]", "not a JSON object"),
            (r#"{"id":3}"#, "neither `output` nor `error`"),
            (
                r#"{"id":3,"output":1,"error":"x"}"#,
                "both `output` and `error`",
            ),
            (r#"{"id":3,"error":5}"#, "`error` is not a string"),
        ] {
            match parse_answer(line, 3).0 {
                Answer::Fault(Fault::Protocol { problem: p, .. }) => {
                    assert_eq!(p, problem, "{line}")
                }
                other => panic!("{line}: {other:?}"),
            }
        }
    }

    #[test]
    fn answers_as_bytes_must_be_utf8_and_not_too_deep() {
        assert_eq!(
            parse_answer_line(br#"{"id":1,"output":{"text":"\u00e9"}}"#, 1).0,
            Answer::Output(serde_json::json!({"text": "\u{e9}"}))
        );
        match parse_answer_line(b"{\"id\":1,\"output\":{\"text\":\"\xff\"}}", 1).0 {
            Answer::Fault(Fault::Protocol { problem, line }) => {
                assert_eq!(problem, "not valid UTF-8");
                assert!(
                    line.contains("offset 26") && line.contains('\u{FFFD}'),
                    "{line}"
                );
            }
            other => panic!("{other:?}"),
        }
        let deep = json::deep_text(MAX_ANSWER_DEPTH, false);
        let line = format!(r#"{{"id":1,"output":{deep}}}"#);
        match parse_answer(&line, 1).0 {
            Answer::Fault(Fault::Protocol { problem, .. }) => {
                assert_eq!(problem, "nested deeper than 256 levels")
            }
            other => panic!("{other:?}"),
        }
        let deep = json::deep_text(MAX_ANSWER_DEPTH - 2, true);
        let line = format!(r#"{{"id":1,"output":{deep}}}"#);
        assert!(matches!(parse_answer(&line, 1).0, Answer::Output(_)));
    }

    /// The coverage extension rides beside the answer, on an output and on a refusal alike.
    #[test]
    fn answers_carry_their_coverage_apart() {
        let (answer, coverage) = parse_answer(r#"{"id":1,"output":{},"coverage":{"0":{}}}"#, 1);
        assert_eq!(answer, Answer::Output(serde_json::json!({})));
        assert_eq!(coverage, Some(serde_json::json!({"0": {}})));
        let (answer, coverage) = parse_answer(r#"{"id":1,"error":"e","coverage":{}}"#, 1);
        assert_eq!(answer, Answer::Refused("e".into()));
        assert!(coverage.is_some());
        assert!(parse_answer(r#"{"id":1,"output":1}"#, 1).1.is_none());
    }

    /// Every control character (C0, DEL, C1, so U+0085), U+2028 and U+2029, in a value and in a
    /// key: written as a `\uXXXX` escape, the request is one line and reads back the same.
    #[test]
    fn requests_escape_every_line_breaker_and_round_trip() {
        let chars = (0u32..0x20)
            .chain([0x7F])
            .chain(0x80..0xA0)
            .chain([0x2028, 0x2029])
            .filter_map(char::from_u32);
        for (n, c) in chars.enumerate() {
            let input = serde_json::json!({
                "text": format!("a{c}b{c}"),
                format!("key{c}"): [c.to_string(), {"x": format!("{c}")}],
            });
            let mut line = Vec::new();
            write_request(&mut line, n as u64, Op::NeutralizeText, &input);
            let text = std::str::from_utf8(&line).expect("UTF-8");
            let body = text.strip_suffix('\n').expect("ends with one newline");
            assert!(
                !body.contains(|ch: char| ch.is_control() || ch == '\u{2028}' || ch == '\u{2029}'),
                "U+{:04X} left raw: {body:?}",
                c as u32
            );
            let escape = format!("\\u{:04x}", c as u32);
            assert_eq!(
                body.matches(&escape).count(),
                5,
                "U+{:04X}: {body}",
                c as u32
            );
            // One line to Node's readline (\r, U+2028, U+2029), Python's splitlines and Rust.
            assert_eq!(body.lines().count(), 1);
            assert!(!body.contains([
                '\r', '\u{85}', '\u{1c}', '\u{1d}', '\u{1e}', '\u{0b}', '\u{0c}'
            ]));
            let back = parse_request(&line).expect("reads back");
            assert_eq!(
                (back.id, back.op, &back.input),
                (n as u64, Op::NeutralizeText, &input)
            );
            let serde_view: Request = serde_json::from_slice(&line).expect("serde_json reads it");
            assert_eq!(serde_view.input, input);
        }
    }

    #[test]
    fn deep_requests_round_trip_and_bad_ones_are_errors() {
        for object in [false, true] {
            let deep = json::deep_text(1_000_000, object);
            let line =
                format!(r#"{{"extra":{deep},"op":"coerce_tool_result","input":{deep},"id":7}}"#);
            let request = parse_request(line.as_bytes()).expect("deep request");
            assert_eq!((request.id, request.op), (7, Op::CoerceToolResult));
            let mut again = Vec::new();
            write_request(&mut again, 7, Op::CoerceToolResult, &request.input);
            assert_eq!(
                again,
                format!(r#"{{"id":7,"op":"coerce_tool_result","input":{deep}}}"#)
                    .into_bytes()
                    .into_iter()
                    .chain([b'\n'])
                    .collect::<Vec<u8>>()
            );
            json::drop_value(request.input);
        }
        let deep = json::deep_text(1_000, false);
        for (line, error) in [
            (
                format!(r#"{{"id":1,"op":"coerce_tool_result","x":{deep}}}"#),
                "missing field `input`",
            ),
            (
                format!(r#"{{"id":{deep},"op":"coerce_tool_result","input":1}}"#),
                "invalid type",
            ),
            (
                format!(r#"{{"id":1,"op":"dance","input":{deep}}}"#),
                "unknown variant `dance`",
            ),
            (format!(r#"[{deep}]"#), "invalid type"),
            (
                format!(r#"{{"id":1,"op":"coerce_tool_result","input":{deep}"#),
                "EOF",
            ),
        ] {
            let e = parse_request(line.as_bytes()).expect_err(error).to_string();
            assert!(e.contains(error), "{e}");
        }
        let shallow = parse_request(br#"{"id":2,"op":"neutralize_text","input":{"text":"x"}}"#);
        assert_eq!(
            shallow.expect("shallow").input,
            serde_json::json!({"text": "x"})
        );
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
