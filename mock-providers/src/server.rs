//! The HTTP server: routing on method and path (including Gemini's `{model}:generateContent` and
//! Bedrock's `/model/{id}/converse`), then [`crate::validate`], the capture of the request, and the
//! real error or the next scripted turn. The transport (`server/transport.rs`) is hyper 1 on a
//! thread of its own; requests keep wiremock's `Request` shape.
//!
//! Bounds: a body is read up to its route's limit (`server/limits.rs`: a provider's own limit where
//! its validator models one, 64 MiB elsewhere) and refused past it without being read, 413 in the
//! API's envelope; a header must arrive within 30 s and a body may pause 30 s at most; a client that
//! leaves mid-request ends only its own connection. Accepted for a mock: responses are sent whole
//! (SSE events arrive in one body, so timing between events and splits inside a UTF-8 sequence at
//! the TCP level cannot be scripted: splits happen at event level), and answers are made on one
//! thread (a route that waits, the Telegram long poll, yields it to the others meanwhile). A
//! non-JSON body is captured as its first 64 KiB (`body_text`).
//!
//! The mock Telegram Bot API (`channels/telegram.rs`) answers `/bot…` and `/file/bot…` when
//! [`Config::telegram`] sets it up; the canary route (`canary.rs`) answers `GET /canary/…` and
//! captures each hit (`"canary": <marker>`).

mod limits;
mod transport;

use crate::capture::Capture;
use crate::channels::telegram;
use crate::providers::{self, anthropic, bedrock, gemini, ollama, openai_chat, openai_responses};
use crate::script::{Failure, Reply, Script, Served, Step, Turn};
use crate::verdict::Rejection;
use crate::{Provider, Verdict, ids, validate};
use serde_json::{Map, Value, json};
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use transport::{Answer, Pending, Service, Transport, Unread};
use wiremock::Request;

pub use limits::MAX_BODY;

/// The longest `body_text` a capture record keeps of a body that is not JSON.
const MAX_BODY_TEXT: usize = 64 * 1024;

/// What the server does when started.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where to listen; loopback unless told otherwise. Port 0 picks a free port.
    pub addr: SocketAddr,
    pub script: Script,
    /// JSON Lines capture file (appended to). Channel uploads are saved beside it, in
    /// [`telegram::FILES_DIR`].
    pub capture: Option<PathBuf>,
    /// The mock Telegram Bot API's setup; `None` serves no channel.
    pub telegram: Option<telegram::Setup>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            script: Script::default(),
            capture: None,
            telegram: None,
        }
    }
}

struct State {
    script: Mutex<Script>,
    capture: Capture,
    telegram: Option<telegram::Channel>,
}

/// A running mock of all six provider APIs on one address. Dropping it stops the server.
pub struct MockProviders {
    transport: Transport,
    state: Arc<State>,
}

/// Routes: one per mounted mock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    Api(Provider),
    ListRequests,
    ClearRequests,
    SetScript,
    /// The loopback canary route (`canary.rs`): any fetch of a URL the case named.
    Canary,
}

fn route(request: &Request) -> Option<Route> {
    let path = request.url.path();
    let method = request.method.as_str();
    let api = |p| Some(Route::Api(p));
    match (method, path) {
        ("GET", "/__mock/requests") => Some(Route::ListRequests),
        ("DELETE", "/__mock/requests") => Some(Route::ClearRequests),
        ("POST", "/__mock/script") => Some(Route::SetScript),
        ("GET" | "HEAD", _) if crate::canary::marker(path).is_some() => Some(Route::Canary),
        ("POST", "/v1/messages") => api(Provider::Anthropic),
        ("POST", "/v1/chat/completions") => api(Provider::OpenAiChat),
        ("POST", "/v1/responses") => api(Provider::OpenAiResponses),
        ("POST", "/api/chat") => api(Provider::Ollama),
        ("POST", _) if gemini_model(path).is_some() => api(Provider::Gemini),
        ("POST", _) if bedrock_stream(path).is_some() => api(Provider::Bedrock),
        _ => None,
    }
}

