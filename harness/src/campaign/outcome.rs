//! What a campaign found and measured: findings, tallies per op, the progress timeline, the
//! gate's verdict and the baseline's judgement.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::baseline::{self, Baseline, Judgement};
use super::cpu::CpuUse;
use super::finding::Finding;
use super::finding::Standing;
use super::impact::{Class, Evidence, Profile, derive};
use super::progress::Faults;
use crate::protocol::Op;
use crate::protocol::coverage::UnitCoverage;
use crate::rule::Rule;

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
