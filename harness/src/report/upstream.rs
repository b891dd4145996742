//! `normfuzz upstream`: a finding of a runtime in the matrix, read back with what its report
//! says about the runtime, and the standalone repro script for that runtime's tracker, rendered
//! from the runtime's template (`harness/runtimes/<name>/repro.{mjs,py}.tmpl`) with the minimal
//! input embedded. The Markdown is rendered by `report::upstream`.

pub mod markdown;

use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::json_file::read_json;
use crate::campaign::impact::{Evidence, Impact, Profile, derive};
use crate::oracle::judge::judged_rules;
use crate::oracle::mcp_schema as schema;
use crate::protocol::{Answer, Op};
use crate::rule::Rule;

/// A runtime of the matrix at one version, as a campaign report records it
/// (`normfuzz conform --runtime NAME@VERSION`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuntimeId {
    pub name: String,
    pub version: String,
}

impl RuntimeId {
    /// `NAME@VERSION`, as `--runtime` takes it and an e2e report's `runtime` spells it.
    pub fn parse(text: &str) -> Result<RuntimeId> {
        match text.rsplit_once('@') {
            Some((name, version)) if !name.is_empty() && !version.is_empty() => Ok(RuntimeId {
                name: name.to_string(),
                version: version.to_string(),
            }),
            _ => bail!("a runtime is NAME@VERSION, not {text:?}"),
        }
    }
}

impl fmt::Display for RuntimeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}", self.name, self.version)
    }
}

/// The fields of a matrix runtime file (`harness/runtimes/<name>/runtime.toml`, whose whole
/// schema `cargo xtask matrix` owns) that a bug report needs.
#[derive(Debug, Deserialize)]
pub struct RuntimeFile {
    pub name: String,
    pub package: String,
    pub version: String,
    /// The function under test, in the file's words.
    pub function: String,
    /// `npm` or `pypi`, with `install`; absent for an `e2e_install` runtime.
    #[serde(default)]
    ecosystem: Option<String>,
    /// The pinned packages, installed together.
    #[serde(default)]
    install: Vec<String>,
    /// Installed by the `[[install]]` steps of the e2e adapter beside the file instead.
    #[serde(default)]
    e2e_install: bool,
    /// The protocol shim's argv; `${cache}` is the install folder, `${adapter}` the file's.
    pub command: Vec<String>,
    /// How long the shim may take to send its handshake (`--handshake-timeout-ms`), when its
    /// runtime imports for longer than the protocol's 10 s.
    #[serde(default)]
    pub handshake_timeout_ms: Option<u64>,
    /// The packages a reader installs, and the one command that does it (set on read).
    #[serde(skip)]
    packages: Vec<String>,
    #[serde(skip)]
    install_line: String,
}

impl RuntimeFile {
    /// `<runtimes>/<name>/runtime.toml` for `id`, which must pin the same version: a repro
    /// installs what the file pins.
    pub fn load(runtimes: &Path, id: &RuntimeId) -> Result<(PathBuf, RuntimeFile)> {
        let dir = runtimes.join(&id.name);
        let path = dir.join("runtime.toml");
        let file = RuntimeFile::read(&path)
            .with_context(|| format!("{id} is not a runtime of the matrix"))?;
        if file.version != id.version {
            bail!(
                "the finding is of {id}, but {} pins version {}: its repro would install another version",
                path.display(),
                file.version
            );
        }
        Ok((dir, file))
    }

    /// Reads one runtime file (and, for an `e2e_install` runtime, its e2e adapter's steps).
    pub fn read(path: &Path) -> Result<RuntimeFile> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let mut file: RuntimeFile =
            toml::from_str(&text).with_context(|| format!("invalid {}", path.display()))?;
        let quoted = |specs: &[String]| {
            specs
                .iter()
                .map(|s| super::view::shell_quote(s))
                .collect::<Vec<_>>()
                .join(" ")
        };
        (file.packages, file.install_line) = match (file.e2e_install, file.ecosystem.as_deref()) {
            (false, Some("pypi")) => (
                file.install.clone(),
                format!("pip install {}", quoted(&file.install)),
            ),
            (false, Some(_)) => (
                file.install.clone(),
                format!("npm install {}", quoted(&file.install)),
            ),
            (true, None) => {
                // Where `cargo xtask matrix` finds a runtime's e2e adapter.
                let adapter_file = path.with_file_name("e2e.toml");
                let adapter = crate::e2e::adapter::Adapter::load(&adapter_file)?;
                // A step whose folder the adapter puts on PATH is the toolchain (Node from
                // npm): the repro's header names the version it needs instead.
                let toolchain = |dir: &str| {
                    let prefix = format!("${{cache}}/{dir}/");
                    adapter.run.path.iter().any(|p| p.starts_with(&prefix))
                };
                let steps: Vec<_> = adapter
                    .install
                    .iter()
                    .filter(|step| !toolchain(&step.dir))
                    .collect();
                if steps.is_empty() {
                    bail!(
                        "{}: e2e_install, but {} installs no package besides its toolchain",
                        path.display(),
                        adapter_file.display()
                    );
                }
                let lines: Vec<String> = steps
                    .iter()
                    .map(|step| {
                        let mut args = step.npm_args.clone();
                        args.push(step.package.clone());
                        format!("npm install {}", quoted(&args))
                    })
                    .collect();
                (
                    steps.iter().map(|step| step.package.clone()).collect(),
                    lines.join(" && "),
                )
            }
            _ => bail!(
                "{}: a runtime names `ecosystem` and `install`, or `e2e_install = true`",
                path.display()
            ),
        };
        Ok(file)
    }

    /// Installed by the e2e adapter beside the file (`e2e.toml`), not by `install`.
    pub fn e2e_install(&self) -> bool {
        self.e2e_install
    }

    /// The pinned packages a reader installs.
    pub fn packages(&self) -> &[String] {
        &self.packages
    }

    /// The one command that installs them.
    pub fn install_line(&self) -> &str {
        &self.install_line
    }
}

