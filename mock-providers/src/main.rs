//! `mock-providers`: serve the mock LLM provider APIs, or run the mock MCP server on stdio.

use anyhow::Context;
use clap::{Parser, Subcommand};
use mock_providers::Script;
use mock_providers::server::{Config, MockProviders};
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;

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
    /// Serve Anthropic, OpenAI Chat/Responses, Gemini, Bedrock and Ollama APIs on one address.
    ///
    /// Prints one JSON line with the bound address and per-provider base URLs, then serves until
    /// SIGTERM or ctrl-c.
    Serve {
        /// Address to bind (loopback by default; port 0 picks a free port).
        #[arg(long, default_value = "127.0.0.1:0")]
        addr: SocketAddr,
        /// Script of turns (JSON) answered to accepted requests, in order.
        #[arg(long)]
        script: Option<PathBuf>,
        /// Append every request and its verdict to this JSON Lines file.
        #[arg(long)]
        capture: Option<PathBuf>,
    },
    /// Run the mock MCP server on stdio, answering `tools/call` with the given result.
    Mcp {
        /// JSON file holding the `CallToolResult` (any JSON value) to serve verbatim.
        #[arg(long)]
        result: PathBuf,
        /// Name of the one advertised tool.
        #[arg(long, default_value = mock_providers::mcp_server::DEFAULT_TOOL_NAME)]
        tool: String,
    },
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Serve {
            addr,
            script,
            capture,
        } => serve(addr, script, capture).await,
        Command::Mcp { result, tool } => {
            let text =
                std::fs::read(&result).with_context(|| format!("reading {}", result.display()))?;
            let value = serde_json::from_slice(&text)
                .with_context(|| format!("parsing {}", result.display()))?;
            let server = mock_providers::mcp_server::McpServer::new(value)
                .with_tool(tool, mock_providers::mcp_server::DEFAULT_TOOL_DESCRIPTION);
            mock_providers::mcp_server::run_stdio_with(server).await
        }
    }
}

async fn serve(
    addr: SocketAddr,
    script: Option<PathBuf>,
    capture: Option<PathBuf>,
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
