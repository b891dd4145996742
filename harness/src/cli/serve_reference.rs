//! `normfuzz serve-reference`: the SUT protocol on stdin/stdout, the reference behind it.

use std::process::ExitCode;

use anyhow::Result;

pub fn run() -> Result<ExitCode> {
    normfuzz::reference::serve(
        std::io::BufReader::new(std::io::stdin()),
        std::io::BufWriter::new(std::io::stdout()),
    )?;
    Ok(ExitCode::SUCCESS)
}
