//! `mock-providers`: serve the mock LLM provider APIs, run the mock MCP server on stdio, or
//! compare the mocks with the real APIs (`drift`).

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use mock_providers::Script;
use mock_providers::channels::telegram;
use mock_providers::server::{Config, MockProviders};
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;

mod drift;

#[derive(Parser)]
#[command(
    name = "mock-providers",
    version,
    about = "Mock LLM provider APIs that answer like the real ones"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve Anthropic, OpenAI Chat/Responses, Gemini, Bedrock and Ollama APIs on one address,
    /// and with `--telegram` a mock Telegram Bot API.
    ///
    /// Prints one JSON line with the bound address, per-provider base URLs and the Telegram API
    /// root (`channels.telegram`, null without `--telegram`), then serves until SIGTERM or ctrl-c.
    Serve {
        /// Address to bind (loopback by default; port 0 picks a free port).
        #[arg(long, default_value = "127.0.0.1:0")]
        addr: SocketAddr,
        /// Script of turns (JSON) answered to accepted requests, in order: answers, or failures
        /// in the API's own envelope (`{"error": "rate_limit", "times": 2}`), with queues per API
        /// or model under `providers` (format: `mock-providers/src/script.rs`).
        #[arg(long)]
        script: Option<PathBuf>,
        /// Append every request and its verdict to this JSON Lines file (Telegram uploads are
        /// saved in `channel-files/` beside it).
        #[arg(long)]
        capture: Option<PathBuf>,
        #[command(flatten)]
        telegram: TelegramArgs,
    },
    /// Run the mock MCP server on stdio, answering `tools/call` with the given result.
    Mcp {
        /// JSON file holding the `CallToolResult` (any JSON value) to serve verbatim. Repeated:
        /// the i-th call gets the i-th file's result, the last one repeats (each run of a tool
        /// then tells itself apart).
        #[arg(long, required = true)]
        result: Vec<PathBuf>,
        /// Append each `tools/call` to this JSON Lines file (`{"call": n, "name", "arguments"}`).
        #[arg(long)]
        calls: Option<PathBuf>,
        /// Name of the one advertised tool.
        #[arg(long, default_value = mock_providers::mcp_server::DEFAULT_TOOL_NAME)]
        tool: String,
    },
    /// Replay the verdict cases (`mock-providers/drift/cases.jsonl`) against the real APIs and
    /// report every status or message that differs from the mock's.
    ///
    /// Keys come from ANTHROPIC_API_KEY, OPENAI_API_KEY, GEMINI_API_KEY and OLLAMA_HOST; a provider
    /// without one is skipped. Exit 0: no drift; 1: drift or a failed request; 2: usage error.
    Drift(drift::DriftArgs),
}

/// The mock Telegram Bot API (`/bot<token>/<method>` on the same address).
#[derive(Args)]
struct TelegramArgs {
    /// Serve the mock Telegram Bot API; its user's one message is `--telegram-message`.
    #[arg(long)]
    telegram: bool,
    /// The bot token clients must use (`<bot id>:<secret>`).
    #[arg(long, default_value_t = telegram::Setup::default().token, requires = "telegram")]
    telegram_token: String,
    /// The bot's username (getMe).
    #[arg(long, default_value_t = telegram::Setup::default().bot_username, requires = "telegram")]
    telegram_bot_username: String,
    /// The user's id, also the id of their private chat with the bot.
    #[arg(long, default_value_t = telegram::Setup::default().user_id, requires = "telegram")]
    telegram_user_id: i64,
    /// The user's username (a chat_id of `@username` names their chat).
    #[arg(long, default_value_t = telegram::Setup::default().user_username, requires = "telegram")]
    telegram_username: String,
    /// The message the user sends, delivered once by getUpdates (none when empty).
    #[arg(long, default_value = "", requires = "telegram")]
    telegram_message: String,
}

impl TelegramArgs {
    fn setup(self) -> Option<telegram::Setup> {
        self.telegram.then(|| telegram::Setup {
            token: self.telegram_token,
            bot_username: self.telegram_bot_username,
            user_id: self.telegram_user_id,
            user_username: self.telegram_username,
            message: self.telegram_message,
            ..telegram::Setup::default()
        })
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Serve {
            addr,
            script,
            capture,
            telegram,
        } => serve(addr, script, capture, telegram.setup()).await,
        // Its own exit codes (1 drift, 2 usage); blocking curl calls, nothing else is running.
        Command::Drift(args) => std::process::exit(drift::run(args)),
        Command::Mcp {
            result,
            calls,
            tool,
        } => {
            let values = result
                .iter()
                .map(|path| {
                    let text = std::fs::read(path)
                        .with_context(|| format!("reading {}", path.display()))?;
                    serde_json::from_slice(&text)
                        .with_context(|| format!("parsing {}", path.display()))
                })
                .collect::<anyhow::Result<Vec<serde_json::Value>>>()?;
            let mut server = mock_providers::mcp_server::McpServer::with_results(values)?
                .with_tool(tool, mock_providers::mcp_server::DEFAULT_TOOL_DESCRIPTION);
            if let Some(path) = calls {
                server = server.with_call_log(path);
            }
            mock_providers::mcp_server::run_stdio_with(server).await
        }
    }
}

async fn serve(
    addr: SocketAddr,
    script: Option<PathBuf>,
    capture: Option<PathBuf>,
    telegram: Option<telegram::Setup>,
) -> anyhow::Result<()> {
    let script = script
        .as_deref()
        .map(Script::load)
        .transpose()?
        .unwrap_or_default();
    let server = MockProviders::start(Config {
        addr,
        script,
        capture,
        telegram,
    })
    .await
    .with_context(|| format!("binding {addr}"))?;
    // Listen for SIGTERM before announcing the address: a client that reads the banner and
    // stops us at once must not meet the default action (death by signal, a failed exit).
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{}", server.banner())?;
    stdout.flush()?;
    drop(stdout);
    tokio::select! {
        r = tokio::signal::ctrl_c() => r?,
        _ = term.recv() => {}
    }
    drop(server);
    Ok(())
}
