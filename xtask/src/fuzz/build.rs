//! The libFuzzer targets built by `.clusterfuzzlite/build.sh`, as ClusterFuzzLite builds them.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use tempfile::TempDir;

use crate::step;

/// Which build of the targets.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// The product as it is.
    Real,
    /// With the `planted-bug` feature: the neutralizer misses one blank on purpose.
    PlantedBug,
}

impl Flavor {
    /// Its own cargo target dir, so neither build invalidates the other; scratch corpora,
    /// artifacts and logs live there too.
    fn target_dir(self, root: &Path) -> PathBuf {
        root.join(match self {
            Flavor::Real => "target/fuzz",
            Flavor::PlantedBug => "target/fuzz-planted",
        })
    }

    fn features(self) -> &'static str {
        match self {
            Flavor::Real => "",
            Flavor::PlantedBug => "planted-bug",
        }
    }

    /// The `cargo xtask fuzz` flag that selects it.
    pub(super) fn flag(self) -> &'static str {
        match self {
            Flavor::Real => "",
            Flavor::PlantedBug => " --planted-bug",
        }
    }
}

/// The targets as `.clusterfuzzlite/build.sh` left them in `$OUT`.
pub(super) struct Build {
    pub(super) target_dir: PathBuf,
    out: TempDir,
}

impl Build {
    fn file(&self, name: &str) -> PathBuf {
        self.out.path().join(name)
    }

    pub(super) fn bin(&self, target: &str) -> PathBuf {
        self.file(target)
    }

    pub(super) fn dict(&self, target: &str) -> PathBuf {
        self.file(&format!("{target}.dict"))
    }

    pub(super) fn seed_zip(&self, target: &str) -> PathBuf {
        self.file(&format!("{target}_seed_corpus.zip"))
    }

    /// A fuzzing run of `target` for `seconds` with its dictionary; libFuzzer writes what it
    /// stops on as `<artifact_prefix>crash-<sha1>` (or `timeout-`, `oom-`, `leak-`).
    pub(super) fn libfuzzer(&self, target: &str, seconds: u64, artifact_prefix: &str) -> Command {
        let mut cmd = Command::new(self.bin(target));
        cmd.arg(format!("-max_total_time={seconds}"))
            .arg(format!("-dict={}", self.dict(target).display()))
            .arg(format!("-artifact_prefix={artifact_prefix}"))
            .arg("-timeout=20")
            .arg("-print_final_stats=1");
        cmd
    }
}

/// Runs `.clusterfuzzlite/build.sh` as ClusterFuzzLite does, with `SRC` a scratch folder whose
/// `normfuzz` is this workspace and `OUT` a fresh one; cargo builds in the flavor's persistent
/// target dir, so a rerun only relinks what changed. `profile` is a cargo profile (`release`,
/// or the workspace's cheaper `ci` for the smoke).
pub(super) fn build(root: &Path, flavor: Flavor, profile: &str) -> Result<Build> {
    build_logged(root, flavor, profile, None)
}

/// [`build`], with build.sh's output (cargo's included) written to `log` instead of the
/// terminal when given, so that it can run beside another step.
pub(super) fn build_logged(
    root: &Path,
    flavor: Flavor,
    profile: &str,
    log: Option<&Path>,
) -> Result<Build> {
    let src = tempfile::tempdir().context("creating a scratch SRC")?;
    std::os::unix::fs::symlink(root, src.path().join("normfuzz"))
        .context("linking the workspace into SRC")?;
    let out = tempfile::tempdir().context("creating a scratch OUT")?;
    let target_dir = flavor.target_dir(root);
    let mut cmd = Command::new("bash");
    cmd.arg(root.join(".clusterfuzzlite/build.sh"))
        .env("SRC", src.path())
        .env("OUT", out.path())
        .env("CARGO_TARGET_DIR", &target_dir)
        .env("NORMFUZZ_FUZZ_FEATURES", flavor.features())
        .env("NORMFUZZ_FUZZ_PROFILE", profile);
    let name = format!(
        ".clusterfuzzlite/build.sh (features: {}; profile {profile}; {})",
        format!("libfuzzer {}", flavor.features()).trim_end(),
        target_dir
            .strip_prefix(root)
            .unwrap_or(&target_dir)
            .display()
    );
    match log {
        None => step(&name, cmd)?,
        // Its heading goes to the log too: nothing reaches the terminal.
        Some(log) => {
            let mut file = std::fs::File::create(log)
                .with_context(|| format!("creating {}", log.display()))?;
            writeln!(file, "==> {name}")?;
            cmd.stdout(file.try_clone()?).stderr(file);
            let status = cmd
                .status()
                .with_context(|| format!("cannot start {name}"))?;
            if !status.success() {
                bail!("{name} failed ({status})");
            }
        }
    }
    Ok(Build { target_dir, out })
}