/// `/v1beta/models/{model}:generateContent` (or `:streamGenerateContent`, `/v1/...`) → (model, streamed).
fn gemini_model(path: &str) -> Option<(&str, bool)> {
    let rest = path
        .strip_prefix("/v1beta/models/")
        .or_else(|| path.strip_prefix("/v1/models/"))?;
    let (model, method) = rest.rsplit_once(':')?;
    if model.is_empty() || model.contains('/') {
        return None;
    }
    match method {
        "generateContent" => Some((model, false)),
        "streamGenerateContent" => Some((model, true)),
        _ => None,
    }
}

/// `/model/{modelId}/converse` → false, `/converse-stream` → true.
fn bedrock_stream(path: &str) -> Option<bool> {
    let rest = path.strip_prefix("/model/")?;
    let (model, action) = rest.rsplit_once('/')?;
    if model.is_empty() {
        return None;
    }
    match action {
        "converse" => Some(false),
        "converse-stream" => Some(true),
        _ => None,
    }
}

/// `/model/{modelId}/converse[-stream]` → the model id, percent-decoded (SDKs encode its `:`).
fn bedrock_model(path: &str) -> Option<String> {
    let rest = path.strip_prefix("/model/")?;
    let (model, _) = rest.rsplit_once('/')?;
    Some(
        percent_encoding::percent_decode_str(model)
            .decode_utf8_lossy()
            .into_owned(),
    )
}

/// The model a request names, for the script's `api/model` queues: the body's `model`, or the
/// path's for Gemini and Bedrock.
fn model_of(provider: Provider, request: &Request) -> Option<String> {
    match provider {
        Provider::Gemini => gemini_model(request.url.path()).map(|(m, _)| m.to_string()),
        Provider::Bedrock => bedrock_model(request.url.path()),
        _ => serde_json::Deserializer::from_slice(&request.body)
            .into_iter::<Value>()
            .next()
            .and_then(Result::ok)
            .and_then(|b| b.get("model")?.as_str().map(str::to_string)),
    }
}

impl Service for State {
    fn body_limit(&self, request: &Request) -> usize {
        limits::body_limit(match route(request) {
            Some(Route::Api(provider)) => Some(provider),
            _ => None,
        })
    }

    fn answer<'a>(&'a self, request: &'a Request) -> Pending<'a> {
        if let Some(channel) = &self.telegram
            && telegram::is_channel_path(request.url.path())
        {
            return Box::pin(async move {
                let r = channel.answer(request, &self.capture).await;
                Answer::raw(r.status, r.body, r.content_type)
            });
        }
        let answer = self.answer_now(request);
        Box::pin(async move { answer })
    }

    /// A body over the limit is the API's refusal, captured (with its declared length); a body
    /// that never arrived whole is no request: answered (if the client still listens), not
    /// captured.
    fn unread(&self, request: &Request, why: Unread) -> Answer {
        match why {
            Unread::TooLarge { declared, limit } => {
                let provider = match route(request) {
                    Some(Route::Api(provider)) => Some(provider),
                    _ => None,
                };
                let Verdict::Rejected {
                    status,
                    body,
                    headers,
                } = limits::too_large(provider)
                else {
                    return Answer::empty(413);
                };
                // The body was not read: no model known.
                let mut r = record(
                    provider,
                    None,
                    request,
                    &json!({"accepted": false, "status": status, "body": body}),
                );
                r["body_len"] = json!(declared);
                r["body_unread"] = json!(format!("over the {limit}-byte limit"));
                if let Some(o) = r.as_object_mut() {
                    o.remove("body_text");
                }
                self.capture.record(r);
                self.rejection(provider, request, status, body, headers)
            }
            Unread::Stalled => Answer::json(
                408,
                &json!({"error": "mock-providers: the request body stalled"}),
            ),
            Unread::Broken => Answer::json(
                400,
                &json!({"error": "mock-providers: the request body is incomplete or malformed"}),
            ),
        }
    }
}

