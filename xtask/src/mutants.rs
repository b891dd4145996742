//! `cargo xtask mutants`: the default gate (no `--strict`) against every single-bug variant of
//! `examples/mutants/mutant.py`, and the kill matrix: which rule killed each mutant, how long it
//! took, and the minimal input. A mutant that survives its time budget, or a faithful variant
//! with a gate failure, fails the task.

use std::ffi::OsStr;
use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use serde_json::Value;

/// The variant that breaks no rule (stricter choices the spec allows).
const FAITHFUL: &str = "faithful";

/// One row of the kill matrix.
struct Kill {
    mutant: String,
    rule: String,
    killed_by: Option<String>,
    /// Milliseconds from the campaign's start to the first case that hit the killing finding.
    first_seen_ms: Option<u64>,
    /// Wall time of the whole run (SUT start, campaign, shrink, report).
    wall_ms: u128,
    input: String,
}

pub struct Options {
    /// Seconds each mutant may survive.
    pub budget: f64,
    /// Seconds the faithful variant runs.
    pub faithful: f64,
    /// Only these mutants (all when empty).
    pub only: Vec<String>,
    /// Mutant campaigns run at once.
    pub jobs: usize,
}

pub mod pairs;

/// `examples/mutants/mutant.py`, relative to the workspace root.
const SHIM: &str = "examples/mutants/mutant.py";

/// The `--sut` command that runs the shim.
fn shim_command(root: &Path) -> String {
    format!("python3 {}", root.join(SHIM).display())
}

/// A row of `mutant.py --list`.
pub(crate) struct Variant {
    pub name: String,
    pub rule: String,
}

