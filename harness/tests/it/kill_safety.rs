//! `normfuzz conform` killed with SIGKILL at random moments: afterwards the report folder is
//! either absent or complete and valid (the four formats parse, every finding file the index
//! lists is there and parses, nothing else is), and no visible file anywhere is a partial write
//! (every `*.json` under the scratch folder, `corpus/regressions/` included, parses). Hidden
//! names (`.tmp-*` files of `normfuzz::fs::write_atomic`, a report's hidden staging folder) are
//! what a kill may leave behind by design; they are counted and printed, never read as inputs.
//!
//! A campaign's writing phase lasts milliseconds at the end of a run of a second or two, so
//! uniformly random kill times would almost never land in it. Most runs are therefore killed a
//! random delay after their first write shows up in the scratch folder (the delay drawn within
//! the writing time of an unkilled calibration run, a little beyond), the rest at a uniformly
//! random moment in the first 1.5 s. Seeded xorshift: `NORMFUZZ_KILL_SEED` replays a schedule.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// Kills (SIGKILL delivered to a live process) the test needs.
const MIN_KILLS: usize = 20;
/// Upper bounds on the whole test: runs, and time.
const MAX_RUNS: usize = 48;
const BUDGET: Duration = Duration::from_secs(50);
/// No single run may take longer than this (killed and reported if it does).
const RUN_LIMIT: Duration = Duration::from_secs(20);
/// Polling interval while watching for the first write.
const POLL: Duration = Duration::from_micros(500);
/// The formats every campaign's report folder holds.
const FORMATS: [&str; 5] = [
    "index.json",
    "junit.xml",
    "summary.md",
    "report.html",
    "results.sarif",
];

/// xorshift64*: enough randomness for kill times, no crate needed.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..=max`.
    fn duration(&mut self, max: Duration) -> Duration {
        let micros = u64::try_from(max.as_micros()).unwrap_or(u64::MAX);
        Duration::from_micros(self.next() % micros.saturating_add(1))
    }
}

/// One way to run the campaign.
#[derive(Clone)]
struct Setup {
    name: &'static str,
    sut: String,
    ops: Option<&'static str>,
    /// How long the writing phase of an unkilled run took (first write to exit).
    writing: Duration,
}

#[derive(Clone, Copy, Debug)]
enum When {
    /// A random delay after the first write of the run shows up.
    AfterFirstWrite,
    /// A random moment in the first 1.5 s.
    Anytime,
}

/// Kills the child if the test panics while it runs.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            let _ = self.0.kill();
        }
        let _ = self.0.wait();
    }
}

