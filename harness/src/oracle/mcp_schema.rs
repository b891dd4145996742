//! Whether a tool result is valid MCP: a `CallToolResult` that one of the vendored schema
//! versions (`harness/schemas/mcp/`) accepts. Losing the content of a result that every version
//! refuses is hardening, not a bug: MCP lets a client refuse such a result whole.

use std::sync::OnceLock;

use serde_json::{Value, json};

const SCHEMAS: [&str; 4] = [
    include_str!("../../schemas/mcp/2025-03-26/schema.json"),
    include_str!("../../schemas/mcp/2025-06-18/schema.json"),
    include_str!("../../schemas/mcp/2025-11-25/schema.json"),
    include_str!("../../schemas/mcp/2026-07-28/schema.json"),
];

fn validators() -> &'static [jsonschema::Validator] {
    static VALIDATORS: OnceLock<Vec<jsonschema::Validator>> = OnceLock::new();
    VALIDATORS.get_or_init(|| {
        SCHEMAS
            .iter()
            .filter_map(|text| {
                let mut schema: Value = serde_json::from_str(text).ok()?;
                let defs = if schema.get("definitions").is_some() {
                    "definitions"
                } else {
                    "$defs"
                };
                schema["$ref"] = json!(format!("#/{defs}/CallToolResult"));
                jsonschema::validator_for(&schema).ok()
            })
            .collect()
    })
}

/// `result` is a `CallToolResult` some vendored MCP version accepts. The schemas do not check
/// `format: byte`: an image whose data is not base64 is schema-valid (normfuzz judges it by S2).
pub fn is_valid(result: &Value) -> bool {
    validators().iter().any(|v| v.is_valid(result))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_vendored_version_compiles() {
        assert_eq!(validators().len(), SCHEMAS.len());
    }

    #[test]
    fn valid_and_invalid_results() {
        assert!(is_valid(
            &json!({"content": [{"type": "text", "text": "hi"}]})
        ));
        assert!(is_valid(
            &json!({"content": [{"type": "image", "data": "AAAA", "mimeType": "image/png"}]})
        ));
        // An image without data, a text that is not a string, no content at all.
        assert!(!is_valid(
            &json!({"content": [{"type": "image", "mimeType": "image/png"}]})
        ));
        assert!(!is_valid(
            &json!({"content": [{"type": "text", "text": 3}]})
        ));
        assert!(!is_valid(&json!("a string")));
    }
}
