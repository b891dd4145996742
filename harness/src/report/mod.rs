//! Run reports: every `normfuzz conform` and `normfuzz fuzz-report` run writes the same four
//! formats into its folder:
//!
//! - `junit.xml` for CI test reporters (`junit.rs`),
//! - `index.json`, everything as data,
//! - `summary.md`, also appended to `$GITHUB_STEP_SUMMARY` when that is set (`markdown.rs`),
//! - `report.html`, one self-contained page with the rule × op matrix and plots (`html/`),
//!
//! plus, for a campaign, one `findings/<id>.json` per distinct bug with its one-line repro and
//! `results.sarif` (SARIF 2.1.0, for code scanning: `sarif.rs`).
//! Every file is written with `crate::fs::write_atomic` (a temporary file in the same folder,
//! renamed into place), so a run killed at any moment leaves no half-written file. A campaign's
//! folder is also put in place as one unit (`publish`: written into a hidden sibling, then that
//! folder renamed), so a killed `normfuzz conform` leaves its report folder absent or complete,
//! never some files without the others; `index.json` is written last everywhere, so the folders
//! written in place (an e2e run's, which fills up during the run, and a fuzz report's) are
//! complete once it is there.
//!
//! Three layers, each importing only the ones below it:
//!
//! - writers: this file (a campaign, an e2e run) and `fuzz.rs` (`normfuzz fuzz-report`) put a
//!   run's model through every renderer and write the files;
//! - renderers: `junit.rs`, `markdown.rs` and `html/` (page layout in `html/mod.rs`, one file
//!   per kind of run, the SVG charts in `html/plot.rs`), which read the models and share one
//!   helper, `escape.rs` (HTML escaping, the invisible characters);
//! - models, which import no renderer: `view.rs` (a campaign's and an e2e run's views, stored
//!   findings, repro commands), `matrix.rs` (rule × op), `libfuzzer.rs` (libFuzzer logs,
//!   parsed) and `merge.rs` (shard reports read back and joined).

mod coverage;
mod escape;
mod github;
mod html;
mod json_file;
mod junit;
mod libfuzzer;
mod markdown;
mod matrix;
mod pretty;
mod publish;
mod sarif;
pub mod upstream;
mod view;

pub mod fuzz;
pub mod merge;

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

pub use json_file::{read_json, write_json};
pub use upstream::markdown::upstream_markdown;
pub use view::{E2eCaseView, E2eFindingView, E2eView, StoredFinding, repro_command};

use crate::campaign::Outcome;
use crate::fs::write_atomic;
use crate::report::upstream::RuntimeId;
pub use markdown::rates;
use view::{CampaignView, finding_file};

/// Appends `markdown` to a GitHub Actions step summary. Appended, never replaced: other steps
/// of the job write to the same file. One `write_all` on a file opened for appending, so the
/// text lands after whatever is there even if another process appends too.
pub fn append_step_summary(path: &Path, markdown: &str) -> Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| format!("cannot open the step summary {}", path.display()))?;
    file.write_all(format!("{markdown}\n").as_bytes())
        .with_context(|| format!("cannot append to the step summary {}", path.display()))
}

/// The four formats, `index.json` last (the others are complete once it is there);
/// `summary.md` also goes to the step summary.
fn write_formats(
    dir: &Path,
    index: &serde_json::Value,
    summary: &str,
    junit: &str,
    html: &str,
    step_summary: Option<&Path>,
) -> Result<()> {
    write_atomic(&dir.join("summary.md"), summary.as_bytes())?;
    write_atomic(&dir.join("junit.xml"), junit.as_bytes())?;
    write_atomic(&dir.join("report.html"), html.as_bytes())?;
    write_json(&dir.join("index.json"), index)?;
    if let Some(path) = step_summary {
        append_step_summary(path, summary)?;
    }
    Ok(())
}

/// Writes an e2e run's `index.json` (given), `summary.md`, `junit.xml` and `report.html`.
pub fn write_e2e(
    dir: &Path,
    index: &serde_json::Value,
    view: &E2eView,
    step_summary: Option<&Path>,
) -> Result<()> {
    write_formats(
        dir,
        index,
        &markdown::e2e(view),
        &junit::e2e(view)?,
        &html::e2e(view),
        step_summary,
    )
}

/// `$GITHUB_STEP_SUMMARY`: GitHub Actions' Markdown file for the step, where reports append
/// their summary.
pub fn step_summary_path() -> Option<PathBuf> {
    std::env::var_os("GITHUB_STEP_SUMMARY")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
}

/// `reports/<name>` with `{stamp}` in `name` replaced by the current UTC time to the second
/// (`2026-11-26T09-43-19Z`: RFC 3339 with `-` for `:`, which Windows and some archivers refuse):
/// the default folder of every run, so runs never overwrite each other and sort by start.
pub fn default_dir(name: &str) -> PathBuf {
    Path::new("reports").join(name.replace("{stamp}", &stamp(std::time::SystemTime::now())))
}

