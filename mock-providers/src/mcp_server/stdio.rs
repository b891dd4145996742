//! MCP's stdio transport: newline-delimited JSON-RPC on stdin and stdout.

use std::io::{BufRead, Write};

use anyhow::Context as _;
use serde_json::Value;

use super::{McpServer, handle_message};

/// Serves `result` over MCP's stdio transport (newline-delimited JSON-RPC on stdin/stdout) until
/// stdin closes. Nothing but protocol messages is written to stdout.
pub async fn run_stdio(result: Value) -> anyhow::Result<()> {
    run_stdio_with(McpServer::new(result)).await
}

/// [`run_stdio`] with a configured tool or result sequence.
pub async fn run_stdio_with(server: McpServer) -> anyhow::Result<()> {
    // Blocking std I/O on a blocking-pool thread: this is what tokio's own stdin does internally,
    // and it keeps the `io-std` feature out of the crate's tokio line.
    tokio::task::spawn_blocking(move || {
        serve_lines(&server, std::io::stdin().lock(), std::io::stdout().lock())
    })
    .await
    .context("stdio server thread failed")?
}

fn serve_lines(
    server: &McpServer,
    mut input: impl BufRead,
    mut output: impl Write,
) -> anyhow::Result<()> {
    // Bytes, not `lines()`: invalid UTF-8 must become a parse error, not end the session.
    let mut line = Vec::new();
    loop {
        line.clear();
        if input
            .read_until(b'\n', &mut line)
            .context("reading stdin")?
            == 0
        {
            return Ok(());
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if let Some(reply) = handle_message(server, &line) {
            writeln!(output, "{reply}")
                .and_then(|()| output.flush())
                .context("writing stdout")?;
        }
    }
}
