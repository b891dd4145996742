//! JSON of any depth, read, written, measured and dropped without recursion.
//!
//! Any JSON value may arrive (rule B1), and serde_json recurses wherever a `Value` nests: its
//! parser (hence its recursion limit of 128), and `Value`'s `Drop`, `Clone` and `Serialize`.
//! A 1,000,000-deep array is 2 MB of text and overflows any thread's stack in each of those. So:
//!
//! - [`parse_value`] parses with serde_json and, only for a document that hits serde_json's
//!   recursion limit, again with an iterative parser (containers on a heap stack, every scalar
//!   still parsed by serde_json, so both accept exactly the same documents);
//! - [`drop_value`] and [`drop_borrowed`] drop a value with an explicit stack;
//! - [`write_value`] writes compact JSON with an explicit stack, and escapes every character that
//!   some line reader takes for a line end (see [`write_str`]);
//! - [`borrow`] builds the reference's borrowed view of a value with an explicit stack;
//! - [`depth`] measures nesting, for code that does recurse (serde's derives, `Clone`).
//!
//! A value from [`parse_value`] may be deeper than any stack: drop it with [`drop_value`].

use std::io::Write as _;

use serde_json::{Map, Number, Value};

/// Serde_json's own recursion limit: a document nested deeper is parsed iteratively.
const SERDE_JSON_DEPTH: usize = 128;

/// Parses one JSON document of any depth. The result may be too deep for `Value`'s recursive
/// `Drop`: drop it with [`drop_value`] (or keep it).
pub fn parse_value(bytes: &[u8]) -> Result<Value, serde_json::Error> {
    match serde_json::from_slice(bytes) {
        Err(e) if is_recursion_limit(&e) => Parser::new(bytes).parse(),
        other => other,
    }
}

/// Whether serde_json gave up on nesting, not on the text.
pub fn is_recursion_limit(e: &serde_json::Error) -> bool {
    e.is_syntax() && e.to_string().starts_with("recursion limit exceeded")
}

/// Drops `value` without recursion, whatever its depth.
pub fn drop_value(value: Value) {
    let mut stack = Vec::new();
    let mut next = Some(value);
    while let Some(value) = next.take().or_else(|| stack.pop()) {
        match value {
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.into_iter().map(|(_, v)| v)),
            _ => {}
        }
    }
}

/// Drops a borrowed view without recursion, whatever its depth.
pub fn drop_borrowed(value: serde_json_borrow::Value<'_>) {
    use serde_json_borrow::Value as B;
    let nested = |v: &B<'_>| matches!(v, B::Array(_) | B::Object(_));
    let mut stack = Vec::new();
    let mut next = Some(value);
    while let Some(value) = next.take().or_else(|| stack.pop()) {
        // Only containers go on the stack; a container of scalars drops in place without
        // recursing (most MCP blocks are one: this halved the cost of many small blocks).
        match value {
            B::Array(items) if items.iter().any(nested) => {
                stack.extend(items.into_iter().filter(nested));
            }
            B::Object(obj) if obj.iter().any(|(_, v)| nested(v)) => {
                stack.extend(obj.into_vec().into_iter().map(|(_, v)| v).filter(nested));
            }
            _ => {}
        }
    }
}

/// Nesting of containers: 0 for a scalar, 1 for `[]` or `[1]`, 2 for `[[]]`.
pub fn depth(value: &Value) -> usize {
    deepest(value, usize::MAX)
}

/// Whether `value` nests deeper than `limit` (stops looking as soon as it does).
pub fn depth_exceeds(value: &Value, limit: usize) -> bool {
    deepest(value, limit) > limit
}

/// The nesting of `value`, or the first nesting found beyond `limit`.
fn deepest(value: &Value, limit: usize) -> usize {
    let mut max = 0;
    let mut stack = Vec::new();
    let mut next = Some((value, 0usize));
    while let Some((value, d)) = next.take().or_else(|| stack.pop()) {
        if !matches!(value, Value::Array(_) | Value::Object(_)) {
            continue;
        }
        max = max.max(d + 1);
        if max > limit {
            break;
        }
        match value {
            Value::Array(items) => stack.extend(items.iter().map(|v| (v, d + 1))),
            Value::Object(map) => stack.extend(map.values().map(|v| (v, d + 1))),
            _ => {}
        }
    }
    max
}

