//! What a SUT kept of a text, shared by the op judges: a directive line it should have
//! neutralized (S1, and its asymmetric half against the reference), and text it should have kept
//! (F2's survival, F4's head of a field).

use super::violation::{Violation, gate};
use crate::excerpt::bounded;
use crate::oracle::directive::{lines, may_be_directive};
use crate::rule::Rule;

/// S1 over one delivered or forwarded text.
pub(super) fn s1(text: &str, place: &str, out: &mut Vec<Violation>) {
    if let Some(line) = crate::oracle::directive::directive_lines(text).next() {
        out.push(gate(
            Rule::S1,
            format!("directive line in {place}"),
            bounded(line, 300).into_owned(),
        ));
    }
}

/// The marker D1 inserts before `MEDIA:` (the spec's wording, restated by the oracle).
pub(super) const D1_MARKER: &str = "[neutralized] ";

/// The asymmetric half of S1: a line of `input` that the reference neutralized (its output
/// holds the line with D1's marker inserted, and no longer the line itself), that may be a
/// directive in the wider reading, and that the SUT still delivers verbatim. The SUT is then
/// more permissive than the reference, which fails the gate even where S1's own reading could
/// not tell why. Only the marker counts as the reference's neutralization: a longer line that
/// merely starts or ends like `l` (a delivery split elsewhere, a line joined with the final
/// reply) is no evidence that the reference read `l` as a directive.
pub(super) fn kept_directive<'t>(
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

pub(super) fn kept_directive_violation(line: &str) -> Violation {
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
pub(super) fn split_keeping(text: &str) -> Vec<(&str, &str)> {
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
pub(super) fn is_neutralized(i: &str, o: &str) -> bool {
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
pub(super) fn keeps(text: &str, needle: &str) -> bool {
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
