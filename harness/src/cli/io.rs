//! What several subcommands share: reading the input, printing JSON, opening a SUT.

use std::io::{Read, Write};
use std::path::PathBuf;

use anyhow::{Context, Result};
use normfuzz::runner::sut::{ProcessSut, ReferenceSut, Sut, SutOptions};
use serde::Serialize;

/// The SUT named on the command line: `reference` for the built-in reference in process, else
/// a command (argv, no shell).
pub fn open_sut(command: &str, options: SutOptions) -> Result<Box<dyn Sut>> {
    if command == "reference" {
        return Ok(Box::new(ReferenceSut));
    }
    let argv = ProcessSut::parse_command(command)?;
    Ok(Box::new(ProcessSut::start_with(argv, options)?))
}

/// The whole of `file` (standard input for `-` or none) as UTF-8.
pub fn read_input(file: Option<&PathBuf>) -> Result<String> {
    let mut bytes = Vec::new();
    match file {
        Some(path) if path.as_os_str() != "-" => {
            bytes =
                std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        }
        _ => {
            std::io::stdin()
                .read_to_end(&mut bytes)
                .context("cannot read standard input")?;
        }
    }
    String::from_utf8(bytes).map_err(|e| {
        anyhow::anyhow!(
            "input is not UTF-8 (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        )
    })
}

/// One JSON line, flushed.
pub fn print_json(out: &mut impl Write, value: &impl Serialize) -> Result<()> {
    serde_json::to_writer(&mut *out, value)?;
    out.write_all(b"\n")?;
    out.flush()?;
    Ok(())
}
