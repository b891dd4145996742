//! A job's shrinker thread: draws a queued case again from the job's RNG and shrinks it against
//! a SUT of its own, or the job's once the job is done.

use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, Sender};
use std::time::{Duration, Instant};

use anyhow::Result;
use proptest::strategy::{Just, Strategy};
use proptest::test_runner::TestRunner;

use super::jobs::{Draws, Shared, ShrinkRequest, withdraw_hangs};
use super::shrink::{self, Shrunk};
use crate::oracle::signature::{Signature, add_trigger, within};
use crate::protocol::Op;
use crate::sut::Sut;

/// The SUT a job hands its shrinker when it is done with its cases, and how long that SUT took
/// to start.
pub(super) struct Spare<S> {
    pub(super) handed: Receiver<S>,
    pub(super) start_up: Duration,
}

/// A job's shrinker: shrinks the job's new findings one after the other, while the job goes on.
/// Its SUT is the job's, when the job is done within the time a SUT of its own would take to
/// start (ski rental: a short campaign pays no second start-up, a long one at most twice it),
/// else one of its own. A hang is confirmed with the full time-out
/// first; one answered then was a slow case: its finding and verdicts are withdrawn and the job
/// told to wait longer for the op. After the campaign's deadline a finding is left as found.
/// Counts the slow answers of every SUT it ends with.
pub(super) fn shrink_loop<S: Sut>(
    shared: &Shared<'_>,
    make_sut: &(impl Fn() -> Result<S> + Sync),
    spare: &Spare<S>,
    requests: &Receiver<ShrinkRequest>,
    slow: &Sender<Op>,
) -> Result<()> {
    let campaign = shared.campaign;
    let mut sut: Option<S> = None;
    let mut draws: Option<Draws> = None;
    for request in requests {
        if shared.deadline.is_some_and(|d| Instant::now() >= d) {
            continue;
        }
        let sut = match &mut sut {
            Some(sut) => sut,
            None => sut.insert(match spare.handed.recv_timeout(spare.start_up) {
                Ok(handed) => handed,
                Err(_) => make_sut()?,
            }),
        };
        let draws = draws.get_or_insert_with(|| Draws::new(campaign, sut.ops()));
        let mut runner = TestRunner::new_with_rng(draws.config.clone(), request.rng);
        let mut tree = draws.tree(request.first, &mut runner)?;
        for n in request.first + 1..=request.first + request.index as u64 {
            tree = draws.tree(n, &mut runner)?;
        }
        if let Some(input) = request.steered {
            tree = Box::new(
                Just(input)
                    .new_tree(&mut runner)
                    .map_err(|e| anyhow::anyhow!("{e}"))?,
            );
        }
        let op = request.key.0;
        let shrinking = Instant::now();
        shared.shrinks_started.fetch_add(1, Ordering::SeqCst);
        shared.shrinking.fetch_add(1, Ordering::SeqCst);
        let shrunk = shrink::shrink(
            sut,
            op,
            tree,
            &request.violation,
            &request.signature,
            request.hang,
            request.wait,
            shared.deadline,
            shared.progress,
        );
        shared.shrinking.fetch_sub(1, Ordering::SeqCst);
        shared
            .shrink_us
            .fetch_add(shrinking.elapsed().as_micros() as u64, Ordering::Relaxed);
        let mut findings = shared
            .findings
            .lock()
            .map_err(|_| anyhow::anyhow!("findings lock poisoned"))?;
        let Some(found) = findings.get_mut(&request.key) else {
            continue;
        };
        match shrunk? {
            Shrunk::Smallest {
                violation,
                input,
                sut,
                reference,
            } => {
                // The cause is what its minimal input shows.
                found.signature = Signature::of(op, &input, &sut, &reference, &violation);
                // Only where it generalizes a case the run had: shrinking may also move the input
                // to features no case showed (an entry for those would never be reached).
                let features = &found.signature.features;
                if found.triggers.iter().any(|t| within(features, t)) {
                    add_trigger(&mut found.triggers, features);
                }
                found.detail = violation.detail;
                found.input = input;
                found.sut = sut;
                found.reference = reference;
            }
            Shrunk::Flaky(why) => {
                found.detail = format!("{} (not shrunk: {why})", found.detail);
            }
            Shrunk::Slow => {
                let hits = found.hits;
                findings.remove(&request.key);
                drop(findings);
                withdraw_hangs(shared, op, hits);
                let _ = slow.send(op);
                continue;
            }
        }
        if found.gate && campaign.stop_on_gate {
            shared.stop.store(true, Ordering::Relaxed);
        }
    }
    let late: u64 = sut
        .iter()
        .chain(&spare.handed.try_iter().collect::<Vec<_>>())
        .map(Sut::late_answers)
        .sum();
    shared.progress.late.fetch_add(late, Ordering::Relaxed);
    Ok(())
}
