//! `normfuzz merge-reports`: the reports of the shards of one campaign joined into one.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use normfuzz::e2e::driver::merge as e2e_merge;
use normfuzz::report::merge;

#[derive(clap::Args)]
pub struct MergeReportsArgs {
    /// Folder for the merged report (replaced if it exists).
    #[arg(long)]
    out: PathBuf,
    /// The shards' report folders (`normfuzz conform --shard K/N --report DIR`, or `normfuzz e2e
    /// --shard K/N --report DIR`).
    #[arg(required = true)]
    reports: Vec<PathBuf>,
}

/// Exits 1 when any case of the merged run fails the gate, as `conform` does (an e2e run: on
/// a new finding, an error or a stale baseline entry, as `e2e` does).
pub fn run(args: MergeReportsArgs) -> Result<ExitCode> {
    let first = args.reports[0].join("index.json");
    let index = normfuzz::report::read_json(&first).unwrap_or_default();
    if e2e_merge::is_e2e_index(&index) {
        return e2e_merge::merge(&args.out, &args.reports);
    }
    let parts = args
        .reports
        .iter()
        .map(|dir| merge::read(dir))
        .collect::<Result<Vec<_>>>()?;
    let whole = merge::merge(parts)?;
    normfuzz::report::write(
        &args.out,
        &whole.outcome,
        &whole.command,
        whole.strict,
        whole.runtime.as_ref(),
        normfuzz::report::step_summary_path().as_deref(),
    )?;
    let failed = whole.outcome.failed(whole.strict);
    eprintln!(
        "merged {} reports: {} cases, {} failed, {} findings; report in {}",
        args.reports.len(),
        whole.outcome.cases(),
        failed,
        whole.outcome.findings.len(),
        args.out.display()
    );
    Ok(ExitCode::from(u8::from(failed > 0)))
}
