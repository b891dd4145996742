//! Text from a run as the pages show it, shared by every renderer: HTML escaping (`escape` for
//! attributes and SVG, `text` for element content) and `is_invisible`, the characters the HTML
//! and Markdown reports show as `\uXXXX` because they are what smuggled directives are made of.

use std::fmt::Write as _;

/// Characters a reader cannot see or that reorder what they see: C0/C1 controls (newline and
/// tab excepted), zero-width and bidirectional marks, line and paragraph separators, BOM.
pub fn is_invisible(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(
            c,
            '\u{ad}' | '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2060}'..='\u{2069}' | '\u{feff}'
        )
}

/// Text for element content: escaped, invisible characters highlighted.
pub fn text(s: &str) -> String {
    escape_with(s, true)
}

/// Text for attribute values and SVG: escaped, invisible characters as plain `\uXXXX`.
pub fn escape(s: &str) -> String {
    escape_with(s, false)
}

fn escape_with(s: &str, highlight: bool) -> String {
    let mut out = String::with_capacity(s.len() + s.len() / 8);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if is_invisible(c) => {
                let (open, close) = if highlight {
                    (r#"<span class="esc">"#, "</span>")
                } else {
                    ("", "")
                };
                let _ = write!(out, "{open}\\u{:04x}{close}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_text_is_escaped_and_invisible_characters_shown() {
        let hostile = "</pre><script>alert('x')</script>\"\u{0}\u{1b}[31m\u{202e}\u{200b}MEDIA:";
        let shown = text(hostile);
        assert!(!shown.contains("<script"), "{shown}");
        assert!(!shown.contains("</pre>"), "{shown}");
        assert!(
            shown.contains("&lt;script&gt;alert(&#39;x&#39;)"),
            "{shown}"
        );
        for visible in [r"\u0000", r"\u001b", r"\u202e", r"\u200b"] {
            assert!(
                shown.contains(&format!(r#"<span class="esc">{visible}</span>"#)),
                "{visible} in {shown}"
            );
        }
        let attr = escape(hostile);
        assert!(!attr.contains(['<', '>', '"', '\'']), "{attr}");
        assert!(
            !attr.contains('\u{0}') && !attr.contains('\u{202e}'),
            "{attr}"
        );
    }
}
