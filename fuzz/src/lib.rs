//! libFuzzer targets (issue 7).
//!
//! Each target's body is a plain function here, so the `fuzz_target!` binaries under
//! `fuzz_targets/` are one-liners (built only with the `libfuzzer` feature, by `cargo xtask fuzz`)
//! and `cargo test` replays the checked-in corpora through the very same functions on stable,
//! without sanitizer flags or libFuzzer. Every function asserts invariants (a failed assertion
//! is a finding), not only the absence of panics.
//!
//! Besides their raw byte forms, the targets have a structured form (see [`STRUCTURED`]): the
//! rest of the input drives the corner builders of `normfuzz::generate::corners` through
//! `arbitrary::Unstructured`, the same builders `normfuzz conform` draws from with proptest, so
//! a corner added there (a directive disguise, a URL family, a size limit, a nesting place, a
//! stream cut) is fuzzed here too.

use arbitrary::Unstructured;
use mock_providers::{Provider, Verdict};
use normfuzz::generate::corners::{self, Choices, limits, nesting, text, urls};
use normfuzz::oracle::directive::{is_directive_line, lines};
use normfuzz::protocol::{Answer, Op};
use normfuzz::reference::image::ImageFormat;
use normfuzz::reference::neutralize::MARKER;
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

/// First byte of a structured input: `0xFF` never starts UTF-8, so no text or JSON input of the
/// raw forms is taken for a structured one by `coerce_bytes`, and the others lose little.
pub const STRUCTURED: u8 = 0xFF;

/// A multi-megabyte image once in this many structured limit cases.
const BIG_IMAGE_ONE_IN: usize = 200;
/// Deepest nesting a fuzz input builds: libFuzzer gains from many inputs, and values of up to
/// `MAX_NESTING` (100,000) levels cut its rate about tenfold; conform campaigns reach those.
const FUZZ_NESTING: usize = 10_000;

/// `arbitrary::Unstructured` as the corner builders' source of choices.
pub struct Draw<'a, 'b>(pub &'a mut Unstructured<'b>);

impl Choices for Draw<'_, '_> {
    fn below(&mut self, n: usize) -> usize {
        self.0.choose_index(n).unwrap_or(0)
    }
}

/// The structured body of `data`, if it is a structured input.
fn structured(data: &[u8]) -> Option<Unstructured<'_>> {
    match data.split_first() {
        Some((&STRUCTURED, rest)) => Some(Unstructured::new(rest)),
        _ => None,
    }
}

fn assert_no_directive(text: &str, place: &str) {
    if let Some(line) = lines(text).find(|l| is_directive_line(l)) {
        panic!("S1: directive line in {place}: {line:?}");
    }
}

/// Arbitrary bytes as a `CallToolResult`: coercion output has no directive, only valid images,
/// is a fixed point of coercion (B2) and is accepted by every mock provider. Structured: a
/// result from the corners (directives in every text field, sizes at every limit ±1, nesting
/// in every place), judged like a conform case as well.
pub fn coerce_bytes(data: &[u8]) {
    if let Some(mut u) = structured(data) {
        let c = &mut Draw(&mut u);
        let input = match c.below(3) {
            0 => text::directive_result(c),
            1 => limits::limit_result(c, BIG_IMAGE_ONE_IN),
            _ => nesting::nested_result_within(c, FUZZ_NESTING).2,
        };
        let output = normfuzz::reference::call(Op::CoerceToolResult, &input)
            .unwrap_or_else(|e| panic!("reference refused a tool result: {e}"));
        let again = normfuzz::reference::call(Op::CoerceToolResult, &output)
            .unwrap_or_else(|e| panic!("reference refused its own output: {e}"));
        assert_eq!(again, output, "B2: coercion output is not a fixed point");
        assert_no_gate(Op::CoerceToolResult, &input, output);
        normfuzz::protocol::json::drop_value(input);
        return;
    }
    let Ok(input) = std::str::from_utf8(data) else {
        return;
    };
    // The coercion's own parser answers only what serde_json answers.
    if let Some(ours) = normfuzz::reference::borrowed_json::parse(input) {
        let theirs: Result<serde_json_borrow::Value<'_>, _> = serde_json::from_str(input);
        assert_eq!(
            Some(ours),
            theirs.ok(),
            "borrowed_json::parse differs from serde_json"
        );
    }
    let Ok(result) = normfuzz::reference::coerce::coerce_json(input) else {
        return;
    };
    check_coerced(&result);
}

