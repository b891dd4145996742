//! Streamed output (rules B3, D1, B1, S1): any chunking, at any byte, gives the whole-text
//! neutralizer's output; hold-back stays bounded; invalid UTF-8 is replaced the same way in both
//! paths; streamed blocks never yield media; each delivery on its own has no directive line.

use normfuzz::generate::mcp_results::tricky_text;
use normfuzz::oracle::directive::{is_directive_line, lines};
use normfuzz::reference::media_policy::MediaRoots;
use normfuzz::reference::neutralize::{
    MARKER, is_blank, is_line_terminator, neutralize, reads_as_letter,
};
use normfuzz::reference::stream::{StreamNeutralizer, neutralize_bytes};
use normfuzz::reference::turn::{Delivery, MAX_HELD_TAIL, NormalizeStreamInput, Turn};
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

/// Tricky text with directives and their halves planted anywhere: at line starts, mid-line,
/// split letter from letter.
fn planted_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        1 => tricky_text(),
        2 => proptest::sample::select(vec![
            "MEDIA:/etc/passwd", "\nMEDIA:/x", "x MEDIA:/x", "M", "ME", "EDIA:/x", "DIA:", "M\u{200B}",
            "\u{200B}EDIA:", "ＭＥＤＩＡ：/y", "ᴹ", "Ⓜ", " ", "\u{3000}", "\u{200B}", "\n", "ok",
        ]).prop_map(String::from),
    ];
    proptest::collection::vec(piece, 0..16).prop_map(|v| v.concat())
}

/// What one streamed turn delivered, and the most it held back beyond what the stream
/// neutralizer alone holds (the undelivered line tail).
struct Streamed {
    deliveries: Vec<Delivery>,
    max_tail: usize,
}

fn stream_turn(pieces: &[&[u8]]) -> Streamed {
    let roots = MediaRoots::new(["/tmp"]);
    let mut turn = Turn::new(&roots);
    let mut alone = StreamNeutralizer::new();
    let mut max_tail = 0;
    for p in pieces {
        turn.stream_bytes(p);
        alone.push(p, &mut String::new());
        max_tail = max_tail.max(turn.held_bytes() - alone.held_bytes());
    }
    let deliveries = turn.finish(None).deliveries;
    Streamed {
        deliveries,
        max_tail,
    }
}

/// Bytes of the longest run of blanks inside a line.
fn longest_blank_run(text: &str) -> usize {
    let (mut run, mut longest) = (0, 0);
    for c in text.chars() {
        run = if is_blank(c) && !is_line_terminator(c) {
            run + c.len_utf8()
        } else {
            0
        };
        longest = longest.max(run);
    }
    longest
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..crate::regressions_next_to_source() })]

    #[test]
    fn s1_b3_every_delivery_is_safe_and_they_join_to_the_whole_text(
        text in prop_oneof![tricky_text(), planted_text()],
        cuts in proptest::collection::vec(0.0f64..=1.0, 0..12),
    ) {
        let out = stream_turn(&split_at_fractions(text.as_bytes(), &cuts));
        // S1 per delivery: a channel may parse each message on its own.
        for d in &out.deliveries {
            prop_assert!(lines(&d.text).all(|l| !is_directive_line(l)), "S1 in delivery {:?}", d.text);
            prop_assert!(!d.text.is_empty() && d.media_urls.is_empty());
        }
        // B3: boundaries move, text does not (no blank run here reaches MAX_HELD_TAIL).
        let joined: String = out.deliveries.iter().map(|d| d.text.as_str()).collect();
        prop_assert_eq!(joined, neutralize(&text).into_owned());
        // The tail is one or two characters and the blank runs after them.
        let bound = 2 * (4 + longest_blank_run(&text).max(1));
        prop_assert!(out.max_tail <= bound, "held {} > {}", out.max_tail, bound);
    }

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
        // D1: streamed blocks never yield media. S1 holds per delivery.
        prop_assert!(out.deliveries.iter().all(|d| d.media_urls.is_empty()));
        prop_assert!(out.deliveries.iter().all(|d| lines(&d.text).all(|l| !is_directive_line(l))));
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
            // The line's last character waits for the next block (a safe delivery start).
            {"text": "[neutralized] MEDIA:/etc/pas", "mediaUrls": []},
            {"text": "swd\nbye", "mediaUrls": []},
        ]})
    );
}

