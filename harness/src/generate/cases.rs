//! Case inputs for every protocol op, as proptest strategies (so failures shrink): valid,
//! near-valid (one thing wrong) and hostile families, mixed with the corner families of
//! [`corners`] (directive disguises, streams cut from one text, every U-rule family, size limits
//! at ±1, deep nesting), which the fuzz targets draw from too.

use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;
use proptest::sample::{Index, select};
use serde_json::{Value, json};

use crate::generate::corners::{self, limits, nesting, text, urls};
use crate::generate::mcp::McpVersion;
use crate::generate::mcp_results::{tricky_text, valid_result};
use crate::generate::{any_string, matching, real_servers, sample_images, tool_output};
use crate::protocol::Op;
use crate::reference::image::ImageFormat;

/// One limit case in this many draws a multi-megabyte image. Limit cases are 6 in 100
/// `coerce_tool_result` cases, so about one such case in 500 carries one.
const BIG_IMAGE_ONE_IN: usize = 30;

/// Inputs for `op`.
pub fn op_input(op: Op) -> BoxedStrategy<Value> {
    match op {
        // The real servers' results, as captured or with a field swapped, beside the rest.
        Op::CoerceToolResult => prop_oneof![
            110 => generated_result(),
            4 => corners::strategy(real_servers::real_result),
        ]
        .boxed(),
        Op::NeutralizeText => prop_oneof![
            tricky_text().prop_map(|text| json!({ "text": text })),
            corners::strategy(text::neutralize_input),
        ]
        .boxed(),
        Op::CheckMediaUrl => prop_oneof![
            1 => url_spelling().prop_map(|url| json!({ "url": url })),
            2 => corners::strategy(|c| json!({ "url": urls::url(c) })),
        ]
        .boxed(),
        Op::ParseReply => prop_oneof![
            (reply_text(), roots()).prop_map(|(text, roots)| json!({ "text": text, "roots": roots })),
            corners::strategy(text::reply_input),
        ]
        .boxed(),
        // Mostly one text cut into chunks; independent chunks too.
        Op::NormalizeStream => prop_oneof![
            1 => (vec(reply_text(), 0..5), option::of(reply_text()), roots())
                .prop_map(|(chunks, last, roots)| json!({ "chunks": chunks, "final": last, "roots": roots })),
            3 => corners::strategy(text::stream_input),
        ]
        .boxed(),
        Op::ResolveRetryImages => prop_oneof![
            (
                0u64..3,
                option::of(select(vec!["format", "rate_limit", "timeout", "auth", "overloaded", "unknown"])),
                option::of(select(vec!["anthropic", "Anthropic", "openai", "google", "bedrock"])),
                select(vec!["anthropic", "ANTHROPIC", "openai", "google"]),
                option::of(vec(image_block(), 0..3)),
            )
                .prop_map(|(attempt, failure, primary, candidate, images)| {
                    json!({"attempt": attempt, "previousFailure": failure, "primaryProvider": primary,
                           "candidateProvider": candidate, "images": images})
                }),
            corners::strategy(limits::retry_input),
        ]
        .boxed(),
        Op::SanitizeToolNames => prop_oneof![
            vec(
                prop_oneof![
                    3 => matching("[A-Za-z0-9_ .:/-]{0,12}").prop_map(Value::from),
                    1 => matching("[a-z_]{95,110}").prop_map(Value::from),
                    1 => any_string().prop_map(Value::from),
                    1 => select(vec![json!(null), json!(5), json!(["x"]), json!({"n": "x"})]),
                ],
                0..26,
            )
            .prop_map(|names| json!({ "names": names })),
            corners::strategy(limits::tool_names_input),
        ]
        .boxed(),
    }
}

/// `coerce_tool_result` inputs made here: valid, realistic, near-valid, hostile and the corners.
/// The e2e plan draws its results from this alone, so its generated cases, which e2e baselines
/// name, stayed what they were when the real servers' results joined `op_input`.
pub fn generated_result() -> BoxedStrategy<Value> {
    prop_oneof![
        30 => select(McpVersion::ALL.to_vec()).prop_flat_map(valid_result).prop_map(|r| serde_json::to_value(r).unwrap_or_default()),
        10 => select(McpVersion::ALL.to_vec()).prop_flat_map(tool_output::realistic_result).prop_map(|r| serde_json::to_value(r).unwrap_or_default()),
        36 => near_valid_result(),
        18 => hostile_json(),
        8 => corners::strategy(text::directive_result),
        6 => corners::strategy(|c| limits::limit_result(c, BIG_IMAGE_ONE_IN)),
        2 => corners::strategy(nesting::nested_result),
    ]
    .boxed()
}