fn check_coerced(result: &normfuzz::reference::coerce::AgentToolResult<'_>) {
    for block in &result.content {
        match block {
            normfuzz::reference::coerce::AgentBlock::Text { text, .. } => {
                assert_no_directive(text, "a text block")
            }
            normfuzz::reference::coerce::AgentBlock::Image(image) => {
                if let Err(e) =
                    normfuzz::reference::image::validate_image(image.data(), image.mime_type())
                {
                    panic!("S2: emitted image does not re-validate: {}", e.as_str());
                }
            }
        }
    }
    let bytes = result.to_json_bytes();
    let text = std::str::from_utf8(&bytes).expect("coerced JSON is UTF-8");
    let again = normfuzz::reference::coerce::coerce_json(text).expect("coerced JSON parses");
    assert_eq!(&again, result, "B2: coercion output is not a fixed point");
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
/// (derived from the last byte) gives the same output. Structured: a directive text from the
/// corners, streamed in the chunks the corners cut it into (inside the word, inside `\r\n`,
/// around terminators, anywhere).
pub fn neutralize(data: &[u8]) {
    if let Some(mut u) = structured(data) {
        let c = &mut Draw(&mut u);
        let marked = text::directive_text(c);
        let chunks = text::split(c, &marked);
        check_neutralized(&marked.text, chunks.iter().map(String::as_bytes));
        return;
    }
    let Some((&seed, body)) = data.split_last() else {
        return;
    };
    // Byte chunks of the original bytes (which may split characters): the streamed output must
    // equal the whole-text neutralizer's on the lossy decoding of the same bytes.
    let mut state = u32::from(seed).wrapping_mul(2_654_435_761) | 1;
    let mut rest = body;
    let chunks = std::iter::from_fn(|| {
        if rest.is_empty() {
            return None;
        }
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        let n = (state as usize % (usize::from(seed % 16) + 1) + 1).min(rest.len());
        let (chunk, tail) = rest.split_at(n);
        rest = tail;
        Some(chunk)
    });
    check_neutralized(&String::from_utf8_lossy(body), chunks);
}

fn check_neutralized<'a>(text: &str, chunks: impl Iterator<Item = &'a [u8]>) {
    let out = normfuzz::reference::neutralize::neutralize(text);
    assert_no_directive(&out, "neutralized text");
    assert_eq!(
        normfuzz::reference::neutralize::neutralize(&out),
        out,
        "neutralize is not idempotent"
    );
    let (ins, outs): (Vec<&str>, Vec<&str>) = (lines(text).collect(), lines(&out).collect());
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
    let mut stream = normfuzz::reference::stream::StreamNeutralizer::new();
    let mut streamed = String::new();
    for chunk in chunks {
        stream.push(chunk, &mut streamed);
    }
    stream.finish(&mut streamed);
    assert_eq!(streamed, out, "streaming and whole-text neutralizer differ");
}

