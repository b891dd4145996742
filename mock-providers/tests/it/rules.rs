//! One malformed request per rule and provider, with its exact status and message, next to a matching
//! valid request that is accepted. In process: `validate` is what the HTTP layer calls.

use crate::common::*;
use mock_providers::Provider::{self, *};
use mock_providers::Verdict;
use serde_json::{Value, json};

struct Case {
    rule: &'static str,
    provider: Provider,
    bad: Value,
    status: u16,
    message: String,
    good: Value,
}

fn case(
    rule: &'static str,
    provider: Provider,
    bad: Value,
    status: u16,
    message: impl Into<String>,
    good: Value,
) -> Case {
    Case {
        rule,
        provider,
        bad,
        status,
        message: message.into(),
        good,
    }
}

fn run(cases: Vec<Case>) {
    for c in cases {
        let v = judge(c.provider, &c.bad);
        match &v {
            Verdict::Rejected { status, .. } => {
                assert_eq!(*status, c.status, "{}: status of {v:?}", c.rule);
                assert_eq!(v.message(), Some(c.message.as_str()), "{}: message", c.rule);
            }
            Verdict::Accepted => panic!("{}: malformed request accepted", c.rule),
        }
        let good = judge(c.provider, &c.good);
        assert!(
            good.is_accepted(),
            "{}: valid counterpart rejected: {good:?}",
            c.rule
        );
    }
}

/// The request with one image block `{data, mimeType}` in its tool result.
fn with_image(p: Provider, data: &str, mime: &str) -> Value {
    request(p, json!([image(data, mime)]))
}

fn png_b64() -> String {
    b64(&png(16, 16))
}

fn jpeg_b64() -> String {
    b64(&jpeg(16, 16))
}

// ------------------------------------------------------------------------------------ Anthropic

const A_IMG: &str = "messages.2.content.0.tool_result.content.0.image.source.base64";

/// Anthropic request whose first message carries `content` blocks (top level, not in a tool result).
fn anthropic_user(content: Value) -> Value {
    json!({"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": content}]})
}

fn anthropic_source(source: Value) -> Value {
    let mut r = request(Anthropic, json!([png_block()]));
    r["messages"][2]["content"][0]["content"][0]["source"] = source;
    r
}

fn anthropic_image_schema_cases() -> Vec<Case> {
    let png64 = png_b64();
    vec![
        case(
            "E1 missing media_type",
            Anthropic,
            anthropic_source(json!({"type": "base64", "data": png64})),
            400,
            format!("{A_IMG}.media_type: Field required"),
            with_image(Anthropic, &png64, "image/png"),
        ),
        case(
            "E1 both missing: media_type reported",
            Anthropic,
            anthropic_source(json!({"type": "base64"})),
            400,
            format!("{A_IMG}.media_type: Field required"),
            with_image(Anthropic, &png64, "image/png"),
        ),
        case(
            "E2 missing data",
            Anthropic,
            anthropic_source(json!({"type": "base64", "media_type": "image/png"})),
            400,
            format!("{A_IMG}.data: Field required"),
            with_image(Anthropic, &png64, "image/png"),
        ),
        case(
            "E3 image/jpg",
            Anthropic,
            with_image(Anthropic, &jpeg_b64(), "image/jpg"),
            400,
            format!(
                "{A_IMG}.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'"
            ),
            with_image(Anthropic, &jpeg_b64(), "image/jpeg"),
        ),
        case(
            "E3 case-sensitive",
            Anthropic,
            with_image(Anthropic, &png64, "image/PNG"),
            400,
            format!(
                "{A_IMG}.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'"
            ),
            with_image(Anthropic, &png64, "image/png"),
        ),
        case(
            "source tag",
            Anthropic,
            anthropic_source(json!({"type": "bytes", "data": png64})),
            400,
            "messages.2.content.0.tool_result.content.0.image.source: Input tag 'bytes' found using 'type' does not match any of the expected tags: 'base64', 'file', 'url'",
            anthropic_source(json!({"type": "url", "url": "https://example.com/a.png"})),
        ),
        case(
            "E13 OpenAI block at top level",
            Anthropic,
            anthropic_user(
                json!([{"type": "text", "text": "hi"}, {"type": "image_url", "image_url": {"url": "x"}}]),
            ),
            400,
            "messages.0.content.1: Input tag 'image_url' found using 'type' does not match any of the expected tags: 'document', 'image', 'redacted_thinking', 'search_result', 'server_tool_use', 'text', 'thinking', 'tool_result', 'tool_use', 'web_search_tool_result'",
            anthropic_user(json!([{"type": "text", "text": "hi"}])),
        ),
        case(
            "top-level image path",
            Anthropic,
            anthropic_user(json!([{"type": "image", "source": {"type": "base64", "data": png64}}])),
            400,
            "messages.0.content.0.image.source.base64.media_type: Field required",
            anthropic_user(
                json!([{"type": "image", "source": {"type": "base64", "data": png64, "media_type": "image/png"}}]),
            ),
        ),
        case(
            "unknown block in tool result",
            Anthropic,
            request(Anthropic, json!([{"type": "audio", "data": "x"}])),
            400,
            "messages.2.content.0.tool_result.content.0: Input tag 'audio' found using 'type' does not match any of the expected tags: 'document', 'image', 'search_result', 'text', 'tool_reference'",
            request(Anthropic, json!([text("audio omitted")])),
        ),
        case(
            "max_tokens required",
            Anthropic,
            json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]}),
            400,
            "max_tokens: Field required",
            anthropic_user(json!("hi")),
        ),
    ]
}

#[test]
fn anthropic_image_schema() {
    run(anthropic_image_schema_cases());
}

