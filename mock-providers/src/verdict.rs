//! The provider APIs the mocks imitate and what they answer to a request: the public [`Provider`]
//! and [`Verdict`] (re-exported at the crate root) and the crate-internal `Rejection` the provider
//! modules build.

use serde_json::Value;

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

    /// The API of that [`Provider::name`].
    pub fn from_name(name: &str) -> Option<Provider> {
        Provider::ALL.into_iter().find(|p| p.name() == name)
    }

    /// Every name, comma-separated, for an error message.
    pub fn names() -> String {
        Provider::ALL.map(Provider::name).join(", ")
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

/// A refusal under construction; the first one found is the answer.
#[derive(Debug)]
pub(crate) struct Rejection {
    pub status: u16,
    pub body: Value,
    pub headers: Vec<(String, String)>,
}

pub(crate) type Checked = Result<(), Rejection>;
