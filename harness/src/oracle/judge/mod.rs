//! Per-op judges: one function per protocol op, each judging a SUT's answer from its input and
//! output alone, plus the asymmetric comparison with the reference's answer (`docs/spec/rules.md`,
//! "Verdict classes"): where the SUT is more permissive than the reference on a safety rule it
//! fails the gate under that rule; where it is stricter, or differs in wording, it is a
//! divergence.

mod kept_text;
mod media;
mod retry;
mod text;
mod tool_result;
pub mod violation;

use serde_json::Value;

use crate::excerpt::bounded;
use crate::protocol::{Answer, Fault, Op};
use crate::rule::Rule;

pub use kept_text::{is_insertion, text_survives};
pub use violation::{Violation, gate};

use violation::divergence;

pub use tool_result::{
    content_blocks, is_blank, json_readings, keeps_information, payloads, str_field,
};

/// The rules each op is judged on (besides `B1` faults, `protocol` shapes and divergences,
/// which every op can show). P1 and P3 belong to no protocol op: the reference's unit tests
/// hold them; P4 is judged only end to end (`e2e/checks/fallback.rs`).
pub fn judged_rules(op: Op) -> &'static [Rule] {
    use Rule::*;
    match op {
        Op::CoerceToolResult => &[
            S1, S2, F1, F2, F3, F4, F5, C1, C2, C3, C4, C5, C6, C7, C8, Provider,
        ],
        Op::NeutralizeText => &[S1, F2, D1, B2],
        Op::CheckMediaUrl => &[U1, U2, U3, U4, U5, U6, U7, U8],
        Op::ParseReply => &[S1, S3, D2, D3, U1, U2, U3, U4, U5, U6, U7],
        Op::NormalizeStream => &[S1, S3, D3, B3, U1, U2, U3, U4, U5, U6, U7],
        Op::ResolveRetryImages => &[S4, R1, R2, R3, R4, R5, R6],
        Op::SanitizeToolNames => &[P2],
    }
}

/// Judges one answered case. `reference` is the reference's answer to the same input.
pub fn judge(op: Op, input: &Value, answer: &Answer, reference: &Answer) -> Vec<Violation> {
    let output = match answer {
        Answer::Output(output) => output,
        Answer::Fault(fault) => return vec![fault_violation(fault)],
        // C8 and B1: any JSON value is a tool result to coerce, never an error to the model loop.
        Answer::Refused(message) if op == Op::CoerceToolResult => {
            return vec![gate(
                Rule::C8,
                "answered an error for a tool result",
                bounded(message, 500).into_owned(),
            )];
        }
        Answer::Refused(message) => {
            return match reference {
                Answer::Refused(_) => Vec::new(),
                _ => vec![divergence(
                    "refused an input the reference answers",
                    bounded(message, 500).into_owned(),
                )],
            };
        }
    };
    let expected = match reference {
        Answer::Output(expected) => Some(expected),
        _ => None,
    };
    let mut found = match op {
        Op::CoerceToolResult => tool_result::judge(input, output, expected),
        Op::NeutralizeText => text::judge(input, output, expected),
        Op::CheckMediaUrl => media::check_media_url(input, output, expected),
        Op::ParseReply => media::parse_reply(input, output, expected),
        Op::NormalizeStream => media::normalize_stream(input, output, expected),
        Op::ResolveRetryImages => retry::resolve_retry_images(input, output, expected),
        Op::SanitizeToolNames => retry::sanitize_tool_names(input, output),
    };
    if found.is_empty()
        && let Some(expected) = expected
        && comparable(op, expected) != comparable(op, output)
    {
        found.push(divergence(
            "output differs from the reference",
            format!("reference: {}", bounded(&expected.to_string(), 500)),
        ));
    }
    found
}

/// A second input the SUT must answer the same way as `input` (a metamorphic relation), judged
/// by [`judge_companion`]: for B3, a stream of two or more chunks sent again as one chunk.
pub fn companion(op: Op, input: &Value) -> Option<Value> {
    if op != Op::NormalizeStream {
        return None;
    }
    let chunks = input.get("chunks")?.as_array()?;
    if chunks.len() < 2 {
        return None;
    }
    let joined: String = chunks
        .iter()
        .map(Value::as_str)
        .collect::<Option<String>>()?;
    let mut merged = input.clone();
    merged["chunks"] = Value::Array(vec![Value::String(joined)]);
    Some(merged)
}

/// Judges the SUT's answers to an input and to its [`companion`].
pub fn judge_companion(op: Op, answer: &Answer, companion: &Answer) -> Vec<Violation> {
    match (op, answer, companion) {
        (Op::NormalizeStream, Answer::Output(a), Answer::Output(b)) => {
            media::same_stream(a, b).into_iter().collect()
        }
        _ => Vec::new(),
    }
}

/// The part of an output that must match the reference; `reason` is free text in the protocol.
fn comparable(op: Op, output: &Value) -> Value {
    match op {
        Op::CheckMediaUrl => output.get("allowed").cloned().unwrap_or(Value::Null),
        _ => output.clone(),
    }
}

fn fault_violation(fault: &Fault) -> Violation {
    match fault {
        Fault::Hang {
            timeout_ms,
            full_ms,
        } => gate(
            Rule::B1,
            "no answer in time",
            match full_ms {
                Some(full) => format!(
                    "no answer within {timeout_ms} ms (the calibrated time-out, below the full \
                     {full} ms)"
                ),
                None => format!("no answer within {timeout_ms} ms"),
            },
        ),
        Fault::Crash { status, stderr } => gate(
            Rule::B1,
            "process exited",
            format!("{status}; stderr: {}", crate::excerpt::tail(stderr, 2000)),
        ),
        Fault::Protocol { line, problem } => gate(Rule::Protocol, problem.clone(), line.clone()),
    }
}
