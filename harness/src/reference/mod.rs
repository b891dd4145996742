//! The reference normalizer: the executable form of the rules in `docs/spec/rules.md`.
//!
//! `call` answers the SUT protocol's ops, protocol JSON in and out; it is used in process by the
//! differential runner and over stdio by `normfuzz serve-reference`. The submodules are the
//! normalizer's steps: tool-result coercion (`coerce`, `image`, `json_text`), untrusted text
//! (`neutralize`, `stream`, `vision`), final replies and delivery (`reply`, `embed`,
//! `media_policy`, `turn`, `sse`), remote URLs (`url_policy`) and fallback retries (`retry`).

pub mod borrowed_json;
pub mod coerce;
pub mod embed;
pub mod image;
pub mod json_text;
mod json_unescape;
pub mod media_policy;
pub mod neutralize;
pub mod reply;
pub mod retry;
pub mod sse;
pub mod stream;
pub mod turn;
pub mod url_policy;
pub mod vision;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::protocol::Op;

/// Nesting up to which an op runs on the caller's stack.
const INLINE_DEPTH: usize = 128;
/// Stack for each level of nesting when serde's derived code, `Value`'s `Clone`, `Serialize`
/// and `Drop` recurse over a deeper input. Measured at most 2.2 KiB unoptimized (deserializing
/// a `Value` field of 1-key objects) and 0.7 KiB at opt-level 1: about twice that.
const STACK_PER_LEVEL: usize = if cfg!(debug_assertions) { 4096 } else { 2048 };

