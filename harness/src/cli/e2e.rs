//! `normfuzz e2e` (its arguments are the driver's `E2eArgs`) and the hidden `normfuzz e2e-turn`
//! that `e2e` runs inside its namespaces.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use normfuzz::e2e::driver::{self, E2eArgs};
use normfuzz::e2e::one_turn;

#[derive(clap::Args)]
pub struct E2eTurnArgs {
    /// The case folder holding `spec.json`.
    #[arg(long)]
    dir: PathBuf,
}

pub fn run(args: E2eArgs) -> Result<ExitCode> {
    driver::run(args)
}

pub fn turn(args: E2eTurnArgs) -> Result<ExitCode> {
    one_turn::run(&args.dir)?;
    Ok(ExitCode::SUCCESS)
}
