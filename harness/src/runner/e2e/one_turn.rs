//! One runtime turn, run by `normfuzz e2e-turn --dir D` inside the sandbox the driver made
//! (`unshare -n -m`: a network namespace with only loopback, a private mount namespace). It
//! starts the mock providers in process, writes the runtime's config for their address, runs
//! the adapter's command and records what happened in `D/turn.json`. Everything of the case
//! stays in `D`: the spec, the MCP result, the config, the captured requests, stdout and stderr.

use std::collections::BTreeMap;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use mock_providers::server::{Config, MockProviders};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::adapter::{Adapter, expand, expand_all};
use super::cases::E2eCase;
use crate::fs::write_atomic;

/// What the driver hands to the sandboxed turn (`D/spec.json`).
#[derive(Debug, Serialize, Deserialize)]
pub struct TurnSpec {
    pub adapter: PathBuf,
    pub cache: PathBuf,
    pub case: E2eCase,
    /// The `mock-providers` binary, run by the runtime as its MCP server.
    pub mock_mcp: PathBuf,
    /// Running in a fresh network namespace: loopback must be brought up first.
    pub fresh_netns: bool,
    /// Running in a private mount namespace: the case's `tmp` is bound over `/tmp`, because
    /// openclaw hard-codes `/tmp/openclaw-state-locks-<uid>` and its default log folder.
    pub private_tmp: bool,
}

/// What the turn did (`D/turn.json`).
#[derive(Debug, Serialize, Deserialize)]
pub struct TurnRecord {
    pub command: Vec<String>,
    pub exit_code: Option<i32>,
    /// The signal that ended the runtime, if one did (an out-of-memory kill, a crash).
    #[serde(default)]
    pub signal: Option<i32>,
    pub timed_out: bool,
    pub elapsed_ms: u64,
    /// `/tmp` was replaced by the case's own folder.
    pub private_tmp: bool,
    pub mock_base: String,
}

pub const SPEC: &str = "spec.json";
pub const RECORD: &str = "turn.json";
pub const REQUESTS: &str = "requests.jsonl";
pub const STDOUT: &str = "stdout.txt";
pub const STDERR: &str = "stderr.log";
pub const RESULT: &str = "mcp-result.json";

