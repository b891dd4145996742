//! `normfuzz e2e`: installs the runtime, runs each case as one sandboxed turn against the mock
//! providers and the mock MCP server, judges it, compares with the baseline and writes the report.

use std::collections::BTreeSet;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde::Serialize;
use serde_json::{Value, json};

use super::adapter::{Adapter, expand_all};
use super::baseline::Baseline;
use super::cases::{self, E2eCase};
use super::checks::{self, E2eFinding};
use super::install;
use super::one_turn::{self, TurnRecord, TurnSpec};
use crate::rule::Rule;
use crate::excerpt::bounded;
use crate::runner::report::{E2eCaseView, E2eFindingView, E2eView, write_atomic};

#[derive(clap::Args, Debug)]
pub struct E2eArgs {
    /// Runtime adapter file (harness/runtimes/<name>.toml).
    #[arg(long)]
    pub adapter: PathBuf,
    /// Number of cases: the seed scenarios first, then generated ones.
    #[arg(long, default_value_t = 10)]
    pub cases: usize,
    /// Run only this case id (repeatable); ids are stable for a given --seed.
    #[arg(long = "case", value_name = "ID")]
    pub only: Vec<String>,
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
    /// Baseline of known findings (default: the adapter's `baseline`).
    #[arg(long)]
    pub baseline: Option<PathBuf>,
    /// The mock MCP server binary (default: `mock-providers` next to this executable).
    #[arg(long)]
    pub mock_providers: Option<PathBuf>,
    /// Sandbox: `auto` uses `unshare -n -m` (root) or `unshare -r -n -m` (user namespaces) when
    /// available and warns otherwise; `required` refuses to run without it; `off` never uses it.
    #[arg(long, default_value = "auto", value_parser = ["auto", "required", "off"])]
    pub isolation: String,
}

/// How turns are sandboxed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
enum Isolation {
    /// `unshare -n -m`: loopback-only network, private mounts.
    Namespaces,
    /// The same inside an unprivileged user namespace (`unshare -r`).
    UserNamespaces,
    None,
}

impl Isolation {
    fn prefix(self) -> &'static [&'static str] {
        match self {
            Isolation::Namespaces => &["unshare", "-n", "-m", "--propagation", "private", "--"],
            Isolation::UserNamespaces => &[
                "unshare",
                "-r",
                "-n",
                "-m",
                "--propagation",
                "private",
                "--",
            ],
            Isolation::None => &[],
        }
    }

    fn probe(choice: &str) -> Result<Isolation> {
        if choice == "off" {
            return Ok(Isolation::None);
        }
        // The probe is what each turn does first: a fresh namespace and its loopback brought up.
        for candidate in [Isolation::Namespaces, Isolation::UserNamespaces] {
            let argv = candidate.prefix();
            let works = Command::new(argv[0])
                .args(&argv[1..])
                .args(["ip", "link", "set", "lo", "up"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if works {
                return Ok(candidate);
            }
        }
        if choice == "required" {
            bail!(
                "--isolation required, but `unshare -n -m ip link set lo up` fails here (needs root or user \
                 namespaces, and iproute2)"
            );
        }
        eprintln!(
            "normfuzz e2e: warning: no network namespace available (`unshare -n` needs root or user \
             namespaces, and `ip` from iproute2); turns run unisolated, with dead proxies as the only guard"
        );
        Ok(Isolation::None)
    }
}

/// One finding with its baseline status.
#[derive(Debug, Serialize)]
struct Judged {
    case: String,
    #[serde(flatten)]
    finding: E2eFinding,
    known: bool,
}

/// One case's outcome.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct CaseOutcome {
    id: String,
    about: String,
    api: String,
    image_input: bool,
    elapsed_ms: u64,
    /// The case could not be judged (harness or adapter trouble, not a runtime finding).
    error: Option<String>,
    findings: Vec<E2eFinding>,
}

