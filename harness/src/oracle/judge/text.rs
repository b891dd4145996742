//! `neutralize_text`: S1, D1 (only directive lines change, by an inserted prefix), F2, and B2
//! (a line that already carries the D1 marker is left alone).

use serde_json::Value;

use super::kept_text::{
    D1_MARKER, is_insertion, kept_directive, kept_directive_violation, s1, split_keeping,
};
use super::violation::{Violation, gate, shape};
use crate::excerpt::bounded;
use crate::oracle::directive::{is_directive_line, lines, may_be_directive};
use crate::rule::Rule;

pub(super) fn judge(input: &Value, output: &Value, expected: Option<&Value>) -> Vec<Violation> {
    let (Some(before), Some(after)) = (
        input.get("text").and_then(Value::as_str),
        output.get("text").and_then(Value::as_str),
    ) else {
        return shape("`text` is not a string");
    };
    let mut out = Vec::new();
    s1(after, "the text", &mut out);
    if let Some(reference) = expected.and_then(|e| e.get("text")).and_then(Value::as_str)
        && let Some(line) = kept_directive([before], &[reference], &[after])
    {
        out.push(kept_directive_violation(line));
    }
    if !out.is_empty() || before == after {
        return out;
    }
    let (ins, outs) = (split_keeping(before), split_keeping(after));
    if ins.len() != outs.len() {
        let removed =
            lines(before).any(is_directive_line) && lines(before).count() > lines(after).count();
        out.push(if removed {
            gate(
                Rule::D1,
                "directive line removed instead of neutralized",
                bounded(before, 300).into_owned(),
            )
        } else {
            gate(
                Rule::F2,
                "lines added or removed",
                bounded(before, 300).into_owned(),
            )
        });
        return out;
    }
    for ((i, ti), (o, to)) in ins.iter().zip(&outs) {
        if i == o && ti == to {
            continue;
        }
        let violation = if ti != to {
            gate(
                Rule::F2,
                "line terminator changed",
                format!("{ti:?} became {to:?}"),
            )
        } else if i.trim_start().starts_with(D1_MARKER) {
            gate(
                Rule::B2,
                "an already neutralized line changed again",
                bounded(i, 300).into_owned(),
            )
        } else if !may_be_directive(i) {
            gate(
                Rule::F2,
                "a line that is not a directive changed",
                bounded(i, 300).into_owned(),
            )
        } else if !is_insertion(i, o) {
            gate(
                Rule::D1,
                "a directive line changed other than by an inserted prefix",
                format!("{:?} became {:?}", bounded(i, 150), bounded(o, 150)),
            )
        } else {
            continue;
        };
        out.push(violation);
        break;
    }
    out
}
