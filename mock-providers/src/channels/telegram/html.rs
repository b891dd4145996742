//! `parse_mode=HTML` as the Bot API parses it: a port of TDLib's `parse_html`
//! (`td/telegram/MessageEntity.cpp`, read at tdlib/td 022d602; docs/research/telegram.md §3). The
//! error texts are TDLib's, which the Bot API answers as `Bad Request: can't parse entities: ...`.
//!
//! Only the plain text is kept (what the user reads); the entities are not built, so a `tg-time`
//! tag's date format and an `a` tag's link are not checked (TDLib refuses a few malformed ones).

/// The bytes past the end read as NUL, as TDLib reads its NUL-terminated buffer.
fn at(text: &[u8], i: usize) -> u8 {
    text.get(i).copied().unwrap_or(0)
}

/// TDLib's `is_space` (NUL included: the loops stop at the end of the text).
fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n' | 0 | 0x0b)
}

const TAGS: [&str; 17] = [
    "a",
    "b",
    "strong",
    "i",
    "em",
    "s",
    "strike",
    "del",
    "u",
    "ins",
    "tg-spoiler",
    "tg-emoji",
    "tg-time",
    "span",
    "pre",
    "code",
    "blockquote",
];

/// `&...;` at `*pos` (which holds `&`): the code point, with `*pos` past the reference, or 0 (and
/// `*pos` unmoved) when it is not one TDLib decodes.
fn decode_entity(text: &[u8], pos: &mut usize) -> u32 {
    let mut end = *pos + 1;
    let mut res: u32 = 0;
    if at(text, end) == b'#' {
        end += 1;
        let hex = at(text, end) == b'x';
        if hex {
            end += 1;
        }
        let radix = if hex { 16 } else { 10 };
        while let Some(d) = char::from(at(text, end)).to_digit(radix) {
            res = res.saturating_mul(radix).saturating_add(d);
            end += 1;
        }
        if res == 0 || res >= 0x10ffff || end - *pos >= 10 {
            return 0;
        }
    } else {
        while at(text, end).is_ascii_alphabetic() {
            end += 1;
        }
        res = match &text[*pos + 1..end] {
            b"lt" => u32::from('<'),
            b"gt" => u32::from('>'),
            b"amp" => u32::from('&'),
            b"quot" => u32::from('"'),
            _ => return 0,
        };
    }
    *pos = if at(text, end) == b';' { end + 1 } else { end };
    res
}

