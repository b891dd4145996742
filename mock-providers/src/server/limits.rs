//! How much of a request body the server reads, and what each API answers past that.
//!
//! A provider whose validator models a request size limit keeps it over HTTP, with the same
//! answer (Anthropic 32 MiB, 413 `request_too_large`; Gemini 100 MiB, its 400); every other
//! route reads at most [`MAX_BODY`] and answers 413 in the API's error envelope past it. The
//! body past the limit is never read (by its Content-Length, before a byte of it; chunked, as
//! soon as it passes the limit), so a 100 MB body costs at most the limit in memory.

use crate::{Provider, Verdict, ids};
use serde_json::json;

const MIB: usize = 1 << 20;
/// The body limit of every route without a provider limit of its own.
pub const MAX_BODY: usize = 64 * MIB;
/// `providers/anthropic`'s `MAX_REQUEST_BYTES` (docs/research/providers.md §1.4).
const ANTHROPIC_MAX: usize = 32 * MIB;
/// `providers/gemini`'s `MAX_REQUEST_BYTES` (docs/research/providers.md §4.2).
const GEMINI_MAX: usize = 100 * MIB;
/// `providers/bedrock`'s error type for a refused request.
const BEDROCK_VALIDATION: &str =
    "ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/";

/// The largest body read for a request to `provider`'s API (`None`: admin and unknown routes).
pub(super) fn body_limit(provider: Option<Provider>) -> usize {
    match provider {
        Some(Provider::Anthropic) => ANTHROPIC_MAX,
        Some(Provider::Gemini) => GEMINI_MAX,
        _ => MAX_BODY,
    }
}

/// The answer to a body over `body_limit(provider)`: for Anthropic and Gemini their validator's
/// own; for the others 413, the HTTP status for a body too large, in the API's envelope (the
/// messages are [INF]: not observed).
pub(super) fn too_large(provider: Option<Provider>) -> Verdict {
    let limit = body_limit(provider);
    let (status, body, headers) = match provider {
        Some(Provider::Anthropic) => {
            let id = ids::anthropic();
            (
                413,
                json!({"type": "error", "error": {"type": "request_too_large",
                    "message": "Request exceeds the maximum size"}, "request_id": id}),
                vec![("request-id".to_string(), id)],
            )
        }
        Some(Provider::Gemini) => (
            400,
            json!({"error": {"code": 400, "status": "INVALID_ARGUMENT",
                "message": format!("Request payload size exceeds the limit: {limit} bytes.")}}),
            Vec::new(),
        ),
        Some(Provider::OpenAiChat | Provider::OpenAiResponses) => (
            413,
            json!({"error": {"message": format!("Request too large: the body exceeds {limit} bytes."),
                "type": "invalid_request_error", "param": null, "code": null}}),
            vec![("x-request-id".to_string(), ids::openai())],
        ),
        Some(Provider::Bedrock) => (
            413,
            json!({"message": format!("Request body exceeds {limit} bytes.")}),
            vec![
                (
                    "x-amzn-ErrorType".to_string(),
                    BEDROCK_VALIDATION.to_string(),
                ),
                ("x-amzn-RequestId".to_string(), ids::aws()),
            ],
        ),
        // Go's net/http `MaxBytesReader` error.
        Some(Provider::Ollama) => (
            413,
            json!({"error": "http: request body too large"}),
            Vec::new(),
        ),
        None => (
            413,
            json!({"error": format!("mock-providers: the body exceeds {limit} bytes")}),
            Vec::new(),
        ),
    };
    Verdict::Rejected {
        status,
        body,
        headers,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The status, the body without its request id, the header names.
    fn shape(v: &Verdict) -> (u16, serde_json::Value, Vec<String>) {
        let Verdict::Rejected {
            status,
            body,
            headers,
        } = v
        else {
            panic!("accepted");
        };
        let mut body = body.clone();
        if let Some(o) = body.as_object_mut() {
            o.remove("request_id");
        }
        (
            *status,
            body,
            headers.iter().map(|(k, _)| k.clone()).collect(),
        )
    }

    #[test]
    fn a_provider_limit_is_answered_as_its_validator_answers_it() {
        for p in [Provider::Anthropic, Provider::Gemini] {
            let limit = body_limit(Some(p));
            assert_ne!(
                shape(&crate::validate(p, &vec![b' '; limit])),
                shape(&too_large(Some(p))),
                "{p:?}: a body at the limit is read and judged"
            );
            assert_eq!(
                shape(&crate::validate(p, &vec![b' '; limit + 1])),
                shape(&too_large(Some(p))),
                "{p:?}"
            );
        }
    }

    #[test]
    fn every_other_route_gets_413_past_the_common_limit() {
        for p in [
            Provider::OpenAiChat,
            Provider::OpenAiResponses,
            Provider::Bedrock,
            Provider::Ollama,
        ] {
            assert_eq!(body_limit(Some(p)), MAX_BODY);
            let v = too_large(Some(p));
            assert_eq!(shape(&v).0, 413, "{p:?}");
            assert!(v.message().is_some(), "{p:?}: a message in the envelope");
        }
        assert_eq!(shape(&too_large(None)).0, 413);
    }
}
