//! Bounded loopback load: 2,000 requests, 32 in flight, against 127.0.0.1 only. No request and no
//! capture line may be lost, and every answer must be the in-process verdict.

use crate::common::*;
use mock_providers::Provider;
use mock_providers::server::{Config, MockProviders};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::sync::Arc;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

const REQUESTS: usize = 2000;
const IN_FLIGHT: usize = 32;

fn path(p: Provider) -> &'static str {
    match p {
        Provider::Anthropic => "/v1/messages",
        Provider::OpenAiChat => "/v1/chat/completions",
        Provider::OpenAiResponses => "/v1/responses",
        Provider::Gemini => "/v1beta/models/m:generateContent",
        Provider::Bedrock => "/model/m/converse",
        Provider::Ollama => "/api/chat",
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_thousand_requests_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("load.jsonl");
    let server = MockProviders::start(Config {
        capture: Some(file.clone()),
        ..Config::default()
    })
    .await
    .unwrap();
    let uri = server.uri();
    assert!(uri.starts_with("http://127.0.0.1:"));
    let client = reqwest::Client::new();
    let gate = Arc::new(Semaphore::new(IN_FLIGHT));
    let mut tasks = JoinSet::new();
    for n in 0..REQUESTS {
        let p = Provider::ALL[n % Provider::ALL.len()];
        // Every third request carries an image whose label lies about its bytes.
        let block = if n % 3 == 0 {
            image(&b64(&gif(3, 3)), "image/jpg")
        } else {
            png_block()
        };
        let body = tool_result_request_with_marker(p, block, n);
        let expected = mock_providers::validate(p, &body).is_accepted();
        let (client, gate, url) = (client.clone(), gate.clone(), format!("{uri}{}", path(p)));
        tasks.spawn(async move {
            let _permit = gate.acquire_owned().await.unwrap();
            let response = client.post(url).body(body).send().await.unwrap();
            let status = response.status().as_u16();
            response.bytes().await.unwrap();
            assert_eq!(status == 200, expected, "request {n}: {status}");
            assert!(status == 200 || status == 400, "request {n}: {status}");
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.unwrap();
    }
    assert_eq!(server.requests().len(), REQUESTS);
    let lines: Vec<Value> = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), REQUESTS);
    let seqs: BTreeSet<u64> = lines.iter().map(|l| l["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (0..REQUESTS as u64).collect());
    let markers: BTreeSet<u64> = lines.iter().map(|l| marker(&l["body"])).collect();
    assert_eq!(
        markers,
        (0..REQUESTS as u64).collect(),
        "every request captured once"
    );
}

/// The tool-result request with the request number in its first user text, to find it in the capture.
fn tool_result_request_with_marker(p: Provider, block: Value, n: usize) -> Vec<u8> {
    let mut r = request(p, json!([block]));
    let first = match p {
        Provider::Gemini => &mut r["contents"][0]["parts"][0]["text"],
        Provider::Bedrock => &mut r["messages"][0]["content"][0]["text"],
        Provider::OpenAiResponses => &mut r["input"][0]["content"],
        _ => &mut r["messages"][0]["content"],
    };
    *first = json!(format!("request {n}"));
    serde_json::to_vec(&r).unwrap()
}

fn marker(body: &Value) -> u64 {
    let text = body.to_string();
    let at = text.find("request ").unwrap() + "request ".len();
    text[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap()
}
