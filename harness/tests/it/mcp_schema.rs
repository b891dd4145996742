//! Generated valid MCP results validate against the official schema of every version, and the
//! reference coercion accepts every one of them with full fidelity (F1, F2, F3).

use normfuzz::generate::mcp::{CallToolResult, ContentBlock, McpVersion, ResourceContents};
use normfuzz::generate::mcp_results::valid_result;
use normfuzz::generate::tool_output::realistic_result;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Value, json};

fn call_tool_result_validator(version: McpVersion) -> jsonschema::Validator {
    let path = format!(
        "{}/schemas/mcp/{}/schema.json",
        env!("CARGO_MANIFEST_DIR"),
        version.as_str()
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut schema: Value = serde_json::from_str(&text).expect("schema is JSON");
    let defs = if schema.get("definitions").is_some() {
        "definitions"
    } else {
        "$defs"
    };
    schema["$ref"] = json!(format!("#/{defs}/CallToolResult"));
    jsonschema::validator_for(&schema).expect("schema compiles")
}

/// Every result `results` draws for a version validates against that version's schema.
fn assert_schema_valid<S: Strategy<Value = CallToolResult>>(
    results: impl Fn(McpVersion) -> S,
    cases: u32,
) {
    for version in McpVersion::ALL {
        let validator = call_tool_result_validator(version);
        let mut runner = TestRunner::new(Config {
            cases,
            ..Config::default()
        });
        runner
            .run(&results(version), |result| {
                let json = serde_json::to_value(&result).expect("serializable");
                let errors: Vec<String> = validator
                    .iter_errors(&json)
                    .map(|e| e.to_string())
                    .collect();
                prop_assert!(
                    errors.is_empty(),
                    "{} rejects {json}: {errors:?}",
                    version.as_str()
                );
                Ok(())
            })
            .unwrap_or_else(|e| panic!("{}: {e}", version.as_str()));
    }
}

#[test]
fn generated_results_are_schema_valid_in_every_version() {
    assert_schema_valid(valid_result, 300);
}

#[test]
fn results_of_real_tools_are_schema_valid_in_every_version() {
    assert_schema_valid(realistic_result, 200);
}

#[test]
fn the_schemas_are_a_weak_oracle() {
    // Why normfuzz checks images itself: every schema accepts an image with empty, non-base64 data.
    for version in McpVersion::ALL {
        let mut husk = json!({"content": [{"type": "image", "data": "", "mimeType": "image/png"}]});
        if version.requires_result_type() {
            husk["resultType"] = json!("complete");
        }
        assert!(
            call_tool_result_validator(version).is_valid(&husk),
            "{}",
            version.as_str()
        );
        let missing = json!({"content": [{"type": "image", "mimeType": "image/png"}], "resultType": "complete"});
        assert!(
            !call_tool_result_validator(version).is_valid(&missing),
            "{}",
            version.as_str()
        );
    }
}

#[test]
fn valid_results_keep_every_block() {
    let mut runner = TestRunner::new(Config {
        cases: 500,
        ..Config::default()
    });
    runner
        .run(&valid_result(McpVersion::V2025_11_25), |result| {
            let text = serde_json::to_string(&result).expect("serializable");
            let out = normfuzz::reference::coerce::coerce_json(&text).expect("valid JSON");
            let out = serde_json::to_value(&out).expect("serializable");
            let blocks = out["content"].as_array().expect("content array");
            let kept: Vec<&ContentBlock> = result
                .content
                .iter()
                .filter(|b| !matches!(b, ContentBlock::Text { text, .. } if normfuzz::reference::coerce::is_blank(text)))
                .collect();
            if kept.is_empty() {
                prop_assert_eq!(blocks.len(), 1);
                return Ok(());
            }
            prop_assert_eq!(blocks.len(), kept.len());
            for (input, output) in kept.iter().zip(blocks) {
                match input {
                    ContentBlock::Image { data, .. } => prop_assert_eq!(&output["data"], data),
                    ContentBlock::Text { text, .. }
                    | ContentBlock::Resource { resource: ResourceContents::Text { text, .. }, .. }
                        if !normfuzz::reference::coerce::is_blank(text) =>
                    {
                        let want = normfuzz::reference::neutralize::neutralize(text);
                        prop_assert_eq!(output["text"].as_str(), Some(want.as_ref()))
                    }
                    _ => prop_assert_eq!(&output["type"], "text"),
                }
            }
            prop_assert_eq!(out["isError"].as_bool(), Some(result.is_error == Some(true)));
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{e}"));
}