fn anthropic_image_bytes_cases() -> Vec<Case> {
    let png64 = png_b64();
    // A PNG whose base64 string is exactly `len` long (len divisible by 4).
    let padded = b64(&[png_bytes(), vec![0]].concat());
    assert!(padded.ends_with('='));
    let png_of_len =
        |len: usize| b64(&[png_bytes(), vec![0; len / 4 * 3 - png_bytes().len()]].concat());
    let many = |n: usize, side: u32| {
        let mut blocks = vec![image(&b64(&png(side, side)), "image/png")];
        blocks.extend((1..n).map(|_| png_block()));
        request(Anthropic, Value::Array(blocks))
    };
    vec![
        case(
            "E4 empty data",
            Anthropic,
            with_image(Anthropic, "", "image/png"),
            400,
            format!("{A_IMG}: image cannot be empty"),
            with_image(Anthropic, &png64, "image/png"),
        ),
        case(
            "E5 data: prefix",
            Anthropic,
            with_image(
                Anthropic,
                &format!("data:image/png;base64,{png64}"),
                "image/png",
            ),
            400,
            format!("{A_IMG}: invalid base64 data"),
            with_image(Anthropic, &png64, "image/png"),
        ),
        case(
            "E5 missing padding",
            Anthropic,
            with_image(Anthropic, padded.trim_end_matches('='), "image/png"),
            400,
            format!("{A_IMG}: invalid base64 data"),
            with_image(Anthropic, &padded, "image/png"),
        ),
        case(
            "E5 line break",
            Anthropic,
            with_image(
                Anthropic,
                &format!("{}\n{}", &png64[..8], &png64[8..]),
                "image/png",
            ),
            400,
            format!("{A_IMG}: invalid base64 data"),
            with_image(Anthropic, &png64, "image/png"),
        ),
        case(
            "E6 declared png64, bytes jpeg",
            Anthropic,
            with_image(Anthropic, &jpeg_b64(), "image/png"),
            400,
            format!(
                "{A_IMG}: The image was specified using the image/png media type, but the image appears to be a image/jpeg image"
            ),
            with_image(Anthropic, &jpeg_b64(), "image/jpeg"),
        ),
        case(
            "E6 declared webp, bytes gif",
            Anthropic,
            with_image(Anthropic, &b64(&gif(4, 4)), "image/webp"),
            400,
            format!(
                "{A_IMG}: The image was specified using the image/webp media type, but the image appears to be a image/gif image"
            ),
            with_image(Anthropic, &b64(&webp_vp8l(4, 4)), "image/webp"),
        ),
        case(
            "E7 base64 over 5 MB",
            Anthropic,
            with_image(Anthropic, &png_of_len(5_242_884), "image/png"),
            400,
            format!("{A_IMG}: image exceeds 5 MB maximum: 5242884 bytes > 5242880 bytes"),
            with_image(Anthropic, &png_of_len(5_242_880), "image/png"),
        ),
        case(
            "E8 over 8000 px",
            Anthropic,
            with_image(Anthropic, &b64(&png(8001, 10)), "image/png"),
            400,
            format!(
                "{A_IMG}.data: At least one of the image dimensions exceed max allowed size: 8000 pixels"
            ),
            with_image(Anthropic, &b64(&png(8000, 8000)), "image/png"),
        ),
        case(
            "E8 jpeg height",
            Anthropic,
            with_image(Anthropic, &b64(&jpeg(10, 9000)), "image/jpeg"),
            400,
            format!(
                "{A_IMG}.data: At least one of the image dimensions exceed max allowed size: 8000 pixels"
            ),
            with_image(Anthropic, &b64(&jpeg(10, 8000)), "image/jpeg"),
        ),
        case(
            "E9 over 2000 px with 21 images",
            Anthropic,
            many(21, 2001),
            400,
            format!(
                "{A_IMG}.data: At least one of the image dimensions exceed max allowed size for many-image requests: 2000 pixels"
            ),
            many(20, 2001),
        ),
        case(
            "E10 more than 100 images",
            Anthropic,
            many(101, 16),
            400,
            "too many images and documents: 101 + 0 > 100",
            many(100, 16),
        ),
        case(
            "E11 not an image",
            Anthropic,
            with_image(Anthropic, &b64(b"hello, world"), "image/png"),
            400,
            "Could not process image",
            with_image(Anthropic, &png64, "image/png"),
        ),
        case(
            "E11 truncated header",
            Anthropic,
            with_image(Anthropic, &b64(&png(4, 4)[..20]), "image/png"),
            400,
            "Could not process image",
            with_image(Anthropic, &b64(&png(4, 4)), "image/png"),
        ),
        case(
            "E12 http URL",
            Anthropic,
            anthropic_source(json!({"type": "url", "url": "http://example.com/a.png"})),
            400,
            "Only HTTPS URLs are supported.",
            anthropic_source(json!({"type": "url", "url": "HTTPS://example.com/a.png"})),
        ),
    ]
}

#[test]
fn anthropic_image_bytes() {
    run(anthropic_image_bytes_cases());
}

fn png_bytes() -> Vec<u8> {
    png(16, 16)
}

