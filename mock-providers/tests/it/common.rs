//! Shared test helpers: hand-made image headers, request builders and verdict assertions.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use mock_providers::Provider::*;
use mock_providers::Script;
use mock_providers::server::{Config, MockProviders};
use mock_providers::{Provider, Verdict, tool_result_request, validate};
use serde_json::{Value, json};

pub fn b64(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

pub fn png(w: u32, h: u32) -> Vec<u8> {
    let mut v = b"\x89PNG\r\n\x1a\n".to_vec();
    v.extend(13u32.to_be_bytes());
    v.extend(b"IHDR");
    v.extend(w.to_be_bytes());
    v.extend(h.to_be_bytes());
    v.extend([8, 6, 0, 0, 0, 0, 0, 0, 0]);
    v.extend(b"\0\0\0\0IEND\xaeB`\x82");
    v
}

pub fn jpeg(w: u16, h: u16) -> Vec<u8> {
    let mut v = vec![0xFF, 0xD8];
    // APP0 (JFIF), then fill bytes before a progressive SOF2.
    v.extend([0xFF, 0xE0, 0x00, 0x10]);
    v.extend(b"JFIF\0\x01\x01\0\0\x01\0\x01\0\0");
    v.extend([0xFF, 0xFF, 0xC2, 0x00, 0x11, 0x08]);
    v.extend(h.to_be_bytes());
    v.extend(w.to_be_bytes());
    v.extend([3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1]);
    v.extend([0xFF, 0xD9]);
    v
}

pub fn gif(w: u16, h: u16) -> Vec<u8> {
    let mut v = b"GIF89a".to_vec();
    v.extend(w.to_le_bytes());
    v.extend(h.to_le_bytes());
    v.extend([0, 0, 0, b';']);
    v
}

fn riff(chunk: &[u8; 4], payload: &[u8]) -> Vec<u8> {
    let mut v = b"RIFF".to_vec();
    v.extend(((payload.len() + 12) as u32).to_le_bytes());
    v.extend(b"WEBP");
    v.extend(chunk);
    v.extend((payload.len() as u32).to_le_bytes());
    v.extend(payload);
    v
}

pub fn webp_vp8(w: u16, h: u16) -> Vec<u8> {
    let mut p = vec![0x30, 0x01, 0x00, 0x9D, 0x01, 0x2A];
    p.extend(w.to_le_bytes());
    p.extend(h.to_le_bytes());
    riff(b"VP8 ", &p)
}

pub fn webp_vp8l(w: u32, h: u32) -> Vec<u8> {
    let bits = (w - 1) | ((h - 1) << 14);
    let mut p = vec![0x2F];
    p.extend(bits.to_le_bytes());
    riff(b"VP8L", &p)
}

pub fn webp_vp8x(w: u32, h: u32) -> Vec<u8> {
    let mut p = vec![0, 0, 0, 0];
    p.extend(&(w - 1).to_le_bytes()[..3]);
    p.extend(&(h - 1).to_le_bytes()[..3]);
    riff(b"VP8X", &p)
}

/// An agent image block.
pub fn image(data: &str, mime: &str) -> Value {
    json!({"type": "image", "data": data, "mimeType": mime})
}

pub fn text(s: &str) -> Value {
    json!({"type": "text", "text": s})
}

pub fn png_block() -> Value {
    image(&b64(&png(16, 16)), "image/png")
}

/// The provider's minimal request with `blocks` in its tool result, as JSON.
pub fn request(p: Provider, blocks: Value) -> Value {
    serde_json::from_slice(&tool_result_request(p, &blocks)).unwrap()
}

pub fn judge(p: Provider, body: &Value) -> Verdict {
    validate(p, &serde_json::to_vec(body).unwrap())
}

/// Asserts a refusal with `status` and exactly `message`; returns the body for envelope checks.
#[track_caller]
pub fn rejected(v: &Verdict, status: u16, message: &str) -> Value {
    match v {
        Verdict::Rejected {
            status: s, body, ..
        } => {
            assert_eq!(*s, status, "status of {body}");
            assert_eq!(v.message(), Some(message), "message of {body}");
            body.clone()
        }
        Verdict::Accepted => panic!("accepted; expected {status} {message:?}"),
    }
}

#[track_caller]
pub fn accepted(v: &Verdict) {
    assert!(v.is_accepted(), "rejected: {v:?}");
}

pub fn header<'a>(v: &'a Verdict, name: &str) -> Option<&'a str> {
    match v {
        Verdict::Rejected { headers, .. } => headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str()),
        Verdict::Accepted => None,
    }
}

/// Appends one more exchange (assistant text, then a user text) in the provider's shape.
pub fn next_turn(p: Provider, request: &mut Value) {
    let (key, turns) = match p {
        Provider::Anthropic | Provider::OpenAiChat | Provider::Ollama => (
            "messages",
            json!([{"role": "assistant", "content": "ok"}, {"role": "user", "content": "next"}]),
        ),
        Provider::OpenAiResponses => (
            "input",
            json!([{"role": "assistant", "content": "ok"}, {"role": "user", "content": "next"}]),
        ),
        Provider::Gemini => (
            "contents",
            json!([{"role": "model", "parts": [{"text": "ok"}]}, {"role": "user", "parts": [{"text": "next"}]}]),
        ),
        Provider::Bedrock => (
            "messages",
            json!([{"role": "assistant", "content": [{"text": "ok"}]}, {"role": "user", "content": [{"text": "next"}]}]),
        ),
    };
    let list = request[key].as_array_mut().unwrap();
    list.extend(turns.as_array().unwrap().iter().cloned());
}

/// POSTs `body` as JSON to the server's `path`.
pub async fn post(server: &MockProviders, path: &str, body: &Value) -> reqwest::Response {
    reqwest::Client::new()
        .post(format!("{}{path}", server.uri()))
        .header("content-type", "application/json")
        .body(serde_json::to_vec(body).unwrap())
        .send()
        .await
        .unwrap()
}

/// A mock server on loopback answering with `script`.
pub async fn start_with(script: Script) -> MockProviders {
    MockProviders::start(Config {
        script,
        ..Config::default()
    })
    .await
    .unwrap()
}

/// Each API's request path (a default model where the path names one).
pub fn path(p: Provider, stream: bool) -> &'static str {
    match (p, stream) {
        (Anthropic, _) => "/v1/messages",
        (OpenAiChat, _) => "/v1/chat/completions",
        (OpenAiResponses, _) => "/v1/responses",
        (Gemini, false) => "/v1beta/models/gemini-2.5-flash:generateContent",
        (Gemini, true) => "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
        (Bedrock, false) => "/model/anthropic.claude-sonnet-4%3A0/converse",
        (Bedrock, true) => "/model/anthropic.claude-sonnet-4%3A0/converse-stream",
        (Ollama, _) => "/api/chat",
    }
}
