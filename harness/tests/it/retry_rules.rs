//! Fallback retries (rules S4, R1–R6, P1–P3, seed 004) through the protocol shapes of
//! `resolve_retry_images` and `sanitize_tool_names`.

use normfuzz::reference::retry::{
    PartialExecution, RetryImagesInput, SanitizeToolNamesInput, sanitize_tool_names,
};
use serde_json::{Value, json};

fn images_after(attempt: u64, failure: Value, primary: Value, candidate: &str) -> Value {
    let input: RetryImagesInput = serde_json::from_value(json!({
        "attempt": attempt, "previousFailure": failure, "primaryProvider": primary,
        "candidateProvider": candidate, "images": [{"type": "image", "data": "AAAA", "mimeType": "image/png"}]
    }))
    .expect("protocol input");
    serde_json::to_value(input.run()).expect("serializable")["images"].clone()
}

fn kept(v: &Value) -> bool {
    v.as_array().is_some_and(|a| a.len() == 1)
}

#[test]
fn r1_first_attempt_keeps_images() {
    assert!(kept(&images_after(
        0,
        Value::Null,
        json!("anthropic"),
        "anthropic"
    )));
    // R1 wins over R3/R4: the first attempt is not a retry.
    assert!(kept(&images_after(0, Value::Null, Value::Null, "openai")));
}

#[test]
fn r2_format_failure_strips() {
    assert!(images_after(1, json!("format"), json!("anthropic"), "anthropic").is_null());
    // Attempt 0 with a failure is a retry.
    assert!(images_after(0, json!("format"), json!("anthropic"), "anthropic").is_null());
}

#[test]
fn r3_other_provider_strips_case_insensitively() {
    assert!(images_after(1, json!("rate_limit"), json!("anthropic"), "openai").is_null());
    assert!(kept(&images_after(
        1,
        json!("rate_limit"),
        json!("Anthropic"),
        "ANTHROPIC"
    )));
    // Fail closed: padding or non-ASCII case mappings make another provider id (fuzz finding).
    assert!(images_after(1, json!("rate_limit"), json!(" anthropic "), "Anthropic").is_null());
    assert!(images_after(1, json!("rate_limit"), json!("\u{212A}imi"), "kimi").is_null());
}

#[test]
fn r4_unknown_primary_strips() {
    assert!(images_after(1, json!("timeout"), Value::Null, "openai").is_null());
    assert!(images_after(1, json!("timeout"), json!("  "), "  ").is_null());
}

#[test]
fn r5_same_provider_other_failure_keeps() {
    for failure in [
        "rate_limit",
        "timeout",
        "auth",
        "overloaded",
        "unknown",
        "not-in-the-protocol",
    ] {
        assert!(
            kept(&images_after(2, json!(failure), json!("gemini"), "gemini")),
            "{failure}"
        );
    }
    assert!(kept(&images_after(
        1,
        Value::Null,
        json!("gemini"),
        "gemini"
    )));
}

#[test]
fn r6_no_images_in_none_out() {
    let input: RetryImagesInput = serde_json::from_value(json!({
        "attempt": 0, "previousFailure": null, "primaryProvider": "a", "candidateProvider": "a", "images": null
    }))
    .expect("protocol input");
    assert_eq!(
        serde_json::to_value(input.run()).expect("serializable"),
        json!({"images": null})
    );
}

#[test]
fn p2_sanitize_tool_names() {
    let input: SanitizeToolNamesInput = serde_json::from_value(json!({
        "names": ["read_file", "web search!", 42, null, {"name": "x"}, "", "日本語", "naïve-tool", ["a"], "a.b/c"]
    }))
    .expect("protocol input");
    assert_eq!(
        serde_json::to_value(input.run()).expect("serializable"),
        json!({"names": ["read_file", "websearch", "nave-tool", "abc"]})
    );
    // 100 characters after filtering (so non-ASCII never counts), at most 20 names.
    let long = format!("{}é{}", "a".repeat(99), "b".repeat(10));
    assert_eq!(
        sanitize_tool_names([long.as_str()]),
        [format!("{}b", "a".repeat(99))]
    );
    let many: Vec<String> = (0..30).map(|i| format!("t{i}")).collect();
    let names = sanitize_tool_names(std::iter::once("!!").chain(many.iter().map(String::as_str)));
    assert_eq!(
        (names.len(), names[0].as_str(), names[19].as_str()),
        (20, "t0", "t19")
    );
}

#[test]
fn p1_merge_unions_in_first_seen_order() {
    let first = PartialExecution::new(["read", "write"], false);
    let second = PartialExecution::new(["send", "read", "bad name"], true);
    assert_eq!(
        first.merge(&second),
        PartialExecution {
            tool_names: vec![
                "read".into(),
                "write".into(),
                "send".into(),
                "badname".into()
            ],
            did_send_via_messaging_tool: true
        }
    );
    let wide = PartialExecution::new(
        (0..15)
            .map(|i| format!("a{i}"))
            .collect::<Vec<_>>()
            .iter()
            .map(String::as_str),
        false,
    );
    let wider = PartialExecution::new(
        (0..15)
            .map(|i| format!("b{i}"))
            .collect::<Vec<_>>()
            .iter()
            .map(String::as_str),
        false,
    );
    assert_eq!(wide.merge(&wider).tool_names.len(), 20);
}

#[test]
fn p3_warning_only_on_same_provider_retry() {
    let partial = PartialExecution::new(["send_email"], true);
    let warning = partial
        .warning(Some("Anthropic"), "anthropic")
        .expect("same provider");
    assert!(
        warning.contains("send_email") && warning.contains("messaging tool"),
        "{warning}"
    );
    assert_eq!(partial.warning(Some("anthropic"), "openai"), None);
    assert_eq!(partial.warning(None, "openai"), None);
    assert_eq!(PartialExecution::default().warning(Some("a"), "a"), None);
}
