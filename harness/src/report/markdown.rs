//! `summary.md`, also appended to `$GITHUB_STEP_SUMMARY`: the verdict, a table, and each
//! finding or crash with what replays it. GitHub renders raw HTML and Markdown found in text, so
//! every piece of text from a run is in a code span or a fenced block (`code`, `fenced`).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::escape::is_invisible;
use super::libfuzzer::{FuzzRun, Status};
use super::view::{CampaignView, E2eView};
use crate::campaign::Standing;
use crate::campaign::{Finding, Outcome};

/// Bytes of a minimal input shown in the summary; the finding's file has all of it.
const INPUT_MAX: usize = 600;

/// `s` as an inline code span, whatever it contains: a backtick fence longer than any run of
/// backticks inside, newlines shown as `⏎`, invisible characters as `\uXXXX`, `|` escaped so the
/// span can sit in a table.
pub(super) fn code(s: &str) -> String {
    let mut shown = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\n' => shown.push('⏎'),
            '|' => shown.push_str("\\|"),
            c if is_invisible(c) => {
                let _ = write!(shown, "\\u{:04x}", u32::from(c));
            }
            c => shown.push(c),
        }
    }
    let fence = "`".repeat(longest_run(&shown, '`') + 1);
    // A space on each side keeps a leading or trailing backtick out of the fence.
    format!("{fence} {shown} {fence}")
}

/// `s` as a fenced block of `language` (kept verbatim but for invisible characters).
pub(super) fn fenced(language: &str, s: &str) -> String {
    let shown: String = s
        .chars()
        .map(|c| {
            if is_invisible(c) {
                format!("\\u{:04x}", u32::from(c))
            } else {
                c.to_string()
            }
        })
        .collect();
    let fence = "`".repeat(longest_run(&shown, '`').max(2) + 1);
    format!("{fence}{language}\n{shown}\n{fence}")
}

fn longest_run(s: &str, c: char) -> usize {
    s.split(|x| x != c).map(str::len).max().unwrap_or(0)
}

fn verdict(passed: bool) -> &'static str {
    if passed { "pass" } else { "FAIL" }
}

/// The campaign's rate; when it shrank anything, also its steady rate (no job shrinking) and the
/// job time spent shrinking; when the SUT faulted, its restarts and the job time its hangs cost;
/// slow answers; the harness's share of the CPU.
pub fn rates(outcome: &Outcome) -> String {
    let mut line = format!("{:.0} cases/s", outcome.rate());
    if outcome.shrink_ms > 0 {
        let steady = outcome.steady_rate().map_or_else(String::new, |r| {
            format!("{r:.0} cases/s while no job shrank, ")
        });
        let _ = write!(
            line,
            "; {steady}{:.1} s shrinking beside the jobs",
            outcome.shrink_ms as f64 / 1000.0
        );
    }
    let faults = &outcome.faults;
    if faults.restarts() > 0 {
        let _ = write!(
            line,
            "; {} restarts ({} hangs costing {:.1} s of job time, {} crashes, {} garbled answers)",
            faults.restarts(),
            faults.hangs,
            faults.hang_ms as f64 / 1000.0,
            faults.crashes,
            faults.garbled
        );
    }
    if faults.late > 0 {
        let _ = write!(
            line,
            "; {} slow answers waited for past the calibrated time-out (no restart)",
            faults.late
        );
    }
    if faults.slow > 0 {
        let _ = write!(
            line,
            "; {} slow cases withdrawn (answered with the full time-out)",
            faults.slow
        );
    }
    if outcome.left_out() > 0 {
        let _ = write!(
            line,
            "; {} cases of ops that hung left out once hangs had cost a third of the time",
            outcome.left_out()
        );
    }
    if let Some(share) = outcome.cpu.harness_share() {
        let _ = write!(
            line,
            "; the harness {:.0}% of the CPU ({:.1} s against the SUT's {:.1} s)",
            share * 100.0,
            outcome.cpu.harness_ms as f64 / 1000.0,
            outcome.cpu.sut_ms as f64 / 1000.0
        );
    }
    line
}

