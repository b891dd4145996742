//! Provider SSE decoding (providers.md §1.10, §2.6, §3.3, §4.6) at every split, and the
//! `stream`, `parse-reply` and `retry-images` subcommands end to end.

use std::io::Write;
use std::process::{Command, Output, Stdio};

use normfuzz::reference::sse::{ProviderFormat, ProviderStream, StreamItem};

const ANTHROPIC: &str = concat!(
    "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"content\":[]}}\n\n",
    "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
    "event: ping\ndata: {\"type\": \"ping\"}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello\\n  ME\"}}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"DIA:/etc/passwd ✓\"}}\n\n",
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
    "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":15}}\n\n",
    "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
);

const OPENAI_CHAT: &str = concat!(
    "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\r\n\r\n",
    ": keep-alive\r\n\r\n",
    "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hello\\n  ME\"},\"finish_reason\":null}]}\r\n\r\n",
    "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"DIA:/etc/passwd ✓\"},\"finish_reason\":null}]}\r\n\r\n",
    "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\r\n\r\n",
    "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"total_tokens\":3}}\r\n\r\n",
    "data: [DONE]\r\n\r\n",
);

const OPENAI_RESPONSES: &str = concat!(
    "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"status\":\"in_progress\",\"output\":[]}}\n\n",
    "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":3,\"item_id\":\"msg_1\",\"output_index\":0,\n",
    "data: \"content_index\":0,\"delta\":\"Hello\\n  ME\",\"logprobs\":[]}\n\n",
    "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":4,\"delta\":\"DIA:/etc/passwd ✓\"}\n\n",
    "event: response.output_text.done\ndata: {\"type\":\"response.output_text.done\",\"sequence_number\":5,\"text\":\"Hello\\n  MEDIA:/etc/passwd ✓\"}\n\n",
    "event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":7,\"response\":{\"id\":\"resp_1\",\"status\":\"completed\"}}",
);

const GEMINI: &str = concat!(
    "data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"thinking\", \"thought\": true}, {\"text\": \"Hello\\n  ME\"}],\"role\": \"model\"}}],\"modelVersion\": \"gemini-2.0-flash\"}\n\n",
    "data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"DIA:/etc/passwd ✓\"}],\"role\": \"model\"},\"finishReason\": \"STOP\"}]}\n\n",
);

const WANT: &str = "Hello\n  [neutralized] MEDIA:/etc/passwd ✓";

fn decode_split(
    body: &[u8],
    at: usize,
    format: Option<ProviderFormat>,
) -> (ProviderFormat, String) {
    let mut decoder = ProviderStream::new(format);
    let mut items = Vec::new();
    decoder.push(&body[..at], &mut items).expect("decodes");
    decoder.push(&body[at..], &mut items).expect("decodes");
    let format = decoder.finish(&mut items).expect("decodes");
    let text = items
        .into_iter()
        .map(|i| match i {
            StreamItem::Text(t) => t,
            StreamItem::ProviderError(e) => panic!("unexpected provider error {e}"),
        })
        .collect();
    (format, text)
}

#[test]
fn every_format_decodes_at_every_split() {
    for (body, format) in [
        (ANTHROPIC, ProviderFormat::Anthropic),
        (OPENAI_CHAT, ProviderFormat::OpenAiChat),
        (OPENAI_RESPONSES, ProviderFormat::OpenAiResponses),
        (GEMINI, ProviderFormat::Gemini),
    ] {
        for at in 0..=body.len() {
            for given in [None, Some(format)] {
                assert_eq!(
                    decode_split(body.as_bytes(), at, given),
                    (format, "Hello\n  MEDIA:/etc/passwd ✓".to_string()),
                    "{format} split at {at}"
                );
            }
        }
    }
}

#[test]
fn provider_errors_end_the_stream() {
    for (body, message) in [
        (
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"a\"}}\n\nevent: error\ndata: {\"type\": \"error\", \"error\": {\"type\": \"overloaded_error\", \"message\": \"Overloaded\"}}\n\n",
            "Overloaded",
        ),
        (
            "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: {\"error\":{\"message\":\"boom\"}}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"b\"}}]}\n\n",
            "boom",
        ),
        (
            "data: {\"type\":\"response.output_text.delta\",\"delta\":\"a\"}\n\ndata: {\"type\":\"response.failed\",\"response\":{\"error\":{\"message\":\"bad\"}}}\n\n",
            "bad",
        ),
    ] {
        let mut decoder = ProviderStream::new(None);
        let mut items = Vec::new();
        decoder.push(body.as_bytes(), &mut items).expect("decodes");
        decoder.finish(&mut items).expect("decodes");
        assert_eq!(
            items,
            [
                StreamItem::Text("a".into()),
                StreamItem::ProviderError(message.into())
            ]
        );
    }
}

fn normfuzz(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_normfuzz"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("binary runs");
    // A child that rejects its arguments exits before reading stdin; the broken pipe that may
    // leave is the caller's expected outcome, judged from the exit status.
    if let Err(e) = child.stdin.take().expect("stdin").write_all(stdin) {
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "writes: {e}");
    }
    child.wait_with_output().expect("finishes")
}

fn stdout_json(out: &Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON on stdout")
}

#[test]
fn cli_stream() {
    for (body, format) in [
        (ANTHROPIC, "anthropic"),
        (OPENAI_CHAT, "openai-chat"),
        (OPENAI_RESPONSES, "openai-responses"),
        (GEMINI, "gemini"),
    ] {
        let out = stdout_json(&normfuzz(
            &["stream", "--format", format, "-"],
            body.as_bytes(),
        ));
        assert_eq!(
            (out["format"].as_str(), out["text"].as_str()),
            (Some(format), Some(WANT)),
            "{out}"
        );
        assert!(
            out["deliveries"].as_array().is_some_and(|d| d.len() >= 2),
            "{out}"
        );
    }
    let garbage = normfuzz(&["stream"], b"<html>not a stream</html>");
    assert_eq!(garbage.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&garbage.stderr).contains("no SSE data events"));
    let bad_json = normfuzz(
        &["stream", "--format", "gemini"],
        b"data: {\"candidates\": [\n\n",
    );
    assert_eq!(bad_json.status.code(), Some(2));
    assert_eq!(
        normfuzz(&["stream", "--format", "bedrock"], b"")
            .status
            .code(),
        Some(2)
    );
}

#[test]
fn cli_parse_reply_and_retry_images() {
    let out = stdout_json(&normfuzz(
        &["parse-reply", "--root", "/srv/media", "-"],
        b"Hi\nMEDIA:./a.png\nMEDIA:/etc/passwd",
    ));
    assert_eq!(out["mediaUrls"], serde_json::json!(["/srv/media/a.png"]));
    assert_eq!(
        (out["text"].as_str(), out["rejectedMedia"].as_u64()),
        (Some("Hi"), Some(1))
    );
    assert_eq!(
        normfuzz(&["parse-reply", "--root", "relative"], b"x")
            .status
            .code(),
        Some(2)
    );
    let retry = br#"{"attempt":1,"previousFailure":"timeout","primaryProvider":"openai","candidateProvider":"gemini","images":[{"type":"image"}]}"#;
    assert_eq!(
        stdout_json(&normfuzz(&["retry-images", "-"], retry)),
        serde_json::json!({"images": null})
    );
    assert_eq!(
        normfuzz(&["retry-images", "-"], b"{}").status.code(),
        Some(2)
    );
}