fn python() -> bool {
    Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

fn spawn(setup: &Setup, seed: u64, scratch: &Path, report: &Path) -> Running {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_normfuzz"));
    cmd.current_dir(scratch)
        .args(["conform", "--sut", &setup.sut, "--cases", "3000", "--seed"])
        .arg(seed.to_string())
        .arg("--report")
        .arg(report)
        .arg("--save-regressions")
        .env_remove("GITHUB_STEP_SUMMARY")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if let Some(ops) = setup.ops {
        cmd.args(["--ops", ops]);
    }
    Running(cmd.spawn().expect("normfuzz starts"))
}

/// Whether anything named after the report (the folder, or a sibling staging it) is in
/// `scratch`, or the run wrote a regression file.
fn writing_started(scratch: &Path, report_name: &str) -> bool {
    std::fs::read_dir(scratch).is_ok_and(|entries| {
        entries
            .flatten()
            .any(|e| e.file_name().to_string_lossy().contains(report_name))
    })
}

/// Runs one campaign to completion and returns how long its writing phase took.
fn calibrate(setup: &Setup, seed: u64, scratch: &Path) -> Duration {
    let name = format!("cal{seed:05}");
    let report = scratch.join(&name);
    let mut child = spawn(setup, seed, scratch, &report);
    let start = Instant::now();
    let mut first_write = None;
    let status = loop {
        if let Some(status) = child.0.try_wait().expect("wait") {
            break status;
        }
        assert!(
            start.elapsed() < RUN_LIMIT,
            "{}: calibration run exceeds {RUN_LIMIT:?}",
            setup.name
        );
        if first_write.is_none() && writing_started(scratch, &name) {
            first_write = Some(Instant::now());
        }
        std::thread::sleep(POLL);
    };
    let writing = first_write.map_or(Duration::ZERO, |t| t.elapsed());
    assert!(
        status.code() == Some(0) || status.code() == Some(1),
        "{}: calibration run ended with {status}",
        setup.name
    );
    match check_report(&report) {
        Ok(Some(findings)) => eprintln!(
            "kill_safety: {}: {:.2} s, writing {:.1} ms, {findings} findings",
            setup.name,
            start.elapsed().as_secs_f64(),
            writing.as_secs_f64() * 1000.0
        ),
        Ok(None) => panic!("{}: an unkilled run left no report", setup.name),
        Err(e) => panic!("{}: an unkilled run's report is invalid: {e}", setup.name),
    }
    writing
}

/// `Ok(None)`: absent; `Ok(Some(findings))`: complete and valid; `Err`: what is wrong.
fn check_report(dir: &Path) -> Result<Option<usize>, String> {
    if !dir.exists() {
        return Ok(None);
    }
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map_err(|e| format!("cannot list: {e}"))?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    for name in &names {
        if !FORMATS.contains(&name.as_str()) && name != "findings" {
            return Err(format!("unexpected entry {name:?} in {names:?}"));
        }
    }
    for format in FORMATS {
        if !names.iter().any(|n| n == format) {
            return Err(format!("{format} missing; present: {names:?}"));
        }
    }
    let read = |name: &str| {
        std::fs::read_to_string(dir.join(name)).map_err(|e| format!("cannot read {name}: {e}"))
    };
    let index: Value = serde_json::from_str(&read("index.json")?)
        .map_err(|e| format!("index.json does not parse: {e}"))?;
    let junit = read("junit.xml")?;
    quick_junit::Report::deserialize_from_str(&junit)
        .map_err(|e| format!("junit.xml does not parse: {e}"))?;
    if !junit.trim_end().ends_with("</testsuites>") {
        return Err("junit.xml does not end with </testsuites>".into());
    }
    let sarif: Value = serde_json::from_str(&read("results.sarif")?)
        .map_err(|e| format!("results.sarif does not parse: {e}"))?;
    if sarif["version"] != "2.1.0" {
        return Err("results.sarif is not SARIF 2.1.0".into());
    }
    if read("summary.md")?.trim().is_empty() {
        return Err("summary.md is empty".into());
    }
    if !read("report.html")?.trim_end().ends_with("</html>") {
        return Err("report.html does not end with </html>".into());
    }
    let mut listed: Vec<String> = index["findings"]
        .as_array()
        .ok_or("index.json has no findings list")?
        .iter()
        .map(|f| f["file"].as_str().unwrap_or_default().to_string())
        .collect();
    listed.sort();
    let mut stored: Vec<String> = std::fs::read_dir(dir.join("findings"))
        .map(|entries| {
            entries
                .flatten()
                .map(|e| format!("findings/{}", e.file_name().to_string_lossy()))
                .collect()
        })
        .unwrap_or_default();
    stored.sort();
    if listed != stored {
        return Err(format!("findings listed {listed:?}, stored {stored:?}"));
    }
    for file in &stored {
        let text = read(file)?;
        serde_json::from_str::<Value>(&text).map_err(|e| format!("{file} does not parse: {e}"))?;
    }
    Ok(Some(stored.len()))
}

/// Every file under `root`: visible `*.json` files must parse; hidden files and folders are a
/// killed write's leftovers (a folder's contents are not read), returned.
fn scan(root: &Path) -> Result<Vec<PathBuf>, String> {
    let mut leftovers = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for entry in entries.flatten() {
            let path = entry.path();
            let kind = entry
                .file_type()
                .map_err(|e| format!("{}: {e}", path.display()))?;
            if entry.file_name().to_string_lossy().starts_with('.') {
                leftovers.push(path);
            } else if kind.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|x| x == "json") {
                let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
                serde_json::from_slice::<Value>(&bytes).map_err(|e| {
                    format!(
                        "{} is a partial write ({} bytes): {e}",
                        path.display(),
                        bytes.len()
                    )
                })?;
            }
        }
    }
    leftovers.sort();
    Ok(leftovers)
}