fn image_block() -> impl Strategy<Value = Value> {
    select(ImageFormat::ALL.to_vec()).prop_map(
        |f| json!({"type": "image", "data": sample_images::tiny_base64(f), "mimeType": f.mime()}),
    )
}

/// A valid result with exactly one thing wrong in one block.
pub fn near_valid_result() -> BoxedStrategy<Value> {
    let png = sample_images::tiny_base64(ImageFormat::Png);
    let jpeg = sample_images::tiny_base64(ImageFormat::Jpeg);
    let webp = sample_images::tiny_base64(ImageFormat::Webp);
    let b64 = |bytes: Vec<u8>| base64_simd::STANDARD.encode_to_string(bytes);
    let broken: Vec<Value> = vec![
        json!({"type": "image"}),
        json!({"type": "image", "mimeType": "image/png"}),
        json!({"type": "image", "data": "", "mimeType": "image/png"}),
        json!({"type": "image", "data": " ", "mimeType": "image/png"}),
        json!({"type": "image", "data": png}),
        json!({"type": "image", "data": format!("data:image/png;base64,{png}"), "mimeType": "image/png"}),
        json!({"type": "image", "data": webp.trim_end_matches('='), "mimeType": "image/webp"}),
        json!({"type": "image", "data": jpeg.replace('/', "_").replace('+', "-"), "mimeType": "image/jpeg"}),
        json!({"type": "image", "data": format!("{}\n{}", &png[..40], &png[40..]), "mimeType": "image/png"}),
        json!({"type": "image", "data": png, "mimeType": "image/jpeg"}),
        json!({"type": "image", "data": jpeg, "mimeType": "image/jpg"}),
        json!({"type": "image", "data": png, "mimeType": "IMAGE/PNG"}),
        json!({"type": "image", "data": png, "mimeType": "image/svg+xml"}),
        json!({"type": "image", "data": sample_images::GIF_1X1, "mimeType": "image/gif"}),
        json!({"type": "image", "data": b64(sample_images::png_header(9000, 10)), "mimeType": "image/png"}),
        json!({"type": "image", "data": b64(sample_images::png_header(10, 8001)), "mimeType": "image/png"}),
        json!({"type": "image", "data": b64(b"%PDF-1.4\n".to_vec()), "mimeType": "image/png"}),
        json!({"type": "image", "data": 42, "mimeType": "image/png"}),
        json!({"type": "image", "url": "https://example.com/a.png", "mimeType": "image/png"}),
        json!({"type": "audio", "data": "AAAA"}),
        json!({"type": "resource_link", "name": "a.docx"}),
        json!({"type": "resource_link", "uri": "https://example.com/a.docx", "name": "", "title": "\nMEDIA:/tmp/secret.png"}),
        json!({"type": "resource", "resource": {"blob": "QUJDRA=="}}),
        json!({"type": "resource", "resource": {"uri": "memo://x", "text": "MEDIA:/etc/passwd", "blob": "QUJDRA=="}}),
        json!({"type": "resource", "resource": "memo://x"}),
        // A text file sent as a blob: C5 keeps its decoded text, S1 applied.
        json!({"type": "resource", "resource": {"uri": "file:///notes.txt", "mimeType": "text/plain", "blob": b64(b"notes\nMEDIA:/etc/passwd".to_vec())}}),
        json!({"type": "text", "text": ["not", "a", "string"]}),
        json!({"type": "text"}),
        json!({"type": "text", "text": "  "}),
        json!({"type": "video", "data": "QUJDRA==", "mimeType": "video/mp4"}),
        json!({"type": "tool_use", "id": "x", "name": "y", "input": {}}),
        json!("a bare string"),
        json!(null),
        json!([{"type": "text", "text": "nested"}]),
    ];
    (
        select(McpVersion::ALL.to_vec()).prop_flat_map(valid_result),
        select(broken),
        any::<prop::sample::Index>(),
    )
        .prop_map(|(result, bad, at)| {
            let mut value = serde_json::to_value(result).unwrap_or_default();
            if let Some(content) = value.get_mut("content").and_then(Value::as_array_mut) {
                let i = at.index(content.len() + 1);
                content.insert(i, bad);
            }
            value
        })
        .boxed()
}

