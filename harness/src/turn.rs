//! What reaches the user in one turn (rules D1, D3, B3; op `normalize_stream` of sut-protocol.md).
//!
//! - Streamed blocks are untrusted: they go through the [`StreamNeutralizer`] as one continuous
//!   text (a directive split across blocks is still a directive) and never yield media. Each
//!   block delivers what the neutralizer releases, if anything; what it still holds at the end of
//!   the stream is delivered before the final reply. So the streamed deliveries, joined, equal the
//!   whole-text neutralization of the joined blocks, whatever the split (B3).
//! - The final reply is parsed (D2, [`parse_reply`]).
//! - Tool media (structured media from trusted tools) is judged by the same policy (S3) and
//!   queued; it joins the final delivery after the reply's own media, or is delivered alone at the
//!   end of the turn. openclaw's newest runtime instead drops queued tool media when the final
//!   reply names any media (its choice of what to show, not a delivery rule); older versions merged
//!   as here.
//! - Every media target is delivered at most once per turn, compared in canonical form (WHATWG
//!   serialization, lexically normalized path) (D3).
//! - The final text is delivered even when the stream already carried the same words; openclaw
//!   suppresses it by a whitespace-blind comparison with the streamed text, a presentation
//!   heuristic outside D1–D3 that would need the whole stream kept in memory.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use crate::media_policy::MediaRoots;
use crate::reply::parse_reply;
use crate::stream::StreamNeutralizer;

/// One message to the user.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Delivery {
    pub text: String,
    pub media_urls: Vec<String>,
}

/// Input of the protocol op `normalize_stream`.
#[derive(Debug, Clone, Deserialize)]
pub struct NormalizeStreamInput {
    pub chunks: Vec<String>,
    pub r#final: Option<String>,
    #[serde(default)]
    pub roots: Vec<String>,
}

/// Output of the protocol op `normalize_stream`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct NormalizeStreamOutput {
    pub deliveries: Vec<Delivery>,
}

impl NormalizeStreamInput {
    pub fn run(&self) -> NormalizeStreamOutput {
        let roots = MediaRoots::new(&self.roots);
        let mut turn = Turn::new(&roots);
        for chunk in &self.chunks {
            turn.stream_text(chunk);
        }
        NormalizeStreamOutput {
            deliveries: turn.finish(self.r#final.as_deref()).deliveries,
        }
    }
}

/// How a turn ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TurnOutcome {
    pub deliveries: Vec<Delivery>,
    /// Media targets refused by S3 (tool media and final reply).
    pub rejected_media: usize,
}

/// One turn in progress.
#[derive(Debug)]
pub struct Turn<'r> {
    roots: &'r MediaRoots,
    stream: StreamNeutralizer,
    tool_media: Vec<String>,
    outcome: TurnOutcome,
}

impl<'r> Turn<'r> {
    pub fn new(roots: &'r MediaRoots) -> Self {
        Self {
            roots,
            stream: StreamNeutralizer::new(),
            tool_media: Vec::new(),
            outcome: TurnOutcome::default(),
        }
    }

    /// A streamed block as raw bytes (a character may be split across blocks).
    pub fn stream_bytes(&mut self, block: &[u8]) {
        let mut text = String::new();
        self.stream.push(block, &mut text);
        self.deliver_text(text);
    }

    /// A streamed block as text.
    pub fn stream_text(&mut self, block: &str) {
        let mut text = String::new();
        self.stream.push_str(block, &mut text);
        self.deliver_text(text);
    }

    /// Bytes the stream holds back (B3's bound).
    pub fn held_bytes(&self) -> usize {
        self.stream.held_bytes()
    }

    /// Structured media from a trusted tool, queued for the end of the turn.
    pub fn tool_media(&mut self, target: &str) {
        match self.roots.judge(target) {
            Ok(canonical) => self.tool_media.push(canonical),
            Err(_) => self.outcome.rejected_media += 1,
        }
    }

    /// Ends the turn with the final reply, if any.
    pub fn finish(mut self, final_reply: Option<&str>) -> TurnOutcome {
        let mut rest = String::new();
        std::mem::take(&mut self.stream).finish(&mut rest);
        self.deliver_text(rest);
        let reply = final_reply
            .map(|text| parse_reply(text, self.roots))
            .unwrap_or_default();
        self.outcome.rejected_media += reply.rejected_media;
        let mut seen = HashSet::new();
        let media_urls: Vec<String> = reply
            .media_urls
            .into_iter()
            .chain(self.tool_media)
            .filter(|m| seen.insert(m.clone()))
            .collect();
        if !reply.text.is_empty() || !media_urls.is_empty() {
            self.outcome.deliveries.push(Delivery {
                text: reply.text,
                media_urls,
            });
        }
        self.outcome
    }

    fn deliver_text(&mut self, text: String) {
        if !text.is_empty() {
            self.outcome.deliveries.push(Delivery {
                text,
                media_urls: Vec::new(),
            });
        }
    }
}
