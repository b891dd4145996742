//! libFuzzer targets (issue 7).
//!
//! Each target's body is a plain function here, so the `fuzz_target!` binaries under
//! `fuzz_targets/` are one-liners (built only with the `libfuzzer` feature, by `cargo xtask fuzz`)
//! and `cargo test` replays the checked-in corpora through the very same functions on stable,
//! without sanitizer flags or libFuzzer. Every function asserts invariants (a failed assertion
//! is a finding), not only the absence of panics.

use arbitrary::Unstructured;
use mock_providers::{Provider, Verdict};
use normfuzz::oracle::directive::{is_directive_line, lines};
use normfuzz::reference::image::ImageFormat;
use normfuzz::reference::neutralize::MARKER;
use normfuzz::protocol::{Answer, Op};
use serde_json::{Value, json};

/// One fuzz target's body.
pub type Target = fn(&[u8]);

/// Every target by name, for the replay test: the `[[bin]]` entries of `Cargo.toml` (the list
/// build.sh and xtask read) in their order, as `tests/replay.rs` checks.
pub const TARGETS: [(&str, Target); 6] = [
    ("coerce_bytes", coerce_bytes),
    ("neutralize", neutralize),
    ("url_policy", url_policy),
    ("reply_turn", reply_turn),
    ("providers", providers),
    ("retry", retry),
];

/// The target function called `name`.
pub fn target(name: &str) -> Option<Target> {
    TARGETS.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
}

fn assert_no_directive(text: &str, place: &str) {
    if let Some(line) = lines(text).find(|l| is_directive_line(l)) {
        panic!("S1: directive line in {place}: {line:?}");
    }
}

/// Arbitrary bytes as a `CallToolResult`: coercion output has no directive, only valid images,
/// is a fixed point of coercion (B2) and is accepted by every mock provider.
pub fn coerce_bytes(data: &[u8]) {
    let Ok(input) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(result) = normfuzz::reference::coerce::coerce_json(input) else {
        return;
    };
    for block in &result.content {
        match block {
            normfuzz::reference::coerce::AgentBlock::Text { text } => {
                assert_no_directive(text, "a text block")
            }
            normfuzz::reference::coerce::AgentBlock::Image(image) => {
                if let Err(e) = normfuzz::reference::image::validate_image(image.data(), image.mime_type()) {
                    panic!("S2: emitted image does not re-validate: {}", e.as_str());
                }
            }
        }
    }
    let bytes = result.to_json_bytes();
    let text = std::str::from_utf8(&bytes).expect("coerced JSON is UTF-8");
    let again = normfuzz::reference::coerce::coerce_json(text).expect("coerced JSON parses");
    assert_eq!(again, result, "B2: coercion output is not a fixed point");
    let value: Value = serde_json::from_slice(&bytes).expect("coerced JSON parses as a Value");
    let content = &value["content"];
    for provider in Provider::ALL {
        let body = mock_providers::tool_result_request(provider, content);
        if let verdict @ Verdict::Rejected { status, .. } =
            mock_providers::validate(provider, &body)
        {
            panic!(
                "provider: {} answered {status} to a coerced result: {:?}",
                provider.name(),
                verdict.message()
            );
        }
    }
}