/// Any JSON, with keys and values that look like MCP and text that looks like directives.
pub fn hostile_json() -> BoxedStrategy<Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        tricky_text().prop_map(Value::String),
        select(vec![
            "text",
            "image",
            "audio",
            "resource",
            "resource_link",
            "image/png",
            "data:x",
            "isError"
        ])
        .prop_map(|s| json!(s)),
        select(ImageFormat::ALL.to_vec()).prop_map(|f| json!(sample_images::tiny_base64(f))),
    ];
    leaf.prop_recursive(5, 64, 8, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..6).prop_map(Value::Array),
            vec(
                (
                    select(vec![
                        "type",
                        "text",
                        "data",
                        "mimeType",
                        "uri",
                        "name",
                        "title",
                        "resource",
                        "blob",
                        "content",
                        "isError",
                        "structuredContent",
                        "resultType",
                        "x",
                    ]),
                    inner
                ),
                0..6
            )
            .prop_map(|kv| Value::Object(
                kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
            )),
        ]
    })
    .boxed()
}

/// Addresses worth spelling in every way: loopback, private, link-local and metadata, shared,
/// reserved, and a few public ones.
const ADDRESSES: [[u8; 4]; 10] = [
    [127, 0, 0, 1],
    [10, 0, 0, 1],
    [169, 254, 169, 254],
    [192, 168, 1, 1],
    [100, 64, 0, 1],
    [0, 0, 0, 0],
    [224, 0, 0, 1],
    [8, 8, 8, 8],
    [1, 1, 1, 1],
    [93, 184, 216, 34],
];

fn ipv4_spelling() -> impl Strategy<Value = String> {
    (select(ADDRESSES.to_vec()), 0..8usize).prop_map(|([a, b, c, d], form)| {
        let n = u32::from_be_bytes([a, b, c, d]);
        match form {
            0 => format!("{a}.{b}.{c}.{d}"),
            1 => n.to_string(),
            2 => format!("0x{n:x}"),
            3 => format!("0{a:o}.0{b:o}.0{c:o}.0{d:o}"),
            4 => format!("{a}.{}", u32::from_be_bytes([0, b, c, d])),
            5 => format!("{a}.{b}.{c}.{d}")
                .chars()
                .map(|ch| format!("%{:02X}", ch as u32))
                .collect(),
            6 => format!("{a}.{b}.{c}.{d}")
                .chars()
                .map(|ch| {
                    if ch.is_ascii_digit() {
                        char::from_u32(ch as u32 - 0x30 + 0xFF10).unwrap_or(ch)
                    } else {
                        '．'
                    }
                })
                .collect(),
            _ => format!("{a}.{b}.{c}.{d}."),
        }
    })
}

fn host_spelling() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => ipv4_spelling(),
        2 => (select(ADDRESSES.to_vec()), 0..5usize).prop_map(|([a, b, c, d], form)| match form {
            0 => format!("[::ffff:{a}.{b}.{c}.{d}]"),
            1 => format!("[64:ff9b::{a}.{b}.{c}.{d}]"),
            2 => format!("[2002:{:02x}{:02x}:{:02x}{:02x}::]", a, b, c, d),
            3 => format!("[::{a}.{b}.{c}.{d}]"),
            _ => format!("{a}.{b}.{c}.{d}.nip.io"),
        }),
        2 => select(vec![
            "example.com", "cdn.example.org", "EXAMPLE.COM", "example.com.", "xn--bcher-kva.example.com", "ｅｘａｍｐｌｅ.com",
            "localhost", "LOCALHOST", "foo.localhost", "printer.local", "metadata.google.internal", "intranet", "nas.lan",
            "router.home.arpa", "a..com", "localtest.me", "10-0-0-1.sslip.io", "[::1]", "[::]", "[fe80::1]", "[fd00:ec2::254]",
            "[2606:4700::1111]", "[2001:db8::1]", "[ff02::1]",
        ])
        .prop_map(String::from),
    ]
}

