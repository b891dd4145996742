//! The differential runner: generate cases, run them through the reference and a SUT, judge,
//! shrink each distinct failure to a minimal input, and collect findings for the report.
//!
//! Deterministic for a given seed and job count: job `j` draws from its own RNG seeded with
//! `(seed, j)`. Cases are sent in batches so a subprocess SUT is pipelined. A failure is
//! deduplicated before it is shrunk, so a bug found ten thousand times is shrunk once: by (op,
//! rule, kind, what the SUT did, the baseline entry that knows it). A case no entry knows is
//! never counted under a known finding, so a second bug under a known rule is a finding of its
//! own; the features of a finding's minimal input (`oracle::signature`) are what the next
//! baseline entry drafted from it matches. The keys depend on the cases alone, not on timing.
//!
//! While the jobs run, the calling thread samples the progress counters into a bounded time
//! series (`Outcome::timeline`) for the report's throughput and coverage plots.

pub mod baseline;
pub mod cpu;
pub mod impact;
pub mod shrink;
pub mod steer;

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::ops::ControlFlow;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use proptest::strategy::{Just, Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::oracle::judge::{Violation, companion, judge, judge_companion};
use crate::oracle::signature::{Action, Signature, add_trigger, within};
use crate::protocol::coverage::{Reached, UnitCoverage};
use crate::protocol::{Answer, Fault, Op};
use crate::rule::Rule;
use crate::sut::{Sut, Wait};
use baseline::{Baseline, Judgement, Standing};
use cpu::{CpuClock, CpuUse};
use impact::{Class, Evidence, Impact, Profile, derive};
use shrink::Shrunk;
use steer::Corpus;

pub use shrink::{finding_id, replay};

/// The classes that fail a campaign unless `--fail-on` says otherwise: a spec finding is a
/// divergence, never a gate failure.
pub const DEFAULT_FAIL_ON: [Class; 2] = [Class::Bug, Class::Hardening];

/// Cases sent to the SUT at once.
const BATCH: usize = 128;
/// The share of a job's time its SUT's hangs may cost before the cases of the ops that hung are
/// left out of its next batches (until the share falls below it again): a hang already found
/// does not eat the campaign, and the other ops keep most of their rate.
const HANG_SHARE: f64 = 1.0 / 3.0;
/// First interval between two progress samples; it doubles whenever the series is thinned.
const SAMPLE_EVERY: Duration = Duration::from_millis(250);
/// Samples kept at most: a long campaign keeps every other sample and samples half as often.
const MAX_SAMPLES: usize = 512;

/// What a campaign runs.
#[derive(Debug, Clone)]
pub struct Campaign {
    pub ops: Vec<Op>,
    pub cases: Option<u64>,
    pub time: Option<Duration>,
    pub seed: u64,
    pub jobs: usize,
    pub strict: bool,
    /// End the campaign once a first gate failure is found and shrunk (mutant kill runs).
    pub stop_on_gate: bool,
    /// Which part of the cases this process runs (`Shard::WHOLE` for all of them).
    pub shard: Shard,
    /// Known findings: theirs are counted and listed as found, not shrunk again.
    pub baseline: Option<Baseline>,
    /// When not empty, the campaign runs exactly these cases of its one op, in order (`cases`
    /// is their count), instead of drawing any: real servers' results (`conform --inputs`).
    pub inputs: Vec<Input>,
    /// Coverage steering (`campaign/steer.rs`): a share of each batch mutated from the inputs
    /// that reached new runtime coverage; with a folder, the corpus kept there across runs.
    pub steer: Option<Steer>,
}

/// How a campaign is steered by the runtime's coverage.
#[derive(Debug, Clone, Default)]
pub struct Steer {
    /// `--corpus DIR`: loaded first, new entries written there at the end.
    pub corpus: Option<std::path::PathBuf>,
}

/// One case of a fixed list: its input and where it came from (a finding it shows first names
/// it). Not shrunk: it is the case as the server sent it.
#[derive(Debug, Clone)]
pub struct Input {
    pub input: Value,
    pub source: String,
}

/// Shard `index` of `count` (0-based): with `jobs` jobs here, this process runs jobs
/// `index * jobs .. (index + 1) * jobs` of a campaign of `count * jobs` jobs. The shards of one
/// seed and job count draw disjoint cases that together are exactly the cases of the unsharded
/// campaign with `count * jobs` jobs, whatever machine runs each shard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: u64,
    pub count: u64,
}

