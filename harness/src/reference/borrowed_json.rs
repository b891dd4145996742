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
use crate::reference::json_unescape::{unescape, unescape_string};
use crate::reference::neutralize::is_line_terminator;

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
    /// after the call, so what is taken from them is not copied. `sources[i]` tells how the
    /// value of `entries[i]` was written when it is a string, and `lines` holds the line starts
    /// its [`StrSource::Escaped`] points into.
    Object {
        entries: &'v mut [(&'a str, Value<'a>)],
        sources: &'v [StrSource<'a>],
        lines: &'v [(usize, usize)],
    },
    /// Any other value.
    Other(&'v Value<'a>),
}

/// How a string value stood in the JSON text, recorded as the parser read it so that the
/// coercion need not scan its text again, neither for its lines nor to escape it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StrSource<'a> {
    /// Not a string.
    #[default]
    None,
    /// Without an escape: the text is its own JSON form.
    Plain,
    /// With escapes. `json` is its JSON form between the quotes when every escape in it is the
    /// one [`write_escaped`] writes (else the text must be escaped again); `lines` the range of
    /// the `(text offset, JSON offset)` pairs, in [`ContentItem::Object`]'s `lines`, of its line
    /// starts after offset 0, each just after an escaped line terminator (a string with a raw
    /// one is not recorded).
    Escaped {
        json: Option<&'a str>,
        lines: (usize, usize),
    },
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
        recording: false,
        last_source: StrSource::None,
        lines: Vec::new(),
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
    /// Whether escaped strings record their line starts in `lines`: only inside the blocks of
    /// a streamed `content`, which hand them over with the block and clear them.
    recording: bool,
    /// How the last string read was written.
    last_source: StrSource<'a>,
    lines: Vec<(usize, usize)>,
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
                    Some(text) => {
                        self.last_source = StrSource::Plain;
                        Value::Str(Cow::Borrowed(text))
                    }
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

    /// The rest of a string whose opening quote is consumed, escapes decoded; its
    /// [`StrSource`] goes to `last_source`, and while recording its line starts to `lines`.
    /// Only escapes are looked at: a string with a raw character led by C2 or E2 (which
    /// U+0085, U+2028 and U+2029 are) is left unrecorded, its lines for the neutralizer to find.
    #[inline(never)]
    fn escaped_string(&mut self) -> Option<String> {
        let (text, bytes) = (self.text, self.text.as_bytes());
        let (start, lines_from) = (self.at, self.lines.len());
        let (recording, lines) = (self.recording, &mut self.lines);
        let mut canonical = true;
        self.scratch.clear();
        // Inlined into the decoder at each escape: as a call (at every `\n`) it was a third of
        // decoding text with a directive every other line.
        let at = unescape_string(
            text,
            start,
            &mut self.scratch,
            #[inline(always)]
            |escape| {
                canonical &= is_canonical(escape.decoded, escape.spelling);
                if recording && is_line_terminator(escape.decoded) {
                    lines.push((escape.text_end, escape.json_end - start));
                }
            },
        )?;
        self.at = at + 1;
        self.last_source = if memchr::memchr2(0xC2, 0xE2, &bytes[start..at]).is_some() {
            self.lines.truncate(lines_from);
            StrSource::None
        } else {
            StrSource::Escaped {
                json: canonical.then(|| &text[start..at]),
                lines: (lines_from, self.lines.len()),
            }
        };
        Some(self.scratch.as_str().to_owned())
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
        self.object_entries(depth, &mut entries, None)?;
        Some(ObjectAsVec::from(entries))
    }

    /// Reads an object, its `{` next, into `entries`, and with `sources` how each entry's value
    /// was written.
    fn object_entries(
        &mut self,
        depth: usize,
        entries: &mut Vec<(&'a str, Value<'a>)>,
        mut sources: Option<&mut Vec<StrSource<'a>>>,
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
            parser.value(depth + 1, entries, |value| (key, value))?;
            if let Some(sources) = &mut sources {
                sources.push(match entries.last() {
                    Some((_, Value::Str(_))) => parser.last_source,
                    _ => StrSource::None,
                });
            }
            Some(())
        })
    }

    /// The top-level `content` array (at `depth`, its `[` next), each element handed over as
    /// it is read; one vector of entries serves every object block.
    fn stream_content(&mut self, depth: usize) -> Option<()> {
        let (mut entries, mut sources) = (Vec::new(), Vec::new());
        let mut other = Vec::with_capacity(1);
        self.list(b']', |parser| {
            parser.skip_blanks();
            if parser.peek() == Some(b'{') && depth + 1 < MAX_DEPTH {
                parser.recording = true;
                let read = parser.object_entries(depth + 1, &mut entries, Some(&mut sources));
                parser.recording = false;
                read?;
                if let Some(content) = parser.content.as_mut() {
                    content(ContentItem::Object {
                        entries: &mut entries,
                        sources: &sources,
                        lines: &parser.lines,
                    });
                }
                entries.clear();
                sources.clear();
                parser.lines.clear();
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

/// How [`write_escaped`] writes the byte `b` of a string, or `None` for as is.
fn escape_of(b: u8) -> Option<([u8; 6], usize)> {
    let short = match b {
        b'"' => b'"',
        b'\\' => b'\\',
        0x08 => b'b',
        b'\t' => b't',
        b'\n' => b'n',
        0x0C => b'f',
        b'\r' => b'r',
        0x20.. => return None,
        _ => {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            let (hi, lo) = (HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]);
            return Some(([b'\\', b'u', b'0', b'0', hi, lo], 6));
        }
    };
    Some(([b'\\', short, 0, 0, 0, 0], 2))
}

/// Whether `escape` (from its backslash) is how [`write_escaped`] writes `c`.
fn is_canonical(c: char, escape: &[u8]) -> bool {
    // A short escape is the one written for its character, but for `\/` (written as is).
    if let [_, short] = escape {
        return *short != b'/';
    }
    // Compared as a fixed array: a slice comparison of a few bytes was a call to `memcmp`.
    let mut padded = [0; 6];
    if let Some(head) = padded.get_mut(..escape.len()) {
        head.copy_from_slice(escape);
    }
    u8::try_from(c)
        .ok()
        .and_then(escape_of)
        .is_some_and(|(spelled, len)| len == escape.len() && spelled == padded)
}

/// The offset in `json` (a string's JSON form between its quotes) of the offset `decoded` in
/// its text, walking from `from`, a `(text offset, JSON offset)` pair at or before it (a line
/// start: a marker is a line's leading blanks away).
pub fn escaped_offset(json: &str, from: (usize, usize), decoded: usize) -> usize {
    let (mut d, mut e) = from;
    let bytes = json.as_bytes();
    while d < decoded {
        let (text_len, json_len) = match bytes.get(e) {
            Some(b'\\') => {
                unescape(&bytes[e + 1..]).map_or((1, 1), |(c, len)| (c.len_utf8(), 1 + len))
            }
            _ => (1, 1),
        };
        d += text_len;
        e += json_len;
    }
    e
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
        if let Some((spelled, len)) = escape_of(b) {
            out.extend_from_slice(&spelled[..len]);
        }
        start = i + 1;
        i = next_json_special(bytes, start);
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

#[cfg(test)]
pub(crate) mod tests {
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

    /// A text as JSON string content (between the quotes), each character spelled one of the
    /// ways JSON allows, with what it decodes to: canonical escapes and not (`\u0041`, `\/`,
    /// `\u000A`, surrogate pairs), raw and escaped line terminators of every kind, blanks, and
    /// the letters and colons of directives.
    pub(crate) fn spelled_text() -> impl proptest::strategy::Strategy<Value = (String, String)> {
        const SPELLINGS: &[(&str, &[&str])] = &[
            ("M", &["M", "\\u004d"]),
            ("E", &["E"]),
            ("D", &["D", "\\u0044"]),
            ("I", &["I"]),
            ("A", &["A", "\\u0041"]),
            ("ｍ", &["ｍ", "\\uff4d"]),
            (":", &[":", "\\u003a"]),
            ("：", &["："]),
            (" ", &[" ", "\\u0020"]),
            ("\t", &["\\t", "\\u0009"]),
            ("\n", &["\\n", "\\u000a", "\\u000A"]),
            ("\r", &["\\r", "\\u000d"]),
            ("\u{0B}", &["\\u000b", "\\u000B"]),
            ("\u{0C}", &["\\f", "\\u000c"]),
            ("\u{1}", &["\\u0001"]),
            ("\u{1F}", &["\\u001f", "\\u001F"]),
            ("\u{85}", &["\u{85}", "\\u0085"]),
            ("\u{2028}", &["\u{2028}", "\\u2028"]),
            ("\u{2029}", &["\u{2029}", "\\u2029"]),
            ("\u{200B}", &["\u{200B}", "\\u200b"]),
            ("\u{A0}", &["\u{A0}"]),
            ("“", &["“"]),
            ("/", &["/", "\\/"]),
            ("\"", &["\\\"", "\\u0022"]),
            ("\\", &["\\\\", "\\u005c"]),
            ("é", &["é", "\\u00e9"]),
            ("😀", &["😀", "\\ud83d\\ude00"]),
            ("x", &["x"]),
        ];
        use proptest::prelude::*;
        proptest::collection::vec(
            (0..SPELLINGS.len(), any::<proptest::sample::Index>()),
            0..40,
        )
        .prop_map(|picks| {
            let (mut text, mut json) = (String::new(), String::new());
            for (which, how) in picks {
                let (decoded, spellings) = SPELLINGS[which];
                text.push_str(decoded);
                json.push_str(spellings[how.index(spellings.len())]);
            }
            (text, json)
        })
    }

    proptest::proptest! {
        /// What the parser records of a streamed block's string is what the coercion relies
        /// on: its line starts are the neutralizer's own, each paired with its offset in the
        /// JSON text, and its JSON form is kept exactly when it is what `write_escaped` writes.
        #[test]
        fn recorded_sources_are_the_texts(
            (text, json) in spelled_text(),
            before in proptest::sample::select(vec!["", "\\n", "\\u2028", "x"]),
        ) {
            let (text, json) = (format!("{}{text}", unescaped(before)), format!("{before}{json}"));
            let doc = format!(r#"{{"content":[{{"type":"text","text":"{json}","n":1}}]}}"#);
            let mut seen = Vec::new();
            let parsed = parse_streaming_content(&doc, &mut |item| {
                if let ContentItem::Object { entries, sources, lines } = item {
                    seen.push((entries[1].1.as_str().map(str::to_owned), sources.to_vec(), lines.to_vec()));
                }
            });
            proptest::prop_assert!(parsed.is_some());
            let [(Some(got), sources, lines)] = &seen[..] else { panic!("one block: {doc}") };
            proptest::prop_assert_eq!(got, &text);
            proptest::prop_assert_eq!(sources[2], StrSource::None);
            let mut written = Vec::new();
            write_escaped(&mut written, &text);
            let canonical = written[1..written.len() - 1] == *json.as_bytes();
            match sources[1] {
                StrSource::Plain => proptest::prop_assert_eq!(&json, &text),
                StrSource::Escaped { json: form, lines: (from, to) } => {
                    proptest::prop_assert_eq!(form.is_some(), canonical);
                    let lines = &lines[from..to];
                    let starts: Vec<usize> =
                        crate::reference::neutralize::line_starts(&text)[1..].to_vec();
                    proptest::prop_assert_eq!(lines.iter().map(|l| l.0).collect::<Vec<_>>(), starts);
                    for &(d, e) in lines {
                        proptest::prop_assert_eq!(unescaped(&json[..e]), &text[..d]);
                    }
                    for d in (0..=text.len()).filter(|&d| text.is_char_boundary(d)) {
                        let line = lines.partition_point(|&(at, _)| at <= d);
                        let from = line.checked_sub(1).map_or((0, 0), |l| lines[l]);
                        let e = escaped_offset(&json, from, d);
                        proptest::prop_assert_eq!(unescaped(&json[..e]), &text[..d]);
                    }
                }
                StrSource::None => proptest::prop_assert!(
                    json.bytes().any(|b| b == 0xC2 || b == 0xE2),
                    "recorded unless it has a raw character led by C2 or E2"
                ),
            }
        }
    }

    /// JSON string content decoded by serde_json.
    fn unescaped(json: &str) -> String {
        serde_json::from_str(&format!("\"{json}\"")).expect("valid string content")
    }
}
