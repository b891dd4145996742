//! `normfuzz conform`: a conformance campaign against a SUT, with a progress bar, the report and
//! the findings' repro lines.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::{Context, Result};
use normfuzz::campaign::impact::{Class, FailOn, Profile};
use normfuzz::campaign::{Campaign, Input, Progress, Shard, Steer};
use normfuzz::protocol::Op;
use normfuzz::report::upstream::RuntimeId;

use super::io::{SutArgs, open_sut};

/// How often a run whose stderr is not a terminal prints a progress line.
const PLAIN_EVERY: Duration = Duration::from_secs(10);

#[derive(clap::Args)]
pub struct ConformArgs {
    /// SUT command (argv, no shell; quotes group words), or `reference` for the built-in
    /// reference in process.
    #[arg(long, required_unless_present = "config")]
    sut: Option<String>,
    /// Read the campaign's settings from this file's `[conform]` table (`normfuzz init` writes
    /// one: sut, ops, cases, time, seed, jobs, profile, baseline, fail_on, strict); flags given
    /// here win.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Comma-separated ops to test (default: every op the SUT offers).
    #[arg(long, value_delimiter = ',')]
    ops: Vec<String>,
    /// Number of cases (default 10000 unless --time is given).
    #[arg(long, conflicts_with = "time")]
    cases: Option<u64>,
    /// Run for this many seconds instead of a fixed number of cases.
    #[arg(long)]
    time: Option<f64>,
    /// Run exactly these `coerce_tool_result` cases instead of generated ones: JSON Lines as
    /// corpus/real-servers/ holds them (`server`, `version`, `tool`, `result`), each line's
    /// `result` one case, judged like any case; a finding names the line it was first seen on
    /// (`source`). Repeat for several files.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["cases", "time", "ops"])]
    inputs: Vec<PathBuf>,
    /// Seed: the same seed and job count give the same cases [default: 1].
    #[arg(long)]
    seed: Option<u64>,
    /// Parallel jobs, each with its own SUT process [default: 1].
    #[arg(long)]
    jobs: Option<usize>,
    /// Run only shard K of N (1-based): a deterministic split of the cases by job. N runs with
    /// the same --seed, --cases and --jobs, one per shard, run exactly the cases of one
    /// unsharded run with N × --jobs jobs.
    #[arg(long, value_name = "K/N", value_parser = Shard::parse)]
    shard: Option<Shard>,
    /// Steer by the runtime's own coverage (a SUT offering the protocol's coverage extension):
    /// each input that reaches new coverage joins its op's corpus, and one case in four is a
    /// structure-aware mutant of a corpus entry instead of a generated one. The other cases
    /// stay those of the seed; which mutants run depends on timing.
    #[arg(long, conflicts_with = "inputs")]
    steer: bool,
    /// Keep the steering corpus in this folder across runs (implies --steer): read first, each
    /// new entry written there atomically as `<op>/<hash>.json`, so shards writing into one
    /// folder merge their corpora.
    #[arg(long, value_name = "DIR", conflicts_with = "inputs")]
    corpus: Option<PathBuf>,
    /// The runtime of the matrix the SUT is (`NAME@VERSION`, as `cargo xtask matrix` passes it):
    /// recorded in the report, where `normfuzz upstream` finds its repro template.
    #[arg(long, value_name = "NAME@VERSION", value_parser = RuntimeId::parse)]
    runtime: Option<RuntimeId>,
    /// Count divergences from the reference as failures.
    #[arg(long)]
    strict: bool,
    /// The SUT's runtime profile (`profile.toml`: whether it acts on MEDIA: directives, replays
    /// its history, its folders and documented time-outs), from which each finding's impact
    /// class is derived. Without it, the reference's contract: directives acted on, no
    /// time-out.
    #[arg(long, value_name = "FILE")]
    profile: Option<PathBuf>,
    #[command(flatten)]
    fail_on: FailOn,
    /// Known findings (TOML: `[[known]]` entries with op, rule, the finding kinds they cover
    /// (none: every kind), class, cause and reason, as `--write-baseline` drafts them): a
    /// finding an entry covers is counted and keeps the run green, not shrunk again; a new one
    /// fails it; an entry this run did not reach is reported.
    #[arg(long, value_name = "FILE")]
    baseline: Option<PathBuf>,
    /// Write a baseline that knows every gate finding of this run, atomically: the entries of
    /// --baseline kept as written, plus one per op and rule of the new findings, listing their
    /// kinds, its cause and reason to be filled in from the SUT's code. An existing file is
    /// replaced only when --baseline names it too.
    #[arg(long, value_name = "FILE")]
    write_baseline: Option<PathBuf>,
    /// With --write-baseline, after a normfuzz upgrade changed how signatures are read: a new
    /// entry takes the cause, class, reason and evidence of the --baseline entry of its rule,
    /// kind and action that shares most features, its reason marked RE-KEYED for review.
    #[arg(long, requires_all = ["write_baseline", "baseline"])]
    rekey: bool,
    /// Stop at the first gate failure (after shrinking it): how `cargo xtask mutants` times a kill.
    #[arg(long)]
    stop_on_gate: bool,
    /// Report folder (default: reports/<time>-<seed>).
    #[arg(long)]
    report: Option<PathBuf>,
    /// Also store each finding's minimal input under corpus/regressions/<op>/.
    #[arg(long)]
    save_regressions: bool,
    #[command(flatten)]
    sut_limits: SutArgs,
    /// Wait the whole --timeout-ms for every answer. Without it the wait is calibrated per op on
    /// the SUT's latest answers (ten times their 99th percentile or three times the longest, at
    /// least 100 ms, --timeout-ms the ceiling); an answer past it is waited for as long again as
    /// restarting the SUT costs (its measured start-up) before it is a hang, and a hang finding
    /// is sent again alone with the full --timeout-ms before it counts (B1).
    #[arg(long)]
    fixed_timeout: bool,
}

