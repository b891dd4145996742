//! The model's own moves in an end-to-end turn (issue 25): the tool calls of its scripted turns,
//! with the fields a model controls (call ids, tool names, arguments) and calls of the runtime's
//! "send media to the user" tool naming local files and private or non-https URLs.
//!
//! Every hostile value embeds the marker of its field (`{m}` in the tables), which the caller
//! supplies per case (`e2e::marker::marker`): a file a turn writes, or a fetch the
//! canary route sees, is traced back to the field that named it.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{Choices, between, one_in, pick, weighted};

/// A field of a tool call that the model controls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Field {
    /// The tool-call id.
    Id,
    /// The tool name.
    Name,
    /// The call's arguments.
    Arguments,
    /// The path or URL a send-style call names.
    Send,
}

impl Field {
    pub const ALL: [Field; 4] = [Field::Id, Field::Name, Field::Arguments, Field::Send];

    /// The field's part of a marker: lower-case letters only, so it survives any sanitizer
    /// that keeps alphanumerics.
    pub fn tag(self) -> &'static str {
        match self {
            Field::Id => "callid",
            Field::Name => "toolname",
            Field::Arguments => "args",
            Field::Send => "send",
        }
    }
}

/// One tool call of the model's scripted turns (one call per turn, in order).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Call {
    /// The call's id; `None` lets the mock provider make its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub tool: Tool,
}

/// What a call calls.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Tool {
    /// The MCP tool, under the name the runtime shows the model (the adapter's `model_tool`).
    Mcp { arguments: Value },
    /// A tool the runtime does not offer, by a name the model made up.
    Named { name: String, arguments: Value },
    /// The runtime's own send-media tool (the adapter's `[send_tool]`) naming a target.
    Send { target: Target },
}

/// What a send-style call names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Target {
    /// A local file outside every media root (a canary is planted there).
    Path(String),
    /// A URL; `${port}` stands for the mock providers' port, whose loopback canary route
    /// (`/canary/<marker>.png`) records every fetch.
    Url(String),
}

/// The arguments of today's call of the MCP tool.
pub fn report_arguments() -> Value {
    json!({"name": "report"})
}

impl Call {
    /// Today's call: the MCP tool, the mock's own id, [`report_arguments`].
    pub fn plain() -> Call {
        Call {
            id: None,
            tool: Tool::Mcp {
                arguments: report_arguments(),
            },
        }
    }
}

/// Where the marker goes in a table entry.
const M: &str = "{m}";

/// Tool-call ids: path separators, `..`, NUL, control characters (each table's first entry is
/// the plainest).
pub const IDS: [&str; 6] = [
    "call_{m}",
    "../../../../escaped-{m}",
    "/tmp/escaped-{m}",
    "{m}\u{0}.json",
    "..\\..\\{m}\r\n\t\u{1b}[31m",
    "{m}/\u{202e}gnp.exe",
];

/// Tool names the runtime does not offer.
pub const NAMES: [&str; 5] = [
    "{m}",
    "../../escaped-{m}",
    "{m}/../../tool",
    "{m}\u{0}",
    "{m}\n\u{7f}\u{85}",
];

/// Local files outside every media root.
pub const PATHS: [&str; 2] = [
    "/tmp/normfuzz-send-{m}/secret.png",
    "file:///tmp/normfuzz-send-{m}/secret.png",
];

/// URLs S3 refuses, each reaching the canary route where the sandbox can (loopback spellings),
/// or judged only where delivered (private and link-local addresses have no route there). Each
/// has its own number after the marker, so the route's bytes tell which one was fetched.
pub const URLS: [&str; 7] = [
    "http://127.0.0.1:${port}/canary/{m}-1.png",
    "http://localhost:${port}/canary/{m}-2.png",
    "http://2130706433:${port}/canary/{m}-3.png",
    "https://127.0.0.1:${port}/canary/{m}-4.png",
    "http://[::ffff:127.0.0.1]:${port}/canary/{m}-5.png",
    "http://169.254.169.254/canary/{m}-6.png",
    "http://10.0.0.1/canary/{m}-7.png",
];

/// A table entry with its marker.
pub fn fill(entry: &str, marker: &str) -> String {
    entry.replace(M, marker)
}

/// A value past every length a runtime might assume (file names stop at 255 bytes).
pub fn long(marker: &str) -> String {
    format!("{marker}-{}", "x".repeat(4096))
}

/// A hostile id, name or argument string: a table entry, or a long one.
fn string(c: &mut dyn Choices, table: &[&str], marker: &str) -> String {
    if one_in(c, table.len() + 1) {
        long(marker)
    } else {
        fill(pick(c, table), marker)
    }
}

/// How often each of [`IDS`] is drawn: the path-like ids weigh most, since a runtime that
/// names files after call ids turns them into writes outside its folders (S5).
const ID_WEIGHTS: [usize; IDS.len()] = [1, 3, 2, 1, 1, 1];

