//! Property tests for the reference: B1 (no panic on anything), B2 (idempotence), S1 (no
//! directive line survives, judged by the independent checker, and the neutralizer agrees with
//! the checker line by line), S2 (every output image is valid), F2 (texts survive).

use normfuzz::generate::mcp_results::tricky_text;
use normfuzz::oracle::directive::{is_directive_line, lines};
use normfuzz::reference::coerce::coerce_json;
use normfuzz::reference::image::validate_image;
use normfuzz::reference::neutralize::{MARKER, neutralize};
use proptest::prelude::*;
use serde_json::Value;

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..crate::regressions_next_to_source() })]

    #[test]
    fn neutralizer_agrees_with_the_independent_checker(text in tricky_text()) {
        let out = neutralize(&text);
        let ins: Vec<&str> = lines(&text).collect();
        let outs: Vec<&str> = lines(&out).collect();
        prop_assert_eq!(ins.len(), outs.len());
        for (i, o) in ins.iter().zip(&outs) {
            prop_assert!(!is_directive_line(o), "directive survived: {:?}", o);
            if is_directive_line(i) {
                prop_assert_eq!(o.replacen(MARKER, "", 1), *i, "neutralized line must differ only by the marker");
                prop_assert!(o.len() == i.len() + MARKER.len());
            } else {
                prop_assert_eq!(o, i, "a non-directive line must stay byte-identical");
            }
        }
    }

    #[test]
    fn neutralize_is_idempotent(text in tricky_text()) {
        let once = neutralize(&text).into_owned();
        let twice = neutralize(&once);
        prop_assert_eq!(twice.as_ref(), once.as_str());
    }

    #[test]
    fn neutralize_never_panics_on_any_string(text in any::<String>()) {
        let out = neutralize(&text);
        prop_assert!(lines(&out).all(|l| !is_directive_line(l)));
    }

    #[test]
    fn coercion_output_is_safe_faithful_and_idempotent(input in normfuzz::generate::cases::hostile_json()) {
        let raw = input.to_string();
        let out = coerce_json(&raw).expect("serde_json output parses");
        let out_json = serde_json::to_string(&out).expect("serializable");
        let value: Value = serde_json::from_str(&out_json).expect("round trip");
        let blocks = value["content"].as_array().expect("content array");
        prop_assert!(!blocks.is_empty());
        for block in blocks {
            match block["type"].as_str() {
                Some("text") => {
                    let text = block["text"].as_str().expect("text is a string");
                    prop_assert!(lines(text).all(|l| !is_directive_line(l)), "S1: {:?}", text);
                }
                Some("image") => {
                    let (data, mime) = (block["data"].as_str().unwrap_or(""), block["mimeType"].as_str().unwrap_or(""));
                    let valid = validate_image(data, mime);
                    prop_assert!(valid.is_ok_and(|v| v.format.mime() == mime), "S2: {}", block);
                }
                other => prop_assert!(false, "only text and image blocks may leave: {:?}", other),
            }
        }
        // F2: a text block's text survives (neutralized).
        if let Some(items) = input.get("content").and_then(Value::as_array) {
            for item in items {
                if let (Some("text"), Some(text)) = (item.get("type").and_then(Value::as_str), item.get("text").and_then(Value::as_str))
                    && !normfuzz::reference::coerce::is_blank(text)
                {
                    let want = neutralize(text);
                    prop_assert!(blocks.iter().any(|b| b["text"].as_str() == Some(want.as_ref())), "F2 lost {:?}", text);
                }
            }
        }
        // The fast writer and the Serialize form agree byte for byte.
        prop_assert_eq!(String::from_utf8(out.to_json_bytes()).expect("UTF-8"), out_json.clone());
        // B2: the output, read back as a CallToolResult, coerces to itself.
        let again = serde_json::to_string(&coerce_json(&out_json).expect("parses")).expect("serializable");
        prop_assert_eq!(again, out_json);
    }

    #[test]
    fn coercion_never_panics_on_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        if let Ok(text) = std::str::from_utf8(&bytes) {
            let _ = coerce_json(text);
        }
    }
}

/// Every character, in every position of a directive, gets the same verdict from the
/// neutralizer and the independent checker. Letters: all of Unicode; blanks: the BMP and the
/// ignorable tag planes (the rest of Unicode has no White_Space).
#[test]
fn exhaustive_single_character_agreement() {
    let neutralizes = |line: &str| neutralize(line).as_ref() != line;
    let mut checked = 0;
    for c in (0..=0x10FFFFu32).filter_map(char::from_u32) {
        for i in 0..5 {
            let mut word: Vec<char> = "MEDIA:".chars().collect();
            word[i] = c;
            let line: String = word.into_iter().collect();
            assert_eq!(
                neutralizes(&line),
                is_directive_line(&line),
                "letter {i} = U+{:04X}",
                c as u32
            );
        }
        if (c as u32) < 0x10000 || (0xE0000..0xE1000).contains(&(c as u32)) {
            let line = format!("{c}MEDIA:/x");
            let terminator = lines(&line).count() > 1;
            assert_eq!(
                neutralizes(&line),
                terminator || is_directive_line(&line),
                "blank U+{:04X}",
                c as u32
            );
        }
        checked += 1;
    }
    assert!(checked > 1_000_000);
}
