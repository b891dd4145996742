//! `getUpdates`: delivery of the pending updates, their confirmation by `offset`, and the
//! (capped) long poll when there is none.

use std::time::Duration;

use serde_json::Value;

use super::params::Params;
use super::{Channel, LONG_POLL_CAP};

impl Channel {
    /// Unconfirmed updates from `offset` on; with none, an answer after the (capped) timeout.
    pub(super) async fn get_updates(&self, p: &Params) -> Value {
        let offset = p.int("offset").unwrap_or(0);
        let limit = p.int("limit").unwrap_or(100).clamp(1, 100) as usize;
        let timeout = p.int("timeout").unwrap_or(0).max(0) as u64;
        let ready = {
            let mut state = self.state();
            // An offset confirms every earlier update; a negative one keeps the last -offset.
            if offset > 0 {
                state
                    .pending
                    .retain(|u| u["update_id"].as_i64().unwrap_or(0) >= offset);
            } else if offset < 0 {
                let keep = offset.unsigned_abs() as usize;
                let drop = state.pending.len().saturating_sub(keep);
                state.pending.drain(..drop);
            }
            state
                .pending
                .iter()
                .take(limit)
                .cloned()
                .collect::<Vec<_>>()
        };
        if ready.is_empty() && timeout > 0 {
            // Nothing can arrive later (one message per channel): wait as a long poll would.
            tokio::time::sleep(Duration::from_secs(timeout).min(LONG_POLL_CAP)).await;
        }
        Value::Array(ready)
    }
}
