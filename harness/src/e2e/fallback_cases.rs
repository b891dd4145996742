//! The fallback scenario's cases (issue 26, issue 35): its seeds, most telling first, then
//! generated ones drawing the failure point, the status, the provider pairing and the images.

use proptest::strategy::ValueTree;
use serde_json::json;

use super::case::{E2eCase, FailAt, Fallback, fallback_results, runner};
use super::marker::marker;
use crate::generate::corners::calls::{Call, Field, Tool};

fn fallback_case(id: &str, about: &str, fallback: Fallback) -> E2eCase {
    E2eCase {
        id: id.into(),
        about: about.into(),
        flavour: 0,
        image_input: true,
        result: fallback_results(&fallback).swap_remove(0),
        reply: vec!["Done: the fallback model answered.".into()],
        fallback: Some(fallback),
        calls: Vec::new(),
        vision: None,
    }
}

/// The fallback scenario's seeds (seed 004's bug class, issue 26), most telling first.
pub fn fallback_seeds() -> Vec<E2eCase> {
    let fb = |same_provider, fail_at, error: &str, user_image, path_image, tool_image| Fallback {
        same_provider,
        fail_at,
        error: error.into(),
        user_image,
        path_image,
        tool_image,
        whole_agent: false,
    };
    use FailAt::{AfterTool, BeforeTool, MidStream};
    vec![
        fallback_case(
            "fallback-cross-after-tool-overloaded",
            "the primary calls the tool, then answers 529/503 overloaded: the fallback on another API \
             must get none of the user's images and not the tool's (R3), nor run the tool again \
             untold (P4)",
            fb(false, AfterTool, "overloaded", true, true, true),
        ),
        fallback_case(
            "fallback-cross-before-tool-rate-limit",
            "the primary's first request answers 429: the fallback on another API starts from the \
             user's message, which must reach it without the user's images (R3)",
            fb(false, BeforeTool, "rate_limit", true, true, true),
        ),
        fallback_case(
            "fallback-cross-after-tool-image-400",
            "the primary calls the tool, then answers 400 (an image it cannot process): the \
             fallback on another API gets no image (R2, R3)",
            fb(false, AfterTool, "image", true, true, true),
        ),
        fallback_case(
            "fallback-same-after-tool-server-error",
            "the primary calls the tool, then answers 500: the fallback is another model of the \
             same API, which keeps every image (R5, F1)",
            fb(true, AfterTool, "server_error", true, true, true),
        ),
        fallback_case(
            "fallback-same-after-tool-format-400",
            "the primary calls the tool, then answers a 400 format error: even on the same API, \
             the fallback gets no image (R2)",
            fb(true, AfterTool, "format", true, true, true),
        ),
        fallback_case(
            "fallback-cross-after-tool-server-error-tool-image-only",
            "no user image; the primary calls the tool, then answers 500: the tool's image must \
             not reach the fallback on another API (R3)",
            fb(false, AfterTool, "server_error", false, false, true),
        ),
        fallback_case(
            "fallback-cross-mid-stream-overloaded",
            "the primary calls the tool, then its streamed answer fails after some text (the \
             API's own mid-stream error): a fallback on another API gets no image (R3) and does \
             not run the tool again untold (P4)",
            fb(false, MidStream, "overloaded", true, true, true),
        ),
        fallback_case(
            "fallback-cross-after-tool-made-up-name",
            "the primary calls a tool by a name it made up (../../escaped-<marker>), then the \
             MCP tool, then answers 529: the failed attempt's tool name reaches the fallback on \
             another API neither unsanitized (P2) nor at all (P3, S4)",
            fb(false, AfterTool, "overloaded", false, false, true),
        )
        .with_calls(vec![
            Call {
                id: None,
                tool: Tool::Named {
                    name: format!(
                        "../../escaped-{}",
                        marker("fallback-cross-after-tool-made-up-name", Field::Name)
                    ),
                    arguments: json!({}),
                },
            },
            Call::plain(),
        ]),
        fallback_case(
            "fallback-cross-after-tool-whole-agent",
            "the fallback wraps the whole agent (LangChain's agent.with_fallbacks): the primary \
             calls the tool, then answers 529, and the fallback agent, started from the user's \
             message alone, must not run the completed tool again untold (P4)",
            Fallback {
                whole_agent: true,
                ..fb(false, AfterTool, "overloaded", false, false, true)
            },
        ),
    ]
}

/// The fallback seeds, then cases drawing the failure point, the status, the provider pairing
/// and which images there are (at least one).
pub fn plan_fallback(count: usize, seed: u64) -> Vec<E2eCase> {
    use proptest::prelude::*;
    let mut cases: Vec<E2eCase> = fallback_seeds().into_iter().take(count).collect();
    let mut runner = runner(seed, b"e2e-fall");
    let errors = mock_providers::script::FailureKind::ALL.map(|k| k.name());
    let draw = (
        any::<bool>(),
        any::<bool>(),
        0..errors.len(),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
    );
    let mut n = 0;
    while cases.len() < count {
        let Ok(tree) = draw.new_tree(&mut runner) else {
            break;
        };
        let (same_provider, after, error, user_image, path_image, tool_image) = tree.current();
        let fallback = Fallback {
            same_provider,
            fail_at: if after {
                FailAt::AfterTool
            } else {
                FailAt::BeforeTool
            },
            error: errors[error].into(),
            user_image,
            path_image,
            // No image at all would judge nothing about images.
            tool_image: tool_image || !(user_image || path_image),
            whole_agent: false,
        };
        cases.push(fallback_case(
            &format!("fallback-gen-{seed}-{n}"),
            "generated: failure point, status, provider pairing and images drawn",
            fallback,
        ));
        n += 1;
    }
    cases
}