/// Answers one request as the reference does; `Err` is a refusal (`{"error": ...}`).
///
/// Any input, nested to any depth (B1): `coerce_tool_result` never recurses over its input
/// (its borrowed view is built and dropped iteratively, and its JSON text stops at a fixed
/// nesting), and the other ops run an input nested deeper than [`INLINE_DEPTH`] on a thread
/// whose stack is sized to that depth. An output may be as deep as the input
/// (`resolve_retry_images` passes images through): drop it with
/// [`crate::protocol::json::drop_value`] when it may be.
pub fn call(op: Op, input: &Value) -> Result<Value, String> {
    if op == Op::CoerceToolResult {
        return answer(op, input);
    }
    let depth = crate::protocol::json::depth(input);
    if depth <= INLINE_DEPTH {
        return answer(op, input);
    }
    let stack = depth
        .saturating_add(64)
        .saturating_mul(STACK_PER_LEVEL)
        .saturating_add(1 << 20);
    std::thread::scope(|scope| {
        let deep = std::thread::Builder::new()
            .name("deep input".into())
            .stack_size(stack)
            .spawn_scoped(scope, || answer(op, input))
            .map_err(|e| format!("input nested {depth} levels deep: no stack for it ({e})"))?;
        deep.join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

fn answer(op: Op, input: &Value) -> Result<Value, String> {
    match op {
        Op::CoerceToolResult => {
            let borrowed = crate::protocol::json::borrow(input);
            let output = to_json(&crate::reference::coerce::coerce_tool_result(&borrowed));
            crate::protocol::json::drop_borrowed(borrowed);
            output
        }
        Op::NeutralizeText => {
            let text = input
                .get("text")
                .and_then(Value::as_str)
                .ok_or("input.text must be a string")?;
            Ok(json!({ "text": crate::reference::neutralize::neutralize(text) }))
        }
        Op::CheckMediaUrl => {
            let url = input
                .get("url")
                .and_then(Value::as_str)
                .ok_or("input.url must be a string")?;
            let verdict = crate::reference::url_policy::check_media_url(url);
            Ok(json!({ "allowed": verdict.allowed, "reason": verdict.reason.as_str() }))
        }
        Op::ParseReply => to_json(&parse::<crate::reference::reply::ParseReplyInput>(input)?.run()),
        Op::NormalizeStream => {
            to_json(&parse::<crate::reference::turn::NormalizeStreamInput>(input)?.run())
        }
        Op::ResolveRetryImages => {
            to_json(&parse::<crate::reference::retry::RetryImagesInput>(input)?.run())
        }
        Op::SanitizeToolNames => {
            to_json(&parse::<crate::reference::retry::SanitizeToolNamesInput>(input)?.run())
        }
    }
}

fn parse<T: DeserializeOwned>(input: &Value) -> Result<T, String> {
    // serde also builds a struct from a JSON array of its fields in order; every op's input is
    // an object (sut-protocol.md), so `[["r"]]` is refused, not read as `{"names": ["r"]}`
    // (the retry fuzz target found the reference answering that while the judge saw no names).
    if !input.is_object() {
        return Err("input must be a JSON object".into());
    }
    T::deserialize(input).map_err(|e| format!("input does not match the op's schema: {e}"))
}

fn to_json(output: &impl Serialize) -> Result<Value, String> {
    serde_json::to_value(output).map_err(|e| format!("output not serializable: {e}"))
}

/// Serves the reference over the SUT protocol: handshake, then one answer line per request line.
/// Output is flushed whenever no further request is already buffered, so pipelined batches
/// cost one write each. A request may nest to any depth: it is read, answered, written and
/// dropped without recursion over its input (see [`call`]).
pub fn serve<R: std::io::Read>(
    mut input: std::io::BufReader<R>,
    mut output: impl std::io::Write,
) -> std::io::Result<()> {
    use crate::protocol::json;
    use std::io::BufRead;
    let ops: Vec<&str> = Op::ALL.iter().map(|op| op.as_str()).collect();
    let handshake =
        json!({ "normfuzz": crate::protocol::VERSION, "name": "normfuzz reference", "ops": ops });
    writeln!(output, "{handshake}")?;
    output.flush()?;
    let mut line = Vec::new();
    let mut answer = Vec::new();
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            return output.flush();
        }
        if let Some(coerced) = coerce_fast(&line) {
            output.write_all(&coerced)?;
            if input.buffer().is_empty() {
                output.flush()?;
            }
            continue;
        }
        let (id, result) = match crate::protocol::parse_request(&line) {
            Ok(request) => {
                let result = call(request.op, &request.input);
                json::drop_value(request.input);
                (Value::from(request.id), result)
            }
            Err(e) => {
                let id = match json::parse_value(&line) {
                    Ok(Value::Object(mut fields)) => {
                        let id = fields.remove("id");
                        json::drop_value(Value::Object(fields));
                        id
                    }
                    Ok(other) => {
                        json::drop_value(other);
                        None
                    }
                    Err(_) => None,
                };
                (id.unwrap_or(Value::Null), Err(format!("bad request: {e}")))
            }
        };
        answer.clear();
        answer.extend_from_slice(b"{\"id\":");
        json::write_value(&mut answer, &id);
        json::drop_value(id);
        match result {
            Ok(out) => {
                answer.extend_from_slice(b",\"output\":");
                json::write_value(&mut answer, &out);
                json::drop_value(out);
            }
            Err(message) => {
                answer.extend_from_slice(b",\"error\":");
                json::write_str(&mut answer, &message);
            }
        }
        answer.extend_from_slice(b"}\n");
        output.write_all(&answer)?;
        // Never block on input with answers unflushed: the harness may be waiting for them.
        if input.buffer().is_empty() {
            output.flush()?;
        }
    }
}

/// The answer line to a `coerce_tool_result` request, coerced straight from the request's input
/// text (what `normfuzz coerce` and the benchmarks run) instead of through a `Value` tree, its
/// borrowed view and a `Value` answer: most of serve-reference's time in a campaign. None for
/// any other request, which the general path answers (an input nested beyond serde_json's 128
/// levels is parsed iteratively by `coerce_json`, as for `normfuzz coerce`).
fn coerce_fast(line: &[u8]) -> Option<Vec<u8>> {
    #[derive(serde::Deserialize)]
    struct RawRequest<'a> {
        id: u64,
        op: Op,
        #[serde(borrow)]
        input: &'a serde_json::value::RawValue,
    }
    let request: RawRequest<'_> = serde_json::from_slice(line).ok()?;
    if request.op != Op::CoerceToolResult {
        return None;
    }
    let result = crate::reference::coerce::coerce_json(request.input.get()).ok()?;
    let mut answer = format!("{{\"id\":{},\"output\":", request.id).into_bytes();
    answer.extend_from_slice(&result.to_json_bytes());
    answer.extend_from_slice(b"}\n");
    Some(answer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::json::{self, deep_text};
    use crate::reference::json_text::BLOCK_TEXT_MAX;

    const MILLION: usize = 1_000_000;

    /// serve-reference's coerce fast path answers what the general path answers, inputs nested
    /// far beyond serde_json's 128 levels included (coerce_json parses those iteratively), and
    /// leaves other ops to the general path.
    #[test]
    fn the_coerce_fast_path_answers_as_the_general_path() {
        let png =
            crate::generate::sample_images::tiny_base64(crate::reference::image::ImageFormat::Png);
        let inputs = [
            json!({"content": [{"type": "text", "text": "ok\nMEDIA:/tmp/x.png\u{2028}"},
                {"type": "image", "data": png, "mimeType": "image/png"},
                {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}, 5]}),
            json!({"structuredContent": {"a": [1, 2]}, "isError": true}),
            json!([1, "not an object"]),
            json!({"content": "text"}),
        ];
        for (id, input) in inputs.iter().enumerate() {
            let mut line = Vec::new();
            crate::protocol::write_request(&mut line, id as u64, Op::CoerceToolResult, input);
            let fast = coerce_fast(&line).expect("a coerce request");
            let fast: Value = serde_json::from_slice(&fast).unwrap();
            assert_eq!(fast["id"], json!(id));
            assert_eq!(
                fast["output"],
                call(Op::CoerceToolResult, input).unwrap(),
                "{input}"
            );
        }
        let mut line = Vec::new();
        crate::protocol::write_request(&mut line, 1, Op::NeutralizeText, &json!({"text": "x"}));
        assert!(coerce_fast(&line).is_none());
        let deep = format!(
            r#"{{"content":[{{"type":"text","text":"a"}},{}]}}"#,
            deep_text(MILLION / 10, false)
        );
        let line = format!(r#"{{"id":7,"op":"coerce_tool_result","input":{deep}}}"#);
        let fast: Value = serde_json::from_slice(&coerce_fast(line.as_bytes()).unwrap()).unwrap();
        let input = json::parse_value(deep.as_bytes()).unwrap();
        assert_eq!(fast["output"], call(Op::CoerceToolResult, &input).unwrap());
        json::drop_value(input);
    }

    #[test]
    fn inputs_are_objects_not_arrays_of_fields() {
        for (op, fields) in [
            (Op::SanitizeToolNames, json!([["r"]])),
            (Op::ParseReply, json!(["MEDIA:/x", ["/r"]])),
            (Op::NormalizeStream, json!([["a"], null, ["/r"]])),
            (
                Op::ResolveRetryImages,
                json!([1, null, null, "openai", null]),
            ),
        ] {
            assert!(call(op, &fields).is_err(), "{op:?} read {fields}");
        }
        assert_eq!(
            call(Op::SanitizeToolNames, &json!({"names": ["r"]})),
            Ok(json!({"names": ["r"]}))
        );
    }

    /// The texts of a `coerce_tool_result` output, which must be a normal result.
    fn texts(output: &Value) -> Vec<&str> {
        let content = output["content"].as_array().expect("content");
        assert!(!content.is_empty());
        content
            .iter()
            .map(|block| {
                assert_eq!(block["type"], "text", "{block}");
                block["text"].as_str().expect("text")
            })
            .collect()
    }

    /// C8/B1 at a million levels: any JSON value is coerced to a normal result, whose C6/C8
    /// text stays bounded, for arrays and objects in every place a result can hold them.
    #[test]
    fn coerce_takes_a_million_levels_in_every_place() {
        for object in [false, true] {
            let deep = deep_text(MILLION, object);
            for (doc, expected) in [
                (
                    deep.clone(),
                    if object {
                        "[tool returned no content]"
                    } else {
                        "[tool result is not a JSON object: [[["
                    },
                ),
                (
                    format!(
                        r#"{{"content":[{{"type":"mystery","k":{deep}}},{{"type":"text","text":"kept"}}]}}"#
                    ),
                    r#"{"type":"mystery","k":"#,
                ),
                (
                    format!(r#"{{"content":[{deep}]}}"#),
                    if object { r#"{"k":{"k":"# } else { "[[[[" },
                ),
                (
                    format!(r#"{{"content":{deep}}}"#),
                    if object { r#"{"k":{"k":"# } else { "[[[[" },
                ),
                (
                    format!(r#"{{"structuredContent":{deep}}}"#),
                    if object { r#"{"k":{"k":"# } else { "[[[[" },
                ),
                (
                    format!(r#"{{"resultType":"input_required","k":{deep}}}"#),
                    "[tool requires input",
                ),
            ] {
                let input = json::parse_value(doc.as_bytes()).expect("deep JSON parses");
                let output = call(Op::CoerceToolResult, &input).expect("coerced");
                json::drop_value(input);
                let texts = texts(&output);
                assert!(
                    texts[0].starts_with(expected),
                    "{}",
                    &texts[0][..60.min(texts[0].len())]
                );
                for text in &texts {
                    assert!(text.len() <= BLOCK_TEXT_MAX + 64, "{}", text.len());
                    assert!(!text.contains("recursion"), "{text}");
                }
            }
        }
    }

    /// The other ops take any depth too: on a stack sized to it, images passed through whole.
    #[test]
    fn every_op_takes_deep_inputs() {
        let deep = deep_text(100_000, true);
        let retry = format!(
            r#"{{"attempt":0,"previousFailure":null,"primaryProvider":null,"candidateProvider":"x","images":[{deep}]}}"#
        );
        let input = json::parse_value(retry.as_bytes()).unwrap();
        let output = call(Op::ResolveRetryImages, &input).expect("answered");
        assert_eq!(json::depth(&output), 100_002);
        json::drop_value(output);
        json::drop_value(input);
        let names = format!(r#"{{"names":["ok",{deep},"b c"]}}"#);
        let input = json::parse_value(names.as_bytes()).unwrap();
        assert_eq!(
            call(Op::SanitizeToolNames, &input),
            Ok(json!({"names": ["ok", "bc"]}))
        );
        json::drop_value(input);
        for (op, doc) in [
            (
                Op::ParseReply,
                format!(r#"{{"text":"a","roots":[{deep}]}}"#),
            ),
            (
                Op::NormalizeStream,
                format!(r#"{{"chunks":{deep},"final":null,"roots":[]}}"#),
            ),
            (Op::NeutralizeText, format!(r#"{{"text":{deep}}}"#)),
            (
                Op::CheckMediaUrl,
                format!(r#"{{"url":"https://example.com/a.png","x":{deep}}}"#),
            ),
        ] {
            let input = json::parse_value(doc.as_bytes()).unwrap();
            let answer = call(op, &input);
            json::drop_value(input);
            match answer {
                Ok(output) => json::drop_value(output),
                Err(refusal) => assert!(!refusal.contains("recursion"), "{refusal}"),
            }
        }
    }

    /// `serve-reference` answers request lines a million levels deep, then goes on.
    #[test]
    fn serve_answers_million_deep_requests() {
        let mut requests = String::new();
        for (id, object) in [(1, false), (2, true)] {
            let deep = deep_text(MILLION, object);
            requests.push_str(&format!(
                r#"{{"id":{id},"op":"coerce_tool_result","input":{{"content":[{deep}]}}}}"#
            ));
            requests.push('\n');
        }
        let deep = deep_text(MILLION, false);
        requests.push_str(&format!(
            r#"{{"id":3,"op":"coerce_tool_result","input":{deep}}}"#
        ));
        requests.push('\n');
        // A bad request whose id is deep, one with a deep extra field, then a plain one.
        requests.push_str(&format!(
            r#"{{"id":{deep},"op":"neutralize_text","input":1}}"#
        ));
        requests.push('\n');
        requests.push_str(&format!(
            r#"{{"id":5,"op":"sanitize_tool_names","x":{deep},"input":{{"names":["a"]}}}}"#
        ));
        requests.push('\n');
        requests.push_str(r#"{"id":6,"op":"neutralize_text","input":{"text":"MEDIA:/x"}}"#);
        requests.push('\n');
        let mut out = Vec::new();
        serve(std::io::BufReader::new(requests.as_bytes()), &mut out).expect("served");
        let lines: Vec<&[u8]> = out
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .collect();
        assert_eq!(lines.len(), 7, "handshake and six answers");
        for (line, id) in lines[1..4].iter().zip(1..) {
            let answer = json::parse_value(line).expect("answer parses");
            assert_eq!(answer["id"], id);
            let texts = texts(&answer["output"]);
            assert!(texts[0].len() <= BLOCK_TEXT_MAX + 64);
            json::drop_value(answer);
        }
        let bad = json::parse_value(lines[4]).expect("answer parses");
        assert!(
            bad["error"]
                .as_str()
                .expect("refused")
                .starts_with("bad request")
        );
        assert_eq!(json::depth(&bad["id"]), MILLION);
        json::drop_value(bad);
        let plain: Value = serde_json::from_slice(lines[5]).expect("answer");
        assert_eq!(plain, json!({"id": 5, "output": {"names": ["a"]}}));
        let plain: Value = serde_json::from_slice(lines[6]).expect("answer");
        assert_eq!(plain["output"]["text"], "[neutralized] MEDIA:/x");
    }
}
