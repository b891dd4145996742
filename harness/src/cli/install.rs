//! `normfuzz install`: installs a runtime adapter's `[[install]]` steps into the cache (or finds
//! them there) and prints the install folder: `cargo xtask matrix` runs a runtime whose
//! `runtime.toml` has `e2e_install` from it, and a machine can be prepared before going offline.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use normfuzz::e2e::adapter::Adapter;
use normfuzz::e2e::install;

#[derive(clap::Args)]
pub struct InstallArgs {
    /// Runtime adapter file (harness/runtimes/<name>/e2e.toml).
    #[arg(long)]
    adapter: PathBuf,
    /// Install cache root (default: $NORMFUZZ_CACHE, else ~/.cache/normfuzz).
    #[arg(long)]
    cache: Option<PathBuf>,
}

pub fn run(args: InstallArgs) -> Result<ExitCode> {
    let adapter = Adapter::load(&args.adapter)?;
    let dir = std::path::absolute(install::runtime_dir(&adapter, args.cache))?;
    let version = install::ensure(&adapter, &dir)?;
    eprintln!("{} ready in {} ({version})", adapter.label(), dir.display());
    println!("{}", dir.display());
    Ok(ExitCode::SUCCESS)
}
