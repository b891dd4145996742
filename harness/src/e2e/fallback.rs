//! The fallback scenario's set-up (issue 26): which flavours and models a case pairs, the mock
//! providers' script that makes the primary fail where the case says, the config placeholders
//! that tell the runtime about its fallback and the user's images, and the swap of the local
//! image after the primary's first failure. `checks/fallback.rs` judges what it leads to.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};
use serde_json::{Value, json};

use super::adapter::{Adapter, FALLBACK_MODEL, Flavour, PRIMARY_MODEL};
use super::cases::{E2eCase, FailAt, Fallback, ImageSource, PARTIAL_REPLY};
use super::hostile::{Field, Tool};
use super::marker::marker;
use super::writes::HarnessWrites;

/// The local image a fallback case's prompt may name, in the case's workspace.
pub const IMAGE_FILE: &str = "photo.png";
/// The tool's runs as the mock MCP server logged them (JSON Lines, one per `tools/call`).
pub const CALLS: &str = "tool-calls.jsonl";
/// The tool's second run's result (the first is `mcp-result.json`).
pub const RESULT_2: &str = "mcp-result-2.json";

/// The primary and the fallback of one case: flavours, models and the script keys (the mock
/// providers' `providers` keys) their requests are answered and told apart by.
pub struct Pairing<'a> {
    pub primary: &'a Flavour,
    pub fallback: &'a Flavour,
    pub fallback_model: &'static str,
    pub primary_key: String,
    pub fallback_key: String,
}

impl<'a> Pairing<'a> {
    pub fn of(adapter: &'a Adapter, fallback: &Fallback) -> Result<Pairing<'a>> {
        let config = adapter.fallback.as_ref().with_context(|| {
            format!(
                "adapter {} has no [fallback] section (how to configure a model fallback)",
                adapter.label()
            )
        })?;
        let primary = &adapter.flavour[config.primary];
        Ok(if fallback.same_provider {
            Pairing {
                primary,
                fallback: primary,
                fallback_model: FALLBACK_MODEL,
                primary_key: format!("{}/{PRIMARY_MODEL}", primary.mock),
                fallback_key: format!("{}/{FALLBACK_MODEL}", primary.mock),
            }
        } else {
            let fallback = &adapter.flavour[config.cross];
            Pairing {
                primary,
                fallback,
                fallback_model: PRIMARY_MODEL,
                primary_key: primary.mock.clone(),
                fallback_key: fallback.mock.clone(),
            }
        })
    }

    /// Whether a captured request went to the fallback: its script key, or for a request the
    /// validator refused (no key), its API and the model the mock providers read in it.
    pub fn is_fallback(&self, record: &Value) -> bool {
        match record["verdict"]["script"].as_str() {
            Some(key) => key == self.fallback_key,
            None => {
                let api = record["provider"].as_str().unwrap_or_default();
                match self.fallback_key.split_once('/') {
                    Some((a, m)) => api == a && record["model"] == m,
                    None => api == self.fallback_key,
                }
            }
        }
    }

    /// The mock providers' script: the primary makes the case's tool calls (when it fails after
    /// them), then fails where the case says, for ever (a runtime's own same-model retries all
    /// fail too); the fallback calls the tool, then replies. Its tool call comes in both modes:
    /// a runtime that told it the tool ran still runs it (the model's choice, allowed by P4),
    /// one that did not has a replay to answer for. `port` is the mock providers'.
    pub fn script(
        &self,
        adapter: &Adapter,
        case: &E2eCase,
        fallback: &Fallback,
        port: u16,
    ) -> Result<Value> {
        let call = super::hostile::plain_step(adapter);
        let calls = super::hostile::call_steps(adapter, case, port)?;
        let (primary_turns, failure) = match fallback.fail_at {
            FailAt::BeforeTool => (vec![], json!({"error": fallback.error})),
            FailAt::AfterTool => (calls, json!({"error": fallback.error})),
            FailAt::MidStream => (
                calls,
                json!({"chunks": PARTIAL_REPLY, "error_mid_stream": fallback.error}),
            ),
        };
        let mut providers = serde_json::Map::new();
        providers.insert(
            self.primary_key.clone(),
            json!({"turns": primary_turns, "after": failure}),
        );
        providers.insert(
            self.fallback_key.clone(),
            json!({"turns": [call, {"chunks": case.reply}], "after": {"text": "Done."}}),
        );
        Ok(
            json!({"turns": [{"text": "no scripted answer for this request"}], "providers": providers}),
        )
    }
}

/// The tool names the primary made up in the failed attempt (the case's calls of tools the
/// runtime does not offer, made only when it fails after them), each with its marker.
pub fn made_up_names(case: &E2eCase) -> Vec<(String, String)> {
    if !case.fallback.as_ref().is_some_and(|f| f.fail_at.ran_tool()) {
        return Vec::new();
    }
    case.tool_calls()
        .into_iter()
        .filter_map(|call| match call.tool {
            Tool::Named { name, .. } => Some((name, marker(&case.id, Field::Name))),
            _ => None,
        })
        .collect()
}

/// The config placeholders every template gets (JSON literals); `null`s (`stream`: false)
/// outside a fallback case, so a template may name them whatever the scenario.
pub fn template_vars(
    pairing: Option<(&Pairing, String)>,
    fallback: Option<&Fallback>,
    image_path: &Path,
) -> BTreeMap<&'static str, String> {
    let wrap = if fallback.is_some_and(|f| f.whole_agent) {
        "agent"
    } else {
        "model"
    };
    let (fallback_json, api, base_url, model) = match pairing {
        Some((p, base_url)) => (
            json!({"api": p.fallback.api, "baseUrl": base_url, "model": p.fallback_model,
                   "wrap": wrap}),
            json!(p.fallback.api),
            json!(base_url),
            json!(p.fallback_model),
        ),
        None => (Value::Null, Value::Null, Value::Null, Value::Null),
    };
    let user_image = fallback.filter(|f| f.user_image).map_or(
        Value::Null,
        |_| json!({"mediaType": "image/png", "data": ImageSource::Prompt.base64()}),
    );
    let image_path = fallback
        .filter(|f| f.path_image)
        .map_or(Value::Null, |_| json!(image_path.display().to_string()));
    BTreeMap::from([
        ("model", json!(PRIMARY_MODEL).to_string()),
        ("fallback", fallback_json.to_string()),
        ("fallback_api", api.to_string()),
        ("fallback_base_url", base_url.to_string()),
        ("fallback_model", model.to_string()),
        ("user_image", user_image.to_string()),
        ("image_path", image_path.to_string()),
        // A mid-stream failure needs a streamed answer: the agent streams its model calls.
        (
            "stream",
            fallback
                .is_some_and(|f| f.fail_at == FailAt::MidStream)
                .to_string(),
        ),
    ])
}

