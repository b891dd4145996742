//! Every size limit of the rules at limit − 1, limit and limit + 1.
//!
//! - S2: image base64 length 5,242,880 (a real image padded to that size; the next canonical
//!   lengths either side, and one character more or less), pixel dimensions 8000 per side
//!   (header-only PNG, JPEG and every WebP kind).
//! - C6: the 8 KiB cut, on blocks whose compact JSON is 8191, 8192 or 8193 bytes (ASCII, a
//!   multi-byte tail the cut may split, escapes that double), and resource-link URIs and titles
//!   around 8 KiB; C8 on a non-object result of that size.
//! - P2: 19, 20 or 21 tool names; names of 99, 100 or 101 characters (also after filtering).
//! - R6 and S4: retries with no image, one image, or `null`.
//!
//! Multi-megabyte images are built once per size and kept ([`big_image_base64`]).

use std::sync::OnceLock;

use serde_json::{Value, json};

use super::{Choices, between, one_in, pick};
use crate::generate::sample_images::{self, WebpKind};
use crate::reference::image::{ImageFormat, MAX_BASE64_LEN, MAX_DIMENSION};

pub use crate::reference::json_text::BLOCK_TEXT_MAX;

/// P2's caps.
pub const MAX_TOOL_NAMES: usize = 20;
pub const MAX_TOOL_NAME_CHARS: usize = 100;

/// Canonical base64 lengths around the limit: the one before, the limit, the one after.
pub const BIG_LENGTHS: [usize; 3] = [MAX_BASE64_LEN - 4, MAX_BASE64_LEN, MAX_BASE64_LEN + 4];
const BIG_FORMATS: [ImageFormat; 2] = [ImageFormat::Png, ImageFormat::Jpeg];

/// The base64 of a real PNG or JPEG exactly `BIG_LENGTHS[size]` characters long, built on first
/// use and kept.
pub fn big_image_base64(format: ImageFormat, size: usize) -> &'static str {
    static BIG: [OnceLock<String>; 6] = [const { OnceLock::new() }; 6];
    let f = usize::from(format == ImageFormat::Jpeg);
    let size = size.min(BIG_LENGTHS.len() - 1);
    BIG[f * BIG_LENGTHS.len() + size]
        .get_or_init(|| sample_images::padded_base64(format, BIG_LENGTHS[size]))
}

/// An image block at the base64 length limit: 5,242,876 / 5,242,880 / 5,242,884 characters,
/// or 5,242,879 / 5,242,881 (the limit's image with one character less or more).
pub fn big_image(c: &mut dyn Choices) -> Value {
    let format = pick(c, &BIG_FORMATS);
    let size = c.below(BIG_LENGTHS.len());
    let b64 = big_image_base64(format, size);
    let data = match (size, c.below(3)) {
        (1, 1) => b64[..b64.len() - 1].to_string(),
        (1, 2) => format!("{b64}A"),
        _ => b64.to_string(),
    };
    // Built by hand: `json!` would copy the 5 MB string once more.
    let mut block = json!({ "type": "image", "mimeType": format.mime() });
    if let Value::Object(map) = &mut block {
        map.insert("data".into(), Value::String(data));
    }
    block
}

/// Pixel sides around the limit.
pub const SIDES: [usize; 4] = [MAX_DIMENSION, MAX_DIMENSION + 1, MAX_DIMENSION - 1, 1];

/// A header-only image claiming sides around 8000 pixels, in every format and WebP kind.
pub fn pixel_image(c: &mut dyn Choices) -> Value {
    let (w, h) = (pick(c, &SIDES), pick(c, &SIDES));
    let (format, bytes) = match c.below(5) {
        0 => (
            ImageFormat::Png,
            sample_images::png_header(w as u32, h as u32),
        ),
        1 => (
            ImageFormat::Jpeg,
            sample_images::jpeg_header(w as u16, h as u16, one_in(c, 2)),
        ),
        k => (
            ImageFormat::Webp,
            sample_images::webp_header(WebpKind::ALL[k - 2], w as u32, h as u32),
        ),
    };
    // Sometimes declared as another allowed type (the reference corrects it).
    let declared = if one_in(c, 4) {
        pick(c, &ImageFormat::ALL).mime()
    } else {
        format.mime()
    };
    let data = base64_simd::STANDARD.encode_to_string(bytes);
    json!({ "type": "image", "data": data, "mimeType": declared })
}

