//! Mock LLM provider APIs that validate requests like the real ones (normfuzz's second oracle).
//!
//! [`validate`] judges a request body as the provider's real API would: it answers the real status,
//! error envelope, message text (with the real field path) and request-id header, or accepts. The HTTP
//! server ([`server`]) calls the very same function, then answers accepted requests from a script of
//! turns in the provider's JSON or streaming format. Evidence for every rule is in
//! `shared/spec/research/providers.md`; wording marked `[INF]` next to the code is inferred, not observed.
//!
//! The validation code is independent of the reference normalizer in `harness` (no shared image, base64
//! or URL code): two oracles, so that one bug cannot hide in both.

// The HTTP side sits behind the default `server` feature (tokio, wiremock, hyper): `validate` and
// `tool_result_request` work without it. The scripted-answer half of `providers`, `script` and
// `ids` (replies, request ids, stream framing) is only called by `server`, hence the allows.
pub mod b64;
#[cfg(feature = "server")]
pub mod capture;
#[cfg_attr(not(feature = "server"), allow(dead_code))]
mod ids;
pub mod image;
#[cfg(feature = "server")]
pub mod mcp_server;
#[cfg_attr(not(feature = "server"), allow(dead_code))]
mod providers;
#[cfg_attr(not(feature = "server"), allow(dead_code))]
pub mod script;
#[cfg(feature = "server")]
pub mod server;

use serde_json::Value;

pub use providers::tool_result_request;
pub use script::{Chunk, Script, Turn};

/// A provider API the mocks imitate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Provider {
    /// Anthropic Messages, `POST /v1/messages`.
    Anthropic,
    /// OpenAI Chat Completions, `POST /v1/chat/completions`.
    OpenAiChat,
    /// OpenAI Responses, `POST /v1/responses`.
    OpenAiResponses,
    /// Gemini, `POST /v1beta/models/{model}:generateContent` and `:streamGenerateContent`.
    Gemini,
    /// Bedrock Converse, `POST /model/{modelId}/converse` and `/converse-stream` (as a Claude model).
    Bedrock,
    /// Ollama, `POST /api/chat`.
    Ollama,
}

impl Provider {
    pub const ALL: [Provider; 6] = [
        Provider::Anthropic,
        Provider::OpenAiChat,
        Provider::OpenAiResponses,
        Provider::Gemini,
        Provider::Bedrock,
        Provider::Ollama,
    ];

    /// Stable lower-case name used in captures and the `serve` banner.
    pub fn name(self) -> &'static str {
        match self {
            Provider::Anthropic => "anthropic",
            Provider::OpenAiChat => "openai-chat",
            Provider::OpenAiResponses => "openai-responses",
            Provider::Gemini => "gemini",
            Provider::Bedrock => "bedrock",
            Provider::Ollama => "ollama",
        }
    }
}

/// What the provider answers to a request body.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Accepted,
    /// The real status, JSON error body and headers (request id, error type) of the refusal.
    Rejected {
        status: u16,
        body: Value,
        headers: Vec<(String, String)>,
    },
}

impl Verdict {
    pub fn is_accepted(&self) -> bool {
        matches!(self, Verdict::Accepted)
    }

    /// The human-readable error message wherever the provider's envelope keeps it.
    pub fn message(&self) -> Option<&str> {
        let Verdict::Rejected { body, .. } = self else {
            return None;
        };
        let m = match body {
            Value::Object(o) => match o.get("error") {
                Some(Value::String(s)) => return Some(s),
                Some(e) => e.get("message"),
                None => o.get("message"),
            },
            _ => None,
        };
        m.and_then(Value::as_str)
    }
}

/// Judges `body` as `provider`'s real API would. Never panics, whatever the bytes.
pub fn validate(provider: Provider, body: &[u8]) -> Verdict {
    let checked = match provider {
        Provider::Anthropic => providers::anthropic::validate(body),
        Provider::OpenAiChat => providers::openai::validate_chat(body),
        Provider::OpenAiResponses => providers::openai::validate_responses(body),
        Provider::Gemini => providers::gemini::validate(body),
        Provider::Bedrock => providers::bedrock::validate(body),
        Provider::Ollama => providers::ollama::validate(body),
    };
    match checked {
        Ok(()) => Verdict::Accepted,
        Err(r) => Verdict::Rejected {
            status: r.status,
            body: r.body,
            headers: r.headers,
        },
    }
}

/// A refusal under construction; the first one found is the answer.
#[derive(Debug)]
pub(crate) struct Rejection {
    pub status: u16,
    pub body: Value,
    pub headers: Vec<(String, String)>,
}

pub(crate) type Checked = Result<(), Rejection>;
