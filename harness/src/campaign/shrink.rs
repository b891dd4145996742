//! Shrinking: a failing case is simplified through its proptest value tree, replayed against
//! the SUT and the reference at each step, while the same (rule, kind, action) still fails.

use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use anyhow::Result;
use proptest::strategy::ValueTree;
use serde_json::Value;

use super::baseline::Known;
use super::finding::Finding;
use super::progress::Progress;
use crate::oracle::judge::{Violation, companion, judge, judge_companion};
use crate::oracle::signature::{Action, Signature, within};
use crate::protocol::{Answer, Op};
use crate::rule::Rule;
use crate::sut::{Sut, Wait};

/// SUT calls the whole-part edits (`smaller`) may spend after the value tree's shrinking.
const EDIT_BUDGET: usize = 300;
/// Whole-part edits sent to the SUT at once, pipelined: a batch costs about one round trip
/// instead of one per edit, and at most this many answers past the first that still fails.
const EDIT_BATCH: usize = 16;
/// Values of an input whose parts `smaller` tries to remove.
const EDIT_NODES: usize = 64;
/// SUT calls spent shrinking one failure at most.
pub const SHRINK_BUDGET: usize = 2_000;
/// Time spent shrinking one failure at most.
const SHRINK_TIME: Duration = Duration::from_secs(10);
/// Time spent shrinking a confirmed hang at most: each step that still hangs costs a
/// (calibrated) time-out and a restart, and a smaller hanging input helps less than a smaller
/// wrong answer.
const HANG_SHRINK_TIME: Duration = Duration::from_secs(2);

/// One input judged again: the SUT's answer, the reference's, and the violations.
type Replayed = (Answer, Answer, Vec<Violation>);
/// A shrinking step that still fails the same way: the violation, the SUT's answer and the
/// reference's.
type Hit = (Violation, Answer, Answer);

/// What shrinking a failure gave (one per finding: its size does not matter).
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub enum Shrunk {
    /// The smallest input found that still fails the same way, and the answers to it.
    Smallest {
        violation: Violation,
        input: Value,
        sut: Answer,
        reference: Answer,
    },
    /// The SUT no longer fails on the original input (or there was no time left to ask).
    Flaky(&'static str),
    /// A hang that was answered when the case was sent again with the full time-out: a slow
    /// case, not a hang.
    Slow,
}

/// Shrinks the case in `tree` while the same (rule, kind, action) still fails on an input with
/// no feature the case lacked (so an entry drafted from the minimal input covers the case), for
/// `SHRINK_TIME` at most
/// (`HANG_SHRINK_TIME` for a hang), and never past the campaign's deadline (`until`). A hang is
/// first confirmed: the case is sent again with the full time-out (answered, it was a slow
/// case). The steps wait as `wait` says. The SUT's faults on the way are counted in `progress`.
#[allow(clippy::too_many_arguments)]
pub fn shrink<S: Sut>(
    sut: &mut S,
    op: Op,
    mut tree: impl ValueTree<Value = Value>,
    target: &Violation,
    signature: &Signature,
    hang: bool,
    wait: Wait,
    until: Option<Instant>,
    progress: &Progress,
) -> Result<Shrunk> {
    // Per input, in order: `None` once out of time before the SUT answered (and for every
    // input after it); `Some(None)`: answered, not the target.
    let check = |inputs: &[Value],
                 sut: &mut S,
                 wait: Wait,
                 until: Option<Instant>|
     -> Result<Vec<Option<Option<Hit>>>> {
        let seen = &mut |answer: &Answer| {
            progress.fault(answer);
            ControlFlow::Continue(())
        };
        let replayed = replay_batch(sut, op, inputs, until, wait, seen)?;
        Ok(inputs
            .iter()
            .zip(replayed)
            .map(|(input, replayed)| {
                let (answer, expected, violations) = replayed?;
                // The same cause: rule, kind and what the SUT did (another action is another
                // bug), on an input that gained no feature (shrinking may reach an absence that
                // reads as one).
                let hit = violations.into_iter().find(|v| {
                    v.rule == target.rule && v.kind == target.kind && {
                        let step = Signature::of(op, input, &answer, &expected, v);
                        step.action == signature.action
                            && within(&step.features, &signature.features)
                    }
                });
                Some(hit.map(|v| (v, answer, expected)))
            })
            .collect())
    };
    let check_one = |input: &Value, sut: &mut S, wait: Wait, until: Option<Instant>| {
        check(std::slice::from_ref(input), sut, wait, until).map(|mut c| c.pop().flatten())
    };
    let mut best_input = tree.current();
    let (first_wait, time) = if hang {
        (Wait::Full, HANG_SHRINK_TIME)
    } else {
        (wait, SHRINK_TIME)
    };
    let mut best = match check_one(&best_input, sut, first_wait, until)? {
        Some(Some(hit)) => hit,
        Some(None) if hang => return Ok(Shrunk::Slow),
        Some(None) => return Ok(Shrunk::Flaky("did not reproduce")),
        None if hang => {
            return Ok(Shrunk::Flaky(
                "not confirmed with the full time-out: the campaign's time ran out",
            ));
        }
        None => return Ok(Shrunk::Flaky("not replayed: the campaign's time ran out")),
    };
    let deadline = Instant::now() + time;
    let deadline = until.map_or(deadline, |u| u.min(deadline));
    let mut calls = 0;
    if tree.simplify() {
        while calls < SHRINK_BUDGET && Instant::now() < deadline {
            calls += 1;
            let candidate = tree.current();
            match check_one(&candidate, sut, wait, Some(deadline))? {
                None => break,
                Some(Some(hit)) => {
                    best = hit;
                    best_input = candidate;
                    if !tree.simplify() {
                        break;
                    }
                }
                Some(None) => {
                    if !tree.complicate() {
                        break;
                    }
                }
            }
        }
    }
    // Then whole parts: the value tree shrinks each value in place but keeps the shape that drew
    // it (a text's lines, a result's blocks), and an incidental part left there would stay in the
    // finding's signature and in every baseline entry drafted from it.
    let mut edits = 0;
    'smaller: while !hang && edits < EDIT_BUDGET && Instant::now() < deadline {
        let candidates = smaller(&best_input);
        for chunk in candidates.chunks(EDIT_BATCH) {
            let chunk = &chunk[..chunk.len().min(EDIT_BUDGET - edits)];
            if chunk.is_empty() {
                break 'smaller;
            }
            edits += chunk.len();
            // The first edit that still fails, as if they had been sent one at a time.
            for (candidate, checked) in chunk.iter().zip(check(chunk, sut, wait, Some(deadline))?) {
                match checked {
                    None => break 'smaller,
                    Some(Some(hit)) => {
                        best = hit;
                        best_input = candidate.clone();
                        continue 'smaller;
                    }
                    Some(None) => {}
                }
            }
        }
        break;
    }
    let (violation, sut, reference) = best;
    Ok(Shrunk::Smallest {
        violation,
        input: best_input,
        sut,
        reference,
    })
}

