//! What an end-to-end case holds: the MCP tool's result, the model's reply and tool calls, and
//! for the fallback scenario where the primary fails and which image sources the fallback sees;
//! and the seeded RNG both scenarios' generated cases are drawn from.

use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::generate::corners::calls::Call;
use crate::generate::sample_images::solid_png;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct E2eCase {
    /// Stable id: the seed scenario's name, or `gen-<seed>-<n>`.
    pub id: String,
    pub about: String,
    /// Index into the adapter's flavours (taken modulo their number).
    pub flavour: usize,
    /// Whether the configured model accepts images.
    pub image_input: bool,
    /// The `CallToolResult` the mock MCP server answers, verbatim (any JSON).
    pub result: Value,
    /// The model's final reply, one streamed event per element.
    pub reply: Vec<String>,
    /// A fallback case: the primary fails and the runtime moves to its fallback model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<Fallback>,
    /// The model's tool calls, one scripted turn each, before its reply; empty for today's
    /// one plain call of the MCP tool ([`Call::plain`]), so such cases serialize as before.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<Call>,
    /// A screenshot-vision case (seed 000): the runtime's browser screenshots the mock page and
    /// its vision model describes it, fails, or is absent; `result` and `calls` are unused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vision: Option<Vision>,
}

impl E2eCase {
    /// The model's tool calls, in order (the first always calls the MCP tool).
    pub fn tool_calls(&self) -> Vec<Call> {
        if self.calls.is_empty() {
            vec![Call::plain()]
        } else {
            self.calls.clone()
        }
    }

    /// Sets the model's calls; today's single plain call is stored as none.
    pub(super) fn with_calls(mut self, calls: Vec<Call>) -> E2eCase {
        self.calls = if calls == [Call::plain()] {
            Vec::new()
        } else {
            calls
        };
        self
    }
}

/// Which cases `normfuzz e2e` runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Scenario {
    /// One tool round trip: what the tool result becomes, what the reply delivers.
    #[default]
    ToolResult,
    /// A model fallback (the adapter's `[fallback]`): images and tool runs across it.
    Fallback,
    /// A browser screenshot described by a vision model (the adapter's `[vision]`, seed 000).
    Vision,
}

impl Scenario {
    pub fn as_str(self) -> &'static str {
        match self {
            Scenario::ToolResult => "tool-result",
            Scenario::Fallback => "fallback",
            Scenario::Vision => "vision",
        }
    }
}

/// Where the primary model fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FailAt {
    /// The primary's first request fails: the fallback starts from the user's message.
    BeforeTool,
    /// The primary calls the tool, the tool runs, then the primary fails: the fallback gets a
    /// history with a completed tool call (P4) and its image (R3).
    AfterTool,
    /// As `AfterTool`, but the primary's answer after the tool streams some text and fails in
    /// the middle of its stream, in the API's own framing (the agent streams: `${stream}`).
    MidStream,
}

impl FailAt {
    /// The failed attempt ran the tool (its result, and its image, are the failed attempt's).
    pub fn ran_tool(self) -> bool {
        matches!(self, FailAt::AfterTool | FailAt::MidStream)
    }
}

/// The primary's text before its stream fails (`FailAt::MidStream`).
pub const PARTIAL_REPLY: [&str; 2] = ["Partial answer from the primary, ", "cut off here"];

/// A fallback case's set-up.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Fallback {
    /// The fallback is a second model of the primary's API (R5), not another API (R3).
    pub same_provider: bool,
    pub fail_at: FailAt,
    /// The mock's failure kind (`mock_providers::script::FailureKind`): `rate_limit` (429),
    /// `server_error` (500), `overloaded` (503, Anthropic 529), `image` or `format` (400).
    pub error: String,
    /// The user's message carries an image (the config's `${user_image}`).
    pub user_image: bool,
    /// The prompt names a local image file (`${image_path}`), replaced by another image after
    /// the primary's first failure: its first bytes at the fallback came from the persisted
    /// turn, its second ones from a fresh load of the path.
    pub path_image: bool,
    /// The tool result carries an image (a different one per run of the tool).
    pub tool_image: bool,
    /// The fallback wraps the whole agent, not the model (`${fallback}`'s `"wrap": "agent"`):
    /// LangChain's `create_react_agent(a).with_fallbacks([create_react_agent(b)])`, which starts
    /// the fallback agent from the user's message alone. An agent without that form uses its
    /// model-level one.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub whole_agent: bool,
}

