//! A message's text and a caption as the Bot API server checks them: the `parse_mode`, the
//! bounds before and after parsing, TDLib's trimming.

use super::html;
use super::params::Params;
use super::refusal::{Refusal, bad};

/// `message_text_length_max` and `message_caption_length_max` for bots.
pub(super) const MESSAGE_MAX: usize = 4096;

const CAPTION_MAX: usize = 1024;

/// The Bot API server's bound on a text before parsing (`get_formatted_text`: 1 << 15 bytes).
const RAW_TEXT_MAX: usize = 1 << 15;

/// The `parse_mode`-parsed `text` of a sendMessage or edit (the Bot API server's checks).
pub(super) fn message_text(p: &Params) -> Result<String, Refusal> {
    let text = p.str("text");
    if text.is_empty() {
        return Err(bad("message text is empty"));
    }
    parsed(&text, &p.str("parse_mode"))
}

/// `text` after its `parse_mode`: the Bot API server's checks (`get_formatted_text`).
fn parsed(text: &str, parse_mode: &str) -> Result<String, Refusal> {
    if text.len() > RAW_TEXT_MAX {
        return Err(bad("text is too long"));
    }
    match parse_mode.to_ascii_lowercase().as_str() {
        "" | "none" => Ok(text.to_string()),
        "html" => html::parse(text).map_err(|e| bad(format!("can't parse entities: {e}"))),
        // Not modeled: openclaw sends HTML. Accepted as sent.
        "markdown" | "markdownv2" => Ok(text.to_string()),
        _ => Err(bad("unsupported parse_mode")),
    }
}

/// TDLib's checks of a parsed text: trimmed, non-empty unless `allow_empty`, at most `max` code
/// points (`utf8_length`). Trimming is [INF]: TDLib's own whitespace set is modeled by Unicode's.
pub(super) fn finish_text(
    text: &str,
    max: usize,
    too_long: &str,
    allow_empty: bool,
) -> Result<String, Refusal> {
    let text = text.trim();
    if text.is_empty() && !allow_empty {
        return Err(bad("text must be non-empty"));
    }
    if text.chars().count() > max {
        return Err(bad(too_long));
    }
    Ok(text.to_string())
}

/// A caption: parsed, trimmed, bounded; `None` when absent or empty.
pub(super) fn caption(raw: Option<String>, parse_mode: &str) -> Result<Option<String>, Refusal> {
    let Some(raw) = raw.filter(|c| !c.is_empty()) else {
        return Ok(None);
    };
    let text = parsed(&raw, parse_mode)?;
    let text = finish_text(&text, CAPTION_MAX, "message caption is too long", true)?;
    Ok(Some(text).filter(|t| !t.is_empty()))
}
