//! The server's HTTP/1.1 transport: hyper 1 on a thread of its own with a single-threaded tokio
//! runtime (a caller that blocks its own runtime, as the e2e driver does, still gets answers).
//!
//! Bounded against hostile clients: a body is read only up to the route's limit (a larger
//! declared length is refused before a byte of it is read, a longer chunked body as soon as it
//! passes the limit), a header must arrive within [`HEADER_TIMEOUT`] and each piece of a body
//! within [`BODY_IDLE`], and a client that leaves mid-request ends only its own connection
//! (no panic: wiremock's server, used before, panicked there and read any body whole).

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt as _, Full};
use hyper::body::{Bytes, Incoming};
use hyper::header::{CONNECTION, CONTENT_LENGTH, CONTENT_TYPE, HeaderName, HeaderValue};
use hyper::{Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::sync::oneshot;
use wiremock::Request;
use wiremock::http::Url;

/// How long a client may take to send a request's header (hyper's default, made effective).
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a body may pause between two pieces.
pub const BODY_IDLE: Duration = Duration::from_secs(30);

/// An answer: status, headers, body and its content type.
#[derive(Debug, Clone)]
pub(super) struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub content_type: Option<&'static str>,
    pub body: Vec<u8>,
}

impl Answer {
    pub fn raw(status: u16, body: Vec<u8>, content_type: &'static str) -> Answer {
        Answer {
            status,
            headers: Vec::new(),
            content_type: Some(content_type),
            body,
        }
    }

    pub fn json(status: u16, body: &serde_json::Value) -> Answer {
        Answer::raw(status, body.to_string().into_bytes(), "application/json")
    }

    pub fn empty(status: u16) -> Answer {
        Answer {
            status,
            headers: Vec::new(),
            content_type: None,
            body: Vec::new(),
        }
    }

    pub fn header(mut self, name: &str, value: impl Into<String>) -> Answer {
        self.headers.push((name.to_string(), value.into()));
        self
    }
}

/// Why a request's body was not read whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Unread {
    /// Longer than the route's limit: by its Content-Length (`declared`) or as it arrived.
    TooLarge { declared: Option<u64>, limit: usize },
    /// Nothing arrived for [`BODY_IDLE`].
    Stalled,
    /// The client left or broke the framing.
    Broken,
}

/// An answer still being made: a route may wait (a long poll) without holding up the others,
/// which the server's single thread runs meanwhile.
pub(super) type Pending<'a> = Pin<Box<dyn Future<Output = Answer> + Send + 'a>>;

/// What the server does with requests; `request.body` is empty until read.
pub(super) trait Service: Send + Sync + 'static {
    /// The largest body this request may carry.
    fn body_limit(&self, request: &Request) -> usize;
    /// The answer to a request read whole.
    fn answer<'a>(&'a self, request: &'a Request) -> Pending<'a>;
    /// The answer to a request whose body was not read whole.
    fn unread(&self, request: &Request, why: Unread) -> Answer;
}

/// The running server; dropping it stops it (connections are closed, the thread joined).
pub(super) struct Transport {
    address: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Transport {
    pub async fn start(
        listener: std::net::TcpListener,
        service: Arc<dyn Service>,
    ) -> std::io::Result<Transport> {
        let address = listener.local_addr()?;
        listener.set_nonblocking(true)?;
        let (stop, stopped) = oneshot::channel();
        let (ready, started) = oneshot::channel();
        let thread = std::thread::Builder::new()
            .name("mock-providers".into())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build();
                let runtime = match runtime {
                    Ok(r) => r,
                    Err(e) => {
                        let _ = ready.send(Err(e));
                        return;
                    }
                };
                runtime.block_on(async move {
                    match tokio::net::TcpListener::from_std(listener) {
                        Ok(listener) => {
                            let _ = ready.send(Ok(()));
                            accept_loop(listener, service, stopped).await;
                        }
                        Err(e) => {
                            let _ = ready.send(Err(e));
                        }
                    }
                });
                // Dropping the runtime here cancels every connection task.
            })?;
        let mut transport = Transport {
            address,
            stop: Some(stop),
            thread: Some(thread),
        };
        match started.await {
            Ok(Ok(())) => Ok(transport),
            Ok(Err(e)) => Err(e),
            Err(_) => {
                transport.stop = None;
                Err(std::io::Error::other("the server thread ended at start"))
            }
        }
    }

    pub fn address(&self) -> SocketAddr {
        self.address
    }
}