fn anthropic_text_and_tools_cases() -> Vec<Case> {
    let tool_use = json!({"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "t", "input": {}}]});
    let tool_result = json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "r"}]});
    let convo = |msgs: Vec<Value>| json!({"model": "m", "max_tokens": 10, "messages": msgs});
    let user = |s: &str| json!({"role": "user", "content": s});
    vec![
        case(
            "E14 empty text block",
            Anthropic,
            request(Anthropic, json!([text(""), png_block()])),
            400,
            "messages: text content blocks must be non-empty",
            request(Anthropic, json!([png_block()])),
        ),
        case(
            "blank text block",
            Anthropic,
            anthropic_user(json!([{"type": "text", "text": " \n\t"}])),
            400,
            "messages: text content blocks must contain non-whitespace text",
            anthropic_user(json!([{"type": "text", "text": " x "}])),
        ),
        case(
            "empty message content",
            Anthropic,
            convo(vec![
                user(""),
                json!({"role": "assistant", "content": "a"}),
                user("b"),
            ]),
            400,
            "messages.0: all messages must have non-empty content except for the optional final assistant message",
            convo(vec![user("q"), json!({"role": "assistant", "content": ""})]),
        ),
        case(
            "E15 tool_use without tool_result",
            Anthropic,
            convo(vec![user("q"), tool_use.clone(), user("next")]),
            400,
            "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
            convo(vec![user("q"), tool_use.clone(), tool_result.clone()]),
        ),
        case(
            "E16 orphan tool_result",
            Anthropic,
            convo(vec![
                user("q"),
                json!({"role": "assistant", "content": "a"}),
                tool_result.clone(),
            ]),
            400,
            "messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_1. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.",
            convo(vec![user("q"), tool_use, tool_result]),
        ),
    ]
}

#[test]
fn anthropic_text_and_tools() {
    run(anthropic_text_and_tools_cases());
}

#[test]
fn anthropic_envelope_json_and_size() {
    let v = mock_providers::validate(Anthropic, br#"{"model": "m",, }"#);
    let Verdict::Rejected {
        status,
        body,
        headers,
    } = &v
    else {
        panic!("accepted")
    };
    assert_eq!(*status, 400);
    assert_eq!(body["type"], "error");
    assert_eq!(body["error"]["type"], "invalid_request_error");
    let m = v.message().unwrap();
    assert!(
        m.starts_with("The request body is not valid JSON: ")
            && m.ends_with("line 1 column 15 (char 14)"),
        "{m}"
    );
    let id = body["request_id"].as_str().unwrap();
    assert!(id.starts_with("req_011C") && id.len() == 28, "{id}");
    assert_eq!(headers, &vec![("request-id".to_string(), id.to_string())]);

    let big = vec![b' '; 32 * 1024 * 1024 + 1];
    let v = mock_providers::validate(Anthropic, &big);
    let b = rejected(&v, 413, "Request exceeds the maximum size");
    assert_eq!(b["error"]["type"], "request_too_large");
    accepted(&judge(Anthropic, &request(Anthropic, json!([png_block()]))));
}

// ------------------------------------------------------------------------------------ OpenAI Chat

const C_URL: &str = "messages[3].content[0].image_url.url";

fn chat_image_url(url: Value) -> Value {
    let mut r = request(OpenAiChat, json!([png_block()]));
    r["messages"][3]["content"][0]["image_url"] = url;
    r
}

fn openai_chat_images_cases() -> Vec<Case> {
    let png64 = png_b64();
    let data_png = format!("data:image/png;base64,{png64}");
    vec![
        case(
            "E-O1 image_url is a string",
            OpenAiChat,
            chat_image_url(json!(data_png)),
            400,
            "Invalid type for 'messages[3].content[0].image_url': expected an object, but got a string instead.",
            chat_image_url(json!({"url": data_png})),
        ),
        case(
            "E-O2 raw base64",
            OpenAiChat,
            chat_image_url(json!({"url": png64})),
            400,
            format!(
                "Invalid image URL: '{C_URL}'. Expected a base64-encoded data URL with an image MIME type (e.g. 'data:image/png;base64,aW1nIGJ5dGVzIGhlcmU='), but got a value without the 'data:' prefix."
            ),
            chat_image_url(json!({"url": data_png})),
        ),
        case(
            "E-O2 ftp URL",
            OpenAiChat,
            chat_image_url(json!({"url": "ftp://example.com/a.png"})),
            400,
            format!(
                "Invalid image URL: '{C_URL}'. Expected a base64-encoded data URL with an image MIME type (e.g. 'data:image/png;base64,aW1nIGJ5dGVzIGhlcmU='), but got a value without the 'data:' prefix."
            ),
            chat_image_url(json!({"url": "http://example.com/a.png"})),
        ),
        case(
            "E-O3 bad base64",
            OpenAiChat,
            with_image(OpenAiChat, "iVBOR!!!", "image/png"),
            400,
            "Invalid base64 image_url.",
            with_image(OpenAiChat, &png64, "image/png"),
        ),
        case(
            "E-O3 undefined",
            OpenAiChat,
            with_image(OpenAiChat, "undefined", "image/png"),
            400,
            "Invalid base64 image_url.",
            with_image(OpenAiChat, &png64, "image/png"),
        ),
        case(
            "E-O3 empty",
            OpenAiChat,
            with_image(OpenAiChat, "", "image/png"),
            400,
            "Invalid base64 image_url.",
            with_image(OpenAiChat, &png64, "image/png"),
        ),
        case(
            "E-O4 non-image MIME",
            OpenAiChat,
            with_image(OpenAiChat, &png64, "application/pdf"),
            400,
            "Invalid MIME type. Only image types are supported.",
            with_image(OpenAiChat, &png64, "image/png"),
        ),
        case(
            "E-O5 bytes not an image",
            OpenAiChat,
            with_image(OpenAiChat, &b64(b"<svg/>"), "image/svg+xml"),
            400,
            "You uploaded an unsupported image. Please make sure your image has of one the following formats: ['png', 'jpeg', 'gif', 'webp'].",
            // The label is not compared with the bytes.
            with_image(OpenAiChat, &jpeg_b64(), "image/png"),
        ),
        case(
            "E-O9 missing url",
            OpenAiChat,
            chat_image_url(json!({"detail": "auto"})),
            400,
            format!("Missing required parameter: '{C_URL}'."),
            chat_image_url(json!({"url": data_png, "detail": "auto"})),
        ),
    ]
}

#[test]
fn openai_chat_images() {
    run(openai_chat_images_cases());
}

fn openai_chat_messages_cases() -> Vec<Case> {
    let png64 = png_b64();
    let mut image_in_tool = request(OpenAiChat, json!([text("x")]));
    image_in_tool["messages"][2]["content"] = json!([{"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{png64}")}}]);
    let msgs = |m: Value| json!({"model": "gpt", "messages": m});
    let call = json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "t", "arguments": "{}"}}]});
    vec![
        case(
            "E-O8 image in a tool message",
            OpenAiChat,
            image_in_tool,
            400,
            "Invalid 'messages[2]'. Image URLs are only allowed for messages with role 'user', but this message with role 'tool' contains an image URL.",
            request(OpenAiChat, json!([text("x"), png_block()])),
        ),
        case(
            "tool_calls without tool messages",
            OpenAiChat,
            msgs(json!([{"role": "user", "content": "q"}, call, {"role": "user", "content": "n"}])),
            400,
            "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: call_1",
            msgs(
                json!([{"role": "user", "content": "q"}, call, {"role": "tool", "tool_call_id": "call_1", "content": "r"}]),
            ),
        ),
        case(
            "orphan tool message",
            OpenAiChat,
            msgs(
                json!([{"role": "user", "content": "q"}, {"role": "tool", "tool_call_id": "call_1", "content": "r"}]),
            ),
            400,
            "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
            msgs(json!([{"role": "user", "content": "q"}])),
        ),
        case(
            "empty content array",
            OpenAiChat,
            msgs(json!([{"role": "user", "content": []}])),
            400,
            "Invalid 'messages[0].content': empty array. Expected an array with minimum length 1, but got an empty array instead.",
            msgs(json!([{"role": "user", "content": ""}])),
        ),
    ]
}

