//! `normfuzz upstream`: a finding of a runtime in the matrix as a self-contained bug report for
//! that runtime's tracker (Markdown on stdout).

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use normfuzz::runner::upstream::{RuntimeFile, read_finding, repro};

#[derive(clap::Args)]
pub struct UpstreamArgs {
    /// A `findings/<id>.json` of a matrix campaign report (`cargo xtask matrix`), or a
    /// `findings/<case>--<rule>.json` of an e2e report, inside its report folder.
    finding: PathBuf,
    /// The folder of the matrix's runtimes (each `<name>/runtime.toml` with its repro template).
    #[arg(long, default_value = "harness/runtimes")]
    runtimes: PathBuf,
}

pub fn run(args: UpstreamArgs) -> Result<ExitCode> {
    let finding = read_finding(&args.finding)?;
    let (dir, runtime) = RuntimeFile::load(&args.runtimes, &finding.runtime)?;
    let repro = repro(&dir, &runtime, &finding.input)?;
    let markdown = normfuzz::runner::report::upstream_markdown(&finding, &runtime, &repro);
    std::io::stdout().lock().write_all(markdown.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}
