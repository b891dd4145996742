//! Scripted answers: a queue of turns popped by each accepted request, so an agent runtime can be driven
//! through a tool round trip (first a tool call, then a final text).
//!
//! Script JSON: `[turn, ...]` or `{"turns": [turn, ...], "after": turn}`; `after` (default: text "ok")
//! answers once the queue is empty. A turn is one of
//! - `{"text": "Hello"}` — one text answer, streamed as one delta;
//! - `{"chunks": ["MED", "IA: /etc/passwd\n", {"json": "\\ud83d"}, {"json": "\\ude00"}]}` — streamed text,
//!   one delta event per chunk. A `{"json": ...}` chunk is spliced raw into the JSON string literal of its
//!   event, so a surrogate pair (a character beyond the BMP) can be split across two events;
//! - `{"tool_call": {"name": "get_attachment", "arguments": {...}, "id": "call_1"}}` (`id` optional).

use anyhow::{Context, bail};
use serde_json::Value;
use std::collections::VecDeque;
use std::path::Path;

#[derive(Debug, Clone, PartialEq)]
pub enum Turn {
    Text {
        chunks: Vec<Chunk>,
    },
    ToolCall {
        id: Option<String>,
        name: String,
        arguments: Value,
    },
}

/// One streamed delta of text.
#[derive(Debug, Clone, PartialEq)]
pub enum Chunk {
    Text(String),
    /// The body of a JSON string literal, inserted verbatim (escapes such as lone `\ud83d` allowed).
    Json(String),
}

impl Turn {
    pub fn text(s: &str) -> Turn {
        Turn::Text {
            chunks: vec![Chunk::Text(s.to_string())],
        }
    }

    pub fn from_json(v: &Value) -> anyhow::Result<Turn> {
        let obj = v.as_object().context("a turn must be a JSON object")?;
        if let Some(t) = obj.get("text") {
            return Ok(Turn::text(t.as_str().context("`text` must be a string")?));
        }
        if let Some(chunks) = obj.get("chunks") {
            let chunks = chunks.as_array().context("`chunks` must be an array")?;
            let chunks = chunks
                .iter()
                .map(Chunk::from_json)
                .collect::<anyhow::Result<_>>()?;
            return Ok(Turn::Text { chunks });
        }
        if let Some(call) = obj.get("tool_call") {
            let name = call
                .get("name")
                .and_then(Value::as_str)
                .context("`tool_call.name` must be a string")?;
            let arguments = call
                .get("arguments")
                .cloned()
                .unwrap_or_else(|| Value::Object(Default::default()));
            if !arguments.is_object() {
                bail!("`tool_call.arguments` must be a JSON object");
            }
            let id = match call.get("id") {
                None => None,
                Some(id) => Some(
                    id.as_str()
                        .context("`tool_call.id` must be a string")?
                        .to_string(),
                ),
            };
            return Ok(Turn::ToolCall {
                id,
                name: name.to_string(),
                arguments,
            });
        }
        bail!("a turn needs one of `text`, `chunks`, `tool_call`")
    }

    /// One piece per streamed delta (none for a tool call).
    pub(crate) fn pieces(&self) -> Vec<Piece> {
        match self {
            Turn::Text { chunks } => chunks.iter().map(Piece::of).collect(),
            Turn::ToolCall { .. } => Vec::new(),
        }
    }

    /// The whole text as one piece (for non-streamed answers and final "done" events).
    pub(crate) fn whole_text(&self) -> Piece {
        let inner: String = self.pieces().iter().map(Piece::inner).collect();
        Piece(format!("\"{inner}\""))
    }
}

impl Chunk {
    fn from_json(v: &Value) -> anyhow::Result<Chunk> {
        match v {
            Value::String(s) => Ok(Chunk::Text(s.clone())),
            Value::Object(o) => {
                let raw = o
                    .get("json")
                    .and_then(Value::as_str)
                    .context("a chunk object needs a string `json`")?;
                if !is_string_literal_body(raw) {
                    bail!("chunk {raw:?} is not the body of a JSON string literal");
                }
                Ok(Chunk::Json(raw.to_string()))
            }
            _ => bail!("a chunk must be a string or {{\"json\": ...}}"),
        }
    }
}

/// Accepts what may stand between the quotes of a JSON string, lone surrogate escapes included.
fn is_string_literal_body(s: &str) -> bool {
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' | '\u{0}'..='\u{1f}' => return false,
            '\\' => match chars.next() {
                Some('"' | '\\' | '/' | 'b' | 'f' | 'n' | 'r' | 't') => {}
                Some('u') => {
                    if !(0..4).all(|_| chars.next().is_some_and(|h| h.is_ascii_hexdigit())) {
                        return false;
                    }
                }
                _ => return false,
            },
            _ => {}
        }
    }
    true
}

/// A JSON string literal, quotes included, ready to be spliced into a serialized event.
pub(crate) struct Piece(String);

impl Piece {
    /// Stands in a template for the piece; replaced once, after serialization.
    pub const MARK: &'static str = "\u{E000}normfuzz-piece\u{E000}";

    fn of(chunk: &Chunk) -> Piece {
        match chunk {
            Chunk::Text(s) => Piece(Value::String(s.clone()).to_string()),
            Chunk::Json(raw) => Piece(format!("\"{raw}\"")),
        }
    }

    fn inner(&self) -> &str {
        self.0
            .get(1..self.0.len().saturating_sub(1))
            .unwrap_or_default()
    }
}

