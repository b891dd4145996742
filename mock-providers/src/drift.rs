//! `mock-providers drift`: replays the verdict cases (`mock-providers/drift/cases.jsonl`, generated
//! from `tests/it/rules.rs`) against the real APIs and reports every status or message that differs
//! from the mock's. Each case's malformed body must get the mock's status and message, its valid
//! counterpart a 2xx. Nothing is sent for a provider whose key is not in the environment.
//!
//! HTTP goes through the `curl` binary rather than a Rust TLS client: reqwest with rustls adds 12
//! crates (ring's C and assembly among them, about a minute of build on one core) to every build of
//! this crate, CI's included, for a command that only a scheduled workflow and a user with keys
//! run; curl is on every runner and developer machine. The key goes to curl on its stdin (`--config
//! -`), never on its command line where other users' `ps` would see it.

mod curl;

use curl::Curl;

use clap::Args;
use mock_providers::Provider;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Args, Debug)]
pub struct DriftArgs {
    /// The case file: `mock-providers/drift/cases.jsonl` (regenerated from tests/it/rules.rs with
    /// `NORMFUZZ_BLESS=1 cargo test -p mock-providers drift_case_file_is_current`).
    #[arg(long)]
    cases: PathBuf,
    /// Replay only these providers (comma-separated: anthropic, openai-chat, openai-responses,
    /// gemini, bedrock, ollama); all by default.
    #[arg(long, value_delimiter = ',', value_name = "PROVIDER,...")]
    provider: Vec<String>,
    /// The model a provider's bodies are sent with, repeatable. Defaults: anthropic=claude-haiku-4-5,
    /// openai-chat and openai-responses=gpt-4o-mini, gemini=gemini-2.5-flash,
    /// bedrock=anthropic.claude-3-haiku-20240307-v1:0; Ollama keeps the cases' own models
    /// (llava, llama3.2-vision:11b: its single-image rule depends on them).
    #[arg(long, value_name = "PROVIDER=MODEL")]
    model: Vec<String>,
    /// Send a provider's requests to URL (the API's root, `https://api.openai.com`) instead of its
    /// real API, repeatable: the mock itself, or for Bedrock a SigV4-signing proxy (drift does
    /// not sign). Anthropic, OpenAI and Gemini still need their key.
    #[arg(long = "base-url", value_name = "PROVIDER=URL")]
    base_url: Vec<String>,
    /// Also write the results as JSON to this file.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Seconds allowed per request.
    #[arg(long, default_value_t = 120)]
    timeout: u64,
}

/// Runs drift; the process exit code: 0 nothing drifted, 1 drift or a failed request, 2 a usage
/// error (bad flags, unreadable case file, no curl, unwritable `--out`).
pub fn run(args: DriftArgs) -> i32 {
    match drift(&args) {
        Ok(report) => {
            print!("{}", report.markdown(&args.cases));
            if let Some(out) = &args.out {
                let text = serde_json::to_string_pretty(&report.json(&args.cases))
                    .unwrap_or_default()
                    + "\n";
                if let Err(e) = std::fs::write(out, text) {
                    eprintln!("mock-providers drift: writing {}: {e}", out.display());
                    return 2;
                }
            }
            i32::from(report.failed())
        }
        Err(message) => {
            eprintln!("mock-providers drift: {message}");
            2
        }
    }
}

/// One line of the case file.
#[derive(Debug, serde::Deserialize)]
struct Case {
    provider: String,
    rule: String,
    status: u16,
    message: String,
    bad: Option<Value>,
    good: Option<Value>,
    /// Why the bodies are not in the file (too large); such a case is not replayed.
    omitted: Option<String>,
}

/// Where and how one provider's cases are sent.
struct Target {
    base: String,
    headers: Vec<(String, String)>,
    model: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Outcome {
    Same,
    Drift,
    /// The request did not complete (network, timeout): no answer to compare.
    Error,
    /// The case's bodies are not in the file.
    NotReplayed,
}

impl Outcome {
    fn name(self) -> &'static str {
        match self {
            Outcome::Same => "same",
            Outcome::Drift => "DRIFT",
            Outcome::Error => "ERROR",
            Outcome::NotReplayed => "not replayed",
        }
    }
}