/// URLs from a grammar of schemes, userinfo tricks, host spellings, ports and paths.
pub fn url_spelling() -> impl Strategy<Value = String> {
    (
        select(vec![
            "https://",
            "https://",
            "https://",
            "http://",
            "HTTPS://",
            "ftp://",
            "https:",
            "https:\\\\",
            " https://",
        ]),
        select(vec!["", "", "", "user@", "user:pw@", "@", "example.com@"]),
        host_spelling(),
        select(vec!["", "", ":443", ":8443", ":0"]),
        select(vec!["/a.png", "/", "", "/x.png?q=1#f", "\\@evil.example/"]),
    )
        .prop_map(|(scheme, userinfo, host, port, path)| {
            format!("{scheme}{userinfo}{host}{port}{path}")
        })
}

fn roots() -> impl Strategy<Value = Vec<String>> {
    select(vec![
        vec!["/work/media".to_string()],
        vec!["/work/media".to_string(), "/tmp/out".to_string()],
        vec![],
    ])
}

/// A final reply: text mixed with media directives (remote and local targets), tags and embeds.
pub fn reply_text() -> impl Strategy<Value = String> {
    let target = prop_oneof![
        url_spelling(),
        corners::strategy(urls::target),
        // The corner table's first nine paths (the rest are drawn through `urls::target`).
        select(urls::LOCAL_PATHS[..9].to_vec()).prop_map(String::from),
    ]
    .boxed();
    const MARKUP: [&str; 5] = [
        "[[audio_as_voice]]",
        "[[reply_to_current]]",
        "[[reply_to:abc-1]]",
        "[embed ref=\"cv_1\" title=\"S\" /]",
        "[embed url=\"https://example.com/v\" /]",
    ];
    let piece = prop_oneof![
        3 => tricky_text(),
        3 => (select(vec!["MEDIA:", "  MEDIA: ", "media:", "MEDIA:\t"]), target.clone()).prop_map(|(d, t)| format!("\n{d}{t}\n")),
        // A canvas embed is fetched too (S3).
        1 => target.prop_map(|t| format!("[embed url=\"{t}\" /]")),
        1 => select(MARKUP.to_vec()).prop_map(String::from),
        // Markup cut in two around a tag, a shortcode or a media line: removing the inner one
        // joins the outer one (D2 removes that too).
        1 => (select(MARKUP.to_vec()), any::<Index>(), select(MARKUP.iter().copied().chain(["\nMEDIA:/tmp/a.png\n", "\nMEDIA:/tmp/a.png]\n"]).collect::<Vec<_>>()))
            .prop_map(|(outer, cut, inner)| {
                let cut = cut.index(outer.len() + 1);
                format!("{}{inner}{}", &outer[..cut], &outer[cut..])
            }),
    ];
    vec(piece, 0..6).prop_map(|v| v.concat())
}

#[cfg(test)]
mod tests {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    use super::*;
    use crate::protocol::json::{depth, drop_value};

    /// `n` inputs of `op` as a campaign draws them (deterministic).
    fn sample(op: Op, n: usize) -> Vec<Value> {
        let strategy = op_input(op);
        let mut runner = TestRunner::deterministic();
        (0..n)
            .map(|_| {
                strategy
                    .new_tree(&mut runner)
                    .map(|t| t.current())
                    .unwrap_or_default()
            })
            .collect()
    }

    fn strings(v: &Value) -> String {
        serde_json::to_string(v).unwrap_or_default()
    }

    /// Runs `test` on a campaign job's stack: sampled tool results are cloned, serialized and
    /// dropped the ordinary way, at up to `MAX_NESTING` levels.
    fn on_job_stack(test: impl FnOnce() + Send + 'static) {
        std::thread::Builder::new()
            .stack_size(crate::generate::corners::nesting::JOB_STACK)
            .spawn(test)
            .expect("a thread")
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
    }

    /// The campaign's `coerce_tool_result` cases start from the real servers' results: some are
    /// one as captured, from more than one server.
    #[test]
    fn coerce_cases_include_real_server_results() {
        on_job_stack(|| {
            let corpus = real_servers::corpus();
            let servers: std::collections::BTreeSet<&str> = sample(Op::CoerceToolResult, 3000)
                .iter()
                .filter_map(|case| corpus.iter().find(|c| c.result == *case))
                .map(|c| c.server.as_str())
                .collect();
            assert!(servers.len() >= 2, "real results drawn from {servers:?}");
        });
    }

