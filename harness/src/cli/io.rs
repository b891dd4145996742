//! What several subcommands share: reading the input, printing JSON, opening a SUT.

use std::io::{Read, Write};
use std::path::PathBuf;

use anyhow::{Context, Result};
use normfuzz::sut::{ProcessSut, ReferenceSut, Sut, SutOptions};
use serde::Serialize;

/// The limits a SUT process runs under, as `conform` and `repro` take them.
#[derive(clap::Args)]
pub struct SutArgs {
    /// Per-request time-out in milliseconds (with `conform`'s calibration, the ceiling).
    #[arg(long, default_value_t = 5000)]
    timeout_ms: u64,
    /// Longest answer line in bytes; a longer one is a protocol fault and the SUT is restarted.
    #[arg(long, value_name = "BYTES", default_value_t = 64 << 20,
          value_parser = clap::value_parser!(u64).range(1..))]
    max_answer_bytes: u64,
    /// How long a (re)started SUT has to send its handshake, in milliseconds: a runtime whose
    /// imports are slow may need more than the protocol's 10 s on a loaded machine.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    handshake_timeout_ms: u64,
}

impl SutArgs {
    pub fn options(&self, calibrate: bool) -> SutOptions {
        SutOptions {
            timeout: std::time::Duration::from_millis(self.timeout_ms),
            max_answer_bytes: usize::try_from(self.max_answer_bytes).unwrap_or(usize::MAX),
            calibrate,
            handshake_timeout: std::time::Duration::from_millis(self.handshake_timeout_ms),
        }
    }
}

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