/// Writes the local image with its first bytes.
pub fn plant_image(path: &Path) -> Result<()> {
    let png = base64_simd::STANDARD
        .decode_to_vec(ImageSource::PersistedPath.base64())
        .context("sample image")?;
    Ok(crate::fs::write_atomic(path, &png)?)
}

/// Once the primary has failed, replaces the local image by its second bytes (once): a later
/// load of the path yields those, a persisted copy still the first ones. The turn polls every
/// 50 ms, so a runtime that loads the path again within that window of the failure still reads
/// the first bytes, which the judge then takes for the persisted copy (openclaw's first retry
/// comes about a second later). The swap is the harness's write, recorded as such for S5.
pub struct ImageSwap {
    pub path: std::path::PathBuf,
    pub done: bool,
}

impl ImageSwap {
    pub fn observe(&mut self, records: &[Value], harness: &mut HarnessWrites) -> Result<()> {
        if self.done || !records.iter().any(|r| r["verdict"]["answer"] == "error") {
            return Ok(());
        }
        self.done = true;
        let png = base64_simd::STANDARD
            .decode_to_vec(ImageSource::RedetectedPath.base64())
            .context("sample image")?;
        harness.write(&self.path, &png)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ai_sdk() -> Adapter {
        Adapter::load(Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/runtimes/ai-sdk/e2e.toml"
        )))
        .unwrap()
    }

    fn seed(id: &str) -> E2eCase {
        super::super::fallback_cases::fallback_seeds()
            .into_iter()
            .find(|c| c.id == id)
            .expect("the seed")
    }

    #[test]
    fn the_whole_agent_case_tells_the_agent_to_wrap_itself_and_the_others_the_model() {
        let adapter = ai_sdk();
        for (id, wrap) in [
            ("fallback-cross-after-tool-whole-agent", "agent"),
            ("fallback-cross-after-tool-overloaded", "model"),
        ] {
            let case = seed(id);
            let fb = case.fallback.as_ref().unwrap();
            let pairing = Pairing::of(&adapter, fb).unwrap();
            let vars = template_vars(
                Some((&pairing, "http://b".into())),
                Some(fb),
                Path::new("/p"),
            );
            let fallback: Value = serde_json::from_str(&vars["fallback"]).unwrap();
            assert_eq!(fallback["wrap"], wrap, "{id}");
        }
    }

    #[test]
    fn a_mid_stream_case_scripts_a_cut_stream_after_the_tool_and_asks_the_agent_to_stream() {
        let case = super::super::fallback_cases::fallback_seeds()
            .into_iter()
            .find(|c| {
                c.fallback
                    .as_ref()
                    .is_some_and(|f| f.fail_at == FailAt::MidStream)
            })
            .expect("a mid-stream seed");
        let fb = case.fallback.as_ref().unwrap();
        assert_eq!(
            template_vars(None, Some(fb), Path::new("/p"))["stream"],
            "true"
        );
        let mut plain = fb.clone();
        plain.fail_at = FailAt::AfterTool;
        assert_eq!(
            template_vars(None, Some(&plain), Path::new("/p"))["stream"],
            "false"
        );
        assert_eq!(
            template_vars(None, None, Path::new("/p"))["stream"],
            "false"
        );
        let adapter = ai_sdk();
        let pairing = Pairing::of(&adapter, fb).unwrap();
        let script = pairing.script(&adapter, &case, fb, 1).unwrap();
        let primary = &script["providers"][&pairing.primary_key];
        assert_eq!(
            primary["turns"].as_array().unwrap().len(),
            1,
            "the tool call"
        );
        assert_eq!(primary["after"]["error_mid_stream"], "overloaded");
        assert_eq!(primary["after"]["chunks"], json!(PARTIAL_REPLY));
        mock_providers::Script::from_json(&script).expect("the mocks take it");
    }

    #[test]
    fn the_made_up_name_case_makes_its_calls_in_the_failed_attempt_and_names_them() {
        let case = seed("fallback-cross-after-tool-made-up-name");
        let names = made_up_names(&case);
        assert_eq!(names.len(), 1);
        assert!(names[0].0.starts_with("../../escaped-") && names[0].0.contains(&names[0].1));
        let fb = case.fallback.as_ref().unwrap();
        let adapter = ai_sdk();
        let pairing = Pairing::of(&adapter, fb).unwrap();
        let script = pairing.script(&adapter, &case, fb, 1).unwrap();
        let turns = &script["providers"][&pairing.primary_key]["turns"];
        assert_eq!(turns[0]["tool_call"]["name"], json!(names[0].0));
        assert_eq!(turns[1]["tool_call"]["name"], "get_attachment");
        // Before the tool, the primary makes no call: no name of its reaches anyone.
        let mut before = case.clone();
        before.fallback.as_mut().unwrap().fail_at = FailAt::BeforeTool;
        assert!(made_up_names(&before).is_empty());
    }

    #[test]
    fn the_local_image_is_swapped_once_after_the_first_failure() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(IMAGE_FILE);
        plant_image(&path).unwrap();
        let first = std::fs::read(&path).unwrap();
        let mut swap = ImageSwap {
            path: path.clone(),
            done: false,
        };
        let snapshot = super::super::writes::Snapshot::take(dir.path(), Vec::new());
        let mut harness = HarnessWrites::default();
        swap.observe(&[json!({"verdict": {"answer": "tool_call"}})], &mut harness)
            .unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), first, "no failure yet");
        swap.observe(&[json!({"verdict": {"answer": "error"}})], &mut harness)
            .unwrap();
        assert_ne!(std::fs::read(&path).unwrap(), first);
        assert!(swap.done);
        // The swap is recorded as the harness's write, so S5 does not count it.
        let changes = snapshot.changes(&harness);
        assert_eq!(changes.len(), 1);
        assert!(changes[0].by_harness);
    }
}
