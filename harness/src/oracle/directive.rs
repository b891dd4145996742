//! Independent checker for invariant S1: does a line read as a `MEDIA:` directive to any
//! plausible consumer?
//!
//! Deliberately shares no code with the reference's neutralizer: it works on whole strings with
//! regex Unicode classes and full NFKC normalization, where the neutralizer scans backwards from
//! colons with hand-written tables. Tests compare the two on every line they see; a bug in one
//! shows up as a disagreement instead of hiding in both.
//!
//! Two readings: [`is_directive_line`] is S1's (what must be neutralized), [`may_be_directive`]
//! a documented wider one (what a careful SUT may also neutralize without breaking F2).

use std::sync::LazyLock;

use regex::Regex;
use unicode_normalization::UnicodeNormalization;

static LINE_BREAK: LazyLock<Regex> = LazyLock::new(|| {
    // ECMAScript LineTerminator, Python str.splitlines, Rust str::lines, together.
    Regex::new(r"[\n\x0B\x0C\r\x1C\x1D\x1E\x{85}\x{2028}\x{2029}]").expect("valid regex")
});
/// Characters a renderer hides: they count wherever they stand, also inside the word (S1).
/// Control characters (C0, DEL, C1) are among them; line terminators are split off first.
static HIDDEN: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[\p{Default_Ignorable_Code_Point}\p{Cc}]").expect("valid regex"));
/// A leading run of characters that are neither letters nor digits.
static NOT_WORD_START: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[^\p{L}\p{N}]*").expect("valid regex"));
static LEADING_BLANKS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\p{White_Space}*").expect("valid regex"));

/// Splits `text` into lines the widest way any consumer does (terminators removed).
pub fn lines(text: &str) -> impl Iterator<Item = &str> {
    LINE_BREAK.split(text)
}

/// Byte ranges of the line terminators of `text`, in the same widest reading as [`lines`].
pub fn terminators(text: &str) -> impl Iterator<Item = std::ops::Range<usize>> + '_ {
    LINE_BREAK.find_iter(text).map(|m| m.range())
}

/// The characters whose compatibility form (NFKC) holds a colon; `colon_likes_are_complete`
/// checks every code point against the normalizer.
const COLON_LIKE: [char; 5] = [':', '\u{2A74}', '\u{FE13}', '\u{FE55}', '\u{FF1A}'];

/// Whether one line (without its terminator) is a media directive in the S1 sense.
pub fn is_directive_line(line: &str) -> bool {
    // Only what stands before the first colon decides (`MEDIA` must meet a colon right after
    // it), so the line is cut just past it, and a line without one is no directive: this spares
    // normalizing long lines whole (the fuzz targets spent a fifth of their time here). The cut
    // keeps the reading: a colon is a starter that composes with nothing.
    let Some(colon) = line.find(COLON_LIKE) else {
        return false;
    };
    let line = &line[..colon + line[colon..].chars().next().map_or(0, char::len_utf8)];
    // Hidden characters may be stripped before or after compatibility normalization.
    let visible = visible(line);
    let rest = &visible[LEADING_BLANKS.find(&visible).map_or(0, |m| m.end())..];
    starts_with_word(rest, false)
}

/// The wider reading: S1's, or a line whose first word is `MEDIA` (blanks may stand before its
/// colon: `> MEDIA :x`) to a reader that skips hidden characters and then either a leading run
/// of anything that is not a letter or a digit (blanks, punctuation, symbols: a Markdown quote
/// or bullet, a bracket, `Ⓜ`) or a leading run of anything outside ASCII letters and digits (a
/// sanitizer that keeps ASCII only reads `𐗀 MEDIA:` as ` MEDIA:`). A line carrying the D1
/// marker (`[neutralized] MEDIA:`) does not match, its first word being `neutralized`, and
/// neither does a `MEDIA:` after an ASCII word (D1 keeps those).
pub fn may_be_directive(line: &str) -> bool {
    if is_directive_line(line) {
        return true;
    }
    let shown = HIDDEN.replace_all(line, "");
    let symbols_skipped = visible(&NOT_WORD_START.replace(&shown, ""));
    let symbols_skipped = NOT_WORD_START.replace(&symbols_skipped, "");
    let shown = visible(&shown);
    let ascii_only = shown.trim_start_matches(|c: char| !c.is_ascii_alphanumeric());
    starts_with_word(&symbols_skipped, true) || starts_with_word(ascii_only, true)
}

