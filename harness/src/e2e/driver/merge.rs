//! `normfuzz merge-reports` for e2e runs: the reports of `normfuzz e2e --shard K/N` runs (one
//! adapter, `--cases`, `--seed` and `--via`) joined into the report the unsharded run writes.
//! Each shard's case folders are copied in, then all outcomes go through `report::finish` as a
//! run's own do, so findings, baseline verdicts (stale entries included), every format and the
//! exit code are the whole run's.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use super::case::{CaseOutcome, Isolation};
use super::report::{Run, finish};
use crate::campaign::impact::FailOn;
use crate::e2e::adapter::Adapter;
use crate::e2e::baseline::Baseline;
use crate::e2e::cases::{self, Scenario};
use crate::e2e::one_turn::Via;

/// Whether `index` (an `index.json`) is an e2e run's: it lists its cases and names a runtime.
pub fn is_e2e_index(index: &Value) -> bool {
    index["cases"].is_array() && index["runtime"].is_string() && index.get("kind").is_none()
}

/// Joins the e2e reports in `parts` into `out` (which must not hold a report yet); returns the
/// whole run's exit code (1 on a new finding of a class its `--fail-on` names, an error or a
/// stale baseline entry).
pub fn merge(out: &Path, parts: &[PathBuf]) -> Result<ExitCode> {
    let mut shared: Option<Value> = None;
    let mut outcomes: Vec<CaseOutcome> = Vec::new();
    let mut elapsed = Duration::ZERO;
    if out.join("index.json").exists() {
        bail!("{} already holds a report", out.display());
    }
    for dir in parts {
        let path = dir.join("index.json");
        let index = crate::report::read_json(&path)?;
        if !is_e2e_index(&index) {
            bail!("{} is not an e2e report", path.display());
        }
        // What every shard of one run agrees on.
        let run = json!({
            "adapter": index["adapter"], "runtime": index["runtime"],
            "runtimeVersion": index["runtimeVersion"], "isolation": index["isolation"],
            "via": index["via"], "seed": index["seed"], "baseline": index["baseline"],
            "scenario": index["scenario"], "failOn": index["failOn"],
        });
        match &shared {
            Some(first) if *first != run => bail!(
                "{} is not a shard of the same run: {run} vs {first}",
                dir.display()
            ),
            Some(_) => {}
            None => shared = Some(run),
        }
        elapsed = elapsed.max(Duration::from_millis(
            index["elapsedMs"].as_u64().unwrap_or_default(),
        ));
        let cases: Vec<CaseOutcome> = serde_json::from_value(index["cases"].clone())
            .with_context(|| format!("{}: unreadable cases", path.display()))?;
        for case in &cases {
            if outcomes.iter().any(|o| o.id == case.id) {
                bail!("case {} is in two shards", case.id);
            }
            copy_dir(
                &dir.join("cases").join(&case.id),
                &out.join("cases").join(&case.id),
            )?;
        }
        outcomes.extend(cases);
    }
    let run = shared.context("no report to merge")?;
    let field = |name: &str| {
        Some(run[name].clone())
            .filter(|v| !v.is_null())
            .with_context(|| format!("the reports record no `{name}`"))
    };
    let adapter_path = PathBuf::from(field("adapter")?.as_str().unwrap_or_default());
    let adapter = Adapter::load(&adapter_path)?;
    let seed = field("seed")?.as_u64().context("`seed` is not a number")?;
    let isolation: Isolation = serde_json::from_value(field("isolation")?)?;
    let via: Via = serde_json::from_value(field("via")?)?;
    // Reports from before the fallback scenario record none: they ran the tool-result cases.
    let scenario: Scenario = match &run["scenario"] {
        Value::Null => Scenario::ToolResult,
        v => serde_json::from_value(v.clone())?,
    };
    let version = field("runtimeVersion")?
        .as_str()
        .unwrap_or_default()
        .to_string();
    let baseline_path = run["baseline"].as_str().map(PathBuf::from);
    let baseline = match &baseline_path {
        Some(path) => Baseline::load(path)?,
        None => Baseline::default(),
    };
    let fail_on = FailOn::of_index(&run)?;
    // The unsharded run's plan: the shards of `--cases N` together ran its N cases.
    let plan = cases::plan_for(scenario, outcomes.len(), seed);
    let position = |id: &str| plan.iter().position(|c| c.id == id);
    if let Some(stray) = outcomes.iter().find(|o| position(&o.id).is_none()) {
        bail!(
            "case {} is not among the first {} cases of seed {seed}: the shards ran selected cases (--case), not a whole --cases run",
            stray.id,
            plan.len()
        );
    }
    outcomes.sort_by_key(|o| position(&o.id));
    let runtime_name = adapter.runtime_name();
    finish(
        &Run {
            adapter: &adapter,
            version: &version,
            runtime_name: &runtime_name,
            isolation,
            seed,
            scenario,
            baseline: &baseline,
            baseline_path: baseline_path.as_deref(),
            fail_on: &fail_on,
            plan: &plan,
            report: out,
            // The whole run took as long as its longest shard.
            start: Instant::now()
                .checked_sub(elapsed)
                .unwrap_or_else(Instant::now),
            via,
        },
        &outcomes,
    )
}

/// Copies the folder `from` (files and subfolders), if there is one, to `to`, which must not
/// exist yet.
fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    if !from.is_dir() {
        return Ok(());
    }
    if to.exists() {
        bail!("{} exists already", to.display());
    }
    std::fs::create_dir_all(to).with_context(|| format!("cannot create {}", to.display()))?;
    for entry in
        std::fs::read_dir(from).with_context(|| format!("cannot list {}", from.display()))?
    {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target).with_context(|| {
                format!(
                    "cannot copy {} to {}",
                    entry.path().display(),
                    target.display()
                )
            })?;
        }
    }
    Ok(())
}
