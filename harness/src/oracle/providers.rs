//! The second oracle in process: the mock providers' validators, written from the real APIs'
//! behaviour, judge the SUT's output as a tool result.

use serde_json::Value;

use crate::oracle::judge::violation::{Violation, gate};
use crate::rule::Rule;

/// A violation for every mock provider that would answer 4xx to `blocks` as a tool result.
pub fn provider_rejections(blocks: &Value) -> Vec<Violation> {
    mock_providers::Provider::ALL
        .into_iter()
        .filter_map(
            |provider| match mock_providers::validate_tool_result(provider, blocks) {
                mock_providers::Verdict::Accepted => None,
                verdict @ mock_providers::Verdict::Rejected { status, .. } => Some(gate(
                    Rule::Provider,
                    format!("{} answered {status}", provider.name()),
                    verdict.message().unwrap_or_default().to_string(),
                )),
            },
        )
        .collect()
}
