//! Directive texts and streams cut from them.
//!
//! S1 reads `MEDIA:` widely: blanks before it include control characters (C0, DEL, C1), hidden
//! characters (Default_Ignorable code points and controls) count anywhere inside the word,
//! letters may be fullwidth, mathematical, circled or case-mapped, the colon may be any
//! character whose NFKC form has one, and a line ends at any terminator. A text here is built
//! from pieces that mix all of these with their near misses, and remembers the offsets where a
//! split matters (every position inside a directive word, between `\r` and `\n`, around every
//! terminator), so a stream can be cut from it there.

use serde_json::{Value, json};

use super::urls::target;
use super::{Choices, between, one_in, pick, weighted};

/// Every line terminator some consumer splits on (ECMAScript, Python `splitlines`, Rust).
pub const TERMINATORS: [&str; 11] = [
    "\n", "\r\n", "\r", "\u{2028}", "\u{2029}", "\u{85}", "\u{0B}", "\u{0C}", "\u{1C}", "\u{1D}",
    "\u{1E}",
];

/// Blanks before a directive: White_Space, hidden characters and controls (C0, DEL, C1).
pub const BLANKS: [&str; 22] = [
    " ",
    "\t",
    "\u{A0}",
    "\u{3000}",
    "\u{1680}",
    "\u{2003}",
    "\u{202F}",
    "\u{205F}",
    "\u{FEFF}",
    "\u{200B}",
    "\u{1F}",
    "\u{1}",
    "\u{8}",
    "\u{1B}",
    "\u{7F}",
    "\u{80}",
    "\u{9F}",
    "\u{0}",
    "\u{E0020}",
    "\u{2060}",
    "\u{AD}",
    "\u{180E}",
];

/// Hidden characters that count inside the word: Default_Ignorable code points and controls
/// that do not end a line.
pub const HIDDEN: [&str; 20] = [
    "\u{200B}",
    "\u{200C}",
    "\u{200D}",
    "\u{2060}",
    "\u{FEFF}",
    "\u{AD}",
    "\u{34F}",
    "\u{61C}",
    "\u{180E}",
    "\u{3164}",
    "\u{FE0F}",
    "\u{E0041}",
    "\u{1}",
    "\u{0}",
    "\u{7F}",
    "\u{9F}",
    "\u{80}",
    "\u{1B}",
    "\u{1F}",
    "\u{115F}",
];

/// Forms of each letter of `MEDIA` that read as it after case mapping or NFKC.
const LETTERS: [&[&str]; 5] = [
    &["M", "m", "Ｍ", "ｍ", "𝐌", "ᴹ", "Ⓜ", "𝗆", "ℳ"],
    &["E", "e", "Ｅ", "ｅ", "𝐄", "ᴱ", "Ⓔ", "ₑ"],
    &["D", "d", "Ｄ", "ｄ", "𝐃", "ᴰ", "Ⓓ", "ⅆ"],
    &["I", "i", "Ｉ", "ｉ", "𝐈", "ı", "Ⅰ", "ᴵ", "ⁱ"],
    &["A", "a", "Ａ", "ａ", "𝐀", "ᴬ", "Ⓐ", "ª"],
];

/// Colons: ASCII and every character whose NFKC form holds one.
pub const COLONS: [&str; 5] = [":", "：", "﹕", "︓", "⩴"];

/// Lines that look like directives and are not (or are already neutralized).
pub const NEAR_MISSES: [&str; 12] = [
    "MEDIA :/x",
    "x MEDIA:/y",
    "МЕДIA:/x",
    "\u{2800}MEDIA:/x",
    "MEDIAx:/y",
    "MEDI\u{85}A:/x",
    "MEDI\r\nA:/x",
    "MEDIA",
    "ME DIA:/x",
    "[neutralized] MEDIA:/x",
    "- MEDIA:/x",
    "`MEDIA:/x`",
];

/// Ordinary text between directives.
pub const FILLER: [&str; 12] = [
    "ok",
    "see the chart",
    "Note: 10:45 ",
    "x",
    "é",
    "e\u{301}",
    "🙂",
    "https://example.com/a.png",
    " ",
    "MEDIA",
    "MEDIA:x inline ",
    "媒体",
];

/// Reply flags and embeds (D2).
pub const FLAGS: [&str; 7] = [
    "[[audio_as_voice]]",
    "[[reply_to_current]]",
    "[[reply_to:abc-1]]",
    "[[ reply_to_current ]]",
    "[embed ref=\"cv_1\" title=\"S\" /]",
    "[embed url=\"https://example.com/v\" /]",
    "[embed url=\"http://127.0.0.1/x\" /]",
];

