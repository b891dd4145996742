//! What the checks read: the model's view of the tool result, one extractor per provider API
//! (the captured request bodies), and what the runtime delivered (its output, read through the
//! adapter's pointers).

use serde_json::Value;

use crate::runner::e2e::adapter::{Adapter, select};

/// What the model was sent for the tool result: its texts and its images (media type, base64).
#[derive(Debug, Default, PartialEq)]
pub struct ModelView {
    /// Texts of the tool result itself (S1 applies to these).
    pub tool_texts: Vec<String>,
    /// Texts the runtime added after the tool result (notes such as "image omitted").
    pub other_texts: Vec<String>,
    pub images: Vec<(String, String)>,
    /// The request's sequence number in the capture.
    pub seq: u64,
}

/// The first captured request that carries a tool result, seen as the model sees it.
pub fn model_view(provider: &str, requests: &[Value]) -> Option<ModelView> {
    requests.iter().find_map(|r| {
        let messages = r.get("body")?.get("messages")?.as_array()?;
        let mut view = match provider {
            "openai-chat" => openai_chat_view(messages)?,
            "anthropic" => anthropic_view(messages)?,
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
                            if let Some(image) = data_url(url) {
                                view.images.push(image);
                            }
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
                            anthropic_block(b, &mut view.tool_texts, &mut view.images);
                        }
                    }
                    _ => {}
                }
            } else {
                anthropic_block(block, &mut view.other_texts, &mut view.images);
            }
        }
        if let Some(s) = m["content"].as_str() {
            view.other_texts.push(s.to_string());
        }
    }
    Some(view)
}

fn anthropic_block(block: &Value, texts: &mut Vec<String>, images: &mut Vec<(String, String)>) {
    match block["type"].as_str() {
        Some("text") => texts.extend(block["text"].as_str().map(str::to_string)),
        Some("image") => images.push((
            block["source"]["media_type"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            block["source"]["data"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        )),
        _ => {}
    }
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
