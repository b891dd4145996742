//! Serves the `CallToolResult` in a JSON file over MCP stdio: `mcp_stdio RESULT.json`.
//! The `mcp_e2e` tests spawn this; the real binary's `mcp` subcommand wires the same `run_stdio`.

use anyhow::Context as _;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let path = std::env::args_os()
        .nth(1)
        .context("usage: mcp_stdio RESULT.json")?;
    let text = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
    let result =
        serde_json::from_slice(&text).with_context(|| format!("parsing {}", path.display()))?;
    mock_providers::mcp_server::run_stdio(result).await
}