/// The reference's borrowed view of `value` (strings and keys borrowed), built without recursion.
/// Drop it with [`drop_borrowed`] when it may be deep.
pub fn borrow(value: &Value) -> serde_json_borrow::Value<'_> {
    use serde_json_borrow::{ObjectAsVec, Value as B};
    enum Task<'v> {
        Visit(&'v Value),
        Array(usize),
        Object(&'v Map<String, Value>),
    }
    let mut tasks = vec![Task::Visit(value)];
    let mut done: Vec<B<'_>> = Vec::new();
    while let Some(task) = tasks.pop() {
        match task {
            Task::Visit(Value::Null) => done.push(B::Null),
            Task::Visit(Value::Bool(b)) => done.push(B::Bool(*b)),
            Task::Visit(Value::Number(n)) => done.push(B::Number(borrow_number(n))),
            Task::Visit(Value::String(s)) => done.push(B::Str(s.as_str().into())),
            Task::Visit(Value::Array(items)) => {
                tasks.push(Task::Array(items.len()));
                tasks.extend(items.iter().rev().map(Task::Visit));
            }
            Task::Visit(Value::Object(map)) => {
                tasks.push(Task::Object(map));
                tasks.extend(map.values().rev().map(Task::Visit));
            }
            Task::Array(len) => {
                let items = done.split_off(done.len() - len);
                done.push(B::Array(items));
            }
            Task::Object(map) => {
                let values = done.split_off(done.len() - map.len());
                let entries: Vec<(&str, B<'_>)> =
                    map.keys().map(String::as_str).zip(values).collect();
                done.push(B::Object(ObjectAsVec::from(entries)));
            }
        }
    }
    done.pop().unwrap_or(B::Null)
}

fn borrow_number(n: &Number) -> serde_json_borrow::Number {
    // The same preference as serde_json_borrow's own conversion.
    if let Some(i) = n.as_i64() {
        i.into()
    } else if let Some(u) = n.as_u64() {
        u.into()
    } else {
        n.as_f64().unwrap_or_default().into()
    }
}

/// Appends `value` as compact JSON, strings escaped by [`write_str`], without recursion.
pub fn write_value(out: &mut Vec<u8>, value: &Value) {
    enum Frame<'v> {
        Array(std::slice::Iter<'v, Value>, bool),
        Object(serde_json::map::Iter<'v>, bool),
    }
    let mut stack: Vec<Frame<'_>> = Vec::new();
    let mut next = Some(value);
    loop {
        match next.take() {
            Some(Value::Null) => out.extend_from_slice(b"null"),
            Some(Value::Bool(true)) => out.extend_from_slice(b"true"),
            Some(Value::Bool(false)) => out.extend_from_slice(b"false"),
            // serde_json's own number forms (ryu for floats); a Vec cannot fail to take them.
            Some(Value::Number(n)) => {
                let _ = serde_json::to_writer(&mut *out, n);
            }
            Some(Value::String(s)) => write_str(out, s),
            Some(Value::Array(items)) => {
                out.push(b'[');
                stack.push(Frame::Array(items.iter(), true));
            }
            Some(Value::Object(map)) => {
                out.push(b'{');
                stack.push(Frame::Object(map.iter(), true));
            }
            None => {}
        }
        match stack.last_mut() {
            None => return,
            Some(Frame::Array(items, first)) => match items.next() {
                Some(item) => {
                    if !std::mem::take(first) {
                        out.push(b',');
                    }
                    next = Some(item);
                }
                None => {
                    out.push(b']');
                    stack.pop();
                }
            },
            Some(Frame::Object(entries, first)) => match entries.next() {
                Some((key, item)) => {
                    if !std::mem::take(first) {
                        out.push(b',');
                    }
                    write_str(out, key);
                    out.push(b':');
                    next = Some(item);
                }
                None => {
                    out.push(b'}');
                    stack.pop();
                }
            },
        }
    }
}

/// Appends `s` as a JSON string in which every character that any line reader could take for
/// a line end is a `\uXXXX` escape: all control characters (C0, DEL, C1, so U+0085 too) and
/// U+2028/U+2029. Node's `readline` splits at U+2028/U+2029 (and at a lone `\r`), Python's
/// `str.splitlines` at U+0085 and more; escaped, a request is one line to every one of them.
pub fn write_str(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut start = 0;
    let mut i = 0;
    loop {
        i = crate::json_scan::next_line_special(bytes, i);
        let Some(&b) = bytes.get(i) else {
            break;
        };
        let (code, len) = match b {
            b'"' | b'\\' => {
                out.extend_from_slice(&bytes[start..i]);
                out.extend_from_slice(&[b'\\', b]);
                i += 1;
                start = i;
                continue;
            }
            0xC2 => match bytes.get(i + 1) {
                Some(&c1 @ 0x80..=0x9F) => (u32::from(c1), 2),
                _ => {
                    i += 1;
                    continue;
                }
            },
            0xE2 => match (bytes.get(i + 1), bytes.get(i + 2)) {
                (Some(0x80), Some(&last @ (0xA8 | 0xA9))) => (0x2028 + u32::from(last - 0xA8), 3),
                _ => {
                    i += 1;
                    continue;
                }
            },
            control => (u32::from(control), 1),
        };
        out.extend_from_slice(&bytes[start..i]);
        let _ = write!(out, "\\u{code:04x}");
        i += len;
        start = i;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// The iterative parser behind [`parse_value`] for documents nested deeper than serde_json
/// goes. Containers live on a heap stack; each string and number is handed to serde_json, so
/// escapes, UTF-8, surrogates and number forms are judged exactly as serde_json judges them.
struct Parser<'a> {
    bytes: &'a [u8],
    pos: usize,
    /// Open containers; an error or panic drops them (and the deep values inside) iteratively.
    open: Open,
}

enum Frame {
    Array(Vec<Value>),
    /// The entries so far (a map is made at the end, of the right size) and the key whose
    /// value is being parsed.
    Object(Vec<(String, Value)>, String),
}

struct Open(Vec<Frame>);

impl Drop for Open {
    fn drop(&mut self) {
        for frame in self.0.drain(..) {
            match frame {
                Frame::Array(items) => drop_value(Value::Array(items)),
                Frame::Object(entries, _) => {
                    drop_value(Value::Array(entries.into_iter().map(|(_, v)| v).collect()))
                }
            }
        }
    }
}

impl<'a> Parser<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Self {
            bytes,
            pos: 0,
            open: Open(Vec::with_capacity(SERDE_JSON_DEPTH * 2)),
        }
    }

    fn parse(mut self) -> Result<Value, serde_json::Error> {
        loop {
            self.skip_whitespace();
            let mut value = match self.peek() {
                Some(b'[') => {
                    self.pos += 1;
                    self.skip_whitespace();
                    if self.peek() == Some(b']') {
                        self.pos += 1;
                        Value::Array(Vec::new())
                    } else {
                        self.open.0.push(Frame::Array(Vec::new()));
                        continue;
                    }
                }
                Some(b'{') => {
                    self.pos += 1;
                    self.skip_whitespace();
                    if self.peek() == Some(b'}') {
                        self.pos += 1;
                        Value::Object(Map::new())
                    } else {
                        let key = self.key()?;
                        self.open.0.push(Frame::Object(Vec::new(), key));
                        continue;
                    }
                }
                Some(_) => self.scalar()?,
                None => return Err(self.error("EOF while parsing a value")),
            };
            // Hand the finished value to its container, closing every container it finishes.
            loop {
                let Some(frame) = self.open.0.pop() else {
                    self.skip_whitespace();
                    if self.pos < self.bytes.len() {
                        drop_value(value);
                        return Err(self.error("trailing characters"));
                    }
                    return Ok(value);
                };
                self.skip_whitespace();
                let next = self.peek();
                self.pos += usize::from(next.is_some());
                match (frame, next) {
                    (Frame::Array(mut items), Some(b',')) => {
                        items.push(value);
                        self.open.0.push(Frame::Array(items));
                        break;
                    }
                    (Frame::Array(mut items), Some(b']')) => {
                        items.push(value);
                        // A chain of one-element arrays would otherwise hold 4 slots a level.
                        items.shrink_to_fit();
                        value = Value::Array(items);
                    }
                    (Frame::Object(mut entries, key), Some(b',')) => {
                        entries.push((key, value));
                        self.skip_whitespace();
                        let key = self.key();
                        // The entries go back first, so an error drops them iteratively.
                        self.open.0.push(Frame::Object(entries, String::new()));
                        let key = key?;
                        if let Some(Frame::Object(_, slot)) = self.open.0.last_mut() {
                            *slot = key;
                        }
                        break;
                    }
                    (Frame::Object(mut entries, key), Some(b'}')) => {
                        entries.push((key, value));
                        let mut map = Map::with_capacity(entries.len());
                        for (key, value) in entries {
                            // A repeated key keeps its first place and its last value.
                            if let Some(old) = map.insert(key, value) {
                                drop_value(old);
                            }
                        }
                        value = Value::Object(map);
                    }
                    (frame, _) => {
                        let expected = match (&frame, next) {
                            (Frame::Array(_), None) => "EOF while parsing a list",
                            (Frame::Object(..), None) => "EOF while parsing an object",
                            (Frame::Array(_), _) => "expected `,` or `]`",
                            (Frame::Object(..), _) => "expected `,` or `}`",
                        };
                        self.open.0.push(frame);
                        drop_value(value);
                        self.pos -= usize::from(next.is_some());
                        return Err(self.error(expected));
                    }
                }
            }
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn skip_whitespace(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\n' | b'\t' | b'\r')) {
            self.pos += 1;
        }
    }

    /// An object key and its colon.
    fn key(&mut self) -> Result<String, serde_json::Error> {
        if self.peek() != Some(b'"') {
            return Err(self.error("key must be a string"));
        }
        let key = self.string()?;
        self.skip_whitespace();
        if self.peek() != Some(b':') {
            return Err(self.error("expected `:`"));
        }
        self.pos += 1;
        Ok(key)
    }

    fn string(&mut self) -> Result<String, serde_json::Error> {
        let start = self.pos;
        let mut i = start + 1;
        loop {
            match memchr::memchr2(b'"', b'\\', &self.bytes[i.min(self.bytes.len())..]) {
                Some(at) if self.bytes[i + at] == b'\\' => i += at + 2,
                Some(at) => {
                    i += at + 1;
                    break;
                }
                None => {
                    self.pos = self.bytes.len();
                    return Err(self.error("EOF while parsing a string"));
                }
            }
        }
        self.pos = i;
        serde_json::from_slice(&self.bytes[start..i]).map_err(|e| self.inner_error(start, &e))
    }

    fn scalar(&mut self) -> Result<Value, serde_json::Error> {
        let start = self.pos;
        let rest = &self.bytes[start..];
        for (literal, value) in [
            (&b"null"[..], Value::Null),
            (b"true", Value::Bool(true)),
            (b"false", Value::Bool(false)),
        ] {
            if rest.starts_with(literal) {
                self.pos += literal.len();
                return Ok(value);
            }
        }
        match rest[0] {
            b'"' => self.string().map(Value::String),
            b'-' | b'0'..=b'9' => {
                let len = rest
                    .iter()
                    .position(|b| !matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
                    .unwrap_or(rest.len());
                self.pos += len;
                serde_json::from_slice::<Number>(&rest[..len])
                    .map(Value::Number)
                    .map_err(|e| self.inner_error(start, &e))
            }
            _ => Err(self.error("expected value")),
        }
    }

    fn error(&self, message: &str) -> serde_json::Error {
        self.error_at(self.pos, message)
    }

    /// serde_json's verdict on one scalar, placed in the whole document.
    fn inner_error(&self, start: usize, e: &serde_json::Error) -> serde_json::Error {
        let message = e.to_string();
        let message = message.split(" at line ").next().unwrap_or(&message);
        self.error_at(start + e.column().saturating_sub(1), message)
    }

    fn error_at(&self, pos: usize, message: &str) -> serde_json::Error {
        let before = &self.bytes[..pos.min(self.bytes.len())];
        let line = 1 + memchr::memchr_iter(b'\n', before).count();
        let column = before.len() - memchr::memrchr(b'\n', before).map_or(0, |i| i + 1);
        serde::de::Error::custom(format!("{message} at line {line} column {column}"))
    }
}

/// `[[[...]]]` or `{"k":{"k":...}}`, `n` containers deep around `null`, as text (for tests).
#[cfg(test)]
pub(crate) fn deep_text(n: usize, object: bool) -> String {
    let (open, close) = if object { ("{\"k\":", "}") } else { ("[", "]") };
    let mut text = String::with_capacity(n * (open.len() + close.len()) + 4);
    for _ in 0..n {
        text.push_str(open);
    }
    text.push_str("null");
    for _ in 0..n {
        text.push_str(close);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn written(value: &Value) -> String {
        let mut out = Vec::new();
        write_value(&mut out, value);
        String::from_utf8(out).expect("UTF-8")
    }

    #[test]
    fn million_deep_documents_parse_write_measure_borrow_and_drop() {
        for object in [false, true] {
            let text = deep_text(1_000_000, object);
            let value = parse_value(text.as_bytes()).expect("deep JSON parses");
            assert_eq!(depth(&value), 1_000_000);
            assert_eq!(written(&value), text);
            let view = borrow(&value);
            assert_eq!(view.as_object().is_some(), object);
            drop_borrowed(view);
            drop_value(value);
        }
    }

    #[test]
    fn deep_parse_accepts_and_rejects_what_serde_json_does() {
        let n = SERDE_JSON_DEPTH + 10;
        let wrap = |inner: &str| format!("{}{inner}{}", "[".repeat(n), "]".repeat(n));
        for doc in [
            r#"{"a":[1,-2,3.5e-7,1e300,18446744073709551615,-9223372036854775808],"b":"\u00e9\ud83d\ude00\n","a":{}}"#,
            r#" { "k" : [ true , false , null , "" , { } , [ ] ] } "#,
            r#"[0.1,-0,1E2,123456789012345678901234567890]"#,
        ] {
            let shallow: Value = serde_json::from_str(doc).expect("valid");
            assert_eq!(
                Parser::new(doc.as_bytes()).parse().expect(doc),
                shallow,
                "{doc}"
            );
            let text = wrap(doc);
            let deep = parse_value(text.as_bytes()).expect("deep valid");
            assert!(written(&deep).contains(&written(&shallow)));
            drop_value(deep);
        }
        for bad in [
            "[1,]",
            "[1 2]",
            r#"{"a" 1}"#,
            r#"{"a":1,}"#,
            r#"{1:2}"#,
            r#"["\ud800"]"#,
            "[\"a\u{1}\"]",
            "[01]",
            "[1e400]",
            "[tru]",
            "[nulll]",
            "[\"abc",
            "[1] x",
            "[-]",
            "[1",
            r#"{"a":1"#,
        ] {
            assert!(serde_json::from_str::<Value>(bad).is_err(), "{bad}");
            assert!(Parser::new(bad.as_bytes()).parse().is_err(), "{bad}");
            assert!(parse_value(wrap(bad).as_bytes()).is_err(), "{bad}");
        }
        for bad in ["", " ", "[[]"] {
            assert!(Parser::new(bad.as_bytes()).parse().is_err(), "{bad:?}");
        }
        let err = parse_value(wrap("[1,]").as_bytes())
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 1 column"), "{err}");
        assert!(!err.contains("recursion"), "{err}");
    }

    #[test]
    fn a_failed_deep_parse_drops_what_it_built_without_recursion() {
        // The first element is complete and a million deep when the syntax error is found.
        let mut text = String::from("[");
        text.push_str(&deep_text(1_000_000, false));
        text.push_str(",}");
        assert!(parse_value(text.as_bytes()).is_err());
        let mut text = String::from("{\"a\":");
        text.push_str(&deep_text(1_000_000, true));
        text.push_str(",\"a\":1,");
        assert!(parse_value(text.as_bytes()).is_err());
    }

    #[test]
    fn duplicate_keys_keep_the_first_position_and_the_last_value() {
        let doc = r#"{"a":1,"b":2,"a":[3]}"#;
        let deep = Parser::new(doc.as_bytes()).parse().unwrap();
        assert_eq!(deep, serde_json::from_str::<Value>(doc).unwrap());
        assert_eq!(written(&deep), r#"{"a":[3],"b":2}"#);
    }

    #[test]
    fn strings_escape_every_line_breaker_and_round_trip() {
        let mut all = String::new();
        for c in (0..=0x3000u32).chain([0xFEFF, 0xFFFF, 0x1F600, 0x10FFFF]) {
            if let Some(c) = char::from_u32(c) {
                all.push(c);
            }
        }
        let value = json!({ "s": all, all.clone(): [all.clone()] });
        let text = written(&value);
        assert!(!text.bytes().any(|b| b < 0x20 || b == 0x7F));
        assert!(!text.contains(['\u{85}', '\u{2028}', '\u{2029}']));
        assert!(!text.chars().any(|c| ('\u{80}'..='\u{9F}').contains(&c)));
        for escape in [
            "\\u0000", "\\u000a", "\\u001f", "\\u007f", "\\u0085", "\\u009f", "\\u2028", "\\u2029",
        ] {
            assert!(text.contains(escape), "{escape}");
        }
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), value);
        assert_eq!(
            written(&json!([
                1.5e-185,
                -0.0,
                18446744073709551615u64,
                -3,
                "\"\\/"
            ])),
            r#"[1.5e-185,-0.0,18446744073709551615,-3,"\"\\/"]"#
        );
    }
}