#[test]
fn openai_chat_messages() {
    run(openai_chat_messages_cases());
    let v = mock_providers::validate(OpenAiChat, b"{\"model\":");
    let body = rejected(
        &v,
        400,
        "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON. If you have trouble figuring out how to fix this, please contact us through our help center at help.openai.com.)",
    );
    assert_eq!(body["error"]["type"], "invalid_request_error");
    assert!(header(&v, "x-request-id").is_some_and(|id| id.starts_with("req_")));
}

#[test]
fn openai_envelopes_carry_param_and_code() {
    let png64 = png_b64();
    let v = judge(OpenAiChat, &chat_image_url(json!({"url": png64})));
    let Verdict::Rejected { body, .. } = &v else {
        panic!()
    };
    assert_eq!(body["error"]["param"], C_URL);
    assert_eq!(body["error"]["code"], "invalid_value");
    let v = judge(OpenAiChat, &with_image(OpenAiChat, "%%%", "image/png"));
    let Verdict::Rejected { body, .. } = &v else {
        panic!()
    };
    assert_eq!(
        body["error"],
        json!({"message": "Invalid base64 image_url.", "type": "invalid_request_error", "param": null, "code": "invalid_base64"})
    );
}

fn openai_chat_image_size_cases() -> Vec<Case> {
    // 20 MiB + 1 decoded bytes behind a PNG header.
    let big = b64(&[
        png_bytes(),
        vec![0; 20 * 1024 * 1024 + 1 - png_bytes().len()],
    ]
    .concat());
    let ok = b64(&[png_bytes(), vec![0; 20 * 1024 * 1024 - png_bytes().len()]].concat());
    vec![case(
        "20 MB per image",
        OpenAiChat,
        with_image(OpenAiChat, &big, "image/png"),
        400,
        "You uploaded an unsupported image. Please make sure your image is below 20 MB in size and is of one the following formats: ['png', 'jpeg', 'gif', 'webp'].",
        with_image(OpenAiChat, &ok, "image/png"),
    )]
}

#[test]
fn openai_chat_image_size() {
    run(openai_chat_image_size_cases());
}

// ------------------------------------------------------------------------------------ OpenAI Responses

fn openai_responses_rules_cases() -> Vec<Case> {
    let png64 = png_b64();
    let data_png = format!("data:image/png;base64,{png64}");
    let mut object_url = request(OpenAiResponses, json!([png_block()]));
    object_url["input"][2]["output"][0]["image_url"] = json!({"url": data_png});
    let input = |items: Value| json!({"model": "gpt", "input": items});
    let call =
        json!({"type": "function_call", "call_id": "call_1", "name": "t", "arguments": "{}"});
    let output = json!({"type": "function_call_output", "call_id": "call_1", "output": "r"});
    vec![
        case(
            "image_url is an object",
            OpenAiResponses,
            object_url,
            400,
            "Invalid type for 'input[2].output[0].image_url': expected an image URL, but got an object instead.",
            request(OpenAiResponses, json!([png_block()])),
        ),
        case(
            "empty base64",
            OpenAiResponses,
            with_image(OpenAiResponses, "", "image/png"),
            400,
            "Invalid 'input[2].output[0].image_url'. Expected a base64-encoded data URL with an image MIME type (e.g. 'data:image/png;base64,aW1nIGJ5dGVzIGhlcmU='), but got empty base64-encoded bytes.",
            with_image(OpenAiResponses, &png64, "image/png"),
        ),
        case(
            "not a valid image",
            OpenAiResponses,
            with_image(OpenAiResponses, &b64(b"<svg/>"), "image/png"),
            400,
            "The image data you provided does not represent a valid image. Please check your input and try again with one of the supported image formats: ['image/jpeg', 'image/png', 'image/gif', 'image/webp'].",
            with_image(OpenAiResponses, &b64(&gif(2, 2)), "image/png"),
        ),
        case(
            "bad base64",
            OpenAiResponses,
            with_image(OpenAiResponses, "a b c", "image/png"),
            400,
            "Invalid base64 image_url.",
            with_image(OpenAiResponses, &png64, "image/png"),
        ),
        case(
            "no data: prefix",
            OpenAiResponses,
            {
                let mut r = request(OpenAiResponses, json!([png_block()]));
                r["input"][2]["output"][0]["image_url"] = json!(png64);
                r
            },
            400,
            "Invalid 'input[2].output[0].image_url'. Expected a base64-encoded data URL with an image MIME type (e.g. 'data:image/png;base64,aW1nIGJ5dGVzIGhlcmU='), but got a value without the 'data:' prefix.",
            request(OpenAiResponses, json!([png_block()])),
        ),
        case(
            "output without call",
            OpenAiResponses,
            input(json!([{"role": "user", "content": "q"}, output])),
            400,
            "No tool call found for function call output with call_id call_1.",
            input(json!([{"role": "user", "content": "q"}, call, output])),
        ),
        case(
            "call without output",
            OpenAiResponses,
            input(json!([{"role": "user", "content": "q"}, call])),
            400,
            "No tool output found for function call call_1.",
            input(json!([{"role": "user", "content": "q"}])),
        ),
    ]
}

