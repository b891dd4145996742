//! `normfuzz coerce`: a CallToolResult through the reference coercion.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};

use super::io::read_input;

#[derive(clap::Args)]
pub struct CoerceArgs {
    /// JSON file to read; `-` or nothing reads standard input.
    file: Option<PathBuf>,
}

pub fn run(args: CoerceArgs) -> Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    let input = read_input(args.file.as_ref())?;
    let result =
        normfuzz::reference::coerce::coerce_json(&input).context("input is not valid JSON")?;
    out.write_all(&result.to_json_bytes())?;
    out.write_all(b"\n")?;
    Ok(ExitCode::SUCCESS)
}
