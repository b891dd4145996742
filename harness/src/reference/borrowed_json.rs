//! JSON text to and from the borrowed values the coercion works on: a parser giving exactly
//! what `serde_json::from_str::<serde_json_borrow::Value>` gives (or, for a tool result, the
//! same with its content blocks handed over one at a time as they are read), and a string
//! escaper giving exactly what `serde_json::to_writer` writes.
//!
//! Both are written by hand because they are the coercion's hot path and serde_json looks at
//! every byte of a string: its scan was half the time of coercing an image and a quarter of
//! coercing text. Here one scan ([`next_json_special`]) finds the next quote, backslash or
//! control 32 bytes a step, for reading and writing alike. The parser does not try to be a
//! whole JSON parser: on anything it does not take (an error of any kind, an escaped key, a
//! lone surrogate, nesting deeper than [`MAX_DEPTH`]) it answers `None` and serde_json
//! decides, and numbers are handed to serde_json one by one, so its answers can only be
//! serde_json's (a property test and the `coerce_bytes` fuzz target compare the two).

use std::borrow::Cow;

use serde_json_borrow::{ObjectAsVec, Value};

use crate::json_scan::next_json_special;

/// Nesting this parser takes; deeper documents go to serde_json (which stops at 128 and the
/// coercion's iterative path), so the recursion here stays shallow.
const MAX_DEPTH: usize = 100;

/// `input` as serde_json_borrow parses it, or `None` where serde_json is left to decide.
pub fn parse(input: &str) -> Option<Value<'_>> {
    match run(input, None)? {
        Streamed::Whole(value) | Streamed::Content(value) => Some(value),
        Streamed::TwoContents => None,
    }
}

/// An element of a result's `content` array, as [`parse_streaming_content`] hands it over.
pub enum ContentItem<'v, 'a> {
    /// An object block, as its entries in source order (duplicate keys kept); they are dropped
    /// after the call, so what is taken from them is not copied.
    Object(&'v mut [(&'a str, Value<'a>)]),
    /// Any other value.
    Other(&'v Value<'a>),
}

/// What [`parse_streaming_content`] read.
pub enum Streamed<'a> {
    /// The document; nothing was handed over.
    Whole(Value<'a>),
    /// The document with an empty array for its `content`, whose elements were handed over.
    Content(Value<'a>),
    /// A document with two `content` keys: which one counts is left to a [`parse`] of the
    /// whole, and what was handed over is to be discarded.
    TwoContents,
}

/// [`parse`], except that when the document is an object whose `content` holds an array, each
/// element of that array goes to `content` as soon as it is read and is dropped before the next
/// is read. Many small blocks then cost no allocation each and no array of them.
pub fn parse_streaming_content<'a>(
    input: &'a str,
    content: &mut dyn FnMut(ContentItem<'_, 'a>),
) -> Option<Streamed<'a>> {
    run(input, Some(content))
}

fn run<'a>(
    input: &'a str,
    content: Option<&mut dyn FnMut(ContentItem<'_, 'a>)>,
) -> Option<Streamed<'a>> {
    let mut parser = Parser {
        text: input,
        at: 0,
        content,
        contents: 0,
        streamed: false,
        scratch: String::new(),
    };
    let mut top = Vec::with_capacity(1);
    if parser.value(0, &mut top, |value| value).is_none() {
        // The parse stops at a second `content` key when it streams.
        return (parser.contents > 1).then_some(Streamed::TwoContents);
    }
    parser.skip_blanks();
    let value = top.pop().filter(|_| parser.at == input.len())?;
    Some(if parser.streamed {
        Streamed::Content(value)
    } else {
        Streamed::Whole(value)
    })
}

struct Parser<'a, 's> {
    text: &'a str,
    at: usize,
    /// Where the top-level `content` array's elements go, when they are streamed.
    content: Option<&'s mut dyn FnMut(ContentItem<'_, 'a>)>,
    /// Top-level `content` keys read while streaming.
    contents: usize,
    streamed: bool,
    /// Where escaped strings are decoded, reused: each then gets one allocation of its exact
    /// length instead of a vector grown in steps (reallocation was a tenth of coercing text
    /// with a newline every line).
    scratch: String,
}