/// What one request got, compared with what the mock answers.
struct Row {
    provider: Provider,
    rule: String,
    /// `bad` (the malformed body) or `good` (its valid counterpart).
    request: &'static str,
    expected_status: Option<u16>,
    expected_message: Option<String>,
    got_status: Option<u16>,
    got_message: Option<String>,
    /// The transport error or why the case was not replayed.
    note: Option<String>,
    outcome: Outcome,
}

struct Report {
    rows: Vec<Row>,
    skipped: Vec<(Provider, String, usize)>,
}

fn provider_named(name: &str) -> Result<Provider, String> {
    Provider::from_name(name.trim())
        .ok_or_else(|| format!("unknown provider {name:?} (one of {})", Provider::names()))
}

/// `provider=value` flags by provider.
fn pairs(flag: &str, values: &[String]) -> Result<BTreeMap<&'static str, String>, String> {
    let mut map = BTreeMap::new();
    for v in values {
        let (name, value) = v
            .split_once('=')
            .filter(|(_, value)| !value.is_empty())
            .ok_or_else(|| format!("--{flag} {v:?}: expected PROVIDER=VALUE"))?;
        map.insert(provider_named(name)?.name(), value.to_string());
    }
    Ok(map)
}

fn read_cases(path: &Path) -> Result<Vec<(Provider, Case)>, String> {
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    let mut cases = Vec::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let at = || format!("{} line {}", path.display(), i + 1);
        let case: Case = serde_json::from_str(line).map_err(|e| format!("{}: {e}", at()))?;
        let provider = provider_named(&case.provider).map_err(|e| format!("{}: {e}", at()))?;
        if case.omitted.is_none() && (case.bad.is_none() || case.good.is_none()) {
            return Err(format!("{}: a case needs `bad` and `good` bodies", at()));
        }
        cases.push((provider, case));
    }
    if cases.is_empty() {
        return Err(format!("{} holds no case", path.display()));
    }
    Ok(cases)
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// The target of `p`, or why it is skipped.
fn target(
    p: Provider,
    base_urls: &BTreeMap<&str, String>,
    models: &BTreeMap<&str, String>,
) -> Result<Target, String> {
    let base_url = base_urls.get(p.name()).cloned();
    let keyed = |var: &str, real: &str, headers: &dyn Fn(String) -> Vec<(String, String)>| {
        let key = env(var).ok_or_else(|| format!("{var} is not set"))?;
        Ok::<_, String>((
            base_url.clone().unwrap_or_else(|| real.into()),
            headers(key),
        ))
    };
    let (base, headers) = match p {
        Provider::Anthropic => keyed("ANTHROPIC_API_KEY", "https://api.anthropic.com", &|k| {
            vec![
                ("x-api-key".into(), k),
                ("anthropic-version".into(), "2023-06-01".into()),
            ]
        })?,
        Provider::OpenAiChat | Provider::OpenAiResponses => {
            keyed("OPENAI_API_KEY", "https://api.openai.com", &|k| {
                vec![("authorization".into(), format!("Bearer {k}"))]
            })?
        }
        Provider::Gemini => keyed(
            "GEMINI_API_KEY",
            "https://generativelanguage.googleapis.com",
            &|k| vec![("x-goog-api-key".into(), k)],
        )?,
        Provider::Bedrock => (
            base_url.ok_or(
                "Bedrock needs AWS SigV4 signing, which drift does not do: pass --base-url \
                 bedrock=URL of a signing proxy (aws-sigv4-proxy) to replay it",
            )?,
            Vec::new(),
        ),
        Provider::Ollama => {
            // Ollama takes `host:port` without a scheme too; set but empty means its default.
            let host = base_url.or_else(|| match std::env::var("OLLAMA_HOST") {
                Ok(h) if h.trim().is_empty() => Some("http://127.0.0.1:11434".into()),
                Ok(h) if h.contains("://") => Some(h),
                Ok(h) => Some(format!("http://{h}")),
                Err(_) => None,
            });
            (host.ok_or("OLLAMA_HOST is not set")?, Vec::new())
        }
    };
    let model = models.get(p.name()).cloned().or(match p {
        Provider::Anthropic => Some("claude-haiku-4-5".into()),
        Provider::OpenAiChat | Provider::OpenAiResponses => Some("gpt-4o-mini".into()),
        Provider::Gemini => Some("gemini-2.5-flash".into()),
        Provider::Bedrock => Some("anthropic.claude-3-haiku-20240307-v1:0".into()),
        Provider::Ollama => None,
    });
    Ok(Target {
        base: base.trim_end_matches('/').to_string(),
        headers,
        model,
    })
}

