//! The `normfuzz` command line: the reference normalizer's operations, JSON on stdout.
//!
//! Exit status: 0 done (a provider error inside a `stream` is reported in its output); 1 the input
//! was judged and something was refused (`check-url`);
//! 2 bad usage or unreadable input (message on stderr).

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use normfuzz::runner::campaign::{Campaign, Progress};
use normfuzz::reference::media_policy::MediaRoots;
use normfuzz::protocol::Op;
use normfuzz::reference::reply;
use normfuzz::reference::retry::RetryImagesInput;
use normfuzz::reference::sse::{ProviderFormat, ProviderStream, StreamItem};
use normfuzz::runner::sut::{ProcessSut, ReferenceSut, Sut};
use normfuzz::reference::turn::{Delivery, Turn};
use serde::Serialize;
use std::sync::atomic::Ordering;
use std::time::Duration;

#[derive(Parser)]
#[command(
    name = "normfuzz",
    version,
    about = "Reference normalizer and conformance harness for agent-runtime tool-result and output normalizers"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Coerce an MCP CallToolResult (any JSON) into a text|image agent tool result (rules C1–C8, S1, S2).
    ///
    /// Prints {"content":[{"type":"text","text":..}|{"type":"image","data":..,"mimeType":..}],"isError":bool}.
    Coerce {
        /// JSON file to read; `-` or nothing reads standard input.
        file: Option<PathBuf>,
    },
    /// Neutralize line-start MEDIA: directives in untrusted text (rules S1, D1).
    ///
    /// Reads raw UTF-8 text; prints {"text":..,"neutralizedLines":N}.
    Neutralize {
        /// Text file to read; `-` or nothing reads standard input.
        file: Option<PathBuf>,
    },
    /// Judge remote media URLs against the public-https policy (rules U1–U8).
    ///
    /// Prints one JSON line per URL: {"url","allowed","reason","canonical"}; exits 1 when any URL is refused.
    CheckUrl {
        /// URLs to check.
        #[arg(required = true)]
        urls: Vec<String>,
    },
    /// Parse a final assistant reply: MEDIA: lines, [[...]] tags, [embed ...] shortcodes (rules D2, S3).
    ///
    /// Reads raw UTF-8 text; prints the `parse_reply` protocol output:
    /// {"text","mediaUrls","audioAsVoice","replyTo","embeds","rejectedMedia"}.
    ParseReply {
        /// Allowed local media root (absolute, or `~`/`~/...` for the home directory); repeatable.
        /// Relative media paths resolve against the first.
        #[arg(long = "root", value_name = "DIR")]
        roots: Vec<String>,
        /// Text file to read; `-` or nothing reads standard input.
        file: Option<PathBuf>,
    },
    /// Decide whether a fallback retry carries the user's images (rules S4, R1–R6).
    ///
    /// Reads the `resolve_retry_images` protocol input
    /// {"attempt","previousFailure","primaryProvider","candidateProvider","images"};
    /// prints {"images": [...] or null}.
    RetryImages {
        /// JSON file to read; `-` reads standard input.
        file: PathBuf,
    },
    /// Decode a captured provider SSE stream and neutralize its text as streamed output (rules D1, B3).
    ///
    /// Prints {"format","text","deliveries":[{"text","mediaUrls"}],"providerError"}; `text` is the
    /// whole neutralized output, `deliveries` what each provider event released.
    Stream {
        /// Wire format: anthropic, openai-chat, openai-responses or gemini; recognized from the
        /// first events when omitted.
        #[arg(long, value_parser = str::parse::<ProviderFormat>)]
        format: Option<ProviderFormat>,
        /// SSE body to read; `-` or nothing reads standard input.
        file: Option<PathBuf>,
    },
    /// Run a conformance campaign: generated cases through the reference and a system under test,
    /// judged by rule id, each distinct failure shrunk and written to the report.
    ///
    /// Ends with `N passed, N failed`; exits 0 when no case fails the gate, 1 when any does,
    /// 2 on a harness or usage error (for example a SUT that sends no handshake).
    Conform(ConformArgs),
    /// Replay a stored finding against a SUT and judge it again; exits 1 if it still fails.
    Repro {
        /// A `findings/<id>.json` file from a report, or a corpus regression file.
        file: PathBuf,
        /// SUT command (argv, no shell), or `reference` for the built-in reference in process.
        #[arg(long)]
        sut: String,
        /// Per-request timeout in milliseconds.
        #[arg(long, default_value_t = 5000)]
        timeout_ms: u64,
    },
    /// Speak the SUT protocol on stdin/stdout with the reference normalizer behind it.
    ServeReference,
    /// Write the report of a libFuzzer run from its stderr logs, one per target.
    ///
    /// Writes junit.xml, index.json, summary.md (also appended to $GITHUB_STEP_SUMMARY when set)
    /// and report.html into --out. Exits 0 when every target ran to its end without a crash,
    /// 1 when any crashed or its log ends early, 2 on unreadable or unrecognized input.
    FuzzReport {
        /// Report folder [default: reports/fuzz-<unix time>].
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// libFuzzer stderr logs; the target is the file name without extension
        /// (target/fuzz/logs/neutralize.log → neutralize).
        #[arg(required = true, value_name = "LOG")]
        logs: Vec<PathBuf>,
    },
    /// Run a real agent runtime (installed on first use) against the mock providers and the mock
    /// MCP server, one sandboxed turn per case, judged by rule id against its baseline.
    ///
    /// Ends with `N passed, N failed`; exits 0 when every finding is in the baseline and no
    /// baseline entry is stale, 1 otherwise, 2 on a setup error.
    E2e(normfuzz::runner::e2e::driver::E2eArgs),
    /// One sandboxed e2e turn (run by `e2e` inside its namespaces; not for direct use).
    #[command(hide = true)]
    E2eTurn {
        /// The case folder holding `spec.json`.
        #[arg(long)]
        dir: PathBuf,
    },
}