impl Shard {
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };

    /// `K/N` with 1 <= K <= N, as `--shard` takes it.
    pub fn parse(text: &str) -> Result<Shard> {
        let parsed = text.split_once('/').and_then(|(k, n)| {
            Some((k.trim().parse::<u64>().ok()?, n.trim().parse::<u64>().ok()?))
        });
        match parsed {
            Some((k, n)) if (1..=n).contains(&k) => Ok(Shard {
                index: k - 1,
                count: n,
            }),
            _ => anyhow::bail!("a shard is K/N with 1 <= K <= N, not {text:?}"),
        }
    }
}

/// One distinct bug: the minimal input that shows it, both answers, and the rule.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Finding {
    /// Stable id: op, rule and a hash of the signature.
    pub id: String,
    pub op: Op,
    pub rule: Rule,
    pub gate: bool,
    pub kind: String,
    pub detail: String,
    /// What tells its cause from others under the rule: kind, what the SUT did and the
    /// features of its (minimal) input (reports from before signatures: the default).
    #[serde(default)]
    pub signature: Signature,
    /// The fewest features each of its cases needed: the minimal sets (under inclusion) of its
    /// cases' features and its minimal input's (`signature::add_trigger`). A baseline drafted
    /// from the run has an entry per set, so it covers every case the run had.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub triggers: Vec<Vec<String>>,
    /// The cause it is counted under: its baseline entry's, or one drafted from its signature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<String>,
    /// How many generated cases hit this cause before dedup.
    pub hits: u64,
    pub input: Value,
    pub sut: Answer,
    pub reference: Answer,
    /// The seed and job whose case was shrunk to `input`.
    pub seed: u64,
    /// Milliseconds from the campaign's start to the first case that hit it.
    pub first_seen_ms: u64,
    /// Where the input came from, when the campaign ran a list of inputs (`Campaign::inputs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// What it means to the runtime, derived from its evidence and the SUT's profile
    /// (`Outcome::classify`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub impact: Option<Impact>,
    /// Known to the campaign's baseline, or new (`Outcome::judge_baseline`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<Standing>,
}

/// Counts per op and rule, for the report's matrix.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct Tally {
    pub cases: u64,
    pub passed: u64,
    pub failed: u64,
    pub divergent: u64,
    /// Cases drawn but not sent: the op hung, and the SUT's hangs had used `HANG_SHARE` of the
    /// job's time.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub left_out: u64,
    /// Gate failures and divergences per rule id.
    pub rules: BTreeMap<Rule, u64>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The campaign's state at one moment, for the report's plots.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Sample {
    pub elapsed_ms: u64,
    pub cases: u64,
    pub failed: u64,
    pub findings: u64,
    /// Distinct verdicts seen: (op, pass) once an op had a case that broke nothing, and
    /// (op, rule) once the rule was broken on that op (the report matrix's ✗ and ≠ cells).
    pub verdict_cells: u64,
    /// Distinct (op, shape of the reference's answer) pairs seen; see `answer_shape`. What the
    /// generated inputs have made the reference do, independent of the SUT.
    pub reference_shapes: u64,
    /// The runtime's own lines and branches reached (the protocol's coverage extension).
    #[serde(default)]
    pub runtime_lines: u64,
    #[serde(default)]
    pub runtime_branches: u64,
}

