//! Input generators (proptest strategies), kept apart from the oracles that judge them.
//!
//! Valid MCP results here are valid per the schema of the requested version; the malformed and
//! hostile families of the input space grow from these.

use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;
use serde_json::{Map, Value, json};

use crate::generate::corners::{self, text};
use crate::generate::mcp::{
    Annotations, CallToolResult, Common, ContentBlock, Icon, McpVersion, ResourceContents, Role,
};
use crate::generate::{any_string, matching, sample_images};
use crate::reference::image::ImageFormat;

fn annotations(version: McpVersion) -> impl Strategy<Value = Annotations> {
    let last_modified = if version.has_resource_links() {
        option::of(corners::strategy_with(2, corners::dates::last_modified)).boxed()
    } else {
        Just(None).boxed()
    };
    (
        option::of(proptest::sample::subsequence(
            vec![Role::User, Role::Assistant],
            0..=2,
        )),
        option::of(0.0f64..=1.0),
        last_modified,
    )
        .prop_map(|(audience, priority, last_modified)| Annotations {
            audience,
            priority,
            last_modified,
        })
}

fn common(version: McpVersion) -> impl Strategy<Value = Common> {
    let meta = if version.has_resource_links() {
        option::of(any::<u32>().prop_map(|n| {
            let mut m = Map::new();
            m.insert("com.example/trace".into(), json!(n));
            m
        }))
        .boxed()
    } else {
        Just(None).boxed()
    };
    (option::of(annotations(version)), meta)
        .prop_map(|(annotations, meta)| Common { annotations, meta })
}

fn uri() -> impl Strategy<Value = String> {
    prop_oneof![
        matching("[a-z]{1,8}").prop_map(|p| format!("https://example.com/{p}.docx")),
        matching("[a-z]{1,8}").prop_map(|p| format!("file:///tmp/{p}")),
        matching("[a-z]{1,8}").prop_map(|p| format!("memo://{p}")),
    ]
}

fn mime() -> impl Strategy<Value = String> {
    proptest::sample::select(vec![
        "text/plain",
        "application/pdf",
        "application/json",
        "audio/wav",
    ])
    .prop_map(String::from)
}

fn base64_blob() -> impl Strategy<Value = String> {
    vec(any::<u8>(), 0..48).prop_map(|b| base64_simd::STANDARD.encode_to_string(b))
}

/// A content block valid per the schema of `version`, with a valid image where it is an image.
pub fn valid_block(version: McpVersion) -> BoxedStrategy<ContentBlock> {
    let text = (
        prop_oneof![3 => any_string(), 1 => tricky_text().boxed()],
        common(version),
    )
        .prop_map(|(text, common)| ContentBlock::Text { text, common });
    let image = (
        proptest::sample::select(ImageFormat::ALL.to_vec()),
        common(version),
    )
        .prop_map(|(f, common)| ContentBlock::Image {
            data: sample_images::tiny_base64(f).to_string(),
            mime_type: f.mime().to_string(),
            common,
        });
    let audio = (base64_blob(), common(version)).prop_map(|(data, common)| ContentBlock::Audio {
        data,
        mime_type: "audio/wav".into(),
        common,
    });
    let resource = (
        uri(),
        option::of(mime()),
        prop_oneof![any_string().prop_map(Ok), base64_blob().prop_map(Err)],
        common(version),
    )
        .prop_map(|(uri, mime_type, body, common)| ContentBlock::Resource {
            resource: match body {
                Ok(text) => ResourceContents::Text {
                    uri,
                    mime_type,
                    text,
                },
                Err(blob) => ResourceContents::Blob {
                    uri,
                    mime_type,
                    blob,
                },
            },
            common,
        });
    if !version.has_resource_links() {
        return prop_oneof![text, image, audio, resource].boxed();
    }
    let icons = if version.has_icons() {
        option::of(vec(
            uri().prop_map(|src| Icon {
                src,
                mime_type: Some("image/png".into()),
            }),
            0..2,
        ))
        .boxed()
    } else {
        Just(None).boxed()
    };
    let link = (
        uri(),
        any_string(),
        option::of(any_string()),
        option::of(mime()),
        option::of(any::<u64>()),
        icons,
        common(version),
    )
        .prop_map(|(uri, name, title, mime_type, size, icons, common)| {
            ContentBlock::ResourceLink {
                uri,
                name,
                title,
                description: None,
                mime_type,
                size,
                icons,
                common,
            }
        });
    prop_oneof![text, image, audio, link, resource].boxed()
}

/// A `CallToolResult` valid per the schema of `version`.
pub fn valid_result(version: McpVersion) -> impl Strategy<Value = CallToolResult> {
    let structured = if version.has_resource_links() {
        option::of(any::<i32>().prop_map(|n| json!({ "answer": n }))).boxed()
    } else {
        Just(None::<Value>).boxed()
    };
    (
        vec(valid_block(version), 0..6),
        option::of(any::<bool>()),
        structured,
    )
        .prop_map(move |(content, is_error, structured_content)| {
            CallToolResult::finished(version, content, structured_content, is_error)
        })
}

/// Text built from pieces that make `MEDIA:` directives and their disguises likely (every line
/// terminator, blank, control and ignorable kind, fullwidth and case-mapped letters, colon
/// look-alikes), and directive words from [`corners::text`] with hidden characters inside.
pub fn tricky_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        4 => proptest::sample::select(vec![
            "MEDIA:", "media:", "MeDiA:", "MEDIA", ":", "ＭＥＤＩＡ：", "medıa:", "M\u{200B}EDIA:", "MEDIA\u{FE55}", "MEDIA\u{2A74}",
            "ME\u{1}DIA:", "\u{1}MEDIA:", "\u{7F}", "\u{9F}", "\u{80}", "\u{0}",
            "\n", "\r", "\r\n", "\u{2028}", "\u{2029}", "\u{85}", "\u{0B}", "\u{0C}", "\u{1C}", "\u{1D}", "\u{1E}", "\u{1F}",
            " ", "\t", "\u{A0}", "\u{3000}", "\u{FEFF}", "\u{200B}", "\u{E0041}", "[neutralized] ", "/tmp/secret.png", "x",
            "é", "\u{301}", "A", "ᴹ", "Ⓜ", "\u{1D400}",
        ]).prop_map(String::from),
        1 => corners::strategy_with(16, text::directive_word),
        1 => any_string(),
    ];
    proptest::collection::vec(piece, 0..24).prop_map(|v| v.concat())
}
