//! Arbitrary bodies and arbitrary image blocks: never a panic, never a 5xx, never a hang.

use crate::common::*;
use mock_providers::{Provider, Verdict, tool_result_request, validate, validate_tool_result};
use proptest::prelude::*;
use serde_json::{Value, json};

fn provider() -> impl Strategy<Value = Provider> {
    prop::sample::select(Provider::ALL.to_vec())
}

fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        ".{0,12}".prop_map(Value::String),
        prop::sample::select(vec![
            "user",
            "assistant",
            "model",
            "tool",
            "text",
            "image",
            "image_url",
            "tool_result",
            "tool_use",
            "base64",
            "image/png",
            "data:image/png;base64,",
            "function_call_output",
            "input_image"
        ])
        .prop_map(|s| json!(s)),
    ];
    leaf.prop_recursive(5, 64, 6, |inner| {
        let keys = prop::sample::select(vec![
            "type",
            "role",
            "content",
            "messages",
            "contents",
            "parts",
            "source",
            "data",
            "media_type",
            "mimeType",
            "inlineData",
            "image_url",
            "url",
            "model",
            "max_tokens",
            "input",
            "output",
            "images",
            "image",
            "format",
            "bytes",
            "toolResult",
            "toolUse",
            "tool_calls",
            "text",
        ]);
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((keys, inner), 0..6).prop_map(|kv| Value::Object(
                kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
            )),
        ]
    })
}

/// Image payloads: real headers of random size, arbitrary bytes, or arbitrary strings.
fn image_data() -> impl Strategy<Value = String> {
    prop_oneof![
        (1u32..9000, 1u32..9000).prop_map(|(w, h)| b64(&png(w, h))),
        (1u16..9000, 1u16..9000).prop_map(|(w, h)| b64(&jpeg(w, h))),
        (1u16..u16::MAX, 1u16..u16::MAX).prop_map(|(w, h)| b64(&gif(w, h))),
        (1u32..16384, 1u32..16384).prop_map(|(w, h)| b64(&webp_vp8l(w, h))),
        prop::collection::vec(any::<u8>(), 0..64).prop_map(|b| b64(&b)),
        ".{0,40}",
    ]
}

fn mime() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "image/png",
            "image/jpeg",
            "image/gif",
            "image/webp",
            "image/jpg",
            "IMAGE/PNG",
            "",
            "text/plain"
        ])
        .prop_map(str::to_string),
        ".{0,16}",
    ]
}

fn block() -> impl Strategy<Value = Value> {
    prop_oneof![
        (image_data(), mime()).prop_map(|(d, m)| image(&d, &m)),
        ".{0,20}".prop_map(|t| text(&t)),
        any_json(),
    ]
}

/// A refusal is a 4xx with a JSON object body; an acceptance is fine too.
fn well_formed(v: &Verdict) -> bool {
    match v {
        Verdict::Accepted => true,
        Verdict::Rejected { status, body, .. } => {
            (400..500).contains(status) && body.is_object() && v.message().is_some()
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic_or_5xx(p in provider(), body in prop::collection::vec(any::<u8>(), 0..512)) {
        prop_assert!(well_formed(&validate(p, &body)));
    }

    #[test]
    fn arbitrary_json_never_panics_or_5xx(p in provider(), body in any_json()) {
        prop_assert!(well_formed(&validate(p, &serde_json::to_vec(&body).unwrap())));
    }

    #[test]
    fn arbitrary_image_blocks_never_panic_or_5xx(p in provider(), blocks in prop::collection::vec(block(), 0..5)) {
        let body = tool_result_request(p, &Value::Array(blocks));
        prop_assert!(well_formed(&validate(p, &body)));
    }

    #[test]
    fn judging_the_built_request_equals_judging_its_bytes(p in provider(), blocks in prop::collection::vec(prop_oneof![block(), any_json()], 0..5)) {
        // The oracle's shortcut (no serialize and re-parse) must answer what the server would.
        // Request ids are random (a header, and Anthropic's body): the rest must match.
        let blocks = Value::Array(blocks);
        let answer = |v: Verdict| match v {
            Verdict::Accepted => None,
            Verdict::Rejected { status, mut body, .. } => {
                if let Some(body) = body.as_object_mut() {
                    body.remove("request_id");
                }
                Some((status, body))
            }
        };
        prop_assert_eq!(
            answer(validate_tool_result(p, &blocks)),
            answer(validate(p, &tool_result_request(p, &blocks)))
        );
    }

    #[test]
    fn arbitrary_blocks_in_any_json_position(p in provider(), blocks in prop::collection::vec(block(), 1..4), seed in any_json()) {
        // The tool-result request with one message replaced by arbitrary JSON.
        let mut r = request(p, Value::Array(blocks));
        let key = ["messages", "input", "contents"].into_iter().find(|k| r.get(*k).is_some()).unwrap();
        r[key][0] = seed;
        prop_assert!(well_formed(&validate(p, &serde_json::to_vec(&r).unwrap())));
    }
}

#[test]
fn arbitrary_bodies_over_http_never_get_a_5xx() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = runtime
        .block_on(mock_providers::server::MockProviders::start(
            Default::default(),
        ))
        .unwrap();
    let client = reqwest::Client::new();
    let paths = [
        "/v1/messages",
        "/v1/chat/completions",
        "/v1/responses",
        "/v1beta/models/m:generateContent",
        "/v1beta/models/m:streamGenerateContent",
        "/model/x/converse-stream",
        "/api/chat",
        "/__mock/script",
    ];
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 128,
        ..ProptestConfig::default()
    });
    let strategy = (
        prop::sample::select(paths.to_vec()),
        prop_oneof![
            prop::collection::vec(any::<u8>(), 0..256),
            any_json().prop_map(|v| serde_json::to_vec(&v).unwrap()),
            (provider(), prop::collection::vec(block(), 0..4))
                .prop_map(|(p, b)| tool_result_request(p, &Value::Array(b))),
        ],
    );
    runner
        .run(&strategy, |(path, body)| {
            let status = runtime.block_on(async {
                client
                    .post(format!("{}{path}", server.uri()))
                    .body(body)
                    .send()
                    .await
                    .unwrap()
                    .status()
            });
            prop_assert!(status.as_u16() < 500, "{path}: {status}");
            Ok(())
        })
        .unwrap();
}