pub fn campaign(campaign: &CampaignView<'_>) -> String {
    let outcome = campaign.outcome;
    let mut md = String::new();
    let _ = writeln!(md, "# normfuzz conformance: {}\n", code(&outcome.sut));
    let _ = writeln!(
        md,
        "{}, seed {}, {} cases in {:.1} s ({}): **{}** ({} failed cases{})\n",
        code(campaign.sut_command),
        outcome.seed,
        outcome.cases(),
        outcome.elapsed_ms as f64 / 1000.0,
        rates(outcome),
        verdict(campaign.passed()),
        outcome.failed(campaign.strict),
        if campaign.strict {
            ", strict: divergences count"
        } else {
            ""
        }
    );
    if let Some(judged) = &outcome.baseline {
        let _ = writeln!(
            md,
            "Against the baseline {}: **{}**\n",
            code(&judged.file),
            judged.counts()
        );
        for k in &judged.not_reached {
            let _ = writeln!(
                md,
                "- not reached: {} on {} ({}, {}): stale if the SUT fixed it; a longer run or \
                 the fix's own test tells",
                k.rule,
                k.op,
                k.class,
                code(&k.cause)
            );
        }
        if !judged.not_reached.is_empty() {
            md.push('\n');
        }
    }
    md.push_str(&super::coverage::markdown(outcome.coverage.as_deref()));
    md.push('\n');
    let _ = writeln!(
        md,
        "| op | cases | passed | failed | divergent | rules hit |\n|---|---|---|---|---|---|"
    );
    for (op, t) in &outcome.per_op {
        let rules: Vec<String> = t.rules.iter().map(|(r, n)| format!("{r}×{n}")).collect();
        let _ = writeln!(
            md,
            "| {op} | {} | {} | {} | {} | {} |",
            t.cases,
            t.passed,
            t.failed,
            t.divergent,
            rules.join(" ")
        );
    }
    let _ = writeln!(
        md,
        "\nThe report folder's `report.html` has the rule × op matrix, progress plots and both \
         answers of every finding; `junit.xml` is for CI test reporters."
    );
    causes(outcome, &mut md);
    if !outcome.findings.is_empty() {
        let _ = writeln!(md, "\n## Findings\n");
    }
    for f in &outcome.findings {
        let verdict = match (f.gate, f.baseline) {
            (true, Some(Standing::Known)) => "known",
            (true, Some(Standing::New)) => "new gate failure",
            (true, None) => "gate failure",
            (false, _) => "divergence",
        };
        let class = match &f.impact {
            Some(impact) => format!("{verdict}, {}: {}", impact.class, impact.why),
            None => verdict.to_string(),
        };
        let input = crate::excerpt::bounded(&f.input.to_string(), INPUT_MAX).into_owned();
        let _ = writeln!(
            md,
            "### {} ({class}, {} hits)\n\n{} on {}: {}: {}\n\ncause: {} ({})\n\nminimal input: {}\n\nrepro: {}\n",
            code(&f.id),
            f.hits,
            f.rule,
            f.op,
            code(&f.kind),
            code(&f.detail),
            code(f.cause.as_deref().unwrap_or("-")),
            code(&f.signature.describe()),
            code(&input),
            code(campaign.repro(f)),
        );
    }
    md
}

/// The gate findings grouped by cause (its baseline entry's, or the one drafted from its
/// signature): what a maintainer triages, one row per root cause however many findings show it.
fn causes(outcome: &Outcome, md: &mut String) {
    let mut rows: BTreeMap<&str, (Vec<&Finding>, u64)> = BTreeMap::new();
    for f in outcome.findings.iter().filter(|f| f.gate) {
        let row = rows.entry(f.cause.as_deref().unwrap_or("-")).or_default();
        row.0.push(f);
        row.1 += f.hits;
    }
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(
        md,
        "\n## Causes\n\n| cause | standing | class | rules | findings | hits |\n|---|---|---|---|---|---|"
    );
    for (cause, (findings, hits)) in rows {
        let set = |f: &dyn Fn(&Finding) -> String| {
            let mut items: Vec<String> = findings.iter().map(|x| f(x)).collect();
            items.sort();
            items.dedup();
            items.join(", ")
        };
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {hits} |",
            code(cause),
            set(&|f| match f.baseline {
                Some(Standing::Known) => "known".into(),
                Some(Standing::New) => "new".into(),
                None => "-".into(),
            }),
            set(&|f| f
                .impact
                .as_ref()
                .map_or("-".into(), |i| i.class.to_string())),
            set(&|f| f.rule.to_string()),
            findings.len(),
        );
    }
}