#[derive(clap::Args)]
struct ConformArgs {
    /// SUT command (argv, no shell; quotes group words), or `reference` for the built-in
    /// reference in process.
    #[arg(long)]
    sut: String,
    /// Comma-separated ops to test (default: every op the SUT offers).
    #[arg(long, value_delimiter = ',')]
    ops: Vec<String>,
    /// Number of cases (default 10000 unless --time is given).
    #[arg(long, conflicts_with = "time")]
    cases: Option<u64>,
    /// Run for this many seconds instead of a fixed number of cases.
    #[arg(long)]
    time: Option<f64>,
    /// Seed: the same seed and job count give the same cases.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Parallel jobs, each with its own SUT process.
    #[arg(long, default_value_t = 1)]
    jobs: usize,
    /// Count divergences from the reference as failures.
    #[arg(long)]
    strict: bool,
    /// Report folder (default: reports/<time>-<seed>).
    #[arg(long)]
    report: Option<PathBuf>,
    /// Also store each finding's minimal input under corpus/regressions/<op>/.
    #[arg(long)]
    save_regressions: bool,
    /// Per-request timeout in milliseconds.
    #[arg(long, default_value_t = 5000)]
    timeout_ms: u64,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli.command) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("normfuzz: error: {err:#}");
            ExitCode::from(2)
        }
    }
}