#[test]
fn openai_responses_rules() {
    run(openai_responses_rules_cases());
}

// ------------------------------------------------------------------------------------ Gemini

const G_DATA: &str = "contents[2].parts[0].function_response.parts[0].inline_data.data";

fn gemini_blob(blob: Value) -> Value {
    let mut r = request(Gemini, json!([png_block()]));
    r["contents"][2]["parts"][0]["functionResponse"]["parts"][0]["inlineData"] = blob;
    r
}

fn gemini_user(parts: Value) -> Value {
    json!({"contents": [{"role": "user", "parts": parts}]})
}

fn gemini_rules_cases() -> Vec<Case> {
    let png64 = png_b64();
    let url_safe_unpadded = b64(&png(250, 250))
        .replace('+', "-")
        .replace('/', "_")
        .trim_end_matches('=')
        .to_string();
    let data_path = G_DATA;
    let bad64 = format!("data:image/png;base64,{png64}");
    vec![
        case(
            "empty part",
            Gemini,
            gemini_user(json!([{"text": "a"}, {}])),
            400,
            "* GenerateContentRequest.contents[0].parts[1].data: required oneof field 'data' must have one initialized field\n",
            gemini_user(json!([{"text": "a"}])),
        ),
        case(
            "empty text part",
            Gemini,
            gemini_user(json!([{"text": ""}])),
            400,
            "* GenerateContentRequest.contents[0].parts[0].data: required oneof field 'data' must have one initialized field\n",
            gemini_user(json!([{"text": " "}])),
        ),
        case(
            "empty parts",
            Gemini,
            json!({"contents": [{"role": "user", "parts": [{"text": "a"}]}, {"role": "model", "parts": []}]}),
            400,
            "* GenerateContentRequest.contents[1].parts: contents.parts must not be empty.\n",
            json!({"contents": [{"role": "user", "parts": [{"text": "a"}]}, {"role": "model", "parts": [{"text": "b"}]}]}),
        ),
        case(
            "image/jpg",
            Gemini,
            with_image(Gemini, &jpeg_b64(), "image/jpg"),
            400,
            "Unsupported MIME type: image/jpg",
            with_image(Gemini, &jpeg_b64(), "image/jpeg"),
        ),
        case(
            "image/gif (not a Gemini image type)",
            Gemini,
            with_image(Gemini, &b64(&gif(2, 2)), "image/gif"),
            400,
            "Unsupported MIME type: image/gif",
            with_image(Gemini, &b64(&webp_vp8(2, 2)), "image/webp"),
        ),
        case(
            "data: prefix",
            Gemini,
            with_image(Gemini, &bad64, "image/png"),
            400,
            format!(
                "Invalid value at '{data_path}' (TYPE_BYTES), Base64 decoding failed for \"{bad64}\""
            ),
            // proto bytes: URL-safe alphabet without padding is fine.
            with_image(Gemini, &url_safe_unpadded, "image/png"),
        ),
        case(
            "undecodable bytes",
            Gemini,
            with_image(Gemini, &b64(b"not an image"), "image/png"),
            400,
            "Unable to process input image. Please retry or report in https://developers.generativeai.google/guide/troubleshooting",
            // No declared-vs-actual check.
            with_image(Gemini, &jpeg_b64(), "image/png"),
        ),
        case(
            "snake_case blob",
            Gemini,
            gemini_blob(json!({"mime_type": "image/png", "data": "%%"})),
            400,
            format!(
                "Invalid value at '{data_path}' (TYPE_BYTES), Base64 decoding failed for \"%%\""
            ),
            gemini_blob(json!({"mime_type": "image/png", "data": png64})),
        ),
        case(
            "top-level inline_data path",
            Gemini,
            gemini_user(
                json!([{"text": "a"}, {"inline_data": {"mime_type": "image/png", "data": "@"}}]),
            ),
            400,
            "Invalid value at 'contents[0].parts[1].inline_data.data' (TYPE_BYTES), Base64 decoding failed for \"@\"",
            gemini_user(
                json!([{"text": "a"}, {"inline_data": {"mime_type": "image/png", "data": png64}}]),
            ),
        ),
        case(
            "two oneof members",
            Gemini,
            gemini_user(
                json!([{"text": "a", "inlineData": {"mimeType": "image/png", "data": png64}}]),
            ),
            400,
            "Invalid value at 'contents[0].parts[0]' (oneof), oneof field 'data' is already set. Cannot set 'inlineData'",
            gemini_user(
                json!([{"text": "a"}, {"inlineData": {"mimeType": "image/png", "data": png64}}]),
            ),
        ),
        case(
            "http fileData",
            Gemini,
            gemini_user(
                json!([{"fileData": {"mimeType": "image/png", "fileUri": "http://example.com/a.png"}}]),
            ),
            400,
            "Request contains an invalid argument.",
            gemini_user(
                json!([{"fileData": {"mimeType": "image/png", "fileUri": "https://example.com/a.png"}}]),
            ),
        ),
        case(
            "function response without call",
            Gemini,
            json!({"contents": [{"role": "user", "parts": [{"functionResponse": {"name": "t", "response": {}}}]}]}),
            400,
            "Please ensure that function response turn comes immediately after a function call turn.",
            request(Gemini, json!([text("r")])),
        ),
        case(
            "function call not answered",
            Gemini,
            {
                let mut r = request(Gemini, json!([text("r")]));
                r["contents"][2] = json!({"role": "user", "parts": [{"text": "never mind"}]});
                r
            },
            400,
            "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.",
            request(Gemini, json!([text("r")])),
        ),
        case(
            "bad role",
            Gemini,
            json!({"contents": [{"role": "assistant", "parts": [{"text": "a"}]}]}),
            400,
            "Please use a valid role: user, model.",
            json!({"contents": [{"role": "model", "parts": [{"text": "a"}]}]}),
        ),
    ]
}