pub fn fuzz(runs: &[FuzzRun]) -> String {
    let passed = runs.iter().all(|r| r.status == Status::Clean);
    let mut md = format!(
        "# normfuzz fuzz: **{}**\n\n| target | status | executions | seconds | exec/s | cov | corpus |\n|---|---|---|---|---|---|---|\n",
        verdict(passed)
    );
    let num = |v: Option<u64>| v.map_or("?".to_string(), |v| v.to_string());
    for run in runs {
        let last = run.last();
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} |",
            code(&run.target),
            run.status.as_str(),
            run.execs,
            num(run.seconds),
            num(run.exec_per_sec),
            num(last.and_then(|s| s.cov)),
            num(last.and_then(|s| s.corpus)),
        );
    }
    for run in runs.iter().filter(|r| r.status == Status::Incomplete) {
        let _ = writeln!(
            md,
            "\n{}: the log ({}) ends before libFuzzer's final `Done` line: interrupted, or it never started fuzzing.",
            code(&run.target),
            code(&run.log)
        );
    }
    for run in runs {
        let Some(crash) = &run.crash else {
            continue;
        };
        let _ = writeln!(
            md,
            "\n## {} crashed\n\n{}\n\nartifact: {}\n\nrepro: {}\n\n{}",
            code(&run.target),
            code(&crash.reason),
            crash
                .artifact
                .as_deref()
                .map_or("none written".into(), code),
            run.repro()
                .map_or("(no artifact to replay)".into(), |r| code(&r)),
            fenced("text", &crash.excerpt),
        );
    }
    md
}

pub fn e2e(view: &E2eView) -> String {
    let mut md = String::new();
    let failed = view.failed();
    let findings: Vec<_> = view
        .cases
        .iter()
        .flat_map(|c| c.findings.iter().map(move |f| (c, f)))
        .collect();
    let known = findings.iter().filter(|(_, f)| f.known).count();
    let errors = view.cases.iter().filter(|c| c.error.is_some()).count();
    let _ = writeln!(md, "# normfuzz e2e: {}\n", code(&view.runtime));
    let _ = writeln!(
        md,
        "{} cases, {} findings ({known} known, {} new), {} stale, {errors} errors: **{}**\n",
        view.cases.len(),
        findings.len(),
        findings.len() - known,
        view.stale.len(),
        verdict(failed == 0)
    );
    let _ = writeln!(md, "| case | API | findings | time |\n|---|---|---|---|");
    for c in &view.cases {
        let cell = match &c.error {
            Some(e) => format!("error: {}", e.replace('|', "\\|").replace('\n', " ")),
            None if c.findings.is_empty() => "pass".into(),
            None => c
                .findings
                .iter()
                .map(|f| {
                    if f.fails {
                        format!("{} **new**", f.label())
                    } else {
                        format!("{} {}", f.label(), f.standing())
                    }
                })
                .collect::<Vec<_>>()
                .join(", "),
        };
        let _ = writeln!(
            md,
            "| {} | {} | {cell} | {:.1} s |",
            code(&c.id),
            c.api,
            c.elapsed_ms as f64 / 1000.0
        );
    }
    if !findings.is_empty() {
        let _ = writeln!(md, "\n## Findings\n");
    }
    for (c, f) in &findings {
        let _ = writeln!(
            md,
            "- **{}** {}{}: {}. Repro: {}",
            f.label(),
            code(&c.id),
            if f.fails {
                String::new()
            } else {
                format!(" ({})", f.standing())
            },
            f.reason,
            code(&f.repro)
        );
    }
    for (case, rule, reason) in &view.stale {
        let _ = writeln!(
            md,
            "- stale baseline entry: {} {rule} ({reason})",
            code(case)
        );
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_spans_hold_any_text() {
        assert_eq!(code("a"), "` a `");
        assert_eq!(code("a`b``c"), "``` a`b``c ```");
        assert_eq!(code("x|y\nz\u{200b}"), "` x\\|y⏎z\\u200b `");
        assert_eq!(fenced("text", "```\nx"), "````text\n```\nx\n````");
    }
}