fn run(command: Command) -> Result<ExitCode> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match command {
        Command::Coerce { file } => {
            let input = read_input(file.as_ref())?;
            let result =
                normfuzz::reference::coerce::coerce_json(&input).context("input is not valid JSON")?;
            out.write_all(&result.to_json_bytes())?;
            out.write_all(b"\n")?;
        }
        Command::Neutralize { file } => {
            let input = read_input(file.as_ref())?;
            let text = normfuzz::reference::neutralize::neutralize(&input);
            // Each neutralized line gained exactly one marker: one scan, not two.
            let lines = (text.len() - input.len()) / normfuzz::reference::neutralize::MARKER.len();
            print_json(
                &mut out,
                &NeutralizeOutput {
                    text: &text,
                    neutralized_lines: lines,
                },
            )?;
        }
        Command::CheckUrl { urls } => {
            let mut refused = false;
            for url in &urls {
                let verdict = normfuzz::reference::url_policy::check_media_url(url);
                refused |= !verdict.allowed;
                print_json(
                    &mut out,
                    &UrlOutput {
                        url,
                        verdict: &verdict,
                    },
                )?;
            }
            if refused {
                return Ok(ExitCode::from(1));
            }
        }
        Command::ParseReply { roots, file } => {
            for root in &roots {
                MediaRoots::check_root(root)
                    .map_err(|e| anyhow::anyhow!("bad --root {root:?}: {e}"))?;
            }
            let text = read_input(file.as_ref())?;
            print_json(
                &mut out,
                &reply::parse_reply(&text, &MediaRoots::new(&roots)),
            )?;
        }
        Command::RetryImages { file } => {
            let input = read_input(Some(&file))?;
            let input: RetryImagesInput = serde_json::from_str(&input)
                .context("input is not a resolve_retry_images request")?;
            print_json(&mut out, &input.run())?;
        }
        Command::Stream { format, file } => {
            let result = normalize_sse(format, file.as_ref())?;
            print_json(&mut out, &result)?;
        }
        Command::Conform(args) => {
            drop(out);
            return conform(args);
        }
        Command::Repro {
            file,
            sut,
            timeout_ms,
        } => {
            let text = std::fs::read_to_string(&file)
                .with_context(|| format!("cannot read {}", file.display()))?;
            let stored: serde_json::Value = serde_json::from_str(&text)
                .with_context(|| format!("{} is not JSON", file.display()))?;
            let op = stored
                .get("op")
                .and_then(serde_json::Value::as_str)
                .and_then(Op::parse)
                .context("the file names no known `op`")?;
            let input = stored.get("input").context("the file has no `input`")?;
            let mut sut = open_sut(&sut, Duration::from_millis(timeout_ms))?;
            let (answer, reference, violations) =
                normfuzz::runner::campaign::replay(sut.as_mut(), op, input)?;
            let fails = violations.iter().any(|v| v.gate);
            print_json(
                &mut out,
                &serde_json::json!({"op": op, "violations": violations, "sut": answer, "reference": reference}),
            )?;
            return Ok(ExitCode::from(u8::from(fails)));
        }
        Command::E2e(args) => {
            drop(out);
            return normfuzz::runner::e2e::driver::run(args);
        }
        Command::E2eTurn { dir } => normfuzz::runner::e2e::one_turn::run(&dir)?,
        Command::FuzzReport { out: dir, logs } => {
            let dir = dir.unwrap_or_else(|| normfuzz::runner::report::default_dir("fuzz-{stamp}"));
            let runs = normfuzz::runner::report::fuzz::read_logs(&logs)?;
            normfuzz::runner::report::fuzz::write(
                &dir,
                &runs,
                normfuzz::runner::report::step_summary_path().as_deref(),
            )?;
            let dirty: Vec<String> = runs
                .iter()
                .filter(|r| r.status != normfuzz::runner::report::fuzz::Status::Clean)
                .map(|r| format!("{} {}", r.target, r.status.as_str()))
                .collect();
            eprintln!(
                "{}: {} targets; report in {}",
                if dirty.is_empty() {
                    "clean".to_string()
                } else {
                    format!("FAIL ({})", dirty.join(", "))
                },
                runs.len(),
                dir.display()
            );
            return Ok(ExitCode::from(u8::from(!dirty.is_empty())));
        }
        Command::ServeReference => {
            drop(out);
            normfuzz::reference::serve(
                std::io::BufReader::new(std::io::stdin()),
                std::io::BufWriter::new(std::io::stdout()),
            )?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn open_sut(command: &str, timeout: Duration) -> Result<Box<dyn Sut>> {
    if command == "reference" {
        return Ok(Box::new(ReferenceSut));
    }
    let argv = ProcessSut::parse_command(command)?;
    Ok(Box::new(ProcessSut::start(argv, timeout)?))
}

fn conform(args: ConformArgs) -> Result<ExitCode> {
    let mut ops = Vec::new();
    for name in &args.ops {
        ops.push(
            Op::parse(name)
                .with_context(|| format!("unknown op `{name}`; known: {}", op_names()))?,
        );
    }
    if ops.is_empty() {
        ops = Op::ALL.to_vec();
    }
    let time = match args.time {
        Some(t) if !(t.is_finite() && t > 0.0) => {
            anyhow::bail!("--time must be a positive number of seconds")
        }
        t => t.map(Duration::from_secs_f64),
    };
    let campaign = Campaign {
        ops,
        cases: if time.is_some() {
            args.cases
        } else {
            Some(args.cases.unwrap_or(10_000))
        },
        time,
        seed: args.seed,
        jobs: args.jobs.max(1),
        strict: args.strict,
    };
    let timeout = Duration::from_millis(args.timeout_ms);
    let progress = Progress::default();
    let bar = indicatif::ProgressBar::new(campaign.cases.unwrap_or(0));
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} {pos} cases [{elapsed}] {per_sec} {msg}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
    );
    let done = std::sync::atomic::AtomicBool::new(false);
    let outcome = std::thread::scope(|scope| {
        let ticker = scope.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                bar.set_position(progress.cases.load(Ordering::Relaxed));
                bar.set_message(format!(
                    "{} failed, {} findings",
                    progress.failed.load(Ordering::Relaxed),
                    progress.findings.load(Ordering::Relaxed)
                ));
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        let outcome = normfuzz::runner::campaign::run(&campaign, || open_sut(&args.sut, timeout), &progress);
        done.store(true, Ordering::Relaxed);
        let _ = ticker.join();
        outcome
    })?;
    bar.finish_and_clear();
    if outcome.cases() == 0 && campaign.cases != Some(0) {
        anyhow::bail!(
            "no case ran: the SUT `{}` offers none of the requested ops",
            outcome.sut
        );
    }
    let dir = args.report.unwrap_or_else(|| {
        normfuzz::runner::report::default_dir(&format!("{{stamp}}-seed{}", campaign.seed))
    });
    normfuzz::runner::report::write(
        &dir,
        &outcome,
        &args.sut,
        campaign.strict,
        normfuzz::runner::report::step_summary_path().as_deref(),
    )?;
    if args.save_regressions {
        for finding in &outcome.findings {
            let path = PathBuf::from(format!(
                "corpus/regressions/{}/{}.json",
                finding.op, finding.id
            ));
            let stored = serde_json::json!({"op": finding.op, "rule": finding.rule, "kind": finding.kind, "input": finding.input});
            normfuzz::runner::report::write_atomic(&path, format!("{stored:#}\n").as_bytes())?;
        }
    }
    let failed = outcome.failed(campaign.strict);
    let cases = outcome.cases();
    eprintln!(
        "{} against {}: {cases} cases in {:.1} s ({:.0} cases/s), {} findings; report in {}",
        if failed == 0 { "pass" } else { "FAIL" },
        outcome.sut,
        outcome.elapsed_ms as f64 / 1000.0,
        cases as f64 * 1000.0 / outcome.elapsed_ms.max(1) as f64,
        outcome.findings.len(),
        dir.display()
    );
    for finding in outcome
        .findings
        .iter()
        .filter(|f| f.gate || campaign.strict)
    {
        let path = dir.join("findings").join(format!("{}.json", finding.id));
        eprintln!(
            "  {} [{}] {}\n    {}",
            finding.id,
            finding.rule,
            finding.kind,
            normfuzz::runner::report::repro_command(&path, &args.sut)
        );
    }
    println!("{} passed, {failed} failed", cases - failed);
    Ok(ExitCode::from(u8::from(failed > 0)))
}