/// `[conform]` of a `--config` file: the flags of the same names.
#[derive(Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    sut: Option<String>,
    #[serde(default)]
    ops: Vec<String>,
    cases: Option<u64>,
    time: Option<f64>,
    seed: Option<u64>,
    jobs: Option<usize>,
    profile: Option<PathBuf>,
    baseline: Option<PathBuf>,
    fail_on: Option<Vec<Class>>,
    #[serde(default)]
    strict: bool,
}

impl Config {
    fn load(path: &std::path::Path) -> Result<Config> {
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct File {
            conform: Config,
        }
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let file: File =
            toml::from_str(&text).with_context(|| format!("invalid {}", path.display()))?;
        Ok(file.conform)
    }
}

impl ConformArgs {
    /// Fills what the command line left out from `--config`, then the defaults.
    fn settle(mut self) -> Result<ConformArgs> {
        let Some(path) = &self.config else {
            return Ok(self);
        };
        let config = Config::load(path)?;
        self.sut = self.sut.or(config.sut);
        if self.sut.is_none() {
            anyhow::bail!("{}: no `sut` in [conform], and no --sut", path.display());
        }
        if self.ops.is_empty() && self.inputs.is_empty() {
            self.ops = config.ops;
        }
        if self.cases.is_none() && self.time.is_none() && self.inputs.is_empty() {
            (self.cases, self.time) = (config.cases, config.time);
        }
        self.seed = self.seed.or(config.seed);
        self.jobs = self.jobs.or(config.jobs);
        self.profile = self.profile.or(config.profile);
        self.baseline = self.baseline.or(config.baseline);
        self.fail_on.classes = self.fail_on.classes.or(config.fail_on);
        self.strict |= config.strict;
        Ok(self)
    }
}