/// Arbitrary text as a media URL: an accepted URL's canonical form is accepted again, and the
/// independent `std::net`/`url` judge finds nothing wrong with either (parse differential).
/// Structured: a URL from one U-rule family of the corners, or a public control.
pub fn url_policy(data: &[u8]) {
    let url = match structured(data) {
        Some(mut u) => urls::url(&mut Draw(&mut u)).into(),
        None => String::from_utf8_lossy(data),
    };
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
/// NUL-separated piece is the final reply; the rest is the text. Structured: a reply, or one
/// text from the corners cut into chunks (or independent chunks), whose deliveries must not
/// depend on the cut (B3).
pub fn reply_turn(data: &[u8]) {
    if let Some(mut u) = structured(data) {
        let c = &mut Draw(&mut u);
        if corners::one_in(c, 4) {
            let input = text::reply_input(c);
            let output = normfuzz::reference::call(Op::ParseReply, &input)
                .unwrap_or_else(|e| panic!("reference refused {input}: {e}"));
            assert_no_gate(Op::ParseReply, &input, output);
            return;
        }
        let input = text::stream_input(c);
        let output = normfuzz::reference::call(Op::NormalizeStream, &input)
            .unwrap_or_else(|e| panic!("reference refused {input}: {e}"));
        assert_chunk_invariant(&input, &output);
        assert_no_gate(Op::NormalizeStream, &input, output);
        return;
    }
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

/// B3: the stream's chunks joined into one give the same delivered text and media.
fn assert_chunk_invariant(input: &Value, output: &Value) {
    let joined: String = input["chunks"]
        .as_array()
        .map(|chunks| chunks.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let whole = json!({ "chunks": [joined], "final": input["final"], "roots": input["roots"] });
    let unsplit = normfuzz::reference::call(Op::NormalizeStream, &whole)
        .unwrap_or_else(|e| panic!("reference refused {whole}: {e}"));
    let delivered = |output: &Value| -> (String, Vec<Value>) {
        let deliveries = output["deliveries"].as_array().cloned().unwrap_or_default();
        let text = deliveries
            .iter()
            .filter_map(|d| d["text"].as_str())
            .collect();
        let media = deliveries
            .iter()
            .flat_map(|d| d["mediaUrls"].as_array().cloned().unwrap_or_default())
            .collect();
        (text, media)
    };
    assert_eq!(
        delivered(output),
        delivered(&unsplit),
        "B3: chunks {} deliver differently from their join",
        input["chunks"]
    );
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
/// With bit 2 of the first byte set, the input is a corner: no image, one image or `null` on a
/// retry; 19, 20 or 21 tool names of 99, 100 or 101 characters.
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
        _ if mode & 4 != 0 => {
            let mut u = Unstructured::new(body);
            let c = &mut Draw(&mut u);
            if op == Op::ResolveRetryImages {
                limits::retry_input(c)
            } else {
                limits::tool_names_input(c)
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Structured inputs of pseudo-random bytes (deterministic) through every target that has a
    /// structured form: the corners reach the targets, and the reference passes them.
    #[test]
    fn structured_inputs_pass_their_targets() {
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let mut bytes = move |n: usize| -> Vec<u8> {
            (0..n)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    (state >> 24) as u8
                })
                .collect()
        };
        let structured: [Target; 4] = [coerce_bytes, neutralize, url_policy, reply_turn];
        for target in structured {
            for _ in 0..150 {
                let mut data = vec![STRUCTURED];
                data.extend(bytes(200));
                target(&data);
            }
        }
        for mode in [4u8, 5] {
            for _ in 0..150 {
                let mut data = vec![mode];
                data.extend(bytes(200));
                retry(&data);
            }
        }
    }

    /// The entries of a libFuzzer dictionary, decoded.
    fn dictionary(target: &str) -> Vec<Vec<u8>> {
        let path = format!("{}/dicts/{target}.dict", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        text.lines()
            .filter_map(|l| l.split_once('=').map(|(_, v)| v))
            .filter_map(|v| v.strip_prefix('"')?.strip_suffix('"'))
            .map(|v| {
                let (mut out, mut rest) = (Vec::new(), v.as_bytes());
                while let Some((&b, tail)) = rest.split_first() {
                    match (b, tail) {
                        (b'\\', [b'x', h, l, more @ ..]) => {
                            let hex = std::str::from_utf8(&[*h, *l]).unwrap_or("00").to_string();
                            out.push(u8::from_str_radix(&hex, 16).unwrap_or(0));
                            rest = more;
                        }
                        (b'\\', [c, more @ ..]) => {
                            out.push(*c);
                            rest = more;
                        }
                        _ => {
                            out.push(b);
                            rest = tail;
                        }
                    }
                }
                out
            })
            .collect()
    }

    /// The raw byte forms reach the corners through the dictionaries: every terminator, hidden
    /// character and colon of `corners::text`, every name of `corners::urls`.
    #[test]
    fn dictionaries_hold_the_corner_tokens() {
        let directive: Vec<&str> = text::TERMINATORS
            .iter()
            .chain(&text::HIDDEN)
            .chain(&text::COLONS)
            .copied()
            .collect();
        let suffixes: Vec<String> = urls::SPECIAL_SUFFIXES
            .iter()
            .map(|s| format!(".{s}"))
            .collect();
        let names: Vec<&str> = urls::WILDCARD_SERVICES
            .iter()
            .chain(&urls::REBINDING_SERVICES)
            .chain(&urls::LOOPBACK_SERVICES)
            .copied()
            .chain(suffixes.iter().map(String::as_str))
            .collect();
        for (target, tokens) in [
            ("neutralize", &directive),
            ("reply_turn", &directive),
            ("coerce_bytes", &directive),
            ("url_policy", &names),
            ("reply_turn", &names),
        ] {
            let dict = dictionary(target);
            for token in tokens.iter() {
                assert!(
                    dict.iter()
                        .any(|entry| entry.windows(token.len()).any(|w| w == token.as_bytes())),
                    "{target}.dict lacks {token:?}"
                );
            }
            assert!(
                dict.contains(&vec![STRUCTURED]) || target == "retry",
                "{target}.dict lacks the structured marker"
            );
        }
    }
}
