//! Over real HTTP on 127.0.0.1: routing, status, envelopes and headers, a poisoned three-turn session,
//! scripted tool round trips, every streaming format, capture and the admin endpoints.

use crate::common::*;
use mock_providers::Provider::{self, *};
use mock_providers::server::{Config, MockProviders};
use mock_providers::{Script, Turn};
use serde_json::{Value, json};

/// `(event name, data)` of each SSE event.
fn sse_events(body: &str) -> Vec<(Option<String>, String)> {
    body.split("\n\n")
        .filter(|e| !e.trim().is_empty())
        .map(|e| {
            let mut name = None;
            let mut data = String::new();
            for line in e.lines() {
                if let Some(n) = line.strip_prefix("event: ") {
                    name = Some(n.to_string());
                } else if let Some(d) = line.strip_prefix("data: ") {
                    data.push_str(d);
                }
            }
            (name, data)
        })
        .collect()
}

/// Decodes the JSON string value of the first `"key":"..."` in `raw` to UTF-16 code units, as a
/// JavaScript client would (lone surrogates kept).
fn utf16_field(raw: &str, key: &str) -> Option<Vec<u16>> {
    let start = raw.find(&format!("\"{key}\":\""))? + key.len() + 4;
    let mut out = Vec::new();
    let mut chars = raw[start..].chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => return Some(out),
            '\\' => match chars.next()? {
                'u' => out.push(
                    u16::from_str_radix(&chars.by_ref().take(4).collect::<String>(), 16).ok()?,
                ),
                'n' => out.push(10),
                't' => out.push(9),
                'r' => out.push(13),
                'b' => out.push(8),
                'f' => out.push(12),
                other => out.push(other as u16),
            },
            c => out.extend(c.encode_utf16(&mut [0; 2]).iter()),
        }
    }
    None
}

#[tokio::test]
async fn each_provider_answers_its_real_envelope_and_headers_over_http() {
    let server = start_with(Script::default()).await;
    let bad = |p: Provider| match p {
        Anthropic => request(p, json!([image(&b64(&jpeg(4, 4)), "image/png")])),
        _ => request(p, json!([image("data:image/png;base64,AAAA", "image/jpg")])),
    };
    for p in Provider::ALL {
        let expected = mock_providers::validate(p, &serde_json::to_vec(&bad(p)).unwrap());
        let response = post(&server, path(p, false), &bad(p)).await;
        assert_eq!(response.status(), 400, "{p:?}");
        assert_eq!(response.headers()["content-type"], "application/json");
        let headers = response.headers().clone();
        let body: Value = response.json().await.unwrap();
        assert_eq!(
            mock_providers::Verdict::Rejected {
                status: 400,
                body: body.clone(),
                headers: vec![]
            }
            .message(),
            expected.message(),
            "{p:?}"
        );
        match p {
            Anthropic => {
                assert_eq!(body["type"], "error");
                assert_eq!(headers["request-id"].to_str().unwrap(), body["request_id"]);
            }
            OpenAiChat | OpenAiResponses => {
                assert_eq!(body["error"]["type"], "invalid_request_error");
                assert!(
                    headers["x-request-id"]
                        .to_str()
                        .unwrap()
                        .starts_with("req_")
                );
            }
            Gemini => assert_eq!(body["error"]["status"], "INVALID_ARGUMENT"),
            Bedrock => {
                assert!(
                    headers["x-amzn-errortype"]
                        .to_str()
                        .unwrap()
                        .starts_with("ValidationException:")
                );
                assert!(headers.contains_key("x-amzn-requestid"));
            }
            Ollama => assert!(body["error"].is_string()),
        }
        let ok = post(&server, path(p, false), &request(p, json!([png_block()]))).await;
        assert_eq!(ok.status(), 200, "{p:?}");
    }
    let records = server.requests();
    assert_eq!(records.len(), 12);
    assert_eq!(records[0]["provider"], "anthropic");
    assert_eq!(records[0]["verdict"]["accepted"], false);
    assert_eq!(records[0]["verdict"]["status"], 400);
    assert_eq!(
        records[1]["verdict"],
        json!({"accepted": true, "answer": "text"})
    );
    assert_eq!(records[11]["provider"], "ollama");
}

