//! Independent checker for invariant S1: does a line read as a `MEDIA:` directive to any
//! plausible consumer?
//!
//! Deliberately shares no code with `neutralize`: it works on whole strings with regex Unicode
//! classes and full NFKC normalization, where the neutralizer scans backwards from colons with
//! hand-written tables. Tests compare the two on every line they see; a bug in one shows up
//! as a disagreement instead of hiding in both.

use std::sync::LazyLock;

use regex::Regex;
use unicode_normalization::UnicodeNormalization;

static LINE_BREAK: LazyLock<Regex> = LazyLock::new(|| {
    // ECMAScript LineTerminator, Python str.splitlines, Rust str::lines, together.
    Regex::new(r"[\n\x0B\x0C\r\x1C\x1D\x1E\x{85}\x{2028}\x{2029}]").expect("valid regex")
});
static IGNORABLE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\p{Default_Ignorable_Code_Point}").expect("valid regex"));
static LEADING_BLANKS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[\p{White_Space}\x1C-\x1F]*").expect("valid regex"));

/// Splits `text` into lines the widest way any consumer does (terminators removed).
pub fn lines(text: &str) -> impl Iterator<Item = &str> {
    LINE_BREAK.split(text)
}

/// Whether one line (without its terminator) is a media directive in the S1 sense.
pub fn is_directive_line(line: &str) -> bool {
    // Hidden characters may be stripped before or after compatibility normalization.
    let visible = IGNORABLE.replace_all(line, "");
    let normalized: String = visible.nfkc().collect();
    let normalized = IGNORABLE.replace_all(&normalized, "");
    let rest = &normalized[LEADING_BLANKS.find(&normalized).map_or(0, |m| m.end())..];
    // Only the first few characters matter; case mapping may expand them, so map a short prefix.
    let head: String = rest.chars().take(6).collect();
    let upper: String = head.to_uppercase().nfkc().collect();
    let lower: String = head.to_lowercase().nfkc().collect();
    upper.starts_with("MEDIA:") || lower.starts_with("media:")
}

/// The lines of `text` that are directives, for reports.
pub fn directive_lines(text: &str) -> impl Iterator<Item = &str> {
    lines(text).filter(|l| is_directive_line(l))
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn splits_on_every_terminator() {
        let text = "a\rb\nc\u{2028}d\u{85}e\u{0B}f\u{1C}g";
        assert_eq!(lines(text).count(), 7);
        assert_eq!(
            directive_lines("ok\u{2029}MEDIA:/x\nno").collect::<Vec<_>>(),
            ["MEDIA:/x"]
        );
    }
}