/// Arbitrary text through the neutralizer: no directive left (independent checker), idempotent,
/// non-directive lines byte-identical, and the streaming neutralizer over an arbitrary chunking
/// (derived from the last byte) gives the same output.
pub fn neutralize(data: &[u8]) {
    let Some((&seed, body)) = data.split_last() else {
        return;
    };
    let text = String::from_utf8_lossy(body);
    let out = normfuzz::reference::neutralize::neutralize(&text);
    assert_no_directive(&out, "neutralized text");
    assert_eq!(
        normfuzz::reference::neutralize::neutralize(&out),
        out,
        "neutralize is not idempotent"
    );
    let (ins, outs): (Vec<&str>, Vec<&str>) = (lines(&text).collect(), lines(&out).collect());
    assert_eq!(ins.len(), outs.len(), "line count changed");
    for (i, o) in ins.iter().zip(&outs) {
        if is_directive_line(i) {
            assert_eq!(
                o.len(),
                i.len() + MARKER.len(),
                "directive line {i:?} became {o:?}"
            );
            assert_eq!(
                &o.replacen(MARKER, "", 1),
                i,
                "directive line {i:?} became {o:?}"
            );
        } else {
            assert_eq!(i, o, "non-directive line changed");
        }
    }
    // Streaming over byte chunks (which may split characters) of the original bytes: its
    // output must equal the whole-text neutralizer's on the lossy decoding of the same bytes.
    let mut state = u32::from(seed).wrapping_mul(2_654_435_761) | 1;
    let mut stream = normfuzz::reference::stream::StreamNeutralizer::new();
    let mut streamed = String::new();
    let mut rest = body;
    while !rest.is_empty() {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        let n = (state as usize % (usize::from(seed % 16) + 1) + 1).min(rest.len());
        let (chunk, tail) = rest.split_at(n);
        stream.push(chunk, &mut streamed);
        rest = tail;
    }
    stream.finish(&mut streamed);
    assert_eq!(streamed, out, "streaming and whole-text neutralizer differ");
}

/// Arbitrary text as a media URL: an accepted URL's canonical form is accepted again, and the
/// independent `std::net`/`url` judge finds nothing wrong with either (parse differential).
pub fn url_policy(data: &[u8]) {
    let url = String::from_utf8_lossy(data);
    let verdict = normfuzz::reference::url_policy::check_media_url(&url);
    let input = json!({ "url": url });
    let answer = normfuzz::reference::call(Op::CheckMediaUrl, &input).expect("url is a string");
    assert_no_gate(Op::CheckMediaUrl, &input, answer);
    if !verdict.allowed {
        return;
    }
    let canonical = verdict
        .canonical
        .unwrap_or_else(|| panic!("accepted {url:?} without a canonical form"));
    let again = normfuzz::reference::url_policy::check_media_url(&canonical);
    assert!(
        again.allowed,
        "canonical {canonical:?} of accepted {url:?} is refused: {}",
        again.reason.as_str()
    );
    if let Some(problem) = normfuzz::oracle::url::remote_problem(&canonical) {
        panic!("S3: canonical {canonical:?} of accepted {url:?}: {problem:?}");
    }
}

/// Judges the reference's own answer: any gate violation is a finding.
fn assert_no_gate(op: Op, input: &Value, output: Value) {
    let answer = Answer::Output(output);
    let gate: Vec<_> = normfuzz::oracle::judge::judge(op, input, &answer, &answer)
        .into_iter()
        .filter(|v| v.gate)
        .collect();
    assert!(gate.is_empty(), "{op:?} on {input}: {gate:?}");
}

fn roots(mode: u8) -> Value {
    match mode % 3 {
        0 => json!([]),
        1 => json!(["/work/media"]),
        _ => json!(["/work/media", "/tmp/out"]),
    }
}

