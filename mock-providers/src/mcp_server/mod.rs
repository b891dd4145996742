//! Mock MCP server: serves a configured `CallToolResult` for `tools/call`, verbatim.
//!
//! The JSON-RPC is written by hand (serde_json) rather than with an MCP SDK, because the point is to
//! emit results the SDKs refuse to build: an image block without `data`, unknown block types,
//! non-object blocks, or a result that is not an object at all. `handle_message` holds the whole
//! protocol; the stdio (`stdio.rs`) and Streamable HTTP (`http.rs`) transports only move bytes to
//! and from it.

use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};

mod http;
mod stdio;

pub use http::{McpHttpHandle, serve_http, serve_http_with};
pub use stdio::{run_stdio, run_stdio_with};

/// Protocol versions this server accepts in `initialize`, oldest first.
pub const SUPPORTED_PROTOCOL_VERSIONS: [&str; 3] = ["2025-03-26", "2025-06-18", "2025-11-25"];
/// Answered when the client asks for a version not in [`SUPPORTED_PROTOCOL_VERSIONS`].
pub const LATEST_PROTOCOL_VERSION: &str = "2025-11-25";
/// Path of the single Streamable HTTP endpoint.
pub const HTTP_ENDPOINT: &str = "/mcp";
/// Tool name and description used unless [`McpServer::with_tool`] overrides them.
pub const DEFAULT_TOOL_NAME: &str = "mock_tool";
pub const DEFAULT_TOOL_DESCRIPTION: &str = "Returns the configured result.";

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;

/// Protocol state shared by all transports and sessions: the tool and the results it serves.
#[derive(Debug)]
pub struct McpServer {
    tool_name: String,
    tool_description: String,
    /// Never empty: the constructors guarantee it.
    results: Vec<Value>,
    calls: AtomicUsize,
    /// Where each `tools/call` is appended as one JSON line (`{"call": n, "name", "arguments"}`):
    /// the count outlives the server, which its client may kill, so a harness can tell whether a
    /// tool ran again (a fallback replaying a completed call).
    call_log: Option<std::path::PathBuf>,
}

impl McpServer {
    /// Serves `result` for every `tools/call`.
    pub fn new(result: Value) -> Self {
        Self {
            tool_name: DEFAULT_TOOL_NAME.to_owned(),
            tool_description: DEFAULT_TOOL_DESCRIPTION.to_owned(),
            results: vec![result],
            calls: AtomicUsize::new(0),
            call_log: None,
        }
    }

    /// Serves `results[i]` for the i-th `tools/call` (counted across sessions); the last one repeats.
    pub fn with_results(results: Vec<Value>) -> anyhow::Result<Self> {
        anyhow::ensure!(
            !results.is_empty(),
            "a mock MCP server needs at least one result"
        );
        Ok(Self {
            results,
            ..Self::new(Value::Null)
        })
    }

    /// Replaces the advertised tool's name and description.
    pub fn with_tool(mut self, name: impl Into<String>, description: impl Into<String>) -> Self {
        self.tool_name = name.into();
        self.tool_description = description.into();
        self
    }

    /// Appends every `tools/call` to `path` (JSON Lines, one write per call); the calls already
    /// there count for which result is served, so servers started one after another on one log
    /// serve the sequence once between them.
    pub fn with_call_log(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.call_log = Some(path.into());
        self
    }

    /// Number of `tools/call` requests answered with a result so far.
    pub fn calls_served(&self) -> usize {
        self.calls.load(Ordering::Relaxed)
    }

    fn next_result(&self, arguments: Option<&Value>) -> Value {
        let own = self.calls.fetch_add(1, Ordering::Relaxed);
        // With a log, the calls it holds count too: a client that restarts the server (openclaw
        // starts one per agent attempt) still gets the next result, not the first one again.
        let call = match &self.call_log {
            Some(path) => {
                let logged = std::fs::read(path)
                    .map_or(0, |bytes| bytes.iter().filter(|&&b| b == b'\n').count());
                let line =
                    json!({"call": logged + 1, "name": self.tool_name, "arguments": arguments});
                // A log that cannot be written must not cost the client its result; the count
                // is then missing, which a reader sees as no call.
                let _ = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .and_then(|mut f| {
                        std::io::Write::write_all(&mut f, format!("{line}\n").as_bytes())
                    });
                logged
            }
            None => own,
        };
        self.results
            .get(call)
            .or(self.results.last())
            .cloned()
            .unwrap_or_default()
    }
}

