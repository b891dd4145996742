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
mod config;
pub mod cpu;
mod finding;
pub mod impact;
mod jobs;
mod outcome;
mod progress;
pub mod shrink;
mod shrinker;
pub mod steer;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};

use crate::protocol::Op;
use crate::protocol::coverage::Reached;
use crate::sut::Sut;
use cpu::CpuClock;
use impact::DEFAULT_FAIL_ON;
use steer::Corpus;

pub use config::{Campaign, Input, Shard, Steer};
pub use finding::{Finding, Standing};
pub use outcome::{Outcome, Sample, Steering, Tally};
pub use progress::{Faults, Progress};
pub use shrink::{finding_id, replay};

use jobs::{Shared, job_loop};
use shrinker::{Spare, shrink_loop};

/// First interval between two progress samples; it doubles whenever the series is thinned.
const SAMPLE_EVERY: Duration = Duration::from_millis(250);
/// Samples kept at most: a long campaign keeps every other sample and samples half as often.
const MAX_SAMPLES: usize = 512;

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
