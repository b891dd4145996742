//! Mock LLM provider APIs that validate requests like the real ones (normfuzz's second oracle).
//!
//! [`validate`] judges a request body as the provider's real API would: it answers the real status,
//! error envelope, message text (with the real field path) and request-id header, or accepts. The HTTP
//! server ([`server`]) calls the very same function, then answers accepted requests from a script of
//! turns in the provider's JSON or streaming format. Evidence for every rule is in
//! `docs/research/providers.md`; wording marked `[INF]` next to the code is inferred, not observed.
//!
//! The validation code is independent of the reference normalizer in `harness` (no shared image, base64
//! or URL code): two oracles, so that one bug cannot hide in both.

// The HTTP side sits behind the default `server` feature (tokio, wiremock, hyper): `validate` and
// `tool_result_request` work without it. The scripted-answer half of `providers`, `script` and
// `ids` (replies, request ids, stream framing) is only called by `server`, hence the allows.
pub mod b64;
pub mod canary;
#[cfg(feature = "server")]
pub mod capture;
#[cfg(feature = "server")]
pub mod channels;
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
mod verdict;

pub use providers::tool_result_request;
pub use script::{Chunk, Failure, FailureKind, Script, Served, Step, Turn};
pub use verdict::{Provider, Verdict};

/// Judges `body` as `provider`'s real API would. Never panics, whatever the bytes.
pub fn validate(provider: Provider, body: &[u8]) -> Verdict {
    verdict(match provider {
        Provider::Anthropic => providers::anthropic::validate(body),
        Provider::OpenAiChat => providers::openai_chat::validate(body),
        Provider::OpenAiResponses => providers::openai_responses::validate(body),
        Provider::Gemini => providers::gemini::validate(body),
        Provider::Bedrock => providers::bedrock::validate(body),
        Provider::Ollama => providers::ollama::validate(body),
    })
}

/// [`validate`] of the request [`tool_result_request`] builds, without its bytes: the in-process
/// oracle's path (see `providers::check_tool_result`).
pub fn validate_tool_result(provider: Provider, blocks: &serde_json::Value) -> Verdict {
    verdict(providers::check_tool_result(provider, blocks))
}

fn verdict(checked: verdict::Checked) -> Verdict {
    match checked {
        Ok(()) => Verdict::Accepted,
        Err(r) => Verdict::Rejected {
            status: r.status,
            body: r.body,
            headers: r.headers,
        },
    }
}
