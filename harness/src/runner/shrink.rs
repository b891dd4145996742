//! Shrinking: a failing case is simplified through its proptest value tree, replayed against
//! the SUT and the reference at each step, while the same (rule, kind) still fails.

use std::time::{Duration, Instant};

use anyhow::Result;
use proptest::strategy::ValueTree;
use serde_json::Value;

use super::campaign::Finding;
use super::sut::Sut;
use crate::oracle::judge::{Violation, companion, judge, judge_companion};
use crate::protocol::{Answer, Op};
use crate::rule::Rule;

/// SUT calls spent shrinking one failure at most.
pub const SHRINK_BUDGET: usize = 2_000;
/// Time spent shrinking one failure at most (a hang costs a timeout per step).
const SHRINK_TIME: Duration = Duration::from_secs(10);

/// Shrinks the case in `tree` while the same (rule, kind) still fails.
pub fn shrink<S: Sut>(
    sut: &mut S,
    op: Op,
    mut tree: impl ValueTree<Value = Value>,
    target: &Violation,
    seed: u64,
) -> Result<Finding> {
    let check = |input: &Value, sut: &mut S| -> Result<Option<(Violation, Answer, Answer)>> {
        let (answer, expected, violations) = replay(sut, op, input)?;
        let hit = violations
            .into_iter()
            .find(|v| v.rule == target.rule && v.kind == target.kind);
        Ok(hit.map(|v| (v, answer, expected)))
    };
    let mut best_input = tree.current();
    let Some(mut best) = check(&best_input, sut)? else {
        // Flaky: the SUT no longer fails on the original input; report it as found.
        return Ok(finding(
            op,
            target.clone(),
            best_input,
            Answer::Refused("did not reproduce".into()),
            Answer::Refused(String::new()),
            seed,
        ));
    };
    let mut calls = 0;
    let deadline = Instant::now() + SHRINK_TIME;
    if tree.simplify() {
        while calls < SHRINK_BUDGET && Instant::now() < deadline {
            calls += 1;
            let candidate = tree.current();
            if let Some(hit) = check(&candidate, sut)? {
                best = hit;
                best_input = candidate;
                if !tree.simplify() {
                    break;
                }
            } else if !tree.complicate() {
                break;
            }
        }
    }
    let (violation, answer, expected) = best;
    Ok(finding(op, violation, best_input, answer, expected, seed))
}

fn finding(
    op: Op,
    v: Violation,
    input: Value,
    sut: Answer,
    reference: Answer,
    seed: u64,
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
        first_seen_ms: 0,
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
    let answer = sut
        .call(&[(op, input)])?
        .pop()
        .unwrap_or(Answer::Refused("no answer".into()));
    let expected = crate::runner::sut::ReferenceSut
        .call(&[(op, input)])?
        .pop()
        .unwrap_or(Answer::Refused("no answer".into()));
    let mut violations = judge(op, input, &answer, &expected);
    if let Some(other) = companion(op, input) {
        let other = sut
            .call(&[(op, &other)])?
            .pop()
            .unwrap_or(Answer::Refused("no answer".into()));
        violations.extend(judge_companion(op, &answer, &other));
    }
    Ok((answer, expected, violations))
}
