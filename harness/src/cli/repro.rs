//! `normfuzz repro`: a stored finding replayed against a SUT and judged again.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use normfuzz::protocol::Op;
use normfuzz::runner::sut::SutOptions;

use super::io::{open_sut, print_json};

#[derive(clap::Args)]
pub struct ReproArgs {
    /// A `findings/<id>.json` file from a report, or a corpus regression file.
    file: PathBuf,
    /// SUT command (argv, no shell), or `reference` for the built-in reference in process.
    #[arg(long)]
    sut: String,
    /// Per-request timeout in milliseconds.
    #[arg(long, default_value_t = 5000)]
    timeout_ms: u64,
    /// Longest answer line in bytes; a longer one is a protocol fault and the SUT is restarted.
    #[arg(long, value_name = "BYTES", default_value_t = 64 << 20,
          value_parser = clap::value_parser!(u64).range(1..))]
    max_answer_bytes: u64,
}

/// Exits 1 if the finding still fails the gate.
pub fn run(args: ReproArgs) -> Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    let ReproArgs {
        file,
        sut,
        timeout_ms,
        max_answer_bytes,
    } = args;
    let text = std::fs::read_to_string(&file)
        .with_context(|| format!("cannot read {}", file.display()))?;
    let stored: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", file.display()))?;
    let op = stored
        .get("op")
        .and_then(serde_json::Value::as_str)
        .and_then(Op::parse)
        .context("the file names no known `op`")?;
    let input = stored.get("input").context("the file has no `input`")?;
    let options = SutOptions {
        timeout: Duration::from_millis(timeout_ms),
        max_answer_bytes: usize::try_from(max_answer_bytes).unwrap_or(usize::MAX),
        // One case: nothing to calibrate on, it has the whole time-out.
        calibrate: false,
    };
    let mut sut = open_sut(&sut, options)?;
    let (answer, reference, violations) =
        normfuzz::runner::campaign::replay(sut.as_mut(), op, input)?;
    let fails = violations.iter().any(|v| v.gate);
    print_json(
        &mut out,
        &serde_json::json!({"op": op, "violations": violations, "sut": answer, "reference": reference}),
    )?;
    Ok(ExitCode::from(u8::from(fails)))
}