impl<'a> Parser<'a, '_> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    /// Consumes `byte` if it is next.
    fn eat(&mut self, byte: u8) -> bool {
        let next = self.peek() == Some(byte);
        self.at += usize::from(next);
        next
    }

    /// JSON's four blanks, as serde_json skips them.
    fn skip_blanks(&mut self) {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.peek() {
            self.at += 1;
        }
    }

    /// Reads one value into `out` as `wrap` makes it an element (an array item or an object
    /// entry). Each value is built in the vector that keeps it instead of being returned
    /// through every level: moving values that were just written was a quarter of the time of
    /// many small blocks.
    fn value<T>(
        &mut self,
        depth: usize,
        out: &mut Vec<T>,
        wrap: impl FnOnce(Value<'a>) -> T,
    ) -> Option<()> {
        self.skip_blanks();
        let value = match self.peek()? {
            b'"' => {
                self.at += 1;
                match self.plain_string() {
                    Some(text) => Value::Str(Cow::Borrowed(text)),
                    None => Value::Str(Cow::Owned(self.escaped_string()?)),
                }
            }
            b'{' if depth < MAX_DEPTH => Value::Object(self.object(depth)?),
            b'[' if depth < MAX_DEPTH => Value::Array(self.array(depth)?),
            b't' => self.literal("true", Value::Bool(true))?,
            b'f' => self.literal("false", Value::Bool(false))?,
            b'n' => self.literal("null", Value::Null)?,
            b'-' | b'0'..=b'9' => self.number()?,
            _ => return None,
        };
        out.push(wrap(value));
        Some(())
    }

    fn literal(&mut self, word: &str, value: Value<'a>) -> Option<Value<'a>> {
        self.text[self.at..].starts_with(word).then(|| {
            self.at += word.len();
            value
        })
    }

    /// A number's extent by JSON's grammar, converted by serde_json itself: the same integer
    /// or float, rounded the same way, or the same refusal (out of range).
    fn number(&mut self) -> Option<Value<'a>> {
        let bytes = self.text.as_bytes();
        let start = self.at;
        let digits = |at: &mut usize| {
            let from = *at;
            while bytes.get(*at).is_some_and(u8::is_ascii_digit) {
                *at += 1;
            }
            *at > from
        };
        let mut at = start + usize::from(bytes[start] == b'-');
        match bytes.get(at)? {
            b'0' => at += 1,
            b'1'..=b'9' => _ = digits(&mut at),
            _ => return None,
        }
        if bytes.get(at) == Some(&b'.') {
            at += 1;
            digits(&mut at).then_some(())?;
        }
        if let Some(b'e' | b'E') = bytes.get(at) {
            at += 1;
            at += usize::from(matches!(bytes.get(at), Some(b'+' | b'-')));
            digits(&mut at).then_some(())?;
        }
        self.at = at;
        serde_json::from_str(&self.text[start..at]).ok()
    }

    /// The rest of a string whose opening quote is consumed, if it has no escape (borrowed,
    /// and returned in registers: a `Cow` returned through memory and read back at once stalled
    /// the load). `None` leaves the position where it was.
    fn plain_string(&mut self) -> Option<&'a str> {
        let start = self.at;
        let end = next_json_special(self.text.as_bytes(), start);
        (self.text.as_bytes().get(end) == Some(&b'"')).then(|| {
            self.at = end + 1;
            &self.text[start..end]
        })
    }

    /// The rest of a string whose opening quote is consumed, escapes decoded.
    #[inline(never)]
    fn escaped_string(&mut self) -> Option<String> {
        let (text, bytes) = (self.text, self.text.as_bytes());
        let mut from = self.at;
        let mut at = next_json_special(bytes, from);
        let owned = &mut self.scratch;
        owned.clear();
        loop {
            owned.push_str(&text[from..at]);
            match *bytes.get(at)? {
                b'"' => {
                    self.at = at + 1;
                    return Some(owned.as_str().to_owned());
                }
                b'\\' => {
                    let (decoded, len) = unescape(&bytes[at + 1..])?;
                    owned.push(decoded);
                    at += 1 + len;
                }
                // A raw control character, which serde_json refuses.
                _ => return None,
            }
            from = at;
            at = next_json_special(bytes, at);
        }
    }

    /// The elements of an array or the entries of an object, its opening bracket next: `element`
    /// reads each one, and they are separated by commas and closed by `close`.
    fn list(&mut self, close: u8, mut element: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        self.at += 1;
        self.skip_blanks();
        if self.eat(close) {
            return Some(());
        }
        loop {
            element(self)?;
            self.skip_blanks();
            if !self.eat(b',') {
                break;
            }
        }
        self.eat(close).then_some(())
    }

    fn object(&mut self, depth: usize) -> Option<ObjectAsVec<'a>> {
        let mut entries = Vec::new();
        self.object_entries(depth, &mut entries)?;
        Some(ObjectAsVec::from(entries))
    }

    /// Reads an object, its `{` next, into `entries`.
    fn object_entries(
        &mut self,
        depth: usize,
        entries: &mut Vec<(&'a str, Value<'a>)>,
    ) -> Option<()> {
        self.list(b'}', |parser| {
            parser.skip_blanks();
            if !parser.eat(b'"') {
                return None;
            }
            // serde_json_borrow's objects are built from borrowed keys only.
            let key = parser.plain_string()?;
            parser.skip_blanks();
            if !parser.eat(b':') {
                return None;
            }
            if depth == 0 && key == "content" && parser.content.is_some() {
                parser.contents += 1;
                if parser.contents > 1 {
                    return None;
                }
                parser.skip_blanks();
                if parser.peek() == Some(b'[') {
                    parser.stream_content(depth + 1)?;
                    parser.streamed = true;
                    entries.push((key, Value::Array(Vec::new())));
                    return Some(());
                }
            }
            parser.value(depth + 1, entries, |value| (key, value))
        })
    }

    /// The top-level `content` array (at `depth`, its `[` next), each element handed over as
    /// it is read; one vector of entries serves every object block.
    fn stream_content(&mut self, depth: usize) -> Option<()> {
        let (mut entries, mut other) = (Vec::new(), Vec::with_capacity(1));
        self.list(b']', |parser| {
            parser.skip_blanks();
            if parser.peek() == Some(b'{') && depth + 1 < MAX_DEPTH {
                parser.object_entries(depth + 1, &mut entries)?;
                if let Some(content) = parser.content.as_mut() {
                    content(ContentItem::Object(&mut entries));
                }
                entries.clear();
            } else {
                parser.value(depth + 1, &mut other, |value| value)?;
                if let (Some(content), Some(item)) = (parser.content.as_mut(), other.first()) {
                    content(ContentItem::Other(item));
                }
                other.clear();
            }
            Some(())
        })
    }

    fn array(&mut self, depth: usize) -> Option<Vec<Value<'a>>> {
        let mut items = Vec::new();
        self.list(b']', |parser| {
            parser.value(depth + 1, &mut items, |value| value)
        })?;
        Some(items)
    }
}