/// A hostile tool-call id: a table entry by [`ID_WEIGHTS`], or a long one.
fn id(c: &mut dyn Choices, marker: &str) -> String {
    if one_in(c, IDS.len() + 1) {
        long(marker)
    } else {
        fill(IDS[weighted(c, &ID_WEIGHTS)], marker)
    }
}

/// MCP tool arguments: today's, then paths, NUL, prototype keys and a long value.
fn arguments(c: &mut dyn Choices, marker: &str) -> Value {
    match c.below(6) {
        0 => report_arguments(),
        1 => json!({"name": format!("../../../../tmp/escaped-{marker}")}),
        2 => json!({"path": format!("/tmp/normfuzz-args-{marker}/out.png")}),
        3 => json!({"name": format!("{marker}\u{0}.png")}),
        4 => json!({"__proto__": {format!("polluted_{marker}"): true},
                    "constructor": {"prototype": {format!("polluted_{marker}"): true}}}),
        _ => json!({"name": long(marker)}),
    }
}

/// A send target: a canary path or a refused URL.
pub fn target(c: &mut dyn Choices, marker: &str) -> Target {
    if c.below(3) == 0 {
        Target::Path(fill(pick(c, &PATHS), marker))
    } else {
        Target::Url(fill(pick(c, &URLS), marker))
    }
}

/// The calls of one turn. The first calls the MCP tool (the judge reads the first tool result
/// the model got), with a hostile id or arguments or neither; up to three more follow: a made-up
/// tool, a send naming a canary or a refused URL, or the MCP tool again under the first call's
/// id (duplicate ids). Half the draws, and an exhausted source, give `[Call::plain()]`, today's
/// turn.
pub fn calls(c: &mut dyn Choices, marker: &dyn Fn(Field) -> String) -> Vec<Call> {
    let mut first = Call::plain();
    // Half the turns keep today's call: a generated case still judges its tool result alone.
    if !one_in(c, 2) {
        return vec![first];
    }
    if !one_in(c, 4) {
        first.id = Some(id(c, &marker(Field::Id)));
    }
    if one_in(c, 3) {
        first.tool = Tool::Mcp {
            arguments: arguments(c, &marker(Field::Arguments)),
        };
    }
    let more = between(c, 0, 3);
    let mut out = vec![first];
    for _ in 0..more {
        let call = match weighted(c, &[3, 2, 1]) {
            0 => Call {
                id: None,
                tool: Tool::Send {
                    target: target(c, &marker(Field::Send)),
                },
            },
            1 => Call {
                id: None,
                tool: Tool::Named {
                    name: string(c, &NAMES, &marker(Field::Name)),
                    arguments: arguments(c, &marker(Field::Arguments)),
                },
            },
            _ => {
                let id = out[0]
                    .id
                    .get_or_insert_with(|| fill(IDS[0], &marker(Field::Id)))
                    .clone();
                Call {
                    id: Some(id),
                    tool: out[0].tool.clone(),
                }
            }
        };
        out.push(call);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::Tape;
    use super::super::testing::sample;
    use super::*;

    fn marker(f: Field) -> String {
        format!("nfzcase{}", f.tag())
    }

    #[test]
    fn an_exhausted_source_gives_todays_call() {
        assert_eq!(calls(&mut Tape::new(&[]), &marker), [Call::plain()]);
    }

    #[test]
    fn every_hostile_value_carries_its_fields_marker_and_the_first_call_is_the_mcp_tool() {
        let drawn = sample(300, |c| calls(c, &marker));
        let mut kinds = std::collections::HashSet::new();
        for calls in &drawn {
            assert!(matches!(calls[0].tool, Tool::Mcp { .. }), "{calls:?}");
            for call in calls {
                if let Some(id) = &call.id {
                    assert!(id.contains(&marker(Field::Id)), "{id:?}");
                }
                match &call.tool {
                    Tool::Mcp { arguments } if arguments == &report_arguments() => {}
                    Tool::Mcp { arguments } => {
                        assert!(arguments.to_string().contains(&marker(Field::Arguments)));
                        kinds.insert("args");
                    }
                    Tool::Named { name, .. } => {
                        assert!(name.contains(&marker(Field::Name)), "{name:?}");
                        kinds.insert("name");
                    }
                    Tool::Send { target } => {
                        let (Target::Path(t) | Target::Url(t)) = target;
                        assert!(t.contains(&marker(Field::Send)), "{t:?}");
                        kinds.insert(match target {
                            Target::Path(_) => "path",
                            Target::Url(_) => "url",
                        });
                    }
                }
            }
            let ids: Vec<_> = calls.iter().filter_map(|c| c.id.as_ref()).collect();
            if ids.len() > 1
                && calls
                    .iter()
                    .filter(|c| matches!(c.tool, Tool::Mcp { .. }))
                    .count()
                    > 1
            {
                kinds.insert("duplicate");
            }
        }
        for kind in ["args", "name", "path", "url", "duplicate"] {
            assert!(kinds.contains(kind), "{kind} never drawn");
        }
    }
}
