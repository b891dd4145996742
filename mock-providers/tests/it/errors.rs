//! Scripted failures over real HTTP: each API's own status, envelope and retry headers for every
//! failure kind, fail-N-then-answer counting in the capture, and queues per API and per model (a
//! primary failing while its fallback answers). The expected statuses and shapes are written here
//! from the providers' docs, not read back from the code under test.

use crate::common::*;
use mock_providers::Provider::{self, *};
use mock_providers::Script;
use mock_providers::server::MockProviders;
use serde_json::{Value, json};

async fn start(script: Value) -> MockProviders {
    start_with(Script::from_json(&script).unwrap()).await
}

const KINDS: [&str; 5] = [
    "rate_limit",
    "server_error",
    "overloaded",
    "image",
    "format",
];

/// The status each API answers to each kind (Anthropic's overload is 529; Ollama has no 429, its
/// full queue is a 503).
fn status(p: Provider, kind: &str) -> u16 {
    match (p, kind) {
        (Ollama, "rate_limit") => 503,
        (_, "rate_limit") => 429,
        (_, "server_error") => 500,
        (Anthropic, "overloaded") => 529,
        (_, "overloaded") => 503,
        _ => 400,
    }
}

/// The envelope's error type as each API names it.
fn error_type(p: Provider, kind: &str) -> &'static str {
    match (p, kind) {
        (Anthropic, "rate_limit") => "rate_limit_error",
        (Anthropic, "server_error") => "api_error",
        (Anthropic, "overloaded") => "overloaded_error",
        (Anthropic, _) => "invalid_request_error",
        (OpenAiChat | OpenAiResponses, "rate_limit") => "requests",
        (OpenAiChat | OpenAiResponses, "server_error") => "server_error",
        (OpenAiChat | OpenAiResponses, "overloaded") => "service_unavailable_error",
        (OpenAiChat | OpenAiResponses, _) => "invalid_request_error",
        (Gemini, "rate_limit") => "RESOURCE_EXHAUSTED",
        (Gemini, "server_error") => "INTERNAL",
        (Gemini, "overloaded") => "UNAVAILABLE",
        (Gemini, _) => "INVALID_ARGUMENT",
        (Bedrock, "rate_limit") => "ThrottlingException:",
        (Bedrock, "server_error") => "InternalServerException:",
        (Bedrock, "overloaded") => "ServiceUnavailableException:",
        (Bedrock, _) => "ValidationException:",
        (Ollama, _) => "",
    }
}

/// `2026-11-26T14:12:44Z`.
fn is_rfc3339_utc(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 20
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            10 => *c == b'T',
            13 | 16 => *c == b':',
            19 => *c == b'Z',
            _ => c.is_ascii_digit(),
        })
}

#[track_caller]
fn header<'a>(h: &'a reqwest::header::HeaderMap, name: &str) -> &'a str {
    h.get(name)
        .unwrap_or_else(|| panic!("no {name} header in {h:?}"))
        .to_str()
        .unwrap()
}