impl Fallback {
    /// Whether R2 applies (strip after a format failure) rather than R5 on a same-provider retry.
    pub fn is_format_failure(&self) -> bool {
        matches!(self.error.as_str(), "image" | "format")
    }
}

/// One image source of a fallback case, each its own 16x16 PNG.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ImageSource {
    /// Attached to the user's message.
    Prompt,
    /// The local file's bytes as the first attempt loaded them: at the fallback, only a
    /// persisted user turn still holds these.
    PersistedPath,
    /// The local file's bytes after the primary's first failure: only a fresh load of the path
    /// named in the prompt (openclaw's re-detection) yields these.
    RedetectedPath,
    /// The tool's first run.
    ToolRun1,
    /// The tool's second run (the fallback's own call).
    ToolRun2,
}

impl ImageSource {
    pub const ALL: [ImageSource; 5] = [
        ImageSource::Prompt,
        ImageSource::PersistedPath,
        ImageSource::RedetectedPath,
        ImageSource::ToolRun1,
        ImageSource::ToolRun2,
    ];

    /// The PNG of this source (base64).
    pub fn base64(self) -> String {
        let rgb = match self {
            ImageSource::Prompt => [200, 30, 30],
            ImageSource::PersistedPath => [30, 160, 60],
            ImageSource::RedetectedPath => [30, 200, 200],
            ImageSource::ToolRun1 => [40, 60, 200],
            ImageSource::ToolRun2 => [220, 200, 40],
        };
        base64_simd::STANDARD.encode_to_string(solid_png(16, rgb))
    }

    /// Where the image came from, as reports say it.
    pub fn describe(self) -> &'static str {
        match self {
            ImageSource::Prompt => "the user's prompt image",
            ImageSource::PersistedPath => {
                "the user's local image as the persisted user turn holds it"
            }
            ImageSource::RedetectedPath => {
                "the user's local image, loaded again from the path the prompt names"
            }
            ImageSource::ToolRun1 => "the tool result of the failed attempt",
            ImageSource::ToolRun2 => "the tool result of the fallback's own call",
        }
    }
}

/// The text that marks a tool run's result, so the fallback's history shows which run it holds.
pub fn tool_run_text(run: usize) -> String {
    format!("Attachment run {run}: quarterly report attached.")
}

/// The generators' RNG for `seed`: `salt` keeps the scenarios' draws apart.
pub(super) fn runner(seed: u64, salt: &[u8; 8]) -> TestRunner {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    bytes[8..16].copy_from_slice(salt);
    TestRunner::new_with_rng(
        Config::default(),
        TestRng::from_seed(RngAlgorithm::ChaCha, &bytes),
    )
}

/// What the mock MCP server answers to a fallback case's tool runs, in order.
pub fn fallback_results(fallback: &Fallback) -> Vec<Value> {
    [(1, ImageSource::ToolRun1), (2, ImageSource::ToolRun2)]
        .into_iter()
        .map(|(run, source)| {
            let mut content = vec![json!({"type": "text", "text": tool_run_text(run)})];
            if fallback.tool_image {
                content.push(
                    json!({"type": "image", "data": source.base64(), "mimeType": "image/png"}),
                );
            }
            json!({ "content": content })
        })
        .collect()
}

/// What the vision model does with the screenshot (the vision scenario, `vision.rs`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// Answers a description that repeats the page's directives.
    Describes,
    /// Fails with the mock API's own error (`mock_providers::script::FailureKind`: `image`
    /// 400, `server_error` 500), its message holding the directives.
    Fails { error: String },
    /// No vision model is configured and the agent model takes no images.
    Absent,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Vision {
    pub outcome: Outcome,
}
