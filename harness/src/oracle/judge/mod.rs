//! Per-op judges: one function per protocol op, each judging a SUT's answer from its input and
//! output alone, plus the asymmetric comparison with the reference's answer (`docs/spec/rules.md`,
//! "Verdict classes"): where the SUT is more permissive than the reference on a safety rule it
//! fails the gate under that rule; where it is stricter, or differs in wording, it is a
//! divergence.

mod media;
mod retry;
mod text;
mod tool_result;

use serde::Serialize;
use serde_json::Value;

use crate::excerpt::bounded;
use crate::oracle::directive::{lines, may_be_directive};
use crate::protocol::{Answer, Fault, Op};
use crate::rule::Rule;

pub use tool_result::{
    content_blocks, is_blank, json_readings, keeps_information, payloads, str_field,
};

/// One broken rule on one case.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Violation {
    pub rule: Rule,
    /// Gate failure (true) or divergence (false).
    pub gate: bool,
    /// Stable, data-free description: part of the deduplication signature.
    pub kind: String,
    /// What exactly was seen, for the report.
    pub detail: String,
}

/// A gate failure under `rule`.
pub fn gate(rule: Rule, kind: impl Into<String>, detail: impl Into<String>) -> Violation {
    Violation {
        rule,
        gate: true,
        kind: kind.into(),
        detail: detail.into(),
    }
}

fn divergence(kind: impl Into<String>, detail: impl Into<String>) -> Violation {
    Violation {
        rule: Rule::Divergence,
        gate: false,
        kind: kind.into(),
        detail: detail.into(),
    }
}

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

fn shape(what: &str) -> Vec<Violation> {
    vec![gate(
        Rule::Protocol,
        format!("output shape: {what}"),
        what.to_string(),
    )]
}

/// S1 over one delivered or forwarded text.
fn s1(text: &str, place: &str, out: &mut Vec<Violation>) {
    if let Some(line) = crate::oracle::directive::directive_lines(text).next() {
        out.push(gate(
            Rule::S1,
            format!("directive line in {place}"),
            bounded(line, 300).into_owned(),
        ));
    }
}

/// The marker D1 inserts before `MEDIA:` (the spec's wording, restated by the oracle).
const D1_MARKER: &str = "[neutralized] ";

/// The asymmetric half of S1: a line of `input` that the reference neutralized (its output
/// holds the line with D1's marker inserted, and no longer the line itself), that may be a
/// directive in the wider reading, and that the SUT still delivers verbatim. The SUT is then
/// more permissive than the reference, which fails the gate even where S1's own reading could
/// not tell why. Only the marker counts as the reference's neutralization: a longer line that
/// merely starts or ends like `l` (a delivery split elsewhere, a line joined with the final
/// reply) is no evidence that the reference read `l` as a directive.
fn kept_directive<'t>(
    input: impl IntoIterator<Item = &'t str>,
    reference: &[&str],
    sut: &[&str],
) -> Option<&'t str> {
    let in_reference: std::collections::HashSet<&str> =
        reference.iter().flat_map(|t| lines(t)).collect();
    let in_sut: std::collections::HashSet<&str> = sut.iter().flat_map(|t| lines(t)).collect();
    input.into_iter().flat_map(lines).find(|l| {
        !l.is_empty()
            && !in_reference.contains(l)
            && in_sut.contains(l)
            && in_reference.iter().any(|r| is_neutralized(l, r))
            && may_be_directive(l)
    })
}

fn kept_directive_violation(line: &str) -> Violation {
    gate(
        Rule::S1,
        "kept a line the reference neutralizes",
        bounded(line, 300).into_owned(),
    )
}

/// Whether `output` carries `input` (F2): the same lines with the same terminators, a line
/// changed only by an inserted run of text (S1's prefix), and only where the wider reading says
/// the line may be a directive.
pub fn text_survives(input: &str, output: &str) -> bool {
    if input == output {
        return true;
    }
    let (ins, outs) = (split_keeping(input), split_keeping(output));
    ins.len() == outs.len()
        && ins.iter().zip(&outs).all(|((i, ti), (o, to))| {
            ti == to && (i == o || (may_be_directive(i) && is_insertion(i, o)))
        })
}

/// Lines with the terminator that ends each (empty for the last).
fn split_keeping(text: &str) -> Vec<(&str, &str)> {
    let mut out = Vec::new();
    let mut start = 0;
    for m in crate::oracle::directive::terminators(text) {
        out.push((&text[start..m.start], &text[m.clone()]));
        start = m.end;
    }
    out.push((&text[start..], ""));
    out
}

/// Whether `o` is `i` with D1's marker inserted somewhere.
fn is_neutralized(i: &str, o: &str) -> bool {
    o.len() == i.len() + D1_MARKER.len()
        && o.match_indices(D1_MARKER).any(|(k, _)| {
            i.get(..k) == Some(&o[..k]) && i.get(k..) == Some(&o[k + D1_MARKER.len()..])
        })
}

/// Whether `o` is `i` with one run of text inserted somewhere.
pub fn is_insertion(i: &str, o: &str) -> bool {
    let prefix = i.bytes().zip(o.bytes()).take_while(|(a, b)| a == b).count();
    let suffix = i
        .bytes()
        .rev()
        .zip(o.bytes().rev())
        .take_while(|(a, b)| a == b)
        .count();
    o.len() > i.len() && prefix + suffix >= i.len()
}

/// Whether `text` keeps `needle` for a model (F4): the lines of its first KiB that are not
/// possible directives (those may carry S1's prefix) appear in `text`. A placeholder may cut a
/// long field, so of a long line only its first 100 bytes are required, and a line the first
/// KiB cuts is not required.
fn keeps(text: &str, needle: &str) -> bool {
    let head = &needle[..crate::excerpt::floor_boundary(needle, 1024)];
    let mut head_lines: Vec<&str> = lines(head).collect();
    if head.len() < needle.len() {
        head_lines.pop();
    }
    // Read whole before the cut: a long run of blanks may push a directive word past 100 bytes.
    head_lines.into_iter().all(|l| {
        l.is_empty()
            || may_be_directive(l)
            || text.contains(&l[..crate::excerpt::floor_boundary(l, 100)])
    })
}
