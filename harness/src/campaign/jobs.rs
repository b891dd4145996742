//! A campaign's job threads: each draws its batches from its own RNG, sends them to its SUT and
//! the reference, judges the answers and counts or queues each failure for its shrinker.

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::ops::ControlFlow;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::time::Instant;

use anyhow::{Context as _, Result};
use proptest::strategy::{Just, Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::Value;

use super::config::{Campaign, Input};
use super::finding::Finding;
use super::outcome::Tally;
use super::progress::Progress;
use super::shrink::{self, finding_id};
use super::steer::{self, Corpus};
use crate::oracle::judge::{Violation, companion, judge, judge_companion};
use crate::oracle::signature::{Action, Signature, add_trigger};
use crate::protocol::coverage::Reached;
use crate::protocol::{Answer, Op};
use crate::rule::Rule;
use crate::sut::{Sut, Wait};

/// Cases sent to the SUT at once.
const BATCH: usize = 128;

/// The share of a job's time its SUT's hangs may cost before the cases of the ops that hung are
/// left out of its next batches (until the share falls below it again): a hang already found
/// does not eat the campaign, and the other ops keep most of their rate.
const HANG_SHARE: f64 = 1.0 / 3.0;

pub(super) struct Shared<'a> {
    pub(super) campaign: &'a Campaign,
    pub(super) deadline: Option<Instant>,
    pub(super) findings: Mutex<HashMap<Key, Finding>>,
    pub(super) tallies: Mutex<BTreeMap<Op, Tally>>,
    /// `answer_shape` of every reference answer so far, per op.
    pub(super) shapes: Mutex<HashSet<(Op, u64)>>,
    pub(super) progress: &'a Progress,
    pub(super) started: Instant,
    /// Set when `stop_on_gate` is asked and a gate failure was found: every job stops.
    pub(super) stop: std::sync::atomic::AtomicBool,
    /// Job time spent shrinking, summed over jobs, in microseconds.
    pub(super) shrink_us: AtomicU64,
    /// Jobs shrinking now, and shrinks started so far: a batch is steady when no job was
    /// shrinking at its start, none started before its end and every job was still running
    /// (a job alone at the end has the whole machine).
    pub(super) shrinking: AtomicU64,
    pub(super) running: AtomicU64,
    pub(super) shrinks_started: AtomicU64,
    pub(super) steady_cases: AtomicU64,
    pub(super) steady_job_us: AtomicU64,
    /// The runtime's coverage over every job's SUT, if they offer the extension.
    pub(super) coverage: Mutex<Option<Reached>>,
    /// The steering corpus, when the campaign is steered, and the mutants sent so far.
    pub(super) corpus: Option<Corpus>,
    pub(super) steered: AtomicU64,
}

/// A hash of what the reference decided, without the data it carried: objects keep their keys,
/// arrays collapse runs of equal element shapes (one text block or five is one shape), booleans
/// keep their value, strings are erased except the protocol fields that name a class (`type`,
/// `mimeType`, `reason`), numbers keep only whether they are zero. A refusal is one shape.
fn answer_shape(answer: &Answer) -> u64 {
    pub(super) fn walk(key: Option<&str>, value: &Value, h: &mut std::hash::DefaultHasher) {
        match value {
            Value::Null => 0u8.hash(h),
            Value::Bool(b) => (1u8, b).hash(h),
            Value::Number(n) => (2u8, n.as_f64() == Some(0.0)).hash(h),
            Value::String(s) if matches!(key, Some("type" | "mimeType" | "reason")) => {
                (3u8, s).hash(h)
            }
            Value::String(_) => 4u8.hash(h),
            Value::Array(items) => {
                5u8.hash(h);
                let mut last = None;
                for item in items {
                    let mut item_hasher = std::hash::DefaultHasher::new();
                    walk(None, item, &mut item_hasher);
                    let shape = item_hasher.finish();
                    if last != Some(shape) {
                        shape.hash(h);
                        last = Some(shape);
                    }
                }
                6u8.hash(h);
            }
            Value::Object(map) => {
                7u8.hash(h);
                for (k, v) in map {
                    k.hash(h);
                    walk(Some(k), v, h);
                }
                8u8.hash(h);
            }
        }
    }
    let mut h = std::hash::DefaultHasher::new();
    match answer {
        Answer::Output(output) => walk(None, output, &mut h),
        Answer::Refused(_) => 9u8.hash(&mut h),
        Answer::Fault(fault) => (10u8, std::mem::discriminant(fault)).hash(&mut h),
    }
    h.finish()
}