/// A text and the byte offsets (character boundaries) where cutting it matters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Marked {
    pub text: String,
    pub cuts: Vec<usize>,
}

impl Marked {
    /// Appends `s`, marking its two ends.
    fn push(&mut self, s: &str) {
        self.cuts.push(self.text.len());
        self.text.push_str(s);
        self.cuts.push(self.text.len());
    }

    /// Appends `s`, marking every character boundary in it.
    fn push_every(&mut self, s: &str) {
        let start = self.text.len();
        self.text.push_str(s);
        self.cuts.extend(
            s.char_indices()
                .map(|(i, _)| start + i)
                .chain([start + s.len()]),
        );
    }
}

/// A directive word in some disguise, from its leading blanks to its colon.
pub fn directive_word(c: &mut dyn Choices) -> String {
    let mut word = String::new();
    match weighted(c, &[4, 3, 1, 1, 1]) {
        // A long run of one blank (indentation): a backtracking line pattern such as
        // `(\s+)+MEDIA:` takes exponential time on it when the word then fails to match (B1).
        // 30 or more, so that such a pattern surely hangs (2^24 steps end in seconds, slowing a
        // campaign without a finding).
        4 => word.push_str(&pick(c, &BLANKS).repeat(between(c, 30, 96))),
        n => (0..n).for_each(|_| word.push_str(pick(c, &BLANKS))),
    }
    // ASCII in any case or every letter form, with or without hidden characters inside.
    let (any_form, hidden) = match weighted(c, &[3, 2, 2, 1]) {
        0 => (false, false),
        1 => (false, true),
        2 => (true, false),
        _ => (true, true),
    };
    // After which letter a hidden character surely stands (4: before the colon).
    let hidden_at = if hidden { c.below(5) } else { usize::MAX };
    // In ASCII: upper case, lower case, or each letter either way.
    let case = weighted(c, &[4, 1, 1]);
    for (i, forms) in LETTERS.iter().enumerate() {
        word.push_str(match (any_form, case) {
            (true, _) => pick(c, forms),
            (false, 0) => forms[0],
            (false, 1) => forms[1],
            _ => forms[c.below(2)],
        });
        if i == hidden_at || (hidden && one_in(c, 4)) {
            word.push_str(pick(c, &HIDDEN));
        }
    }
    word.push_str(if one_in(c, 2) {
        pick(c, &COLONS)
    } else {
        COLONS[0]
    });
    word
}

/// A text of directives in every disguise and their near misses, on lines ended by every
/// terminator, with reply flags and embeds, marked where a stream may be cut.
pub fn directive_text(c: &mut dyn Choices) -> Marked {
    let mut m = Marked::default();
    // The last directive line's word and target: D3 wants the same media named again.
    let mut last: Option<(String, String)> = None;
    for i in 0..between(c, 1, 10) {
        match weighted(c, &[6, 3, 3, 2, 1]) {
            0 => {
                if i > 0 || one_in(c, 2) {
                    m.push_every(pick(c, &TERMINATORS));
                }
                // D3: the same media again, with the same word (a directive if the first was
                // one), often spelled another way.
                if let Some((word, target)) = last.as_ref().filter(|_| one_in(c, 3)) {
                    let again = respelled(c, target);
                    m.push_every(word);
                    m.push(&again);
                    continue;
                }
                let word = directive_word(c);
                m.push_every(&word);
                if !one_in(c, 5) {
                    // Media the policy accepts (with `roots`) now and then, so that a second
                    // mention is one to deduplicate.
                    let t = if one_in(c, 4) {
                        pick(c, &ACCEPTED_MEDIA).to_string()
                    } else {
                        target(c)
                    };
                    m.push(&t);
                    last = Some((word, t));
                }
            }
            1 => m.push_every(pick(c, &TERMINATORS)),
            2 => m.push(pick(c, &FILLER)),
            3 => m.push_every(pick(c, &NEAR_MISSES)),
            _ => m.push_every(pick(c, &FLAGS)),
        }
    }
    m
}

/// Media targets the reference accepts: public https, and files under the roots `roots` draws.
const ACCEPTED_MEDIA: [&str; 3] = [
    "https://example.com/a.png",
    "/work/media/a.png",
    "/tmp/out/d.png",
];

/// `target` again: as it is, or in a spelling that canonicalizes to it (a `./` or `sub/..`
/// segment, a doubled slash; for a URL an upper-case scheme and host or the default port).
fn respelled(c: &mut dyn Choices, target: &str) -> String {
    if let Some(rest) = target.strip_prefix("https://") {
        let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
        return match c.below(4) {
            0 => target.to_string(),
            1 => format!("HTTPS://{}/{path}", host.to_uppercase()),
            2 => format!("https://{host}:443/{path}"),
            _ => format!("https://{host}/./{path}"),
        };
    }
    match (c.below(4), target.rfind('/')) {
        (1, Some(at)) => format!("{}/.{}", &target[..at], &target[at..]),
        (2, Some(at)) => format!("{}/sub/..{}", &target[..at], &target[at..]),
        (3, Some(at)) => format!("{}/{}", &target[..at], &target[at..]),
        _ => target.to_string(),
    }
}