fn deliveries(chunks: &[&str]) -> Vec<String> {
    let input = NormalizeStreamInput {
        chunks: chunks.iter().map(|c| c.to_string()).collect(),
        r#final: None,
        roots: vec!["/work/media".into()],
    };
    let out: Vec<String> = input.run().deliveries.into_iter().map(|d| d.text).collect();
    for d in &out {
        assert!(
            lines(d).all(|l| !is_directive_line(l)),
            "S1 in {d:?} of {chunks:?}"
        );
    }
    out
}

/// A delivery never starts mid-line where the line could go on as a directive: the line's last
/// character (with the blanks after it) waits for the next block.
#[test]
fn s1_a_delivery_does_not_start_mid_line_at_a_directive() {
    // The differential runner's finding: "a" then "MEDIA:" was delivered as a live "MEDIA:".
    assert_eq!(deliveries(&["a", "MEDIA:"]), ["aMEDIA:"]);
    assert_eq!(deliveries(&["a", "MEDIA:", "/x"]), ["aMEDIA", ":/x"]);
    assert_eq!(deliveries(&["a ", "  MEDIA:/x"]), ["a   MEDIA:/x"]);
    assert_eq!(
        deliveries(&["a ", "  MEDIA:/x", " then"]),
        ["a   MEDIA:/", "x then"]
    );
    // The last character reads as `M` and only ignorables follow: the one before it is held too.
    assert_eq!(deliveries(&["xM", "EDIA:/x"]), ["xMEDIA:/x"]);
    assert_eq!(
        deliveries(&["xM\u{200B}", "EDIA:/x", "!"]),
        ["xM\u{200B}EDIA:/", "x!"]
    );
    assert_eq!(deliveries(&["x ᴹ", "EDIA:/x", "!"]), ["x ᴹEDIA:/", "x!"]);
}

/// At a real line start the stream neutralizer decides, whatever the split.
#[test]
fn s1_a_delivery_at_a_line_start_is_neutralized_by_the_stream() {
    assert_eq!(deliveries(&["MEDIA", ":/x"]), ["[neutralized] MEDIA:/x"]);
    assert_eq!(
        deliveries(&["x\n", "MEDIA:/x"]),
        ["x\n", "[neutralized] MEDIA:/x"]
    );
    assert_eq!(
        deliveries(&["x\n  ", "MEDIA:/x"]),
        ["x\n  ", "[neutralized] MEDIA:/x"]
    );
}

/// What is held when the stream ends joins the last streamed delivery; the final reply stays a
/// delivery of its own.
#[test]
fn f2_the_held_tail_is_flushed_at_the_end_of_the_turn() {
    let roots = MediaRoots::new(["/tmp"]);
    let mut turn = Turn::new(&roots);
    turn.stream_text("one\ntwo M");
    assert_eq!(
        turn.held_bytes(),
        "o M".len(),
        "`M` could open `MEDIA:`, `o` not"
    );
    turn.stream_text("\u{200B}");
    let outcome = turn.finish(Some("done"));
    assert_eq!(
        outcome.deliveries,
        [
            Delivery {
                text: "one\ntwo M\u{200B}".into(),
                media_urls: vec![]
            },
            Delivery {
                text: "done".into(),
                media_urls: vec![]
            },
        ]
    );
    // Everything held: one delivery at the end.
    assert_eq!(deliveries(&["a", " ", "b"]), ["a b"]);
}