#[test]
fn gemini_rules() {
    run(gemini_rules_cases());
    let bad64 = format!("data:image/png;base64,{}", png_b64());
    let v = judge(Gemini, &with_image(Gemini, &bad64, "image/png"));
    let Verdict::Rejected { body, headers, .. } = &v else {
        panic!()
    };
    assert_eq!(body["error"]["code"], 400);
    assert_eq!(body["error"]["status"], "INVALID_ARGUMENT");
    assert_eq!(
        body["error"]["details"][0]["@type"],
        "type.googleapis.com/google.rpc.BadRequest"
    );
    assert_eq!(
        body["error"]["details"][0]["fieldViolations"][0]["field"],
        G_DATA
    );
    assert!(headers.is_empty());
}

// ------------------------------------------------------------------------------------ Bedrock

const B_PREFIX: &str = "The model returned the following errors: ";

fn bedrock_user(content: Value) -> Value {
    json!({"messages": [{"role": "user", "content": content}]})
}

fn bedrock_image(format: &str, bytes: &str) -> Value {
    json!({"image": {"format": format, "source": {"bytes": bytes}}})
}

fn bedrock_rules_cases() -> Vec<Case> {
    let png64 = png_b64();
    let enum_msg = |path: &str, v: &str| {
        format!(
            "Value '{v}' at '{path}' failed to satisfy constraint: Member must satisfy enum value set: [gif, jpeg, png, webp]"
        )
    };
    let top = "messages.1.member.content.2.member.image.format";
    let nested = "messages.3.member.content.1.member.toolResult.content.1.member.image.format";
    vec![
        case(
            "format jpg",
            Bedrock,
            bedrock_user(json!([{"text": "a"}, bedrock_image("jpg", &jpeg_b64())])),
            400,
            format!("1 validation error detected: {}", enum_msg(top, "jpg")),
            bedrock_user(json!([{"text": "a"}, bedrock_image("jpeg", &jpeg_b64())])),
        ),
        case(
            "format case-sensitive, in a tool result",
            Bedrock,
            with_image(Bedrock, &png64, "image/PNG"),
            400,
            format!("1 validation error detected: {}", enum_msg(nested, "PNG")),
            with_image(Bedrock, &png64, "image/png"),
        ),
        case(
            "every violation listed",
            Bedrock,
            bedrock_user(json!([
                bedrock_image("", &png64),
                bedrock_image("bmp", &png64)
            ])),
            400,
            format!(
                "2 validation errors detected: {}; {}",
                enum_msg("messages.1.member.content.1.member.image.format", ""),
                enum_msg("messages.1.member.content.2.member.image.format", "bmp")
            ),
            bedrock_user(json!([
                bedrock_image("png", &png64),
                bedrock_image("png", &png64)
            ])),
        ),
        case(
            "empty bytes",
            Bedrock,
            with_image(Bedrock, "", "image/png"),
            400,
            "1 validation error detected: Value at 'messages.3.member.content.1.member.toolResult.content.1.member.image.source.bytes' failed to satisfy constraint: Member must have length greater than or equal to 1",
            with_image(Bedrock, &png64, "image/png"),
        ),
        case(
            "format vs bytes",
            Bedrock,
            bedrock_user(json!([bedrock_image("jpeg", &png64)])),
            400,
            format!(
                "{B_PREFIX}messages.0.content.0.image.source.bytes: The image was specified using the image/jpeg media type, but the image appears to be a image/png image"
            ),
            bedrock_user(json!([bedrock_image("png", &png64)])),
        ),
        case(
            "over 5 MB base64",
            Bedrock,
            with_image(
                Bedrock,
                &b64(&[png_bytes(), vec![0; 3_932_163 - png_bytes().len()]].concat()),
                "image/png",
            ),
            400,
            format!(
                "{B_PREFIX}messages.2.content.0.tool_result.content.0.image.source.bytes: image exceeds 5 MB maximum: 5242884 bytes > 5242880 bytes"
            ),
            with_image(
                Bedrock,
                &b64(&[png_bytes(), vec![0; 3_932_160 - png_bytes().len()]].concat()),
                "image/png",
            ),
        ),
        case(
            "over 8000 px",
            Bedrock,
            bedrock_user(json!([bedrock_image("webp", &b64(&webp_vp8x(8001, 2)))])),
            400,
            format!(
                "{B_PREFIX}messages.0.content.0.image.source.bytes: At least one of the image dimensions exceed max allowed size: 8000 pixels"
            ),
            bedrock_user(json!([bedrock_image("webp", &b64(&webp_vp8x(8000, 2)))])),
        ),
        case(
            "not an image",
            Bedrock,
            with_image(Bedrock, &b64(b"GIF00"), "image/gif"),
            400,
            format!("{B_PREFIX}Could not process image"),
            with_image(Bedrock, &b64(&gif(1, 1)), "image/gif"),
        ),
        case(
            "more than 20 images",
            Bedrock,
            request(Bedrock, Value::Array(vec![png_block(); 21])),
            400,
            "Too many images in the request: 21 > 20. You can include up to 20 images.",
            request(Bedrock, Value::Array(vec![png_block(); 20])),
        ),
        case(
            "empty content",
            Bedrock,
            json!({"messages": [{"role": "user", "content": [{"text": "a"}]}, {"role": "assistant", "content": []}]}),
            400,
            "The content field in the Message object at messages.1 is empty. Add a ContentBlock object to the content field and try again.",
            json!({"messages": [{"role": "user", "content": [{"text": "a"}]}, {"role": "assistant", "content": [{"text": "b"}]}]}),
        ),
        case(
            "blank text",
            Bedrock,
            bedrock_user(json!([{"text": "a"}, {"text": "\n "}])),
            400,
            "The text field in the ContentBlock object at messages.0.content.1 is blank. Add text to the text field, and try again.",
            bedrock_user(json!([{"text": "a"}, {"text": "\n b"}])),
        ),
        case(
            "toolUse without toolResult",
            Bedrock,
            {
                let mut r = request(Bedrock, json!([text("r")]));
                r["messages"][2] = json!({"role": "user", "content": [{"text": "never mind"}]});
                r
            },
            400,
            "Expected toolResult blocks at messages.2.content for the following Ids: tooluse_mock1",
            request(Bedrock, json!([text("r")])),
        ),
        case(
            "toolResult without toolUse",
            Bedrock,
            {
                let mut r = request(Bedrock, json!([text("r")]));
                r["messages"][1] = json!({"role": "assistant", "content": [{"text": "hm"}]});
                r
            },
            400,
            "The number of toolResult blocks at messages.2.content exceeds the number of toolUse blocks of previous turn.",
            request(Bedrock, json!([text("r")])),
        ),
        case(
            "messages null",
            Bedrock,
            json!({"system": []}),
            400,
            "1 validation error detected: Value null at 'messages' failed to satisfy constraint: Member must not be null",
            bedrock_user(json!([{"text": "a"}])),
        ),
    ]
}

