//! The fallback scenario's judge (spec: the end-to-end form of R, P4): from the captured
//! requests, which image sources reached the fallback model, and from the mock MCP server's
//! call log, whether a tool that completed ran again without the fallback being told.
//!
//! Images are found by their bytes (each source has its own PNG, `cases::ImageSource`) anywhere
//! in a request body, as an image or inside a text (a runtime that renders a tool's image as
//! JSON text still sends its bytes), so the judge needs no per-API reading.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{E2eFinding, Layer};
use crate::e2e::adapter::PRIMARY_MODEL;
use crate::e2e::cases::{Fallback, ImageSource, tool_run_text};
use crate::e2e::fallback::Pairing;
use crate::rule::Rule;

/// One image source seen in one request.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Sighting {
    pub source: ImageSource,
    /// The request's sequence number in the capture (`requests.jsonl`).
    pub seq: u64,
    /// JSON pointer to the string holding the bytes in the request body.
    pub pointer: String,
    /// The bytes sit inside a text, not as an image (a data URL or a base64 field).
    pub in_text: bool,
    /// Carried from the failed attempt (a user image, or the tool result the failed attempt
    /// got), not the fallback's own tool result.
    pub carried: bool,
}

/// What a fallback case did, for the report and the console, findings or not.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct FallbackSummary {
    pub primary: String,
    pub fallback: String,
    pub same_provider: bool,
    pub fell_back: bool,
    pub primary_requests: usize,
    /// Primary requests answered with the scripted error (the runtime's own retries included).
    pub primary_failures: usize,
    pub fallback_requests: usize,
    /// Image sources in the fallback's requests.
    pub at_fallback: Vec<Sighting>,
    /// Runs of the tool (the mock MCP server's call log).
    pub tool_runs: usize,
    /// Failures after the tool ran: whether the fallback's first request holds the completed run's
    /// result (it was told the tool ran).
    pub told: Option<bool>,
}

impl FallbackSummary {
    /// One line for the console.
    pub fn line(&self) -> String {
        if !self.fell_back {
            return format!(
                "no fallback ({} primary requests, {} failed)",
                self.primary_requests, self.primary_failures
            );
        }
        let names = |carried: bool| {
            let names = source_names(self.at_fallback.iter().filter(|s| s.carried == carried));
            if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            }
        };
        format!(
            "fell back to {} after {} failed primary requests; images carried to the fallback: {} \
             (its own: {}); tool ran {}x{}",
            self.fallback,
            self.primary_failures,
            names(true),
            names(false),
            self.tool_runs,
            match self.told {
                Some(true) => " (fallback told)",
                Some(false) => " (fallback not told)",
                None => "",
            }
        )
    }
}

/// The sources of `sightings`, each once, in order of first sight.
fn source_names<'a>(sightings: impl Iterator<Item = &'a Sighting>) -> Vec<&'static str> {
    let mut names: Vec<&str> = Vec::new();
    for s in sightings {
        let name = source_name(s.source);
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

fn source_name(source: ImageSource) -> &'static str {
    match source {
        ImageSource::Prompt => "prompt",
        ImageSource::PersistedPath => "persisted user turn",
        ImageSource::RedetectedPath => "re-detected path",
        ImageSource::ToolRun1 => "tool result (run 1)",
        ImageSource::ToolRun2 => "tool result (run 2)",
    }
}

/// Nesting walked at most: messages, content blocks and sources sit a few levels down.
const DEPTH: usize = 24;

/// Every image source whose bytes occur in `record`'s body.
fn sightings(
    record: &Value,
    sources: &[(ImageSource, String)],
    fallback: &Fallback,
) -> Vec<Sighting> {
    let seq = record["seq"].as_u64().unwrap_or(0);
    let mut out = Vec::new();
    let mut stack = vec![(&record["body"], String::new(), 0)];
    while let Some((value, pointer, depth)) = stack.pop() {
        match value {
            Value::String(s) => {
                for (source, b64) in sources {
                    if s.contains(b64.as_str()) {
                        let bare = s.strip_prefix("data:image/png;base64,").unwrap_or(s);
                        out.push(Sighting {
                            source: *source,
                            seq,
                            pointer: pointer.clone(),
                            in_text: bare != b64,
                            carried: carried(*source, fallback),
                        });
                    }
                }
            }
            Value::Array(items) if depth < DEPTH => {
                for (i, v) in items.iter().enumerate().rev() {
                    stack.push((v, format!("{pointer}/{i}"), depth + 1));
                }
            }
            Value::Object(map) if depth < DEPTH => {
                for (k, v) in map.iter().rev() {
                    let key = k.replace('~', "~0").replace('/', "~1");
                    stack.push((v, format!("{pointer}/{key}"), depth + 1));
                }
            }
            _ => {}
        }
    }
    out
}