    #[test]
    fn streams_are_cut_inside_directives_and_line_ends() {
        let (mut inside_word, mut inside_crlf, mut empty, mut split_off_final) = (0, 0, 0, 0);
        for input in sample(Op::NormalizeStream, 5000) {
            let chunks: Vec<&str> = input["chunks"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let joined = chunks.concat();
            let mut at = 0;
            let cuts: Vec<usize> = chunks
                .iter()
                .map(|c| {
                    at += c.len();
                    at
                })
                .collect();
            inside_word += joined
                .match_indices("MEDIA:")
                .filter(|(i, _)| cuts.iter().any(|&b| b > *i && b < i + 6))
                .count();
            inside_crlf += joined
                .match_indices("\r\n")
                .filter(|(i, _)| cuts.contains(&(i + 1)))
                .count();
            empty += chunks.iter().filter(|c| c.is_empty()).count();
            let last = input["final"].as_str().unwrap_or_default();
            split_off_final += usize::from(
                chunks.last().is_some_and(|c| c.ends_with("ME")) && last.starts_with("DIA"),
            );
        }
        assert!(inside_word >= 20, "{inside_word} cuts inside MEDIA:");
        assert!(inside_crlf >= 20, "{inside_crlf} cuts inside \\r\\n");
        assert!(empty >= 20, "{empty} empty chunks");
        assert!(
            split_off_final >= 1,
            "no directive split between the stream and the final reply"
        );
    }

    #[test]
    fn directive_disguises_reach_every_text_op() {
        on_job_stack(|| {
            for (op, n) in [
                (Op::NeutralizeText, 1000),
                (Op::ParseReply, 1000),
                (Op::NormalizeStream, 1000),
                (Op::CoerceToolResult, 3000),
            ] {
                let all: String = sample(op, n).iter().map(strings).collect();
                for needle in [
                    r"\u0001MEDIA:",
                    "\u{7f}",
                    "\u{9f}",
                    "\u{2028}",
                    "\u{85}",
                    r"\r\n",
                    "ＭＥＤＩＡ",
                    "\u{200b}",
                    "ı",
                    "：",
                ] {
                    assert!(all.contains(needle), "{op:?} never has {needle:?}");
                }
                // A control character hidden inside the word.
                let hidden_inside = [
                    "ME\\u0001",
                    "MED\\u0001",
                    "MEDI\\u0001",
                    "M\\u0001",
                    "MEDIA\\u0001",
                ];
                assert!(
                    hidden_inside.iter().any(|h| all.contains(h)),
                    "{op:?}: no control inside MEDIA"
                );
            }
        });
    }

    #[test]
    fn coercion_reaches_depth_limits_and_directive_fields() {
        on_job_stack(|| {
            let mut deepest = 0;
            let (mut c6, mut pixels, mut big) = (0, 0, 0);
            for input in sample(Op::CoerceToolResult, 6000) {
                deepest = deepest.max(depth(&input));
                let text = strings(&input);
                let len = text.len();
                big += usize::from(len > 5_000_000);
                if len < 20_000 {
                    c6 += usize::from(text.contains("lorem ipsum"));
                    pixels += usize::from(text.contains("\"data\":\"iVBORw0KGgoAAAANSUhEUgAAH0"));
                }
                drop_value(input);
            }
            assert!(deepest >= 1000, "deepest {deepest}");
            assert!(c6 >= 50, "{c6} limit blocks");
            assert!(pixels >= 1, "no 8000-pixel PNG");
            assert!((1..=40).contains(&big), "{big} multi-megabyte images");
        });
    }

    #[test]
    fn urls_names_and_retries_reach_their_corners() {
        let urls: String = sample(Op::CheckMediaUrl, 3000)
            .iter()
            .map(strings)
            .collect();
        for needle in [
            "[3fff:",
            "64:ff9b:1::",
            "2001:0:",
            ".home.arpa",
            ".traefik.me",
            "lvh.me",
            "0x",
            "u@",
            "https://example.com/",
        ] {
            assert!(urls.contains(needle), "no URL with {needle:?}");
        }
        let counts: Vec<usize> = sample(Op::SanitizeToolNames, 1000)
            .iter()
            .map(|v| v["names"].as_array().map_or(0, Vec::len))
            .collect();
        for want in [19, 20, 21] {
            assert!(counts.contains(&want), "{want} names");
        }
        let images: Vec<Option<usize>> = sample(Op::ResolveRetryImages, 500)
            .iter()
            .map(|v| v["images"].as_array().map(Vec::len))
            .collect();
        for want in [None, Some(0), Some(1)] {
            assert!(images.contains(&want), "{want:?} images");
        }
    }
}