/// Exits 1 when any case fails the gate.
pub fn run(args: ConformArgs) -> Result<ExitCode> {
    let args = args.settle()?;
    // `--sut` or the config's: `settle` made sure of one.
    let sut_command = args.sut.clone().unwrap_or_default();
    let seed = args.seed.unwrap_or(1);
    let mut ops = Vec::new();
    for name in &args.ops {
        ops.push(
            Op::parse(name)
                .with_context(|| format!("unknown op `{name}`; known: {}", op_names()))?,
        );
    }
    let inputs = load_inputs(&args.inputs)?;
    if !inputs.is_empty() {
        ops = vec![Op::CoerceToolResult];
    }
    if ops.is_empty() {
        ops = Op::ALL.to_vec();
    }
    let time = match args.time {
        Some(t) if !(t.is_finite() && t > 0.0) => {
            anyhow::bail!("--time must be a positive number of seconds")
        }
        t => t.map(Duration::from_secs_f64),
    };
    let baseline = args
        .baseline
        .as_deref()
        .map(normfuzz::campaign::baseline::Baseline::load)
        .transpose()?;
    if let Some(path) = &args.write_baseline
        && path.exists()
        && args.baseline.as_deref() != Some(path.as_path())
    {
        anyhow::bail!(
            "{} exists: --write-baseline replaces a baseline only when --baseline names it too",
            path.display()
        );
    }
    let campaign = Campaign {
        ops,
        cases: if !inputs.is_empty() {
            Some(inputs.len() as u64)
        } else if time.is_some() {
            args.cases
        } else {
            Some(args.cases.unwrap_or(10_000))
        },
        time,
        seed,
        jobs: args.jobs.unwrap_or(1).max(1),
        strict: args.strict,
        stop_on_gate: args.stop_on_gate,
        shard: args.shard.unwrap_or(Shard::WHOLE),
        baseline,
        inputs,
        steer: (args.steer || args.corpus.is_some()).then(|| Steer {
            corpus: args.corpus.clone(),
        }),
    };
    let profile = match &args.profile {
        Some(path) => Profile::load(path)?,
        None => Profile::reference_contract(),
    };
    let options = args.sut_limits.options(!args.fixed_timeout);
    let progress = Progress::default();
    let bar = indicatif::ProgressBar::new(campaign.cases.unwrap_or(0));
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} {pos} cases [{elapsed}] {per_sec} {msg}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
    );
    let done = std::sync::atomic::AtomicBool::new(false);
    // indicatif draws nothing when stderr is not a terminal (a CI log): there, one plain line
    // every PLAIN_EVERY keeps a long run from looking stuck.
    let plain = !std::io::IsTerminal::is_terminal(&std::io::stderr());
    let outcome = std::thread::scope(|scope| {
        let ticker = scope.spawn(|| {
            let started = std::time::Instant::now();
            let mut next_line = PLAIN_EVERY;
            while !done.load(Ordering::Relaxed) {
                let cases = progress.cases.load(Ordering::Relaxed);
                let mut message = format!(
                    "{} failed, {} findings",
                    progress.failed.load(Ordering::Relaxed),
                    progress.findings.load(Ordering::Relaxed)
                );
                let faults = progress.faults();
                if faults.restarts() > 0 {
                    message.push_str(&format!(
                        ", {} hangs ({:.1} s), {} crashes, {} garbled, {} restarts",
                        faults.hangs,
                        faults.hang_ms as f64 / 1000.0,
                        faults.crashes,
                        faults.garbled,
                        faults.restarts()
                    ));
                }
                if plain && started.elapsed() >= next_line {
                    let secs = started.elapsed().as_secs_f64();
                    eprintln!(
                        "normfuzz conform: {cases} cases in {secs:.0} s ({:.0}/s), {message}",
                        cases as f64 / secs
                    );
                    next_line += PLAIN_EVERY;
                }
                bar.set_position(cases);
                bar.set_message(message);
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        let outcome =
            normfuzz::campaign::run(&campaign, || open_sut(&sut_command, options), &progress);
        done.store(true, Ordering::Relaxed);
        let _ = ticker.join();
        outcome
    })?;
    bar.finish_and_clear();
    let mut outcome = outcome;
    outcome.classify(&profile);
    outcome.fail_on = args.fail_on.classes();
    if let (Some(baseline), Some(path)) = (&campaign.baseline, &args.baseline) {
        outcome.judge_baseline(baseline, &path.display().to_string());
    }
    if outcome.cases() == 0 && campaign.cases != Some(0) {
        anyhow::bail!(
            "no case ran: the SUT `{}` offers none of the requested ops",
            outcome.sut
        );
    }
    let dir = args.report.unwrap_or_else(|| {
        let shard = match args.shard {
            Some(Shard { index, count }) => format!("-shard{}of{count}", index + 1),
            None => String::new(),
        };
        normfuzz::report::default_dir(&format!("{{stamp}}-seed{}{shard}", campaign.seed))
    });
    normfuzz::report::write(
        &dir,
        &outcome,
        &sut_command,
        campaign.strict,
        args.runtime.as_ref(),
        normfuzz::report::step_summary_path().as_deref(),
    )?;
    if args.save_regressions {
        for finding in &outcome.findings {
            let path = PathBuf::from(format!(
                "corpus/regressions/{}/{}.json",
                finding.op, finding.id
            ));
            let stored = serde_json::json!({"op": finding.op, "rule": finding.rule, "kind": finding.kind, "input": finding.input});
            normfuzz::report::write_json(&path, &stored)?;
        }
    }
    if let Some(path) = &args.write_baseline {
        let text = normfuzz::campaign::baseline::draft(
            &outcome.findings,
            &sut_command,
            campaign.baseline.as_ref(),
            args.rekey,
        );
        normfuzz::fs::write_atomic(path, text.as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?;
        eprintln!(
            "baseline written to {}: fill in each entry's cause and reason",
            path.display()
        );
    }
    let failed = outcome.failed(campaign.strict);
    let cases = outcome.cases();
    let passes = outcome.passes(campaign.strict);
    eprintln!(
        "{} against {}: {cases} cases in {:.1} s ({}), {} findings; report in {}",
        if passes { "pass" } else { "FAIL" },
        outcome.sut,
        outcome.elapsed_ms as f64 / 1000.0,
        normfuzz::report::rates(&outcome),
        outcome.findings.len(),
        dir.display()
    );
    if let Some(judged) = &outcome.baseline {
        eprintln!("against {}: {}", judged.file, judged.counts());
        for k in &judged.not_reached {
            let signature = k
                .signature
                .as_ref()
                .map_or("every finding".into(), |s| s.describe());
            eprintln!(
                "  not reached: {} on {} ({}: {signature})",
                k.rule, k.op, k.cause
            );
        }
        for d in &judged.disagreements {
            eprintln!(
                "  class disagreement: {} ({}): entry {}, evidence {}, kept {}",
                d.finding, d.cause, d.entry, d.derived, d.kept
            );
        }
        if judged.rule_wide > 0 {
            eprintln!(
                "  {} known findings matched by entries without a signature (rule-wide): \
                 draft signatures with --write-baseline",
                judged.rule_wide
            );
        }
    }
    for finding in outcome
        .findings
        .iter()
        .filter(|f| outcome.fails(f, campaign.strict))
    {
        let path = dir.join("findings").join(format!("{}.json", finding.id));
        let class = finding
            .impact
            .as_ref()
            .map_or(String::new(), |i| format!(" ({}: {})", i.class, i.why));
        let source = finding
            .source
            .as_ref()
            .map_or(String::new(), |s| format!("\n    first seen on {s}"));
        eprintln!(
            "  {} [{}] {}{class}{source}\n    cause {}: {}\n    {}",
            finding.id,
            finding.rule,
            finding.kind,
            finding.cause.as_deref().unwrap_or("-"),
            finding.signature.describe(),
            normfuzz::report::repro_command(&path, &sut_command)
        );
    }
    if std::env::var("GITHUB_ACTIONS").is_ok_and(|v| v == "true") {
        for line in
            normfuzz::report::github_annotations(&dir, &outcome, &sut_command, campaign.strict)
        {
            println!("{line}");
        }
    }
    println!("{} passed, {failed} failed", cases - failed);
    Ok(ExitCode::from(u8::from(!passes)))
}

/// The cases of `--inputs` files, in order, each named `server@version tool (FILE line N)`.
fn load_inputs(files: &[PathBuf]) -> Result<Vec<Input>> {
    let mut inputs = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file)
            .with_context(|| format!("cannot read {}", file.display()))?;
        let captures = normfuzz::generate::real_servers::parse(&text)
            .map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
        if captures.is_empty() {
            anyhow::bail!("{}: no input in it", file.display());
        }
        inputs.extend(captures.into_iter().map(|(line, capture)| Input {
            source: format!("{} ({} line {line})", capture.source(), file.display()),
            input: capture.result,
        }));
    }
    Ok(inputs)
}

fn op_names() -> String {
    Op::ALL
        .iter()
        .map(|op| op.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}