/// Set in the job number of the RNG that steering's mutations draw from.
const STEER_STREAM: u64 = 1 << 63;

fn rng_for(seed: u64, job: u64) -> TestRng {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    bytes[8..16].copy_from_slice(&job.to_le_bytes());
    TestRng::from_seed(RngAlgorithm::ChaCha, &bytes)
}

/// A new finding for the job's shrinker: the case is drawn again there from the job's RNG as it
/// was before the batch (a proptest value tree cannot leave its thread).
/// What findings are deduplicated by: op, rule, kind, what the SUT did, and the index of the
/// campaign baseline's entry that knows it (a known finding is not shrunk).
type Key = (Op, Rule, String, Action, Option<usize>);

pub(super) struct ShrinkRequest {
    pub(super) key: Key,
    pub(super) violation: Violation,
    /// What the SUT did and the case's features: shrinking keeps the one, never adds to the other.
    pub(super) signature: Signature,
    pub(super) rng: TestRng,
    /// The number of the batch's first case, and the case's place among the batch's draws.
    pub(super) first: u64,
    pub(super) index: usize,
    /// The case hung: the shrinker confirms it with the full time-out first.
    pub(super) hang: bool,
    /// The job's calibrated time-out for the op: the shrinker's own SUT has not measured it.
    pub(super) wait: Wait,
    /// A steered case's input (a mutant is not drawn again): shrunk by whole-part edits only.
    pub(super) steered: Option<Value>,
}

/// The ops a job runs and where their cases come from: proptest strategies with the
/// configuration their draws use, or the campaign's fixed inputs.
pub(super) struct Draws<'a> {
    pub(super) ops: Vec<Op>,
    pub(super) strategies: HashMap<Op, proptest::strategy::BoxedStrategy<Value>>,
    pub(super) config: Config,
    pub(super) inputs: &'a [Input],
}

impl<'a> Draws<'a> {
    pub(super) fn new(campaign: &'a Campaign, offered: &[Op]) -> Self {
        let inputs = campaign.inputs.as_slice();
        let ops: Vec<Op> = campaign
            .ops
            .iter()
            .copied()
            .filter(|op| offered.contains(op))
            .collect();
        let strategies = if inputs.is_empty() {
            ops.iter()
                .map(|&op| (op, crate::generate::cases::op_input(op)))
                .collect()
        } else {
            HashMap::new()
        };
        let config = Config {
            max_shrink_iters: shrink::SHRINK_BUDGET as u32,
            ..Config::default()
        };
        Self {
            ops,
            strategies,
            config,
            inputs,
        }
    }

    pub(super) fn op(&self, n: u64) -> Op {
        self.ops[(n % self.ops.len() as u64) as usize]
    }

    pub(super) fn tree(
        &self,
        n: u64,
        runner: &mut TestRunner,
    ) -> Result<Box<dyn ValueTree<Value = Value>>> {
        if !self.inputs.is_empty() {
            let input = self.inputs.get(n as usize).with_context(|| {
                format!(
                    "case {n} is past the campaign's {} inputs",
                    self.inputs.len()
                )
            })?;
            // A value tree that does not shrink: the real case is the finding's input.
            return Just(input.input.clone())
                .new_tree(runner)
                .map(|tree| Box::new(tree) as Box<dyn ValueTree<Value = Value>>)
                .map_err(|e| anyhow::anyhow!("{e}"));
        }
        self.strategies[&self.op(n)]
            .new_tree(runner)
            .map_err(|e| anyhow::anyhow!("generator failed: {e}"))
    }

    /// Where case `n` came from, for a fixed input.
    pub(super) fn source(&self, n: u64) -> Option<String> {
        self.inputs.get(n as usize).map(|i| i.source.clone())
    }
}

