//! `cargo xtask mutants --pairs`: does a baseline tell a second bug under a known rule from the
//! first? For two variants A and B of `mutant.py` that break the same rule, a campaign against A
//! drafts a baseline (`--write-baseline`), then one against `A+B` (both bugs, same seed and
//! budget) reads it: the pair is caught when that run fails on a new finding that is B's, replayed
//! with `normfuzz repro`: `A+B` shows it again (else it is a flake: a hang of the shim under
//! load) and A alone does not. Two checks keep the measurement honest and fail the task: A alone
//! against its own draft must pass but for flakes (a draft knows the run it came from), and
//! `faithful` must draft no entry (none from a judge's false alarm). Pairs that slip are the
//! measurement, not a failure.

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{Context, Result, anyhow, bail};
use serde_json::Value;

use super::{FAITHFUL, Variant, conform, shim_command, variants};

/// Campaigns at once: each is a normfuzz, the Python shim and its reference child, and the
/// machine it was measured on has two cores.
const WIDTH: usize = 2;

pub struct Options {
    /// Seconds of each campaign.
    pub budget: f64,
    /// Seconds of the faithful variant's draft.
    pub faithful: f64,
    /// Only these variants (all when empty); `faithful` is drafted when selected.
    pub only: Vec<String>,
    /// Only pairs of these rules (all when empty).
    pub only_rule: Vec<String>,
    /// Where the reports (`mutants/pairs/`) and the table (`mutant-pairs.md`) go.
    pub out: PathBuf,
}

/// A gate finding of a report: (op, rule, kind), its standing and its file.
struct Finding {
    key: (String, String, String),
    new: bool,
    file: PathBuf,
}

/// One campaign: its exit code and gate findings.
struct Run {
    code: i32,
    findings: Vec<Finding>,
}

impl Run {
    fn new_findings(&self) -> impl Iterator<Item = &Finding> {
        self.findings.iter().filter(|f| f.new)
    }
}

/// A's draft: the run, its report's gate findings, and the entries it wrote.
struct Draft {
    run: Run,
    entries: usize,
}

/// A second-phase run (A or `A+B` against A's draft) and whose each new finding is.
struct Judged {
    run: Run,
    whose: Vec<Whose>,
}

/// Whose a new finding is, by its replays: against the run's own SUT, then (for a pair) A alone.
#[derive(Clone, Copy, PartialEq)]
enum Whose {
    /// The pair shows it again and A alone does not.
    B,
    /// `normfuzz repro` cannot replay it (a B1 input nested deeper than serde_json reads).
    Unknown,
    /// A alone shows it: A's draft missed it.
    A,
    /// The SUT that found it does not show it again: a timing flake (a slow answer under load).
    Flake,
}

