//! `normfuzz neutralize`: untrusted text through the whole-text neutralizer.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use normfuzz::reference::neutralize::{MARKER, neutralize};
use serde::Serialize;

use super::io::{print_json, read_input};

#[derive(clap::Args)]
pub struct NeutralizeArgs {
    /// Text file to read; `-` or nothing reads standard input.
    file: Option<PathBuf>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct NeutralizeOutput<'a> {
    text: &'a str,
    neutralized_lines: usize,
}

pub fn run(args: NeutralizeArgs) -> Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    let input = read_input(args.file.as_ref())?;
    let text = neutralize(&input);
    // Each neutralized line gained exactly one marker: one scan, not two.
    let lines = (text.len() - input.len()) / MARKER.len();
    print_json(
        &mut out,
        &NeutralizeOutput {
            text: &text,
            neutralized_lines: lines,
        },
    )?;
    Ok(ExitCode::SUCCESS)
}