/// [`directive_text`] without its marks.
pub fn directive_string(c: &mut dyn Choices) -> String {
    directive_text(c).text
}

/// `m` cut into chunks: at marked offsets (inside a directive word, inside `\r\n`, around
/// terminators) and at random character boundaries, with empty chunks where two cuts coincide
/// and sometimes at either end. Joined, the chunks are `m.text`.
pub fn split(c: &mut dyn Choices, m: &Marked) -> Vec<String> {
    let text = &m.text;
    let mut cuts: Vec<usize> = Vec::new();
    for _ in 0..weighted(c, &[1, 2, 3, 3, 2, 1]) * 2 {
        let at = if !m.cuts.is_empty() && !one_in(c, 4) {
            pick(c, &m.cuts)
        } else {
            let bytes = c.below(text.len() + 1);
            (0..=bytes)
                .rev()
                .find(|&i| text.is_char_boundary(i))
                .unwrap_or(0)
        };
        cuts.push(at);
    }
    if one_in(c, 6) {
        cuts.push(0);
    }
    if one_in(c, 6) {
        cuts.push(text.len());
    }
    cuts.sort_unstable();
    let mut chunks = Vec::with_capacity(cuts.len() + 1);
    let mut from = 0;
    for at in cuts {
        chunks.push(text[from..at].to_string());
        from = at;
    }
    chunks.push(text[from..].to_string());
    chunks
}

/// The allowed local media roots of a reply or stream.
pub fn roots(c: &mut dyn Choices) -> Value {
    match c.below(3) {
        0 => json!(["/work/media"]),
        1 => json!(["/work/media", "/tmp/out"]),
        _ => json!([]),
    }
}

/// A `normalize_stream` input: mostly one text cut into chunks (the final reply absent, another
/// text, the same text, or the stream's last chunk), sometimes independent chunks.
pub fn stream_input(c: &mut dyn Choices) -> Value {
    let (chunks, last) = if one_in(c, 5) {
        let chunks: Vec<String> = (0..c.below(5)).map(|_| directive_string(c)).collect();
        let last = one_in(c, 2).then(|| directive_string(c));
        (chunks, last)
    } else {
        let m = directive_text(c);
        let mut chunks = split(c, &m);
        let last = match c.below(4) {
            0 => None,
            1 => Some(directive_string(c)),
            2 => Some(m.text),
            _ => chunks.pop(),
        };
        (chunks, last)
    };
    json!({ "chunks": chunks, "final": last, "roots": roots(c) })
}

/// A `parse_reply` input; one in six names accepted media twice, the second time spelled
/// another way (D3: deduplicated after canonicalization).
pub fn reply_input(c: &mut dyn Choices) -> Value {
    if one_in(c, 6) {
        let first = pick(c, &ACCEPTED_MEDIA);
        let again = respelled(c, first);
        let text = format!(
            "{}\nMEDIA:{first}\n{}\nMEDIA:{again}\n",
            pick(c, &FILLER),
            pick(c, &FILLER)
        );
        return json!({ "text": text, "roots": ["/work/media", "/tmp/out"] });
    }
    json!({ "text": directive_string(c), "roots": roots(c) })
}

/// A `neutralize_text` input.
pub fn neutralize_input(c: &mut dyn Choices) -> Value {
    json!({ "text": directive_string(c) })
}