pub fn run(args: E2eArgs) -> Result<ExitCode> {
    let adapter = Adapter::load(&args.adapter)?;
    let cache = args
        .cache
        .clone()
        .unwrap_or_else(install::default_cache_root)
        .join("runtimes")
        .join(format!("{}-{}", adapter.name, adapter.version));
    let cache = absolute(&cache)?;
    let version = install::ensure(&adapter, &cache)?;
    eprintln!(
        "{} ready in {} ({version})",
        adapter.label(),
        cache.display()
    );
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
    let isolation = Isolation::probe(&args.isolation)?;
    let plan = select_cases(&args)?;
    let report = absolute(&args.report.clone().unwrap_or_else(|| {
        crate::runner::report::default_dir(&format!("e2e-{}-{{stamp}}", adapter.name))
    }))?;
    std::fs::create_dir_all(&report)?;
    let adapter_path = absolute(&args.adapter)?;
    let runtime_name = args.adapter.file_stem().map_or_else(
        || adapter.name.clone(),
        |s| s.to_string_lossy().into_owned(),
    );

    let start = Instant::now();
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let outcomes: Mutex<Vec<CaseOutcome>> = Mutex::new(Vec::new());
    eprintln!(
        "running {} cases against {} ({} jobs, isolation: {isolation:?})",
        plan.len(),
        adapter.label(),
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
                    };
                    let outcome = run_case(&adapter, &spec, &dir, isolation);
                    let n = done.fetch_add(1, Ordering::Relaxed) + 1;
                    let rules: Vec<String> = outcome
                        .findings
                        .iter()
                        .map(|f| {
                            let known = baseline.is_known(&case.id, f.rule.as_str());
                            format!("{}{}", f.rule, if known { " (known)" } else { "" })
                        })
                        .collect();
                    eprintln!(
                        "[{n}/{}] {} ({}): {} in {:.1} s",
                        plan.len(),
                        case.id,
                        outcome.api,
                        match (&outcome.error, rules.is_empty()) {
                            (Some(e), _) => format!("ERROR {e}"),
                            (None, true) => "pass".to_string(),
                            (None, false) => rules.join(", "),
                        },
                        outcome.elapsed_ms as f64 / 1000.0
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

    let judged: Vec<Judged> = outcomes
        .iter()
        .flat_map(|o| {
            o.findings.iter().map(|f| Judged {
                case: o.id.clone(),
                finding: f.clone(),
                known: baseline.is_known(&o.id, f.rule.as_str()),
            })
        })
        .collect();
    let ran: BTreeSet<&str> = outcomes
        .iter()
        .filter(|o| o.error.is_none())
        .map(|o| o.id.as_str())
        .collect();
    let found: BTreeSet<(&str, &str)> = judged
        .iter()
        .map(|j| (j.case.as_str(), j.finding.rule.as_str()))
        .collect();
    let stale = baseline.stale(&ran, &found);
    let new = judged.iter().filter(|j| !j.known).count();
    let errors = outcomes.iter().filter(|o| o.error.is_some()).count();
    let repro = |case: &str| {
        format!(
            "cargo xtask e2e --runtime {runtime_name} --case {case}{}",
            if case.starts_with("gen-") {
                format!(" --seed {}", args.seed)
            } else {
                String::new()
            }
        )
    };

    for j in &judged {
        let dir = report.join("cases").join(&j.case);
        let file = report.join(finding_file(&j.case, j.finding.rule.as_str()));
        let outcome = outcomes.iter().find(|o| o.id == j.case);
        write_atomic(
            &file,
            format!(
                "{:#}\n",
                json!({
                    "case": j.case, "rule": j.finding.rule, "reason": j.finding.reason,
                    "known": j.known, "evidence": j.finding.evidence,
                    "api": outcome.map(|o| &o.api),
                    "input": plan.iter().find(|c| c.id == j.case),
                    "capturedRequest": tool_result_request(&dir),
                    "delivered": read_json(&dir.join(one_turn::STDOUT)).map(|v| bounded_value(&v)),
                    "files": dir.strip_prefix(&report).unwrap_or(&dir),
                    "repro": repro(&j.case),
                })
            )
            .as_bytes(),
        )?;
    }
    let index = json!({
        "runtime": adapter.label(),
        "runtimeVersion": version,
        "isolation": isolation,
        "seed": args.seed,
        "elapsedMs": start.elapsed().as_millis() as u64,
        "baseline": baseline_path,
        "cases": outcomes,
        "findings": judged,
        "new": new,
        "stale": stale.iter().map(|k| json!({"case": k.case, "rule": k.rule, "reason": k.reason})).collect::<Vec<_>>(),
        "errors": errors,
    });
    let elapsed = start.elapsed().as_secs_f64();
    let view = E2eView {
        runtime: format!("{} ({version})", adapter.label()),
        facts: vec![
            ("isolation", format!("{isolation:?}")),
            ("seed", args.seed.to_string()),
            ("time", format!("{elapsed:.0} s")),
            (
                "baseline",
                baseline_path
                    .as_ref()
                    .map_or("none".into(), |p| p.display().to_string()),
            ),
        ],
        cases: outcomes
            .iter()
            .map(|o| E2eCaseView {
                id: o.id.clone(),
                api: o.api.clone(),
                about: o.about.clone(),
                elapsed_ms: o.elapsed_ms,
                error: o.error.clone(),
                findings: o
                    .findings
                    .iter()
                    .map(|f| E2eFindingView {
                        rule: f.rule.to_string(),
                        reason: f.reason.clone(),
                        known: baseline.is_known(&o.id, f.rule.as_str()),
                        evidence: f.evidence.clone(),
                        repro: repro(&o.id),
                        file: finding_file(&o.id, f.rule.as_str()),
                    })
                    .collect(),
            })
            .collect(),
        stale: stale
            .iter()
            .map(|k| (k.case.clone(), k.rule.clone(), k.reason.clone()))
            .collect(),
    };
    crate::runner::report::write_e2e(
        &report,
        &index,
        &view,
        crate::runner::report::step_summary_path().as_deref(),
    )?;

    let failing_cases = outcomes
        .iter()
        .filter(|o| {
            o.error.is_some()
                || o.findings
                    .iter()
                    .any(|f| !baseline.is_known(&o.id, f.rule.as_str()))
        })
        .count();
    let failed = failing_cases + stale.len();
    println!(
        "{}: {} cases, {} findings ({} known, {new} new), {} stale, {errors} errors; report in {}",
        adapter.label(),
        outcomes.len(),
        judged.len(),
        judged.len() - new,
        stale.len(),
        report.display()
    );
    for k in &stale {
        println!(
            "stale baseline entry: {} {} ({}) no longer reproduces",
            k.case, k.rule, k.reason
        );
    }
    for j in judged.iter().filter(|j| !j.known) {
        println!(
            "NEW {} {}: {}  repro: {}",
            j.case,
            j.finding.rule,
            j.finding.reason,
            repro(&j.case)
        );
    }
    println!("{} passed, {failed} failed", outcomes.len() - failing_cases);
    Ok(ExitCode::from(u8::from(failed > 0)))
}

fn select_cases(args: &E2eArgs) -> Result<Vec<E2eCase>> {
    if args.only.is_empty() {
        return Ok(cases::plan(args.cases, args.seed));
    }
    let seeds = cases::seeds().len();
    let most = args
        .only
        .iter()
        .filter_map(|id| {
            id.rsplit_once('-')
                .and_then(|(_, n)| n.parse::<usize>().ok())
        })
        .max()
        .map_or(seeds, |n| seeds + n + 1);
    let plan = cases::plan(most.max(seeds), args.seed);
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

fn absolute(path: &Path) -> Result<PathBuf> {
    Ok(if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()?.join(path)
    })
}

/// Runs one case in its sandbox and judges it.
fn run_case(adapter: &Adapter, spec: &TurnSpec, dir: &Path, isolation: Isolation) -> CaseOutcome {
    let flavour = &adapter.flavour[spec.case.flavour % adapter.flavour.len()];
    let mut outcome = CaseOutcome {
        id: spec.case.id.clone(),
        about: spec.case.about.clone(),
        api: flavour.api.clone(),
        image_input: spec.case.image_input,
        elapsed_ms: 0,
        error: None,
        findings: Vec::new(),
    };
    let start = Instant::now();
    match turn(adapter, spec, dir, isolation) {
        Ok(record) => match judge(adapter, spec, dir, &record, &flavour.mock) {
            Ok(findings) => outcome.findings = findings,
            Err(e) => outcome.error = Some(format!("{e:#}")),
        },
        Err(e) => outcome.error = Some(format!("{e:#}")),
    }
    outcome.elapsed_ms = start.elapsed().as_millis() as u64;
    // The runtime's state and temp files (tens of MB a turn) are not evidence; the config,
    // captured requests, output, logs and the MCP result stay.
    for scratch in ["home", "tmp"] {
        let _ = std::fs::remove_dir_all(dir.join(scratch));
    }
    outcome
}

/// Starts `normfuzz e2e-turn` in the sandbox and waits for its record.
fn turn(
    adapter: &Adapter,
    spec: &TurnSpec,
    dir: &Path,
    isolation: Isolation,
) -> Result<TurnRecord> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).with_context(|| format!("cannot clear {}", dir.display()))?;
    }
    std::fs::create_dir_all(dir)?;
    write_atomic(
        &dir.join(one_turn::SPEC),
        serde_json::to_vec_pretty(spec)?.as_slice(),
    )?;
    let exe = std::env::current_exe()?;
    let prefix = isolation.prefix();
    let mut cmd = match prefix.split_first() {
        Some((first, rest)) => {
            let mut c = Command::new(first);
            c.args(rest).arg(&exe);
            c
        }
        None => Command::new(&exe),
    };
    cmd.arg("e2e-turn")
        .arg("--dir")
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("sandbox.log"))?)
        .process_group(0);
    let mut child = cmd.spawn().context("cannot start the sandboxed turn")?;
    // The turn enforces the adapter's time-out itself; this one only catches a stuck sandbox.
    let deadline = Duration::from_secs(adapter.turn_timeout + 60);
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if start.elapsed() > deadline {
            // SAFETY: kill(2) on the process group we created.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
            bail!(
                "the sandboxed turn did not finish within {} s",
                deadline.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let record = std::fs::read(dir.join(one_turn::RECORD));
    match record {
        Ok(bytes) => Ok(serde_json::from_slice(&bytes)?),
        Err(_) => {
            let log = std::fs::read_to_string(dir.join("sandbox.log")).unwrap_or_default();
            bail!(
                "the sandboxed turn failed ({status}): {}",
                bounded(log.trim(), 600)
            )
        }
    }
}

fn judge(
    adapter: &Adapter,
    spec: &TurnSpec,
    dir: &Path,
    record: &TurnRecord,
    provider: &str,
) -> Result<Vec<E2eFinding>> {
    let mut findings = Vec::new();
    let stderr = std::fs::read_to_string(dir.join(one_turn::STDERR)).unwrap_or_default();
    if record.timed_out || record.exit_code != Some(0) {
        findings.push(E2eFinding {
            rule: Rule::B1,
            reason: if record.timed_out {
                format!("the turn did not finish within {} s", adapter.turn_timeout)
            } else {
                format!("the turn exited with {:?}", record.exit_code)
            },
            evidence: json!({"stderrTail": crate::excerpt::tail(&stderr, 2000)}),
        });
    }
    let requests = one_turn::requests(dir)?;
    for r in &requests {
        if r["verdict"]["accepted"] == false && r["provider"].is_string() {
            findings.push(E2eFinding {
                rule: Rule::Provider,
                reason: format!(
                    "the {} mock answered {} to request {}: a poisoned session",
                    r["provider"].as_str().unwrap_or("?"),
                    r["verdict"]["status"],
                    r["seq"]
                ),
                evidence: r["verdict"]["body"].clone(),
            });
        }
    }
    match checks::model_view(provider, &requests) {
        Some(view) => findings.extend(checks::check_model_view(&spec.case, &view)),
        None if findings.is_empty() => bail!(
            "no request to the {provider} mock carried a tool result ({} requests); did the runtime see the tool `{}`?",
            requests.len(),
            adapter.model_tool
        ),
        None => {}
    }
    if let Some(stdout) = read_json(&dir.join(one_turn::STDOUT)) {
        let vars = std::collections::BTreeMap::from([("case", dir.display().to_string())]);
        let roots = expand_all(&adapter.run.media_roots, &vars)?;
        findings.extend(checks::check_delivered(
            &checks::delivered(adapter, &stdout),
            &roots,
        ));
    } else if record.exit_code == Some(0) {
        findings.push(E2eFinding {
            rule: Rule::B1,
            reason: "the turn's output is not JSON".into(),
            evidence: json!(crate::excerpt::tail(
                &std::fs::read_to_string(dir.join(one_turn::STDOUT)).unwrap_or_default(),
                2000
            )),
        });
    }
    Ok(checks::merge_by_rule(findings))
}

/// `findings/<case>--<rule>.json`: one file per rule a case broke.
fn finding_file(case: &str, rule: &str) -> String {
    format!("findings/{case}--{rule}.json")
}

fn read_json(path: &Path) -> Option<Value> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

/// Long strings cut for the report (base64 images, system prompts).
fn bounded_value(v: &Value) -> Value {
    match v {
        Value::String(s) => json!(bounded(s, 2000)),
        Value::Array(a) => Value::Array(a.iter().map(bounded_value).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| (k.clone(), bounded_value(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The captured request carrying the tool result, from the tool result on (the system prompt
/// and tool list, ~100 KB, stay in `requests.jsonl`).
fn tool_result_request(dir: &Path) -> Value {
    let Ok(requests) = one_turn::requests(dir) else {
        return Value::Null;
    };
    let carries = |m: &Value| {
        m["role"] == "tool"
            || m["content"]
                .as_array()
                .is_some_and(|c| c.iter().any(|b| b["type"] == "tool_result"))
    };
    requests
        .iter()
        .find_map(|r| {
            let messages = r["body"]["messages"].as_array()?;
            let first = messages.iter().position(carries)?;
            Some(json!({
                "seq": r["seq"], "provider": r["provider"], "path": r["path"], "verdict": r["verdict"],
                "messagesFromToolResult": bounded_value(&Value::Array(messages[first..].to_vec())),
            }))
        })
        .unwrap_or(Value::Null)
}