/// A final reply or a streamed turn: first byte picks the op, roots and whether the last
/// NUL-separated piece is the final reply; the rest is the text.
pub fn reply_turn(data: &[u8]) {
    let Some((&mode, body)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(body);
    let (op, input) = if mode & 1 == 0 {
        (
            Op::ParseReply,
            json!({ "text": text, "roots": roots(mode >> 2) }),
        )
    } else {
        let mut chunks: Vec<&str> = text.split('\0').collect();
        let last = if mode & 2 != 0 { chunks.pop() } else { None };
        (
            Op::NormalizeStream,
            json!({ "chunks": chunks, "final": last, "roots": roots(mode >> 2) }),
        )
    };
    let output = normfuzz::reference::call(op, &input)
        .unwrap_or_else(|e| panic!("reference refused {op:?} {input}: {e}"));
    assert_no_gate(op, &input, output);
}

/// Arbitrary bytes as a request body to every provider: never a panic, never a 5xx.
pub fn providers(data: &[u8]) {
    for provider in Provider::ALL {
        let verdict = mock_providers::validate(provider, data);
        if let Verdict::Rejected { status, .. } = &verdict {
            assert!(
                (400..500).contains(status),
                "{} answered {status}: {:?}",
                provider.name(),
                verdict.message()
            );
            let _ = verdict.message();
        }
    }
}

const PROVIDER_NAMES: [&str; 10] = [
    "anthropic",
    "Anthropic",
    "openai",
    "openai-responses",
    "gemini",
    "google",
    "bedrock",
    "ollama",
    " anthropic ",
    "",
];
const FAILURES: [Option<&str>; 7] = [
    None,
    Some("format"),
    Some("rate_limit"),
    Some("timeout"),
    Some("auth"),
    Some("overloaded"),
    Some("other"),
];

fn arbitrary_text(u: &mut Unstructured<'_>) -> String {
    let len = u.int_in_range(0..=40).unwrap_or(0);
    let bytes = u.bytes(len.min(u.len())).unwrap_or_default();
    String::from_utf8_lossy(bytes).into_owned()
}

fn arbitrary_image(u: &mut Unstructured<'_>) -> Value {
    let format = *u.choose(&ImageFormat::ALL).unwrap_or(&ImageFormat::Png);
    let data: Value = match u.int_in_range(0..=3).unwrap_or(0) {
        0 => normfuzz::generate::sample_images::tiny_base64(format).into(),
        1 => normfuzz::generate::sample_images::GIF_1X1.into(),
        2 => arbitrary_text(u).into(),
        _ => Value::Null,
    };
    let mime = match u.int_in_range(0..=2).unwrap_or(0) {
        0 => Value::from(format.mime()),
        1 => Value::from(arbitrary_text(u)),
        _ => Value::Null,
    };
    json!({ "type": "image", "data": data, "mimeType": mime })
}

/// Retry-image policy and tool-name sanitizing on structured protocol input (or, when the rest
/// parses as JSON, that JSON as is); a refusal is fine, an answer must break no gate rule.
pub fn retry(data: &[u8]) {
    let Some((&mode, body)) = data.split_first() else {
        return;
    };
    let op = if mode & 1 == 0 {
        Op::ResolveRetryImages
    } else {
        Op::SanitizeToolNames
    };
    let input = match serde_json::from_slice::<Value>(body) {
        Ok(value) if mode & 2 != 0 => value,
        _ => {
            let mut u = Unstructured::new(body);
            if op == Op::ResolveRetryImages {
                let images: Option<Vec<Value>> = if u.arbitrary().unwrap_or(false) {
                    let n = u.int_in_range(0..=4).unwrap_or(0);
                    Some((0..n).map(|_| arbitrary_image(&mut u)).collect())
                } else {
                    None
                };
                json!({
                    "attempt": u.int_in_range(0..=3u64).unwrap_or(0),
                    "previousFailure": u.choose(&FAILURES).ok().copied().flatten(),
                    "primaryProvider": u.choose(&PROVIDER_NAMES).ok().copied(),
                    "candidateProvider": u.choose(&PROVIDER_NAMES).copied().unwrap_or("openai"),
                    "images": images,
                })
            } else {
                let n = u.int_in_range(0..=30).unwrap_or(0);
                let names: Vec<Value> = (0..n)
                    .map(|_| match u.int_in_range(0..=5).unwrap_or(0) {
                        0 => Value::from(u.int_in_range(0..=9i64).unwrap_or(0)),
                        1 => Value::Null,
                        _ => Value::from(arbitrary_text(&mut u)),
                    })
                    .collect();
                json!({ "names": names })
            }
        }
    };
    if let Ok(output) = normfuzz::reference::call(op, &input) {
        assert_no_gate(op, &input, output);
    }
}
