//! `[embed ...]` shortcodes in a final reply → stored `canvas` blocks (rule D2, seed 000/003;
//! openclaw `extractCanvasShortcodes`, research notes §5).
//!
//! Grammar as openclaw's newest: self-closing `[embed attrs /]` or block `[embed attrs]...[/embed]`
//! (the body is discarded), case-insensitive, leftmost match first and no overlaps; attributes
//! `key="v"` or `key='v'`, keys lower-cased, values trimmed, empty values ignored, the last of a
//! repeated key wins. Only a shortcode with `url=` or `ref=` (and `target`, if any, equal to
//! `assistant_message`) becomes a block; any other stays text verbatim, as in openclaw.
//!
//! Deliberate differences from openclaw main:
//! - `url=` is a fetch target, so S3 applies: it must be a same-origin path (`/...`, not `//`)
//!   or pass the URL policy, and is stored in canonical form. A shortcode whose URL fails is
//!   removed and counted as rejected media (left as text, a renderer downstream would still
//!   render it). openclaw main validates nothing (a PR branch blocks `javascript:`/`data:`).
//! - `title` and `viewId` are neutralized (D1): they are displayed, and they came from the model.
//! - `height` is read with Rust's float syntax (no `0x` hex, unlike JavaScript's `Number`).
//! - Only the fields of seed 000's stored shape are produced (no `className`/`style`).
//! - The surrounding text is kept exactly (openclaw newest; older versions collapsed newlines).

use std::borrow::Cow;
use std::sync::LazyLock;

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use regex::Regex;
use serde_json::{Map, Value};

use crate::reference::media_policy::{MediaReject, judge_remote};
use crate::reference::neutralize::neutralize;

static SHORTCODE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\[embed\s+(?:([^\]]*?)/\]|([^\]]*?[^\]/]|)\](?s:.*?)\[/embed\])")
        .expect("valid regex")
});
static ATTRIBUTE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"([A-Za-z_][A-Za-z0-9_-]*)\s*=\s*(?:"([^"]*)"|'([^']*)')"#).expect("valid regex")
});

/// JavaScript's `encodeURIComponent`: everything but `A-Z a-z 0-9 - _ . ! ~ * ' ( )`.
const URI_COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'!')
    .remove(b'~')
    .remove(b'*')
    .remove(b'\'')
    .remove(b'(')
    .remove(b')');

const MIN_HEIGHT: f64 = 160.0;
const MAX_HEIGHT: f64 = 1200.0;

/// What [`extract`] found.
#[derive(Debug, Default)]
pub struct Embeds<'a> {
    /// The text with rendered (and rejected) shortcodes removed.
    pub text: Cow<'a, str>,
    /// Stored `canvas` blocks, in text order.
    pub blocks: Vec<Value>,
    /// Shortcodes removed because their `url` failed S3.
    pub rejected: usize,
}

/// Extracts the embed shortcodes of `text`.
pub fn extract(text: &str) -> Embeds<'_> {
    let mut found = Embeds {
        text: Cow::Borrowed(text),
        ..Embeds::default()
    };
    if !text
        .as_bytes()
        .windows(6)
        .any(|w| w.eq_ignore_ascii_case(b"[embed"))
    {
        return found;
    }
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    for caps in SHORTCODE.captures_iter(text) {
        let (Some(whole), Some(attrs)) = (caps.get(0), caps.get(1).or_else(|| caps.get(2))) else {
            continue;
        };
        let Some(preview) = preview(&attributes(attrs.as_str())) else {
            continue;
        };
        out.push_str(&text[copied..whole.start()]);
        copied = whole.end();
        match preview {
            Ok(block) => found.blocks.push(block),
            Err(_) => found.rejected += 1,
        }
    }
    if copied > 0 {
        out.push_str(&text[copied..]);
        found.text = Cow::Owned(out);
    }
    found
}

fn attributes(raw: &str) -> Vec<(String, String)> {
    ATTRIBUTE
        .captures_iter(raw)
        .filter_map(|c| {
            let key = c.get(1)?.as_str().to_ascii_lowercase();
            let value = c.get(2).or_else(|| c.get(3))?.as_str().trim();
            (!value.is_empty()).then(|| (key, value.to_string()))
        })
        .collect()
}

/// The stored block for one shortcode; `None` keeps it as text.
fn preview(attrs: &[(String, String)]) -> Option<Result<Value, MediaReject>> {
    let get = |key: &str| {
        attrs
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    };
    if get("target").is_some_and(|t| t != "assistant_message") {
        return None;
    }
    let view_id = get("ref");
    let url = match (get("url"), view_id) {
        (Some(url), _) => match embed_url(url) {
            Ok(url) => url,
            Err(reject) => return Some(Err(reject)),
        },
        (None, Some(id)) => format!(
            "/__openclaw__/canvas/documents/{}/index.html",
            utf8_percent_encode(id, URI_COMPONENT)
        ),
        (None, None) => return None,
    };
    let mut preview = Map::new();
    preview.insert("kind".into(), "canvas".into());
    preview.insert("surface".into(), "assistant_message".into());
    preview.insert("render".into(), "url".into());
    if let Some(id) = view_id {
        preview.insert("viewId".into(), neutralize(id).into_owned().into());
    }
    preview.insert("url".into(), url.into());
    if let Some(title) = get("title") {
        preview.insert("title".into(), neutralize(title).into_owned().into());
    }
    let height = get("height")
        .and_then(|h| h.trim().parse::<f64>().ok())
        .filter(|h| h.is_finite() && *h >= MIN_HEIGHT);
    if let Some(h) = height {
        // In range [160, 1200] after truncation, so the cast is exact.
        preview.insert(
            "preferredHeight".into(),
            (h.trunc().min(MAX_HEIGHT) as u64).into(),
        );
    }
    let mut block = Map::new();
    block.insert("type".into(), "canvas".into());
    block.insert("preview".into(), Value::Object(preview));
    Some(Ok(Value::Object(block)))
}

/// A same-origin path is kept; anything else must pass the URL policy (S3).
fn embed_url(url: &str) -> Result<String, MediaReject> {
    let same_origin = url.starts_with('/')
        && !url.starts_with("//")
        && !url.contains('\\')
        && !url.chars().any(char::is_control);
    if same_origin {
        return Ok(url.to_string());
    }
    judge_remote(url)
}
