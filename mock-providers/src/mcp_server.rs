//! Mock MCP server: serves a configured `CallToolResult` for `tools/call`, verbatim.
//!
//! The JSON-RPC is written by hand (serde_json) rather than with an MCP SDK, because the point is to
//! emit results the SDKs refuse to build: an image block without `data`, unknown block types,
//! non-object blocks, or a result that is not an object at all. `handle_message` holds the whole
//! protocol; the stdio and Streamable HTTP transports only move bytes to and from it.
//!
//! HTTP uses hyper 1 directly (plus hyper-util's tokio adapter and http-body-util): the server is one
//! endpoint with a handful of header checks, so a framework such as axum would add tower, a router
//! and extractors without removing any code here.

use std::collections::HashSet;
use std::convert::Infallible;
use std::hash::{BuildHasher, RandomState};
use std::io::{BufRead, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use anyhow::Context as _;
use http_body_util::{BodyExt as _, Full, LengthLimitError, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::{self, HeaderMap, HeaderName, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

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
/// Transport-level errors in HTTP error bodies; the TypeScript SDK's server uses the same codes.
const TRANSPORT_ERROR: i64 = -32000;
const SESSION_NOT_FOUND: i64 = -32001;

/// A POST body larger than this gets 413; MCP requests from a client are small.
const MAX_HTTP_BODY: usize = 16 * 1024 * 1024;
/// How long `shutdown` lets in-flight HTTP exchanges finish before cutting them off.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
const MCP_SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
const MCP_PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");

/// Protocol state shared by all transports and sessions: the tool and the results it serves.
#[derive(Debug)]
pub struct McpServer {
    tool_name: String,
    tool_description: String,
    /// Never empty: the constructors guarantee it.
    results: Vec<Value>,
    calls: AtomicUsize,
}

impl McpServer {
    /// Serves `result` for every `tools/call`.
    pub fn new(result: Value) -> Self {
        Self {
            tool_name: DEFAULT_TOOL_NAME.to_owned(),
            tool_description: DEFAULT_TOOL_DESCRIPTION.to_owned(),
            results: vec![result],
            calls: AtomicUsize::new(0),
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

    /// Number of `tools/call` requests answered with a result so far.
    pub fn calls_served(&self) -> usize {
        self.calls.load(Ordering::Relaxed)
    }

    fn next_result(&self) -> Value {
        let call = self.calls.fetch_add(1, Ordering::Relaxed);
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
                Some(name) if name == server.tool_name => server.next_result(),
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

/// A running Streamable HTTP server. Dropping it stops the server without waiting;
/// [`McpHttpHandle::shutdown`] stops it and waits.
#[derive(Debug)]
pub struct McpHttpHandle {
    local_addr: SocketAddr,
    stop: watch::Sender<()>,
    task: JoinHandle<()>,
}

impl McpHttpHandle {
    /// The bound address (the real port when `serve_http` was given port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The MCP endpoint, e.g. `http://127.0.0.1:4242/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}{HTTP_ENDPOINT}", self.local_addr)
    }

    /// Stops accepting connections, lets in-flight exchanges finish (up to a few seconds), closes
    /// idle keep-alive connections, and waits for all of it.
    pub async fn shutdown(self) -> anyhow::Result<()> {
        let Self { stop, task, .. } = self;
        drop(stop);
        task.await.context("MCP HTTP server task failed")
    }
}

/// Serves `result` over MCP Streamable HTTP at [`HTTP_ENDPOINT`] on `addr` (callers should pass a
/// 127.0.0.1 address unless the client is elsewhere). Returns once the socket is bound.
pub async fn serve_http(addr: SocketAddr, result: Value) -> anyhow::Result<McpHttpHandle> {
    serve_http_with(addr, McpServer::new(result)).await
}

/// [`serve_http`] with a configured tool or result sequence.
pub async fn serve_http_with(addr: SocketAddr, server: McpServer) -> anyhow::Result<McpHttpHandle> {
    let listener = TcpListener::bind(addr)
        .await
        .with_context(|| format!("binding MCP HTTP server to {addr}"))?;
    let local_addr = listener.local_addr().context("reading the bound address")?;
    let state = Arc::new(HttpState {
        server,
        sessions: Mutex::default(),
    });
    // The receivers see `changed()` fail once the sender is dropped: that is the stop signal.
    let (stop, stopped) = watch::channel(());
    let task = tokio::spawn(accept_loop(listener, state, stopped));
    Ok(McpHttpHandle {
        local_addr,
        stop,
        task,
    })
}

struct HttpState {
    server: McpServer,
    sessions: Mutex<HashSet<String>>,
}

impl HttpState {
    fn sessions(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        // The set stays consistent even if a holder panicked: every critical section is one call.
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

async fn accept_loop(
    listener: TcpListener,
    state: Arc<HttpState>,
    mut stopped: watch::Receiver<()>,
) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            _ = stopped.changed() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    connections.spawn(serve_connection(stream, Arc::clone(&state), stopped.clone()));
                }
                Err(err) => {
                    // Typically EMFILE; back off instead of spinning on the error.
                    eprintln!("mcp http: accept failed: {err}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            // Reap finished connections so the set does not grow with every client.
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    drop(listener);
    let drain = async { while connections.join_next().await.is_some() {} };
    if tokio::time::timeout(SHUTDOWN_GRACE, drain).await.is_err() {
        connections.abort_all();
    }
}

async fn serve_connection(
    stream: TcpStream,
    state: Arc<HttpState>,
    mut stopped: watch::Receiver<()>,
) {
    let service = hyper::service::service_fn(move |request| {
        let state = Arc::clone(&state);
        async move { Ok::<_, Infallible>(route(&state, request).await) }
    });
    let connection =
        hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service);
    let mut connection = std::pin::pin!(connection);
    let outcome = tokio::select! {
        outcome = connection.as_mut() => outcome,
        _ = stopped.changed() => {
            connection.as_mut().graceful_shutdown();
            connection.await
        }
    };
    if let Err(err) = outcome {
        eprintln!("mcp http: connection error: {err}");
    }
}

type HttpResponse = Response<Full<Bytes>>;

async fn route(state: &HttpState, request: Request<Incoming>) -> HttpResponse {
    if request.uri().path() != HTTP_ENDPOINT {
        return http_error(
            StatusCode::NOT_FOUND,
            TRANSPORT_ERROR,
            "Not Found: the MCP endpoint is /mcp",
        );
    }
    // DNS-rebinding guard the spec requires: browsers send Origin, other clients do not.
    if !origin_allowed(request.headers()) {
        return http_error(
            StatusCode::FORBIDDEN,
            TRANSPORT_ERROR,
            "Forbidden: Origin is not local",
        );
    }
    match *request.method() {
        Method::POST => post(state, request).await,
        Method::DELETE => delete(state, request.headers()),
        // No server-initiated stream (GET) is offered; the spec allows answering 405.
        _ => {
            let mut response = http_error(
                StatusCode::METHOD_NOT_ALLOWED,
                TRANSPORT_ERROR,
                "Method Not Allowed",
            );
            response
                .headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("POST, DELETE"));
            response
        }
    }
}

async fn post(state: &HttpState, request: Request<Incoming>) -> HttpResponse {
    let (parts, body) = request.into_parts();
    if let Some(version) = parts.headers.get(&MCP_PROTOCOL_VERSION)
        && !version
            .to_str()
            .is_ok_and(|v| SUPPORTED_PROTOCOL_VERSIONS.contains(&v))
    {
        return http_error(
            StatusCode::BAD_REQUEST,
            TRANSPORT_ERROR,
            "Bad Request: unsupported MCP-Protocol-Version",
        );
    }
    if parts
        .headers
        .get(header::CONTENT_TYPE)
        .is_some_and(|ct| !media_type_is(ct, "application/json"))
    {
        return http_error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            TRANSPORT_ERROR,
            "Unsupported Media Type: Content-Type must be application/json",
        );
    }
    let Some(format) = reply_format(&parts.headers) else {
        return http_error(
            StatusCode::NOT_ACCEPTABLE,
            TRANSPORT_ERROR,
            "Not Acceptable: Accept must allow application/json or text/event-stream",
        );
    };
    let body = match Limited::new(body, MAX_HTTP_BODY).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(err) if err.is::<LengthLimitError>() => {
            return http_error(
                StatusCode::PAYLOAD_TOO_LARGE,
                TRANSPORT_ERROR,
                "Payload Too Large",
            );
        }
        Err(err) => {
            return http_error(
                StatusCode::BAD_REQUEST,
                TRANSPORT_ERROR,
                &format!("Bad Request: {err}"),
            );
        }
    };
    let message: Value = match serde_json::from_slice(&body) {
        Ok(message) => message,
        Err(err) => {
            return json_response(
                StatusCode::BAD_REQUEST,
                &parse_error(&err),
                ReplyFormat::Json,
            );
        }
    };

    let initialize = message.get("method").and_then(Value::as_str) == Some("initialize");
    if !initialize {
        match session_header(&parts.headers) {
            None => {
                return http_error(
                    StatusCode::BAD_REQUEST,
                    TRANSPORT_ERROR,
                    "Bad Request: Mcp-Session-Id header is required",
                );
            }
            Some(id) if !state.sessions().contains(id) => {
                return http_error(
                    StatusCode::NOT_FOUND,
                    SESSION_NOT_FOUND,
                    "Session not found",
                );
            }
            Some(_) => {}
        }
    }

    let Some(reply) = handle_value(&state.server, &message) else {
        // Only notifications or responses: accepted, nothing to say.
        let mut response = Response::new(Full::default());
        *response.status_mut() = StatusCode::ACCEPTED;
        return response;
    };
    // A lone error without an id (invalid message) is an HTTP-level rejection per the transport spec.
    let rejected = reply.get("error").is_some() && reply.get("id") == Some(&Value::Null);
    let status = if rejected {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::OK
    };
    let mut response = json_response(status, &reply, format);
    if initialize && reply.get("result").is_some() {
        let id = new_session_id();
        let Ok(value) = HeaderValue::from_str(&id) else {
            return http_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                TRANSPORT_ERROR,
                "session id is not a header value",
            );
        };
        state.sessions().insert(id);
        response.headers_mut().insert(MCP_SESSION_ID, value);
    }
    response
}

fn delete(state: &HttpState, headers: &HeaderMap) -> HttpResponse {
    match session_header(headers) {
        None => http_error(
            StatusCode::BAD_REQUEST,
            TRANSPORT_ERROR,
            "Bad Request: Mcp-Session-Id header is required",
        ),
        Some(id) if state.sessions().remove(id) => Response::new(Full::default()),
        Some(_) => http_error(
            StatusCode::NOT_FOUND,
            SESSION_NOT_FOUND,
            "Session not found",
        ),
    }
}

/// A header value that is not visible ASCII cannot be a session we issued; it reads as unknown.
fn session_header(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(&MCP_SESSION_ID)
        .map(|v| v.to_str().unwrap_or(""))
}

/// 128 bits from std's randomly keyed SipHash, mixed with the clock and a counter. Not
/// cryptographic, which is acceptable for a mock that listens on loopback; it keeps `rand` out.
fn new_session_id() -> String {
    static ISSUED: AtomicUsize = AtomicUsize::new(0);
    let nonce = (ISSUED.fetch_add(1, Ordering::Relaxed), SystemTime::now());
    let high = RandomState::new().hash_one(nonce);
    let low = RandomState::new().hash_one(nonce);
    format!("{high:016x}{low:016x}")
}

fn origin_allowed(headers: &HeaderMap) -> bool {
    let Some(origin) = headers.get(header::ORIGIN) else {
        return true;
    };
    let Some((_, authority)) = origin.to_str().unwrap_or("").split_once("://") else {
        return false;
    };
    let host = match authority.rsplit_once(':') {
        Some((host, port)) if !port.contains(']') => host,
        _ => authority,
    };
    matches!(host, "localhost" | "127.0.0.1" | "[::1]")
}

#[derive(Clone, Copy)]
enum ReplyFormat {
    Json,
    EventStream,
}

/// JSON unless the client's Accept rules it out but allows an event stream. No Accept means JSON.
fn reply_format(headers: &HeaderMap) -> Option<ReplyFormat> {
    let Some(accept) = headers.get(header::ACCEPT) else {
        return Some(ReplyFormat::Json);
    };
    let accept = accept.to_str().unwrap_or("");
    let ranges: Vec<String> = accept
        .split(',')
        .map(|range| {
            range
                .split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
        .collect();
    let allows = |types: &[&str]| ranges.iter().any(|r| types.contains(&r.as_str()));
    if allows(&["application/json", "application/*", "*/*"]) {
        Some(ReplyFormat::Json)
    } else if allows(&["text/event-stream", "text/*"]) {
        Some(ReplyFormat::EventStream)
    } else {
        None
    }
}

fn media_type_is(value: &HeaderValue, expected: &str) -> bool {
    let value = value.to_str().unwrap_or("");
    value
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .eq_ignore_ascii_case(expected)
}

fn json_response(status: StatusCode, body: &Value, format: ReplyFormat) -> HttpResponse {
    let (content_type, body) = match format {
        ReplyFormat::Json => ("application/json", body.to_string()),
        // One event carrying the whole reply, then the stream ends.
        ReplyFormat::EventStream => (
            "text/event-stream",
            format!("event: message\ndata: {body}\n\n"),
        ),
    };
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    if let ReplyFormat::EventStream = format {
        response
            .headers_mut()
            .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    }
    response
}

fn http_error(status: StatusCode, code: i64, message: &str) -> HttpResponse {
    json_response(
        status,
        &error_response(Value::Null, code, message),
        ReplyFormat::Json,
    )
}