/// The text a user reads, or TDLib's error message.
pub fn parse(text: &str) -> Result<String, String> {
    let text = text.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(text.len());
    let mut surrogate = false;
    // (tag name, argument, text length at the tag) of the open tags.
    let mut open: Vec<(String, String, usize)> = Vec::new();
    let mut i = 0;
    while i < text.len() {
        let c = text[i];
        if c == b'&' {
            let code = decode_entity(text, &mut i);
            if code != 0 {
                match char::from_u32(code) {
                    Some(ch) => out.extend_from_slice(ch.encode_utf8(&mut [0; 4]).as_bytes()),
                    // Half a surrogate pair: never valid UTF-8 once encoded.
                    None => surrogate = true,
                }
                continue;
            }
        }
        if c != b'<' {
            out.push(c);
            i += 1;
            continue;
        }
        let begin = i;
        i += 1;
        if at(text, i) != b'/' {
            while !is_space(at(text, i)) && at(text, i) != b'>' {
                i += 1;
            }
            if at(text, i) == 0 {
                return Err(format!("Unclosed start tag at byte offset {begin}"));
            }
            let tag = String::from_utf8_lossy(&text[begin + 1..i]).to_lowercase();
            if !TAGS.contains(&tag.as_str()) {
                return Err(format!(
                    "Unsupported start tag \"{tag}\" at byte offset {begin}"
                ));
            }
            let mut argument = String::new();
            while at(text, i) != b'>' {
                while at(text, i) != 0 && is_space(at(text, i)) {
                    i += 1;
                }
                if at(text, i) == b'>' {
                    break;
                }
                let name_begin = i;
                while !is_space(at(text, i)) && !b"=>/\"'".contains(&at(text, i)) {
                    i += 1;
                }
                let name = text[name_begin..i].to_vec();
                if name.is_empty() {
                    return Err(format!(
                        "Empty attribute name in the tag \"{tag}\" at byte offset {begin}"
                    ));
                }
                while at(text, i) != 0 && is_space(at(text, i)) {
                    i += 1;
                }
                if at(text, i) != b'=' {
                    if at(text, i) == 0 {
                        return Err(format!(
                            "Unclosed start tag \"{tag}\" at byte offset {begin}"
                        ));
                    }
                    if tag == "blockquote" && name == b"expandable" {
                        argument = "1".into();
                    }
                    continue;
                }
                i += 1;
                while at(text, i) != 0 && is_space(at(text, i)) {
                    i += 1;
                }
                if at(text, i) == 0 {
                    return Err(format!(
                        "Unclosed start tag \"{tag}\" at byte offset {begin}"
                    ));
                }
                let value = if at(text, i) != b'\'' && at(text, i) != b'"' {
                    let token = i;
                    while at(text, i).is_ascii_alphanumeric() || matches!(at(text, i), b'.' | b'-')
                    {
                        i += 1;
                    }
                    if !is_space(at(text, i)) && at(text, i) != b'>' {
                        return Err(format!(
                            "Unexpected end of name token at byte offset {token}"
                        ));
                    }
                    String::from_utf8_lossy(&text[token..i]).to_lowercase()
                } else {
                    let quote = at(text, i);
                    i += 1;
                    let mut value = Vec::new();
                    while at(text, i) != quote && at(text, i) != 0 {
                        if at(text, i) == b'&' {
                            let code = decode_entity(text, &mut i);
                            if code != 0 {
                                // Half a surrogate pair: only the link can hold it, which is not kept.
                                let ch =
                                    char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER);
                                value.extend_from_slice(ch.encode_utf8(&mut [0; 4]).as_bytes());
                                continue;
                            }
                        }
                        value.push(at(text, i));
                        i += 1;
                    }
                    if at(text, i) == quote {
                        i += 1;
                    }
                    String::from_utf8_lossy(&value).into_owned()
                };
                if at(text, i) == 0 {
                    return Err(format!("Unclosed start tag at byte offset {begin}"));
                }
                match (tag.as_str(), name.as_slice()) {
                    ("a", b"href") | ("tg-emoji", b"emoji-id") | ("tg-time", b"format") => {
                        argument = value
                    }
                    ("code", b"class") if value.starts_with("language-") => {
                        argument = value["language-".len()..].to_string()
                    }
                    ("span", b"class") if value.starts_with("tg-") => {
                        argument = value["tg-".len()..].to_string()
                    }
                    ("blockquote", b"expandable") => argument = "1".into(),
                    _ => {}
                }
            }
            if tag == "span" && argument != "spoiler" {
                return Err(format!(
                    "Tag \"span\" must have class \"tg-spoiler\" at byte offset {begin}"
                ));
            }
            open.push((tag, argument, out.len()));
            i += 1; // past '>'
        } else {
            let Some((tag, argument, start)) = open.pop() else {
                return Err(format!("Unexpected end tag at byte offset {begin}"));
            };
            while !is_space(at(text, i)) && at(text, i) != b'>' {
                i += 1;
            }
            let end_tag = String::from_utf8_lossy(&text[begin + 2..i]).to_lowercase();
            while is_space(at(text, i)) && at(text, i) != 0 {
                i += 1;
            }
            if at(text, i) != b'>' {
                return Err(format!("Unclosed end tag at byte offset {begin}"));
            }
            i += 1;
            if !end_tag.is_empty() && end_tag != tag {
                return Err(format!(
                    "Unmatched end tag at byte offset {begin}, expected \"</{tag}>\", found \"</{end_tag}>\""
                ));
            }
            // TDLib checks the identifier only of a tag that encloses text.
            if tag == "tg-emoji"
                && out.len() > start
                && !argument.parse::<i64>().is_ok_and(|id| id != 0)
            {
                return Err("Invalid custom emoji identifier specified".into());
            }
        }
    }
    if let Some((tag, _, _)) = open.last() {
        return Err(format!(
            "Can't find end tag corresponding to start tag \"{tag}\""
        ));
    }
    if surrogate {
        return Err("Text contains invalid Unicode characters after decoding HTML entities, check for unmatched surrogate code units".into());
    }
    String::from_utf8(out).map_err(|_| "Strings must be encoded in UTF-8".to_string())
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn tags_leave_the_text_and_entities_are_decoded() {
        assert_eq!(
            parse("<b>bold</b> &lt;x&gt; &#77;EDIA &amp;nbsp;").unwrap(),
            "bold <x> MEDIA &nbsp;"
        );
        assert_eq!(
            parse("<a href=\"https://e.x/?a=1&amp;b\">l</a>").unwrap(),
            "l"
        );
        assert_eq!(
            parse("<pre><code class=\"language-rust\">x</code></pre>").unwrap(),
            "x"
        );
        assert_eq!(
            parse("<span class=\"tg-spoiler\">s</span><blockquote expandable>q</blockquote>")
                .unwrap(),
            "sq"
        );
        // An unknown named entity stays as typed.
        assert_eq!(parse("&nbsp;&copy").unwrap(), "&nbsp;&copy");
    }

    #[test]
    fn malformed_html_is_refused_with_tdlib_s_words() {
        let cases = [
            ("a <br> b", "Unsupported start tag \"br\" at byte offset 2"),
            (
                "<b>open",
                "Can't find end tag corresponding to start tag \"b\"",
            ),
            ("x</b>", "Unexpected end tag at byte offset 1"),
            (
                "<b>x</i>",
                "Unmatched end tag at byte offset 4, expected \"</b>\", found \"</i>\"",
            ),
            ("a < b", "Unsupported start tag \"\" at byte offset 2"),
            ("a <b", "Unclosed start tag at byte offset 2"),
            ("<b>x</b", "Unclosed end tag at byte offset 4"),
            (
                "<span>x</span>",
                "Tag \"span\" must have class \"tg-spoiler\" at byte offset 0",
            ),
            (
                "<a href=x/y>l</a>",
                "Unexpected end of name token at byte offset 8",
            ),
            (
                "&#xD800;",
                "Text contains invalid Unicode characters after decoding HTML entities, check for unmatched surrogate code units",
            ),
        ];
        for (html, error) in cases {
            assert_eq!(parse(html), Err(error.to_string()), "{html}");
        }
    }
}