#[tokio::test]
async fn a_poisoned_session_fails_all_three_turns_over_http() {
    let server = start_with(Script::new(
        vec![Turn::text("never sent")],
        Turn::text("ok"),
    ))
    .await;
    for p in [Anthropic, OpenAiChat, Gemini] {
        let mut r = request(
            p,
            json!([
                text("look"),
                image(&b64(b"text, not an image"), "image/png")
            ]),
        );
        let mut messages = Vec::new();
        for _ in 0..3 {
            let response = post(&server, path(p, false), &r).await;
            assert_eq!(response.status(), 400, "{p:?}");
            let body: Value = response.json().await.unwrap();
            messages.push(body.pointer("/error/message").cloned().unwrap());
            next_turn(p, &mut r);
        }
        assert!(
            messages.iter().all(|m| m == &messages[0]),
            "{p:?}: {messages:?}"
        );
    }
    // Refused requests consume no scripted turn.
    let ok: Value = post(
        &server,
        path(Anthropic, false),
        &request(Anthropic, json!([png_block()])),
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(ok["content"][0]["text"], "never sent");
}

#[tokio::test]
async fn a_script_drives_a_tool_round_trip_set_over_the_admin_endpoint() {
    let server = start_with(Script::default()).await;
    let client = reqwest::Client::new();
    let script = json!({"turns": [
        {"tool_call": {"name": "get_attachment", "arguments": {"name": "report"}, "id": "toolu_x1"}},
        {"text": "Here it is."}
    ], "after": {"text": "bye"}});
    let set = client
        .post(format!("{}/__mock/script", server.uri()))
        .json(&script)
        .send()
        .await
        .unwrap();
    assert_eq!(set.status(), 200);
    let bad_script = client
        .post(format!("{}/__mock/script", server.uri()))
        .body("[{\"nope\": 1}]")
        .send()
        .await
        .unwrap();
    assert_eq!(bad_script.status(), 400);

    let first: Value = post(
        &server,
        path(Anthropic, false),
        &json!({"model": "claude", "max_tokens": 9,
        "messages": [{"role": "user", "content": "go"}]}),
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(first["stop_reason"], "tool_use");
    assert_eq!(
        first["content"][0],
        json!({"type": "tool_use", "id": "toolu_x1", "name": "get_attachment", "input": {"name": "report"}})
    );
    let second: Value = post(
        &server,
        path(Anthropic, false),
        &request(Anthropic, json!([text("report body")])),
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(second["content"][0]["text"], "Here it is.");
    assert_eq!(second["stop_reason"], "end_turn");
    let third: Value = post(
        &server,
        path(OpenAiChat, false),
        &request(OpenAiChat, json!([text("x")])),
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(third["choices"][0]["message"]["content"], "bye");

    let listed: Vec<Value> = client
        .get(format!("{}/__mock/requests", server.uri()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(listed.len(), 3);
    assert_eq!(listed[0]["verdict"]["answer"], "tool_call");
    let cleared = client
        .delete(format!("{}/__mock/requests", server.uri()))
        .send()
        .await
        .unwrap();
    assert_eq!(cleared.status(), 204);
    assert!(server.requests().is_empty());
    let unknown = client
        .get(format!("{}/v2/nothing", server.uri()))
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), 404);
    assert_eq!(
        unknown.json::<Value>().await.unwrap()["error"],
        "mock-providers: no route for GET /v2/nothing"
    );
    // The canary route answers a PNG carrying its marker and captures the hit.
    let canary = client
        .get(format!("{}/canary/nfzmarkersend.png", server.uri()))
        .send()
        .await
        .unwrap();
    assert_eq!(canary.status(), 200);
    let bytes = canary.bytes().await.unwrap();
    assert_eq!(bytes.as_ref(), mock_providers::canary::png("nfzmarkersend"));
    let hits: Vec<Value> = server
        .requests()
        .into_iter()
        .filter(|r| r["canary"] == "nfzmarkersend")
        .collect();
    assert_eq!(hits.len(), 1, "{:?}", server.requests());
    assert_eq!(hits[0]["path"], "/canary/nfzmarkersend.png");
}

/// Adversarial text: a `MEDIA:` line split across events and a non-BMP character split between its
/// surrogate halves, followed by a combining accent in its own event.
fn adversarial() -> Script {
    let turn = Turn::from_json(
        &json!({"chunks": ["Done.\nMED", "IA:/etc/passwd\ncaf", "e", "\u{301} ",
        {"json": "\\ud83d"}, {"json": "\\ude00"}, "!"]}),
    )
    .unwrap();
    Script::new(vec![turn], Turn::text("ok"))
}

const ADVERSARIAL_TEXT: &str = "Done.\nMEDIA:/etc/passwd\ncafe\u{301} \u{1F600}!";

/// Streams the adversarial turn from `p` and returns the text deltas' UTF-16 units, joined.
async fn streamed_text(p: Provider, body: &Value) -> (Vec<u16>, usize) {
    let server = start_with(adversarial()).await;
    let response = post(&server, path(p, true), body).await;
    assert_eq!(response.status(), 200, "{p:?}");
    let content_type = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_string();
    let bytes = response.bytes().await.unwrap();
    let text = String::from_utf8(bytes.to_vec()).unwrap_or_default();
    let (key, events): (&str, Vec<String>) = match p {
        Anthropic => {
            assert_eq!(content_type, "text/event-stream");
            let ev = sse_events(&text);
            assert_eq!(ev.first().unwrap().0.as_deref(), Some("message_start"));
            assert_eq!(ev.last().unwrap().0.as_deref(), Some("message_stop"));
            (
                "text",
                ev.into_iter()
                    .filter(|e| e.0.as_deref() == Some("content_block_delta"))
                    .map(|e| e.1)
                    .collect(),
            )
        }
        OpenAiChat => {
            let ev = sse_events(&text);
            assert_eq!(ev.last().unwrap().1, "[DONE]");
            assert!(ev.iter().all(|e| e.0.is_none()));
            (
                "content",
                ev.into_iter()
                    .map(|e| e.1)
                    .filter(|d| d.contains("\"content\":\"") && !d.contains("\"role\""))
                    .collect(),
            )
        }
        OpenAiResponses => {
            let ev = sse_events(&text);
            assert_eq!(ev.last().unwrap().0.as_deref(), Some("response.completed"));
            (
                "delta",
                ev.into_iter()
                    .filter(|e| e.0.as_deref() == Some("response.output_text.delta"))
                    .map(|e| e.1)
                    .collect(),
            )
        }
        Gemini => {
            let ev = sse_events(&text);
            assert!(ev.iter().all(|e| e.0.is_none()) && !text.contains("[DONE]"));
            assert!(ev.last().unwrap().1.contains("\"finishReason\":\"STOP\""));
            ("text", ev.into_iter().map(|e| e.1).collect())
        }
        Ollama => {
            assert_eq!(content_type, "application/x-ndjson");
            let lines: Vec<String> = text.lines().map(str::to_string).collect();
            assert!(lines.last().unwrap().contains("\"done\":true"));
            ("content", lines[..lines.len() - 1].to_vec())
        }
        Bedrock => {
            assert_eq!(content_type, "application/vnd.amazon.eventstream");
            (
                "text",
                bedrock_frames(&bytes)
                    .into_iter()
                    .filter(|(t, _)| t == "contentBlockDelta")
                    .map(|(_, p)| p)
                    .collect(),
            )
        }
    };
    let units: Vec<u16> = events
        .iter()
        .flat_map(|e| utf16_field(e, key).unwrap_or_else(|| panic!("{p:?}: {e}")))
        .collect();
    (units, events.len())
}

/// `(event type, payload)` of each AWS event-stream frame.
fn bedrock_frames(mut b: &[u8]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    while b.len() >= 16 {
        let total = u32::from_be_bytes(b[0..4].try_into().unwrap()) as usize;
        let headers_len = u32::from_be_bytes(b[4..8].try_into().unwrap()) as usize;
        let headers = &b[12..12 + headers_len];
        let payload = String::from_utf8_lossy(&b[12 + headers_len..total - 4]).to_string();
        let name_len = headers[0] as usize;
        assert_eq!(&headers[1..1 + name_len], b":event-type");
        let value_len = u16::from_be_bytes([headers[2 + name_len], headers[3 + name_len]]) as usize;
        let event =
            String::from_utf8_lossy(&headers[4 + name_len..4 + name_len + value_len]).to_string();
        out.push((event, payload));
        b = &b[total..];
    }
    assert!(b.is_empty(), "trailing bytes in the event stream");
    out
}

#[tokio::test]
async fn adversarial_text_streams_split_across_events_in_every_format() {
    let expected: Vec<u16> = ADVERSARIAL_TEXT.encode_utf16().collect();
    for p in Provider::ALL {
        let mut body = request(p, json!([text("x")]));
        if matches!(p, Anthropic | OpenAiChat | OpenAiResponses) {
            body["stream"] = json!(true);
        }
        if p == Ollama {
            body.as_object_mut().unwrap().remove("stream"); // Ollama streams by default.
        }
        let (units, events) = streamed_text(p, &body).await;
        assert_eq!(events, 7, "{p:?}: one event per chunk");
        assert_eq!(
            String::from_utf16(&units).unwrap(),
            ADVERSARIAL_TEXT,
            "{p:?}"
        );
        assert_eq!(units, expected);
    }
}

#[tokio::test]
async fn streamed_tool_calls_and_non_sse_gemini_framing() {
    let call = || {
        Turn::from_json(
            &json!({"tool_call": {"name": "get_attachment", "arguments": {"name": "r\u{e9}port"}}}),
        )
        .unwrap()
    };
    let server = start_with(Script::new(vec![call(), call(), call()], Turn::text("ok"))).await;
    let mut anthropic = request(Anthropic, json!([text("x")]));
    anthropic["stream"] = json!(true);
    let sse = post(&server, path(Anthropic, true), &anthropic)
        .await
        .text()
        .await
        .unwrap();
    let partial: String = sse_events(&sse)
        .iter()
        .filter_map(|(_, d)| serde_json::from_str::<Value>(d).ok())
        .filter_map(|v| {
            v.pointer("/delta/partial_json")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .collect();
    assert_eq!(
        serde_json::from_str::<Value>(&partial).unwrap(),
        json!({"name": "r\u{e9}port"})
    );
    assert!(sse.contains("\"stop_reason\":\"tool_use\""));

    let mut chat = request(OpenAiChat, json!([text("x")]));
    chat["stream"] = json!(true);
    chat["stream_options"] = json!({"include_usage": true});
    let sse = post(&server, path(OpenAiChat, true), &chat)
        .await
        .text()
        .await
        .unwrap();
    let args: String = sse_events(&sse)
        .iter()
        .filter_map(|(_, d)| serde_json::from_str::<Value>(d).ok())
        .filter_map(|v| {
            v.pointer("/choices/0/delta/tool_calls/0/function/arguments")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .collect();
    assert_eq!(
        serde_json::from_str::<Value>(&args).unwrap(),
        json!({"name": "r\u{e9}port"})
    );
    assert!(sse.contains("\"finish_reason\":\"tool_calls\"") && sse.contains("\"usage\""));

    // streamGenerateContent without alt=sse: one JSON array, for answers and for errors alike.
    let array_path = "/v1beta/models/gemini-2.5-flash:streamGenerateContent";
    let answer: Value = post(&server, array_path, &request(Gemini, json!([text("x")])))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        answer[0]["candidates"][0]["content"]["parts"][0]["functionCall"]["name"],
        "get_attachment"
    );
    let error = post(&server, array_path, &json!({"contents": []})).await;
    assert_eq!(error.status(), 400);
    assert_eq!(
        error.json::<Value>().await.unwrap()[0]["error"]["code"],
        400
    );
}

#[tokio::test]
async fn capture_file_gets_one_line_per_request() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("capture.jsonl");
    let server = MockProviders::start(Config {
        capture: Some(file.clone()),
        ..Config::default()
    })
    .await
    .unwrap();
    post(
        &server,
        path(Ollama, false),
        &request(Ollama, json!([png_block()])),
    )
    .await;
    post(
        &server,
        path(Ollama, false),
        &json!({"model": "llava", "messages": [{"role": "user", "images": ["data:x"]}]}),
    )
    .await;
    reqwest::Client::new()
        .post(format!("{}{}", server.uri(), path(Anthropic, false)))
        .body("not json")
        .send()
        .await
        .unwrap();
    let lines: Vec<Value> = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0]["verdict"]["accepted"], true);
    assert_eq!(
        lines[1]["verdict"]["body"],
        json!({"error": "illegal base64 data at input byte 4"})
    );
    assert_eq!(lines[2]["body_text"], "not json");
    assert_eq!(
        lines
            .iter()
            .map(|l| l["seq"].as_u64().unwrap())
            .collect::<Vec<_>>(),
        [0, 1, 2]
    );
    assert_eq!(server.capture_write_errors(), 0);
}

#[test]
fn the_binary_serves_prints_its_address_and_stops_on_sigterm() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let exe = env!("CARGO_BIN_EXE_mock-providers");
    for args in [&["--help"][..], &["serve", "--help"], &["mcp", "--help"]] {
        let out = Command::new(exe).args(args).output().unwrap();
        assert!(
            out.status.success() && String::from_utf8_lossy(&out.stdout).contains("Usage"),
            "{args:?}"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.json");
    std::fs::write(&script, r#"[{"text": "from the script"}]"#).unwrap();
    let capture = dir.path().join("c.jsonl");
    let mut child = Command::new(exe)
        .args([
            "serve",
            "--script",
            script.to_str().unwrap(),
            "--capture",
            capture.to_str().unwrap(),
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let banner: Value = serde_json::from_str(&line).unwrap();
    let address = banner["address"].as_str().unwrap();
    assert!(address.starts_with("127.0.0.1:"), "{banner}");
    assert_eq!(
        banner["base_urls"]["openai-chat"],
        format!("http://{address}/v1")
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let answer: Value = runtime.block_on(async {
        let url = format!(
            "{}/v1/messages",
            banner["base_urls"]["anthropic"].as_str().unwrap()
        );
        reqwest::Client::new()
            .post(url)
            .json(&request(Anthropic, json!([png_block()])))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    });
    assert_eq!(answer["content"][0]["text"], "from the script");
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let exit = child.wait().unwrap();
    assert!(exit.success(), "{exit:?}");
    assert_eq!(
        std::fs::read_to_string(&capture).unwrap().lines().count(),
        1
    );
}

/// Each capture record names the model its request names: the body's `model`, or Gemini's and
/// Bedrock's path segment (percent-decoded), whatever the verdict; the harness tells a
/// fallback's requests apart by it.
#[tokio::test]
async fn capture_records_name_the_requests_model() {
    let server = start_with(Script::default()).await;
    let anthropic = request(Anthropic, json!([png_block()]));
    post(&server, path(Anthropic, false), &anthropic).await;
    let gemini = request(Gemini, json!([png_block()]));
    post(
        &server,
        "/v1beta/models/mock-model:streamGenerateContent",
        &gemini,
    )
    .await;
    let bedrock = request(Bedrock, json!([png_block()]));
    post(&server, "/model/mock%2Dmodel%3A0/converse", &bedrock).await;
    // Refused by the validator, still named.
    let mut bad = request(Anthropic, json!([png_block()]));
    bad["messages"] = json!("not a list");
    post(&server, path(Anthropic, false), &bad).await;
    let records = server.requests();
    let models: Vec<&Value> = records.iter().map(|r| &r["model"]).collect();
    assert_eq!(
        models,
        [
            &anthropic["model"],
            &json!("mock-model"),
            &json!("mock-model:0"),
            &anthropic["model"]
        ]
    );
    assert!(anthropic["model"].is_string());
    assert_eq!(records[3]["verdict"]["accepted"], false);
}
