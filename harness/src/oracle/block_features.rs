//! A tool result block's features, for cause signatures (`signature.rs`): its type, the family
//! of its media type, and what of its fields a cause can hang on (annotations, `_meta`, a
//! directive or JSON in its text, a title); and what a client may refuse a whole result over:
//! it breaks the MCP schema, or a `lastModified` is one the strictest client refuses.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use super::directive::may_be_directive;
use super::image::is_valid_input_image;
use super::judge::{is_blank, str_field};

/// What a client may refuse a whole result over, whichever block has it: no vendored MCP
/// version's schema accepts the result, or a block's `lastModified` is one the strictest client
/// refuses.
pub(super) fn refused_whole_features(result: &Value, found: &mut BTreeSet<String>) {
    if !super::mcp_schema::is_valid(result) {
        found.insert("schema-invalid".into());
    }
    let blocks = result.get("content").and_then(Value::as_array);
    let refused = |b: &Value| {
        let when = b
            .get("annotations")
            .and_then(|a| str_field(a, "lastModified"));
        when.is_some_and(|d| !is_strict_offset_date_time(d))
    };
    if blocks.is_some_and(|b| b.iter().any(refused)) {
        found.insert("lastModified:not-strict".into());
    }
}

/// The features of one block of a tool result.
pub(super) fn block_features(block: &Value, found: &mut BTreeSet<String>) {
    let Some(fields) = block.as_object() else {
        found.insert(format!("block:{}", json_type(block)));
        return;
    };
    if fields.contains_key("annotations") {
        found.insert("annotations".into());
    }
    if fields.contains_key("_meta") {
        found.insert("block-meta".into());
    }
    let kind = match str_field(block, "type") {
        Some("text") => match block.get("text") {
            Some(Value::String(t)) if is_blank(t) => "text-blank",
            Some(Value::String(t)) => {
                if t.lines().any(may_be_directive) {
                    found.insert("text:directive".into());
                }
                if serde_json::from_str::<Value>(t).is_ok_and(|v| v.is_object() || v.is_array()) {
                    found.insert("text:json".into());
                }
                "text"
            }
            _ => "text-malformed",
        },
        Some("image") if is_valid_input_image(block) => {
            mime_feature(str_field(block, "mimeType"), found);
            if crate::oracle::image::s2_problem(block).is_some() {
                found.insert("image:bytes-not-declared-type".into());
            }
            "image"
        }
        // An invalid image is invalid whatever type it names.
        Some("image") => "image-invalid",
        Some("audio") => {
            mime_feature(str_field(block, "mimeType"), found);
            "audio"
        }
        Some("resource_link") => {
            mime_feature(str_field(block, "mimeType"), found);
            if str_field(block, "title").is_some_and(|t| !is_blank(t)) {
                found.insert("link:title".into());
            }
            "resource_link"
        }
        Some("resource") => {
            let resource = block.get("resource").unwrap_or(&Value::Null);
            mime_feature(str_field(resource, "mimeType"), found);
            match (resource.get("text"), resource.get("blob")) {
                (Some(Value::String(_)), _) => "resource-text",
                (_, Some(Value::String(_))) => "resource-blob",
                _ => "resource-malformed",
            }
        }
        Some(_) => "unknown",
        None => "untyped",
    };
    found.insert(format!("block:{kind}"));
}

/// A media type's class where a cause can hang on it: an image type the providers accept or
/// another; a resource's textual type (C5 keeps a textual blob's text). Other families are
/// incidental, and no media type is the plain form.
fn mime_feature(mime: Option<&str>, found: &mut BTreeSet<String>) {
    let Some(mime) = mime.map(str::to_ascii_lowercase).filter(|m| !m.is_empty()) else {
        return;
    };
    let class = match mime.as_str() {
        "image/png" | "image/jpeg" | "image/webp" | "image/gif" => "image",
        m if m.starts_with("image/") => "image/other",
        m if m.starts_with("text/")
            || ["json", "xml", "yaml", "csv"].iter().any(|t| m.contains(t)) =>
        {
            "textual"
        }
        _ => return,
    };
    found.insert(format!("mime:{class}"));
}

pub(super) fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The TypeScript MCP SDK's result schema checks `annotations.lastModified` with zod's
/// `z.iso.datetime({ offset: true })` and refuses the whole result over one it does not take
/// (the MCP schema says only "ISO 8601"). zod's offset date-time (`zod/v4/core/regexes.js`
/// `datetime`): upper-case `T`, seconds with any fraction, and `Z` or a `±hh:mm` offset. Its
/// calendar check (no 02-30) is left out: the generators spell valid dates.
static OFFSET_DATE_TIME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d+)?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)$",
    )
    .expect("valid regex")
});

/// `when` is a date-time with seconds and a time-zone offset, spelled as zod takes it.
fn is_strict_offset_date_time(when: &str) -> bool {
    OFFSET_DATE_TIME.is_match(when)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn takes_what_zod_takes() {
        for taken in [
            "2025-01-12T15:00:58Z",
            "2025-01-12T15:00:58+02:00",
            "2025-01-12T15:00:58-00:00",
            "2025-01-12T15:00:58.123456789Z",
        ] {
            assert!(is_strict_offset_date_time(taken), "{taken}");
        }
        for refused in [
            "2025-01-12T15:00:58",
            "2025-01-12T15:00:58.123456",
            "2025-01-12",
            "2025-01-12 15:00:58Z",
            "2025-01-12t15:00:58z",
            "20250112T150058Z",
            "2025-01-12T15:00:58+0200",
            "2025-01-12T15:00Z",
        ] {
            assert!(!is_strict_offset_date_time(refused), "{refused}");
        }
    }

    /// The result has the feature when any block's `lastModified` is one the strictest client
    /// refuses, whichever block the finding is about.
    #[test]
    fn a_last_modified_without_offset_is_a_feature_of_the_result() {
        let features = |when: &str| {
            let result = serde_json::json!({"content": [
                {"type": "text", "text": "a"},
                {"type": "text", "text": "b", "annotations": {"lastModified": when}},
            ]});
            let mut found = BTreeSet::new();
            refused_whole_features(&result, &mut found);
            found.contains("lastModified:not-strict")
        };
        assert!(features("2025-01-12T15:00:58"));
        assert!(!features("2025-01-12T15:00:58Z"));
    }
}