/// Whether an image of `source` must not reach a fallback on another API: every user image,
/// and the tool's image when the failed attempt ran the tool (the fallback's own run is its own).
fn carried(source: ImageSource, fallback: &Fallback) -> bool {
    match source {
        ImageSource::Prompt | ImageSource::PersistedPath | ImageSource::RedetectedPath => true,
        ImageSource::ToolRun1 => fallback.fail_at.ran_tool(),
        ImageSource::ToolRun2 => false,
    }
}

/// The groups R5 expects a same-provider fallback to keep: one image, whichever copy of it.
fn group(source: ImageSource) -> &'static str {
    match source {
        ImageSource::Prompt => "the user's prompt image",
        ImageSource::PersistedPath | ImageSource::RedetectedPath => "the user's local image",
        ImageSource::ToolRun1 | ImageSource::ToolRun2 => "the tool result's image",
    }
}

/// Judges a fallback case. `requests` are the provider requests in capture order, `tool_runs`
/// the mock MCP server's logged calls.
pub fn check_fallback(
    fallback: &Fallback,
    pairing: &Pairing,
    requests: &[Value],
    tool_runs: usize,
) -> (FallbackSummary, Vec<E2eFinding>) {
    let sources: Vec<(ImageSource, String)> =
        ImageSource::ALL.iter().map(|s| (*s, s.base64())).collect();
    let (to_fallback, to_primary): (Vec<&Value>, Vec<&Value>) =
        requests.iter().partition(|r| pairing.is_fallback(r));
    let at_fallback: Vec<Sighting> = to_fallback
        .iter()
        .flat_map(|r| sightings(r, &sources, fallback))
        .collect();
    let at_primary: Vec<Sighting> = to_primary
        .iter()
        .flat_map(|r| sightings(r, &sources, fallback))
        .collect();
    let run_1 = tool_run_text(1);
    let told = (fallback.fail_at.ran_tool() && !to_fallback.is_empty())
        .then(|| to_fallback[0]["body"].to_string().contains(&run_1));
    let summary = FallbackSummary {
        primary: format!("{}/{}", pairing.primary.mock, PRIMARY_MODEL),
        fallback: format!("{}/{}", pairing.fallback.mock, pairing.fallback_model),
        same_provider: fallback.same_provider,
        fell_back: !to_fallback.is_empty(),
        primary_requests: to_primary.len(),
        primary_failures: to_primary
            .iter()
            .filter(|r| r["verdict"]["answer"] == "error")
            .count(),
        fallback_requests: to_fallback.len(),
        at_fallback: at_fallback.clone(),
        tool_runs,
        told,
    };
    let mut findings = Vec::new();
    let first_fallback = to_fallback.first().map(|r| r["seq"].clone());
    let kept: Vec<&Sighting> = at_fallback.iter().filter(|s| s.carried).collect();
    let evidence = |list: &[&Sighting]| {
        json!({
            "fallback": summary.fallback,
            "firstFallbackRequest": first_fallback,
            "images": list.iter().map(|s| json!({
                "source": s.source, "from": s.source.describe(), "request": s.seq,
                "pointer": s.pointer, "inText": s.in_text,
            })).collect::<Vec<_>>(),
        })
    };
    let describe = |list: &[&Sighting]| source_names(list.iter().copied()).join(", ");
    if !fallback.same_provider && !kept.is_empty() {
        findings.push(E2eFinding::new(
            Rule::R3,
            Layer::Model,
            format!(
                "images reached the fallback on another API ({}), from: {} (S4)",
                summary.fallback,
                describe(&kept)
            ),
            evidence(&kept),
        ));
    } else if fallback.same_provider && fallback.is_format_failure() && !kept.is_empty() {
        findings.push(E2eFinding::new(
            Rule::R2,
            Layer::Model,
            format!(
                "after a {} failure the same-provider fallback still got images, from: {}",
                fallback.error,
                describe(&kept)
            ),
            evidence(&kept),
        ));
    } else if fallback.same_provider && !fallback.is_format_failure() && summary.fell_back {
        let mut dropped: Vec<&str> = Vec::new();
        for s in at_primary.iter().filter(|s| s.carried) {
            let g = group(s.source);
            if !dropped.contains(&g) && !at_fallback.iter().any(|f| group(f.source) == g) {
                dropped.push(g);
            }
        }
        if !dropped.is_empty() {
            findings.push(E2eFinding::new(
                Rule::R5,
                Layer::Model,
                format!(
                    "a same-provider fallback after a {} failure lost {}",
                    fallback.error,
                    dropped.join(", ")
                ),
                json!({"dropped": dropped, "fallback": summary.fallback,
                       "firstFallbackRequest": first_fallback}),
            ));
        }
    }
    if told == Some(false) && tool_runs >= 2 {
        findings.push(E2eFinding::new(
            Rule::P4,
            Layer::Model,
            format!(
                "the tool that completed before the primary failed ran again ({tool_runs} runs), \
                 and the fallback's first request did not hold its result"
            ),
            json!({"toolRuns": tool_runs, "firstFallbackRequest": first_fallback,
                   "missing": run_1}),
        ));
    }
    (summary, findings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::e2e::adapter::{FALLBACK_MODEL, Flavour};
    use crate::e2e::cases::FailAt;

    fn flavour(api: &str, mock: &str) -> Flavour {
        Flavour {
            api: api.into(),
            mock: mock.into(),
            base_url: "u".into(),
        }
    }

    fn fb(same_provider: bool, fail_at: FailAt, error: &str) -> Fallback {
        Fallback {
            same_provider,
            fail_at,
            error: error.into(),
            user_image: true,
            path_image: true,
            tool_image: true,
            whole_agent: false,
        }
    }

    fn chat(seq: u64, key: &str, messages: Value) -> Value {
        json!({"seq": seq, "provider": "openai-chat", "verdict": {"accepted": true, "script": key},
               "body": {"model": "mock-model", "messages": messages}})
    }

    fn anthropic(seq: u64, key: &str, answer: &str, messages: Value) -> Value {
        json!({"seq": seq, "provider": "anthropic",
               "verdict": {"accepted": true, "answer": answer, "script": key},
               "body": {"model": "mock-model", "messages": messages}})
    }

    fn image_url(source: ImageSource) -> Value {
        json!({"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{}", source.base64())}})
    }

    fn rules(findings: &[E2eFinding]) -> Vec<&str> {
        findings.iter().map(|f| f.rule.as_str()).collect()
    }

    /// The cross-provider pairing: Anthropic primary, OpenAI Chat fallback.
    fn cross<'a>(a: &'a Flavour, b: &'a Flavour) -> Pairing<'a> {
        Pairing {
            primary: a,
            fallback: b,
            fallback_model: "mock-model",
            primary_key: "anthropic".into(),
            fallback_key: "openai-chat".into(),
        }
    }

    #[test]
    fn a_runtime_that_strips_passes_one_that_forwards_is_caught_with_each_source() {
        let (a, b) = (
            flavour("anthropic", "anthropic"),
            flavour("openai", "openai-chat"),
        );
        let pairing = cross(&a, &b);
        let case = fb(false, FailAt::AfterTool, "overloaded");
        let prompt = json!([{"role": "user", "content": [
            {"type": "text", "text": "look"},
            {"type": "image", "source": {"type": "base64", "data": ImageSource::Prompt.base64()}}]}]);
        let primary = anthropic(0, "anthropic", "error", prompt);
        // Stripped: the history's texts only, the tool's result told.
        let clean = chat(
            1,
            "openai-chat",
            json!([{"role": "user", "content": "look"},
                   {"role": "tool", "content": tool_run_text(1)}]),
        );
        let (summary, findings) =
            check_fallback(&case, &pairing, &[primary.clone(), clean.clone()], 2);
        assert_eq!(rules(&findings), Vec::<&str>::new());
        assert!(summary.fell_back && summary.told == Some(true));
        assert_eq!(summary.primary_failures, 1);
        // Forwarded: the prompt image, the re-detected path and the tool image as text.
        let leaky = chat(
            1,
            "openai-chat",
            json!([{"role": "user", "content": [image_url(ImageSource::Prompt), image_url(ImageSource::RedetectedPath)]},
                   {"role": "tool", "content": format!("[{{\"data\":\"{}\"}}]", ImageSource::ToolRun1.base64())}]),
        );
        let (summary, findings) = check_fallback(&case, &pairing, &[primary, leaky], 2);
        assert_eq!(rules(&findings), ["R3", "P4"]);
        let sources: Vec<(ImageSource, bool)> = summary
            .at_fallback
            .iter()
            .map(|s| (s.source, s.in_text))
            .collect();
        assert_eq!(
            sources,
            [
                (ImageSource::Prompt, false),
                (ImageSource::RedetectedPath, false),
                (ImageSource::ToolRun1, true)
            ]
        );
        assert!(
            findings[0]
                .reason
                .contains("prompt, re-detected path, tool result")
        );
        assert_eq!(
            summary.at_fallback[0].pointer,
            "/messages/0/content/0/image_url/url"
        );
    }

    #[test]
    fn a_mid_stream_failure_leaves_the_tool_run_and_its_image_to_the_failed_attempt() {
        let (a, b) = (
            flavour("anthropic", "anthropic"),
            flavour("openai", "openai-chat"),
        );
        let pairing = cross(&a, &b);
        let case = fb(false, FailAt::MidStream, "overloaded");
        let primary = anthropic(0, "anthropic", "error", json!([]));
        let leaky = chat(
            1,
            "openai-chat",
            json!([{"role": "tool", "content": format!("{} [{{\"data\":\"{}\"}}]",
                tool_run_text(1), ImageSource::ToolRun1.base64())}]),
        );
        let (summary, findings) = check_fallback(&case, &pairing, &[primary, leaky], 1);
        assert_eq!(rules(&findings), ["R3"]);
        assert_eq!(summary.told, Some(true));
    }

    #[test]
    fn the_fallbacks_own_tool_run_is_not_a_carried_image() {
        let (a, b) = (
            flavour("anthropic", "anthropic"),
            flavour("openai", "openai-chat"),
        );
        let pairing = cross(&a, &b);
        let case = fb(false, FailAt::BeforeTool, "rate_limit");
        let own = chat(
            1,
            "openai-chat",
            json!([{"role": "tool", "content": "r"},
                   {"role": "user", "content": [image_url(ImageSource::ToolRun1)]}]),
        );
        let (summary, findings) = check_fallback(&case, &pairing, &[own], 1);
        assert!(findings.is_empty(), "{findings:?}");
        assert_eq!(summary.told, None, "no completed tool before the failure");
    }

    #[test]
    fn same_provider_keeps_images_unless_the_failure_was_a_format_error() {
        let a = flavour("anthropic", "anthropic");
        let pairing = Pairing {
            primary: &a,
            fallback: &a,
            fallback_model: FALLBACK_MODEL,
            primary_key: "anthropic/mock-model".into(),
            fallback_key: format!("anthropic/{FALLBACK_MODEL}"),
        };
        let with = |seq, key: &str, answer| {
            anthropic(
                seq,
                key,
                answer,
                json!([{"role": "user", "content": [{"type": "image", "source": {"data": ImageSource::Prompt.base64()}}]}]),
            )
        };
        let without = anthropic(1, "anthropic/mock-model-b", "text", json!([]));
        let primary = with(0, "anthropic/mock-model", "error");
        let kept = with(1, "anthropic/mock-model-b", "text");
        let server = fb(true, FailAt::AfterTool, "server_error");
        let (_, f) = check_fallback(&server, &pairing, &[primary.clone(), kept.clone()], 1);
        assert!(f.is_empty(), "{f:?}");
        let (_, f) = check_fallback(&server, &pairing, &[primary.clone(), without.clone()], 1);
        assert_eq!(rules(&f), ["R5"]);
        let format = fb(true, FailAt::AfterTool, "format");
        let (_, f) = check_fallback(&format, &pairing, &[primary.clone(), kept], 1);
        assert_eq!(rules(&f), ["R2"]);
        let (_, f) = check_fallback(&format, &pairing, &[primary, without], 1);
        assert!(f.is_empty(), "{f:?}");
    }
}
