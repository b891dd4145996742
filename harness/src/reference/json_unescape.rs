//! Decoding the escapes of a JSON string, for the borrowing parser. Written by hand because it
//! is the hot loop of reading text with a line break every few dozen bytes: scanning to each
//! backslash, copying the run before it and decoding it one call after another cost more than
//! the rest of coercing such text. On AVX2 each 32-byte step is classified and stored into the
//! output whole, and only the part before its first quote, backslash or control is kept, so a
//! run costs no copy call of its own and an escape is decoded without leaving the loop.

use crate::json_scan::next_json_special;

/// One escape as it was decoded.
pub(crate) struct Escape<'j> {
    pub decoded: char,
    /// Its bytes in the JSON text, from the backslash.
    pub spelling: &'j [u8],
    /// The length of the decoded text just after it.
    pub text_end: usize,
    /// The JSON offset just after it.
    pub json_end: usize,
}

/// Appends the decoded content of the JSON string at `from` (just past its opening quote) of
/// `json` to `out`, calling `on_escape` after each escape, and returns the offset of its
/// closing quote. `None` for a raw control character, an invalid escape, a lone surrogate or
/// an unclosed string (what serde_json refuses).
pub(crate) fn unescape_string(
    json: &str,
    from: usize,
    out: &mut String,
    on_escape: impl FnMut(Escape<'_>),
) -> Option<usize> {
    // SAFETY: the bytes appended are runs of `json` ending at its end or before an ASCII byte,
    // and whole encoded characters: at every return the output is UTF-8 again.
    let out = unsafe { out.as_mut_vec() };
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: AVX2 is present, checked just above.
        return unsafe { unescape_avx2(json.as_bytes(), from, out, on_escape) };
    }
    unescape_portable(json.as_bytes(), from, out, on_escape)
}

