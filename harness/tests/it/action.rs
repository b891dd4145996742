//! The Action's scripts (`action/*.sh`, the steps of `action.yml`) run here as a runner would
//! run them: install puts a released binary on PATH only when its checksum matches, and the
//! campaign step against the tutorial's shim writes the outputs, the job summary and the
//! annotations. (The metadata itself is checked against the Action schema by `cargo xtask ci`.)

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn tools_present() -> bool {
    ["bash", "curl", "tar", "sha256sum", "node"]
        .iter()
        .all(|t| Command::new(t).arg("--version").output().is_ok())
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A release folder as the release workflow publishes it: `<tag>/normfuzz-<target>.tar.gz`
/// with its `.sha256`, made from the binary under test.
fn release(dir: &Path, tag: &str, target: &str) -> PathBuf {
    let base = dir.join("releases");
    let folder = base.join(tag);
    std::fs::create_dir_all(&folder).unwrap();
    let stage = dir.join("stage");
    std::fs::create_dir_all(&stage).unwrap();
    std::fs::copy(env!("CARGO_BIN_EXE_normfuzz"), stage.join("normfuzz")).unwrap();
    let archive = format!("normfuzz-{target}.tar.gz");
    let status = Command::new("tar")
        .arg("-czf")
        .arg(folder.join(&archive))
        .arg("-C")
        .arg(&stage)
        .arg("normfuzz")
        .status()
        .unwrap();
    assert!(status.success());
    let sum = Command::new("sha256sum")
        .arg(&archive)
        .current_dir(&folder)
        .output()
        .unwrap();
    std::fs::write(folder.join(format!("{archive}.sha256")), &sum.stdout).unwrap();
    base
}

fn install(dir: &Path, base: &Path, path: &str) -> (Output, PathBuf) {
    let github_path = dir.join("github_path");
    let out = Command::new("bash")
        .arg(root().join("action/install.sh"))
        .env(
            "GITHUB_ACTION_PATH",
            dir.join("_actions/normfuzz/normfuzz/v0.1.0"),
        )
        .env(
            "NORMFUZZ_DOWNLOAD_BASE",
            format!("file://{}", base.display()),
        )
        .env("RUNNER_TEMP", dir.join("runner_temp"))
        .env("GITHUB_PATH", &github_path)
        .env("PATH", path)
        .output()
        .unwrap();
    (out, github_path)
}

#[test]
fn install_puts_a_checked_release_binary_on_path_and_refuses_a_bad_checksum() {
    if !tools_present() || std::env::consts::OS != "linux" {
        eprintln!("SKIPPED: needs bash, curl, tar, sha256sum and node on Linux");
        return;
    }
    let target = match std::env::consts::ARCH {
        "x86_64" => "x86_64-unknown-linux-musl",
        "aarch64" => "aarch64-unknown-linux-musl",
        other => {
            eprintln!("SKIPPED: no release target for {other}");
            return;
        }
    };
    let dir = tempfile::tempdir().unwrap();
    let base = release(dir.path(), "v0.1.0", target);
    let path = std::env::var("PATH").unwrap();
    let (out, github_path) = install(dir.path(), &base, &path);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("installed normfuzz v0.1.0"),
        "{}",
        text(&out)
    );
    let added = std::fs::read_to_string(&github_path).unwrap();
    let bin = Path::new(added.trim()).join("normfuzz");
    let version = Command::new(&bin).arg("--version").output().unwrap();
    assert!(String::from_utf8_lossy(&version.stdout).starts_with("normfuzz "));

    // A tampered archive stops the step; it never falls back to building.
    let archive = base.join(format!("v0.1.0/normfuzz-{target}.tar.gz"));
    let mut bytes = std::fs::read(&archive).unwrap();
    *bytes.last_mut().unwrap() ^= 1;
    std::fs::write(&archive, bytes).unwrap();
    let (out, _) = install(dir.path(), &base, &path);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("checksum mismatch"), "{}", text(&out));
    assert!(
        !text(&out).contains("building from source"),
        "{}",
        text(&out)
    );

    // No release for the ref and no cargo: a clear error.
    std::fs::remove_dir_all(base.join("v0.1.0")).unwrap();
    let (out, _) = install(dir.path(), &base, "/usr/bin:/bin");
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("cargo is not installed"),
        "{}",
        text(&out)
    );
}

#[test]
fn the_campaign_step_writes_outputs_summary_and_annotations() {
    if !tools_present() {
        eprintln!("SKIPPED: needs bash and node");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    // The tutorial's shim (tests/it/tutorial.rs fills it the same way), with no baseline
    // entries: every finding is new.
    let init = Command::new(env!("CARGO_BIN_EXE_normfuzz"))
        .current_dir(&repo)
        .args(["init", "--lang", "node", "--name", "demo-runtime"])
        .output()
        .unwrap();
    assert!(init.status.success(), "{}", text(&init));
    std::fs::copy(
        root().join("harness/tests/fixtures/tutorial/normalize.mjs"),
        repo.join("normalize.mjs"),
    )
    .unwrap();
    let shim = repo.join("normfuzz/shim.mjs");
    let filled = std::fs::read_to_string(&shim)
        .unwrap()
        .replacen(
            "const handlers = {",
            "import { checkMediaUrl } from \"../normalize.mjs\";\nconst handlers = {",
            1,
        )
        .replacen(
            "  check_media_url: null,",
            "  check_media_url: ({ url }) => checkMediaUrl(url),",
            1,
        );
    std::fs::write(&shim, filled).unwrap();
    let bin = Path::new(env!("CARGO_BIN_EXE_normfuzz")).parent().unwrap();
    let (output, summary) = (dir.path().join("output"), dir.path().join("summary.md"));
    let run = |args: &str| {
        Command::new("bash")
            .arg(root().join("action/conform.sh"))
            .current_dir(&repo)
            .env("INPUT_CONFIG", "normfuzz.toml")
            .env("INPUT_ARGS", args)
            .env("INPUT_REPORT", "normfuzz-report")
            .env("GITHUB_ACTIONS", "true")
            .env("GITHUB_OUTPUT", &output)
            .env("GITHUB_STEP_SUMMARY", &summary)
            .env(
                "PATH",
                format!("{}:{}", bin.display(), std::env::var("PATH").unwrap()),
            )
            .output()
            .unwrap()
    };
    let out = run("--cases 500");
    assert!(
        out.status.success(),
        "the step itself succeeds: {}",
        text(&out)
    );
    let outputs = std::fs::read_to_string(&output).unwrap();
    assert!(outputs.contains("exit-code=1\n"), "{outputs}");
    assert!(outputs.contains("verdict=fail\n"), "{outputs}");
    assert!(outputs.contains("report=normfuzz-report\n"), "{outputs}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("::error file=normfuzz/shim.mjs,title=normfuzz U")),
        "{stdout}"
    );
    assert!(
        std::fs::read_to_string(&summary)
            .unwrap()
            .contains("# normfuzz conformance: ` demo-runtime `")
    );
    assert!(repo.join("normfuzz-report/results.sarif").is_file());

    // A missing config is an error verdict, not a pass.
    std::fs::remove_file(repo.join("normfuzz.toml")).unwrap();
    std::fs::remove_file(&output).unwrap();
    let out = run("");
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("normfuzz.toml not found"),
        "{}",
        text(&out)
    );
    let outputs = std::fs::read_to_string(&output).unwrap();
    assert!(outputs.contains("exit-code=2\n") && outputs.contains("verdict=error\n"));
}
