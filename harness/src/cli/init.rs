//! `normfuzz init`: what a runtime's repository needs to run normfuzz in its CI: a starter shim
//! that speaks the protocol correctly, `normfuzz.toml`, a profile and an empty baseline to fill
//! in, and a workflow that calls the normfuzz Action. Never overwrites a file.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};

/// The Action a generated workflow calls (`uses:`); `--action` names another (a fork, a pinned
/// commit).
pub const DEFAULT_ACTION: &str = "normfuzz/normfuzz@v0";

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum Lang {
    Node,
    Python,
}

#[derive(clap::Args)]
#[command(after_long_help = "\
Files written (relative to --dir; an existing one stops the command before anything is written):

  normfuzz/shim.mjs or normfuzz/shim.py
      The SUT: reads one request per line, answers in order. Fill in a handler per op your
      runtime has (each takes the op's input and returns its output); handlers left empty are
      not offered. Escapes, line splitting and answer bounds are already right.
  normfuzz/shim-coverage.mjs or normfuzz/shim_coverage.py
      Measures your runtime's own coverage (the protocol's coverage extension) of what the
      shim's COVERAGE names; the report shows it with the lines no case reached.
  normfuzz.toml
      What `normfuzz conform --config normfuzz.toml` and the Action run: the shim command,
      ops, cases, seed, profile, baseline and the impact classes that fail the run.
  normfuzz/profile.toml
      Your runtime's conventions (does it act on MEDIA: lines, replay history, which folders
      and time-outs), from which each finding's impact class is derived.
  normfuzz/baseline.toml
      Known findings (none yet). Draft entries with `normfuzz conform --config normfuzz.toml
      --write-baseline normfuzz/baseline.toml`, then give each its cause and reason.
  .github/workflows/normfuzz.yml
      Runs the campaign on every push and pull request with the normfuzz Action: fails on a
      new finding, uploads the report, annotates the findings.")]
pub struct InitArgs {
    /// The shim's language.
    #[arg(long, value_enum)]
    lang: Lang,
    /// The repository to set up.
    #[arg(long, default_value = ".")]
    dir: PathBuf,
    /// The runtime's name, as reports show it (letters, digits, `.`, `_`, `-`, `@`, `/`).
    #[arg(long, default_value = "my-runtime")]
    name: String,
    /// The Action the workflow calls (`OWNER/REPO@REF`).
    #[arg(long, default_value = DEFAULT_ACTION)]
    action: String,
}

const SHIM_NODE: &str = include_str!("../../templates/init/shim.mjs");
const SHIM_PYTHON: &str = include_str!("../../templates/init/shim.py");
/// The shared shims' coverage code (the protocol's coverage extension), written beside the shim.
const COVERAGE_NODE: &str = include_str!("../../runtimes/lib/shim-coverage.mjs");
const COVERAGE_PYTHON: &str = include_str!("../../runtimes/lib/shim_coverage.py");
const CONFIG: &str = include_str!("../../templates/init/normfuzz.toml");
const PROFILE: &str = include_str!("../../templates/init/profile.toml");
const BASELINE: &str = include_str!("../../templates/init/baseline.toml");
const WORKFLOW: &str = include_str!("../../templates/init/workflow.yml");

pub fn run(args: InitArgs) -> Result<ExitCode> {
    let name_ok = !args.name.is_empty()
        && args
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-@/".contains(c));
    if !name_ok {
        bail!(
            "--name {:?}: use letters, digits, `.`, `_`, `-`, `@` and `/` only",
            args.name
        );
    }
    if !args.action.contains('@') || args.action.contains(char::is_whitespace) {
        bail!("--action {:?} is not OWNER/REPO@REF", args.action);
    }
    let files = files(&args);
    let existing: Vec<String> = files
        .iter()
        .map(|(path, _)| args.dir.join(path))
        .filter(|p| p.exists())
        .map(|p| p.display().to_string())
        .collect();
    if !existing.is_empty() {
        bail!(
            "not overwriting {}: move them away or run in another --dir",
            existing.join(", ")
        );
    }
    for (path, text) in &files {
        let path = args.dir.join(path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        normfuzz::fs::write_atomic(&path, text.as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    let shim = shim_path(args.lang);
    eprintln!(
        "\nNext: fill in the handlers in {shim}, then\n  \
         normfuzz conform --config normfuzz.toml --write-baseline normfuzz/baseline.toml\n\
         to see the findings and draft the baseline; read each entry in your code, then commit."
    );
    Ok(ExitCode::SUCCESS)
}

fn shim_path(lang: Lang) -> &'static str {
    match lang {
        Lang::Node => "normfuzz/shim.mjs",
        Lang::Python => "normfuzz/shim.py",
    }
}

/// Every file `init` writes, relative to `--dir`, with its text.
fn files(args: &InitArgs) -> Vec<(PathBuf, String)> {
    let (shim, coverage, sut, setup) = match args.lang {
        Lang::Node => (
            SHIM_NODE,
            ("normfuzz/shim-coverage.mjs", COVERAGE_NODE),
            "node normfuzz/shim.mjs",
            "      - uses: actions/setup-node@v4\n        with:\n          node-version: 22\n      \
             # Install what the shim imports (your runtime), e.g.:\n      - run: npm ci\n",
        ),
        Lang::Python => (
            SHIM_PYTHON,
            ("normfuzz/shim_coverage.py", COVERAGE_PYTHON),
            "python3 normfuzz/shim.py",
            "      - uses: actions/setup-python@v5\n        with:\n          python-version: \
             \"3.12\"\n      # Install what the shim imports (your runtime), e.g.:\n      \
             - run: pip install .\n",
        ),
    };
    let fill = |template: &str| {
        template
            .replace("{name}", &args.name)
            .replace("{sut}", sut)
            .replace("{setup}", setup)
            .replace("{action}", &args.action)
    };
    vec![
        (Path::new(shim_path(args.lang)).to_path_buf(), fill(shim)),
        (coverage.0.into(), coverage.1.to_string()),
        ("normfuzz.toml".into(), fill(CONFIG)),
        ("normfuzz/profile.toml".into(), fill(PROFILE)),
        ("normfuzz/baseline.toml".into(), fill(BASELINE)),
        (".github/workflows/normfuzz.yml".into(), fill(WORKFLOW)),
    ]
}