/// [`unescape_string`] a run at a time: [`next_json_special`] finds the end of each.
fn unescape_portable(
    bytes: &[u8],
    from: usize,
    out: &mut Vec<u8>,
    mut on_escape: impl FnMut(Escape<'_>),
) -> Option<usize> {
    let mut at = from;
    loop {
        let special = next_json_special(bytes, at);
        out.extend_from_slice(&bytes[at..special]);
        at = match special_at(bytes, special, out, &mut on_escape)? {
            Step::Closed => return Some(special),
            Step::Next(next) => next,
        };
    }
}

/// [`unescape_string`] 32 bytes a step, the rest through [`unescape_portable`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn unescape_avx2(
    bytes: &[u8],
    from: usize,
    out: &mut Vec<u8>,
    mut on_escape: impl FnMut(Escape<'_>),
) -> Option<usize> {
    use std::arch::x86_64::*;
    let mut at = from;
    while at + 32 <= bytes.len() {
        // SAFETY: `at + 32 <= bytes.len()`, and an unaligned load reads any address.
        let v = unsafe { _mm256_loadu_si256(bytes.as_ptr().add(at).cast()) };
        let mask = crate::json_scan::json_special_mask(v);
        out.reserve(32);
        let kept = if mask == 0 {
            32
        } else {
            mask.trailing_zeros() as usize
        };
        // SAFETY: 32 bytes are reserved past the length, and the `kept` set as written are
        // initialized bytes of the input.
        unsafe {
            _mm256_storeu_si256(out.as_mut_ptr().add(out.len()).cast(), v);
            out.set_len(out.len() + kept);
        }
        at += kept;
        if mask == 0 {
            continue;
        }
        // A short escape (most are `\n`) is decoded here, its byte written into the room
        // reserved above; the rest go through `special_at`.
        let short = SHORT[usize::from(bytes.get(at + 1).copied().unwrap_or(0))];
        if bytes[at] == b'\\' && short != 0 {
            // SAFETY: `kept < 32`, so a reserved byte is left past the length.
            unsafe {
                *out.as_mut_ptr().add(out.len()) = short;
                out.set_len(out.len() + 1);
            }
            on_escape(Escape {
                decoded: char::from(short),
                spelling: &bytes[at..at + 2],
                text_end: out.len(),
                json_end: at + 2,
            });
            at += 2;
            continue;
        }
        at = match special_at(bytes, at, out, &mut on_escape)? {
            Step::Closed => return Some(at),
            Step::Next(next) => next,
        };
    }
    unescape_portable(bytes, at, out, on_escape)
}

enum Step {
    /// The closing quote.
    Closed,
    /// An escape, decoded; the offset after it.
    Next(usize),
}

/// What the byte at `at` that a JSON string cannot hold as is does: a quote closes the string,
/// a backslash starts an escape (decoded into `out`), anything else is an error. (Inlined into
/// both loops: as a call it was most of the cost of an escape.)
#[inline(always)]
fn special_at(
    bytes: &[u8],
    at: usize,
    out: &mut Vec<u8>,
    on_escape: &mut impl FnMut(Escape<'_>),
) -> Option<Step> {
    match *bytes.get(at)? {
        b'"' => Some(Step::Closed),
        b'\\' => {
            let (decoded, len) = unescape(&bytes[at + 1..])?;
            // Most escapes stand for ASCII: a push, not a copy call of a variable length.
            match u8::try_from(decoded) {
                Ok(ascii) if ascii.is_ascii() => out.push(ascii),
                _ => out.extend_from_slice(decoded.encode_utf8(&mut [0; 4]).as_bytes()),
            }
            let json_end = at + 1 + len;
            on_escape(Escape {
                decoded,
                spelling: &bytes[at..json_end],
                text_end: out.len(),
                json_end,
            });
            Some(Step::Next(json_end))
        }
        _ => None,
    }
}

/// The character an escape stands for and the bytes it takes after its backslash; `None` for
/// an invalid escape or a lone surrogate (serde_json refuses both).
pub(crate) fn unescape(escape: &[u8]) -> Option<(char, usize)> {
    let first = *escape.first()?;
    if let simple @ 1.. = SHORT[usize::from(first)] {
        return Some((char::from(simple), 1));
    }
    match first {
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
            Some((c, 11))
        }
        _ => None,
    }
}

/// What each short escape stands for, indexed by the byte after its backslash (`b'n'` gives a
/// line feed); 0 for a byte that starts no short escape.
const SHORT: [u8; 256] = {
    let mut table = [0; 256];
    let pairs = [
        (b'"', b'"'),
        (b'\\', b'\\'),
        (b'/', b'/'),
        (b'b', 0x08),
        (b'f', 0x0C),
        (b'n', b'\n'),
        (b'r', b'\r'),
        (b't', b'\t'),
    ];
    let mut i = 0;
    while i < pairs.len() {
        table[pairs[i].0 as usize] = pairs[i].1;
        i += 1;
    }
    table
};

fn hex4(digits: &[u8]) -> Option<u32> {
    digits
        .iter()
        .try_fold(0, |acc, &d| Some(acc * 16 + char::from(d).to_digit(16)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What decoding gives: the text, each escape as (decoded, spelling, text end, JSON end),
    /// and the closing quote's offset.
    type Decoded = (String, Vec<(char, Vec<u8>, usize, usize)>, Option<usize>);

    fn decoded(json: &str, from: usize, portable: bool) -> Decoded {
        let (mut out, mut escapes) = (String::new(), Vec::new());
        let record = |e: Escape<'_>| {
            escapes.push((e.decoded, e.spelling.to_vec(), e.text_end, e.json_end));
        };
        let end = if portable {
            // SAFETY: as in `unescape_string`.
            unescape_portable(json.as_bytes(), from, unsafe { out.as_mut_vec() }, record)
        } else {
            unescape_string(json, from, &mut out, record)
        };
        assert!(std::str::from_utf8(out.as_bytes()).is_ok());
        if end.is_none() {
            out.clear();
        }
        (out, escapes, end)
    }

    proptest::proptest! {
        /// The vector path (on this machine) and the run-at-a-time path decode any spelling of
        /// any text alike, at every alignment, and both give what serde_json decodes.
        #[test]
        fn vector_and_plain_paths_decode_alike(
            (text, json) in crate::reference::borrowed_json::tests::spelled_text(),
            pad in 0usize..40,
            tail in proptest::sample::select(vec!["\"", "\" after", "", "\\", "\\x\"", "\u{1}\""]),
        ) {
            let doc = format!("\"{}{json}{tail}", "é".repeat(pad % 3) + &"x".repeat(pad));
            let fast = decoded(&doc, 1, false);
            proptest::prop_assert_eq!(&fast, &decoded(&doc, 1, true));
            let serde: Option<String> = serde_json::from_str(&doc[..fast.2.map_or(0, |q| q + 1)]).ok();
            proptest::prop_assert_eq!(fast.2.map(|_| fast.0.clone()), serde);
            if tail.starts_with('"') {
                proptest::prop_assert!(fast.0.ends_with(&text));
                for (_, spelling, text_end, json_end) in &fast.1 {
                    let before: String = serde_json::from_str(&format!("{}\"", &doc[..*json_end])).unwrap();
                    proptest::prop_assert_eq!(before.len(), *text_end);
                    proptest::prop_assert_eq!(&doc.as_bytes()[json_end - spelling.len()..*json_end], &spelling[..]);
                }
            }
        }
    }
}