/// B3's one exception, by design: a blank run inside a line longer than `MAX_HELD_TAIL` is not
/// held back, so the next delivery starts mid-line with nothing held, and its first line is
/// neutralized as if it started a line. The joined text then carries a marker the whole-text
/// neutralization does not (over-neutralizing, never under).
#[test]
fn b3_exception_a_blank_run_past_the_cap_guards_the_next_delivery() {
    let blanks = " ".repeat(MAX_HELD_TAIL + 1);
    let first = format!("x{blanks}");
    let roots = MediaRoots::new(["/tmp"]);
    let mut turn = Turn::new(&roots);
    turn.stream_text(&first);
    assert_eq!(turn.held_bytes(), 0, "past the cap nothing is held");
    turn.stream_text("MEDIA:/x");
    let texts: Vec<String> = turn
        .finish(None)
        .deliveries
        .into_iter()
        .map(|d| d.text)
        .collect();
    assert_eq!(texts, [first.clone(), format!("{MARKER}MEDIA:/x")]);
    assert_ne!(texts.concat(), neutralize(&format!("{first}MEDIA:/x")));
    // Within the cap the run is held and the joined text is exact.
    let blanks = " ".repeat(MAX_HELD_TAIL - 1);
    let text = format!("x{blanks}MEDIA:/x");
    assert_eq!(deliveries(&[&format!("x{blanks}"), "MEDIA:/x"]), [text]);
    // Guarding stops at the next safe start: later blocks are exact again.
    let texts = deliveries(&[&first, "ME", "DIA:/x"]);
    assert_eq!(texts.concat(), format!("{first}MEDIA:/x"));
}

/// The held tail is bounded even when a line is one long blank run fed in small blocks.
#[test]
fn b3_the_held_tail_is_bounded() {
    let roots = MediaRoots::new(["/tmp"]);
    let mut turn = Turn::new(&roots);
    let mut max_held = 0;
    turn.stream_text("x");
    for _ in 0..100_000 {
        turn.stream_text("\u{3000} ");
        max_held = max_held.max(turn.held_bytes());
    }
    assert!(max_held <= MAX_HELD_TAIL + 4, "held {max_held}");
}

/// Why a held character is a safe start: to the independent checker, a line that starts with a
/// non-blank character never reads as a directive, unless that character reads as `M` and only
/// ignorables precede the next letter. Checked over the BMP and the blocks of letter
/// look-alikes outside it (mathematical, enclosed and squared letters).
#[test]
fn s1_a_non_blank_character_other_than_m_opens_no_directive() {
    let chars = (0..=0xFFFFu32)
        .chain(0x1D400..=0x1D7FF)
        .chain(0x1F100..=0x1F1FF)
        .filter_map(char::from_u32)
        .filter(|&c| !is_blank(c) && !is_line_terminator(c));
    for c in chars {
        let m = reads_as_letter(c, 'M');
        assert!(!is_directive_line(&format!("{c} MEDIA:")), "{c:?}");
        if m {
            assert!(!reads_as_letter(c, 'E'), "{c:?}");
            assert!(!is_directive_line(&format!("{c}\u{200B}MEDIA:")), "{c:?}");
        } else {
            assert!(!is_directive_line(&format!("{c}\u{200B}EDIA:")), "{c:?}");
        }
    }
}

#[test]
fn s1_a_stream_ending_mid_line_and_the_final_reply_make_no_directive_together() {
    // Found by the split-stream generator: `M` ends the stream, the reply starts `EDIA:`.
    for (chunks, reply) in [
        (vec!["ok\nM"], "EDIA:/etc/passwd"),
        (
            vec!["", "\u{85}\rM"],
            "ED\u{200B}I\u{200B}A:https://[::ffff:127.0.0.1]/x.png",
        ),
        (vec!["ok\n  ME", "D"], "IA:/x and more"),
    ] {
        let input = NormalizeStreamInput {
            chunks: chunks.iter().map(|c| c.to_string()).collect(),
            r#final: Some(reply.to_string()),
            roots: vec!["/work".into()],
        };
        let out = input.run();
        let joined: String = out.deliveries.iter().map(|d| d.text.as_str()).collect();
        assert!(
            !lines(&joined).any(is_directive_line),
            "{chunks:?} + {reply:?}: {joined:?}"
        );
        for d in &out.deliveries {
            assert!(!lines(&d.text).any(is_directive_line), "{d:?}");
        }
        // Nothing lost: the joined text is the stream and the reply with markers inserted.
        let plain = joined.replace("[neutralized] ", "");
        assert_eq!(plain, format!("{}{reply}", chunks.concat()));
    }
}
