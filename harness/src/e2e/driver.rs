//! `normfuzz e2e`: installs the runtime, runs each case as one sandboxed turn against the mock
//! providers and the mock MCP server, judges it, compares with the baseline and writes the report.
//!
//! This file takes the arguments and schedules the cases over the jobs; `driver/case.rs` runs
//! and judges one case in its sandbox, `driver/report.rs` writes the finished run.

mod case;
pub mod merge;
mod report;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use anyhow::{Context, Result, bail};

use super::adapter::Adapter;
use super::baseline::Baseline;
use super::cases::{self, E2eCase, Scenario};
use super::install;
use super::one_turn::TurnSpec;
use super::one_turn::Via;
use crate::campaign::Shard;
use case::{CaseOutcome, Isolation, run_case};

#[derive(clap::Args, Debug)]
pub struct E2eArgs {
    /// Runtime adapter file (harness/runtimes/<name>/e2e.toml).
    #[arg(long)]
    pub adapter: PathBuf,
    /// Number of cases: the seed scenarios first, then generated ones.
    #[arg(long, default_value_t = 10)]
    pub cases: usize,
    /// Which cases: `tool-result` (one tool round trip), `fallback` (the primary model fails
    /// and the runtime moves to its fallback: the adapter's `[fallback]`) or `vision` (a browser
    /// screenshot of a hostile loopback page, described by a vision model: the adapter's
    /// `[vision]`).
    #[arg(long, value_enum, default_value = "tool-result")]
    pub scenario: Scenario,
    /// Run only this case id (repeatable); ids are stable for a given --seed.
    #[arg(long = "case", value_name = "ID")]
    pub only: Vec<String>,
    /// Run only shard K of N (1-based) of the cases: every N-th case of the plan from the K-th,
    /// so N runs with the same --cases and --seed, one per shard, run each case once.
    #[arg(long, value_name = "K/N", value_parser = Shard::parse)]
    pub shard: Option<Shard>,
    /// Seed for the generated cases.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Turns run at once (each in its own namespace, so ports never clash).
    #[arg(long, default_value_t = 1)]
    pub jobs: usize,
    /// Report folder (default: reports/e2e-<runtime>-<time>).
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// Install cache (default: $NORMFUZZ_CACHE, else ~/.cache/normfuzz).
    #[arg(long)]
    pub cache: Option<PathBuf>,
    /// Install the runtime (or find it in the cache), print the PATH its turns run with on
    /// stdout, and run no case: a CI step can prepare the cache, or run tools on the runtime's
    /// own Node.
    #[arg(long)]
    pub install_only: bool,
    /// Baseline of known findings (default: the adapter's `baseline`).
    #[arg(long)]
    pub baseline: Option<PathBuf>,
    #[command(flatten)]
    pub fail_on: crate::campaign::impact::FailOn,
    /// The mock MCP server binary (default: `mock-providers` next to this executable).
    #[arg(long)]
    pub mock_providers: Option<PathBuf>,
    /// Sandbox: `auto` uses `unshare -n -m` (root) or `unshare -r -n -m` (user namespaces) when
    /// available and warns otherwise; `required` refuses to run without it; `off` never uses it.
    #[arg(long, default_value = "auto", value_parser = ["auto", "required", "off"])]
    pub isolation: String,
    /// What is judged besides the model's view: `payload`, the reply the runtime's API returns
    /// (one command per turn), or `channel`, what a mock chat channel received from the runtime
    /// serving it as it would a real user (the adapter's `[channel]`; uploads are compared by
    /// bytes with files planted for the case).
    #[arg(long, value_enum, default_value = "payload")]
    pub via: Via,
}

