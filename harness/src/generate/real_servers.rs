//! Real MCP servers' tool results, captured off the wire by `cargo xtask capture-servers` into
//! `corpus/real-servers/<server>@<version>.jsonl` (one call a line: `{"server", "version",
//! "tool", "arguments", "result"}`), included at compile time (the list is `build.rs`'s).
//!
//! They seed `coerce_tool_result` cases (`real_result`): a result as the server sent it, or with
//! one field swapped for a corner value (a directive text, a U-rule URL, an image at the pixel
//! limit, an `isError` that is not a boolean), so the corners reach the shapes real servers
//! send. `normfuzz conform --inputs` replays the files as they are.

use std::sync::LazyLock;

use serde::Deserialize;
use serde_json::{Value, json};

use super::corners::{Choices, limits, text, urls};

/// One captured call.
#[derive(Debug, Clone, Deserialize)]
pub struct Capture {
    pub server: String,
    pub version: String,
    pub tool: String,
    /// The `tools/call` result as the server wrote it.
    pub result: Value,
}

impl Capture {
    /// `server@version tool`: where a case came from.
    pub fn source(&self) -> String {
        format!("{}@{} {}", self.server, self.version, self.tool)
    }
}

/// The captures of one file's text, one a non-blank line, each with its line number; the error
/// names the line.
pub fn parse(text: &str) -> Result<Vec<(usize, Capture)>, String> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(i, line)| {
            serde_json::from_str(line)
                .map(|capture| (i + 1, capture))
                .map_err(|e| format!("line {}: {e}", i + 1))
        })
        .collect()
}

/// The checked-in files: (name, text).
const FILES: &[(&str, &str)] = include!(concat!(env!("OUT_DIR"), "/real_servers.rs"));

/// Every checked-in capture, parsed once. A file that does not parse is a build of a broken
/// corpus: `cargo test` fails on it (`tests::the_corpus_parses`); here it adds nothing.
pub fn corpus() -> &'static [Capture] {
    static ALL: LazyLock<Vec<Capture>> = LazyLock::new(|| {
        FILES
            .iter()
            .flat_map(|(_, text)| parse(text).unwrap_or_default())
            .map(|(_, capture)| capture)
            .collect()
    });
    &ALL
}

/// A real result: as captured, or with one field swapped for a corner value; one draw in four
/// keeps only the part that matters (the swapped block or key, else the first block), which is
/// also where shrinking goes (the first entry of every choice is the plainest), so a finding
/// first seen on a real result shrinks to the block that shows it.
pub fn real_result(c: &mut dyn Choices) -> Value {
    let all = corpus();
    if all.is_empty() {
        return json!({ "content": [] });
    }
    let mut result = all[c.below(all.len())].result.clone();
    let swapped = if c.below(2) == 1 {
        swap_one(c, &mut result)
    } else {
        None
    };
    if c.below(4) == 0 {
        return trimmed(result, swapped);
    }
    result
}