/// Text that no rule treats as a payload (it has spaces) and JSON does not escape.
fn filler(len: usize) -> String {
    const WORDS: &str = "lorem ipsum dolor sit amet, consectetur adipiscing elit. ";
    WORDS.chars().cycle().take(len).collect()
}

/// `len` bytes of JSON string content: ASCII, then a tail of two-byte characters or of
/// characters JSON escapes to two bytes (`"`), which the cut may land inside.
fn sized_string(c: &mut dyn Choices, len: usize) -> String {
    let tail = len.min(40) / 2;
    match c.below(3) {
        0 => filler(len),
        1 => filler(len - 2 * tail) + &"é".repeat(tail),
        _ => filler(len - 2 * tail) + &"\"".repeat(tail),
    }
}

/// C6 (and C8 for a non-object result): a value whose compact JSON is exactly `total` bytes.
pub fn sized_json(c: &mut dyn Choices, total: usize) -> Value {
    let mut skeleton = match c.below(5) {
        0 => json!({"type": "video", "note": ""}),
        1 => json!({"type": "text", "text": 5, "note": ""}),
        2 => json!({"kind": "no type", "note": ""}),
        3 => json!({"type": "resource", "resource": 5, "note": ""}),
        _ => json!(""),
    };
    let base = serde_json::to_string(&skeleton).map_or(0, |s| s.len());
    let content = sized_string(c, total.saturating_sub(base));
    match skeleton.get_mut("note") {
        Some(note) => *note = json!(content),
        None => skeleton = json!(content),
    }
    skeleton
}

/// The three sizes around a limit.
fn around(c: &mut dyn Choices, limit: usize) -> usize {
    limit - 1 + c.below(3)
}

/// A content block at a size limit (not a multi-megabyte image; see [`big_image`]).
pub fn limit_block(c: &mut dyn Choices) -> Value {
    match c.below(6) {
        0 => pixel_image(c),
        1 => {
            // At the bound ±1 (off by one), or far past it (no bound at all).
            let total = if one_in(c, 3) {
                BLOCK_TEXT_MAX * between(c, 2, 8)
            } else {
                around(c, BLOCK_TEXT_MAX)
            };
            sized_json(c, total)
        }
        2 => {
            let uri = format!(
                "https://example.com/{}",
                filler(around(c, BLOCK_TEXT_MAX) - 20)
            );
            match c.below(3) {
                0 => json!({"type": "resource_link", "uri": uri, "name": "a.docx"}),
                1 => json!({"type": "resource_link", "uri": uri}),
                _ => json!({"type": "resource", "resource": {"uri": uri, "blob": "QUJDRA=="}}),
            }
        }
        3 => {
            let label = filler(around(c, BLOCK_TEXT_MAX));
            let key = if one_in(c, 2) { "name" } else { "title" };
            json!({"type": "resource_link", "uri": "https://example.com/a", key: label})
        }
        4 => {
            let mime = format!("audio/{}", filler(around(c, 256) - 6));
            json!({"type": "audio", "data": "AAAA", "mimeType": mime})
        }
        _ => {
            let text = filler(around(c, BLOCK_TEXT_MAX));
            json!({"type": "resource", "resource": {"uri": "memo://x", "text": text}})
        }
    }
}

/// A result at a size limit: a block at a limit among plain siblings, a multi-megabyte image
/// once in `big_one_in`, or a non-object result of about 8 KiB (C8).
pub fn limit_result(c: &mut dyn Choices, big_one_in: usize) -> Value {
    if big_one_in > 0 && one_in(c, big_one_in) {
        let mut result = json!({ "content": [] });
        if let Some(Value::Array(content)) = result.get_mut("content") {
            content.push(big_image(c));
        }
        return result;
    }
    if one_in(c, 10) {
        let total = around(c, BLOCK_TEXT_MAX);
        return match c.below(3) {
            0 => json!(filler(total - 2)),
            1 => json!([filler(total - 4)]),
            _ => json!(total),
        };
    }
    let mut content = vec![limit_block(c)];
    for _ in 0..c.below(3) {
        let sibling = if one_in(c, 2) {
            json!({"type": "text", "text": "sibling"})
        } else {
            let f = pick(c, &ImageFormat::ALL);
            json!({"type": "image", "data": sample_images::tiny_base64(f), "mimeType": f.mime()})
        };
        let at = c.below(content.len() + 1);
        content.insert(at, sibling);
    }
    let mut result = json!({ "isError": one_in(c, 5) });
    if let Value::Object(map) = &mut result {
        map.insert("content".into(), Value::Array(content));
    }
    result
}