#[derive(Debug, Serialize)]
pub struct Outcome {
    pub sut: String,
    pub seed: u64,
    pub elapsed_ms: u128,
    /// Jobs that ran the campaign, and the job time they spent shrinking, summed.
    pub jobs: u64,
    pub shrink_ms: u64,
    /// Cases of the batches during which no job was shrinking, and those batches' job time
    /// summed: what [`Outcome::steady_rate`] reads.
    pub steady_cases: u64,
    pub steady_job_ms: u64,
    pub per_op: BTreeMap<Op, Tally>,
    pub findings: Vec<Finding>,
    /// The SUT's faults, shrinking included, and what its hangs cost.
    pub faults: Faults,
    /// The CPU the harness and the SUT processes used (`campaign::cpu`).
    pub cpu: CpuUse,
    /// The impact classes whose gate findings fail the campaign (`--fail-on`).
    pub fail_on: Vec<Class>,
    /// The findings against the campaign's baseline, if it had one.
    pub baseline: Option<Judgement>,
    /// Progress over time, evenly spaced, at most `MAX_SAMPLES`; the last one is the final state.
    pub timeline: Vec<Sample>,
    /// The runtime's coverage of its units, when its SUT offers the coverage extension.
    pub coverage: Option<Vec<UnitCoverage>>,
    /// What steering did, for a steered campaign.
    pub steering: Option<Steering>,
}

/// A steered campaign's corpus at its end, per op, and how many of its cases were mutants.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Steering {
    pub corpus: BTreeMap<Op, u64>,
    pub steered_cases: u64,
}

impl Outcome {
    pub fn cases(&self) -> u64 {
        self.per_op.values().map(|t| t.cases).sum()
    }

    /// Cases drawn and not sent because their op hung (`Tally::left_out`).
    pub fn left_out(&self) -> u64 {
        self.per_op.values().map(|t| t.left_out).sum()
    }

    /// Cases that fail the gate (divergences count too under `strict`).
    pub fn failed(&self, strict: bool) -> u64 {
        self.per_op
            .values()
            .map(|t| t.failed + if strict { t.divergent } else { 0 })
            .sum()
    }

    /// Whether the campaign passes: no finding fails it (`Outcome::fails`).
    pub fn passes(&self, strict: bool) -> bool {
        !self.findings.iter().any(|f| self.fails(f, strict))
    }

    /// Whether `finding` fails the campaign: a gate finding its baseline does not know, of a
    /// class in `fail_on` (or not classed), or under `strict` a divergence.
    pub fn fails(&self, finding: &Finding, strict: bool) -> bool {
        if finding.baseline == Some(Standing::Known) {
            false
        } else if finding.gate {
            finding
                .impact
                .as_ref()
                .is_none_or(|i| self.fail_on.contains(&i.class))
        } else {
            strict
        }
    }

    /// Classes every finding by its evidence and `profile`.
    pub fn classify(&mut self, profile: &Profile) {
        for f in &mut self.findings {
            let action = f.signature.action;
            let evidence = Evidence {
                kept_as: action.keeps_information().then(|| action.as_str()),
                ..Evidence::of_case(f.op, &f.input, &f.sut)
            };
            f.impact = Some(derive(f.rule, &evidence, profile));
            f.cause
                .get_or_insert_with(|| baseline::drafted_cause(&f.signature));
        }
    }

    /// Judges the findings against `baseline` (file name `file`, `Baseline::judge`).
    pub fn judge_baseline(&mut self, baseline: &Baseline, file: &str) {
        let ops = self.per_op.keys().copied().collect();
        self.baseline = Some(baseline.judge(file, &mut self.findings, &ops));
    }

    /// Cases per second over the whole run, shrinking included.
    pub fn rate(&self) -> f64 {
        self.cases() as f64 * 1000.0 / self.elapsed_ms.max(1) as f64
    }

    /// Cases per second while every job generated, ran and judged cases, none shrinking: the
    /// rate a long campaign settles at (a short one against a SUT with many distinct findings
    /// spends most of its time shrinking each once, one case at a time). Batches that overlap
    /// any shrinking, or end after a job has finished, are left out: a job running beside a
    /// shrinking one, or alone, has more of the machine. None when no batch was steady.
    pub fn steady_rate(&self) -> Option<f64> {
        (self.steady_job_ms > 0).then(|| {
            self.steady_cases as f64 * 1000.0 * self.jobs.max(1) as f64 / self.steady_job_ms as f64
        })
    }
}

