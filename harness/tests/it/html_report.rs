//! `report.html` as a browser renders it: a real campaign against the pass-through SUT
//! (`examples/sut-echo/echo.py`, which breaks rules on purpose) writes a report, and Debian's
//! headless Chromium screenshots the page and dumps its DOM. The matrix and its failing cells
//! must be in the rendered DOM and the screenshot must be a real picture of the page.
//!
//! Needs `/usr/bin/chromium` (`apt-get install -y chromium`) and `python3`; without them the
//! test fails and says so, rather than passing without having looked at anything.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const CHROMIUM: &str = "/usr/bin/chromium";
const PNG_SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";
/// Chromium renders a local page in a second or two; a hung browser must not hang the tests.
const BROWSER_TIMEOUT: Duration = Duration::from_secs(90);

fn require(program: &str, how: &str) {
    let found = Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(found, "{program} is not installed; {how}");
}

/// Runs `cmd` with its output captured, killed after `BROWSER_TIMEOUT`.
fn run_bounded(mut cmd: Command) -> Output {
    let out_dir = tempfile::tempdir().unwrap();
    let (out_path, err_path) = (out_dir.path().join("out"), out_dir.path().join("err"));
    let mut child = cmd
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    let deadline = Instant::now() + BROWSER_TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{cmd:?} did not finish in {BROWSER_TIMEOUT:?}; stderr:\n{}",
                std::fs::read_to_string(&err_path).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Output {
        status,
        stdout: std::fs::read(&out_path).unwrap(),
        stderr: std::fs::read(&err_path).unwrap(),
    }
}

/// Headless Chromium with a fresh profile and no network of its own.
fn chromium(profile: &Path, action: &[&str], page: &Path) -> Output {
    let mut cmd = Command::new(CHROMIUM);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1280,2000",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .args(action)
    .arg(format!("file://{}", page.display()));
    let output = run_bounded(cmd);
    assert!(
        output.status.success(),
        "chromium failed ({}):\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn conform_report(dir: &Path) -> PathBuf {
    let echo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/sut-echo/echo.py");
    let report = dir.join("report");
    let output = Command::new(env!("CARGO_BIN_EXE_normfuzz"))
        .args(["conform", "--cases", "600", "--seed", "1", "--sut"])
        .arg(format!("python3 {}", echo.display()))
        .arg("--report")
        .arg(&report)
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .expect("normfuzz runs");
    assert_eq!(
        output.status.code(),
        Some(1),
        "the echo SUT fails the gate: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    report.join("report.html")
}

#[test]
fn report_renders_in_headless_chromium() {
    require(
        CHROMIUM,
        "install it with `apt-get install -y chromium` (Debian) to render report.html",
    );
    require(
        "python3",
        "the example SUT examples/sut-echo/echo.py needs it",
    );
    let dir = tempfile::tempdir().unwrap();
    // Resolved, so the file:// URL is absolute even if the temp dir is a symlink.
    let page = conform_report(dir.path())
        .canonicalize()
        .expect("report.html written");

    let dom = chromium(&dir.path().join("profile-dom"), &["--dump-dom"], &page);
    let dom = String::from_utf8_lossy(&dom.stdout);
    let matrix = dom
        .find(r#"<table id="matrix">"#)
        .map(|start| &dom[start..start + dom[start..].find("</table>").expect("table ends")])
        .unwrap_or_else(|| panic!("no matrix in the rendered DOM:\n{dom}"));
    let fail_cells = matrix.matches(r#"<td class="cell fail""#).count();
    assert!(fail_cells > 0, "no failing cell in the matrix:\n{matrix}");
    assert!(
        matrix.contains(r##"<a href="#f-neutralize_text-S1-"##),
        "the S1 cell links to its finding:\n{matrix}"
    );
    assert!(dom.contains(r#"<article class="fail" id="f-neutralize_text-S1-"#));
    assert_eq!(dom.matches("<svg").count(), 2, "both plots rendered");

    let shot = dir.path().join("shot.png");
    chromium(
        &dir.path().join("profile-shot"),
        &[&format!("--screenshot={}", shot.display())],
        &page,
    );
    let png = std::fs::read(&shot).expect("screenshot written");
    assert!(png.starts_with(PNG_SIGNATURE), "not a PNG");
    // IHDR, the first chunk, holds the size: the whole window.
    let size = |at: usize| u32::from_be_bytes(png[at..at + 4].try_into().unwrap());
    assert_eq!((size(16), size(20)), (1280, 2000), "screenshot size");
    // A blank or error page compresses to a few kilobytes; this page has tables, plots, text.
    assert!(png.len() > 50_000, "screenshot only {} bytes", png.len());
}