/// Inputs one part smaller than `input`: an array element or an object entry removed, or a line
/// of a string (with its terminator). Only the first `EDIT_NODES` values are visited, so an
/// input nested a million deep costs no more than a small one.
fn smaller(input: &Value) -> Vec<Value> {
    let mut pointers = Vec::new();
    let mut stack = vec![(String::new(), input)];
    while let Some((pointer, value)) = stack.pop() {
        if pointers.len() >= EDIT_NODES {
            break;
        }
        match value {
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate().rev() {
                    stack.push((format!("{pointer}/{i}"), item));
                }
            }
            Value::Object(map) => {
                for (key, item) in map.iter().rev() {
                    let key = key.replace('~', "~0").replace('/', "~1");
                    stack.push((format!("{pointer}/{key}"), item));
                }
            }
            _ => {}
        }
        pointers.push((pointer, value));
    }
    let mut out = Vec::new();
    let edited = |pointer: &str, edit: &mut dyn FnMut(&mut Value)| {
        let mut copy = input.clone();
        edit(copy.pointer_mut(pointer)?);
        Some(copy)
    };
    for (pointer, value) in &pointers {
        match value {
            Value::Array(items) => {
                for i in 0..items.len() {
                    out.extend(edited(pointer, &mut |v| {
                        if let Value::Array(items) = v {
                            items.remove(i);
                        }
                    }));
                }
            }
            Value::Object(map) => {
                for key in map.keys() {
                    out.extend(edited(pointer, &mut |v| {
                        if let Value::Object(map) = v {
                            map.shift_remove(key);
                        }
                    }));
                }
            }
            Value::String(text) => {
                let mut ends: Vec<std::ops::Range<usize>> = Vec::new();
                for end in crate::oracle::directive::terminators(text) {
                    // `\r\n` ends one line, not two.
                    match ends.last_mut() {
                        Some(last)
                            if last.end == end.start
                                && &text[last.clone()] == "\r"
                                && &text[end.clone()] == "\n" =>
                        {
                            last.end = end.end;
                        }
                        _ => ends.push(end),
                    }
                }
                for (i, end) in ends.iter().enumerate() {
                    // Line i and the terminator after it.
                    let start = if i == 0 { 0 } else { ends[i - 1].end };
                    let shorter = format!("{}{}", &text[..start], &text[end.end..]);
                    out.extend(edited(pointer, &mut |v| {
                        *v = Value::String(shorter.clone())
                    }));
                }
                if let Some(last) = ends.last() {
                    let shorter = text[..last.start].to_string();
                    out.extend(edited(pointer, &mut |v| {
                        *v = Value::String(shorter.clone())
                    }));
                }
            }
            _ => {}
        }
    }
    out
}