#[test]
fn bedrock_rules() {
    run(bedrock_rules_cases());
    let png64 = png_b64();
    let v = judge(Bedrock, &with_image(Bedrock, &png64, "image/jpg"));
    assert_eq!(
        header(&v, "x-amzn-ErrorType"),
        Some("ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/")
    );
    assert_eq!(header(&v, "x-amzn-RequestId").map(str::len), Some(36));
    let v = judge(Bedrock, &with_image(Bedrock, "%%%%", "image/png"));
    assert!(
        header(&v, "x-amzn-ErrorType").is_some_and(|t| t.starts_with("SerializationException")),
        "{v:?}"
    );
}

// ------------------------------------------------------------------------------------ Ollama

fn ollama_rules_cases() -> Vec<Case> {
    let png64 = png_b64();
    let two = |model: &str| {
        let mut r = request(Ollama, json!([png_block(), png_block()]));
        r["model"] = json!(model);
        r
    };
    vec![
        case(
            "data: prefix",
            Ollama,
            with_image(
                Ollama,
                &format!("data:image/png;base64,{png64}"),
                "image/png",
            ),
            400,
            "illegal base64 data at input byte 4",
            with_image(Ollama, &png64, "image/png"),
        ),
        case(
            "URL",
            Ollama,
            with_image(Ollama, "https://example.com/a.png", "image/png"),
            400,
            "illegal base64 data at input byte 5",
            // No declared type and no sniffing: any bytes are carried to the model.
            with_image(Ollama, &b64(b"anything"), "image/png"),
        ),
        case(
            "missing padding",
            Ollama,
            with_image(Ollama, "QQ", "image/png"),
            400,
            "illegal base64 data at input byte 0",
            with_image(Ollama, "QQ==", "image/png"),
        ),
        case(
            "single-image model",
            Ollama,
            two("llama3.2-vision:11b"),
            400,
            "this model only supports one image while more than one image requested",
            two("llava"),
        ),
        case(
            "model required",
            Ollama,
            json!({"messages": [{"role": "user", "content": "q"}]}),
            400,
            "model is required",
            json!({"model": "llava", "messages": [{"role": "user", "content": "q"}]}),
        ),
        case(
            "image not a string",
            Ollama,
            json!({"model": "llava", "messages": [{"role": "user", "content": "q", "images": [1]}]}),
            400,
            "json: cannot unmarshal number into Go struct field Message.messages.images of type api.ImageData",
            json!({"model": "llava", "messages": [{"role": "user", "content": "q", "images": [png64]}]}),
        ),
    ]
}

#[test]
fn ollama_rules() {
    run(ollama_rules_cases());
    rejected(
        &mock_providers::validate(Ollama, b""),
        400,
        "missing request body",
    );
    rejected(
        &mock_providers::validate(Ollama, b"{\"model\": \"llava\""),
        400,
        "unexpected EOF",
    );
    let v = rejected(
        &mock_providers::validate(Ollama, b"{x}"),
        400,
        "invalid character 'x' looking for beginning of value",
    );
    assert_eq!(
        v,
        json!({"error": "invalid character 'x' looking for beginning of value"})
    );
    // Go's decoder stops after the first value.
    accepted(&mock_providers::validate(
        Ollama,
        b"{\"model\": \"llava\"} trailing",
    ));
}

// ------------------------------------------------------------------------------------ all providers

