//! Campaign reports under `reports/<run>/`: `index.json` (everything), `summary.md`, and one
//! `findings/<id>.json` per distinct bug with its one-line repro. Every file is written to a
//! temporary file in the same folder and renamed into place, so a run killed at any moment
//! leaves no half-written file.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Serialize;

use crate::conform::{Finding, Outcome};

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

/// Writes the whole report; returns the folder.
pub fn write(dir: &Path, outcome: &Outcome, sut_command: &str, strict: bool) -> Result<PathBuf> {
    let findings_dir = dir.join("findings");
    for finding in &outcome.findings {
        let path = findings_dir.join(format!("{}.json", finding.id));
        write_json(
            &path,
            &StoredFinding {
                finding,
                repro: repro_command(&path, sut_command),
            },
        )?;
    }
    write_json(
        &dir.join("index.json"),
        &serde_json::json!({
            "sut": outcome.sut,
            "command": sut_command,
            "seed": outcome.seed,
            "strict": strict,
            "elapsedMs": outcome.elapsed_ms,
            "cases": outcome.cases(),
            "failed": outcome.failed(strict),
            "perOp": outcome.per_op,
            "findings": outcome.findings.iter().map(|f| serde_json::json!({
                "id": f.id, "op": f.op, "rule": f.rule, "gate": f.gate, "kind": f.kind, "hits": f.hits,
                "file": format!("findings/{}.json", f.id),
            })).collect::<Vec<_>>(),
        }),
    )?;
    write_atomic(
        &dir.join("summary.md"),
        summary(outcome, sut_command, strict).as_bytes(),
    )?;
    Ok(dir.to_path_buf())
}

/// The Markdown summary: verdict, a table per op, and each finding with its minimal input.
pub fn summary(outcome: &Outcome, sut_command: &str, strict: bool) -> String {
    let mut md = String::new();
    let failed = outcome.failed(strict);
    let _ = writeln!(md, "# normfuzz conformance: {}\n", outcome.sut);
    let _ = writeln!(
        md,
        "`{sut_command}`, seed {}, {} cases in {:.1} s: **{}**\n",
        outcome.seed,
        outcome.cases(),
        outcome.elapsed_ms as f64 / 1000.0,
        if failed == 0 { "pass" } else { "FAIL" }
    );
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
    if !outcome.findings.is_empty() {
        let _ = writeln!(md, "\n## Findings\n");
    }
    for f in &outcome.findings {
        let class = if f.gate { "gate failure" } else { "divergence" };
        let input = crate::json_text::bounded(&f.input.to_string(), 600).into_owned();
        let _ = writeln!(
            md,
            "### `{}` ({class}, {} hits)\n\n{}: {}\n\nminimal input: `{}`\n",
            f.id,
            f.hits,
            f.kind,
            f.detail.replace('\n', "⏎"),
            input.replace('`', "'")
        );
    }
    md
}