impl Drop for Transport {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn accept_loop(
    listener: tokio::net::TcpListener,
    service: Arc<dyn Service>,
    mut stopped: oneshot::Receiver<()>,
) {
    loop {
        tokio::select! {
            _ = &mut stopped => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    tokio::spawn(serve_connection(stream, Arc::clone(&service)));
                }
                // Typically EMFILE: back off instead of spinning on the error.
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            },
        }
    }
}

async fn serve_connection(stream: tokio::net::TcpStream, service: Arc<dyn Service>) {
    let handler = hyper::service::service_fn(move |request| {
        let service = Arc::clone(&service);
        async move { Ok::<_, Infallible>(handle(service.as_ref(), request).await) }
    });
    // A client that leaves, sends garbage or times out ends its own connection: nothing to do.
    let _ = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT)
        .serve_connection(TokioIo::new(stream), handler)
        .await;
}

async fn handle(service: &dyn Service, request: hyper::Request<Incoming>) -> Response<Full<Bytes>> {
    let (parts, mut body) = request.into_parts();
    // Origin-form targets (`/path?query`) as wiremock read them: on a placeholder origin.
    let target = match parts.uri.authority() {
        Some(_) => parts.uri.to_string(),
        None => format!("http://localhost{}", parts.uri),
    };
    let Ok(url) = Url::parse(&target) else {
        return response(
            Answer::raw(400, b"bad request target".to_vec(), "text/plain"),
            true,
        );
    };
    let mut request = Request {
        url,
        method: parts.method,
        headers: parts.headers,
        body: Vec::new(),
    };
    let limit = service.body_limit(&request);
    let declared = request
        .headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        let why = Unread::TooLarge { declared, limit };
        return response(service.unread(&request, why), true);
    }
    match read_body(&mut body, limit, declared).await {
        Ok(bytes) => {
            request.body = bytes;
            response(service.answer(&request).await, false)
        }
        Err(why) => response(service.unread(&request, why), true),
    }
}

/// The body, up to `limit` bytes, each piece within [`BODY_IDLE`] of the last.
async fn read_body(
    body: &mut Incoming,
    limit: usize,
    declared: Option<u64>,
) -> Result<Vec<u8>, Unread> {
    // The declared length is the client's word: reserve at most 1 MiB on it.
    let reserve = declared.map_or(0, |n| usize::try_from(n).unwrap_or(usize::MAX));
    let mut bytes = Vec::with_capacity(reserve.min(limit).min(1 << 20));
    loop {
        let frame = match tokio::time::timeout(BODY_IDLE, body.frame()).await {
            Err(_) => return Err(Unread::Stalled),
            Ok(None) => return Ok(bytes),
            Ok(Some(Err(_))) => return Err(Unread::Broken),
            Ok(Some(Ok(frame))) => frame,
        };
        if let Ok(data) = frame.into_data() {
            if data.len() > limit - bytes.len() {
                return Err(Unread::TooLarge {
                    declared: None,
                    limit,
                });
            }
            bytes.extend_from_slice(&data);
        }
    }
}

/// The hyper response; `close` when the body was not read whole (the connection cannot be
/// reused: the rest of the body would be read as the next request).
fn response(answer: Answer, close: bool) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(answer.body)));
    *response.status_mut() =
        StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let headers = response.headers_mut();
    for (name, value) in &answer.headers {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            headers.append(name, value);
        }
    }
    if let Some(content_type) = answer.content_type {
        headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    }
    if close {
        headers.insert(CONNECTION, HeaderValue::from_static("close"));
    }
    response
}
