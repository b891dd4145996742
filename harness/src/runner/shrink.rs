//! Shrinking: a failing case is simplified through its proptest value tree, replayed against
//! the SUT and the reference at each step, while the same (rule, kind) still fails.

use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use anyhow::Result;
use proptest::strategy::ValueTree;
use serde_json::Value;

use super::campaign::{Finding, Progress};
use super::sut::{Sut, Wait};
use crate::oracle::judge::{Violation, companion, judge, judge_companion};
use crate::protocol::{Answer, Op};
use crate::rule::Rule;

/// SUT calls spent shrinking one failure at most.
pub const SHRINK_BUDGET: usize = 2_000;
/// Time spent shrinking one failure at most.
const SHRINK_TIME: Duration = Duration::from_secs(10);
/// Time spent shrinking a confirmed hang at most: each step that still hangs costs a
/// (calibrated) time-out and a restart, and a smaller hanging input helps less than a smaller
/// wrong answer.
const HANG_SHRINK_TIME: Duration = Duration::from_secs(2);

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

/// Shrinks the case in `tree` while the same (rule, kind) still fails, for `SHRINK_TIME` at most
/// (`HANG_SHRINK_TIME` for a hang), and never past the campaign's deadline (`until`). A hang is
/// first confirmed: the case is sent again with the full time-out (answered, it was a slow
/// case). The steps wait as `wait` says. The SUT's faults on the way are counted in `progress`.
#[allow(clippy::too_many_arguments)]
pub fn shrink<S: Sut>(
    sut: &mut S,
    op: Op,
    mut tree: impl ValueTree<Value = Value>,
    target: &Violation,
    hang: bool,
    wait: Wait,
    until: Option<Instant>,
    progress: &Progress,
) -> Result<Shrunk> {
    // `None`: out of time before the SUT answered; `Some(None)`: answered, not the target.
    let check = |input: &Value,
                 sut: &mut S,
                 wait: Wait,
                 until: Option<Instant>|
     -> Result<Option<Option<(Violation, Answer, Answer)>>> {
        let seen = &mut |answer: &Answer| {
            progress.fault(answer);
            ControlFlow::Continue(())
        };
        let Some((answer, expected, violations)) = replay_until(sut, op, input, until, wait, seen)?
        else {
            return Ok(None);
        };
        let hit = violations
            .into_iter()
            .find(|v| v.rule == target.rule && v.kind == target.kind);
        Ok(Some(hit.map(|v| (v, answer, expected))))
    };
    let mut best_input = tree.current();
    let (first_wait, time) = if hang {
        (Wait::Full, HANG_SHRINK_TIME)
    } else {
        (wait, SHRINK_TIME)
    };
    let mut best = match check(&best_input, sut, first_wait, until)? {
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
            match check(&candidate, sut, wait, Some(deadline))? {
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
    let (violation, sut, reference) = best;
    Ok(Shrunk::Smallest {
        violation,
        input: best_input,
        sut,
        reference,
    })
}

/// A finding of one case, found at `first_seen_ms` into the campaign.
pub(super) fn finding(
    op: Op,
    v: Violation,
    input: Value,
    sut: Answer,
    reference: Answer,
    seed: u64,
    first_seen_ms: u64,
) -> Finding {
    Finding {
        id: finding_id(op, v.rule, &v.kind),
        op,
        rule: v.rule,
        gate: v.gate,
        kind: v.kind,
        detail: v.detail,
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

/// `op-rule-hash`, stable across runs and machines (FNV-1a of the kind).
pub fn finding_id(op: Op, rule: Rule, kind: &str) -> String {
    let hash = kind.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    format!("{}-{}-{:08x}", op.as_str(), rule, hash as u32)
}

/// Judges one stored input again (for `normfuzz repro`).
pub fn replay(
    sut: &mut dyn Sut,
    op: Op,
    input: &Value,
) -> Result<(Answer, Answer, Vec<Violation>)> {
    replay_until(sut, op, input, None, Wait::Calibrated, &mut |_| {
        ControlFlow::Continue(())
    })?
    .ok_or_else(|| anyhow::anyhow!("the SUT gave no answer"))
}

/// Judges one input (and its companion): `None` when `until` passed before the SUT answered.
fn replay_until(
    sut: &mut (impl Sut + ?Sized),
    op: Op,
    input: &Value,
    until: Option<Instant>,
    wait: Wait,
    seen: &mut dyn FnMut(&Answer) -> ControlFlow<()>,
) -> Result<Option<(Answer, Answer, Vec<Violation>)>> {
    let Some(answer) = sut.call_until(&[(op, input)], until, wait, seen)?.pop() else {
        return Ok(None);
    };
    let expected = crate::runner::sut::ReferenceSut
        .call(&[(op, input)])?
        .pop()
        .unwrap_or(Answer::Refused("no answer".into()));
    let mut violations = judge(op, input, &answer, &expected);
    if let Some(other) = companion(op, input) {
        let Some(other) = sut.call_until(&[(op, &other)], until, wait, seen)?.pop() else {
            return Ok(None);
        };
        violations.extend(judge_companion(op, &answer, &other));
    }
    Ok(Some((answer, expected, violations)))
}
