//! What the renderers read about a campaign or an e2e run: the views computed once per report,
//! the stored form of a finding and the commands that replay one. Imports no renderer.

use std::collections::HashMap;
use std::path::Path;

use serde::Serialize;

use super::matrix::Matrix;
use crate::campaign::{Finding, Outcome};

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

pub(crate) fn shell_quote(s: &str) -> String {
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
pub(super) fn finding_file(finding: &Finding) -> String {
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
    /// Where it was seen: `model`, `payload` or `delivered` (e2e `Layer`).
    pub layer: String,
    pub reason: String,
    /// Listed in the runtime's baseline.
    pub known: bool,
    /// New, of a class `--fail-on` names: it fails the run.
    pub fails: bool,
    pub evidence: serde_json::Value,
    pub repro: String,
    /// `findings/<case>--<rule>--<layer>.json`, relative to the report folder.
    pub file: String,
}

impl E2eFindingView {
    /// The rule id with its layer, as reports show it: `S3 (delivered)`.
    pub fn label(&self) -> String {
        format!("{} ({})", self.rule, self.layer)
    }

    /// `known`, `new`, or `new, passes` (a class outside `--fail-on`), as reports mark it.
    pub fn standing(&self) -> &'static str {
        match (self.known, self.fails) {
            (true, _) => "known",
            (false, true) => "new",
            (false, false) => "new, passes",
        }
    }
}

impl E2eView {
    pub(super) fn failed(&self) -> usize {
        self.cases.iter().filter(|c| c.failed()).count() + self.stale.len()
    }
}

impl E2eCaseView {
    pub(super) fn failed(&self) -> bool {
        self.error.is_some() || self.findings.iter().any(|f| f.fails)
    }
}

/// A campaign and what every format derives from it, computed once.
pub(super) struct CampaignView<'a> {
    pub(super) outcome: &'a Outcome,
    pub(super) sut_command: &'a str,
    pub(super) strict: bool,
    pub(super) matrix: Matrix<'a>,
    /// Finding id → its one-line repro command.
    repros: HashMap<&'a str, String>,
}

impl<'a> CampaignView<'a> {
    /// The view of `outcome` for a report in `dir` (where the findings' repro commands point).
    pub(super) fn new(
        dir: &Path,
        outcome: &'a Outcome,
        sut_command: &'a str,
        strict: bool,
    ) -> Self {
        CampaignView {
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
        }
    }

    pub(super) fn passed(&self) -> bool {
        self.outcome.passes(self.strict)
    }

    /// The SUT's own script, where code scanning and annotations place a finding: the first
    /// word of its command that is a relative path to a file (`node normfuzz/shim.mjs`).
    pub(super) fn sut_file(&self) -> Option<&'a str> {
        self.sut_command.split_whitespace().find(|w| {
            let path = Path::new(w.trim_matches(['\'', '"']));
            path.is_relative() && path.extension().is_some() && path.is_file()
        })
    }

    pub(super) fn repro(&self, finding: &Finding) -> &str {
        self.repros
            .get(finding.id.as_str())
            .map_or("", |r| r.as_str())
    }
}