/// Runs every pair; `Ok` holds the problems (an A that fails its own draft, entries drafted on
/// `faithful`), `Err` what kept the pairs from running.
pub fn pairs(root: &Path, normfuzz: &Path, options: &Options) -> Result<Vec<String>> {
    let selected = variants(root, &options.only)?;
    let pairs: Vec<(&Variant, &Variant)> = selected
        .iter()
        .flat_map(|a| selected.iter().map(move |b| (a, b)))
        .filter(|(a, b)| a.name != b.name && a.rule == b.rule && a.name != FAITHFUL)
        .filter(|(a, _)| options.only_rule.is_empty() || options.only_rule.contains(&a.rule))
        .collect();
    let faithful = selected.iter().any(|v| v.name == FAITHFUL);
    if pairs.is_empty() && !faithful {
        bail!("no two selected variants break the same rule");
    }
    let dir = options.out.join("mutants/pairs");
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("cannot clear {}", dir.display()))?;
    }
    let firsts: BTreeSet<&str> = pairs.iter().map(|(a, _)| a.name.as_str()).collect();
    let mut drafted: Vec<(&str, f64)> = firsts.iter().map(|a| (*a, options.budget)).collect();
    if faithful {
        drafted.push((FAITHFUL, options.faithful));
    }
    eprintln!(
        "==> {} drafts, then {} own-draft checks and {} pairs, {} s each, {WIDTH} at once",
        drafted.len(),
        firsts.len(),
        pairs.len(),
        options.budget
    );
    let drafts = parallel(&drafted, |&(name, seconds)| {
        let base = dir.join(name).join("base.toml");
        let report = dir.join(name).join("draft");
        let code = conform(
            root,
            normfuzz,
            name,
            seconds,
            &report,
            &["--write-baseline".as_ref(), base.as_os_str()],
        )?;
        let text = std::fs::read_to_string(&base)
            .with_context(|| format!("the draft wrote no {}", base.display()))?;
        let entries = toml::from_str::<toml::Value>(&text)
            .with_context(|| format!("{} is not TOML", base.display()))?
            .get("known")
            .and_then(toml::Value::as_array)
            .map_or(0, Vec::len);
        Ok(Draft {
            run: read_run(code, &report)?,
            entries,
        })
    })?;
    let draft_of = |name: &str| {
        drafted
            .iter()
            .position(|(n, _)| *n == name)
            .map(|i| &drafts[i])
    };

    // The second phase: each A against its own draft, and each pair.
    enum Job<'a> {
        Again(&'a str),
        Pair(&'a Variant, &'a Variant),
    }
    let jobs: Vec<Job> = firsts
        .iter()
        .map(|a| Job::Again(a))
        .chain(pairs.iter().map(|(a, b)| Job::Pair(a, b)))
        .collect();
    let results = parallel(&jobs, |job| {
        let (known, mutant, report) = match job {
            Job::Again(a) => (*a, a.to_string(), dir.join(a).join("again")),
            Job::Pair(a, b) => {
                let mutant = format!("{}+{}", a.name, b.name);
                (a.name.as_str(), mutant.clone(), dir.join(mutant))
            }
        };
        let base = dir.join(known).join("base.toml");
        let code = conform(
            root,
            normfuzz,
            &mutant,
            options.budget,
            &report,
            &["--baseline".as_ref(), base.as_os_str()],
        )?;
        let run = read_run(code, &report)?;
        let mut whose = Vec::new();
        for f in run.new_findings() {
            whose.push(match reproduces(root, normfuzz, &mutant, f)? {
                None => Whose::Unknown,
                Some(false) => Whose::Flake,
                Some(true) if mutant == known => Whose::A,
                Some(true) => match reproduces(root, normfuzz, known, f)? {
                    None => Whose::Unknown,
                    Some(true) => Whose::A,
                    Some(false) => Whose::B,
                },
            });
        }
        Ok(Judged { run, whose })
    })?;
    let (again, pair_runs) = results.split_at(firsts.len());

    let mut problems = Vec::new();
    let mut table = String::from(
        "| pair (known + new) | rule | caught? | new finding (rule / kind) | note |\n|---|---|---|---|---|\n",
    );
    let mut tally = [0; 4];
    for ((a, b), result) in pairs.iter().zip(pair_runs) {
        let draft = draft_of(&a.name).context("a pair without its draft")?;
        let b_alone = draft_of(&b.name).map(|d| &d.run);
        let (whose, finding, note) = judge(&draft.run, b_alone, result);
        if let Some(whose) = whose {
            tally[whose as usize] += 1;
        }
        let caught = matches!(whose, Some(Whose::B | Whose::Unknown));
        let _ = writeln!(
            table,
            "| {} + {} | {} | {} | {finding} | {} |",
            a.name,
            b.name,
            a.rule,
            if caught { "yes" } else { "**no**" },
            note.replace('|', "\\|")
        );
    }
    let [by_b, unknown, by_a, flakes] = tally;
    let _ = writeln!(
        table,
        "\n**caught {} of {} pairs** ({} s per campaign, seed 1): a new finding of B's in \
         {by_b}, one that cannot be replayed in {unknown}. The run against both bugs failed in \
         {} pairs; in {by_a} more only on A's own findings (A's draft missed them), in {flakes} \
         more only on flakes (not shown again on replay).",
        by_b + unknown,
        pairs.len(),
        options.budget,
        by_b + unknown + by_a + flakes,
    );
    for (a, result) in firsts.iter().zip(again) {
        if result.run.code == 0 {
            continue;
        }
        let (flaky, missed): (Vec<_>, Vec<_>) = result
            .run
            .new_findings()
            .zip(&result.whose)
            .partition(|(_, whose)| **whose == Whose::Flake);
        let names = |v: &[(&Finding, &Whose)]| {
            v.iter()
                .map(|(f, _)| key(&f.key))
                .collect::<Vec<_>>()
                .join(", ")
        };
        if missed.is_empty() {
            let _ = writeln!(
                table,
                "\n{a} alone failed its own draft only on flakes: {}",
                names(&flaky)
            );
        } else {
            let line = format!(
                "{a} alone failed its own draft: it missed {}",
                names(&missed)
            );
            let _ = writeln!(table, "\n{line}");
            problems.push(line);
        }
    }
    if let Some(draft) = faithful.then(|| draft_of(FAITHFUL)).flatten() {
        let _ = writeln!(
            table,
            "\n{FAITHFUL} ({} s): {} entries drafted (a judge's false alarm each).",
            options.faithful, draft.entries
        );
        if draft.entries > 0 {
            problems.push(format!(
                "{} baseline entries drafted on {FAITHFUL}: {}",
                draft.entries,
                draft
                    .run
                    .findings
                    .iter()
                    .map(|f| key(&f.key))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    println!("{table}");
    let out = options.out.join("mutant-pairs.md");
    std::fs::write(&out, &table).with_context(|| format!("cannot write {}", out.display()))?;
    eprintln!("pair table in {}", out.display());
    Ok(problems)
}

/// Whose new finding made the pair's run fail (None: it passed), the finding shown, and a note:
/// for a pair that slipped, what B alone showed in its own draft run (`b_alone`) beside A's
/// `draft`.
fn judge(draft: &Run, b_alone: Option<&Run>, pair: &Judged) -> (Option<Whose>, String, String) {
    // The finding most likely B's, in the order of `Whose`.
    let first = pair
        .run
        .new_findings()
        .zip(&pair.whose)
        .min_by_key(|(_, whose)| **whose as usize);
    if let Some((f, whose)) = first
        && pair.run.code == 1
    {
        let note = match whose {
            Whose::B => "",
            Whose::Unknown => "not replayed (repro cannot read its input)",
            Whose::A => "every new finding reproduces on A alone: A's draft missed it",
            Whose::Flake => "every new finding is a flake: not shown again on replay",
        };
        return (Some(*whose), key(&f.key), note.into());
    }
    let drafted: BTreeSet<_> = draft.findings.iter().map(|f| &f.key).collect();
    let note = match b_alone {
        None => "B was not run alone".into(),
        Some(b) if b.findings.is_empty() => "B alone showed no gate finding in the budget".into(),
        Some(b) => {
            let shared: Vec<String> = b
                .findings
                .iter()
                .filter(|f| drafted.contains(&f.key))
                .map(|f| key(&f.key))
                .collect();
            let own: Vec<String> = b
                .findings
                .iter()
                .filter(|f| !drafted.contains(&f.key))
                .map(|f| key(&f.key))
                .collect();
            if own.is_empty() {
                format!("B alone shows only what A shows: {}", shared.join(", "))
            } else {
                format!(
                    "B alone also shows {}: not reached with A in the budget",
                    own.join(", ")
                )
            }
        }
    };
    (None, "-".into(), note)
}

/// `op rule kind` of a finding key.
fn key((op, rule, kind): &(String, String, String)) -> String {
    format!("{rule} {kind} on {op}")
}

/// The gate findings of the report in `report`, after a run that exited with `code`.
fn read_run(code: i32, report: &Path) -> Result<Run> {
    let path = report.join("index.json");
    let index: Value = serde_json::from_slice(
        &std::fs::read(&path).with_context(|| format!("no report at {}", path.display()))?,
    )
    .with_context(|| format!("{} is not JSON", path.display()))?;
    let findings = index["findings"]
        .as_array()
        .with_context(|| format!("{} lists no findings", path.display()))?
        .iter()
        .filter(|f| f["gate"] == true)
        .map(|f| {
            let s = |k: &str| f[k].as_str().unwrap_or_default().to_string();
            Finding {
                key: (s("op"), s("rule"), s("kind")),
                new: f["baseline"] == "new",
                file: report.join("findings").join(format!("{}.json", s("id"))),
            }
        })
        .collect();
    Ok(Run { code, findings })
}

/// Whether `finding` (its rule and kind) fails again when its input is replayed against the
/// variant `mutant` alone (then it is that variant's own, missed by its draft); None when
/// `normfuzz repro` cannot replay it (it exits 2: a B1 input nested deeper than it reads).
fn reproduces(
    root: &Path,
    normfuzz: &Path,
    mutant: &str,
    finding: &Finding,
) -> Result<Option<bool>> {
    let output = Command::new(normfuzz)
        .current_dir(root)
        .env("NORMFUZZ_MUTANT", mutant)
        .env("NORMFUZZ_BIN", normfuzz)
        .arg("repro")
        .arg(&finding.file)
        .args([OsStr::new("--sut"), shim_command(root).as_ref()])
        .args(["--timeout-ms", "2500"])
        .stderr(Stdio::null())
        .output()
        .with_context(|| format!("cannot run normfuzz repro for {mutant}"))?;
    match output.status.code() {
        Some(0 | 1) => {}
        Some(2) => return Ok(None),
        _ => bail!(
            "normfuzz repro {} against {mutant} failed ({})",
            finding.file.display(),
            output.status
        ),
    }
    let replayed: Value = serde_json::from_slice(&output.stdout)
        .with_context(|| format!("normfuzz repro {} printed no JSON", finding.file.display()))?;
    let (_, rule, kind) = &finding.key;
    Ok(Some(replayed["violations"].as_array().is_some_and(|v| {
        v.iter()
            .any(|v| v["gate"] == true && v["rule"] == rule.as_str() && v["kind"] == kind.as_str())
    })))
}

/// `f` over `items`, `WIDTH` at once, the results in the items' order; the first error wins.
fn parallel<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> Result<R> + Sync) -> Result<Vec<R>> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<R>>>> = Mutex::new(items.iter().map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..WIDTH {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = items.get(i) else { break };
                    let result = f(item);
                    results.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(result);
                }
            });
        }
    });
    results
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err(anyhow!("a job did not run"))))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// normfuzz as this test's cargo profile built it (`target/<profile>/normfuzz`), built
    /// first when missing (`cargo test -p xtask` alone does not build it).
    fn normfuzz() -> PathBuf {
        let exe = std::env::current_exe().expect("the test binary's path");
        let dir = exe
            .parent()
            .and_then(Path::parent)
            .expect("target/<profile>/deps");
        let path = dir.join("normfuzz");
        if !path.is_file() {
            let profile = match dir.file_name().and_then(|n| n.to_str()) {
                Some("debug") | None => "dev",
                Some(profile) => profile,
            };
            let status = crate::cargo(
                &crate::workspace_root(),
                &["build", "-p", "normfuzz", "--profile", profile],
            )
            .status()
            .expect("cargo");
            assert!(status.success(), "cannot build normfuzz");
        }
        path
    }

    /// Two S1 variants, each once the known bug and once the new one: drafts, own-draft checks,
    /// pair runs (with the replay of their new findings) and the table, end to end. Whether a
    /// pair is caught is the measurement, and the own-draft checks can fail on a slow answer
    /// of the shim to a multi-megabyte tool result that one run reaches and the other does not:
    /// neither is asserted.
    #[test]
    fn two_s1_variants_are_measured_as_pairs() {
        let out = tempfile::tempdir().expect("a temporary folder");
        let options = Options {
            budget: 3.0,
            faithful: 0.0,
            only: vec!["s1_case_sensitive".into(), "s1_no_nfkc".into()],
            only_rule: Vec::new(),
            out: out.path().to_path_buf(),
        };
        pairs(&crate::workspace_root(), &normfuzz(), &options).expect("pairs run");
        let table = std::fs::read_to_string(out.path().join("mutant-pairs.md")).expect("table");
        for row in [
            "| s1_case_sensitive + s1_no_nfkc | S1 |",
            "| s1_no_nfkc + s1_case_sensitive | S1 |",
        ] {
            assert!(table.contains(row), "{row} missing from\n{table}");
        }
        assert!(table.contains(" of 2 pairs** (3 s per campaign"), "{table}");
    }
}