pub fn run(dir: &Path) -> Result<()> {
    let spec: TurnSpec = serde_json::from_slice(
        &std::fs::read(dir.join(SPEC))
            .with_context(|| format!("no {SPEC} in {}", dir.display()))?,
    )
    .context("invalid turn spec")?;
    let adapter = Adapter::load(&spec.adapter)?;
    let tmp = dir.join("tmp");
    for sub in ["tmp", "home", "workspace"] {
        std::fs::create_dir_all(dir.join(sub))?;
    }
    if spec.fresh_netns {
        let status = Command::new("ip")
            .args(["link", "set", "lo", "up"])
            .status()
            .context("cannot run `ip` (Debian: iproute2) to bring loopback up")?;
        if !status.success() {
            bail!("`ip link set lo up` failed ({status})");
        }
    }
    let private_tmp = spec.private_tmp && bind_tmp(&tmp, &spec)?;

    let case = &spec.case;
    let flavour = &adapter.flavour[case.flavour % adapter.flavour.len()];
    let script = mock_providers::Script::from_json(&json!([
        {"tool_call": {"name": adapter.model_tool, "arguments": {"name": "report"}}},
        {"chunks": case.reply},
    ]))?;
    let runtime = tokio::runtime::Runtime::new()?;
    let mocks = runtime.block_on(MockProviders::start(Config {
        script,
        capture: Some(dir.join(REQUESTS)),
        ..Config::default()
    }))?;
    let mock_base = mocks.uri();

    write_atomic(&dir.join(RESULT), format!("{:#}\n", case.result).as_bytes())?;
    let config_path = dir.join(&adapter.config.file);
    let vars: BTreeMap<&str, String> = BTreeMap::from([
        ("cache", spec.cache.display().to_string()),
        ("case", dir.display().to_string()),
        ("config", config_path.display().to_string()),
        ("prompt", adapter.prompt.clone()),
        ("mock", mock_base.clone()),
        ("tmp", tmp.display().to_string()),
        ("adapter", adapter.dir.display().to_string()),
    ]);
    let base_url = expand(&flavour.base_url, &vars)?;
    let input = if case.image_input {
        json!(["text", "image"])
    } else {
        json!(["text"])
    };
    let json_vars: BTreeMap<&str, String> = BTreeMap::from([
        ("base_url", json!(base_url).to_string()),
        ("api", json!(flavour.api).to_string()),
        ("model_input", input.to_string()),
        (
            "mcp_command",
            json!(spec.mock_mcp.display().to_string()).to_string(),
        ),
        (
            "mcp_args",
            json!([
                "mcp",
                "--result",
                dir.join(RESULT).display().to_string(),
                "--tool",
                adapter.mcp_tool
            ])
            .to_string(),
        ),
        (
            "log_file",
            json!(dir.join("runtime.log").display().to_string()).to_string(),
        ),
    ]);
    write_atomic(
        &config_path,
        expand(&adapter.config.template, &json_vars)?.as_bytes(),
    )?;

    let command = expand_all(&adapter.run.command, &vars)?;
    let (program, args) = command.split_first().context("empty run.command")?;
    let mut cmd = Command::new(program);
    cmd.args(args)
        .current_dir(dir.join("workspace"))
        .env_clear()
        .env("PATH", super::install::runtime_path(&adapter, &spec.cache)?)
        .env("LANG", "C.UTF-8")
        .env("TMPDIR", &tmp)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(dir.join(STDOUT))?)
        .stderr(std::fs::File::create(dir.join(STDERR))?)
        .process_group(0);
    for (key, value) in &adapter.run.env {
        cmd.env(key, expand(value, &vars)?);
    }
    let start = Instant::now();
    let mut child = cmd
        .spawn()
        .with_context(|| format!("cannot start {program}"))?;
    let group = child.id() as i32;
    let deadline = Duration::from_secs(adapter.turn_timeout);
    let (status, timed_out) = loop {
        if let Some(status) = child.try_wait()? {
            break (Some(status), false);
        }
        if start.elapsed() > deadline {
            break (None, true);
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    // The runtime's children (the MCP server, workers) go with it, on time-out or not.
    // SAFETY: kill(2) on a process group we created; no memory is involved.
    unsafe { libc::kill(-group, libc::SIGKILL) };
    let _ = child.wait();
    drop(mocks);
    let record = TurnRecord {
        command,
        exit_code: status.and_then(|s| s.code()),
        signal: status.and_then(|s| std::os::unix::process::ExitStatusExt::signal(&s)),
        timed_out,
        elapsed_ms: start.elapsed().as_millis() as u64,
        private_tmp,
        mock_base,
    };
    write_atomic(
        &dir.join(RECORD),
        serde_json::to_vec_pretty(&record)?.as_slice(),
    )?;
    Ok(())
}

/// Binds `tmp` over `/tmp` unless something the turn needs lives under `/tmp` (it would vanish).
fn bind_tmp(tmp: &Path, spec: &TurnSpec) -> Result<bool> {
    let exe = std::env::current_exe()?;
    let needed: [&Path; 5] = [tmp, &spec.cache, &spec.mock_mcp, &spec.adapter, &exe];
    if needed.iter().any(|p| p.starts_with("/tmp")) {
        return Ok(false);
    }
    let status = Command::new("mount")
        .args(["--rbind"])
        .arg(tmp)
        .arg("/tmp")
        .status()
        .context("cannot run `mount`")?;
    if !status.success() {
        bail!("binding {} over /tmp failed ({status})", tmp.display());
    }
    Ok(true)
}

/// The captured requests of a finished turn, in arrival order.
pub fn requests(dir: &Path) -> Result<Vec<Value>> {
    let text = std::fs::read_to_string(dir.join(REQUESTS)).unwrap_or_default();
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).context("invalid capture line"))
        .collect()
}
