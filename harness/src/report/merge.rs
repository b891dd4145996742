//! `normfuzz merge-reports`: the campaign reports of the shards of one run (`conform --shard
//! K/N`, same seed, cases and jobs) read back and joined into the outcome of the whole run, which
//! `write` then renders like any campaign. A model: it imports no renderer.

use std::path::Path;

use anyhow::{Context, Result, bail};

use super::json_file::read_json;
use crate::campaign::{Finding, Outcome, Sample, Tally};
use crate::protocol::coverage;
use crate::report::upstream::RuntimeId;

/// One campaign report as read back: the outcome and how it was run.
pub struct Part {
    pub outcome: Outcome,
    pub command: String,
    pub strict: bool,
    /// The matrix runtime the SUT is, when the report names one.
    pub runtime: Option<RuntimeId>,
}

/// Reads the campaign report in `dir` (`index.json` and the finding files it lists).
pub fn read(dir: &Path) -> Result<Part> {
    let path = dir.join("index.json");
    let index = read_json(&path)?;
    if index["kind"] != "conform" {
        bail!(
            "{} is not a campaign report (kind {})",
            path.display(),
            index["kind"]
        );
    }
    let field = |name: &str| {
        index
            .get(name)
            .with_context(|| format!("{} has no `{name}`", path.display()))
    };
    let mut findings = Vec::new();
    for entry in field("findings")?.as_array().into_iter().flatten() {
        let file = entry["file"]
            .as_str()
            .with_context(|| format!("{}: a finding names no file", path.display()))?;
        let file = dir.join(file);
        let finding: Finding = serde_json::from_value(read_json(&file)?)
            .with_context(|| format!("{} is not a finding", file.display()))?;
        findings.push(finding);
    }
    let outcome = Outcome {
        sut: serde_json::from_value(field("sut")?.clone())?,
        seed: serde_json::from_value(field("seed")?.clone())?,
        elapsed_ms: serde_json::from_value::<u64>(field("elapsedMs")?.clone())?.into(),
        // Reports written before these were recorded: one job, no shrinking counted.
        jobs: index.get("jobs").and_then(|v| v.as_u64()).unwrap_or(1),
        shrink_ms: index.get("shrinkMs").and_then(|v| v.as_u64()).unwrap_or(0),
        steady_cases: index
            .get("steadyCases")
            .and_then(|v| v.as_u64())
            .unwrap_or(0),
        steady_job_ms: index
            .get("steadyJobMs")
            .and_then(|v| v.as_u64())
            .unwrap_or(0),
        per_op: serde_json::from_value(field("perOp")?.clone())?,
        findings,
        faults: serde_json::from_value(index.get("faults").cloned().unwrap_or_default())
            .unwrap_or_default(),
        // Reports written before it was measured: none.
        cpu: serde_json::from_value(index.get("cpu").cloned().unwrap_or_default())
            .unwrap_or_default(),
        fail_on: crate::campaign::impact::FailOn::of_index(&index)?,
        baseline: match index.get("baseline") {
            Some(judged) if !judged.is_null() => Some(serde_json::from_value(judged.clone())?),
            _ => None,
        },
        timeline: serde_json::from_value(field("timeline")?.clone())?,
        coverage: serde_json::from_value(index.get("coverage").cloned().unwrap_or_default())
            .with_context(|| format!("{}: `coverage` is not a list of units", path.display()))?,
        steering: serde_json::from_value(index.get("steering").cloned().unwrap_or_default())
            .with_context(|| {
                format!(
                    "{}: `steering` is not corpus and steeredCases",
                    path.display()
                )
            })?,
    };
    Ok(Part {
        outcome,
        command: serde_json::from_value(field("command")?.clone())?,
        strict: serde_json::from_value(field("strict")?.clone())?,
        runtime: serde_json::from_value(index.get("runtime").cloned().unwrap_or_default())
            .with_context(|| format!("{}: `runtime` is not NAME and VERSION", path.display()))?,
    })
}