/// A finding of one case, found at `first_seen_ms` into the campaign.
#[allow(clippy::too_many_arguments)]
pub(super) fn finding(
    op: Op,
    v: Violation,
    signature: Signature,
    input: Value,
    sut: Answer,
    reference: Answer,
    seed: u64,
    first_seen_ms: u64,
) -> Finding {
    Finding {
        id: finding_id(op, v.rule, &signature, None),
        op,
        rule: v.rule,
        gate: v.gate,
        kind: v.kind,
        detail: v.detail,
        signature,
        triggers: Vec::new(),
        cause: None,
        hits: 1,
        input,
        sut,
        reference,
        seed,
        first_seen_ms,
        source: None,
        impact: None,
        baseline: None,
    }
}

/// `op-rule-hash`, stable across runs and machines: FNV-1a of the kind, then of what the SUT did
/// and the baseline entry that knows it (its cause and the features it lists), where there are
/// such (a finding of an action-less kind without an entry keeps the id it had when ids hashed
/// the kind alone; corpus regressions are named by it). One id per distinct finding of a
/// campaign, as its file is named by it: two entries of one cause, kind and action that differ
/// in features know two findings. The finding's own features are not hashed: they depend on
/// which of the cases of one key was shrunk, and the id must not.
pub fn finding_id(op: Op, rule: Rule, signature: &Signature, known: Option<&Known>) -> String {
    let fnv = |h: u64, bytes: &[u8]| {
        bytes
            .iter()
            .fold(h, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3))
    };
    let mut hash = fnv(0xcbf2_9ce4_8422_2325, signature.kind.as_bytes());
    if signature.action != Action::Other {
        hash = fnv(hash, signature.action.as_str().as_bytes());
    }
    if let Some(known) = known {
        hash = fnv(hash, known.cause.as_bytes());
        for feature in known.signature.iter().flat_map(|s| &s.features) {
            hash = fnv(fnv(hash, &[0]), feature.as_bytes());
        }
    }
    format!("{}-{}-{:08x}", op.as_str(), rule, hash as u32)
}

/// Judges one stored input again (for `normfuzz repro`).
pub fn replay(sut: &mut dyn Sut, op: Op, input: &Value) -> Result<Replayed> {
    let seen = &mut |_: &Answer| ControlFlow::Continue(());
    replay_batch(
        sut,
        op,
        std::slice::from_ref(input),
        None,
        Wait::Calibrated,
        seen,
    )?
    .pop()
    .flatten()
    .ok_or_else(|| anyhow::anyhow!("the SUT gave no answer"))
}

/// Judges each of `inputs` (and its companion), all sent to the SUT in one pipelined call: per
/// input, `None` when `until` passed before the SUT answered it or its companion.
fn replay_batch(
    sut: &mut (impl Sut + ?Sized),
    op: Op,
    inputs: &[Value],
    until: Option<Instant>,
    wait: Wait,
    seen: &mut dyn FnMut(&Answer) -> ControlFlow<()>,
) -> Result<Vec<Option<Replayed>>> {
    let companions: Vec<Option<Value>> = inputs.iter().map(|i| companion(op, i)).collect();
    let batch: Vec<(Op, &Value)> = inputs
        .iter()
        .chain(companions.iter().flatten())
        .map(|input| (op, input))
        .collect();
    let mut mine = sut.call_until(&batch, until, wait, seen)?;
    let others = mine.split_off(mine.len().min(inputs.len()));
    let (mut mine, mut others) = (mine.into_iter(), others.into_iter());
    let mut out = Vec::with_capacity(inputs.len());
    for (input, companion) in inputs.iter().zip(&companions) {
        // The answers are a prefix of the batch: a missing one means `until` passed.
        let other = companion.as_ref().map(|_| others.next());
        let (Some(answer), false) = (mine.next(), matches!(other, Some(None))) else {
            out.push(None);
            continue;
        };
        let expected = crate::sut::ReferenceSut
            .call(&[(op, input)])?
            .pop()
            .unwrap_or(Answer::Refused("no answer".into()));
        let mut violations = judge(op, input, &answer, &expected);
        if let Some(Some(other)) = other {
            violations.extend(judge_companion(op, &answer, &other));
        }
        out.push(Some((answer, expected, violations)));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::smaller;

    /// Every whole part one edit away: an entry, an element, a line with its terminator.
    #[test]
    fn smaller_removes_entries_elements_and_lines() {
        let input = json!({"text": "a\r\nMEDIA:/x\u{2028}b", "n": [1, 2]});
        let candidates = smaller(&input);
        for want in [
            json!({"n": [1, 2]}),
            json!({"text": "a\r\nMEDIA:/x\u{2028}b"}),
            json!({"text": "a\r\nMEDIA:/x\u{2028}b", "n": [2]}),
            json!({"text": "MEDIA:/x\u{2028}b", "n": [1, 2]}),
            json!({"text": "a\r\nb", "n": [1, 2]}),
            json!({"text": "a\r\nMEDIA:/x", "n": [1, 2]}),
        ] {
            assert!(
                candidates.contains(&want),
                "{want} not among {candidates:?}"
            );
        }
        assert!(candidates.iter().all(|c| c != &input));
    }
}