/// What `swap_one` swapped: a content block, or a key of the result.
enum Part {
    Block(usize),
    Key(&'static str),
}

/// `result` cut down to `part` (a result without content blocks stays whole).
fn trimmed(result: Value, part: Option<Part>) -> Value {
    let block = |at: usize| result["content"].get(at).cloned();
    match part {
        Some(Part::Key(key)) => json!({ "content": [], key: result[key].clone() }),
        Some(Part::Block(at)) => json!({ "content": [block(at)] }),
        None => match block(0) {
            Some(first) => json!({ "content": [first] }),
            None => result,
        },
    }
}

/// Swaps one field of `result` for a corner value: a field of one content block by its type,
/// else `isError` or `structuredContent`; says which.
fn swap_one(c: &mut dyn Choices, result: &mut Value) -> Option<Part> {
    let blocks = result
        .get_mut("content")
        .and_then(Value::as_array_mut)
        .filter(|blocks| !blocks.is_empty());
    if let Some(blocks) = blocks
        && c.below(4) != 0
    {
        let at = c.below(blocks.len());
        swap_in_block(c, &mut blocks[at]);
        return Some(Part::Block(at));
    }
    let map = result.as_object_mut()?;
    if c.below(2) == 0 {
        // Not JSON `true` or `false` (F3: only `true` is an error).
        let value = match c.below(4) {
            0 => json!("true"),
            1 => json!(1),
            2 => Value::Null,
            _ => json!("false"),
        };
        map.insert("isError".into(), value);
        Some(Part::Key("isError"))
    } else {
        map.insert("structuredContent".into(), json!(text::directive_string(c)));
        Some(Part::Key("structuredContent"))
    }
}

fn swap_in_block(c: &mut dyn Choices, block: &mut Value) {
    let kind = block
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    match kind {
        "image" | "audio" => {
            // The image's bytes and type for a header at the pixel limit (an audio block then
            // carries image data: a type confusion real servers do not send, yet).
            let corner = limits::pixel_image(c);
            block["data"] = corner["data"].clone();
            block["mimeType"] = corner["mimeType"].clone();
        }
        "resource_link" => match c.below(3) {
            0 => block["uri"] = json!(urls::url(c)),
            1 => block["title"] = json!(text::directive_string(c)),
            _ => block["name"] = json!(text::directive_string(c)),
        },
        "resource" => {
            if c.below(2) == 0 {
                block["resource"]["uri"] = json!(urls::url(c));
            } else {
                block["resource"]["text"] = json!(text::directive_string(c));
            }
        }
        _ => block["text"] = json!(text::directive_string(c)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::corners::testing::sample;

    #[test]
    fn the_corpus_parses() {
        assert!(!FILES.is_empty(), "no corpus/real-servers/*.jsonl");
        for (name, text) in FILES {
            let captures = parse(text).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(!captures.is_empty(), "{name} is empty");
            for (_, capture) in &captures {
                assert_eq!(
                    format!("{}@{}.jsonl", capture.server, capture.version),
                    *name,
                    "a line of {name} names another server"
                );
            }
        }
        // The three servers the issue asks for at least.
        for server in ["server-everything", "server-filesystem", "mcp-server-time"] {
            assert!(
                corpus().iter().any(|c| c.server == server),
                "{server} not captured"
            );
        }
    }

    #[test]
    fn parse_names_the_bad_line() {
        let err = parse("\n{\"server\": 1}\n").unwrap_err();
        assert!(err.starts_with("line 2: "), "{err}");
    }

    /// About three draws in eight are a result as captured, the others differ from every
    /// capture in one swapped field or are cut down to one part of it; an exhausted tape (where
    /// shrinking goes) gives the first block of the first capture.
    #[test]
    fn real_results_are_drawn_as_captured_and_with_one_field_swapped() {
        let drawn = sample(400, real_result);
        let real = |v: &Value| corpus().iter().any(|c| c.result == *v);
        let as_captured = drawn.iter().filter(|v| real(v)).count();
        assert!((100..200).contains(&as_captured), "{as_captured} of 400");
        let single = drawn
            .iter()
            .filter(|v| v["content"].as_array().is_some_and(|b| b.len() == 1) && !real(v))
            .count();
        assert!(single > 30, "{single} cut down");
        let plainest = real_result(&mut crate::generate::corners::Tape::new(&[]));
        assert_eq!(
            plainest["content"],
            json!([corpus()[0].result["content"][0]])
        );
        let swapped: Vec<&Value> = drawn.iter().filter(|v| !real(v)).collect();
        assert!(swapped.iter().any(|v| v["isError"].is_string()));
        let texts = swapped
            .iter()
            .filter(|v| {
                v["content"]
                    .as_array()
                    .is_some_and(|blocks| blocks.iter().any(|b| b["type"] == "text"))
            })
            .count();
        assert!(texts > 50, "{texts}");
    }
}
