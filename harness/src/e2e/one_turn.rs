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
use super::checks::Layer;
use super::fallback::{self, Pairing};
use super::hostile;
use super::plant::{PLANTED, plant};
use super::writes;
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
    /// Through the runtime's API (one command per turn) or through a chat channel.
    #[serde(default)]
    pub via: Via,
}

/// Which layer a turn reaches: the runtime's API reply, or what a chat channel received.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Via {
    /// `run.command`: one agent turn, its reply read from stdout (the payload layer).
    #[default]
    Payload,
    /// `[channel].command`: the runtime serves a mock chat channel; the user's message arrives
    /// through it and what the channel receives is judged (the delivered layer).
    Channel,
}

impl Via {
    /// The name `--via` takes and reports show.
    pub fn as_str(self) -> &'static str {
        match self {
            Via::Payload => "payload",
            Via::Channel => "channel",
        }
    }

    /// The layers a turn of this kind judges.
    pub fn layers(self) -> [Layer; 2] {
        match self {
            Via::Payload => [Layer::Model, Layer::Payload],
            Via::Channel => [Layer::Model, Layer::Delivered],
        }
    }
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
    /// Channel mode: the model answered its last scripted turn but nothing reached the user
    /// within the silence limit.
    #[serde(default)]
    pub channel_silent: bool,
}

