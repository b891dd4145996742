//! Fallback retries (rules S4, R1–R6, P1–P3; ops `resolve_retry_images` and
//! `sanitize_tool_names` of sut-protocol.md; seed 004, openclaw PRs #43507, #44188, #57959, none
//! merged upstream, so the seed's PR text is the only source).
//!
//! Choices where the sources are silent:
//! - Provider ids compare case-insensitively in ASCII only, untrimmed (R3, P3): any other
//!   difference means another provider, so images are stripped; a blank primary id is
//!   unknown (R4).
//! - A `previousFailure` string outside the protocol's list reads as `unknown`.
//! - R1 wins over R3: the first attempt keeps its images even if the candidate is not the
//!   primary (S4 speaks of retries only).
//! - P2 keeps ASCII `[A-Za-z0-9_-]` only and truncates after filtering, so every kept name is
//!   ASCII and "100 chars" is 100 bytes too; names are not deduplicated (P1 does that when
//!   merging). The 20-name cap counts names that survive filtering.
//! - P1 re-applies P2 to the merged list, so a chain of merges keeps the 20-name cap.

use serde::{Deserialize, Serialize};
use serde_json::Value;

const MAX_TOOL_NAMES: usize = 20;
const MAX_TOOL_NAME_CHARS: usize = 100;

/// Why the previous attempt failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureReason {
    Format,
    RateLimit,
    Timeout,
    Auth,
    Overloaded,
    #[serde(other)]
    Unknown,
}

/// Input of the protocol op `resolve_retry_images`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RetryImagesInput {
    pub attempt: u64,
    pub previous_failure: Option<FailureReason>,
    pub primary_provider: Option<String>,
    pub candidate_provider: String,
    pub images: Option<Vec<Value>>,
}

/// Output of the protocol op `resolve_retry_images`: `None` when stripped.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RetryImagesOutput {
    pub images: Option<Vec<Value>>,
}

impl RetryImagesInput {
    /// Whether this attempt may carry the images (R1–R5).
    pub fn keeps_images(&self) -> bool {
        if self.attempt == 0 && self.previous_failure.is_none() {
            return true; // R1
        }
        if self.previous_failure == Some(FailureReason::Format) {
            return false; // R2
        }
        match self.primary_provider.as_deref() {
            Some(primary) => same_provider(primary, &self.candidate_provider), // R3, R5
            None => false,                                                     // R4
        }
    }

    pub fn run(&self) -> RetryImagesOutput {
        // R6: `None` stays `None` either way.
        RetryImagesOutput {
            images: self.images.clone().filter(|_| self.keeps_images()),
        }
    }
}

/// Provider identity, case-insensitive in ASCII only and without trimming: ids that differ in
/// any other way are different providers, so images are stripped (fail closed, S4). A blank id
/// is unknown and matches nothing (R4). Found by the `retry` fuzz target: `" anthropic "` kept images for
/// `"Anthropic"`.
pub fn same_provider(a: &str, b: &str) -> bool {
    !a.trim().is_empty() && a.eq_ignore_ascii_case(b)
}

/// Input of the protocol op `sanitize_tool_names`.
#[derive(Debug, Clone, Deserialize)]
pub struct SanitizeToolNamesInput {
    pub names: Vec<Value>,
}

/// Output of the protocol op `sanitize_tool_names`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SanitizeToolNamesOutput {
    pub names: Vec<String>,
}

impl SanitizeToolNamesInput {
    pub fn run(&self) -> SanitizeToolNamesOutput {
        SanitizeToolNamesOutput {
            names: sanitize_tool_names(self.names.iter().filter_map(Value::as_str)),
        }
    }
}

/// P2: keep `[A-Za-z0-9_-]`, drop empties, at most 100 characters each and 20 names.
pub fn sanitize_tool_names<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    names
        .into_iter()
        .map(|name| {
            name.chars()
                .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'))
                .take(MAX_TOOL_NAME_CHARS)
                .collect::<String>()
        })
        .filter(|name| !name.is_empty())
        .take(MAX_TOOL_NAMES)
        .collect()
}

/// What a failed attempt already did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PartialExecution {
    pub tool_names: Vec<String>,
    pub did_send_via_messaging_tool: bool,
}

impl PartialExecution {
    /// A record from a failed attempt's raw tool names (P2 applied).
    pub fn new<'a>(
        tool_names: impl IntoIterator<Item = &'a str>,
        did_send_via_messaging_tool: bool,
    ) -> Self {
        Self {
            tool_names: sanitize_tool_names(tool_names),
            did_send_via_messaging_tool,
        }
    }

    /// P1: union of tool names in first-seen order, OR of the messaging flag.
    pub fn merge(&self, later: &PartialExecution) -> PartialExecution {
        let mut names: Vec<&str> = Vec::new();
        for name in self.tool_names.iter().chain(&later.tool_names) {
            if !names.contains(&name.as_str()) {
                names.push(name);
            }
        }
        PartialExecution::new(
            names,
            self.did_send_via_messaging_tool || later.did_send_via_messaging_tool,
        )
    }

    /// P3: the warning for the next attempt's system prompt, only on a same-provider retry (the
    /// tool names of one provider's attempt are not disclosed to another, S4).
    pub fn warning(
        &self,
        primary_provider: Option<&str>,
        candidate_provider: &str,
    ) -> Option<String> {
        let same = primary_provider.is_some_and(|p| same_provider(p, candidate_provider));
        if !same || (self.tool_names.is_empty() && !self.did_send_via_messaging_tool) {
            return None;
        }
        let mut text = String::from(
            "[System: a previous attempt at this request failed after it had already acted.",
        );
        if !self.tool_names.is_empty() {
            text.push_str(" Tools already executed: ");
            text.push_str(&self.tool_names.join(", "));
            text.push_str(". Do not run them again unless repeating them is harmless.");
        }
        if self.did_send_via_messaging_tool {
            text.push_str(" A message was already sent to the user through a messaging tool; do not send it again.");
        }
        text.push(']');
        Some(text)
    }
}