impl Target {
    fn url(&self, p: Provider) -> String {
        let model = self.model.as_deref().unwrap_or_default();
        let path = match p {
            Provider::Anthropic => "/v1/messages".to_string(),
            Provider::OpenAiChat => "/v1/chat/completions".to_string(),
            Provider::OpenAiResponses => "/v1/responses".to_string(),
            Provider::Gemini => format!("/v1beta/models/{model}:generateContent"),
            // Bedrock model ids hold `:`, escaped in the path as the AWS SDKs do.
            Provider::Bedrock => format!("/model/{}/converse", model.replace(':', "%3A")),
            Provider::Ollama => "/api/chat".to_string(),
        };
        // The OpenAI SDKs' base URLs end in `/v1`; take those as they are.
        let base = match p {
            Provider::OpenAiChat | Provider::OpenAiResponses => {
                self.base.strip_suffix("/v1").unwrap_or(&self.base)
            }
            _ => &self.base,
        };
        format!("{base}{path}")
    }

    /// The body with its placeholder model replaced; a body without one (a "model required"
    /// case) is sent as it is.
    fn body(&self, body: &Value) -> Value {
        let mut body = body.clone();
        if let (Some(model), Some(Value::String(m))) = (&self.model, body.get_mut("model")) {
            *m = model.clone();
        }
        body
    }
}

fn drift(args: &DriftArgs) -> Result<Report, String> {
    let cases = read_cases(&args.cases)?;
    let models = pairs("model", &args.model)?;
    let base_urls = pairs("base-url", &args.base_url)?;
    let selected = if args.provider.is_empty() {
        Provider::ALL.to_vec()
    } else {
        args.provider
            .iter()
            .map(|n| provider_named(n))
            .collect::<Result<_, _>>()?
    };
    let mut report = Report {
        rows: Vec::new(),
        skipped: Vec::new(),
    };
    let mut http: Option<Curl> = None;
    for p in selected {
        let ours: Vec<&Case> = cases
            .iter()
            .filter(|(cp, _)| *cp == p)
            .map(|(_, c)| c)
            .collect();
        let target = match target(p, &base_urls, &models) {
            Ok(t) => t,
            Err(reason) => {
                report.skipped.push((p, reason, ours.len()));
                continue;
            }
        };
        let http = match &mut http {
            Some(h) => h,
            None => http.insert(Curl::new(Duration::from_secs(args.timeout))?),
        };
        eprintln!(
            "mock-providers drift: {} cases of {} against {}",
            ours.len(),
            p.name(),
            target.base
        );
        for case in ours {
            report.rows.extend(replay(http, p, &target, case));
        }
    }
    Ok(report)
}

/// The two rows of one case: its malformed body, then its valid counterpart.
fn replay(http: &Curl, p: Provider, target: &Target, case: &Case) -> [Row; 2] {
    let row = |request, expected_status, expected_message| Row {
        provider: p,
        rule: case.rule.clone(),
        request,
        expected_status,
        expected_message,
        got_status: None,
        got_message: None,
        note: case.omitted.clone(),
        outcome: Outcome::NotReplayed,
    };
    let mut bad = row("bad", Some(case.status), Some(case.message.clone()));
    let mut good = row("good", None, None);
    let (Some(bad_body), Some(good_body)) = (&case.bad, &case.good) else {
        return [bad, good];
    };
    for (row, body) in [(&mut bad, bad_body), (&mut good, good_body)] {
        let expected = row.expected_status;
        match http.post_retrying(
            &target.url(p),
            &target.headers,
            &target.body(body),
            expected,
        ) {
            Ok((status, message)) => {
                let same = match expected {
                    Some(s) => status == s && message == row.expected_message,
                    None => (200..300).contains(&status),
                };
                row.outcome = if same { Outcome::Same } else { Outcome::Drift };
                row.got_status = Some(status);
                row.got_message = message;
            }
            Err(e) => {
                row.outcome = Outcome::Error;
                row.note = Some(e);
            }
        }
    }
    [bad, good]
}