/// A `sanitize_tool_names` input around P2's caps: 19, 20 or 21 names (some of them empty or
/// filtered away, so the count after filtering crosses the cap too), and names of 99, 100 or
/// 101 characters, before or after filtering.
pub fn tool_names_input(c: &mut dyn Choices) -> Value {
    let count = pick(
        c,
        &[
            MAX_TOOL_NAMES,
            MAX_TOOL_NAMES - 1,
            MAX_TOOL_NAMES + 1,
            0,
            1,
            2 * MAX_TOOL_NAMES,
        ],
    );
    let names: Vec<Value> = (0..count)
        .map(|i| {
            let long = around(c, MAX_TOOL_NAME_CHARS);
            match c.below(8) {
                0..=2 => json!(format!("tool_{i}")),
                3 => json!("t".repeat(long)),
                // One character filtered away: `long` characters, `long - 1` kept.
                4 => json!(format!(
                    "{}.{}",
                    "a".repeat(long / 2),
                    "b".repeat(long - long / 2 - 1)
                )),
                5 => json!(format!("{}é", "n".repeat(long - 1))),
                6 => json!(pick(c, &["", "!!!", " ", "名前"])),
                _ => [json!(null), json!(5), json!(["x"])][c.below(3)].clone(),
            }
        })
        .collect();
    json!({ "names": names })
}

const FAILURES: [Option<&str>; 7] = [
    None,
    Some("format"),
    Some("rate_limit"),
    Some("timeout"),
    Some("auth"),
    Some("overloaded"),
    Some("unknown"),
];
const PROVIDERS: [&str; 8] = [
    "anthropic",
    "Anthropic",
    "openai",
    "google",
    "bedrock",
    " anthropic",
    "",
    "ANTHROPIC",
];

/// A `resolve_retry_images` input with no image, one image (valid, invalid or at the pixel
/// limit), or `null`, on first attempts and retries to the same or another provider.
pub fn retry_input(c: &mut dyn Choices) -> Value {
    let images = match c.below(5) {
        0 => {
            let f = pick(c, &ImageFormat::ALL);
            json!([{"type": "image", "data": sample_images::tiny_base64(f), "mimeType": f.mime()}])
        }
        1 => json!([]),
        2 => Value::Null,
        3 => json!([{"type": "image", "data": sample_images::GIF_1X1, "mimeType": "image/gif"}]),
        _ => json!([pixel_image(c)]),
    };
    let primary = if one_in(c, 5) {
        Value::Null
    } else {
        json!(pick(c, &PROVIDERS))
    };
    json!({
        "attempt": between(c, 0, 2),
        "previousFailure": pick(c, &FAILURES),
        "primaryProvider": primary,
        "candidateProvider": pick(c, &PROVIDERS),
        "images": images,
    })
}

#[cfg(test)]
mod tests {
    use super::super::testing::sample;
    use super::*;

    fn compact_len(v: &Value) -> usize {
        serde_json::to_string(v).map_or(0, |s| s.len())
    }

    #[test]
    fn c6_blocks_are_exactly_around_8_kib() {
        let lens: Vec<usize> = sample(300, |c| {
            let total = around(c, BLOCK_TEXT_MAX);
            let v = sized_json(c, total);
            assert_eq!(compact_len(&v), total, "{v}");
            total
        });
        for want in [8191, 8192, 8193] {
            assert!(lens.contains(&want), "{want}");
        }
    }

