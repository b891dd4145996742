//! `normfuzz parse-reply`: a final assistant reply through `parse_reply`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use normfuzz::reference::media_policy::MediaRoots;
use normfuzz::reference::reply;

use super::io::{print_json, read_input};

#[derive(clap::Args)]
pub struct ParseReplyArgs {
    /// Allowed local media root (absolute, or `~`/`~/...` for the home directory); repeatable.
    /// Relative media paths resolve against the first.
    #[arg(long = "root", value_name = "DIR")]
    roots: Vec<String>,
    /// Text file to read; `-` or nothing reads standard input.
    file: Option<PathBuf>,
}

pub fn run(args: ParseReplyArgs) -> Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    let ParseReplyArgs { roots, file } = args;
    for root in &roots {
        MediaRoots::check_root(root).map_err(|e| anyhow::anyhow!("bad --root {root:?}: {e}"))?;
    }
    let text = read_input(file.as_ref())?;
    print_json(
        &mut out,
        &reply::parse_reply(&text, &MediaRoots::new(&roots)),
    )?;
    Ok(ExitCode::SUCCESS)
}