/// Serializes `template` with the `Piece::MARK` string replaced by `piece`.
pub(crate) fn splice(template: &Value, piece: &Piece) -> String {
    template
        .to_string()
        .replacen(&format!("\"{}\"", Piece::MARK), &piece.0, 1)
}

/// Tool-call arguments as two partial JSON fragments (clients must join them before parsing).
pub(crate) fn split_json(arguments: &Value) -> Vec<String> {
    let s = arguments.to_string();
    let mut mid = s.len() / 2;
    while !s.is_char_boundary(mid) {
        mid -= 1;
    }
    let (a, b) = s.split_at(mid);
    [a, b]
        .into_iter()
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect()
}

/// One Server-Sent Event.
pub(crate) fn sse(event: Option<&str>, data: &str) -> String {
    match event {
        Some(name) => format!("event: {name}\ndata: {data}\n\n"),
        None => format!("data: {data}\n\n"),
    }
}

/// A successful answer body with its content type.
#[derive(Debug, Clone)]
pub struct Reply {
    pub content_type: &'static str,
    pub body: Vec<u8>,
}

impl Reply {
    pub(crate) fn json(body: String) -> Reply {
        Reply {
            content_type: "application/json",
            body: body.into_bytes(),
        }
    }
    pub(crate) fn sse(body: String) -> Reply {
        Reply {
            content_type: "text/event-stream",
            body: body.into_bytes(),
        }
    }
    pub(crate) fn ndjson(body: String) -> Reply {
        Reply {
            content_type: "application/x-ndjson",
            body: body.into_bytes(),
        }
    }
    pub(crate) fn event_stream(body: Vec<u8>) -> Reply {
        Reply {
            content_type: "application/vnd.amazon.eventstream",
            body,
        }
    }
}

/// The queue of turns answered to accepted requests, in order, across all providers.
#[derive(Debug, Clone, PartialEq)]
pub struct Script {
    turns: VecDeque<Turn>,
    after: Turn,
}

impl Default for Script {
    fn default() -> Self {
        Script {
            turns: VecDeque::new(),
            after: Turn::text("ok"),
        }
    }
}

impl Script {
    pub fn new(turns: Vec<Turn>, after: Turn) -> Script {
        Script {
            turns: turns.into(),
            after,
        }
    }

    pub fn from_json(v: &Value) -> anyhow::Result<Script> {
        let (turns, after) = match v {
            Value::Array(turns) => (turns.as_slice(), None),
            Value::Object(o) => (
                o.get("turns")
                    .and_then(Value::as_array)
                    .map_or(&[][..], Vec::as_slice),
                o.get("after"),
            ),
            _ => bail!("a script is an array of turns or {{\"turns\": [...], \"after\": turn}}"),
        };
        let turns = turns
            .iter()
            .enumerate()
            .map(|(i, t)| Turn::from_json(t).with_context(|| format!("turn {i}")))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let after = after
            .map(Turn::from_json)
            .transpose()
            .context("`after`")?
            .unwrap_or_else(|| Turn::text("ok"));
        Ok(Script::new(turns, after))
    }

    pub fn load(path: &Path) -> anyhow::Result<Script> {
        let text =
            std::fs::read(path).with_context(|| format!("reading script {}", path.display()))?;
        let v: Value = serde_json::from_slice(&text)
            .with_context(|| format!("parsing script {}", path.display()))?;
        Script::from_json(&v)
    }

    /// The next answer: the head of the queue, or `after` once it is empty.
    pub fn next_turn(&mut self) -> Turn {
        self.turns.pop_front().unwrap_or_else(|| self.after.clone())
    }

    pub fn remaining(&self) -> usize {
        self.turns.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pieces_splice_raw_escapes_and_join_into_the_whole_text() {
        let turn =
            Turn::from_json(&json!({"chunks": ["a\"", {"json": "\\ud83d"}, {"json": "\\ude00"}]}))
                .unwrap();
        let pieces = turn.pieces();
        assert_eq!(
            splice(&json!({"t": Piece::MARK}), &pieces[1]),
            r#"{"t":"\ud83d"}"#
        );
        let whole: Value =
            serde_json::from_str(&splice(&json!({"t": Piece::MARK}), &turn.whole_text())).unwrap();
        assert_eq!(whole["t"], "a\"\u{1F600}");
    }

    #[test]
    fn raw_chunks_must_be_string_literal_bodies() {
        for bad in ["\"", "\\x", "\\u12", "a\nb"] {
            assert!(
                Turn::from_json(&json!({"chunks": [{"json": bad}]})).is_err(),
                "{bad:?}"
            );
        }
        assert!(Turn::from_json(&json!({"chunks": [{"json": "\\u00e9\\n"}]})).is_ok());
    }

    #[test]
    fn the_shipped_example_scripts_load() {
        for name in ["tool-round-trip.json", "adversarial-stream.json"] {
            let path = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("scripts")
                .join(name);
            assert!(Script::load(&path).unwrap().remaining() > 0, "{name}");
        }
    }

    #[test]
    fn the_queue_pops_in_order_then_repeats_after() {
        let mut s = Script::from_json(&json!({"turns": [{"tool_call": {"name": "t"}}, {"text": "done"}], "after": {"text": "again"}})).unwrap();
        assert!(matches!(s.next_turn(), Turn::ToolCall { .. }));
        assert_eq!(s.next_turn(), Turn::text("done"));
        assert_eq!(s.next_turn(), Turn::text("again"));
        assert_eq!(s.next_turn(), Turn::text("again"));
    }
}
