//! S2 judged with the mock providers' own base64 decoder and image reader, not the reference's
//! `image.rs`: the limits below are the spec's numbers, restated here on purpose.

use serde_json::Value;

/// Largest base64 image accepted by every provider (S2).
pub const MAX_IMAGE_BASE64: usize = 5_242_880;
/// Largest pixel side accepted by every provider (S2).
pub const MAX_IMAGE_SIDE: u32 = 8000;
const S2_MIME_TYPES: [&str; 3] = ["image/png", "image/jpeg", "image/webp"];

/// Why an image block may not leave a normalizer (S2), or `None` when it is valid.
pub fn s2_problem(block: &Value) -> Option<&'static str> {
    let Some(data) = block
        .get("data")
        .and_then(Value::as_str)
        .filter(|d| !d.is_empty())
    else {
        return Some("image without data");
    };
    let mime = block
        .get("mimeType")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !S2_MIME_TYPES.contains(&mime) {
        return Some("image media type not accepted by every provider");
    }
    if data.len() > MAX_IMAGE_BASE64 {
        return Some("image larger than 5242880 base64 characters");
    }
    let Some(bytes) = mock_providers::b64::decode(mock_providers::b64::Flavor::Strict, data) else {
        return Some("image data is not canonical base64");
    };
    let Some(info) = mock_providers::image::inspect(&bytes) else {
        return Some("image bytes are not a readable image");
    };
    if info.kind.media_type() != mime {
        return Some("image bytes do not match the media type");
    }
    match info.size {
        Some((w, h)) if w > 0 && h > 0 && w <= MAX_IMAGE_SIDE && h <= MAX_IMAGE_SIDE => None,
        Some(_) => Some("image dimensions out of range"),
        None => Some("image header unreadable"),
    }
}

/// Whether an input image block would pass S2 once its media type is corrected to what its
/// bytes are (F1 allows that correction; the declared type must still be one S2 accepts): such
/// an image must reach the output.
pub fn is_valid_input_image(block: &Value) -> bool {
    let Some(data) = block.get("data").and_then(Value::as_str) else {
        return false;
    };
    if !matches!(block.get("mimeType"), Some(Value::String(m)) if S2_MIME_TYPES.contains(&m.as_str()))
    {
        return false;
    }
    let Some(kind) = mock_providers::b64::decode(mock_providers::b64::Flavor::Strict, data)
        .and_then(|bytes| mock_providers::image::inspect(&bytes))
        .map(|info| info.kind.media_type())
    else {
        return false;
    };
    s2_problem(&serde_json::json!({"data": data, "mimeType": kind})).is_none()
}