pub(super) fn job_loop<S: Sut>(
    shared: &Shared<'_>,
    job: u64,
    mut sut: S,
    shrinks: &Sender<ShrinkRequest>,
    slow: &Receiver<Op>,
) -> Result<S> {
    let campaign = shared.campaign;
    let draws = Draws::new(campaign, sut.ops());
    if draws.ops.is_empty() {
        return Ok(sut);
    }
    let mut runner = TestRunner::new_with_rng(draws.config.clone(), rng_for(campaign.seed, job));
    // Mutations draw from an RNG of their own: the generated cases stay those of the seed.
    let mut steer_rng = rng_for(campaign.seed, job | STEER_STREAM);
    let mut reference = crate::sut::ReferenceSut;
    let job_started = Instant::now();
    // The ops whose cases hung in this job.
    let mut hung = HashSet::new();
    // Job `j` takes batches j, j + jobs, j + 2 jobs, ...: the cases a job draws depend only on
    // the seed and the job count (all shards' jobs), never on timing.
    let jobs = campaign.jobs.max(1) as u64 * campaign.shard.count.max(1);
    for batch_index in (job..).step_by(jobs as usize) {
        let first = batch_index * BATCH as u64;
        let count = match campaign.cases {
            Some(total) if first >= total => break,
            Some(total) => (total - first).min(BATCH as u64) as usize,
            None => BATCH,
        };
        if shared.deadline.is_some_and(|d| Instant::now() >= d)
            || shared.stop.load(Ordering::Relaxed)
        {
            break;
        }
        // A hang its confirmation answered was a slow case: wait longer, and bench nothing.
        for op in slow.try_iter() {
            sut.slow(op);
            hung.remove(&op);
        }
        let batch_started = Instant::now();
        let shrinks_before = (shared.shrinking.load(Ordering::SeqCst) == 0)
            .then(|| shared.shrinks_started.load(Ordering::SeqCst));
        let rng = runner.rng().clone();
        let mut drawn = Vec::with_capacity(count);
        for n in first..first + count as u64 {
            drawn.push((draws.op(n), draws.tree(n, &mut runner)?.current()));
        }
        let steered = shared.corpus.as_ref().map_or_else(HashSet::new, |corpus| {
            steer::replace_share(corpus, &mut drawn, &mut steer_rng)
        });
        let sent = send(shared, &mut sut, &draws.ops, drawn, &mut hung, job_started)?;
        let ran = sent.iter().filter(|c| steered.contains(&c.index)).count();
        shared.steered.fetch_add(ran as u64, Ordering::Relaxed);
        if let Some(corpus) = &shared.corpus {
            for (op, input) in sut.take_novel() {
                corpus.add(op, input, &mut steer_rng);
            }
        }
        if let (Ok(Some(coverage)), Some(reached)) = (
            shared.coverage.lock().as_deref_mut().map(Option::as_mut),
            sut.coverage(),
        ) {
            coverage.merge(reached);
        }
        let count = sent.len();
        let batch: Vec<(Op, &Value)> = sent.iter().map(|c| (c.op, &c.input)).collect();
        let expected = reference.call(&batch)?;
        let companions = companion_answers(&mut sut, &batch, shared)?;
        if let Ok(mut seen) = shared.shapes.lock() {
            seen.extend(
                sent.iter()
                    .zip(&expected)
                    .map(|(c, answer)| (c.op, answer_shape(answer))),
            );
        }
        for (i, (case, expected)) in sent.iter().zip(&expected).enumerate() {
            let op = case.op;
            let mut violations = judge(op, &case.input, &case.answer, expected);
            if let Some(other) = companions.get(&i) {
                violations.extend(judge_companion(op, &case.answer, other));
            }
            record(shared, op, &violations);
            let Some(violation) = violations
                .iter()
                .find(|v| v.gate || campaign.strict)
                .or(violations.first())
            else {
                continue;
            };
            let signature = Signature::of(op, &case.input, &case.answer, expected, violation);
            // A known cause costs its count only: it is neither shrunk nor told apart further.
            let entry = campaign
                .baseline
                .as_ref()
                .filter(|_| violation.gate)
                .and_then(|b| b.position(op, violation.rule, &signature));
            let key = (
                op,
                violation.rule,
                violation.kind.clone(),
                signature.action,
                entry,
            );
            let mut findings = shared
                .findings
                .lock()
                .map_err(|_| anyhow::anyhow!("findings lock poisoned"))?;
            let slot = match findings.entry(key.clone()) {
                Entry::Occupied(mut found) => {
                    let found = found.get_mut();
                    found.hits += 1;
                    add_trigger(&mut found.triggers, &signature.features);
                    continue;
                }
                Entry::Vacant(slot) => slot,
            };
            let known = entry.and_then(|i| campaign.baseline.as_ref().map(|b| &b.known[i]));
            let target = signature.clone();
            // Listed at once, as found; the shrinker makes it smaller meanwhile.
            let mut finding = shrink::finding(
                op,
                violation.clone(),
                signature,
                case.input.clone(),
                case.answer.clone(),
                expected.clone(),
                campaign.seed,
                shared.started.elapsed().as_millis() as u64,
            );
            finding.id = finding_id(op, violation.rule, &finding.signature, known);
            finding.source = draws.source(first + case.index as u64);
            finding.triggers = vec![finding.signature.features.clone()];
            // A divergence fails no run without `--strict` and no baseline lists it: it is
            // listed as found (a real case, replayable) instead of costing a shrink of up to
            // `SHRINK_TIME`. (A hang is a gate failure: still confirmed.)
            let shrunk = violation.gate || campaign.strict;
            if !shrunk {
                finding.detail = format!(
                    "{} (not shrunk: a divergence fails no run without --strict)",
                    finding.detail
                );
            }
            slot.insert(finding);
            drop(findings);
            shared.progress.findings.fetch_add(1, Ordering::Relaxed);
            if entry.is_some() || !shrunk {
                continue;
            }
            // A shrinker that is gone (it failed) is reported when it is joined.
            let _ = shrinks.send(ShrinkRequest {
                key,
                signature: target,
                violation: violation.clone(),
                rng: rng.clone(),
                first,
                index: case.index,
                hang: case.answer.is_hang(),
                wait: sut.calibrated(op).map_or(Wait::Calibrated, Wait::At),
                steered: steered.contains(&case.index).then(|| case.input.clone()),
            });
        }
        let all_running = shared.running.load(Ordering::SeqCst) == campaign.jobs.max(1) as u64;
        if all_running
            && shrinks_before.is_some_and(|n| n == shared.shrinks_started.load(Ordering::SeqCst))
        {
            shared
                .steady_cases
                .fetch_add(count as u64, Ordering::Relaxed);
            shared.steady_job_us.fetch_add(
                batch_started.elapsed().as_micros() as u64,
                Ordering::Relaxed,
            );
        }
    }
    Ok(sut)
}