/// The capture record of one request; `model` is the one it names (`model_of`), which the
/// harness tells a fallback's requests apart by.
fn record(
    provider: Option<Provider>,
    model: Option<&str>,
    request: &Request,
    verdict: &Value,
) -> Value {
    let headers: Map<String, Value> = request
        .headers
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_string(),
                json!(String::from_utf8_lossy(v.as_bytes())),
            )
        })
        .collect();
    let mut r = json!({
        "provider": provider.map(Provider::name),
        "model": model,
        "method": request.method.as_str(),
        "path": request.url.path(),
        "query": request.url.query(),
        "headers": headers,
        "body_len": request.body.len(),
        "verdict": verdict,
    });
    match serde_json::from_slice::<Value>(&request.body) {
        Ok(body) => r["body"] = body,
        Err(_) => {
            let cut = request.body.len().min(MAX_BODY_TEXT);
            r["body_text"] = json!(String::from_utf8_lossy(&request.body[..cut]));
            if cut < request.body.len() {
                r["body_text_truncated"] = json!(true);
            }
        }
    }
    r
}

/// The request-id header a provider sends with every answer.
fn request_id_header(provider: Provider) -> Option<(&'static str, String)> {
    match provider {
        Provider::Anthropic => Some(("request-id", ids::anthropic())),
        Provider::OpenAiChat | Provider::OpenAiResponses => Some(("x-request-id", ids::openai())),
        Provider::Bedrock => Some(("x-amzn-RequestId", ids::aws())),
        Provider::Gemini | Provider::Ollama => None,
    }
}

impl State {
    /// The answer of every route but the channel's: made at once.
    fn answer_now(&self, request: &Request) -> Answer {
        match route(request) {
            Some(Route::Api(provider)) => self.answer_api(provider, request),
            Some(Route::ListRequests) => Answer::json(200, &Value::Array(self.capture.all())),
            Some(Route::ClearRequests) => {
                self.capture.clear();
                Answer::empty(204)
            }
            Some(Route::SetScript) => {
                let parsed = serde_json::from_slice::<Value>(&request.body)
                    .map_err(anyhow::Error::from)
                    .and_then(|v| Script::from_json(&v));
                match parsed {
                    Ok(script) => {
                        let turns = script.remaining();
                        *self.script.lock().unwrap_or_else(|p| p.into_inner()) = script;
                        Answer::json(200, &json!({"ok": true, "turns": turns}))
                    }
                    Err(e) => Answer::json(400, &json!({"error": format!("{e:#}")})),
                }
            }
            Some(Route::Canary) => {
                let marker = crate::canary::marker(request.url.path()).unwrap_or_default();
                let mut r = record(
                    None,
                    None,
                    request,
                    &json!({"accepted": true, "status": 200}),
                );
                r["canary"] = json!(marker);
                self.capture.record(r);
                Answer::raw(200, crate::canary::png(marker), "image/png")
            }
            // Unknown routes are captured too: 404 with a JSON reason.
            None => {
                let body = json!({"error": format!("mock-providers: no route for {} {}", request.method, request.url.path())});
                self.capture.record(record(
                    None,
                    None,
                    request,
                    &json!({"accepted": false, "status": 404, "body": body}),
                ));
                Answer::json(404, &body)
            }
        }
    }

    fn answer_api(&self, provider: Provider, request: &Request) -> Answer {
        let model = model_of(provider, request);
        let verdict = validate(provider, &request.body);
        let Verdict::Rejected {
            status,
            body,
            headers,
        } = verdict
        else {
            let served = self
                .script
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .next(provider, model.as_deref());
            let turn = match &served.step {
                Step::Answer(turn) => turn.clone(),
                Step::Fail(failure) => {
                    return self.fail(provider, request, &served, failure, model.as_deref(), None);
                }
                Step::MidStream { turn, failure } => {
                    let cut = mid_stream(provider, turn, failure, request, model.as_deref());
                    return self.fail(provider, request, &served, failure, model.as_deref(), cut);
                }
            };
            let kind = match turn {
                Turn::Text { .. } => "text",
                Turn::ToolCall { .. } => "tool_call",
            };
            let mut verdict = json!({"accepted": true, "answer": kind});
            if let Some(queue) = &served.queue {
                verdict["script"] = json!(queue);
            }
            self.capture
                .record(record(Some(provider), model.as_deref(), request, &verdict));
            let reply = reply(provider, &turn, request);
            return with_request_id(provider, Answer::raw(200, reply.body, reply.content_type));
        };
        self.capture.record(record(
            Some(provider),
            model.as_deref(),
            request,
            &json!({"accepted": false, "status": status, "body": body}),
        ));
        self.rejection(Some(provider), request, status, body, headers)
    }