#[test]
fn a_valid_image_of_each_kind_is_accepted_everywhere_it_is_supported() {
    let images = [
        (png(640, 480), "image/png"),
        (jpeg(640, 480), "image/jpeg"),
        (webp_vp8(640, 480), "image/webp"),
        (webp_vp8l(640, 480), "image/webp"),
        (webp_vp8x(640, 480), "image/webp"),
        (gif(640, 480), "image/gif"),
    ];
    for p in Provider::ALL {
        for (bytes, mime) in &images {
            let v = judge(
                p,
                &request(
                    p,
                    json!([text("caption"), image(&b64(bytes), mime), text("after")]),
                ),
            );
            if p == Gemini && *mime == "image/gif" {
                rejected(&v, 400, "Unsupported MIME type: image/gif");
            } else {
                accepted(&v);
            }
        }
        accepted(&judge(p, &request(p, json!([]))));
    }
}

#[test]
fn a_bad_block_in_history_poisons_every_later_turn() {
    // Anthropic: mismatch; OpenAI: not an image; Gemini: bad base64; Bedrock: bad format; Ollama: data URL.
    let png64 = png_b64();
    let bad = |p: Provider| match p {
        Anthropic => image(&jpeg_b64(), "image/png"),
        OpenAiChat | OpenAiResponses => image(&b64(b"plain text"), "image/png"),
        Gemini | Ollama => image(&format!("data:image/png;base64,{png64}"), "image/png"),
        Bedrock => image(&png64, "image/jpg"),
    };
    for p in Provider::ALL {
        let mut r = request(p, json!([text("see image"), bad(p)]));
        let first = judge(p, &r);
        let message = first
            .message()
            .unwrap_or_else(|| panic!("{p:?}: first turn accepted"))
            .to_string();
        for turn in 2..=3 {
            next_turn(p, &mut r);
            rejected(&judge(p, &r), 400, &message);
            let _ = turn;
        }
        // The same session with the bad block dropped is healthy.
        let mut healthy = request(p, json!([text("see image")]));
        for _ in 2..=3 {
            next_turn(p, &mut healthy);
            accepted(&judge(p, &healthy));
        }
    }
}

// ------------------------------------------------------------------------------------ drift's case file

/// `mock-providers drift` replays these cases against the real APIs; the file is generated from them
/// so that it cannot fall behind.
const CASE_FILE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/drift/cases.jsonl");

/// Bodies above this are left out of the file (only their expectation is kept): the size-limit cases
/// carry 20 MB and more, too much to check in or to send to a paid API every week.
const MAX_CHECKED_IN_BODY: usize = 256 * 1024;

fn all_cases() -> Vec<Case> {
    [
        anthropic_image_schema_cases(),
        anthropic_image_bytes_cases(),
        anthropic_text_and_tools_cases(),
        openai_chat_images_cases(),
        openai_chat_messages_cases(),
        openai_chat_image_size_cases(),
        openai_responses_rules_cases(),
        gemini_rules_cases(),
        bedrock_rules_cases(),
        ollama_rules_cases(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// One line of the case file: what drift sends and what the mock answers.
fn case_line(c: &Case) -> String {
    let bad = serde_json::to_string(&c.bad).unwrap();
    let good = serde_json::to_string(&c.good).unwrap();
    let mut line = json!({
        "provider": c.provider.name(),
        "rule": c.rule,
        "status": c.status,
        "message": c.message,
        "bad": c.bad,
        "good": c.good,
    });
    if bad.len().max(good.len()) > MAX_CHECKED_IN_BODY {
        line["bad"] = Value::Null;
        line["good"] = Value::Null;
        line["omitted"] = json!(format!(
            "request bodies of {} and {} bytes, too large to check in",
            bad.len(),
            good.len()
        ));
    }
    serde_json::to_string(&line).unwrap()
}

#[test]
fn drift_case_file_is_current() {
    let cases = all_cases();
    let mut names = std::collections::HashSet::new();
    for c in &cases {
        assert!(
            names.insert((c.provider.name(), c.rule)),
            "{} {:?} twice: drift names cases by provider and rule",
            c.provider.name(),
            c.rule
        );
    }
    let text: String = cases.iter().map(|c| case_line(c) + "\n").collect();
    if std::env::var("NORMFUZZ_BLESS").as_deref() == Ok("1") {
        let path = std::path::Path::new(CASE_FILE);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, &text).unwrap();
    }
    let on_disk = std::fs::read_to_string(CASE_FILE).unwrap_or_default();
    let first_difference = text
        .lines()
        .zip(on_disk.lines().chain(std::iter::repeat("")))
        .position(|(want, have)| want != have)
        .unwrap_or(text.lines().count());
    assert!(
        on_disk == text,
        "{CASE_FILE} is stale from line {} (the cases in rules.rs changed): regenerate it with \
         NORMFUZZ_BLESS=1 cargo test -p mock-providers drift_case_file_is_current",
        first_difference + 1
    );
    assert!(
        cases.len() > 50,
        "only {} cases: a *_cases function is missing",
        cases.len()
    );
}

#[test]
fn chat_refuses_a_replayed_tool_call_whose_name_breaks_the_function_name_pattern() {
    let history = |name: &str| {
        json!({"model": "gpt-4o", "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "c0", "type": "function", "function": {"name": "get_attachment", "arguments": "{}"}},
                {"id": "c1", "type": "function", "function": {"name": name, "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c0", "content": "r"},
            {"role": "tool", "tool_call_id": "c1", "content": "r"}]})
    };
    for bad in ["../../escaped-x", "a b", "", "naïve"] {
        let body = rejected(
            &judge(OpenAiChat, &history(bad)),
            400,
            "Invalid 'messages[1].tool_calls[1].function.name': string does not match pattern. \
             Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.",
        );
        assert_eq!(body["error"]["code"], "invalid_value", "{bad:?}");
        assert_eq!(
            body["error"]["param"], "messages[1].tool_calls[1].function.name",
            "{bad:?}"
        );
    }
    accepted(&judge(OpenAiChat, &history("Get-attachment_2")));
}