/// A tool result whose text-carrying fields hold directive texts: text blocks, embedded
/// resource text, resource-link titles, names and URIs, MIME types that reach placeholders, and
/// unknown blocks.
pub fn directive_result(c: &mut dyn Choices) -> Value {
    let blocks: Vec<Value> = (0..between(c, 1, 4))
        .map(|_| {
            let t = directive_string(c);
            match c.below(8) {
                0 | 1 => json!({ "type": "text", "text": t }),
                2 => json!({ "type": "resource", "resource": { "uri": "memo://x", "text": t } }),
                3 => json!({ "type": "resource_link", "uri": "https://example.com/a", "name": "a", "title": t }),
                4 => json!({ "type": "resource_link", "uri": t, "name": "a" }),
                5 => json!({ "type": "audio", "data": "AAAA", "mimeType": t }),
                6 => json!({ "type": "image", "data": "AAAA", "mimeType": t }),
                _ => json!({ "type": "widget", "label": t }),
            }
        })
        .collect();
    let mut result = json!({ "content": blocks });
    // F3: only JSON `true` is an error; absent when the tape runs dry, so a shrunk case is small.
    let is_error = [
        None,
        Some(json!(true)),
        Some(json!(false)),
        Some(json!("true")),
        Some(json!(1)),
    ];
    if let (Value::Object(map), Some(flag)) =
        (&mut result, is_error[c.below(is_error.len())].clone())
    {
        map.insert("isError".into(), flag);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::super::testing::sample;
    use super::*;

    fn chunks_of(input: &Value) -> Vec<&str> {
        input["chunks"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    }

    /// Offsets where the chunks meet, in the joined text.
    fn boundaries(chunks: &[&str]) -> Vec<usize> {
        chunks
            .iter()
            .scan(0, |at, c| {
                *at += c.len();
                Some(*at)
            })
            .collect()
    }

    #[test]
    fn streams_are_cut_where_it_matters() {
        let inputs = sample(2000, stream_input);
        let (mut inside_word, mut inside_crlf, mut empty, mut independent) = (0, 0, 0, 0);
        let (mut around_terminator, mut ls, mut nel) = (0, 0, 0);
        for input in &inputs {
            let chunks = chunks_of(input);
            let joined = chunks.concat();
            let cuts = boundaries(&chunks);
            for (at, _) in joined.match_indices("MEDIA:") {
                inside_word += cuts.iter().filter(|&&b| b > at && b < at + 6).count();
            }
            for (at, _) in joined.match_indices("\r\n") {
                inside_crlf += cuts.iter().filter(|&&b| b == at + 1).count();
            }
            around_terminator += chunks
                .iter()
                .filter(|c| c.ends_with('\n') || c.starts_with('\u{2028}') || c.starts_with('\r'))
                .count();
            empty += chunks.iter().filter(|c| c.is_empty()).count();
            ls += usize::from(joined.contains('\u{2028}'));
            nel += usize::from(joined.contains('\u{85}'));
            independent += usize::from(
                chunks
                    .iter()
                    .any(|c| c.starts_with("MEDIA") || c.ends_with(':')),
            );
        }
        for (what, n) in [
            ("a cut inside MEDIA:", inside_word),
            ("a cut between \\r and \\n", inside_crlf),
            ("a cut around a terminator", around_terminator),
            ("an empty chunk", empty),
            ("U+2028", ls),
            ("U+0085", nel),
            ("a chunk starting or ending a directive", independent),
        ] {
            assert!(n >= 10, "{what}: {n}");
        }
    }

    #[test]
    fn a_split_joins_back_to_its_text() {
        for (m, chunks) in sample(500, |c| {
            let m = directive_text(c);
            let chunks = split(c, &m);
            (m, chunks)
        }) {
            assert_eq!(chunks.concat(), m.text);
            assert!(m.cuts.iter().all(|&i| m.text.is_char_boundary(i)));
        }
    }

    #[test]
    fn directives_wear_every_disguise() {
        let texts = sample(2000, directive_string).concat();
        for needle in [
            "\u{1}MEDIA:",
            "\u{7F}",
            "\u{9F}",
            "\u{2028}",
            "\u{85}",
            "\r\n",
            "\u{1C}",
            "Ｍ",
            "ｅ",
            "ı",
            "：",
            "﹕",
            "⩴",
            "[neutralized] ",
            "[[reply_to_current]]",
            "[embed ",
        ] {
            assert!(texts.contains(needle), "{needle:?}");
        }
        // Hidden characters inside the word, e.g. `ME\u{1}DIA:` or `M\u{200B}EDIA:`.
        let words = sample(2000, directive_word);
        for hidden in ["\u{200B}", "\u{1}", "\u{AD}", "\u{E0041}"] {
            assert!(
                words.iter().any(|w| {
                    let w = w.trim_start_matches(|c: char| BLANKS.iter().any(|b| b.starts_with(c)));
                    w.find(hidden)
                        .is_some_and(|at| at > 0 && at + hidden.len() < w.len())
                }),
                "{hidden:?} inside the word"
            );
        }
        assert!(words.iter().any(|w| w.starts_with("\u{1}")));
        assert!(words.iter().any(|w| w.contains("media:")));
        assert!(words.iter().any(|w| w.contains("MEDIA:")));
    }

    #[test]
    fn results_carry_directives_in_every_text_field() {
        let results = sample(500, directive_result);
        let text = serde_json::to_string(&results).unwrap_or_default();
        for kind in [
            "\"text\"",
            "\"resource\"",
            "\"resource_link\"",
            "\"audio\"",
            "\"widget\"",
        ] {
            assert!(text.contains(kind), "{kind}");
        }
    }
}
