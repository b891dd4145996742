//! `normfuzz repro`: a stored finding replayed against a SUT and judged again.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use normfuzz::protocol::Op;

use super::io::{SutArgs, open_sut, print_json};

#[derive(clap::Args)]
pub struct ReproArgs {
    /// A `findings/<id>.json` file from a report, or a corpus regression file.
    file: PathBuf,
    /// SUT command (argv, no shell), or `reference` for the built-in reference in process.
    #[arg(long)]
    sut: String,
    #[command(flatten)]
    sut_limits: SutArgs,
}

/// Exits 1 if the finding still fails the gate.
pub fn run(args: ReproArgs) -> Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    let ReproArgs {
        file,
        sut,
        sut_limits,
    } = args;
    let stored = normfuzz::report::read_json(&file)?;
    let op = stored
        .get("op")
        .and_then(serde_json::Value::as_str)
        .and_then(Op::parse)
        .context("the file names no known `op`")?;
    let input = stored.get("input").context("the file has no `input`")?;
    // One case: nothing to calibrate on, it has the whole time-out.
    let options = sut_limits.options(false);
    let mut sut = open_sut(&sut, options)?;
    let (answer, reference, violations) = normfuzz::campaign::replay(sut.as_mut(), op, input)?;
    let fails = violations.iter().any(|v| v.gate);
    print_json(
        &mut out,
        &serde_json::json!({"op": op, "violations": violations, "sut": answer, "reference": reference}),
    )?;
    Ok(ExitCode::from(u8::from(fails)))
}