/// A rendered repro script.
#[derive(Debug)]
pub struct Repro {
    /// The Markdown fence's language: `js` or `python`.
    pub language: &'static str,
    /// What the script's header tells the reader to save it as.
    pub file_name: &'static str,
    pub script: String,
}

/// The templates a runtime folder may hold: (template, fence language, file name).
const TEMPLATES: [(&str, &str, &str); 2] = [
    ("repro.mjs.tmpl", "js", "repro.mjs"),
    ("repro.py.tmpl", "python", "repro.py"),
];

/// The runtime's repro template with `{{install}}` (the install line), `{{input}}` (`input` as a
/// string literal of ASCII-only JSON text, which JavaScript and Python read alike, so any value
/// (U+2028, lone surrogates escaped by the runtime's own JSON parser, `__proto__` keys) reaches
/// the script verbatim) and, in JavaScript, `{{transport}}` (`lib/case-transport.mjs`, the
/// in-memory MCP server the Node shims use) filled in.
pub fn repro(dir: &Path, runtime: &RuntimeFile, input: &Value) -> Result<Repro> {
    let Some((template, language, file_name)) = TEMPLATES
        .iter()
        .find(|(name, _, _)| dir.join(name).is_file())
    else {
        bail!(
            "{} has no repro template ({})",
            dir.display(),
            TEMPLATES.map(|t| t.0).join(" or ")
        );
    };
    let path = dir.join(template);
    let mut script = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    if script.contains("{{transport}}") {
        let lib = dir.join("../lib/case-transport.mjs");
        let transport = std::fs::read_to_string(&lib)
            .with_context(|| format!("cannot read {}", lib.display()))?;
        script = script.replace(
            "{{transport}}",
            transport.replace("export class", "class").trim_end(),
        );
    }
    script = script
        .replace("{{install}}", runtime.install_line())
        .replace(
            "{{input}}",
            &serde_json::to_string(&ascii_json(input, false))?,
        );
    if let Some(at) = script.find("{{") {
        let end = script[at..].find("}}").map_or(script.len(), |e| at + e + 2);
        bail!(
            "{}: unknown placeholder {}",
            path.display(),
            &script[at..end]
        );
    }
    Ok(Repro {
        language,
        file_name,
        script,
    })
}

