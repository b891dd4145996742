//! What the checks read: the model's view of the tool result, one extractor per provider API
//! (the captured request bodies), and what the runtime delivered (its output, read through the
//! adapter's pointers).

use serde_json::Value;

use crate::e2e::adapter::{Adapter, select};

/// What the model was sent for the tool result: its texts and its images (media type, base64).
#[derive(Debug, Default, PartialEq)]
pub struct ModelView {
    /// Texts of the tool result itself (S1 applies to these).
    pub tool_texts: Vec<String>,
    /// Texts the runtime added after the tool result (notes such as "image omitted").
    pub other_texts: Vec<String>,
    pub images: Vec<(String, String)>,
    /// URLs the request asks the provider to fetch: image, document and file sources given by
    /// URL (S3 applies; a resource_link's URI sent this way reached the model).
    pub urls: Vec<String>,
    /// The request's sequence number in the capture.
    pub seq: u64,
}

/// The first captured request that carries a tool result, seen as the model sees it.
pub fn model_view(provider: &str, requests: &[Value]) -> Option<ModelView> {
    requests.iter().find_map(|r| {
        let body = r.get("body")?;
        let list = |key: &str| body.get(key).and_then(Value::as_array);
        let mut view = match provider {
            "openai-chat" => openai_chat_view(list("messages")?)?,
            "anthropic" => anthropic_view(list("messages")?)?,
            "openai-responses" => responses_view(list("input")?)?,
            "gemini" => gemini_view(list("contents")?)?,
            "bedrock" => bedrock_view(list("messages")?)?,
            "ollama" => ollama_view(list("messages")?)?,
            _ => return None,
        };
        view.seq = r.get("seq").and_then(Value::as_u64).unwrap_or(0);
        Some(view)
    })
}

