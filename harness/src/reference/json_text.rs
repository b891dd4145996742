//! JSON rendered as text for a model: compact, bounded, and never carrying a base64 payload
//! (rules C6–C8, F4). The walk stops as soon as the budget is spent, so a huge block costs
//! no more than its first few kilobytes.

use std::fmt::Write as _;

use serde_json_borrow::Value;

pub use crate::excerpt::CUT_MARKER;
use crate::excerpt::floor_boundary;

/// Budget for a block rendered as JSON text (C6), in bytes, marker included.
pub const BLOCK_TEXT_MAX: usize = 8 * 1024;
/// Nesting rendered before a subtree is elided. Inputs nest to any depth (a million levels
/// parse, see `protocol::json`); the walk recurses once per level, so this bounds its stack.
const MAX_DEPTH: usize = 128;
/// Strings at least this long made only of base64 characters are treated as payloads.
const PAYLOAD_MIN_LEN: usize = 256;

struct Full;

struct Writer {
    out: String,
    limit: Option<usize>,
}

impl Writer {
    fn push(&mut self, s: &str) -> Result<(), Full> {
        self.out.push_str(s);
        match self.limit {
            Some(limit) if self.out.len() > limit => Err(Full),
            _ => Ok(()),
        }
    }

    fn string(&mut self, s: &str) -> Result<(), Full> {
        // Escaping only grows a string, so a prefix one byte past the room left is enough to
        // overflow the budget: a huge string is never copied whole.
        let s = match self.limit {
            Some(limit) => &s[..floor_boundary(s, limit.saturating_sub(self.out.len()) + 1)],
            None => s,
        };
        let escaped = serde_json::to_string(s).unwrap_or_default();
        self.push(&escaped)
    }
}

/// Whether a string is binary content in base64 form (or a `data:` URI) rather than text.
pub fn is_payload(key: Option<&str>, s: &str) -> bool {
    if s.is_empty() {
        return false;
    }
    if matches!(key, Some("data" | "blob")) || (s.starts_with("data:") && s.contains(";base64,")) {
        return true;
    }
    s.len() >= PAYLOAD_MIN_LEN
        && s.bytes().all(|b| {
            b.is_ascii_alphanumeric()
                || matches!(b, b'+' | b'/' | b'=' | b'-' | b'_' | b'\r' | b'\n')
        })
}

fn walk(w: &mut Writer, key: Option<&str>, v: &Value<'_>, depth: usize) -> Result<(), Full> {
    match v {
        Value::Null => w.push("null"),
        Value::Bool(b) => w.push(if *b { "true" } else { "false" }),
        // serde_json's shortest round-trip form (`1e-185`), as JSON.stringify writes it; the
        // Display form would spell out every zero.
        Value::Number(n) => w.push(&serde_json::to_string(n).unwrap_or_default()),
        Value::Str(s) if is_payload(key, s) => {
            let mut note = String::new();
            let _ = write!(note, "[{} base64 characters omitted]", s.len());
            w.string(&note)
        }
        Value::Str(s) => w.string(s),
        Value::Array(_) | Value::Object(_) if depth >= MAX_DEPTH => {
            w.push("\"[nesting too deep]\"")
        }
        Value::Array(items) => {
            w.push("[")?;
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    w.push(",")?;
                }
                walk(w, None, item, depth + 1)?;
            }
            w.push("]")
        }
        Value::Object(obj) => walk_object(w, obj.as_vec(), depth),
    }
}

fn walk_object(w: &mut Writer, entries: &[(&str, Value<'_>)], depth: usize) -> Result<(), Full> {
    w.push("{")?;
    for (i, (k, item)) in entries.iter().enumerate() {
        if i > 0 {
            w.push(",")?;
        }
        w.string(k)?;
        w.push(":")?;
        walk(w, Some(k), item, depth + 1)?;
    }
    w.push("}")
}

/// Compact JSON of `v` with payloads replaced by a note; cut to `limit` bytes (marker
/// included) when given.
pub fn render(v: &Value<'_>, limit: Option<usize>) -> String {
    rendered(limit, |w| walk(w, None, v, 0))
}

/// [`render`] of an object given as its entries in source order.
pub fn render_object(entries: &[(&str, Value<'_>)], limit: Option<usize>) -> String {
    rendered(limit, |w| walk_object(w, entries, 0))
}

fn rendered(limit: Option<usize>, write: impl FnOnce(&mut Writer) -> Result<(), Full>) -> String {
    let mut w = Writer {
        out: String::new(),
        limit,
    };
    if write(&mut w).is_ok() {
        return w.out;
    }
    let limit = limit.unwrap_or(usize::MAX);
    let mut out = w.out;
    out.truncate(floor_boundary(&out, limit.saturating_sub(CUT_MARKER.len())));
    out.push_str(CUT_MARKER);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Value<'_> {
        serde_json::from_str(s).expect("test JSON")
    }

    #[test]
    fn compact_in_source_order() {
        let v = parse(r#"{ "type" : "video", "b": [1, 2.5, null, true], "a": "x\ny" }"#);
        assert_eq!(
            render(&v, Some(BLOCK_TEXT_MAX)),
            r#"{"type":"video","b":[1,2.5,null,true],"a":"x\ny"}"#
        );
    }

    #[test]
    fn payloads_are_never_copied() {
        let long = "QUJD".repeat(100);
        let json = format!(
            r#"{{"data":"AAAA","blob":"QQ==","x":"{long}","u":"data:image/png;base64,AAAA","s":"short"}}"#
        );
        let text = render(&parse(&json), None);
        assert!(
            !text.contains("AAAA") && !text.contains("QQ==") && !text.contains(&long[..64]),
            "{text}"
        );
        assert!(text.contains(r#""s":"short""#));
        assert!(text.contains("[4 base64 characters omitted]"));
    }

    #[test]
    fn cut_with_marker_within_budget() {
        let json = format!(r#"{{"t":"{}"}}"#, "é".repeat(10_000));
        let text = render(&parse(&json), Some(BLOCK_TEXT_MAX));
        assert!(
            text.len() <= BLOCK_TEXT_MAX && text.ends_with(CUT_MARKER),
            "{}",
            text.len()
        );
        assert!(text.len() > BLOCK_TEXT_MAX - 16);
    }
}
