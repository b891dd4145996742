//! Run reports: every `normfuzz conform` and `normfuzz fuzz-report` run writes the same four
//! formats into its folder:
//!
//! - `junit.xml` for CI test reporters (`junit.rs`),
//! - `index.json`, everything as data,
//! - `summary.md`, also appended to `$GITHUB_STEP_SUMMARY` when that is set (`markdown.rs`),
//! - `report.html`, one self-contained page with the rule × op matrix and plots (`html.rs`,
//!   `plot.rs`),
//!
//! plus, for a campaign, one `findings/<id>.json` per distinct bug with its one-line repro.
//! Every file is written to a temporary file in the same folder and renamed into place, so a
//! run killed at any moment leaves no half-written file.

mod html;
mod junit;
mod markdown;
mod matrix;
mod plot;

pub mod fuzz;

use std::collections::HashMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Serialize;

use crate::runner::campaign::{Finding, Outcome};
use matrix::Matrix;

/// Writes `bytes` to `path` atomically (temp file in the same folder, then rename).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("cannot write in {}", dir.display()))?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

fn write_json(path: &Path, value: &impl Serialize) -> Result<()> {
    let mut bytes = serde_json::to_vec_pretty(value)?;
    bytes.push(b'\n');
    write_atomic(path, &bytes)
}

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

/// The four formats, written in order; `summary.md` also goes to the step summary.
fn write_formats(
    dir: &Path,
    index: &serde_json::Value,
    summary: &str,
    junit: &str,
    html: &str,
    step_summary: Option<&Path>,
) -> Result<()> {
    write_json(&dir.join("index.json"), index)?;
    write_atomic(&dir.join("summary.md"), summary.as_bytes())?;
    write_atomic(&dir.join("junit.xml"), junit.as_bytes())?;
    write_atomic(&dir.join("report.html"), html.as_bytes())?;
    if let Some(path) = step_summary {
        append_step_summary(path, summary)?;
    }
    Ok(())
}

/// Characters a reader cannot see or that reorder what they see: C0/C1 controls (newline and
/// tab excepted), zero-width and bidirectional marks, line and paragraph separators, BOM. The
/// HTML and Markdown reports show them as `\uXXXX`: they are what smuggled directives are made of.
fn is_invisible(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(
            c,
            '\u{ad}' | '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2060}'..='\u{2069}' | '\u{feff}'
        )
}

/// A finding as stored: the finding plus the command that replays it.
#[derive(Serialize)]
pub struct StoredFinding<'a> {
    #[serde(flatten)]
    pub finding: &'a Finding,
    pub repro: String,
}

/// The one-line command that replays a stored finding against the same SUT.
pub fn repro_command(finding_path: &Path, sut_command: &str) -> String {
    format!(
        "normfuzz repro {} --sut {}",
        shell_quote(&finding_path.display().to_string()),
        shell_quote(sut_command)
    )
}

fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-=:,+".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// `findings/<id>.json`, relative to the report folder.
fn finding_file(finding: &Finding) -> String {
    format!("findings/{}.json", finding.id)
}

/// One end-to-end run against a real runtime (`normfuzz e2e`), as every format shows it.
pub struct E2eView {
    /// `name@version (version line)`.
    pub runtime: String,
    /// Facts for the header: isolation, seed, time, baseline.
    pub facts: Vec<(&'static str, String)>,
    pub cases: Vec<E2eCaseView>,
    /// Baseline entries that no longer reproduce: (case, rule, reason).
    pub stale: Vec<(String, String, String)>,
}

pub struct E2eCaseView {
    pub id: String,
    pub api: String,
    pub about: String,
    pub elapsed_ms: u64,
    /// The case could not be judged (harness or adapter trouble).
    pub error: Option<String>,
    pub findings: Vec<E2eFindingView>,
}

pub struct E2eFindingView {
    pub rule: String,
    pub reason: String,
    /// Listed in the runtime's baseline.
    pub known: bool,
    pub evidence: serde_json::Value,
    pub repro: String,
    /// `findings/<case>--<rule>.json`, relative to the report folder.
    pub file: String,
}

impl E2eView {
    fn failed(&self) -> usize {
        self.cases.iter().filter(|c| c.failed()).count() + self.stale.len()
    }
}

impl E2eCaseView {
    fn failed(&self) -> bool {
        self.error.is_some() || self.findings.iter().any(|f| !f.known)
    }
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

/// `reports/<name>` with `{stamp}` in `name` replaced by the current Unix time: the default
/// folder of every run, so runs never overwrite each other and sort by start.
pub fn default_dir(name: &str) -> PathBuf {
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    Path::new("reports").join(name.replace("{stamp}", &stamp.to_string()))
}

/// A campaign and what every format derives from it, computed once.
struct CampaignView<'a> {
    outcome: &'a Outcome,
    sut_command: &'a str,
    strict: bool,
    matrix: Matrix<'a>,
    /// Finding id → its one-line repro command.
    repros: HashMap<&'a str, String>,
}

impl CampaignView<'_> {
    fn passed(&self) -> bool {
        self.outcome.failed(self.strict) == 0
    }

    fn repro(&self, finding: &Finding) -> &str {
        self.repros
            .get(finding.id.as_str())
            .map_or("", |r| r.as_str())
    }
}

/// Writes a campaign's report into `dir`; `step_summary` is `$GITHUB_STEP_SUMMARY` if set.
pub fn write(
    dir: &Path,
    outcome: &Outcome,
    sut_command: &str,
    strict: bool,
    step_summary: Option<&Path>,
) -> Result<PathBuf> {
    let campaign = CampaignView {
        outcome,
        sut_command,
        strict,
        matrix: Matrix::new(outcome),
        repros: outcome
            .findings
            .iter()
            .map(|f| {
                let path = dir.join(finding_file(f));
                (f.id.as_str(), repro_command(&path, sut_command))
            })
            .collect(),
    };
    for finding in &outcome.findings {
        write_json(
            &dir.join(finding_file(finding)),
            &StoredFinding {
                finding,
                repro: campaign.repro(finding).to_string(),
            },
        )?;
    }
    write_formats(
        dir,
        &index(&campaign),
        &markdown::campaign(&campaign),
        &junit::campaign(&campaign)?,
        &html::campaign(&campaign),
        step_summary,
    )?;
    Ok(dir.to_path_buf())
}

fn index(campaign: &CampaignView<'_>) -> serde_json::Value {
    let outcome = campaign.outcome;
    serde_json::json!({
        "kind": "conform",
        "verdict": if campaign.passed() { "pass" } else { "fail" },
        "sut": outcome.sut,
        "command": campaign.sut_command,
        "seed": outcome.seed,
        "strict": campaign.strict,
        "elapsedMs": outcome.elapsed_ms,
        "cases": outcome.cases(),
        "failed": outcome.failed(campaign.strict),
        "perOp": outcome.per_op,
        "matrix": campaign.matrix.to_json(),
        "timeline": outcome.timeline,
        "findings": outcome.findings.iter().map(|f| serde_json::json!({
            "id": f.id, "op": f.op, "rule": f.rule, "gate": f.gate, "kind": f.kind, "hits": f.hits,
            "file": finding_file(f), "repro": campaign.repro(f),
        })).collect::<Vec<_>>(),
        "files": {"junit": "junit.xml", "summary": "summary.md", "html": "report.html"},
    })
}