#[test]
fn sigkill_leaves_no_partial_report_and_no_partial_file() {
    let seed = std::env::var("NORMFUZZ_KILL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x6b69_6c6c_u64);
    eprintln!("kill_safety: NORMFUZZ_KILL_SEED={seed}");
    let mut rng = XorShift(seed | 1);
    let scratch = tempfile::tempdir().expect("scratch folder");
    let scratch = scratch.path();
    let echo = format!(
        "python3 {}/../examples/sut-echo/echo.py",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut setups = vec![Setup {
        name: "reference",
        sut: "reference".into(),
        ops: None,
        writing: Duration::ZERO,
    }];
    if python() {
        // Findings (16 and 3 of them), their regression files and a larger report.
        setups.push(Setup {
            name: "echo, three ops",
            sut: echo.clone(),
            ops: Some("neutralize_text,sanitize_tool_names,check_media_url"),
            writing: Duration::ZERO,
        });
        setups.push(Setup {
            name: "echo, two ops",
            sut: echo,
            ops: Some("neutralize_text,sanitize_tool_names"),
            writing: Duration::ZERO,
        });
    } else {
        eprintln!("kill_safety: python3 not found, only the reference SUT (no findings)");
    }
    for (n, setup) in setups.iter_mut().enumerate() {
        setup.writing = calibrate(setup, 90_000 + n as u64, scratch);
    }

    let start = Instant::now();
    let (mut kills, mut runs, mut partial_states) = (0, 0, Vec::new());
    let (mut absent, mut complete) = (0, 0);
    while (kills < MIN_KILLS || runs < 24) && runs < MAX_RUNS && start.elapsed() < BUDGET {
        // Mostly the runs with findings; one in five killed at any moment.
        let which = match setups.len() {
            1 => 0,
            _ => [1, 2, 2, 0, 1, 2][runs % 6],
        };
        let setup = &setups[which].clone();
        let when = if runs % 5 == 4 {
            When::Anytime
        } else {
            When::AfterFirstWrite
        };
        let run_seed = 1 + runs as u64;
        let name = format!("r{run_seed:05}");
        let report = scratch.join(&name);
        let mut child = spawn(setup, run_seed, scratch, &report);
        let launched = Instant::now();
        let deadline = match when {
            When::Anytime => launched + rng.duration(Duration::from_millis(1500)),
            When::AfterFirstWrite => {
                while child.0.try_wait().expect("wait").is_none()
                    && !writing_started(scratch, &name)
                    && launched.elapsed() < RUN_LIMIT
                {
                    std::thread::sleep(POLL);
                }
                // Within the writing phase, or a little after it.
                let window = (setup.writing * 6 / 5).max(Duration::from_millis(3));
                Instant::now() + rng.duration(window)
            }
        };
        while Instant::now() < deadline && child.0.try_wait().expect("wait").is_none() {
            std::thread::sleep(POLL.min(deadline.saturating_duration_since(Instant::now())));
        }
        let killed_at = launched.elapsed();
        let killed = child.0.try_wait().expect("wait").is_none();
        if killed {
            child.0.kill().expect("SIGKILL");
            kills += 1;
        }
        let status = child.0.wait().expect("reaped");
        // A run that ended before its kill (a loaded machine writes faster than it is watched):
        // the next kills of that setup come sooner after the first write.
        if !killed && matches!(when, When::AfterFirstWrite) {
            setups[which].writing /= 2;
        }
        if !killed {
            assert!(
                matches!(status.code(), Some(0 | 1)),
                "run {run_seed} ({}) ended with {status}",
                setup.name
            );
        }
        runs += 1;
        match check_report(&report) {
            Ok(None) => absent += 1,
            Ok(Some(_)) => complete += 1,
            Err(e) => partial_states.push(format!(
                "run {run_seed} ({}, {when:?}, {} at {:.3} s): {e}",
                setup.name,
                if killed { "killed" } else { "exited" },
                killed_at.as_secs_f64()
            )),
        }
        if let Err(e) = scan(scratch) {
            panic!(
                "after run {run_seed} ({}, {when:?}, killed at {:.3} s): {e}",
                setup.name,
                killed_at.as_secs_f64()
            );
        }
    }
    let leftovers = scan(scratch).expect("scan");
    eprintln!(
        "kill_safety: {runs} runs, {kills} SIGKILLs in {:.1} s: {absent} reports absent, \
         {complete} complete, {} partial; {} hidden leftovers{}",
        start.elapsed().as_secs_f64(),
        partial_states.len(),
        leftovers.len(),
        leftovers
            .iter()
            .take(30)
            .map(|p| format!("\n  {}", p.strip_prefix(scratch).unwrap_or(p).display()))
            .collect::<String>()
    );
    assert!(
        partial_states.is_empty(),
        "report folders neither absent nor complete:\n{}",
        partial_states.join("\n")
    );
    assert!(
        kills >= MIN_KILLS,
        "only {kills} kills in {runs} runs within {BUDGET:?}"
    );
}
