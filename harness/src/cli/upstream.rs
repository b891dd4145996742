//! `normfuzz upstream`: a finding of a runtime in the matrix as a self-contained bug report for
//! that runtime's tracker (Markdown on stdout).

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use normfuzz::campaign::impact::{Class, Profile};
use normfuzz::report::upstream::{RuntimeFile, read_finding, repro};

#[derive(clap::Args)]
pub struct UpstreamArgs {
    /// A `findings/<id>.json` of a matrix campaign report (`cargo xtask matrix`), or a
    /// `findings/<case>--<rule>.json` of an e2e report, inside its report folder.
    finding: PathBuf,
    /// The folder of the matrix's runtimes (each `<name>/runtime.toml` with its repro template
    /// and `profile.toml`).
    #[arg(long, default_value = "harness/runtimes")]
    runtimes: PathBuf,
    /// Draft a finding that is not a bug of the runtime (hardening or spec) anyway, its class
    /// stated at the top. Without it such a finding is refused (exit 2) with the reason.
    #[arg(long)]
    any_class: bool,
}

/// Drafts bug-class findings only (spec: "Impact classes"): a maintainer reads a report whose
/// harm their users suffer; the class comes from the finding's evidence and the runtime's
/// profile.
pub fn run(args: UpstreamArgs) -> Result<ExitCode> {
    let finding = read_finding(&args.finding)?;
    let (dir, runtime) = RuntimeFile::load(&args.runtimes, &finding.runtime)?;
    let profile = Profile::load(&dir.join(Profile::FILE))?;
    let impact = finding.impact(&profile);
    if impact.class != Class::Bug && !args.any_class {
        eprintln!(
            "normfuzz upstream: not drafted: this {} finding is {} for {}@{}: {}. Only bug-class \
             findings are drafted; --any-class drafts it anyway, its class stated at the top.",
            finding.rule, impact.class, runtime.name, runtime.version, impact.why
        );
        return Ok(ExitCode::from(2));
    }
    let repro = repro(&dir, &runtime, &finding.input)?;
    let markdown = normfuzz::report::upstream_markdown(&finding, &impact, &runtime, &repro);
    std::io::stdout().lock().write_all(markdown.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}