    #[test]
    fn every_limit_block_occurs() {
        let blocks = sample(2000, limit_block);
        let sides: Vec<(usize, usize)> = blocks
            .iter()
            .filter_map(|b| {
                let data = b.get("data")?.as_str()?;
                let bytes = base64_simd::STANDARD.decode_to_vec(data).ok()?;
                let size = imagesize::blob_size(&bytes).ok()?;
                Some((size.width, size.height))
            })
            .collect();
        for side in [7999, 8000, 8001] {
            assert!(sides.iter().any(|&(w, _)| w == side), "width {side}");
            assert!(sides.iter().any(|&(_, h)| h == side), "height {side}");
        }
        let text = |b: &Value, k: &str| b.get(k).and_then(Value::as_str).map_or(0, str::len);
        for want in [8191, 8192, 8193] {
            assert!(blocks.iter().any(|b| compact_len(b) == want), "C6 {want}");
            assert!(blocks.iter().any(|b| text(b, "uri") == want), "uri {want}");
            assert!(
                blocks.iter().any(|b| text(b, "title") == want),
                "title {want}"
            );
        }
        for want in [255, 256, 257] {
            assert!(
                blocks.iter().any(|b| text(b, "mimeType") == want),
                "mime {want}"
            );
        }
    }

    #[test]
    fn header_only_images_read_as_their_claimed_size() {
        for kind in WebpKind::ALL {
            let bytes = sample_images::webp_header(kind, 8001, 7999);
            let size = imagesize::blob_size(&bytes).expect("webp header");
            assert_eq!((size.width, size.height), (8001, 7999), "{kind:?}");
        }
        for progressive in [false, true] {
            let bytes = sample_images::jpeg_header(8000, 8001, progressive);
            let size = imagesize::blob_size(&bytes).expect("jpeg header");
            assert_eq!((size.width, size.height), (8000, 8001));
        }
    }

    #[test]
    fn big_images_are_exactly_at_the_limit() {
        for format in BIG_FORMATS {
            for (size, &len) in BIG_LENGTHS.iter().enumerate() {
                let b64 = big_image_base64(format, size);
                assert_eq!(b64.len(), len);
                let head = base64_simd::STANDARD
                    .decode_to_vec(&b64[..4096])
                    .expect("base64");
                assert_eq!(
                    crate::reference::image::validate_image(b64, format.mime()).is_ok(),
                    len <= MAX_BASE64_LEN,
                    "{format:?} {len} {:?}",
                    &head[..4]
                );
            }
        }
        let lens: Vec<usize> = sample(300, |c| big_image(c)["data"].as_str().map_or(0, str::len));
        for want in [
            MAX_BASE64_LEN - 4,
            MAX_BASE64_LEN - 1,
            MAX_BASE64_LEN,
            MAX_BASE64_LEN + 1,
            MAX_BASE64_LEN + 4,
        ] {
            assert!(lens.contains(&want), "{want}");
        }
    }

    #[test]
    fn big_images_are_rare_in_results() {
        let big = sample(5000, |c| limit_result(c, 50))
            .iter()
            .filter(|r| {
                r["content"][0]["data"]
                    .as_str()
                    .is_some_and(|d| d.len() > 1_000_000)
            })
            .count();
        assert!((40..=170).contains(&big), "{big}");
    }

    #[test]
    fn tool_names_cross_both_caps() {
        let inputs = sample(2000, tool_names_input);
        let counts: Vec<usize> = inputs
            .iter()
            .map(|i| i["names"].as_array().map_or(0, Vec::len))
            .collect();
        for want in [19, 20, 21] {
            assert!(counts.contains(&want), "{want} names");
        }
        let lens: Vec<usize> = inputs
            .iter()
            .flat_map(|i| i["names"].as_array().cloned().unwrap_or_default())
            .filter_map(|n| n.as_str().map(|s| s.chars().count()))
            .collect();
        for want in [99, 100, 101] {
            assert!(lens.contains(&want), "{want} chars");
        }
    }

    #[test]
    fn retries_carry_zero_or_one_image() {
        let inputs = sample(500, retry_input);
        let lens: Vec<Option<usize>> = inputs
            .iter()
            .map(|i| i["images"].as_array().map(Vec::len))
            .collect();
        for want in [None, Some(0), Some(1)] {
            assert!(lens.contains(&want), "{want:?}");
        }
    }
}