/// `value` as JSON text with every non-ASCII character escaped (`\uXXXX`, surrogate pairs past
/// U+FFFF): outside strings JSON has only ASCII, so escaping the whole text escapes the strings.
pub fn ascii_json(value: &Value, pretty: bool) -> String {
    let text = if pretty {
        serde_json::to_string_pretty(value)
    } else {
        serde_json::to_string(value)
    }
    .unwrap_or_default();
    let mut ascii = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii() {
            ascii.push(c);
        } else {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                ascii.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    ascii
}

/// A finding made ready for a runtime's tracker: whose it is, the rule, the minimal input, what
/// the model got and what the reference gives.
#[derive(Debug)]
pub struct Upstream {
    pub runtime: RuntimeId,
    pub rule: Rule,
    /// What the judge saw, in its words (a campaign's kind and detail, an e2e finding's reason).
    pub seen: String,
    /// The MCP `CallToolResult` the runtime was given.
    pub input: Value,
    /// What the runtime answered, as normfuzz read it.
    pub got: Value,
    /// The reference's answer for the same input.
    pub expected: Value,
    /// From a campaign (shrunk input, the runtime's answer) or an e2e run (the case's input as
    /// generated, the judge's evidence from the provider request).
    pub end_to_end: bool,
    /// What the run saw beyond the rule, for the finding's impact class.
    pub evidence: Evidence,
}

impl Upstream {
    /// The finding's impact class in a runtime with `profile`.
    pub fn impact(&self, profile: &Profile) -> Impact {
        derive(self.rule, &self.evidence, profile)
    }
}

/// Reads a finding file of a campaign report (`findings/<id>.json`) or of an e2e report
/// (`findings/<case>--<rule>.json`) with its report's `index.json`, two folders up.
pub fn read_finding(path: &Path) -> Result<Upstream> {
    let finding = read_json(path)?;
    let report = path
        .parent()
        .and_then(Path::parent)
        .context("a finding file lies in a report's `findings/` folder")?;
    let index = read_json(&report.join("index.json"))?;
    let rule: Rule = serde_json::from_value(finding["rule"].clone())
        .with_context(|| format!("{} names no known rule", path.display()))?;
    if finding.get("op").is_some() {
        from_campaign(path, &finding, &index, rule)
    } else if finding.get("case").is_some() {
        from_e2e(path, &finding, &index, rule)
    } else {
        bail!(
            "{} is neither a campaign nor an e2e finding",
            path.display()
        )
    }
}

fn from_campaign(path: &Path, finding: &Value, index: &Value, rule: Rule) -> Result<Upstream> {
    if finding["op"] != Op::CoerceToolResult.as_str() {
        bail!(
            "{} is a finding of `{}`: the runtimes of the matrix are tested on coerce_tool_result only",
            path.display(),
            finding["op"]
        );
    }
    let runtime: RuntimeId = serde_json::from_value(index["runtime"].clone()).with_context(|| {
        format!(
            "the report of {} names no runtime (it was not run by `cargo xtask matrix`, or before `conform --runtime` existed)",
            path.display()
        )
    })?;
    let answer = |side: &str| -> Result<Answer> {
        serde_json::from_value(finding[side].clone())
            .with_context(|| format!("{}: no `{side}` answer", path.display()))
    };
    let sut = answer("sut")?;
    Ok(Upstream {
        evidence: Evidence::of_case(Op::CoerceToolResult, &finding["input"], &sut),
        runtime,
        rule,
        seen: format!(
            "{}: {}",
            finding["kind"].as_str().unwrap_or_default(),
            finding["detail"].as_str().unwrap_or_default()
        ),
        input: finding["input"].clone(),
        got: answer_value(&sut),
        expected: answer_value(&answer("reference")?),
        end_to_end: false,
    })
}

fn from_e2e(path: &Path, finding: &Value, index: &Value, rule: Rule) -> Result<Upstream> {
    // The repro replays the runtime's tool-result conversion: findings on what the runtime
    // delivered (the final reply) have no such repro.
    let on_tool_result = match finding.get("layer").and_then(Value::as_str) {
        Some(layer) => layer == "model",
        None => judged_rules(Op::CoerceToolResult).contains(&rule),
    };
    if !on_tool_result {
        bail!(
            "{} is about what the runtime delivered ({rule}), not about a tool result: there is no standalone repro of the conversion for it",
            path.display()
        );
    }
    let runtime = index["runtime"]
        .as_str()
        .with_context(|| format!("the report of {} names no runtime", path.display()))
        .and_then(RuntimeId::parse)?;
    let input = finding["input"]["result"].clone();
    let expected = match crate::reference::call(Op::CoerceToolResult, &input) {
        Ok(output) => output,
        Err(err) => serde_json::json!({ "refused": err }),
    };
    Ok(Upstream {
        evidence: Evidence {
            schema_invalid: Some(!schema::is_valid(&input)),
            ..Evidence::default()
        },
        runtime,
        rule,
        seen: finding["reason"].as_str().unwrap_or_default().to_string(),
        input,
        got: serde_json::json!({
            "api": finding["api"],
            "evidence": finding["evidence"],
        }),
        expected,
        end_to_end: true,
    })
}

/// What an answer shows: its output, or what it was instead.
fn answer_value(answer: &Answer) -> Value {
    match answer {
        Answer::Output(output) => output.clone(),
        other => serde_json::to_value(other).unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtime_ids_and_ascii_json() {
        let id = RuntimeId::parse("ai-sdk@2.0.99").unwrap();
        assert_eq!(
            (id.name.as_str(), id.version.as_str()),
            ("ai-sdk", "2.0.99")
        );
        assert_eq!(id.to_string(), "ai-sdk@2.0.99");
        for bad in ["ai-sdk", "@1", "a@", ""] {
            assert!(RuntimeId::parse(bad).is_err(), "{bad}");
        }
        let value = serde_json::json!({"t": "é\u{2028}😀\"\\"});
        let ascii = ascii_json(&value, false);
        assert_eq!(ascii, r#"{"t":"\u00e9\u2028\ud83d\ude00\"\\"}"#);
        assert_eq!(serde_json::from_str::<Value>(&ascii).unwrap(), value);
    }
}
