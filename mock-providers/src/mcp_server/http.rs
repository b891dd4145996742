//! MCP's Streamable HTTP transport: one endpoint, [`HTTP_ENDPOINT`], with its session and header
//! checks.
//!
//! HTTP uses hyper 1 directly (plus hyper-util's tokio adapter and http-body-util): the server is one
//! endpoint with a handful of header checks, so a framework such as axum would add tower, a router
//! and extractors without removing any code here.

use std::collections::HashSet;
use std::convert::Infallible;
use std::hash::{BuildHasher, RandomState};
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
use serde_json::Value;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

use super::{
    HTTP_ENDPOINT, McpServer, SUPPORTED_PROTOCOL_VERSIONS, error_response, handle_value,
    parse_error,
};

/// Transport-level errors in HTTP error bodies; the TypeScript SDK's server uses the same codes.
const TRANSPORT_ERROR: i64 = -32000;
const SESSION_NOT_FOUND: i64 = -32001;

/// A POST body larger than this gets 413; MCP requests from a client are small.
const MAX_HTTP_BODY: usize = 16 * 1024 * 1024;
/// How long `shutdown` lets in-flight HTTP exchanges finish before cutting them off.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
const MCP_SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
const MCP_PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");

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