/// Whether some line of `text` names `MEDIA` at all, in any disguise (hidden characters,
/// compatibility forms, case): text that may carry a directive somewhere.
pub fn mentions_media(text: &str) -> bool {
    let shown = visible(text);
    shown.to_lowercase().contains("media") || shown.to_uppercase().contains("MEDIA")
}

/// `line` without hidden characters, NFKC-normalized (hidden characters may be stripped before
/// or after compatibility normalization, so both).
fn visible(line: &str) -> String {
    let shown = HIDDEN.replace_all(line, "");
    let normalized: String = shown.nfkc().collect();
    HIDDEN.replace_all(&normalized, "").into_owned()
}

/// Whether `rest` starts with `MEDIA` and a colon in any case mapping; `spaced` lets blanks stand
/// between the word and the colon.
fn starts_with_word(rest: &str, spaced: bool) -> bool {
    // Only the first few characters matter; case mapping may expand them, so map a short prefix.
    let head: String = rest.chars().take(5).collect();
    let after = &rest[head.len()..];
    let after = if spaced {
        after.trim_start_matches(|c: char| c.is_whitespace())
    } else {
        after
    };
    let upper: String = head.to_uppercase().nfkc().collect();
    let lower: String = head.to_lowercase().nfkc().collect();
    (upper == "MEDIA" || lower == "media") && after.nfkc().next() == Some(':')
}

/// The lines of `text` that are directives, for reports.
pub fn directive_lines(text: &str) -> impl Iterator<Item = &str> {
    lines(text).filter(|l| is_directive_line(l))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colon_likes_are_complete() {
        let found: Vec<char> = (0..=0x10FFFF_u32)
            .filter_map(char::from_u32)
            .filter(|c| std::iter::once(*c).nfkc().any(|n| n == ':'))
            .collect();
        assert_eq!(found, COLON_LIKE);
    }

    #[test]
    fn the_cut_at_the_first_colon_keeps_the_reading() {
        for (line, yes) in [
            ("MEDIA:/x: y", true),
            ("MEDIA\u{FF1A}/x", true),
            ("\u{200B}ＭＥＤＩＡ：/x", true),
            ("a: MEDIA:/x", false),
            ("MEDIA /x", false),
            ("MEDIA\u{0301}:/x", false),
            ("  MEDIA:\u{0301}", true),
        ] {
            assert_eq!(is_directive_line(line), yes, "{line:?}");
        }
    }

    #[test]
    fn plain_and_disguised() {
        for yes in [
            "MEDIA:/tmp/x",
            "  media:/tmp/secret.png",
            "\u{FEFF}\tMeDiA:x",
            "ＭＥＤＩＡ：x",
            "medıa:x",
            "M\u{200B}EDIA:x",
            "MEDIA\u{2A74}",
            "\u{1F}MEDIA:x",
            "\u{1}MEDIA:/x",
            "\u{7F}\u{9F}MEDIA:/x",
            "ME\u{1}DIA:/x",
            "MEDIA\u{200B}:/x",
        ] {
            assert!(is_directive_line(yes), "{yes:?}");
        }
        for no in [
            "",
            "x MEDIA:",
            "[neutralized] MEDIA:/x",
            "MEDIA :x",
            "MEDIA",
            "МЕДIA:x",
            "\u{2800}MEDIA:",
        ] {
            assert!(!is_directive_line(no), "{no:?}");
        }
    }

    #[test]
    fn the_wider_reading_contains_s1_and_excludes_the_marker() {
        for line in [
            "MEDIA:/x",
            "\u{1}MEDIA:/x",
            "> MEDIA :x",
            "- media\u{3000}：x",
            "©MEDIA:x",
            "\u{24C2}ＭＥＤＩＡ：",
            "\u{105C0} MEDIA:",
            "é\u{3000}media :x",
        ] {
            assert!(may_be_directive(line), "{line:?}");
        }
        for line in [
            "[neutralized] MEDIA:/x",
            "x MEDIA:",
            "MEDIAx:",
            "MEDIA",
            "1MEDIA:",
            "été MEDIA:",
        ] {
            assert!(!may_be_directive(line), "{line:?}");
        }
    }

    #[test]
    fn splits_on_every_terminator() {
        let text = "a\rb\nc\u{2028}d\u{85}e\u{0B}f\u{1C}g";
        assert_eq!(lines(text).count(), 7);
        assert_eq!(
            directive_lines("ok\u{2029}MEDIA:/x\nno").collect::<Vec<_>>(),
            ["MEDIA:/x"]
        );
    }
}
