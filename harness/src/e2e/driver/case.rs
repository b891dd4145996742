//! Running one case: the sandbox (`unshare` namespaces, probed once), the sandboxed
//! `normfuzz e2e-turn` and its time-out, then the judging of what the turn left in its folder.

use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::campaign::impact::Profile;
use crate::e2e::adapter::{Adapter, expand_all};
use crate::e2e::checks::fallback::FallbackSummary;
use crate::e2e::checks::{self, E2eFinding, Layer};
use crate::e2e::fallback::{self, Pairing};
use crate::e2e::one_turn::{self, TurnRecord, TurnSpec, Via};
use crate::e2e::plant::{PLANTED, Planted};
use crate::e2e::writes;
use crate::excerpt::bounded;
use crate::fs::{fresh_dir, write_atomic};
use crate::rule::Rule;

/// How turns are sandboxed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(super) enum Isolation {
    /// `unshare -n -m`: loopback-only network, private mounts.
    Namespaces,
    /// The same inside an unprivileged user namespace (`unshare -r`).
    UserNamespaces,
    None,
}

impl Isolation {
    fn prefix(self) -> &'static [&'static str] {
        match self {
            Isolation::Namespaces => &["unshare", "-n", "-m", "--propagation", "private", "--"],
            Isolation::UserNamespaces => &[
                "unshare",
                "-r",
                "-n",
                "-m",
                "--propagation",
                "private",
                "--",
            ],
            Isolation::None => &[],
        }
    }

    pub(super) fn probe(choice: &str) -> Result<Isolation> {
        if choice == "off" {
            return Ok(Isolation::None);
        }
        // The probe is what each turn does first: a fresh namespace and its loopback brought up.
        for candidate in [Isolation::Namespaces, Isolation::UserNamespaces] {
            let argv = candidate.prefix();
            let works = Command::new(argv[0])
                .args(&argv[1..])
                .args(["ip", "link", "set", "lo", "up"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if works {
                return Ok(candidate);
            }
        }
        if choice == "required" {
            bail!(
                "--isolation required, but `unshare -n -m ip link set lo up` fails here (needs root or user \
                 namespaces, and iproute2)"
            );
        }
        eprintln!(
            "normfuzz e2e: warning: no network namespace available (`unshare -n` needs root or user \
             namespaces, and `ip` from iproute2); turns run unisolated, with dead proxies as the only guard"
        );
        Ok(Isolation::None)
    }
}

/// One case's outcome (read back from `index.json` to merge shards).
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct CaseOutcome {
    pub(super) id: String,
    pub(super) about: String,
    pub(super) api: String,
    pub(super) image_input: bool,
    pub(super) elapsed_ms: u64,
    /// The case could not be judged (harness or adapter trouble, not a runtime finding).
    pub(super) error: Option<String>,
    pub(super) findings: Vec<E2eFinding>,
    /// A fallback case: what reached the fallback, findings or not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) fallback: Option<FallbackSummary>,
}

/// Runs one case in its sandbox and judges it (`profile`: the runtime's, for S5's folders).
pub(super) fn run_case(
    adapter: &Adapter,
    profile: &Profile,
    spec: &TurnSpec,
    dir: &Path,
    isolation: Isolation,
) -> CaseOutcome {
    let flavour = match (&spec.case.fallback, &adapter.fallback) {
        (Some(_), Some(f)) => &adapter.flavour[f.primary],
        _ => &adapter.flavour[spec.case.flavour % adapter.flavour.len()],
    };
    let mut outcome = CaseOutcome {
        id: spec.case.id.clone(),
        about: spec.case.about.clone(),
        api: flavour.api.clone(),
        image_input: spec.case.image_input,
        elapsed_ms: 0,
        error: None,
        findings: Vec::new(),
        fallback: None,
    };
    let start = Instant::now();
    match turn(adapter, spec, dir, isolation) {
        Ok(record) => match judge(adapter, profile, spec, dir, &record, &flavour.mock) {
            Ok((findings, summary)) => {
                outcome.findings = findings;
                outcome.fallback = summary;
            }
            Err(e) => outcome.error = Some(format!("{e:#}")),
        },
        Err(e) => outcome.error = Some(format!("{e:#}")),
    }
    outcome.elapsed_ms = start.elapsed().as_millis() as u64;
    // The runtime's state and temp files (tens of MB a turn) are not evidence; the config,
    // captured requests, output, logs and the MCP result stay.
    for scratch in ["home", "tmp"] {
        let _ = std::fs::remove_dir_all(dir.join(scratch));
    }
    outcome
}

/// Starts `normfuzz e2e-turn` in the sandbox and waits for its record.
fn turn(
    adapter: &Adapter,
    spec: &TurnSpec,
    dir: &Path,
    isolation: Isolation,
) -> Result<TurnRecord> {
    fresh_dir(dir)?;
    write_atomic(
        &dir.join(one_turn::SPEC),
        serde_json::to_vec_pretty(spec)?.as_slice(),
    )?;
    let exe = std::env::current_exe()?;
    let prefix = isolation.prefix();
    let mut cmd = match prefix.split_first() {
        Some((first, rest)) => {
            let mut c = Command::new(first);
            c.args(rest).arg(&exe);
            c
        }
        None => Command::new(&exe),
    };
    cmd.arg("e2e-turn")
        .arg("--dir")
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("sandbox.log"))?)
        .process_group(0);
    let mut child = cmd.spawn().context("cannot start the sandboxed turn")?;
    // The turn enforces the adapter's time-out itself; this one only catches a stuck sandbox.
    let deadline = Duration::from_secs(adapter.turn_timeout_for(&spec.case) + 60);
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if start.elapsed() > deadline {
            // SAFETY: kill(2) on the process group we created.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
            bail!(
                "the sandboxed turn did not finish within {} s",
                deadline.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let record = std::fs::read(dir.join(one_turn::RECORD));
    match record {
        Ok(bytes) => Ok(serde_json::from_slice(&bytes)?),
        Err(_) => {
            let log = std::fs::read_to_string(dir.join("sandbox.log")).unwrap_or_default();
            bail!(
                "the sandboxed turn failed ({status}): {}",
                bounded(log.trim(), 600)
            )
        }
    }
}

fn judge(
    adapter: &Adapter,
    profile: &Profile,
    spec: &TurnSpec,
    dir: &Path,
    record: &TurnRecord,
    provider: &str,
) -> Result<(Vec<E2eFinding>, Option<FallbackSummary>)> {
    let mut findings = Vec::new();
    let records = one_turn::requests(dir)?;
    findings.extend(checks::hostile::check_canary_hits(&spec.case.id, &records));
    let requests: Vec<Value> = records
        .into_iter()
        .filter(|r| r["provider"].is_string())
        .collect();
    // A fallback case whose every model failed ends with the provider's error: a clear error
    // (B1 asks no more), not a crash.
    let failed_cleanly = spec.case.fallback.is_some()
        && requests.last().is_some_and(|r| {
            r["verdict"]["answer"] == "error" || r["verdict"]["accepted"] == false
        });
    let stderr = std::fs::read_to_string(dir.join(one_turn::STDERR)).unwrap_or_default();
    let channel = spec.via == Via::Channel;
    // A channel process runs until the turn is over and is then stopped; ending by itself is
    // the failure there, as a non-zero exit is for one-turn commands.
    let ended_badly = if channel {
        record.exit_code.is_some() || record.signal.is_some()
    } else {
        record.exit_code != Some(0)
    };
    if record.timed_out || (ended_badly && !failed_cleanly) {
        findings.push(E2eFinding::new(
            Rule::B1,
            Layer::Model,
            match (record.timed_out, record.signal) {
                (true, _) => format!(
                    "the turn did not finish within {} s",
                    adapter.turn_timeout_for(&spec.case)
                ),
                (false, Some(signal)) => format!("the runtime was killed by signal {signal}"),
                (false, None) => format!("the turn exited with {:?}", record.exit_code),
            },
            json!({"stderrTail": crate::excerpt::tail(&stderr, 2000)}),
        ));
    }
    for r in &requests {
        if r["verdict"]["accepted"] == false {
            findings.push(E2eFinding::new(
                Rule::Provider,
                Layer::Model,
                format!(
                    "the {} mock answered {} to request {}: a poisoned session",
                    r["provider"].as_str().unwrap_or("?"),
                    r["verdict"]["status"],
                    r["seq"]
                ),
                r["verdict"]["body"].clone(),
            ));
        }
    }
    let mut summary = None;
    if let Some(fb) = &spec.case.fallback {
        // The tool result's own rules are the tool-result scenario's; here a stripped image
        // is right (R3), so only the fallback's rules judge what reached the models.
        let pairing = Pairing::of(adapter, fb)?;
        let runs = one_turn::read_jsonl(&dir.join(fallback::CALLS))?.len();
        let (s, f) = checks::fallback::check_fallback(fb, &pairing, &requests, runs);
        findings.extend(checks::failed_tool_names::check_failed_tool_names(
            &fallback::made_up_names(&spec.case),
            fb.same_provider,
            &requests
                .iter()
                .filter(|r| pairing.is_fallback(r))
                .collect::<Vec<_>>(),
        ));
        write_atomic(
            &dir.join("fallback.json"),
            serde_json::to_vec_pretty(&s)?.as_slice(),
        )?;
        summary = Some(s);
        findings.extend(f);
    } else if let Some(vision) = &spec.case.vision {
        let view = checks::vision::agent_view(provider, &requests)
            .context("no request of the agent model carried the screenshot's tool result")?;
        let answered = checks::vision::vision_answered(&requests);
        findings.extend(checks::vision::check_vision(
            vision,
            spec.case.image_input,
            &view,
            answered,
        ));
    } else {
        match checks::model_view(provider, &requests) {
            Some(view) => findings.extend(checks::check_model_view(&spec.case, &view)),
            None if findings.is_empty() => bail!(
                "no request to the {provider} mock carried a tool result ({} requests); did the runtime see the tool `{}`?",
                requests.len(),
                adapter.model_tool
            ),
            None => {}
        }
    }
    if let Some(writes) = read_json(&dir.join(writes::WRITES)) {
        let writes: writes::Writes = serde_json::from_value(writes)?;
        let own = adapter.own_folders(&profile.folders, dir, &spec.cache)?;
        findings.extend(checks::writes::check_writes(&writes, &own, &spec.case, dir));
    }
    let vars = std::collections::BTreeMap::from([("case", dir.display().to_string())]);
    let roots = expand_all(&adapter.run.media_roots, &vars)?;
    if channel {
        findings.extend(judge_channel(spec, dir, record, &roots)?);
    } else if let Some(stdout) = read_json(&dir.join(one_turn::STDOUT)) {
        // An SDK hands the reply back to its app (`directives = false`): only B1 reads it.
        if adapter.output.directives {
            findings.extend(checks::check_delivered(
                &checks::delivered(adapter, &stdout),
                &roots,
                Layer::Payload,
            ));
        }
    } else if record.exit_code == Some(0) {
        findings.push(E2eFinding::new(
            Rule::B1,
            Layer::Model,
            "the turn's output is not JSON",
            json!(crate::excerpt::tail(
                &std::fs::read_to_string(dir.join(one_turn::STDOUT)).unwrap_or_default(),
                2000
            )),
        ));
    }
    Ok((checks::merge_by_rule(findings), summary))
}

/// The delivered layer: what the mock channel received, against the files planted for the case.
fn judge_channel(
    spec: &TurnSpec,
    dir: &Path,
    record: &TurnRecord,
    roots: &[String],
) -> Result<Vec<E2eFinding>> {
    let calls = one_turn::read_jsonl(&dir.join(one_turn::CHANNEL))?;
    let planted: Vec<Planted> = serde_json::from_slice(
        &std::fs::read(dir.join(PLANTED)).context("the turn left no planted.json")?,
    )?;
    let view = checks::channel::channel_view(&calls, dir);
    let mut findings = checks::check_delivered(&view.delivered, roots, Layer::Delivered);
    let expected: Vec<&Planted> = planted
        .iter()
        .filter(|p| p.planted && p.inside_roots && p.from_reply)
        .collect();
    findings.extend(checks::channel::check_uploads(&view, &planted, &expected));
    let said = spec.case.reply.concat();
    let says_something = crate::oracle::directive::lines(&said)
        .any(|l| !l.trim().is_empty() && !crate::oracle::directive::is_directive_line(l));
    if record.channel_silent && says_something {
        findings.push(E2eFinding::new(
            Rule::F2,
            Layer::Delivered,
            "the model replied, and nothing reached the user",
            json!({"reply": bounded(&said, 500), "channelCalls": calls.len()}),
        ));
    }
    Ok(findings)
}

pub(super) fn read_json(path: &Path) -> Option<Value> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// S1 judges a reply's directive lines only where the runtime acts on them: an SDK
    /// (`directives = false`) hands the text back to its app.
    #[test]
    fn reply_directives_are_judged_only_where_the_runtime_acts_on_them() {
        let dir = tempfile::tempdir().unwrap();
        let judged = |directives: bool| {
            let path = dir.path().join(format!("adapter-{directives}.toml"));
            let adapter = format!(
                "name = \"x\"\nversion = \"1\"\nmcp_tool = \"t\"\nmodel_tool = \"t\"\nprompt = \"p\"\n\
                 turn_timeout = 1\n[run]\nversion_command = [\"true\"]\ncommand = [\"true\"]\n\
                 [[flavour]]\napi = \"a\"\nmock = \"openai-chat\"\nbase_url = \"u\"\n\
                 [config]\nfile = \"c\"\ntemplate = \"\"\n\
                 [output]\nitems = \"\"\ntext = \"/text\"\nmedia = []\ndirectives = {directives}\n"
            );
            std::fs::write(&path, adapter).unwrap();
            let adapter = Adapter::load(&path).unwrap();
            let case = json!({"id": "c", "about": "", "flavour": 0, "image_input": true,
                "result": {"content": [{"type": "text", "text": "fine"}]},
                "reply": ["MEDIA:/etc/passwd"]});
            // From JSON, so fields with defaults added later need no change here.
            let spec: TurnSpec = serde_json::from_value(json!({
                "adapter": path, "cache": dir.path(), "case": case, "mock_mcp": "mock-providers",
                "fresh_netns": false, "private_tmp": false,
            }))
            .unwrap();
            let request = json!({"seq": 0, "provider": "openai-chat", "verdict": {"accepted": true},
                "body": {"messages": [{"role": "tool", "content": "fine"}]}});
            std::fs::write(dir.path().join(one_turn::REQUESTS), format!("{request}\n")).unwrap();
            std::fs::write(
                dir.path().join(one_turn::STDOUT),
                r#"{"text": "MEDIA:/etc/passwd"}"#,
            )
            .unwrap();
            let record: TurnRecord = serde_json::from_value(json!({
                "command": [], "exit_code": 0, "timed_out": false, "elapsed_ms": 1,
                "private_tmp": false, "mock_base": "",
            }))
            .unwrap();
            let (findings, _) = judge(
                &adapter,
                &Profile::reference_contract(),
                &spec,
                dir.path(),
                &record,
                "openai-chat",
            )
            .unwrap();
            findings.iter().map(|f| f.rule.as_str()).collect::<Vec<_>>()
        };
        assert_eq!(judged(true), ["S1"]);
        assert!(judged(false).is_empty());
    }
}
