//! `normfuzz fuzz-report`: the report of a libFuzzer run, read from its logs.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use normfuzz::report::{self, fuzz};

#[derive(clap::Args)]
pub struct FuzzReportArgs {
    /// Report folder [default: reports/fuzz-<unix time>].
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// libFuzzer stderr logs; the target is the file name without extension
    /// (target/fuzz/logs/neutralize.log → neutralize).
    #[arg(required = true, value_name = "LOG")]
    logs: Vec<PathBuf>,
}

/// Exits 1 when any target crashed or its log ends early.
pub fn run(args: FuzzReportArgs) -> Result<ExitCode> {
    let FuzzReportArgs { out: dir, logs } = args;
    let dir = dir.unwrap_or_else(|| report::default_dir("fuzz-{stamp}"));
    let runs = fuzz::read_logs(&logs)?;
    fuzz::write(&dir, &runs, report::step_summary_path().as_deref())?;
    let dirty: Vec<String> = runs
        .iter()
        .filter(|r| r.status != fuzz::Status::Clean)
        .map(|r| format!("{} {}", r.target, r.status.as_str()))
        .collect();
    eprintln!(
        "{}: {} targets; report in {}",
        if dirty.is_empty() {
            "clean".to_string()
        } else {
            format!("FAIL ({})", dirty.join(", "))
        },
        runs.len(),
        dir.display()
    );
    Ok(ExitCode::from(u8::from(!dirty.is_empty())))
}