    /// A scripted failure: the request was valid (`accepted`, so no judge takes the 4xx for the
    /// runtime's fault), answered with the API's own error, or with `cut`, a 200 stream the error
    /// ends after its deltas (`midStream` in the capture); each attempt is one capture record.
    fn fail(
        &self,
        provider: Provider,
        request: &Request,
        served: &Served,
        failure: &Failure,
        model: Option<&str>,
        cut: Option<Reply>,
    ) -> Answer {
        let Rejection {
            status,
            body,
            headers,
        } = providers::failure(provider, failure, model.unwrap_or_default());
        let mut verdict = json!({
            "accepted": true,
            "answer": "error",
            "error": failure.kind.name(),
            "status": if cut.is_some() { 200 } else { status },
            "attempt": served.attempt,
            "times": failure.times,
            "body": body,
        });
        if cut.is_some() {
            verdict["midStream"] = json!(true);
        }
        if let Some(queue) = &served.queue {
            verdict["script"] = json!(queue);
        }
        self.capture
            .record(record(Some(provider), model, request, &verdict));
        match cut {
            Some(reply) => {
                with_request_id(provider, Answer::raw(200, reply.body, reply.content_type))
            }
            None => self.rejection(Some(provider), request, status, body, headers),
        }
    }

    /// A refusal as sent: the API's framing of `body`, with its headers.
    fn rejection(
        &self,
        provider: Option<Provider>,
        request: &Request,
        status: u16,
        body: Value,
        headers: Vec<(String, String)>,
    ) -> Answer {
        // `streamGenerateContent` without `alt=sse` wraps errors in a one-element array (docs/research/providers.md §4.5).
        let body = match provider.and_then(|p| gemini_framing(p, request)) {
            Some(gemini::Framing::Array) => json!([body]),
            _ => body,
        };
        headers
            .into_iter()
            .fold(Answer::json(status, &body), |t, (name, value)| {
                t.header(&name, value)
            })
    }
}

fn gemini_framing(provider: Provider, request: &Request) -> Option<gemini::Framing> {
    if provider != Provider::Gemini {
        return None;
    }
    let (_, streamed) = gemini_model(request.url.path())?;
    let sse = request
        .url
        .query_pairs()
        .any(|(k, v)| k == "alt" && v == "sse");
    Some(match (streamed, sse) {
        (false, _) => gemini::Framing::Json,
        (true, true) => gemini::Framing::Sse,
        (true, false) => gemini::Framing::Array,
    })
}

/// A 200 answer with the API's request-id header, as its successful answers carry.
fn with_request_id(provider: Provider, answer: Answer) -> Answer {
    match request_id_header(provider) {
        Some((name, value)) => answer.header(name, value),
        None => answer,
    }
}

/// An accepted request's JSON body (Ollama's may carry trailing bytes after the first value).
fn body_of(request: &Request) -> Value {
    serde_json::Deserializer::from_slice(&request.body)
        .into_iter::<Value>()
        .next()
        .and_then(Result::ok)
        .unwrap_or(Value::Null)
}

/// `turn` streamed, then cut by `failure` in `provider`'s own framing, for a request that
/// streams to an API framed here; `None` otherwise (the failure is then a plain error answer).
fn mid_stream(
    provider: Provider,
    turn: &Turn,
    failure: &Failure,
    request: &Request,
    model: Option<&str>,
) -> Option<Reply> {
    let body = body_of(request);
    if body.get("stream") != Some(&Value::Bool(true)) {
        return None;
    }
    let error = providers::failure(provider, failure, model.unwrap_or_default()).body;
    let cut = Some(&error);
    match provider {
        Provider::Anthropic => Some(anthropic::reply(turn, &body, true, cut)),
        Provider::OpenAiChat => Some(openai_chat::reply(turn, &body, true, cut)),
        Provider::OpenAiResponses => Some(openai_responses::reply(turn, &body, true, cut)),
        Provider::Gemini | Provider::Bedrock | Provider::Ollama => None,
    }
}