pub const SPEC: &str = "spec.json";
pub const RECORD: &str = "turn.json";
pub const REQUESTS: &str = "requests.jsonl";
pub const STDOUT: &str = "stdout.txt";
pub const STDERR: &str = "stderr.log";
pub const RESULT: &str = "mcp-result.json";
/// The runtime's log file, where its config takes one (`${log_file}`): the harness names it.
pub const LOG_FILE: &str = "runtime.log";
/// Channel mode: every call the mock channel received, in order (JSON Lines).
pub const CHANNEL: &str = "channel.jsonl";
/// Channel mode: how long the model may have finished with nothing reaching the user.
const SILENCE: Duration = Duration::from_secs(45);

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
    let private_tmp = spec.private_tmp;
    let tmp_binds = if private_tmp {
        bind_tmp(&tmp, &spec)?
    } else {
        Vec::new()
    };

    let case = &spec.case;
    let pairing = case
        .fallback
        .as_ref()
        .map(|fb| Pairing::of(&adapter, fb))
        .transpose()?;
    let flavour = match &pairing {
        Some(p) => p.primary,
        None => &adapter.flavour[case.flavour % adapter.flavour.len()],
    };
    let channel =
        match spec.via {
            Via::Payload => None,
            Via::Channel => Some(adapter.channel.as_ref().with_context(|| {
                format!("adapter {} has no [channel] section", adapter.label())
            })?),
        };
    // The mock channel's bot and user; the user's one message is the prompt.
    let telegram = mock_providers::channels::telegram::Setup {
        message: adapter.prompt.clone(),
        ..Default::default()
    };
    let runtime = tokio::runtime::Runtime::new()?;
    let mocks = runtime.block_on(MockProviders::start(Config {
        capture: Some(dir.join(REQUESTS)),
        telegram: channel.map(|_| telegram.clone()),
        ..Config::default()
    }))?;
    let mock_base = mocks.uri();
    // The case's URLs name the mocks' canary route: the script is made once their port is known.
    let port = mocks.address().port();
    let vision = case.vision.as_ref().zip(adapter.vision.as_ref());
    let script = match (&pairing, &case.fallback, &case.vision) {
        (Some(p), Some(fb), _) => p.script(&adapter, case, fb, port)?,
        (_, _, Some(v)) => super::vision::script(&adapter, case, v, &super::vision::serve_page()?)?,
        _ => hostile::script(&adapter, case, port)?,
    };
    mocks.set_script(mock_providers::Script::from_json(&script)?);

    write_atomic(&dir.join(RESULT), format!("{:#}\n", case.result).as_bytes())?;
    let mut mcp_args = vec![
        "mcp".to_string(),
        "--result".into(),
        dir.join(RESULT).display().to_string(),
    ];
    let image_path = dir.join("workspace").join(fallback::IMAGE_FILE);
    let mut image_swap = None;
    if let Some(fb) = &case.fallback {
        // A second run of the tool answers with its own image, and every run is logged (P4).
        let second = super::cases::fallback_results(fb).swap_remove(1);
        write_atomic(
            &dir.join(fallback::RESULT_2),
            format!("{second:#}\n").as_bytes(),
        )?;
        mcp_args.extend([
            "--result".into(),
            dir.join(fallback::RESULT_2).display().to_string(),
            "--calls".into(),
            dir.join(fallback::CALLS).display().to_string(),
        ]);
        if fb.path_image {
            fallback::plant_image(&image_path)?;
            image_swap = Some(fallback::ImageSwap {
                path: image_path.clone(),
                done: false,
            });
        }
    }
    mcp_args.extend(["--tool".into(), adapter.mcp_tool.clone()]);
    let config_path = dir.join(&adapter.config.file);
    let fallback_config = adapter
        .fallback
        .as_ref()
        .filter(|_| case.fallback.is_some());
    // The prompt that names the local image, for a case that has one.
    let names_image = case.fallback.as_ref().is_some_and(|f| f.path_image);
    let prompt = match fallback_config
        .and_then(|f| f.prompt.as_ref())
        .filter(|_| names_image)
    {
        Some(p) => expand(
            p,
            &BTreeMap::from([("image_path", image_path.display().to_string())]),
        )?,
        None => vision.map_or(&adapter.prompt, |(_, v)| &v.prompt).clone(),
    };
    let vars: BTreeMap<&str, String> = BTreeMap::from([
        ("cache", spec.cache.display().to_string()),
        ("case", dir.display().to_string()),
        ("config", config_path.display().to_string()),
        ("prompt", prompt),
        ("mock", mock_base.clone()),
        ("tmp", tmp.display().to_string()),
        ("adapter", adapter.dir.display().to_string()),
    ]);
    let roots = expand_all(&adapter.run.media_roots, &vars)?;
    let mut planted = plant(case, dir, private_tmp, &roots)?;
    planted.extend(hostile::url_plants(case, port)?);
    write_atomic(&dir.join(PLANTED), &serde_json::to_vec_pretty(&planted)?)?;
    let base_url = expand(&flavour.base_url, &vars)?;
    let input = if case.image_input {
        json!(["text", "image"])
    } else {
        json!(["text"])
    };
    let channel_vars: BTreeMap<&str, String> = match channel {
        Some(_) => BTreeMap::from([
            ("api_root", json!(mock_base).to_string()),
            ("bot_api_url", json!(format!("{mock_base}/bot")).to_string()),
            (
                "bot_file_url",
                json!(format!("{mock_base}/file/bot")).to_string(),
            ),
            ("bot_token", json!(telegram.token).to_string()),
            ("user_id", json!(telegram.user_id.to_string()).to_string()),
            ("user_number", telegram.user_id.to_string()),
            ("gateway_port", free_port()?.to_string()),
        ]),
        None => BTreeMap::new(),
    };
    let channel_config = match channel {
        Some(c) => expand(&c.config, &channel_vars)?,
        None => String::new(),
    };
    let fallback_base_url = pairing
        .as_ref()
        .map(|p| expand(&p.fallback.base_url, &vars).map(|url| (p, url)))
        .transpose()?;
    let mut json_vars: BTreeMap<&str, String> = BTreeMap::from([
        ("base_url", json!(base_url).to_string()),
        ("api", json!(flavour.api).to_string()),
        ("model_input", input.to_string()),
        (
            "mcp_command",
            json!(spec.mock_mcp.display().to_string()).to_string(),
        ),
        ("mcp_args", json!(mcp_args).to_string()),
        (
            "log_file",
            json!(dir.join(LOG_FILE).display().to_string()).to_string(),
        ),
        (
            "workspace",
            json!(dir.join("workspace").display().to_string()).to_string(),
        ),
        ("channel", channel_config),
    ]);
    if let Some((v, config)) = vision {
        let id = BTreeMap::from([(
            "vision_model_id",
            json!(super::vision::VISION_MODEL).to_string(),
        )]);
        let present = v.outcome != super::case::Outcome::Absent;
        let fragment = |f: &String| {
            if present {
                expand(f, &id)
            } else {
                Ok(String::new())
            }
        };
        json_vars.insert("vision_entry", fragment(&config.model_entry)?);
        json_vars.insert("vision_model", fragment(&config.image_model)?);
    }
    json_vars.extend(fallback::template_vars(
        fallback_base_url,
        case.fallback.as_ref(),
        &image_path,
    ));
    let template = match (fallback_config, &case.fallback) {
        (Some(f), Some(fb)) => {
            let same = fb
                .same_provider
                .then_some(f.same_template.as_ref())
                .flatten();
            same.or(f.template.as_ref())
        }
        _ => vision.map(|(_, config)| &config.template),
    };
    write_atomic(
        &config_path,
        expand(template.unwrap_or(&adapter.config.template), &json_vars)?.as_bytes(),
    )?;
    json_vars.extend(channel_vars);
    let prepares = std::iter::once(&adapter.prepare).chain(channel.map(|c| &c.prepare));
    for prepare in prepares {
        for sub in &prepare.dirs {
            std::fs::create_dir_all(dir.join(sub))?;
        }
        for file in &prepare.files {
            let path = dir.join(&file.path);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            let text = expand(&file.template, &json_vars)
                .with_context(|| format!("[prepare] file {}", file.path))?;
            write_atomic(&path, text.as_bytes())?;
        }
    }

    let command = match (channel, vision) {
        (Some(c), _) => &c.command,
        (None, Some((_, v))) => &v.command,
        (None, None) => &adapter.run.command,
    };
    let command = expand_all(command, &vars)?;
    let (program, args) = command.split_first().context("empty run.command")?;
    // S5: writes outside the case folder land in an overlay (a mount namespace is needed),
    // those inside it are found by comparison; the capture files the turn writes are not.
    let overlay = if private_tmp {
        let tmp = writes::PrivateTmp {
            tmp: &tmp,
            binds: &tmp_binds,
        };
        writes::Overlay::mount(dir, &[dir, &spec.cache], tmp)
            .map_err(|e| {
                eprintln!(
                    "normfuzz e2e-turn: writes outside the case folder are not observed: {e:#}"
                )
            })
            .ok()
    } else {
        None
    };
    let mut skip = tmp_binds;
    skip.push(writes::Overlay::skip(dir));
    let captures = [
        REQUESTS,
        STDOUT,
        STDERR,
        LOG_FILE,
        fallback::CALLS,
        mock_providers::channels::telegram::FILES_DIR,
    ];
    skip.extend(captures.map(|f| dir.join(f)));
    let workspace = dir.join("workspace");
    let mut cmd = Command::new(program);
    if let Some(overlay) = &overlay {
        let enter = overlay.enter(&workspace)?;
        // SAFETY: the closure makes only async-signal-safe system calls (chroot, chdir).
        unsafe { cmd.pre_exec(enter) };
    }
    cmd.args(args)
        .current_dir(&workspace)
        .env_clear()
        .env("PATH", super::install::runtime_path(&adapter, &spec.cache)?)
        .env("LANG", "C.UTF-8")
        .env("TMPDIR", &tmp)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(dir.join(STDOUT))?)
        .stderr(std::fs::File::create(dir.join(STDERR))?)
        .process_group(0);
    for (key, value) in &adapter.run.env {
        if channel.is_none_or(|c| !c.env_remove.contains(key)) {
            cmd.env(key, expand(value, &vars)?);
        }
    }
    let extra_env = channel.map(|c| &c.env).or(vision.map(|(_, v)| &v.env));
    for (key, value) in extra_env.into_iter().flatten() {
        cmd.env(key, expand(value, &vars)?);
    }
    let snapshot = writes::Snapshot::take(dir, skip);
    // What the harness itself writes into the case folder from here on (S5 discounts it).
    let mut harness_writes = writes::HarnessWrites::default();
    let start = Instant::now();
    let mut child = cmd
        .spawn()
        .with_context(|| format!("cannot start {program}"))?;
    let group = child.id() as i32;
    let deadline = Duration::from_secs(adapter.turn_timeout_for(case));
    // A fallback script is keyed by provider: its answers are counted as two, as before.
    let mut progress = ChannelProgress::new(script.as_array().map_or(2, Vec::len));
    let (status, timed_out, channel_silent) = loop {
        if let Some(status) = child.try_wait()? {
            break (Some(status), false, false);
        }
        if start.elapsed() > deadline {
            break (None, true, false);
        }
        if let Some(swap) = &mut image_swap {
            // Not fatal: the runtime is still running here, and the case then only cannot
            // tell a persisted copy from a fresh load (the judge reads both images anyway).
            if let Err(e) = swap.observe(&mocks.requests(), &mut harness_writes) {
                eprintln!("normfuzz e2e-turn: cannot swap the local image: {e:#}");
            }
        }
        if let Some(silent) = channel
            .and_then(|c| progress.observe(&mocks.requests(), Duration::from_millis(c.quiet_ms)))
        {
            break (None, false, silent);
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    // The runtime's children (the MCP server, workers) go with it, on time-out or not.
    // SAFETY: kill(2) on a process group we created; no memory is involved.
    unsafe { libc::kill(-group, libc::SIGKILL) };
    let _ = child.wait();
    writes::record(dir, &snapshot, &harness_writes, overlay.as_ref())?;
    if channel.is_some() {
        write_channel_capture(&mocks.requests(), dir)?;
    }
    drop(mocks);
    let record = TurnRecord {
        command,
        exit_code: status.and_then(|s| s.code()),
        signal: status.and_then(|s| std::os::unix::process::ExitStatusExt::signal(&s)),
        timed_out,
        elapsed_ms: start.elapsed().as_millis() as u64,
        private_tmp,
        mock_base,
        channel_silent,
    };
    write_atomic(
        &dir.join(RECORD),
        serde_json::to_vec_pretty(&record)?.as_slice(),
    )?;
    Ok(())
}

/// A free loopback port for the runtime's own server (the gateway); inside the turn's network
/// namespace nothing else listens, outside it the port is released just before use.
fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// When a channel turn is over, from what the mocks captured so far (in arrival order).
struct ChannelProgress {
    /// The model's scripted answers: its part is done once that many requests came.
    turns: usize,
    /// (model requests, messages shown): polls of the channel are not progress.
    seen: (usize, usize),
    changed: Option<Instant>,
}

impl ChannelProgress {
    /// For a script of `turns` answers (at least a tool call and the reply).
    fn new(turns: usize) -> ChannelProgress {
        ChannelProgress {
            turns: turns.max(2),
            seen: (0, 0),
            changed: None,
        }
    }

    /// `Some(silent)` once the turn is over: the model is done (its last scripted answer given,
    /// or a request refused), a message reached the user after its last request, and `quiet`
    /// passed with nothing new (`false`); or the model is done and nothing reached the user
    /// after it for [`SILENCE`] (`true`).
    fn observe(&mut self, records: &[Value], quiet: Duration) -> Option<bool> {
        let now = Instant::now();
        let provider: Vec<usize> = (0..records.len())
            .filter(|&i| records[i]["provider"].is_string())
            .collect();
        let shown: Vec<usize> = (0..records.len())
            .filter(|&i| shows_user(&records[i]))
            .collect();
        if (provider.len(), shown.len()) != self.seen || self.changed.is_none() {
            self.seen = (provider.len(), shown.len());
            self.changed = Some(now);
        }
        // A refused request ends the model's part as surely as its last scripted answer.
        let model_done = provider.len() >= self.turns
            || provider
                .iter()
                .any(|&i| records[i]["verdict"]["accepted"] == false);
        if !model_done {
            return None;
        }
        let last_request = provider.last().copied().unwrap_or(0);
        let answered = shown.iter().any(|&i| i > last_request);
        let since = self.changed.map_or(Duration::ZERO, |t| now - t);
        match answered {
            true if since >= quiet => Some(false),
            false if since >= SILENCE => Some(true),
            _ => None,
        }
    }
}

/// A channel call that puts something in front of the user (a send or an edit).
fn shows_user(record: &Value) -> bool {
    record["channel"].is_string()
        && record["method"]
            .as_str()
            .is_some_and(super::checks::channel::shows_user)
}

fn write_channel_capture(records: &[Value], dir: &Path) -> Result<()> {
    let mut out = String::new();
    for r in records.iter().filter(|r| r["channel"].is_string()) {
        out.push_str(&r.to_string());
        out.push('\n');
    }
    write_atomic(&dir.join(CHANNEL), out.as_bytes())?;
    Ok(())
}

/// Binds `tmp` over `/tmp` and answers the bind mounts made inside it. What the turn needs from
/// the old `/tmp` (the case folder itself when the report lies there, as in a clone under
/// `/tmp`; the runtime cache, the binaries) would vanish under it, so each such top-level entry
/// of `/tmp` is bound first into `tmp` at its own name and comes along with the recursive bind:
/// `/tmp/<entry>` still reaches it.
fn bind_tmp(tmp: &Path, spec: &TurnSpec) -> Result<Vec<PathBuf>> {
    let exe = std::env::current_exe()?;
    let needed: [&Path; 5] = [tmp, &spec.cache, &spec.mock_mcp, &spec.adapter, &exe];
    let tops: std::collections::BTreeSet<PathBuf> = needed
        .iter()
        .filter_map(|p| p.strip_prefix("/tmp").ok()?.components().next())
        .map(|top| PathBuf::from(top.as_os_str()))
        .collect();
    let mut binds = Vec::new();
    for top in &tops {
        let (from, to) = (Path::new("/tmp").join(top), tmp.join(top));
        if from.is_dir() {
            std::fs::create_dir_all(&to)?;
        } else {
            std::fs::write(&to, b"")?;
        }
        writes::mount(&["--bind"], &[&from, &to])?;
        binds.push(to);
    }
    writes::mount(&["--rbind"], &[tmp, Path::new("/tmp")])?;
    Ok(binds)
}

/// The captured requests of a finished turn, in arrival order.
pub fn requests(dir: &Path) -> Result<Vec<Value>> {
    read_jsonl(&dir.join(REQUESTS))
}

/// The records of a JSON Lines capture (none when the file is missing).
pub fn read_jsonl(path: &Path) -> Result<Vec<Value>> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).context("invalid capture line"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn via_names_agree_with_serde_and_clap() {
        for via in [Via::Payload, Via::Channel] {
            assert_eq!(serde_json::to_value(via).unwrap(), via.as_str());
            let parsed = <Via as clap::ValueEnum>::from_str(via.as_str(), false);
            assert_eq!(parsed, Ok(via));
        }
    }

    #[test]
    fn a_channel_turn_ends_after_a_message_that_follows_the_model() {
        let provider =
            |accepted: bool| json!({"provider": "openai-chat", "verdict": {"accepted": accepted}});
        let send = json!({"channel": "telegram", "method": "sendMessage"});
        let poll = json!({"channel": "telegram", "method": "getUpdates"});
        let quiet = Duration::ZERO;
        // The model not done yet: never over, whatever the channel got.
        let mut p = ChannelProgress::new(2);
        assert_eq!(p.observe(&[provider(true), send.clone()], quiet), None);
        // Done, and the message came after its last request (even within one poll): over.
        let mut p = ChannelProgress::new(2);
        let records = [
            provider(true),
            send.clone(),
            provider(true),
            poll.clone(),
            send.clone(),
        ];
        assert_eq!(p.observe(&records, quiet), Some(false));
        // Done, only an earlier message (a "working" preview): not over until the silence.
        let mut p = ChannelProgress::new(2);
        let records = [provider(true), send.clone(), provider(true), poll.clone()];
        assert_eq!(p.observe(&records, quiet), None);
        p.changed = Some(Instant::now() - SILENCE);
        assert_eq!(p.observe(&records, quiet), Some(true));
        // A script of four answers (hostile calls): two requests and a message are not the end.
        let mut p = ChannelProgress::new(4);
        let records = [provider(true), provider(true), send.clone()];
        assert_eq!(p.observe(&records, quiet), None);
        // A refused first request ends the model's part.
        let mut p = ChannelProgress::new(2);
        assert_eq!(p.observe(&[provider(false), send], quiet), Some(false));
    }
}