fn stamp(at: std::time::SystemTime) -> String {
    humantime::format_rfc3339_seconds(at)
        .to_string()
        .replace(':', "-")
}

/// Writes a campaign's report into `dir` as one unit (`publish`): a previous report there is
/// replaced; `runtime` is the matrix runtime the SUT is, if any; `step_summary` is
/// `$GITHUB_STEP_SUMMARY` if set, appended to once the folder is in place.
pub fn write(
    dir: &Path,
    outcome: &Outcome,
    sut_command: &str,
    strict: bool,
    runtime: Option<&RuntimeId>,
    step_summary: Option<&Path>,
) -> Result<PathBuf> {
    // Repro commands name the final folder, not the staging one.
    let campaign = CampaignView::new(dir, outcome, sut_command, strict);
    let summary = markdown::campaign(&campaign);
    let (index, junit, html, sarif) = (
        index(&campaign, runtime),
        junit::campaign(&campaign)?,
        html::campaign(&campaign),
        sarif::campaign(&campaign),
    );
    publish::publish(dir, &publish::REPORT_ENTRIES, |into| {
        for finding in &outcome.findings {
            write_json(
                &into.join(finding_file(finding)),
                &StoredFinding {
                    finding,
                    repro: campaign.repro(finding).to_string(),
                },
            )?;
        }
        write_json(&into.join("results.sarif"), &sarif)?;
        write_formats(into, &index, &summary, &junit, &html, None)
    })?;
    if let Some(path) = step_summary {
        append_step_summary(path, &summary)?;
    }
    Ok(dir.to_path_buf())
}

/// The GitHub Actions annotations of a campaign's report in `dir` (`github.rs`).
pub fn github_annotations(
    dir: &Path,
    outcome: &Outcome,
    sut_command: &str,
    strict: bool,
) -> Vec<String> {
    github::annotations(&CampaignView::new(dir, outcome, sut_command, strict))
}

/// A rate to one decimal, as reports print it.
fn rounded(rate: f64) -> f64 {
    (rate * 10.0).round() / 10.0
}

fn index(campaign: &CampaignView<'_>, runtime: Option<&RuntimeId>) -> serde_json::Value {
    let outcome = campaign.outcome;
    serde_json::json!({
        "kind": "conform",
        "verdict": if campaign.passed() { "pass" } else { "fail" },
        "sut": outcome.sut,
        "runtime": runtime,
        "command": campaign.sut_command,
        "seed": outcome.seed,
        "strict": campaign.strict,
        "elapsedMs": outcome.elapsed_ms,
        "jobs": outcome.jobs,
        "shrinkMs": outcome.shrink_ms,
        "casesPerSecond": rounded(outcome.rate()),
        "steadyCases": outcome.steady_cases,
        "steadyJobMs": outcome.steady_job_ms,
        "steadyCasesPerSecond": outcome.steady_rate().map(rounded),
        "faults": outcome.faults,
        "cpu": {
            "harnessMs": outcome.cpu.harness_ms,
            "sutMs": outcome.cpu.sut_ms,
            "harnessShare": outcome.cpu.harness_share().map(|s| (s * 1000.0).round() / 1000.0),
        },
        "failOn": outcome.fail_on,
        "baseline": outcome.baseline,
        "cases": outcome.cases(),
        "failed": outcome.failed(campaign.strict),
        "perOp": outcome.per_op,
        "matrix": campaign.matrix.to_json(),
        "timeline": outcome.timeline,
        "coverage": outcome.coverage,
        "steering": outcome.steering,
        "findings": outcome.findings.iter().map(|f| serde_json::json!({
            "id": f.id, "op": f.op, "rule": f.rule, "gate": f.gate, "kind": f.kind, "hits": f.hits,
            "class": f.impact.as_ref().map(|i| i.class), "why": f.impact.as_ref().map(|i| &i.why),
            "baseline": f.baseline, "cause": f.cause,
            "firstSeenMs": f.first_seen_ms, "file": finding_file(f), "repro": campaign.repro(f),
        })).collect::<Vec<_>>(),
        "files": {"junit": "junit.xml", "summary": "summary.md", "html": "report.html", "sarif": "results.sarif"},
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn report_folders_are_named_by_readable_utc_time() {
        let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_795_686_199);
        assert_eq!(super::stamp(at), "2026-11-26T09-43-19Z");
        let dir = super::default_dir("{stamp}-seed1");
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        assert_eq!(name.len(), "2026-11-26T09-43-19Z-seed1".len(), "{name}");
        assert!(name.ends_with("Z-seed1") && !name.contains(':'), "{name}");
    }
}