fn reply(provider: Provider, turn: &Turn, request: &Request) -> Reply {
    let body = body_of(request);
    let stream = body.get("stream") == Some(&Value::Bool(true));
    let path = request.url.path();
    match provider {
        Provider::Anthropic => anthropic::reply(turn, &body, stream, None),
        Provider::OpenAiChat => openai_chat::reply(turn, &body, stream, None),
        Provider::OpenAiResponses => openai_responses::reply(turn, &body, stream, None),
        Provider::Gemini => {
            let model = gemini_model(path).map_or("", |(m, _)| m);
            gemini::reply(
                turn,
                model,
                gemini_framing(provider, request).unwrap_or(gemini::Framing::Json),
            )
        }
        Provider::Bedrock => bedrock::reply(turn, bedrock_stream(path).unwrap_or(false)),
        Provider::Ollama => ollama::reply(turn, &body),
    }
}

impl MockProviders {
    pub async fn start(config: Config) -> anyhow::Result<MockProviders> {
        let listener = TcpListener::bind(config.addr)?;
        let telegram = config
            .telegram
            .map(|setup| telegram::Channel::new(setup, config.capture.as_deref()));
        let state = Arc::new(State {
            script: Mutex::new(config.script),
            capture: Capture::new(config.capture.as_deref())?,
            telegram,
        });
        let transport = Transport::start(listener, state.clone()).await?;
        Ok(MockProviders { transport, state })
    }

    pub fn address(&self) -> SocketAddr {
        self.transport.address()
    }

    /// `http://host:port`.
    pub fn uri(&self) -> String {
        format!("http://{}", self.address())
    }

    /// The base URL a client of `provider` is configured with (the SDKs' `base_url` convention).
    pub fn base_url(&self, provider: Provider) -> String {
        let uri = self.uri();
        match provider {
            Provider::Anthropic | Provider::Gemini | Provider::Bedrock | Provider::Ollama => uri,
            Provider::OpenAiChat | Provider::OpenAiResponses => format!("{uri}/v1"),
        }
    }

    /// The one-line JSON announcement `serve` prints: address and per-provider base URLs and endpoints.
    pub fn banner(&self) -> Value {
        let base = self.uri();
        let endpoints = json!({
            "anthropic": format!("{base}/v1/messages"),
            "openai-chat": format!("{base}/v1/chat/completions"),
            "openai-responses": format!("{base}/v1/responses"),
            "gemini": format!("{base}/v1beta/models/{{model}}:generateContent"),
            "bedrock": format!("{base}/model/{{modelId}}/converse"),
            "ollama": format!("{base}/api/chat"),
        });
        let bases: Map<String, Value> = Provider::ALL
            .iter()
            .map(|&p| (p.name().to_string(), json!(self.base_url(p))))
            .collect();
        json!({
            "address": self.address().to_string(),
            "base_urls": bases,
            "endpoints": endpoints,
            "admin": {"requests": format!("{base}/__mock/requests"), "script": format!("{base}/__mock/script")},
            "channels": {"telegram": self.telegram_api_root()},
        })
    }

    /// The Telegram API root (a client's `apiRoot`; methods are `{root}/bot{token}/{method}`),
    /// when the channel is set up.
    pub fn telegram_api_root(&self) -> Option<String> {
        self.state.telegram.as_ref().map(|_| self.uri())
    }

    /// Every request received so far with its verdict, in arrival order.
    pub fn requests(&self) -> Vec<Value> {
        self.state.capture.all()
    }

    /// Replaces the script (the queue restarts with its first turn).
    pub fn set_script(&self, script: Script) {
        *self.state.script.lock().unwrap_or_else(|p| p.into_inner()) = script;
    }

    /// Capture records that could not be written to the capture file.
    pub fn capture_write_errors(&self) -> u64 {
        self.state.capture.write_errors()
    }
}
