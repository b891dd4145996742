//! The `normfuzz` command line: the reference normalizer's operations, JSON on stdout.
//!
//! Exit status: 0 done (a provider error inside a `stream` is reported in its output); 1 the input
//! was judged and something was refused (`check-url`);
//! 2 bad usage or unreadable input (message on stderr).
//!
//! This file holds the command line and dispatches; each subcommand's arguments and work are in
//! `cli/<subcommand>.rs`.

mod cli;

// Campaigns allocate and free millions of small JSON nodes per second on every job thread;
// mimalloc's per-thread free lists cut the campaign's CPU time by about a fifth against glibc's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_delay` in mimalloc.h (v2 and v3); libmimalloc-sys names no constant for it.
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};

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
    Coerce(cli::coerce::CoerceArgs),
    /// Neutralize line-start MEDIA: directives in untrusted text (rules S1, D1).
    ///
    /// Reads raw UTF-8 text; prints {"text":..,"neutralizedLines":N}.
    Neutralize(cli::neutralize::NeutralizeArgs),
    /// Judge remote media URLs against the public-https policy (rules U1–U8).
    ///
    /// Prints one JSON line per URL: {"url","allowed","reason","canonical"}; exits 1 when any URL is refused.
    CheckUrl(cli::check_url::CheckUrlArgs),
    /// Parse a final assistant reply: MEDIA: lines, [[...]] tags, [embed ...] shortcodes (rules D2, S3).
    ///
    /// Reads raw UTF-8 text; prints the `parse_reply` protocol output:
    /// {"text","mediaUrls","audioAsVoice","replyTo","embeds","rejectedMedia"}.
    ParseReply(cli::parse_reply::ParseReplyArgs),
    /// Decide whether a fallback retry carries the user's images (rules S4, R1–R6).
    ///
    /// Reads the `resolve_retry_images` protocol input
    /// {"attempt","previousFailure","primaryProvider","candidateProvider","images"};
    /// prints {"images": [...] or null}.
    RetryImages(cli::retry_images::RetryImagesArgs),
    /// Decode a captured provider SSE stream and neutralize its text as streamed output (rules D1, B3).
    ///
    /// Prints {"format","text","deliveries":[{"text","mediaUrls"}],"providerError"}; `text` is the
    /// whole neutralized output, `deliveries` what each provider event released.
    Stream(cli::stream::StreamArgs),
    /// Set up normfuzz in a runtime's repository: a starter shim (Node or Python) that speaks the
    /// protocol, normfuzz.toml, a profile, an empty baseline and a GitHub workflow calling the
    /// normfuzz Action. Refuses to overwrite any file (`normfuzz init --help` explains each).
    Init(cli::init::InitArgs),
    /// Run a conformance campaign: generated cases through the reference and a system under test,
    /// judged by rule id, each distinct failure shrunk and written to the report.
    ///
    /// Ends with `N passed, N failed`; exits 0 when no case fails the gate, 1 when any does,
    /// 2 on a harness or usage error (for example a SUT that sends no handshake).
    Conform(cli::conform::ConformArgs),
    /// Join the reports of a sharded campaign (`conform --shard K/N`, same seed, cases and jobs)
    /// into one report, as if one run had made it; exits 1 when any case fails the gate.
    MergeReports(cli::merge_reports::MergeReportsArgs),
    /// Replay a stored finding against a SUT and judge it again; exits 1 if it still fails.
    Repro(cli::repro::ReproArgs),
    /// Print a finding of a runtime in the matrix as a bug report for that runtime's tracker:
    /// the rule in plain words, the minimal input, what the model got and should get, and a
    /// standalone repro script in the runtime's language (Markdown on stdout).
    Upstream(cli::upstream::UpstreamArgs),
    /// Speak the SUT protocol on stdin/stdout with the reference normalizer behind it.
    ServeReference,
    /// Write the report of a libFuzzer run from its stderr logs, one per target.
    ///
    /// Writes junit.xml, index.json, summary.md (also appended to $GITHUB_STEP_SUMMARY when set)
    /// and report.html into --out. Exits 0 when every target ran to its end without a crash,
    /// 1 when any crashed or its log ends early, 2 on unreadable or unrecognized input.
    FuzzReport(cli::fuzz_report::FuzzReportArgs),
    /// Run a real agent runtime (installed on first use) against the mock providers and the mock
    /// MCP server, one sandboxed turn per case, judged by rule id against its baseline.
    ///
    /// Ends with `N passed, N failed`; exits 0 when every finding is in the baseline or of a
    /// class outside --fail-on and no baseline entry is stale, 1 otherwise, 2 on a setup error.
    E2e(normfuzz::e2e::driver::E2eArgs),
    /// Time a real runtime's own tool-result coercion on the benchmark documents (installed on
    /// first use, as for e2e); `cargo xtask bench --anchor` prints it next to the reference.
    ///
    /// Prints one JSON line per document: {"name","bytes","ns"} (best of --runs).
    BenchAnchor(cli::bench_anchor::BenchAnchorArgs),
    /// Install a runtime adapter's packages into the cache (or find them there) and print the
    /// install folder on stdout; `cargo xtask matrix` runs a runtime installed this way.
    Install(cli::install::InstallArgs),
    /// Speed gate: the reference's coercion of each text benchmark document against a
    /// serde_json Value round trip, interleaved; exits 1 when a median ratio is under
    /// --min-ratio.
    BenchCheck(cli::bench_check::BenchCheckArgs),
    /// One sandboxed e2e turn (run by `e2e` inside its namespaces; not for direct use).
    #[command(hide = true)]
    E2eTurn(cli::e2e::E2eTurnArgs),
}