/// Answers one JSON-RPC message (a single object or a batch) with the text to send back, or `None`
/// when JSON-RPC 2.0 wants no answer (notifications, responses). The answer is compact JSON and so
/// never contains a raw newline, as the stdio transport requires.
pub fn handle_message(server: &McpServer, message: impl AsRef<[u8]>) -> Option<String> {
    let reply = match serde_json::from_slice::<Value>(message.as_ref()) {
        Ok(message) => handle_value(server, &message)?,
        Err(err) => parse_error(&err),
    };
    Some(reply.to_string())
}

fn handle_value(server: &McpServer, message: &Value) -> Option<Value> {
    match message {
        Value::Array(batch) if batch.is_empty() => Some(error_response(
            Value::Null,
            INVALID_REQUEST,
            "Invalid Request: empty batch",
        )),
        // Batches are JSON-RPC 2.0 (and MCP 2025-03-26); later MCP versions dropped them, but
        // answering one costs nothing and keeps older clients working.
        Value::Array(batch) => {
            let replies: Vec<Value> = batch
                .iter()
                .filter_map(|m| handle_single(server, m))
                .collect();
            (!replies.is_empty()).then_some(Value::Array(replies))
        }
        single => handle_single(server, single),
    }
}

fn handle_single(server: &McpServer, message: &Value) -> Option<Value> {
    let Some(object) = message.as_object() else {
        return Some(invalid_request(Value::Null, "not a JSON-RPC object"));
    };
    // A response to a server-to-client request; this server sends none, so there is nothing to do.
    if !object.contains_key("method")
        && (object.contains_key("result") || object.contains_key("error"))
    {
        return None;
    }
    let id = match object.get("id") {
        None => None,
        Some(id @ (Value::String(_) | Value::Number(_))) => Some(id.clone()),
        // MCP forbids a null id (JSON-RPC only discourages it); objects, arrays and booleans are
        // not ids in either.
        Some(_) => {
            return Some(invalid_request(
                Value::Null,
                "id must be a string or a number",
            ));
        }
    };
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Some(invalid_request(
            id.unwrap_or(Value::Null),
            r#"jsonrpc must be "2.0""#,
        ));
    }
    let Some(method) = object.get("method").and_then(Value::as_str) else {
        return Some(invalid_request(
            id.unwrap_or(Value::Null),
            "method must be a string",
        ));
    };
    // Notifications (notifications/initialized, cancelled, unknown ones) never get an answer.
    let id = id?;
    let params = object.get("params");
    let result = match method {
        "initialize" => initialize_result(params),
        "ping" => json!({}),
        "tools/list" => json!({"tools": [{
            "name": server.tool_name,
            "description": server.tool_description,
            "inputSchema": {"type": "object"},
        }]}),
        "tools/call" => {
            let name = params.and_then(|p| p.get("name")).and_then(Value::as_str);
            match name {
                Some(name) if name == server.tool_name => {
                    server.next_result(params.and_then(|p| p.get("arguments")))
                }
                Some(name) => {
                    return Some(error_response(
                        id,
                        INVALID_PARAMS,
                        &format!("Unknown tool: {name}"),
                    ));
                }
                None => {
                    return Some(error_response(
                        id,
                        INVALID_PARAMS,
                        "params.name must be a string",
                    ));
                }
            }
        }
        other => {
            return Some(error_response(
                id,
                METHOD_NOT_FOUND,
                &format!("Method not found: {other}"),
            ));
        }
    };
    Some(json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

fn initialize_result(params: Option<&Value>) -> Value {
    let requested = params
        .and_then(|p| p.get("protocolVersion"))
        .and_then(Value::as_str);
    let version = requested
        .filter(|v| SUPPORTED_PROTOCOL_VERSIONS.contains(v))
        .unwrap_or(LATEST_PROTOCOL_VERSION);
    json!({
        "protocolVersion": version,
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "normfuzz-mock-mcp", "version": env!("CARGO_PKG_VERSION")},
    })
}

fn error_response(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

fn invalid_request(id: Value, why: &str) -> Value {
    error_response(id, INVALID_REQUEST, &format!("Invalid Request: {why}"))
}

fn parse_error(err: &serde_json::Error) -> Value {
    error_response(Value::Null, PARSE_ERROR, &format!("Parse error: {err}"))
}
