//! Streaming form of the neutralizer (rules D1, B3): bytes in as they arrive, neutralized text
//! out, identical for every chunking to [`neutralize_bytes`] of the whole stream.
//!
//! The marker goes before a directive's `M`, after the line's leading blanks, so a line's blanks
//! are emitted at once. Text is held back only from a line's first non-blank character, when it
//! reads as `M`, while the held text is still a prefix of a directive (letters of `MEDIA` in any
//! disguise, hidden characters between them); it is released as soon as a colon-like character (with
//! the marker) or anything else (without) arrives. The rest of a line is copied in bulk up to
//! the next byte that may start a line terminator. So hold-back is at most the longest
//! directive prefix in the stream (five letters plus the hidden characters a writer puts between them)
//! plus 3 bytes of an incomplete UTF-8 character, and each byte is handled a bounded number of
//! times.
//!
//! Invalid UTF-8 becomes U+FFFD, one per maximal invalid subsequence, exactly as
//! [`String::from_utf8_lossy`] does on the whole stream (Unicode's "substitution of maximal
//! subparts"); a stream that ends inside a character ends with one U+FFFD. The replacement
//! character is neither blank nor a letter, so it can only end a directive prefix.

use std::borrow::Cow;

use crate::reference::neutralize::{
    MARKER, MAY_END_LINE, is_blank, is_colon_like, is_hidden, is_line_terminator, neutralize_owned,
    reads_as_letter,
};

const WORD: [char; 5] = ['M', 'E', 'D', 'I', 'A'];

/// The whole-stream reference for [`StreamNeutralizer`]: lossy UTF-8 decoding, then
/// [`neutralize`](crate::reference::neutralize::neutralize).
pub fn neutralize_bytes(bytes: &[u8]) -> Cow<'_, str> {
    neutralize_owned(String::from_utf8_lossy(bytes))
}

/// Where the current line stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Line {
    /// Only blanks so far: a directive may still start.
    Start,
    /// The held text reads as the first `n` letters of `MEDIA` (1..=5).
    Word(usize),
    /// Decided: nothing more to do until the next line terminator.
    Rest,
}

/// Incremental neutralizer. Feed it with [`push`](Self::push) (bytes) or
/// [`push_str`](Self::push_str) (text), then call [`finish`](Self::finish); each call appends what
/// can be released to `out`.
#[derive(Debug, Clone)]
pub struct StreamNeutralizer {
    line: Line,
    /// The undecided directive prefix, from its `M`.
    held: String,
    /// A valid but incomplete UTF-8 sequence at the end of the last byte chunk.
    partial: [u8; 4],
    partial_len: usize,
}

impl Default for StreamNeutralizer {
    fn default() -> Self {
        Self::new()
    }
}

impl StreamNeutralizer {
    pub fn new() -> Self {
        Self {
            line: Line::Start,
            held: String::new(),
            partial: [0; 4],
            partial_len: 0,
        }
    }

    /// Bytes held back: the undecided directive prefix and an incomplete character.
    pub fn held_bytes(&self) -> usize {
        self.held.len() + self.partial_len
    }

    /// Feeds raw bytes; a character may be split across calls.
    pub fn push(&mut self, bytes: &[u8], out: &mut String) {
        let rest = self.complete_partial(bytes, out);
        let mut seen = 0;
        for chunk in rest.utf8_chunks() {
            self.feed(chunk.valid(), out);
            let invalid = chunk.invalid();
            seen += chunk.valid().len() + invalid.len();
            if invalid.is_empty() {
                continue;
            }
            // Only the very end can be the start of a character that the next chunk completes.
            let incomplete = seen == rest.len()
                && std::str::from_utf8(invalid).is_err_and(|e| e.error_len().is_none());
            if incomplete {
                self.partial[..invalid.len()].copy_from_slice(invalid);
                self.partial_len = invalid.len();
            } else {
                self.feed_char('\u{FFFD}', out);
            }
        }
    }

    /// Feeds text. Bytes of an incomplete character left by [`push`](Self::push) are invalid
    /// now, since a character boundary follows them.
    pub fn push_str(&mut self, text: &str, out: &mut String) {
        self.invalidate_partial(out);
        self.feed(text, out);
    }

    /// Ends the stream: an incomplete character becomes U+FFFD and an undecided prefix is
    /// released unchanged (a line that ends before its colon is no directive).
    pub fn finish(mut self, out: &mut String) {
        self.invalidate_partial(out);
        out.push_str(&self.held);
    }

    fn invalidate_partial(&mut self, out: &mut String) {
        if self.partial_len > 0 {
            self.partial_len = 0;
            self.feed_char('\u{FFFD}', out);
        }
    }