/// Checks one failed answer: status, envelope, request id and, on a 429, the retry headers.
async fn check_failure(p: Provider, kind: &str, response: reqwest::Response, model: &str) {
    assert_eq!(response.status(), status(p, kind), "{p:?} {kind}");
    assert_eq!(response.headers()["content-type"], "application/json");
    let h = response.headers().clone();
    let body: Value = response.json().await.unwrap();
    let what = format!("{p:?} {kind}: {body} {h:?}");
    match p {
        Anthropic => {
            assert_eq!(body["type"], "error", "{what}");
            assert_eq!(body["error"]["type"], error_type(p, kind), "{what}");
            assert!(body["error"]["message"].is_string(), "{what}");
            assert_eq!(header(&h, "request-id"), body["request_id"], "{what}");
            if kind == "rate_limit" {
                assert_eq!(header(&h, "retry-after"), "3", "{what}");
                assert_eq!(header(&h, "anthropic-ratelimit-requests-remaining"), "0");
                let reset = header(&h, "anthropic-ratelimit-requests-reset");
                assert!(is_rfc3339_utc(reset), "{reset}");
            }
        }
        OpenAiChat | OpenAiResponses => {
            let e = &body["error"];
            assert_eq!(e["type"], error_type(p, kind), "{what}");
            assert!(
                e["message"].is_string() && e.get("param").is_some(),
                "{what}"
            );
            assert!(header(&h, "x-request-id").starts_with("req_"), "{what}");
            let code = match kind {
                "rate_limit" => json!("rate_limit_exceeded"),
                "server_error" => Value::Null,
                "overloaded" => json!("server_is_overloaded"),
                "image" if p == OpenAiResponses => json!("invalid_value"),
                _ => json!("invalid_image_format"),
            };
            assert_eq!(e["code"], code, "{what}");
            if kind == "rate_limit" {
                assert_eq!(header(&h, "retry-after"), "3", "{what}");
                assert_eq!(header(&h, "x-ratelimit-remaining-requests"), "0");
                assert_eq!(header(&h, "x-ratelimit-reset-requests"), "3s");
                assert!(e["message"].as_str().unwrap().contains(model), "{what}");
            }
        }
        Gemini => {
            let e = &body["error"];
            assert_eq!(e["code"], status(p, kind), "{what}");
            assert_eq!(e["status"], error_type(p, kind), "{what}");
            assert!(e["message"].is_string(), "{what}");
            if kind == "rate_limit" {
                assert_eq!(
                    e["details"][0],
                    json!({"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "3s"}),
                    "{what}"
                );
            }
        }
        Bedrock => {
            assert!(
                header(&h, "x-amzn-errortype").starts_with(error_type(p, kind)),
                "{what}"
            );
            assert!(!header(&h, "x-amzn-requestid").is_empty());
            assert!(body["message"].is_string(), "{what}");
            assert_eq!(body.as_object().unwrap().len(), 1, "{what}");
        }
        Ollama => {
            assert!(body["error"].is_string(), "{what}");
            assert_eq!(body.as_object().unwrap().len(), 1, "{what}");
        }
    }
}

#[tokio::test]
async fn every_api_fails_with_its_own_envelope_n_times_then_answers() {
    for kind in KINDS {
        // One queue per API: each API's counter runs on its own.
        let queues: serde_json::Map<String, Value> = Provider::ALL
            .iter()
            .map(|p| {
                let steps =
                    json!([{"error": kind, "times": 2, "retry_after": 3}, {"text": "recovered"}]);
                (p.name().to_string(), steps)
            })
            .collect();
        let server = start(json!({"providers": queues})).await;
        for p in Provider::ALL {
            let body = request(p, json!([png_block()]));
            let model = match p {
                Gemini => "gemini-2.5-flash",
                Bedrock => "anthropic.claude-sonnet-4:0",
                _ => body["model"].as_str().unwrap(),
            };
            for _ in 0..2 {
                check_failure(p, kind, post(&server, path(p, false), &body).await, model).await;
            }
            let ok = post(&server, path(p, false), &body).await;
            assert_eq!(ok.status(), 200, "{p:?} {kind} after two failures");
        }
        let records = server.requests();
        assert_eq!(records.len(), 18, "{kind}");
        for (i, r) in records.iter().enumerate() {
            let p = Provider::ALL[i / 3];
            let v = &r["verdict"];
            assert_eq!(r["provider"], p.name());
            // Scripted failures are valid requests: no judge may count them as the runtime's 4xx.
            assert_eq!(v["accepted"], true, "{r}");
            assert_eq!(v["script"], p.name(), "{r}");
            if i % 3 < 2 {
                assert_eq!(v["answer"], "error", "{r}");
                assert_eq!(v["error"], kind);
                assert_eq!(v["status"], status(p, kind));
                assert_eq!(v["attempt"], i % 3 + 1);
                assert_eq!(v["times"], 2);
                assert!(v["body"].is_object(), "{r}");
            } else {
                assert_eq!(v["answer"], "text", "{r}");
            }
        }
    }
}

#[tokio::test]
async fn a_primary_fails_while_its_fallback_on_another_api_answers() {
    let server = start(json!({
        "providers": {
            "anthropic": {"after": {"error": "overloaded"}},
            "openai-chat": [{"tool_call": {"name": "get_attachment", "arguments": {"name": "r"}}}],
        },
        "after": {"text": "shared"}
    }))
    .await;
    let anthropic = request(Anthropic, json!([png_block()]));
    let openai = request(OpenAiChat, json!([png_block()]));
    for _ in 0..3 {
        assert_eq!(
            post(&server, path(Anthropic, false), &anthropic)
                .await
                .status(),
            529
        );
    }
    let fallback: Value = post(&server, path(OpenAiChat, false), &openai)
        .await
        .json()
        .await
        .unwrap();
    let call = &fallback["choices"][0]["message"]["tool_calls"][0]["function"];
    assert_eq!(call["name"], "get_attachment", "{fallback}");
    // An API without a queue of its own takes the shared one.
    let gemini = post(&server, path(Gemini, false), &request(Gemini, json!([]))).await;
    assert_eq!(gemini.status(), 200);
    let attempts: Vec<Value> = server
        .requests()
        .iter()
        .map(|r| r["verdict"]["attempt"].clone())
        .collect();
    // `after` repeats a one-time failure: each request is attempt 1 of it.
    assert_eq!(attempts[..3], [json!(1), json!(1), json!(1)]);
    assert!(server.requests()[4]["verdict"].get("script").is_none());
}

#[tokio::test]
async fn two_models_behind_one_api_get_their_own_queues() {
    let server = start(json!({"providers": {
        "bedrock/anthropic.claude-sonnet-4:0": {"after": {"error": "rate_limit"}},
        "bedrock/amazon.nova-pro-v1:0": [{"text": "fallback"}],
    }}))
    .await;
    let body = request(Bedrock, json!([png_block()]));
    let primary = post(&server, path(Bedrock, false), &body).await;
    assert_eq!(primary.status(), 429);
    let fallback = post(&server, "/model/amazon.nova-pro-v1%3A0/converse", &body).await;
    assert_eq!(fallback.status(), 200);
    let text: Value = fallback.json().await.unwrap();
    assert_eq!(text["output"]["message"]["content"][0]["text"], "fallback");
    let records = server.requests();
    assert_eq!(
        records[0]["verdict"]["script"],
        "bedrock/anthropic.claude-sonnet-4:0"
    );
    assert_eq!(
        records[1]["verdict"]["script"],
        "bedrock/amazon.nova-pro-v1:0"
    );
}

#[tokio::test]
async fn a_refused_request_does_not_use_up_a_scripted_failure() {
    let server = start(json!([{"error": "server_error", "times": 1}, {"text": "ok"}])).await;
    let bad = request(Anthropic, json!([image("", "image/png")]));
    assert_eq!(
        post(&server, path(Anthropic, false), &bad).await.status(),
        400
    );
    let good = request(Anthropic, json!([png_block()]));
    assert_eq!(
        post(&server, path(Anthropic, false), &good).await.status(),
        500
    );
    assert_eq!(
        post(&server, path(Anthropic, false), &good).await.status(),
        200
    );
    let records = server.requests();
    assert_eq!(records[0]["verdict"]["accepted"], false);
    assert_eq!(records[1]["verdict"]["answer"], "error");
    assert_eq!(records[1]["verdict"]["attempt"], 1);
}

#[tokio::test]
async fn streamed_requests_fail_before_the_stream_in_each_framing() {
    let server = start(json!({"after": {"error": "rate_limit"}})).await;
    let mut anthropic = request(Anthropic, json!([png_block()]));
    anthropic["stream"] = json!(true);
    let r = post(&server, path(Anthropic, false), &anthropic).await;
    assert_eq!(r.status(), 429);
    assert_eq!(r.headers()["content-type"], "application/json");
    // `streamGenerateContent` without `alt=sse` wraps errors in a one-element array.
    let gemini = request(Gemini, json!([png_block()]));
    let r = post(
        &server,
        "/v1beta/models/gemini-2.5-flash:streamGenerateContent",
        &gemini,
    )
    .await;
    assert_eq!(r.status(), 429);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body[0]["error"]["status"], "RESOURCE_EXHAUSTED", "{body}");
}

#[tokio::test]
async fn the_admin_endpoint_takes_keyed_scripts_and_explains_refusals() {
    let server = start(json!([])).await;
    let client = reqwest::Client::new();
    let set = |script: Value| {
        client
            .post(format!("{}/__mock/script", server.uri()))
            .body(script.to_string())
            .send()
    };
    let ok = set(json!({"providers": {"gemini": [{"error": "image", "times": 2}]}}))
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    assert_eq!(ok.json::<Value>().await.unwrap()["turns"], 1);
    let r = post(&server, path(Gemini, false), &request(Gemini, json!([]))).await;
    assert_eq!(r.status(), 400);
    let bad = set(json!({"providers": {"claude": []}})).await.unwrap();
    assert_eq!(bad.status(), 400);
    let reason = bad.json::<Value>().await.unwrap()["error"].to_string();
    assert!(reason.contains("unknown API \\\"claude\\\""), "{reason}");
}

/// The `data:` payloads of an SSE body, each with its `event:` name (if any).
fn sse_events(body: &str) -> Vec<(Option<String>, String)> {
    body.split("\n\n")
        .filter(|e| !e.trim().is_empty())
        .map(|e| {
            let field = |name: &str| {
                e.lines()
                    .find_map(|l| l.strip_prefix(name))
                    .map(|v| v.trim_start().to_string())
            };
            (field("event:"), field("data:").unwrap_or_default())
        })
        .collect()
}

#[tokio::test]
async fn a_mid_stream_failure_ends_each_framed_stream_after_its_deltas() {
    let server = start(
        json!({"after": {"chunks": ["Partial ", "answer"], "error_mid_stream": "overloaded"}}),
    )
    .await;
    for p in [Anthropic, OpenAiChat, OpenAiResponses] {
        let mut body = request(p, json!([png_block()]));
        body["stream"] = json!(true);
        let r = post(&server, path(p, true), &body).await;
        assert_eq!(r.status(), 200, "{p:?}: the stream had begun");
        assert_eq!(r.headers()["content-type"], "text/event-stream");
        let text = r.text().await.unwrap();
        let events = sse_events(&text);
        let delta_at = |piece: &str| events.iter().position(|(_, d)| d.contains(piece));
        let (first, second) = (delta_at("Partial ").unwrap(), delta_at("answer").unwrap());
        let (name, data) = events.last().unwrap();
        assert!(first < second && second < events.len() - 1, "{p:?}: {text}");
        let data: Value = serde_json::from_str(data).unwrap();
        // Each API's own framing, as its docs and SDKs read it.
        match p {
            Anthropic => {
                assert_eq!(name.as_deref(), Some("error"));
                assert_eq!(data["type"], "error");
                assert_eq!(data["error"]["type"], "overloaded_error");
                assert!(!text.contains("message_stop"), "{text}");
            }
            OpenAiChat => {
                assert_eq!(*name, None);
                assert_eq!(data["error"]["code"], "server_is_overloaded");
                assert!(!text.contains("[DONE]"), "{text}");
            }
            _ => {
                assert_eq!(name.as_deref(), Some("error"));
                assert_eq!(data["type"], "error");
                assert_eq!(data["code"], "server_is_overloaded");
                assert!(data["sequence_number"].is_u64(), "{data}");
                assert!(!text.contains("response.completed"), "{text}");
            }
        }
    }
    // Not streamed, or an API without a mid-stream framing here: the plain error answer.
    let r = post(
        &server,
        path(Anthropic, false),
        &request(Anthropic, json!([])),
    )
    .await;
    assert_eq!(r.status(), 529);
    let r = post(&server, path(Gemini, true), &request(Gemini, json!([]))).await;
    assert_eq!(r.status(), 503);
    let records = server.requests();
    let verdicts: Vec<(&Value, &Value, Option<&Value>)> = records
        .iter()
        .map(|r| {
            let v = &r["verdict"];
            (&v["answer"], &v["status"], v.get("midStream"))
        })
        .collect();
    let cut = (&json!("error"), &json!(200), Some(&json!(true)));
    assert_eq!(verdicts[..3], [cut, cut, cut]);
    assert_eq!(verdicts[3], (&json!("error"), &json!(529), None));
    assert_eq!(verdicts[4], (&json!("error"), &json!(503), None));
}

#[test]
fn a_mid_stream_failure_cuts_only_a_text_answer() {
    let err = Script::from_json(&json!([
        {"tool_call": {"name": "t"}, "error_mid_stream": "overloaded"}
    ]))
    .unwrap_err();
    assert!(format!("{err:#}").contains("cuts a text answer"), "{err:#}");
    let err =
        Script::from_json(&json!([{"chunks": ["a"], "error_mid_stream": "teapot"}])).unwrap_err();
    assert!(format!("{err:#}").contains("unknown error"), "{err:#}");
}