pub fn run(args: E2eArgs) -> Result<ExitCode> {
    let adapter = Adapter::load(&args.adapter)?;
    let cache = install::runtime_dir(&adapter, args.cache.clone());
    let cache = absolute(&cache)?;
    let version = install::ensure(&adapter, &cache)?;
    eprintln!(
        "{} ready in {} ({version})",
        adapter.label(),
        cache.display()
    );
    if args.install_only {
        println!("{}", install::runtime_path(&adapter, &cache)?);
        return Ok(ExitCode::SUCCESS);
    }
    let mock_mcp = match &args.mock_providers {
        Some(path) => absolute(path)?,
        None => std::env::current_exe()?.with_file_name("mock-providers"),
    };
    if !mock_mcp.is_file() {
        bail!(
            "mock MCP server {} not found; build it (`cargo build --release -p mock-providers`) or pass --mock-providers",
            mock_mcp.display()
        );
    }
    let baseline_path = args.baseline.clone().or_else(|| adapter.baseline_path());
    let baseline = match &baseline_path {
        Some(p) => Baseline::load(p)?,
        None => Baseline::default(),
    };
    if args.via == Via::Channel && adapter.channel.is_none() {
        bail!(
            "--via channel: adapter {} has no [channel] section (how to run {} behind a chat channel)",
            args.adapter.display(),
            adapter.name
        );
    }
    if args.scenario == Scenario::Fallback && adapter.fallback.is_none() {
        bail!(
            "--scenario fallback: adapter {} has no [fallback] section (how to configure {}'s model fallback)",
            args.adapter.display(),
            adapter.name
        );
    }
    if args.scenario == Scenario::Vision && adapter.vision.is_none() {
        bail!(
            "--scenario vision: adapter {} has no [vision] section (how to run {}'s browser screenshot with a vision model)",
            args.adapter.display(),
            adapter.name
        );
    }
    // The runtime's profile, read once: S5 judges each turn against its folders.
    let profile = crate::campaign::impact::Profile::beside(&adapter.dir)?;
    let isolation = Isolation::probe(&args.isolation)?;
    let plan = shard_cases(select_cases(&args)?, args.shard.unwrap_or(Shard::WHOLE));
    let report = absolute(&args.report.clone().unwrap_or_else(|| {
        crate::report::default_dir(&format!("e2e-{}-{{stamp}}", adapter.name))
    }))?;
    std::fs::create_dir_all(&report)?;
    let adapter_path = absolute(&args.adapter)?;
    let runtime_name = adapter.runtime_name();

    let start = Instant::now();
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let outcomes: Mutex<Vec<CaseOutcome>> = Mutex::new(Vec::new());
    eprintln!(
        "running {} cases against {} via {} ({} jobs, isolation: {isolation:?})",
        plan.len(),
        adapter.label(),
        args.via.as_str(),
        args.jobs.max(1)
    );
    std::thread::scope(|scope| {
        for _ in 0..args.jobs.max(1) {
            scope.spawn(|| {
                while let Some(case) = plan.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let dir = report.join("cases").join(&case.id);
                    let spec = TurnSpec {
                        adapter: adapter_path.clone(),
                        cache: cache.clone(),
                        case: case.clone(),
                        mock_mcp: mock_mcp.clone(),
                        fresh_netns: isolation != Isolation::None,
                        private_tmp: isolation != Isolation::None,
                        via: args.via,
                    };
                    let outcome = run_case(&adapter, &profile, &spec, &dir, isolation);
                    let n = done.fetch_add(1, Ordering::Relaxed) + 1;
                    let rules: Vec<String> = outcome
                        .findings
                        .iter()
                        .map(|f| {
                            let known = baseline.is_known(&case.id, f.rule.as_str(), f.layer);
                            format!(
                                "{} ({}){}",
                                f.rule,
                                f.layer,
                                if known { " known" } else { " NEW" }
                            )
                        })
                        .collect();
                    eprintln!(
                        "[{n}/{}] {} ({}): {} in {:.1} s{}",
                        plan.len(),
                        case.id,
                        outcome.api,
                        match (&outcome.error, rules.is_empty()) {
                            (Some(e), _) => format!("ERROR {e}"),
                            (None, true) => "pass".to_string(),
                            (None, false) => rules.join(", "),
                        },
                        outcome.elapsed_ms as f64 / 1000.0,
                        outcome
                            .fallback
                            .as_ref()
                            .map_or(String::new(), |f| format!("; {}", f.line()))
                    );
                    outcomes
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(outcome);
                }
            });
        }
    });
    let mut outcomes = outcomes.into_inner().unwrap_or_else(|e| e.into_inner());
    let order: Vec<&str> = plan.iter().map(|c| c.id.as_str()).collect();
    outcomes.sort_by_key(|o| order.iter().position(|id| *id == o.id));
    report::finish(
        &report::Run {
            adapter: &adapter,
            version: &version,
            runtime_name: &runtime_name,
            isolation,
            seed: args.seed,
            scenario: args.scenario,
            baseline: &baseline,
            baseline_path: baseline_path.as_deref(),
            fail_on: &args.fail_on.classes(),
            plan: &plan,
            report: &report,
            start,
            via: args.via,
        },
        &outcomes,
    )
}

fn select_cases(args: &E2eArgs) -> Result<Vec<E2eCase>> {
    if args.only.is_empty() {
        return Ok(cases::plan_for(args.scenario, args.cases, args.seed));
    }
    let seeds = cases::seeds_for(args.scenario).len();
    let most = args
        .only
        .iter()
        .filter_map(|id| {
            id.rsplit_once('-')
                .and_then(|(_, n)| n.parse::<usize>().ok())
        })
        .max()
        .map_or(seeds, |n| seeds + n + 1);
    let plan = cases::plan_for(args.scenario, most.max(seeds), args.seed);
    args.only
        .iter()
        .map(|id| {
            plan.iter()
                .find(|c| &c.id == id)
                .cloned()
                .with_context(|| format!("no case {id:?} (seed {})", args.seed))
        })
        .collect()
}

/// The cases of `shard`: every `count`-th case of `plan` from the shard's index, so the shards
/// of one plan are disjoint, together the whole plan, and each gets its share of the seed
/// scenarios (which come first and take longer than most generated cases).
pub fn shard_cases(plan: Vec<E2eCase>, shard: Shard) -> Vec<E2eCase> {
    plan.into_iter()
        .enumerate()
        .filter(|(i, _)| *i as u64 % shard.count == shard.index)
        .map(|(_, case)| case)
        .collect()
}

fn absolute(path: &Path) -> Result<PathBuf> {
    Ok(if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()?.join(path)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whatever the shard count, the shards of a plan are disjoint, keep the plan's order and
    /// together are the whole plan.
    #[test]
    fn shards_partition_the_cases() {
        let plan = cases::plan(13, 1);
        let ids = |cases: &[E2eCase]| cases.iter().map(|c| c.id.clone()).collect::<Vec<_>>();
        let whole = ids(&plan);
        assert_eq!(ids(&shard_cases(plan.clone(), Shard::WHOLE)), whole);
        for count in 2..=5 {
            let mut union = Vec::new();
            for index in 0..count {
                let part = ids(&shard_cases(plan.clone(), Shard { index, count }));
                assert!(!part.is_empty(), "shard {index} of {count}");
                let in_order: Vec<_> = whole
                    .iter()
                    .filter(|id| part.contains(id))
                    .cloned()
                    .collect();
                assert_eq!(
                    part, in_order,
                    "shard {index} of {count} keeps the plan's order"
                );
                union.extend(part);
            }
            union.sort();
            let mut expected = whole.clone();
            expected.sort();
            assert_eq!(union, expected, "{count} shards: each case exactly once");
        }
    }
}