    /// Completes a character left incomplete by the previous chunk; returns the unused bytes.
    fn complete_partial<'b>(&mut self, mut bytes: &'b [u8], out: &mut String) -> &'b [u8] {
        while self.partial_len > 0 {
            let Some((&b, tail)) = bytes.split_first() else {
                break;
            };
            self.partial[self.partial_len] = b;
            match std::str::from_utf8(&self.partial[..=self.partial_len]) {
                Ok(s) => {
                    let c = s.chars().next();
                    self.partial_len = 0;
                    c.into_iter().for_each(|c| self.feed_char(c, out));
                    return tail;
                }
                Err(e) if e.error_len().is_none() => {
                    self.partial_len += 1;
                    bytes = tail;
                }
                // The held bytes are a maximal invalid subpart; `b` starts afresh.
                Err(_) => {
                    self.partial_len = 0;
                    self.feed_char('\u{FFFD}', out);
                }
            }
        }
        bytes
    }

    fn feed(&mut self, text: &str, out: &mut String) {
        let bytes = text.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            if self.line == Line::Rest {
                let end = bytes[i..]
                    .iter()
                    .position(|&b| MAY_END_LINE[usize::from(b)])
                    .map_or(bytes.len(), |p| i + p);
                out.push_str(&text[i..end]);
                i = end;
            }
            // `i` is on a character boundary: ASCII or a lead byte.
            let Some(c) = text.get(i..).and_then(|t| t.chars().next()) else {
                break;
            };
            i += c.len_utf8();
            self.feed_char(c, out);
        }
    }

    fn feed_char(&mut self, c: char, out: &mut String) {
        match self.line {
            Line::Start if is_blank(c) => out.push(c),
            Line::Start if reads_as_letter(c, WORD[0]) => {
                self.held.push(c);
                self.line = Line::Word(1);
            }
            Line::Word(_) if is_hidden(c) => self.held.push(c),
            Line::Word(n) if n < WORD.len() && reads_as_letter(c, WORD[n]) => {
                self.held.push(c);
                self.line = Line::Word(n + 1);
            }
            Line::Word(n) if n == WORD.len() && is_colon_like(c) => {
                out.push_str(MARKER);
                out.push_str(&self.held);
                out.push(c);
                self.held.clear();
                self.line = Line::Rest;
            }
            Line::Word(_) => {
                // Not a directive: release the prefix, then `c` as ordinary text.
                out.push_str(&self.held);
                self.held.clear();
                self.line = Line::Rest;
                self.feed_char(c, out);
            }
            Line::Start | Line::Rest => {
                out.push(c);
                self.line = if is_line_terminator(c) {
                    Line::Start
                } else {
                    Line::Rest
                };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunked(parts: &[&[u8]]) -> String {
        let mut s = StreamNeutralizer::new();
        let mut out = String::new();
        for p in parts {
            s.push(p, &mut out);
        }
        s.finish(&mut out);
        out
    }

    #[test]
    fn split_directive_is_neutralized() {
        assert_eq!(
            chunked(&[b"ok\n  ME", b"DI", b"A:/tmp/x\nMEDIA", b" no"]),
            "ok\n  [neutralized] MEDIA:/tmp/x\nMEDIA no"
        );
    }

    #[test]
    fn blanks_and_decided_lines_are_not_held() {
        let mut s = StreamNeutralizer::new();
        let mut out = String::new();
        s.push(b"  \t", &mut out);
        assert_eq!((out.as_str(), s.held_bytes()), ("  \t", 0));
        s.push(b"MED", &mut out);
        assert_eq!((out.as_str(), s.held_bytes()), ("  \t", 3));
        s.push(b"x tail", &mut out);
        assert_eq!((out.as_str(), s.held_bytes()), ("  \tMEDx tail", 0));
    }

    #[test]
    fn split_characters_and_invalid_bytes() {
        // Fullwidth colon split in three, then a truncated sequence followed by ASCII.
        let colon = "：".as_bytes();
        let out = chunked(&[
            b"MEDIA",
            &colon[..1],
            &colon[1..2],
            &colon[2..],
            b"x\n\xE2\xA9",
            b"A\xFF",
        ]);
        assert_eq!(out, "[neutralized] MEDIA：x\n\u{FFFD}A\u{FFFD}");
        assert_eq!(chunked(&[b"ab\xF0\x9F"]), "ab\u{FFFD}");
        assert_eq!(out, neutralize_bytes(b"MEDIA\xEF\xBC\x9Ax\n\xE2\xA9A\xFF"));
    }
}
