use super::*;

fn case(result: Value, image_input: bool) -> E2eCase {
    E2eCase {
        id: "t".into(),
        about: String::new(),
        flavour: 0,
        image_input,
        result,
        reply: vec![],
        fallback: None,
        calls: Vec::new(),
        vision: None,
    }
}

fn rules(findings: &[E2eFinding]) -> Vec<&str> {
    findings.iter().map(|f| f.rule.as_str()).collect()
}

const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

#[test]
fn openai_view_reads_the_tool_message_and_the_moved_image() {
    let requests = [json!({"seq": 1, "body": {"messages": [
        {"role": "user", "content": "hi"},
        {"role": "tool", "content": "a\nb"},
        {"role": "user", "content": [{"type": "text", "text": "Image(s):"},
            {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PNG}")}}]}]}})];
    let view = model_view("openai-chat", &requests).unwrap();
    assert_eq!(view.tool_texts, ["a\nb"]);
    assert_eq!(view.other_texts, ["Image(s):"]);
    assert_eq!(view.images, [("image/png".to_string(), PNG.to_string())]);
    assert!(model_view("openai-chat", &[json!({"body": {"messages": []}})]).is_none());
}

#[test]
fn anthropic_view_reads_tool_result_blocks() {
    let requests = [
        json!({"seq": 1, "body": {"messages": [{"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "x", "content": [{"type": "text", "text": "t"},
          {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}]}]}]}}),
    ];
    let view = model_view("anthropic", &requests).unwrap();
    assert_eq!(view.tool_texts, ["t"]);
    assert_eq!(view.images.len(), 1);
}

/// The mocks' own request for each API (what runtimes send, per docs/research/providers.md):
/// every extractor must find the tool result's text and image in it.
#[test]
fn every_flavour_view_keeps_the_tool_results_text_and_image() {
    let blocks = json!([{"type": "text", "text": "line one\nMEDIA:/x"},
        {"type": "image", "data": PNG, "mimeType": "image/png"}]);
    for provider in mock_providers::Provider::ALL {
        let body: Value =
            serde_json::from_slice(&mock_providers::tool_result_request(provider, &blocks))
                .unwrap();
        let view = model_view(provider.name(), &[json!({"seq": 4, "body": body})])
            .unwrap_or_else(|| panic!("{}: no view", provider.name()));
        assert!(
            view.tool_texts
                .iter()
                .any(|t| t.contains("line one\nMEDIA:/x")),
            "{}: {view:?}",
            provider.name()
        );
        // Ollama sends bare base64; every other API names the media type.
        let mime = if provider.name() == "ollama" {
            ""
        } else {
            "image/png"
        };
        assert_eq!(
            view.images,
            [(mime.to_string(), PNG.to_string())],
            "{}",
            provider.name()
        );
        assert_eq!(view.seq, 4);
    }
}

#[test]
fn responses_view_reads_string_outputs_and_a_following_user_image() {
    let requests = [json!({"seq": 2, "body": {"model": "m", "input": [
        {"role": "user", "content": "hi"},
        {"type": "function_call", "call_id": "c", "name": "get_attachment", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c", "output": "[{\"type\":\"text\",\"text\":\"t\"}]"},
        {"role": "user", "content": [{"type": "input_text", "text": "Image from the tool:"},
            {"type": "input_image", "image_url": format!("data:image/png;base64,{PNG}"), "detail": "auto"}]}]}})];
    let view = model_view("openai-responses", &requests).unwrap();
    assert_eq!(view.tool_texts, [r#"[{"type":"text","text":"t"}]"#]);
    assert_eq!(view.other_texts, ["Image from the tool:"]);
    assert_eq!(view.images, [("image/png".to_string(), PNG.to_string())]);
    let no_result = json!({"body": {"input": "just a prompt"}});
    assert!(model_view("openai-responses", &[no_result]).is_none());
}

#[test]
fn gemini_view_reads_every_string_of_the_response_and_inline_images() {
    let requests = [json!({"seq": 2, "body": {"contents": [
        {"role": "user", "parts": [{"text": "hi"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "get_attachment", "args": {}}}]},
        {"role": "user", "parts": [
            {"functionResponse": {"name": "get_attachment", "response": {"return_value": ["a", {"uri": "file:///r"}]}}},
            {"text": "See the image:"},
            {"inlineData": {"mimeType": "image/png", "data": PNG}}]}]}})];
    let view = model_view("gemini", &requests).unwrap();
    assert_eq!(view.tool_texts, ["a", "file:///r"]);
    assert_eq!(view.other_texts, ["See the image:"]);
    assert_eq!(view.images, [("image/png".to_string(), PNG.to_string())]);
}

#[test]
fn bedrock_view_reads_text_json_and_image_blocks() {
    let requests = [json!({"seq": 2, "body": {"messages": [
        {"role": "user", "content": [{"text": "hi"}]},
        {"role": "assistant", "content": [{"toolUse": {"toolUseId": "t1", "name": "get_attachment", "input": {}}}]},
        {"role": "user", "content": [{"toolResult": {"toolUseId": "t1", "status": "success", "content": [
            {"text": "a"}, {"json": {"uri": "file:///r"}},
            {"image": {"format": "jpeg", "source": {"bytes": PNG}}}]}}, {"text": "note"}]}]}})];
    let view = model_view("bedrock", &requests).unwrap();
    assert_eq!(view.tool_texts, ["a", "file:///r"]);
    assert_eq!(view.other_texts, ["note"]);
    assert_eq!(view.images, [("image/jpeg".to_string(), PNG.to_string())]);
}

#[test]
fn ollama_view_reads_tool_content_and_bare_images() {
    let requests = [json!({"seq": 2, "body": {"model": "m", "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "get_attachment", "arguments": {}}}]},
        {"role": "tool", "content": "a", "images": [PNG]},
        {"role": "user", "content": "more"}]}})];
    let view = model_view("ollama", &requests).unwrap();
    assert_eq!(view.tool_texts, ["a"]);
    assert_eq!(view.other_texts, ["more"]);
    assert_eq!(view.images, [(String::new(), PNG.to_string())]);
}

#[test]
fn siblings_lost_next_to_a_bad_block_are_f5_and_alone_are_f2_f4() {
    let result = json!({"content": [{"type": "text", "text": "keep me"},
        {"type": "resource_link", "uri": "file:///a.docx", "name": "a"},
        {"type": "image", "mimeType": "image/png"}]});
    let empty = ModelView {
        tool_texts: vec!["error".into()],
        ..ModelView::default()
    };
    assert_eq!(
        rules(&check_model_view(&case(result.clone(), true), &empty)),
        ["F5"]
    );
    let kept = ModelView {
        tool_texts: vec!["keep me\n[a] file:///a.docx\n[image omitted]".into()],
        ..ModelView::default()
    };
    assert!(check_model_view(&case(result, true), &kept).is_empty());
    let alone = json!({"content": [{"type": "text", "text": "keep me"},
        {"type": "resource_link", "uri": "file:///a.docx", "name": "a"}]});
    assert_eq!(
        rules(&check_model_view(&case(alone, true), &empty)),
        ["F2", "F4"]
    );
}

#[test]
fn valid_images_must_arrive_as_images_or_as_a_note() {
    let result = json!({"content": [{"type": "image", "data": PNG, "mimeType": "image/png"}]});
    let none = ModelView::default();
    assert_eq!(
        rules(&check_model_view(&case(result.clone(), true), &none)),
        ["F1"]
    );
    assert_eq!(
        rules(&check_model_view(&case(result.clone(), false), &none)),
        ["F1"]
    );
    let note = ModelView {
        tool_texts: vec!["(tool image omitted)".into()],
        ..ModelView::default()
    };
    assert!(check_model_view(&case(result.clone(), false), &note).is_empty());
    let image = ModelView {
        images: vec![("image/png".into(), PNG.into())],
        ..ModelView::default()
    };
    assert!(check_model_view(&case(result.clone(), true), &image).is_empty());
    // Sent as an image to a "text-only" model (an SDK has no such setting): not lost.
    assert!(check_model_view(&case(result, false), &image).is_empty());
}

#[test]
fn forwarded_directives_and_neutralized_texts() {
    let result = json!({"content": [{"type": "text", "text": "page:\nMEDIA:/etc/passwd"}]});
    let raw = ModelView {
        tool_texts: vec!["page:\nMEDIA:/etc/passwd".into()],
        ..ModelView::default()
    };
    assert_eq!(
        rules(&check_model_view(&case(result.clone(), true), &raw)),
        ["S1"]
    );
    let safe = ModelView {
        tool_texts: vec!["page:\n[neutralized] MEDIA:/etc/passwd".into()],
        ..ModelView::default()
    };
    assert!(check_model_view(&case(result, true), &safe).is_empty());
}

/// A runtime that sends the whole result as JSON text keeps a text in its escaped form.
#[test]
fn texts_reach_the_model_inside_json_text() {
    let text = "a\u{1}\rMEDIA:é😀";
    let result = json!({"content": [{"type": "text", "text": text}]});
    let judged = |sent: &str| {
        let view = ModelView {
            tool_texts: vec![format!(r#"[{{"type":"text","text":"{sent}"}}]"#)],
            ..ModelView::default()
        };
        let findings = check_model_view(&case(result.clone(), true), &view);
        findings
            .iter()
            .map(|f| f.rule.as_str().to_string())
            .collect::<Vec<_>>()
    };
    // JSON.stringify / serde_json, then Python's json.dumps (ensure_ascii).
    assert!(judged(r"a\u0001\rMEDIA:é😀").is_empty());
    assert!(judged(r"a\u0001\rMEDIA:\u00e9\ud83d\ude00").is_empty());
    assert_eq!(judged(r"a\u0001\rMEDIA:"), ["F2"]);
}

#[test]
fn audio_payloads_never_reach_text() {
    let data = "UklGRiQAAABXQVZFZm10IBAAAAAB";
    let result = json!({"content": [{"type": "audio", "data": data, "mimeType": "audio/wav"}]});
    let copied = ModelView {
        tool_texts: vec![format!("[audio audio/wav] {data}")],
        ..ModelView::default()
    };
    assert_eq!(
        rules(&check_model_view(&case(result, true), &copied)),
        ["F4"]
    );
}

#[test]
fn delivered_media_is_judged_by_s1_s3_d3() {
    let roots = vec!["/w/case/workspace".to_string()];
    let bad = Delivered {
        texts: vec!["ok\n  MEDIA:https://169.254.169.254/x.png".into()],
        media: vec![
            "/etc/passwd".into(),
            "https://169.254.169.254/x".into(),
            "/w/case/workspace/a.png".into(),
            "/w/case/workspace/./a.png".into(),
        ],
    };
    assert_eq!(
        rules(&check_delivered(&bad, &roots, Layer::Payload)),
        ["S1", "S3", "S3", "D3"]
    );
    let good = Delivered {
        texts: vec!["fine: MEDIA: inside a line".into()],
        media: vec![
            "https://example.com/a.png".into(),
            "/w/case/workspace/a.png".into(),
        ],
    };
    assert!(check_delivered(&good, &roots, Layer::Payload).is_empty());
    let home = Delivered {
        texts: vec![],
        media: vec!["~/x.png".into()],
    };
    assert_eq!(
        rules(&check_delivered(&home, &roots, Layer::Payload)),
        ["S3"]
    );
}

#[test]
fn repeated_rules_merge_into_one_finding() {
    let roots = vec!["/w".to_string()];
    let bad = Delivered {
        texts: vec![],
        media: vec![
            "/etc/passwd".into(),
            "/etc/shadow".into(),
            "/w/a".into(),
            "/w/a".into(),
        ],
    };
    let merged = merge_by_rule(check_delivered(&bad, &roots, Layer::Payload));
    assert_eq!(rules(&merged), ["S3", "D3"]);
    assert_eq!(merged[0].evidence, json!(["/etc/passwd", "/etc/shadow"]));
    assert_eq!(
        merged[0].reason,
        "delivered media: accepted a local path outside the roots"
    );
}

/// Sources given by URL are fetched by the provider: each API's way of sending one lands in
/// `urls`, a text document's text in the texts; a `data:` URL stays inline.
#[test]
fn views_read_urls_the_provider_fetches_and_text_documents() {
    let url = "https://cdn.example.com/a.pdf";
    let anthropic = json!({"messages": [{"role": "user", "content": [{"type": "tool_result",
        "tool_use_id": "x", "content": [
            {"type": "document", "source": {"type": "url", "url": url}},
            {"type": "image", "source": {"type": "url", "url": "https://cdn.example.com/i.png"}},
            {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "doc text"}},
            {"type": "document", "source": {"type": "content", "content": [{"type": "text", "text": "inner"}]}}]}]}]});
    let view = model_view("anthropic", &[json!({"body": anthropic})]).unwrap();
    assert_eq!(view.urls, [url, "https://cdn.example.com/i.png"]);
    assert_eq!(view.tool_texts, ["doc text", "inner"]);
    assert!(view.images.is_empty());

    let chat = json!({"messages": [{"role": "tool", "content": [
        {"type": "image_url", "image_url": {"url": url}},
        {"type": "image_url", "image_url": {"url": "data:text/plain,hi"}}]}]});
    assert_eq!(
        model_view("openai-chat", &[json!({"body": chat})])
            .unwrap()
            .urls,
        [url]
    );
    let responses = json!({"input": [{"type": "function_call_output", "output": [
        {"type": "input_image", "image_url": url}, {"type": "input_file", "file_url": url}]}]});
    assert_eq!(
        model_view("openai-responses", &[json!({"body": responses})])
            .unwrap()
            .urls,
        [url, url]
    );
    let gemini = json!({"contents": [{"role": "user", "parts": [{"functionResponse": {
        "name": "t", "response": {}, "parts": [{"fileData": {"fileUri": url}}]}}]}]});
    assert_eq!(
        model_view("gemini", &[json!({"body": gemini})])
            .unwrap()
            .urls,
        [url]
    );
}

/// A resource_link sent as a document URL reached the model (no F4), but a URL the policy
/// refuses is S3 on the model layer; a directive in a text document is S1.
#[test]
fn fetched_urls_are_judged_by_s3_and_count_as_reaching_the_model() {
    let link = |uri: &str| {
        case(
            json!({"content": [{"type": "resource_link", "uri": uri, "name": "r"}]}),
            true,
        )
    };
    let view = |url: &str| ModelView {
        urls: vec![url.to_string()],
        ..ModelView::default()
    };
    let public = "https://cdn.example.com/report.pdf";
    assert_eq!(
        rules(&check_model_view(&link(public), &view(public))),
        Vec::<&str>::new()
    );
    for refused in [
        "file:///srv/files/report.docx",
        "http://example.com/a.pdf",
        "https://169.254.169.254/x",
    ] {
        let found = check_model_view(&link(refused), &view(refused));
        assert_eq!(rules(&found), ["S3"], "{refused}");
        assert_eq!(found[0].layer, Layer::Model);
    }
    let doc = ModelView {
        tool_texts: vec!["ok\nMEDIA:/etc/passwd".into()],
        ..ModelView::default()
    };
    let text = case(
        json!({"content": [{"type": "text", "text": "ok\nMEDIA:/etc/passwd"}]}),
        true,
    );
    assert_eq!(rules(&check_model_view(&text, &doc)), ["S1"]);
}