fn op_names() -> String {
    Op::ALL
        .iter()
        .map(|op| op.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StreamOutput {
    format: &'static str,
    text: String,
    deliveries: Vec<Delivery>,
    provider_error: Option<String>,
}

/// Decodes an SSE body read in pieces and streams its text deltas through one turn.
fn normalize_sse(format: Option<ProviderFormat>, file: Option<&PathBuf>) -> Result<StreamOutput> {
    let mut reader: Box<dyn Read> = match file {
        Some(path) if path.as_os_str() != "-" => Box::new(
            std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?,
        ),
        _ => Box::new(std::io::stdin().lock()),
    };
    let roots = MediaRoots::default();
    let mut turn = Turn::new(&roots);
    let mut decoder = ProviderStream::new(format);
    let mut items = Vec::new();
    let mut provider_error = None;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = reader.read(&mut buf).context("cannot read the stream")?;
        let last = n == 0;
        if last {
            let format = decoder.finish(&mut items)?;
            take_items(&mut items, &mut turn, &mut provider_error);
            let deliveries = turn.finish(None).deliveries;
            let text = deliveries.iter().map(|d| d.text.as_str()).collect();
            return Ok(StreamOutput {
                format: format.as_str(),
                text,
                deliveries,
                provider_error,
            });
        }
        decoder.push(&buf[..n], &mut items)?;
        take_items(&mut items, &mut turn, &mut provider_error);
    }
}

fn take_items(
    items: &mut Vec<StreamItem>,
    turn: &mut Turn<'_>,
    provider_error: &mut Option<String>,
) {
    for item in items.drain(..) {
        match item {
            StreamItem::Text(text) => turn.stream_text(&text),
            StreamItem::ProviderError(message) => *provider_error = Some(message),
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct NeutralizeOutput<'a> {
    text: &'a str,
    neutralized_lines: usize,
}

#[derive(Serialize)]
struct UrlOutput<'a> {
    url: &'a str,
    #[serde(flatten)]
    verdict: &'a normfuzz::reference::url_policy::UrlVerdict,
}

fn read_input(file: Option<&PathBuf>) -> Result<String> {
    let mut bytes = Vec::new();
    match file {
        Some(path) if path.as_os_str() != "-" => {
            bytes =
                std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        }
        _ => {
            std::io::stdin()
                .read_to_end(&mut bytes)
                .context("cannot read standard input")?;
        }
    }
    String::from_utf8(bytes).map_err(|e| {
        anyhow::anyhow!(
            "input is not UTF-8 (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        )
    })
}

fn print_json(out: &mut impl Write, value: &impl Serialize) -> Result<()> {
    serde_json::to_writer(&mut *out, value)?;
    out.write_all(b"\n")?;
    out.flush()?;
    Ok(())
}