/// Chat Completions: `role: "tool"` messages, and whatever follows them (openclaw moves tool
/// images into a synthetic user message).
fn openai_chat_view(messages: &[Value]) -> Option<ModelView> {
    let first = messages.iter().position(|m| m["role"] == "tool")?;
    let mut view = ModelView::default();
    for m in &messages[first..] {
        let is_tool = m["role"] == "tool";
        let mut texts = Vec::new();
        match &m["content"] {
            Value::String(s) => texts.push(s.clone()),
            Value::Array(parts) => {
                for part in parts {
                    match part["type"].as_str() {
                        Some("text") => texts.extend(part["text"].as_str().map(str::to_string)),
                        Some("image_url") => {
                            let url = part["image_url"]["url"].as_str().unwrap_or_default();
                            view.image_or_url(url);
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
        if is_tool {
            &mut view.tool_texts
        } else {
            &mut view.other_texts
        }
        .extend(texts);
    }
    Some(view)
}

/// `data:<mime>;base64,<data>` → (mime, data).
fn data_url(url: &str) -> Option<(String, String)> {
    let rest = url.strip_prefix("data:")?;
    let (mime, data) = rest.split_once(";base64,")?;
    Some((mime.to_string(), data.to_string()))
}

/// Messages: the `tool_result` blocks of the first user message that has one.
fn anthropic_view(messages: &[Value]) -> Option<ModelView> {
    let first = messages.iter().position(|m| {
        m["content"]
            .as_array()
            .is_some_and(|c| c.iter().any(|b| b["type"] == "tool_result"))
    })?;
    let mut view = ModelView::default();
    for m in &messages[first..] {
        for block in m["content"].as_array().into_iter().flatten() {
            if block["type"] == "tool_result" {
                match &block["content"] {
                    Value::String(s) => view.tool_texts.push(s.clone()),
                    Value::Array(inner) => {
                        for b in inner {
                            anthropic_block(b, true, &mut view);
                        }
                    }
                    _ => {}
                }
            } else {
                anthropic_block(block, false, &mut view);
            }
        }
        if let Some(s) = m["content"].as_str() {
            view.other_texts.push(s.to_string());
        }
    }
    Some(view)
}

/// A text, image or document block: a source given by URL is fetched by the provider, a text
/// document's text (or its content blocks) reaches the model as text.
fn anthropic_block(block: &Value, of_tool: bool, view: &mut ModelView) {
    let source = &block["source"];
    let url = || source["url"].as_str().map(str::to_string);
    match (block["type"].as_str(), source["type"].as_str()) {
        (Some("text"), _) => view
            .texts(of_tool)
            .extend(block["text"].as_str().map(str::to_string)),
        (Some("image" | "document"), Some("url")) => view.urls.extend(url()),
        (Some("image"), _) => view.images.push((
            source["media_type"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            source["data"].as_str().unwrap_or_default().to_string(),
        )),
        (Some("document"), Some("text")) => view
            .texts(of_tool)
            .extend(source["data"].as_str().map(str::to_string)),
        (Some("document"), Some("content")) => {
            for inner in source["content"].as_array().into_iter().flatten() {
                anthropic_block(inner, of_tool, view);
            }
        }
        _ => {}
    }
}

impl ModelView {
    /// An image given as a URL: a base64 `data:` URL is the image, any other `data:` URL is
    /// inline too (not an image the judge can read), any other URL the provider fetches.
    fn image_or_url(&mut self, url: &str) {
        match data_url(url) {
            Some(image) => self.images.push(image),
            None if url.is_empty()
                || url
                    .get(..5)
                    .is_some_and(|s| s.eq_ignore_ascii_case("data:")) => {}
            None => self.urls.push(url.to_string()),
        }
    }

    fn texts(&mut self, of_tool: bool) -> &mut Vec<String> {
        if of_tool {
            &mut self.tool_texts
        } else {
            &mut self.other_texts
        }
    }
}

/// Every string inside `value`, in order: what a model reads of a structured tool result
/// (Gemini's `response` object, Bedrock's `json` block).
fn string_leaves(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(s) => out.push(s.clone()),
        Value::Array(items) => items.iter().for_each(|v| string_leaves(v, out)),
        Value::Object(map) => map.values().for_each(|v| string_leaves(v, out)),
        _ => {}
    }
}

/// Responses: `function_call_output` items (`output` a string or input parts), and the items
/// after them (a runtime may move images into a user message).
fn responses_view(items: &[Value]) -> Option<ModelView> {
    let first = items
        .iter()
        .position(|i| i["type"] == "function_call_output")?;
    let mut view = ModelView::default();
    for item in &items[first..] {
        let of_tool = item["type"] == "function_call_output";
        let content = if of_tool {
            &item["output"]
        } else {
            &item["content"]
        };
        match content {
            Value::String(s) => view.texts(of_tool).push(s.clone()),
            Value::Array(parts) => {
                for part in parts {
                    match part["type"].as_str() {
                        Some("input_text" | "output_text") => {
                            let text = part["text"].as_str().map(str::to_string);
                            view.texts(of_tool).extend(text);
                        }
                        Some("input_image") => {
                            let url = part["image_url"].as_str().unwrap_or_default();
                            view.image_or_url(url);
                        }
                        Some("input_file") => {
                            view.urls
                                .extend(part["file_url"].as_str().map(str::to_string));
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    Some(view)
}

/// generateContent: `functionResponse` parts (every string of `response`, images in its own
/// `parts`), and the parts after them (text, `inlineData`).
fn gemini_view(contents: &[Value]) -> Option<ModelView> {
    let parts_of = |c: &Value| c["parts"].as_array().cloned().unwrap_or_default();
    let first = contents.iter().position(|c| {
        parts_of(c)
            .iter()
            .any(|p| p.get("functionResponse").is_some())
    })?;
    let mut view = ModelView::default();
    // Inline images, and files the provider fetches by URI.
    let inline = |p: &Value, view: &mut ModelView| {
        if let Some(data) = p["inlineData"]["data"].as_str() {
            let mime = p["inlineData"]["mimeType"].as_str().unwrap_or_default();
            view.images.push((mime.to_string(), data.to_string()));
        }
        view.urls
            .extend(p["fileData"]["fileUri"].as_str().map(str::to_string));
    };
    for content in &contents[first..] {
        for part in parts_of(content) {
            if let Some(response) = part.get("functionResponse") {
                string_leaves(&response["response"], &mut view.tool_texts);
                for p in response["parts"].as_array().into_iter().flatten() {
                    inline(p, &mut view);
                }
            } else {
                view.other_texts
                    .extend(part["text"].as_str().map(str::to_string));
                inline(&part, &mut view);
            }
        }
    }
    Some(view)
}

/// Converse: `toolResult` blocks (`text`, every string of a `json` block, `image` with its
/// `format` and `source.bytes`), and the blocks after them.
fn bedrock_view(messages: &[Value]) -> Option<ModelView> {
    let blocks_of = |m: &Value| m["content"].as_array().cloned().unwrap_or_default();
    let first = messages
        .iter()
        .position(|m| blocks_of(m).iter().any(|b| b.get("toolResult").is_some()))?;
    let mut view = ModelView::default();
    for m in &messages[first..] {
        for block in blocks_of(m) {
            match block.get("toolResult") {
                Some(result) => {
                    for inner in result["content"].as_array().into_iter().flatten() {
                        bedrock_block(inner, true, &mut view);
                    }
                }
                None => bedrock_block(&block, false, &mut view),
            }
        }
    }
    Some(view)
}

fn bedrock_block(block: &Value, of_tool: bool, view: &mut ModelView) {
    if let Some(text) = block["text"].as_str() {
        view.texts(of_tool).push(text.to_string());
    }
    if let Some(json) = block.get("json") {
        string_leaves(json, view.texts(of_tool));
    }
    if let Some(bytes) = block["image"]["source"]["bytes"].as_str() {
        let format = block["image"]["format"].as_str().unwrap_or_default();
        view.images
            .push((format!("image/{format}"), bytes.to_string()));
    }
}

/// Ollama chat: `role: "tool"` messages (`content`, bare base64 `images` with no media type),
/// and the messages after them.
fn ollama_view(messages: &[Value]) -> Option<ModelView> {
    let first = messages.iter().position(|m| m["role"] == "tool")?;
    let mut view = ModelView::default();
    for m in &messages[first..] {
        let of_tool = m["role"] == "tool";
        view.texts(of_tool)
            .extend(m["content"].as_str().map(str::to_string));
        for image in m["images"].as_array().into_iter().flatten() {
            view.images
                .extend(image.as_str().map(|d| (String::new(), d.to_string())));
        }
    }
    Some(view)
}

/// What the runtime delivered: one text and its media per delivered item.
#[derive(Debug, Default, PartialEq)]
pub struct Delivered {
    pub texts: Vec<String>,
    pub media: Vec<String>,
}

pub fn delivered(adapter: &Adapter, stdout: &Value) -> Delivered {
    let mut out = Delivered::default();
    for item in select(stdout, &adapter.output.items) {
        out.texts.extend(
            select(item, &adapter.output.text)
                .into_iter()
                .filter_map(|t| t.as_str().map(str::to_string)),
        );
        let media = adapter
            .output
            .media
            .iter()
            .map(|p| select(item, p))
            .find(|found| !found.is_empty())
            .unwrap_or_default();
        out.media.extend(
            media
                .into_iter()
                .map(|m| m.as_str().map_or_else(|| m.to_string(), str::to_string)),
        );
    }
    out
}
