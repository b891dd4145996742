//! `normfuzz retry-images`: a `resolve_retry_images` request through the retry policy.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use normfuzz::reference::retry::RetryImagesInput;

use super::io::{print_json, read_input};

#[derive(clap::Args)]
pub struct RetryImagesArgs {
    /// JSON file to read; `-` reads standard input.
    file: PathBuf,
}

pub fn run(args: RetryImagesArgs) -> Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    let input = read_input(Some(&args.file))?;
    let input: RetryImagesInput =
        serde_json::from_str(&input).context("input is not a resolve_retry_images request")?;
    print_json(&mut out, &input.run())?;
    Ok(ExitCode::SUCCESS)
}