fn main() -> ExitCode {
    // Campaigns free multi-megabyte documents case after case; mimalloc hands freed memory back
    // to the OS and the next case faults it in again, zeroed by the kernel (a tenth of a coerce
    // campaign's CPU; a 1 s purge delay did not change that). Never purging keeps it: page
    // faults 45,000 -> 4,300 and about 10% less CPU over 100,000 default-mix cases.
    // SAFETY: setting an option has no precondition; mimalloc reads options as it goes.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1) };
    let cli = Cli::parse();
    // A finding's minimal input may be as deep as a generated one; reports serialize and drop
    // it the ordinary, recursive way, so the command runs on a stack sized for that depth.
    let outcome = std::thread::Builder::new()
        .name("normfuzz".into())
        .stack_size(normfuzz::generate::corners::nesting::JOB_STACK)
        .spawn(move || run(cli.command))
        .map_err(anyhow::Error::from)
        .and_then(|main| {
            main.join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        });
    match outcome {
        Ok(code) => code,
        Err(err) => {
            eprintln!("normfuzz: error: {err:#}");
            ExitCode::from(2)
        }
    }
}

/// Runs one subcommand; its exit code, or an error for exit status 2.
fn run(command: Command) -> Result<ExitCode> {
    match command {
        Command::Coerce(args) => cli::coerce::run(args),
        Command::Neutralize(args) => cli::neutralize::run(args),
        Command::CheckUrl(args) => cli::check_url::run(args),
        Command::ParseReply(args) => cli::parse_reply::run(args),
        Command::RetryImages(args) => cli::retry_images::run(args),
        Command::Stream(args) => cli::stream::run(args),
        Command::Init(args) => cli::init::run(args),
        Command::Conform(args) => cli::conform::run(args),
        Command::MergeReports(args) => cli::merge_reports::run(args),
        Command::Repro(args) => cli::repro::run(args),
        Command::Upstream(args) => cli::upstream::run(args),
        Command::ServeReference => cli::serve_reference::run(),
        Command::FuzzReport(args) => cli::fuzz_report::run(args),
        Command::E2e(args) => cli::e2e::run(args),
        Command::E2eTurn(args) => cli::e2e::turn(args),
        Command::BenchAnchor(args) => cli::bench_anchor::run(args),
        Command::BenchCheck(args) => cli::bench_check::run(args),
        Command::Install(args) => cli::install::run(args),
    }
}