/// One case sent and answered: its place among the batch's draws, its op, input and answer.
struct Sent {
    index: usize,
    op: Op,
    input: Value,
    answer: Answer,
}

/// Sends the drawn cases, counting each as its answer arrives; returns those answered (all of
/// them unless the deadline passed). A hang breaks the call off: before the rest goes, in a
/// campaign with a deadline, the cases of ops that hung are left out while the SUT's hangs have
/// cost more than `HANG_SHARE` of the job's time and some of `ops` has not hung (they were drawn
/// all the same, so later batches' cases stay the same).
fn send<S: Sut>(
    shared: &Shared<'_>,
    sut: &mut S,
    ops: &[Op],
    drawn: Vec<(Op, Value)>,
    hung: &mut HashSet<Op>,
    job_started: Instant,
) -> Result<Vec<Sent>> {
    let progress = shared.progress;
    let mut sent = Vec::with_capacity(drawn.len());
    let mut rest: Vec<(usize, Op, Value)> = drawn
        .into_iter()
        .enumerate()
        .map(|(index, (op, input))| (index, op, input))
        .collect();
    let mut left_out = BTreeMap::<Op, u64>::new();
    while !rest.is_empty() {
        // Only under `--time` (a campaign of N cases judges N cases) and while some op has not
        // hung (when every op hangs, there is nothing else to run).
        if shared.deadline.is_some()
            && ops.iter().any(|op| !hung.contains(op))
            && !hung.is_empty()
            && sut.hang_cost() > job_started.elapsed().mul_f64(HANG_SHARE)
        {
            rest.retain(|(_, op, _)| {
                let hangs = hung.contains(op);
                if hangs {
                    *left_out.entry(*op).or_default() += 1;
                }
                !hangs
            });
        }
        let batch: Vec<(Op, &Value)> = rest.iter().map(|(_, op, input)| (*op, input)).collect();
        let answers = sut.call_until(&batch, shared.deadline, Wait::Calibrated, &mut |answer| {
            progress.cases.fetch_add(1, Ordering::Relaxed);
            progress.fault(answer);
            if answer.is_hang() {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })?;
        let complete = answers.len() == batch.len();
        let unsent = rest.split_off(answers.len());
        for ((index, op, input), answer) in rest.into_iter().zip(answers) {
            if answer.is_hang() {
                hung.insert(op);
            }
            sent.push(Sent {
                index,
                op,
                input,
                answer,
            });
        }
        // Broken off at a hang, the rest goes next; at the deadline, it is dropped.
        rest = unsent;
        if !complete && shared.deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
    }
    if !left_out.is_empty()
        && let Ok(mut tallies) = shared.tallies.lock()
    {
        for (op, n) in left_out {
            tallies.entry(op).or_default().left_out += n;
        }
    }
    Ok(sent)
}

/// `hits` cases of `op` counted as hangs were slow cases: they pass (a later answer is not
/// judged; the SUT answered in time by the full time-out).
pub(super) fn withdraw_hangs(shared: &Shared<'_>, op: Op, hits: u64) {
    shared.progress.findings.fetch_sub(1, Ordering::Relaxed);
    shared.progress.failed.fetch_sub(hits, Ordering::Relaxed);
    shared.progress.slow.fetch_add(hits, Ordering::Relaxed);
    if let Ok(mut tallies) = shared.tallies.lock() {
        let tally = tallies.entry(op).or_default();
        tally.failed -= hits.min(tally.failed);
        tally.passed += hits;
        if let Some(n) = tally.rules.get_mut(&Rule::B1) {
            *n -= hits.min(*n);
            if *n == 0 {
                tally.rules.remove(&Rule::B1);
            }
        }
    }
}

/// The SUT's answers to the batch's metamorphic companions, by case index (one extra batch,
/// cut at the campaign's deadline like the cases).
fn companion_answers(
    sut: &mut impl Sut,
    batch: &[(Op, &Value)],
    shared: &Shared<'_>,
) -> Result<HashMap<usize, Answer>> {
    let pairs: Vec<(usize, Op, Value)> = batch
        .iter()
        .enumerate()
        .filter_map(|(i, (op, input))| companion(*op, input).map(|c| (i, *op, c)))
        .collect();
    if pairs.is_empty() {
        return Ok(HashMap::new());
    }
    let batch: Vec<(Op, &Value)> = pairs.iter().map(|(_, op, c)| (*op, c)).collect();
    let answers = sut.call_until(&batch, shared.deadline, Wait::Calibrated, &mut |answer| {
        shared.progress.fault(answer);
        ControlFlow::Continue(())
    })?;
    Ok(pairs.iter().map(|(i, ..)| *i).zip(answers).collect())
}

fn record(shared: &Shared<'_>, op: Op, violations: &[Violation]) {
    let Ok(mut tallies) = shared.tallies.lock() else {
        return;
    };
    let tally = tallies.entry(op).or_default();
    tally.cases += 1;
    let gate = violations.iter().any(|v| v.gate);
    if gate {
        tally.failed += 1;
        shared.progress.failed.fetch_add(1, Ordering::Relaxed);
    } else if violations.is_empty() {
        tally.passed += 1;
    } else {
        tally.divergent += 1;
    }
    for v in violations {
        *tally.rules.entry(v.rule).or_default() += 1;
    }
}