/// The variants `mutant.py --list` names, in its order; only those in `only` unless it is empty.
pub(crate) fn variants(root: &Path, only: &[String]) -> Result<Vec<Variant>> {
    let list = Command::new("python3")
        .arg(root.join(SHIM))
        .arg("--list")
        .output()
        .context("cannot run python3 examples/mutants/mutant.py --list")?;
    if !list.status.success() {
        bail!(
            "mutant.py --list failed: {}",
            String::from_utf8_lossy(&list.stderr)
        );
    }
    let mut variants = Vec::new();
    for line in String::from_utf8_lossy(&list.stdout).lines() {
        let row: Value =
            serde_json::from_str(line).with_context(|| format!("bad --list line {line:?}"))?;
        let field = |k: &str| row[k].as_str().unwrap_or_default().to_string();
        variants.push(Variant {
            name: field("name"),
            rule: field("rule"),
        });
    }
    if let Some(unknown) = only
        .iter()
        .find(|o| !variants.iter().any(|v| &v.name == *o))
    {
        bail!(
            "no mutant {unknown} (known: {})",
            variants
                .iter()
                .map(|v| v.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    variants.retain(|v| only.is_empty() || only.contains(&v.name));
    Ok(variants)
}

/// `normfuzz conform` against `mutant.py` with `NORMFUZZ_MUTANT=mutant` (one variant or a pair
/// `a+b`) for `seconds` from seed 1, its report in `report`, `args` added: the exit code, 0
/// (pass) or 1 (gate failure); anything else is an error.
pub(crate) fn conform(
    root: &Path,
    normfuzz: &Path,
    mutant: &str,
    seconds: f64,
    report: &Path,
    args: &[&OsStr],
) -> Result<i32> {
    let status = Command::new(normfuzz)
        .current_dir(root)
        .env("NORMFUZZ_MUTANT", mutant)
        .env("NORMFUZZ_BIN", normfuzz)
        .args(["conform", "--sut", &shim_command(root)])
        .args(["--seed", "1", "--time"])
        .arg(seconds.to_string())
        // A hang costs the wait calibrated on the shim's answers; only its confirmation, once
        // per finding, waits this full time-out: `b1_redos_hang` is killed in about 5 s.
        .args(["--timeout-ms", "2500"])
        .arg("--report")
        .arg(report)
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .with_context(|| format!("cannot run normfuzz conform for {mutant}"))?;
    match status.code() {
        Some(code @ (0 | 1)) => Ok(code),
        _ => bail!(
            "normfuzz conform could not run mutant {mutant} ({status}); report in {}",
            report.display()
        ),
    }
}

/// Runs the matrix; `Ok` holds the problems (survivors, a failing faithful variant), `Err` only
/// what kept the matrix from running.
pub fn mutants(root: &Path, normfuzz: &Path, options: &Options) -> Result<Vec<String>> {
    let selected = variants(root, &options.only)?;
    if selected.is_empty() {
        bail!("no mutant selected");
    }
    let mut problems = Vec::new();
    if let Some(Variant { rule, .. }) = selected.iter().find(|v| v.name == FAITHFUL) {
        eprintln!("==> {FAITHFUL} ({rule}), {} s", options.faithful);
        let run = faithful(root, normfuzz, options.faithful)?;
        eprintln!("{}", run.summary(options.faithful));
        problems.extend(run.problem);
    }
    let killable: Vec<Variant> = selected
        .into_iter()
        .filter(|v| v.name != FAITHFUL)
        .collect();
    if !killable.is_empty() {
        problems.extend(kill_matrix(root, normfuzz, &killable, options)?);
    }
    Ok(problems)
}

/// The faithful variant's campaign: how many cases it ran and, if it failed the gate, why.
pub struct Faithful {
    pub cases: u64,
    pub problem: Option<String>,
}

impl Faithful {
    /// One line for the log: the cases run and the outcome.
    pub fn summary(&self, seconds: f64) -> String {
        let outcome = self.problem.as_deref().unwrap_or("no gate finding");
        format!("{FAITHFUL}: {} cases in {seconds} s, {outcome}", self.cases)
    }
}

/// The faithful variant (stricter where the spec allows) against the default gate for `seconds`
/// from seed 1: it must pass. It prints nothing, so it can run beside other steps.
pub fn faithful(root: &Path, normfuzz: &Path, seconds: f64) -> Result<Faithful> {
    let report = root.join("target/mutants").join(FAITHFUL);
    conform(root, normfuzz, FAITHFUL, seconds, &report, &[])?;
    let index_path = report.join("index.json");
    let index: Value = serde_json::from_slice(
        &std::fs::read(&index_path)
            .with_context(|| format!("no report at {}", index_path.display()))?,
    )
    .with_context(|| format!("{} is not JSON", index_path.display()))?;
    let problem = first_gate_finding(&report)?.map(|finding| {
        format!(
            "the faithful variant failed the gate: {} {}",
            finding["rule"], finding["kind"]
        )
    });
    Ok(Faithful {
        cases: index["cases"].as_u64().unwrap_or(0),
        problem,
    })
}

/// Every variant but the faithful one, in `mutant.py --list`'s order.
pub(crate) fn killable(root: &Path) -> Result<Vec<Variant>> {
    let mut all = variants(root, &[])?;
    all.retain(|v| v.name != FAITHFUL);
    Ok(all)
}

/// Every variant of `killable` (none the faithful one) against the default gate, `options.jobs`
/// at a time (each campaign is one `normfuzz` and one shim answering in turn, about one core);
/// writes and prints the kill matrix and returns the survivors, if any, as a problem.
pub(crate) fn kill_matrix(
    root: &Path,
    normfuzz: &Path,
    killable: &[Variant],
    options: &Options,
) -> Result<Vec<String>> {
    let reports = root.join("target/mutants");
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let results: Mutex<Vec<Option<Result<Kill>>>> =
        Mutex::new(killable.iter().map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..options.jobs.clamp(1, killable.len().max(1)) {
            scope.spawn(|| {
                while !failed.load(Ordering::Relaxed) {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(Variant { name, rule }) = killable.get(i) else {
                        break;
                    };
                    eprintln!(
                        "==> [{}/{}] {name} ({rule}), {} s",
                        i + 1,
                        killable.len(),
                        options.budget
                    );
                    let kill = kill(root, normfuzz, name, rule, options.budget, &reports);
                    failed.fetch_or(kill.is_err(), Ordering::Relaxed);
                    results.lock().expect("a kill worker panicked")[i] = Some(kill);
                }
            });
        }
    });
    let kills = results
        .into_inner()
        .expect("a kill worker panicked")
        .into_iter()
        .flatten()
        .collect::<Result<Vec<Kill>>>()?;
    let table = matrix(&kills, options.budget);
    println!("{table}");
    eprintln!(
        "kill matrix in {}",
        reports.join("kill-matrix.md").display()
    );
    std::fs::create_dir_all(&reports)?;
    std::fs::write(reports.join("kill-matrix.md"), &table)?;
    let survivors: Vec<&str> = kills
        .iter()
        .filter(|k| {
            k.killed_by.is_none()
                || k.first_seen_ms
                    .is_none_or(|ms| ms as f64 > options.budget * 1000.0)
        })
        .map(|k| k.mutant.as_str())
        .collect();
    let mut problems = Vec::new();
    if !survivors.is_empty() {
        problems.push(format!(
            "mutants surviving {} s: {}",
            options.budget,
            survivors.join(", ")
        ));
    }
    Ok(problems)
}

/// One mutant's campaign, stopped at its first gate finding: its row of the kill matrix.
fn kill(
    root: &Path,
    normfuzz: &Path,
    name: &str,
    rule: &str,
    budget: f64,
    reports: &Path,
) -> Result<Kill> {
    let report = reports.join(name);
    let started = Instant::now();
    conform(
        root,
        normfuzz,
        name,
        budget,
        &report,
        &["--stop-on-gate".as_ref()],
    )?;
    let wall_ms = started.elapsed().as_millis();
    let gate = first_gate_finding(&report)?;
    Ok(Kill {
        mutant: name.to_string(),
        rule: rule.to_string(),
        killed_by: gate
            .as_ref()
            .map(|g| g["rule"].as_str().unwrap_or("?").to_string()),
        first_seen_ms: gate.as_ref().and_then(|g| g["first_seen_ms"].as_u64()),
        wall_ms,
        input: gate
            .map(|g| bounded(&g["input"].to_string(), 90))
            .unwrap_or_default(),
    })
}

/// The report's first gate finding (findings are sorted gate first), if any.
fn first_gate_finding(report: &Path) -> Result<Option<Value>> {
    let index_path = report.join("index.json");
    let index: Value = serde_json::from_slice(
        &std::fs::read(&index_path)
            .with_context(|| format!("no report at {}", index_path.display()))?,
    )
    .with_context(|| format!("{} is not JSON", index_path.display()))?;
    let Some(first) = index["findings"]
        .as_array()
        .and_then(|f| f.iter().find(|f| f["gate"] == true))
    else {
        return Ok(None);
    };
    // The finding file holds the minimal input; one nested deeper than serde_json's recursion
    // limit (a B1 input) is named instead of shown.
    let id = first["id"].as_str().unwrap_or_default();
    let file = report.join("findings").join(format!("{id}.json"));
    let input = std::fs::read(&file)
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .and_then(|f| f.get("input").cloned())
        .unwrap_or_else(|| Value::String(format!("(see {})", file.display())));
    let mut merged = first.clone();
    merged["input"] = input;
    merged["first_seen_ms"] = first["firstSeenMs"].clone();
    Ok(Some(merged))
}

fn bounded(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    format!("{}…", s.chars().take(max).collect::<String>())
}

/// The kill matrix as Markdown, with the median time to kill.
fn matrix(kills: &[Kill], budget: f64) -> String {
    let mut out = String::from(
        "| mutant | breaks | killed by | first failing case (ms) | run incl. shrink (ms) | minimal input |\n|---|---|---|---|---|---|\n",
    );
    for k in kills {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | `{}` |",
            k.mutant,
            k.rule,
            k.killed_by.as_deref().unwrap_or("**survived**"),
            k.first_seen_ms.map_or("-".into(), |ms| ms.to_string()),
            k.wall_ms,
            k.input.replace('|', "\\|").replace('`', "'"),
        );
    }
    let mut times: Vec<u64> = kills.iter().filter_map(|k| k.first_seen_ms).collect();
    times.sort_unstable();
    let mut walls: Vec<u128> = kills.iter().map(|k| k.wall_ms).collect();
    walls.sort_unstable();
    let killed = kills.iter().filter(|k| k.killed_by.is_some()).count();
    let _ = writeln!(
        out,
        "\n{killed} of {} mutants killed within {budget} s; median time to the first failing case {} ms, median run {} ms.",
        kills.len(),
        times.get(times.len() / 2).copied().unwrap_or(0),
        walls.get(walls.len() / 2).copied().unwrap_or(0),
    );
    out
}
