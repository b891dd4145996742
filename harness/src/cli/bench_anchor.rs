//! `normfuzz bench-anchor`: a real runtime's own coercion timed on the benchmark documents
//! (`generate::bench_docs`), on the runtime's installed Node. `cargo xtask bench --anchor`
//! runs it next to criterion and prints the table the guide's Speed chapter quotes.

use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};

use anyhow::{Context, Result, bail};
use normfuzz::e2e::adapter::Adapter;
use normfuzz::e2e::install;
use normfuzz::fs::write_atomic;
use normfuzz::generate::bench_docs::coercion_docs;

#[derive(clap::Args)]
pub struct BenchAnchorArgs {
    /// Runtime adapter file (harness/runtimes/<name>/e2e.toml); installed on first use, as for e2e.
    #[arg(long)]
    adapter: PathBuf,
    /// Node script that times the runtime's coercion: `node SCRIPT <install dir> <docs dir>
    /// <runs>` printing one `{"name","bytes","ns"}` line per document.
    #[arg(long)]
    script: PathBuf,
    /// Folder the documents are written to (with `manifest.json`).
    #[arg(long)]
    docs: PathBuf,
    /// Timed runs per document; the best one counts.
    #[arg(long, default_value_t = 5)]
    runs: u32,
    /// Install cache (default: $NORMFUZZ_CACHE, else ~/.cache/normfuzz).
    #[arg(long)]
    cache: Option<PathBuf>,
}

pub fn run(args: BenchAnchorArgs) -> Result<ExitCode> {
    std::fs::create_dir_all(&args.docs)
        .with_context(|| format!("cannot create {}", args.docs.display()))?;
    let mut manifest = Vec::new();
    for doc in coercion_docs() {
        let file = format!("{}.json", doc.name);
        write_atomic(&args.docs.join(&file), doc.json.as_bytes())?;
        manifest.push(serde_json::json!({"name": doc.name, "file": file}));
    }
    write_atomic(
        &args.docs.join("manifest.json"),
        serde_json::to_string(&manifest)?.as_bytes(),
    )?;

    let adapter = Adapter::load(&args.adapter)?;
    let dir = std::path::absolute(install::runtime_dir(&adapter, args.cache))?;
    let version = install::ensure(&adapter, &dir)?;
    eprintln!("{} ready in {} ({version})", adapter.label(), dir.display());
    let status = Command::new("node")
        .arg(&args.script)
        .arg(&dir)
        .arg(&args.docs)
        .arg(args.runs.to_string())
        .env("PATH", install::runtime_path(&adapter, &dir)?)
        .stdin(Stdio::null())
        .status()
        .context("cannot run node")?;
    if !status.success() {
        bail!("{} exited {status}", args.script.display());
    }
    Ok(ExitCode::SUCCESS)
}
