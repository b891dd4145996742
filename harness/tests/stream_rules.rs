//! Streamed output (rules B3, D1, B1): any chunking, at any byte, gives the whole-text
//! neutralizer's output; hold-back stays bounded; invalid UTF-8 is replaced the same way in both
//! paths; streamed blocks never yield media.

use normfuzz::directive_check::{is_directive_line, lines};
use normfuzz::generate::tricky_text;
use normfuzz::neutralize::neutralize;
use normfuzz::stream::{StreamNeutralizer, neutralize_bytes};
use normfuzz::turn::NormalizeStreamInput;
use proptest::prelude::*;

/// Splits `bytes` at the given fractions of its length (anywhere, even inside a character).
fn split_at_fractions<'a>(bytes: &'a [u8], cuts: &[f64]) -> Vec<&'a [u8]> {
    let mut points: Vec<usize> = cuts
        .iter()
        .map(|f| (f * bytes.len() as f64) as usize)
        .collect();
    points.sort_unstable();
    let mut pieces = Vec::new();
    let mut from = 0;
    for p in points.into_iter().chain([bytes.len()]) {
        pieces.push(&bytes[from..p.max(from)]);
        from = p.max(from);
    }
    pieces
}

fn stream_bytes(pieces: &[&[u8]]) -> (String, usize) {
    let mut s = StreamNeutralizer::new();
    let mut out = String::new();
    let mut max_held = 0;
    for p in pieces {
        s.push(p, &mut out);
        max_held = max_held.max(s.held_bytes());
    }
    s.finish(&mut out);
    (out, max_held)
}

/// Bytes of tricky text with invalid sequences mixed in.
fn tricky_bytes() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        3 => tricky_text().prop_map(String::into_bytes),
        1 => proptest::sample::select(vec![&b"\xFF"[..], b"\xE2\xA9", b"\xEF\xBC", b"\xF0\x9F\x98", b"\xC0\xAF", b"\xED\xA0\x80", b"\x80"])
            .prop_map(<[u8]>::to_vec),
    ];
    proptest::collection::vec(piece, 0..8).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn b3_every_byte_chunking_matches_the_whole_text(text in tricky_text(), cuts in proptest::collection::vec(0.0f64..=1.0, 0..12)) {
        let (streamed, _) = stream_bytes(&split_at_fractions(text.as_bytes(), &cuts));
        prop_assert_eq!(streamed.as_str(), neutralize(&text).into_owned());
        prop_assert!(lines(&streamed).all(|l| !is_directive_line(l)));
    }

    #[test]
    fn b3_single_bytes_and_text_chunks_match(text in tricky_text()) {
        let one_by_one: Vec<&[u8]> = text.as_bytes().chunks(1).collect();
        prop_assert_eq!(stream_bytes(&one_by_one).0, neutralize(&text).into_owned());
        // Text chunks at character boundaries (the protocol's `chunks` are strings).
        let mut s = StreamNeutralizer::new();
        let mut out = String::new();
        let mut buf = [0u8; 4];
        for c in text.chars() {
            s.push_str(c.encode_utf8(&mut buf), &mut out);
        }
        s.finish(&mut out);
        prop_assert_eq!(out, neutralize(&text).into_owned());
    }

    #[test]
    fn b1_invalid_utf8_is_replaced_as_in_the_whole_text(bytes in tricky_bytes(), cuts in proptest::collection::vec(0.0f64..=1.0, 0..12)) {
        let (streamed, max_held) = stream_bytes(&split_at_fractions(&bytes, &cuts));
        prop_assert_eq!(streamed.as_str(), neutralize_bytes(&bytes).into_owned());
        prop_assert!(max_held <= bytes.len());
    }

    #[test]
    fn b3_turn_deliveries_join_to_the_whole_text(text in tricky_text(), cuts in proptest::collection::vec(0.0f64..=1.0, 0..6)) {
        // Cut at character boundaries: protocol chunks are JSON strings.
        let mut points: Vec<usize> = cuts.iter().map(|f| (f * text.len() as f64) as usize).filter(|&p| text.is_char_boundary(p)).collect();
        points.sort_unstable();
        let mut chunks = Vec::new();
        let mut from = 0;
        for p in points.into_iter().chain([text.len()]) {
            chunks.push(text[from..p.max(from)].to_string());
            from = p.max(from);
        }
        let out = NormalizeStreamInput { chunks, r#final: None, roots: vec!["/tmp".into()] }.run();
        // D1: streamed blocks never yield media.
        prop_assert!(out.deliveries.iter().all(|d| d.media_urls.is_empty()));
        let joined: String = out.deliveries.iter().map(|d| d.text.as_str()).collect();
        prop_assert_eq!(joined, neutralize(&text).into_owned());
    }
}

/// B3's memory bound: 100 MB of line-start blanks of every kind, in chunks that split
/// characters, hold back at most an incomplete character.
#[test]
fn b3_hold_back_is_bounded_on_100mb_of_blanks() {
    let unit = " \t\u{3000}\u{200B}\u{FEFF}\r\n\u{2028}\u{A0}\u{E0020}\u{0B}".repeat(1000);
    let chunk_len = 65_521; // prime, so chunk borders fall everywhere within characters
    let target = 100 << 20;
    let mut s = StreamNeutralizer::new();
    let mut out = String::new();
    let (mut fed, mut emitted, mut max_held) = (0usize, 0usize, 0usize);
    let bytes = unit.as_bytes();
    let mut at = 0;
    while fed < target {
        let end = (at + chunk_len).min(bytes.len());
        s.push(&bytes[at..end], &mut out);
        fed += end - at;
        at = if end == bytes.len() { 0 } else { end };
        max_held = max_held.max(s.held_bytes());
        emitted += out.len();
        out.clear();
    }
    s.finish(&mut out);
    emitted += out.len();
    assert!(max_held <= 3, "held {max_held} bytes");
    assert_eq!(emitted, fed, "blanks pass through unchanged");
}

/// Hold-back is bounded by the longest directive prefix, not by the stream.
#[test]
fn b3_hold_back_is_the_longest_prefix() {
    let line = "  ＭＥＤ\u{200B}\u{200B}ＩＡ no colon, so released\n";
    let longest_prefix = "ＭＥＤ\u{200B}\u{200B}ＩＡ".len();
    let mut s = StreamNeutralizer::new();
    let mut out = String::new();
    let mut max_held = 0;
    for _ in 0..100_000 {
        for b in line.as_bytes().chunks(7) {
            s.push(b, &mut out);
            max_held = max_held.max(s.held_bytes());
        }
        out.clear();
    }
    assert!(max_held <= longest_prefix + 3, "held {max_held}");
    assert!(
        max_held >= longest_prefix - 3,
        "the prefix is held until decided: {max_held}"
    );
}

#[test]
fn d1_directive_split_across_blocks_is_neutralized() {
    let input: NormalizeStreamInput = serde_json::from_value(serde_json::json!({
        "chunks": ["Here you go\n  ME", "DIA:/etc/pass", "wd\nbye"],
        "final": null,
        "roots": ["/etc"]
    }))
    .expect("protocol input");
    let out = serde_json::to_value(input.run()).expect("serializable");
    assert_eq!(
        out,
        serde_json::json!({"deliveries": [
            {"text": "Here you go\n  ", "mediaUrls": []},
            {"text": "[neutralized] MEDIA:/etc/pass", "mediaUrls": []},
            {"text": "wd\nbye", "mediaUrls": []},
        ]})
    );
}