/// Joins the shards' reports into the whole run's: counts summed, findings joined by id (the
/// first part's minimal input kept, hits summed, the earliest time kept), the time series
/// summed sample by sample. Every part must come from the same SUT command, seed, strictness
/// and runtime.
pub fn merge(parts: Vec<Part>) -> Result<Part> {
    let mut parts = parts.into_iter();
    let mut whole = parts.next().context("no report to merge")?;
    for part in parts {
        if (&part.command, part.outcome.seed, part.strict, &part.runtime)
            != (
                &whole.command,
                whole.outcome.seed,
                whole.strict,
                &whole.runtime,
            )
        {
            bail!(
                "the reports are not shards of one run: `{}` seed {} strict {} vs `{}` seed {} strict {}",
                whole.command,
                whole.outcome.seed,
                whole.strict,
                part.command,
                part.outcome.seed,
                part.strict
            );
        }
        let (into, from) = (&mut whole.outcome, part.outcome);
        into.elapsed_ms = into.elapsed_ms.max(from.elapsed_ms);
        // The shards' jobs side by side: their steady rates add up, as shards on separate
        // machines do.
        into.jobs += from.jobs;
        into.shrink_ms += from.shrink_ms;
        into.steady_cases += from.steady_cases;
        into.steady_job_ms += from.steady_job_ms;
        into.faults += from.faults;
        into.cpu += from.cpu;
        for (op, tally) in from.per_op {
            add_tally(into.per_op.entry(op).or_default(), tally);
        }
        for finding in from.findings {
            match into.findings.iter_mut().find(|f| f.id == finding.id) {
                Some(found) => {
                    found.hits += finding.hits;
                    found.first_seen_ms = found.first_seen_ms.min(finding.first_seen_ms);
                }
                None => into.findings.push(finding),
            }
        }
        into.timeline = add_timelines(&into.timeline, &from.timeline);
        if let Some(from) = &from.steering {
            let into = into.steering.get_or_insert_with(Default::default);
            into.steered_cases += from.steered_cases;
            // Shards writing one --corpus folder share entries: the largest count is a lower bound.
            for (op, n) in &from.corpus {
                let count = into.corpus.entry(*op).or_default();
                *count = (*count).max(*n);
            }
        }
        match (&mut into.coverage, &from.coverage) {
            (Some(into), Some(from)) => coverage::merge_units(into, from),
            (into @ None, Some(from)) => *into = Some(from.clone()),
            _ => {}
        }
        // An entry is not reached by the whole run if no shard reached it.
        if let (Some(into), Some(from)) = (&mut into.baseline, from.baseline) {
            into.not_reached.retain(|k| from.not_reached.contains(k));
            into.rule_wide += from.rule_wide;
            for d in from.disagreements {
                if !into.disagreements.contains(&d) {
                    into.disagreements.push(d);
                }
            }
        }
    }
    let outcome = &mut whole.outcome;
    // The order `campaign::run` gives: gate failures first, then by op, rule and id.
    outcome.findings.sort_by(|a, b| {
        b.gate
            .cmp(&a.gate)
            .then_with(|| (a.op, a.rule, &a.id).cmp(&(b.op, b.rule, &b.id)))
    });
    if let Some(judged) = &mut outcome.baseline {
        judged.recount(&outcome.findings);
    }
    // The last sample is the final state, as in a campaign's own series.
    let (cases, findings) = (outcome.cases(), outcome.findings.len() as u64);
    if let Some(last) = outcome.timeline.last_mut() {
        last.cases = cases;
        last.findings = findings;
    }
    Ok(whole)
}

fn add_tally(into: &mut Tally, from: Tally) {
    into.cases += from.cases;
    into.passed += from.passed;
    into.failed += from.failed;
    into.divergent += from.divergent;
    into.left_out += from.left_out;
    for (rule, n) in from.rules {
        *into.rules.entry(rule).or_default() += n;
    }
}

/// Two series summed sample by sample (a shorter one holds its last sample). Distinct-verdict and
/// shape counts, and the runtime's coverage, cannot be summed without the sets behind them; the
/// larger is kept, a lower bound.
fn add_timelines(a: &[Sample], b: &[Sample]) -> Vec<Sample> {
    let at = |s: &[Sample], i: usize| s.get(i).or(s.last()).copied().unwrap_or_default();
    (0..a.len().max(b.len()))
        .map(|i| {
            let (x, y) = (at(a, i), at(b, i));
            Sample {
                elapsed_ms: x.elapsed_ms.max(y.elapsed_ms),
                cases: x.cases + y.cases,
                failed: x.failed + y.failed,
                findings: x.findings + y.findings,
                verdict_cells: x.verdict_cells.max(y.verdict_cells),
                reference_shapes: x.reference_shapes.max(y.reference_shapes),
                runtime_lines: x.runtime_lines.max(y.runtime_lines),
                runtime_branches: x.runtime_branches.max(y.runtime_branches),
            }
        })
        .collect()
}