impl Report {
    fn count(&self, outcome: Outcome) -> usize {
        self.rows.iter().filter(|r| r.outcome == outcome).count()
    }

    fn failed(&self) -> bool {
        self.count(Outcome::Drift) + self.count(Outcome::Error) > 0
    }

    fn markdown(&self, cases: &Path) -> String {
        let mut md = format!(
            "## mock-providers drift: {} against the providers' APIs\n\n",
            cases.display()
        );
        if self.rows.is_empty() {
            md.push_str("Nothing replayed: no provider has its key (see Skipped).\n");
        } else {
            md.push_str("| provider | case | expected | got | verdict |\n|---|---|---|---|---|\n");
        }
        for r in &self.rows {
            let case = if r.request == "good" {
                format!("{} (valid counterpart)", r.rule)
            } else {
                r.rule.clone()
            };
            let expected = match r.expected_status {
                Some(s) => answer(s, r.expected_message.as_deref()),
                None => "2xx".into(),
            };
            let got = match (r.got_status, &r.note) {
                (Some(s), _) => answer(s, r.got_message.as_deref()),
                (None, Some(note)) => note.clone(),
                (None, None) => String::new(),
            };
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} |",
                r.provider.name(),
                cell(&case),
                cell(&expected),
                cell(&got),
                r.outcome.name()
            );
        }
        if !self.skipped.is_empty() {
            md.push_str("\nSkipped:\n");
            for (p, reason, n) in &self.skipped {
                let _ = writeln!(md, "- {} ({n} cases): {reason}", p.name());
            }
        }
        let _ = writeln!(
            md,
            "\n{} requests: {} same, {} drifted, {} failed, {} not replayed (bodies not in the case file); {} providers skipped.",
            self.rows.len(),
            self.count(Outcome::Same),
            self.count(Outcome::Drift),
            self.count(Outcome::Error),
            self.count(Outcome::NotReplayed),
            self.skipped.len()
        );
        md
    }

    fn json(&self, cases: &Path) -> Value {
        let rows: Vec<Value> = self
            .rows
            .iter()
            .map(|r| {
                json!({
                    "provider": r.provider.name(),
                    "case": r.rule,
                    "request": r.request,
                    "expected": {"status": r.expected_status.map_or(json!("2xx"), |s| json!(s)), "message": r.expected_message},
                    "got": {"status": r.got_status, "message": r.got_message},
                    "note": r.note,
                    "verdict": r.outcome.name().to_lowercase(),
                })
            })
            .collect();
        let skipped: Vec<Value> = self
            .skipped
            .iter()
            .map(|(p, reason, n)| json!({"provider": p.name(), "reason": reason, "cases": n}))
            .collect();
        json!({
            "cases": cases.display().to_string(),
            "summary": {
                "same": self.count(Outcome::Same),
                "drift": self.count(Outcome::Drift),
                "error": self.count(Outcome::Error),
                "not_replayed": self.count(Outcome::NotReplayed),
            },
            "skipped": skipped,
            "results": rows,
        })
    }
}

fn answer(status: u16, message: Option<&str>) -> String {
    match message {
        Some(m) => format!("{status} {m}"),
        None => status.to_string(),
    }
}

/// A Markdown table cell: pipes escaped, line breaks shown as `\n`.
fn cell(s: &str) -> String {
    s.replace('|', "\\|")
        .replace('\n', "\\n")
        .replace('\r', "\\r")
}
