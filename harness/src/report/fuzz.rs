//! `normfuzz fuzz-report`: libFuzzer's stderr logs, one per target, read into the model of
//! `libfuzzer.rs` and written as the same four formats as a campaign.

use std::path::Path;

use anyhow::Result;

pub use super::libfuzzer::{Crash, FuzzRun, FuzzSample, Status, parse_log, read_log, read_logs};
use super::{html, junit, markdown, write_formats};

/// Writes a fuzz run's report into `dir`; `step_summary` is `$GITHUB_STEP_SUMMARY` if set.
pub fn write(dir: &Path, runs: &[FuzzRun], step_summary: Option<&Path>) -> Result<()> {
    let clean = runs.iter().all(|r| r.status == Status::Clean);
    let index = serde_json::json!({
        "kind": "fuzz",
        "verdict": if clean { "pass" } else { "fail" },
        "targets": runs,
        "files": {"junit": "junit.xml", "summary": "summary.md", "html": "report.html"},
    });
    write_formats(
        dir,
        &index,
        &markdown::fuzz(runs),
        &junit::fuzz(runs)?,
        &html::fuzz(runs),
        step_summary,
    )
}