/// Live counters for a progress display, each moved as the SUT answers (not when a batch ends).
#[derive(Default)]
pub struct Progress {
    pub cases: AtomicU64,
    pub failed: AtomicU64,
    pub findings: AtomicU64,
    /// Faults seen (cases, companions and shrinking steps alike): each one restarts the SUT.
    pub hangs: AtomicU64,
    pub crashes: AtomicU64,
    /// Garbled answers (`protocol` faults).
    pub garbled: AtomicU64,
    /// Time the waits that ran out cost, summed over jobs (the restarts after them not counted).
    pub hang_ms: AtomicU64,
    /// Cases first counted as hangs whose finding, sent again with the full time-out, was
    /// answered: slow cases, withdrawn.
    pub slow: AtomicU64,
    /// Answers after the calibrated wait, within the grace a restart's cost bought them: counted
    /// when each SUT is done (`Sut::late_answers`).
    pub late: AtomicU64,
}

impl Progress {
    /// Counts `answer` if it is a fault.
    pub(crate) fn fault(&self, answer: &Answer) {
        let Answer::Fault(fault) = answer else {
            return;
        };
        match fault {
            Fault::Hang { timeout_ms, .. } => {
                self.hangs.fetch_add(1, Ordering::Relaxed);
                self.hang_ms.fetch_add(*timeout_ms, Ordering::Relaxed);
            }
            Fault::Crash { .. } => {
                self.crashes.fetch_add(1, Ordering::Relaxed);
            }
            Fault::Protocol { .. } => {
                self.garbled.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// The faults so far, for the report.
    pub fn faults(&self) -> Faults {
        Faults {
            hangs: self.hangs.load(Ordering::Relaxed),
            hang_ms: self.hang_ms.load(Ordering::Relaxed),
            crashes: self.crashes.load(Ordering::Relaxed),
            garbled: self.garbled.load(Ordering::Relaxed),
            slow: self.slow.load(Ordering::Relaxed),
            late: self.late.load(Ordering::Relaxed),
        }
    }
}

/// The SUT's faults over a campaign (each one cost a restart) and the time its hangs cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Faults {
    pub hangs: u64,
    pub hang_ms: u64,
    pub crashes: u64,
    pub garbled: u64,
    /// Cases that ran out at a calibrated time-out but were answered with the full one.
    #[serde(default)]
    pub slow: u64,
    /// Answers after the calibrated time-out, within its grace: slow answers that cost no
    /// restart (not faults).
    #[serde(default)]
    pub late: u64,
}

impl Faults {
    pub fn restarts(&self) -> u64 {
        self.hangs + self.crashes + self.garbled
    }
}

impl std::ops::AddAssign for Faults {
    fn add_assign(&mut self, other: Faults) {
        self.hangs += other.hangs;
        self.hang_ms += other.hang_ms;
        self.crashes += other.crashes;
        self.garbled += other.garbled;
        self.slow += other.slow;
        self.late += other.late;
    }
}

struct Shared<'a> {
    campaign: &'a Campaign,
    deadline: Option<Instant>,
    findings: Mutex<HashMap<Key, Finding>>,
    tallies: Mutex<BTreeMap<Op, Tally>>,
    /// `answer_shape` of every reference answer so far, per op.
    shapes: Mutex<HashSet<(Op, u64)>>,
    progress: &'a Progress,
    started: Instant,
    /// Set when `stop_on_gate` is asked and a gate failure was found: every job stops.
    stop: std::sync::atomic::AtomicBool,
    /// Job time spent shrinking, summed over jobs, in microseconds.
    shrink_us: AtomicU64,
    /// Jobs shrinking now, and shrinks started so far: a batch is steady when no job was
    /// shrinking at its start, none started before its end and every job was still running
    /// (a job alone at the end has the whole machine).
    shrinking: AtomicU64,
    running: AtomicU64,
    shrinks_started: AtomicU64,
    steady_cases: AtomicU64,
    steady_job_us: AtomicU64,
    /// The runtime's coverage over every job's SUT, if they offer the extension.
    coverage: Mutex<Option<Reached>>,
    /// The steering corpus, when the campaign is steered, and the mutants sent so far.
    corpus: Option<Corpus>,
    steered: AtomicU64,
}

/// Runs `campaign` with one SUT per job, made by `make_sut`.
pub fn run<S: Sut>(
    campaign: &Campaign,
    make_sut: impl Fn() -> Result<S> + Sync,
    progress: &Progress,
) -> Result<Outcome> {
    let started = Instant::now();
    let shared = Shared {
        campaign,
        deadline: campaign.time.map(|t| started + t),
        findings: Mutex::new(HashMap::new()),
        tallies: Mutex::new(BTreeMap::new()),
        shapes: Mutex::new(HashSet::new()),
        progress,
        started,
        stop: std::sync::atomic::AtomicBool::new(false),
        shrink_us: AtomicU64::new(0),
        shrinking: AtomicU64::new(0),
        running: AtomicU64::new(campaign.jobs.max(1) as u64),
        shrinks_started: AtomicU64::new(0),
        steady_cases: AtomicU64::new(0),
        steady_job_us: AtomicU64::new(0),
        coverage: Mutex::new(None),
        corpus: match &campaign.steer {
            Some(steer) => Some(Corpus::load(steer.corpus.as_deref())?),
            None => None,
        },
        steered: AtomicU64::new(0),
    };
    let cpu = CpuClock::now();
    let suts = start_suts(&make_sut, campaign.jobs.max(1))?;
    if let (Ok(mut coverage), Some((sut, _))) = (shared.coverage.lock(), suts.first()) {
        *coverage = sut.coverage().cloned();
    }
    let name = suts
        .first()
        .map(|(s, _)| s.name().to_string())
        .unwrap_or_default();
    // Each job holds a sender it never uses: when the last job ends, however it ends, the
    // channel disconnects and the sampler stops at once instead of at its next tick.
    let (running, all_done) = std::sync::mpsc::channel::<std::convert::Infallible>();
    let mut timeline = std::thread::scope(|scope| -> Result<Vec<Sample>> {
        let mut handles = Vec::new();
        for (job, (sut, start_up)) in suts.into_iter().enumerate() {
            let shared = &shared;
            let make_sut = &make_sut;
            let (shrinks, requests) = std::sync::mpsc::channel();
            let (slow, slow_ops) = std::sync::mpsc::channel();
            // A job done with its cases hands its SUT to its shrinker.
            let (hand_over, handed) = std::sync::mpsc::channel();
            // Generated inputs are cloned, shrunk and dropped the ordinary, recursive way.
            let thread = |name: String| {
                std::thread::Builder::new()
                    .name(name)
                    .stack_size(crate::generate::corners::nesting::JOB_STACK)
            };
            let running_job = running.clone();
            handles.push(
                thread(format!("campaign job {job}"))
                    .spawn_scoped(scope, move || {
                        let _running = running_job;
                        let first = campaign.shard.index * campaign.jobs.max(1) as u64;
                        let result = job_loop(shared, first + job as u64, sut, &shrinks, &slow_ops);
                        shared.running.fetch_sub(1, Ordering::SeqCst);
                        let _ = hand_over.send(result?);
                        Ok(())
                    })
                    .context("cannot start a campaign job")?,
            );
            let running_shrinker = running.clone();
            handles.push(
                thread(format!("campaign shrinker {job}"))
                    .spawn_scoped(scope, move || {
                        let _running = running_shrinker;
                        // Without a case count the job runs to the deadline: nothing to wait for.
                        let start_up = if campaign.cases.is_some() {
                            start_up
                        } else {
                            Duration::ZERO
                        };
                        let spare = Spare { handed, start_up };
                        shrink_loop(shared, make_sut, &spare, &requests, &slow)
                    })
                    .context("cannot start a campaign shrinker")?,
            );
        }
        drop(running);
        let timeline = sample_until_done(&shared, started, &all_done);
        for handle in handles {
            handle
                .join()
                .map_err(|_| anyhow::anyhow!("a campaign job panicked"))??;
        }
        Ok(timeline)
    })?;
    timeline.push(sample(&shared, started));
    if let Some(corpus) = &shared.corpus {
        corpus.save()?;
    }
    let mut findings: Vec<Finding> = shared
        .findings
        .into_inner()
        .unwrap_or_default()
        .into_values()
        .collect();
    findings.sort_by(|a, b| {
        b.gate
            .cmp(&a.gate)
            .then_with(|| (a.op, a.rule, &a.id).cmp(&(b.op, b.rule, &b.id)))
    });
    Ok(Outcome {
        sut: name,
        seed: campaign.seed,
        elapsed_ms: started.elapsed().as_millis(),
        jobs: campaign.jobs.max(1) as u64,
        shrink_ms: shared.shrink_us.into_inner() / 1000,
        steady_cases: shared.steady_cases.into_inner(),
        steady_job_ms: shared.steady_job_us.into_inner() / 1000,
        per_op: shared.tallies.into_inner().unwrap_or_default(),
        findings,
        faults: progress.faults(),
        // Every SUT process was stopped and reaped when its job or shrinker ended.
        cpu: cpu.used_since(),
        fail_on: DEFAULT_FAIL_ON.to_vec(),
        baseline: None,
        timeline,
        coverage: shared
            .coverage
            .into_inner()
            .ok()
            .flatten()
            .map(|c| c.report()),
        steering: shared.corpus.as_ref().map(|corpus| Steering {
            corpus: Op::ALL
                .into_iter()
                .map(|op| (op, corpus.len(op) as u64))
                .filter(|&(_, n)| n > 0)
                .collect(),
            steered_cases: shared.steered.load(Ordering::Relaxed),
        }),
    })
}

/// Starts one SUT per job, side by side: a runtime whose imports take seconds costs them once
/// per campaign, not once per job. Each with how long it took to start.
fn start_suts<S: Sut>(
    make_sut: &(impl Fn() -> Result<S> + Sync),
    jobs: usize,
) -> Result<Vec<(S, Duration)>> {
    std::thread::scope(|scope| {
        let starting: Vec<_> = (0..jobs)
            .map(|_| {
                scope.spawn(|| {
                    let started = Instant::now();
                    make_sut().map(|sut| (sut, started.elapsed()))
                })
            })
            .collect();
        starting
            .into_iter()
            .map(|s| {
                s.join()
                    .map_err(|_| anyhow::anyhow!("starting a SUT panicked"))?
            })
            .collect()
    })
}

/// Samples progress every `SAMPLE_EVERY` (doubled each time the series is thinned) until every
/// job has ended.
fn sample_until_done(
    shared: &Shared<'_>,
    started: Instant,
    all_done: &Receiver<std::convert::Infallible>,
) -> Vec<Sample> {
    let mut every = SAMPLE_EVERY;
    let mut timeline = Vec::new();
    while let Err(RecvTimeoutError::Timeout) = all_done.recv_timeout(every) {
        timeline.push(sample(shared, started));
        if timeline.len() >= MAX_SAMPLES {
            // Keep every second sample: the series stays evenly spaced at twice the interval.
            timeline = timeline.into_iter().skip(1).step_by(2).collect();
            every *= 2;
        }
    }
    timeline
}

fn sample(shared: &Shared<'_>, started: Instant) -> Sample {
    let verdict_cells = shared.tallies.lock().map_or(0, |tallies| {
        tallies
            .values()
            .map(|t| u64::from(t.passed > 0) + t.rules.len() as u64)
            .sum()
    });
    let progress = shared.progress;
    let (runtime_lines, runtime_branches) = shared
        .coverage
        .lock()
        .ok()
        .and_then(|c| c.as_ref().map(Reached::counts))
        .unwrap_or_default();
    Sample {
        elapsed_ms: started.elapsed().as_millis() as u64,
        cases: progress.cases.load(Ordering::Relaxed),
        failed: progress.failed.load(Ordering::Relaxed),
        findings: progress.findings.load(Ordering::Relaxed),
        verdict_cells,
        reference_shapes: shared.shapes.lock().map_or(0, |s| s.len() as u64),
        runtime_lines,
        runtime_branches,
    }
}

/// A hash of what the reference decided, without the data it carried: objects keep their keys,
/// arrays collapse runs of equal element shapes (one text block or five is one shape), booleans
/// keep their value, strings are erased except the protocol fields that name a class (`type`,
/// `mimeType`, `reason`), numbers keep only whether they are zero. A refusal is one shape.
fn answer_shape(answer: &Answer) -> u64 {
    fn walk(key: Option<&str>, value: &Value, h: &mut std::hash::DefaultHasher) {
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

struct ShrinkRequest {
    key: Key,
    violation: Violation,
    /// What the SUT did and the case's features: shrinking keeps the one, never adds to the other.
    signature: Signature,
    rng: TestRng,
    /// The number of the batch's first case, and the case's place among the batch's draws.
    first: u64,
    index: usize,
    /// The case hung: the shrinker confirms it with the full time-out first.
    hang: bool,
    /// The job's calibrated time-out for the op: the shrinker's own SUT has not measured it.
    wait: Wait,
    /// A steered case's input (a mutant is not drawn again): shrunk by whole-part edits only.
    steered: Option<Value>,
}

/// The ops a job runs and where their cases come from: proptest strategies with the
/// configuration their draws use, or the campaign's fixed inputs.
struct Draws<'a> {
    ops: Vec<Op>,
    strategies: HashMap<Op, proptest::strategy::BoxedStrategy<Value>>,
    config: Config,
    inputs: &'a [Input],
}

impl<'a> Draws<'a> {
    fn new(campaign: &'a Campaign, offered: &[Op]) -> Self {
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

    fn op(&self, n: u64) -> Op {
        self.ops[(n % self.ops.len() as u64) as usize]
    }

    fn tree(&self, n: u64, runner: &mut TestRunner) -> Result<Box<dyn ValueTree<Value = Value>>> {
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
    fn source(&self, n: u64) -> Option<String> {
        self.inputs.get(n as usize).map(|i| i.source.clone())
    }
}

fn job_loop<S: Sut>(
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
            let known_cause = entry.and_then(|i| {
                campaign
                    .baseline
                    .as_ref()
                    .map(|b| b.known[i].cause.as_str())
            });
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
            finding.id = finding_id(op, violation.rule, &finding.signature, known_cause);
            finding.source = draws.source(first + case.index as u64);
            finding.triggers = vec![finding.signature.features.clone()];
            slot.insert(finding);
            drop(findings);
            shared.progress.findings.fetch_add(1, Ordering::Relaxed);
            if entry.is_some() {
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

/// The SUT a job hands its shrinker when it is done with its cases, and how long that SUT took
/// to start.
struct Spare<S> {
    handed: Receiver<S>,
    start_up: Duration,
}

/// A job's shrinker: shrinks the job's new findings one after the other, while the job goes on.
/// Its SUT is the job's, when the job is done within the time a SUT of its own would take to
/// start (ski rental: a short campaign pays no second start-up, a long one at most twice it),
/// else one of its own. A hang is confirmed with the full time-out
/// first; one answered then was a slow case: its finding and verdicts are withdrawn and the job
/// told to wait longer for the op. After the campaign's deadline a finding is left as found.
/// Counts the slow answers of every SUT it ends with.
fn shrink_loop<S: Sut>(
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

/// `hits` cases of `op` counted as hangs were slow cases: they pass (a later answer is not
/// judged; the SUT answered in time by the full time-out).
fn withdraw_hangs(shared: &Shared<'_>, op: Op, hits: u64) {
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