/// The character an escape stands for and the bytes it takes after its backslash; `None` for
/// an invalid escape or a lone surrogate (serde_json refuses both).
fn unescape(escape: &[u8]) -> Option<(char, usize)> {
    let simple = match *escape.first()? {
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        b'u' => {
            let unit = hex4(escape.get(1..5)?)?;
            if !(0xD800..0xDC00).contains(&unit) {
                return char::from_u32(unit).map(|c| (c, 5));
            }
            let low = match escape.get(5..7) {
                Some(b"\\u") => hex4(escape.get(7..11)?)?,
                _ => return None,
            };
            if !(0xDC00..0xE000).contains(&low) {
                return None;
            }
            let c = char::from_u32(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))?;
            return Some((c, 11));
        }
        _ => return None,
    };
    Some((simple, 1))
}

fn hex4(digits: &[u8]) -> Option<u32> {
    digits
        .iter()
        .try_fold(0, |acc, &d| Some(acc * 16 + char::from(d).to_digit(16)?))
}

/// `s` as a JSON string, byte-identical to `serde_json::to_writer` (short escapes for `\b \t
/// \n \f \r`, `\u00XX` for other C0 controls, `\"` and `\\`). serde_json looks at every
/// byte, which made escaping the largest cost of coercing text; [`next_json_special`] looks at 32
/// bytes a step.
pub fn write_escaped(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut start = 0;
    let mut i = next_json_special(bytes, 0);
    while let Some(&b) = bytes.get(i) {
        out.extend_from_slice(&bytes[start..i]);
        let short = match b {
            b'"' => b'"',
            b'\\' => b'\\',
            0x08 => b'b',
            b'\t' => b't',
            b'\n' => b'n',
            0x0C => b'f',
            b'\r' => b'r',
            _ => 0,
        };
        if short == 0 {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            let (hi, lo) = (HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]);
            out.extend_from_slice(&[b'\\', b'u', b'0', b'0', hi, lo]);
        } else {
            out.extend_from_slice(&[b'\\', short]);
        }
        start = i + 1;
        i = next_json_special(bytes, start);
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_matches_serde_json() {
        let mut cases: Vec<String> = (0u8..0x80).map(|b| char::from(b).to_string()).collect();
        cases.extend(
            [
                "",
                "plain text of some length",
                "é“quoted”\u{2028}\u{85}\u{7F}",
            ]
            .map(String::from),
        );
        for c in (0u8..0x80).map(char::from) {
            for pad in 0..70 {
                cases.push(format!(
                    "{}{c}{}\"tail\\",
                    "x".repeat(pad),
                    "é".repeat(pad % 3)
                ));
            }
        }
        for case in cases {
            let mut ours = Vec::new();
            write_escaped(&mut ours, &case);
            assert_eq!(ours, serde_json::to_vec(&case).unwrap(), "{case:?}");
        }
    }

    proptest::proptest! {
        #[test]
        fn escaping_matches_serde_json_on_any_string(s in "(?s).{0,200}") {
            let mut ours = Vec::new();
            write_escaped(&mut ours, &s);
            proptest::prop_assert_eq!(ours, serde_json::to_vec(&s).unwrap());
        }
    }

    /// serde_json_borrow's own parse of `text`, the answer `parse` must equal when it answers.
    fn serde_parse(text: &str) -> Option<Value<'_>> {
        serde_json::from_str(text).ok()
    }

    #[test]
    fn parses_what_serde_json_parses_on_corners() {
        let taken = [
            r#"{"content":[{"type":"text","text":"a\nMEDIA:/x \"q\" \\ \/ \b\f\r\t \u00e9 \ud83d\ude00 \u0000"}],"isError":false}"#,
            " [ 0 , -0 , 1.5 , -2e3 , 1E+2 , 3e-2 , 18446744073709551615 , 18446744073709551616 , -9223372036854775808 , 0.1 , 1e-400 ] ",
            r#"{"a":{},"b":[],"a":true,"c":null,"d":"","e":[[[]]],"f":"é“”\u2028"}"#,
            "\"\"",
            "true",
            "0",
        ];
        for text in taken {
            let ours = parse(text).unwrap_or_else(|| panic!("not taken: {text}"));
            assert_eq!(Some(ours), serde_parse(text), "{text}");
        }
        // Left to serde_json: errors of every kind, escaped keys, lone surrogates, deep nesting.
        let deep = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        let left = [
            "",
            " ",
            "{",
            "[1,]",
            r#"{"a":1,}"#,
            r#"{"a" 1}"#,
            "01",
            "1.",
            "1e",
            "-",
            "+1",
            ".5",
            "1e400",
            "tru",
            "nul",
            "truex",
            "[1 2]",
            "\"\t\"",
            "\"\\x\"",
            "\"\\u12\"",
            r#""\ud800""#,
            r#""\udc00\ud800""#,
            r#""\ud800\u0041""#,
            r#"{"t\u0079pe":1}"#,
            "{} {}",
            "\u{feff}{}",
            &deep,
        ];
        for text in left {
            assert_eq!(parse(text), None, "{text:?}");
        }
        let nested = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert_eq!(parse(&nested), serde_parse(&nested));
        assert!(parse(&nested).is_some());
    }

    proptest::proptest! {
        /// Whatever `parse` answers is serde_json's answer, on any JSON (compact or pretty)
        /// and on any JSON after an edit with the characters that make or break it; it answers
        /// for every valid document whose keys have no escape.
        #[test]
        fn parse_answers_only_what_serde_json_answers(
            value in crate::generate::cases::hostile_json(),
            pretty: bool,
            edits in proptest::collection::vec(
                (proptest::prelude::any::<proptest::sample::Index>(), 0usize..3, proptest::sample::select(vec![
                    "\"", "\\", "/", "{", "}", "[", "]", ",", ":", "0", "1", "-", "+", ".", "e",
                    "E", " ", "\n", "\t", "\u{1}", "t", "n", "u", "\\u", "\\ud83d", "\\ude00",
                    "\\n", "é",
                ])),
                0..3,
            ),
        ) {
            let mut text = if pretty {
                serde_json::to_string_pretty(&value).unwrap()
            } else {
                serde_json::to_string(&value).unwrap()
            };
            let valid = edits.is_empty();
            for (at, how, piece) in edits {
                let boundaries: Vec<usize> =
                    (0..=text.len()).filter(|&i| text.is_char_boundary(i)).collect();
                let i = boundaries[at.index(boundaries.len())];
                match how {
                    0 => text.insert_str(i, piece),
                    1 => if let Some(c) = text[i..].chars().next() {
                        text.replace_range(i..i + c.len_utf8(), "");
                    },
                    _ => if let Some(c) = text[i..].chars().next() {
                        text.replace_range(i..i + c.len_utf8(), piece);
                    },
                }
            }
            let ours = parse(&text);
            if ours.is_some() {
                proptest::prop_assert_eq!(&ours, &serde_parse(&text), "{}", text);
            }
            let escaped_key = value_keys(&value).any(|k| k.chars().any(|c| c < ' ' || c == '"' || c == '\\'));
            if valid && !escaped_key {
                proptest::prop_assert!(ours.is_some(), "{}", text);
            }
        }
    }

    fn value_keys(value: &serde_json::Value) -> Box<dyn Iterator<Item = &String> + '_> {
        match value {
            serde_json::Value::Object(map) => {
                Box::new(map.keys().chain(map.values().flat_map(value_keys)))
            }
            serde_json::Value::Array(items) => Box::new(items.iter().flat_map(value_keys)),
            _ => Box::new(std::iter::empty()),
        }
    }
}
