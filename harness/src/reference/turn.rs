//! What reaches the user in one turn (rules D1, D3, B3; op `normalize_stream` of sut-protocol.md).
//!
//! - Streamed blocks are untrusted: they go through the [`StreamNeutralizer`] as one continuous
//!   text (a directive split across blocks is still a directive) and never yield media. So the
//!   streamed deliveries, joined, equal the whole-text neutralization of the joined blocks,
//!   whatever the split (B3).
//! - S1 holds for each delivery too, since a channel may parse each message on its own (openclaw
//!   runs its media parser per block payload): a delivery never starts mid-line where the rest of
//!   the line could read as a directive. At the end of a block the current line's tail, from a
//!   character no continuation can turn into a directive start, is held back and opens the next
//!   delivery (see `safe_start`); the text is never changed, only where deliveries split. What
//!   is still held when the stream ends joins the last streamed delivery, which stays one
//!   contiguous piece of the stream from a safe start.
//! - The final reply is parsed (D2, [`parse_reply`]). When the stream ended mid-line, the
//!   held piece of that line opens the reply's delivery, so the line the two make in the joined
//!   stream is neutralized there (S1 on the joined stream).
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

use std::borrow::Cow;
use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use crate::reference::media_policy::MediaRoots;
use crate::reference::neutralize::{
    is_blank, is_hidden, is_line_terminator, neutralize, reads_as_letter,
};
use crate::reference::reply::parse_reply;
use crate::reference::stream::StreamNeutralizer;

/// Longest line tail held back between blocks. The tail is one or two characters plus blank
/// runs, which a stream can make arbitrarily long; past this the tail is delivered and the next
/// delivery's start is guarded by neutralizing its first line (B3's only exception, see
/// `Turn::deliver_streamed`).
pub const MAX_HELD_TAIL: usize = 4096;

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
    /// Released by the stream, not yet delivered: the current line from a safe start on.
    tail: String,
    /// The released text's current line has a non-blank character (the stream is mid-line).
    mid_line: bool,
    tool_media: Vec<String>,
    outcome: TurnOutcome,
}

impl<'r> Turn<'r> {
    pub fn new(roots: &'r MediaRoots) -> Self {
        Self {
            roots,
            stream: StreamNeutralizer::new(),
            tail: String::new(),
            mid_line: false,
            tool_media: Vec::new(),
            outcome: TurnOutcome::default(),
        }
    }

    /// A streamed block as raw bytes (a character may be split across blocks).
    pub fn stream_bytes(&mut self, block: &[u8]) {
        let mut text = String::new();
        self.stream.push(block, &mut text);
        self.deliver_streamed(&text);
    }

    /// A streamed block as text.
    pub fn stream_text(&mut self, block: &str) {
        let mut text = String::new();
        self.stream.push_str(block, &mut text);
        self.deliver_streamed(&text);
    }

    /// Bytes held back: the stream's undecided prefix and the undelivered line tail (B3's bound).
    pub fn held_bytes(&self) -> usize {
        self.stream.held_bytes() + self.tail.len()
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
        // Never lost (F2): the held tail and what the stream still holds (an undecided prefix,
        // which has no colon, or U+FFFD) continue the last streamed delivery, so it stays one
        // contiguous piece of the stream; a delivery of their own would split a line again.
        let mut rest = std::mem::take(&mut self.tail);
        std::mem::take(&mut self.stream).finish(&mut rest);
        let reply = final_reply
            .map(|text| parse_reply(text, self.roots))
            .unwrap_or_default();
        // The stream ended mid-line (`M`, say) and the reply continues that line into a
        // directive in the joined stream (`EDIA:/x`): the held piece opens the reply's delivery
        // instead, and the line they make together is neutralized there (S1 on the joined stream).
        let mut reply_text = reply.text;
        if !reply_text.is_empty() && !rest.is_empty() && !rest.ends_with(is_line_terminator) {
            let joined = rest.clone() + &reply_text;
            if let Cow::Owned(guarded) = neutralize_first_line(&joined) {
                reply_text = guarded;
                rest.clear();
            }
        }
        match self.outcome.deliveries.last_mut() {
            Some(last) => last.text.push_str(&rest),
            None if !rest.is_empty() => self.outcome.deliveries.push(Delivery {
                text: rest,
                media_urls: Vec::new(),
            }),
            None => {}
        }
        self.outcome.rejected_media += reply.rejected_media;
        let mut seen = HashSet::new();
        let media_urls: Vec<String> = reply
            .media_urls
            .into_iter()
            .chain(self.tool_media)
            .filter(|m| seen.insert(m.clone()))
            .collect();
        if !reply_text.is_empty() || !media_urls.is_empty() {
            self.outcome.deliveries.push(Delivery {
                text: reply_text,
                media_urls,
            });
        }
        self.outcome
    }

    /// Delivers what the stream released for one block, up to a safe start for the next one.
    ///
    /// A delivery may start at a line start (the stream neutralizer guards line starts), or
    /// mid-line at a held character (see [`safe_start`]). When the line has no safe start within
    /// [`MAX_HELD_TAIL`] bytes of its end (a blank run that long inside a line), the tail is
    /// delivered whole and the next delivery, starting mid-line with nothing held, is guarded:
    /// its first line is neutralized as if it started a line. That may add a marker the joined
    /// text does not have (over-neutralizing, never under): the one case where the joined
    /// deliveries differ from the whole-text neutralization (B3).
    fn deliver_streamed(&mut self, released: &str) {
        let held_before = !self.tail.is_empty();
        if !held_before && self.mid_line {
            self.tail.push_str(&neutralize_first_line(released));
        } else {
            self.tail.push_str(released);
        }
        let len = self.tail.len();
        let cut = match released
            .chars()
            .rev()
            .find(|&c| !is_blank(c) || is_line_terminator(c))
        {
            // Blanks only: a held tail keeps its safe start; with none held, the next delivery
            // starts as safely (at a line start, or guarded) as this one.
            None if held_before => 0,
            None => len,
            Some(c) if is_line_terminator(c) => {
                self.mid_line = false;
                len
            }
            // `None` only in a guarded delivery (` M`, say), which then guards the next one.
            Some(_) => {
                self.mid_line = true;
                safe_start(&self.tail).unwrap_or(len)
            }
        };
        let cut = if len - cut > MAX_HELD_TAIL { len } else { cut };
        // A block whose text is all held back delivers nothing (it has no media either).
        if cut > 0 {
            let held = self.tail.split_off(cut);
            self.outcome.deliveries.push(Delivery {
                text: std::mem::replace(&mut self.tail, held),
                media_urls: Vec::new(),
            });
        }
    }
}

/// Where in `text`'s last line a delivery may start so that no continuation makes that line a
/// directive: at the last non-blank character, unless it reads as `M` with only hidden characters
/// after it (`EDIA:` may follow), then at the non-blank character before it (followed by a blank or an
/// `M`, which reads as no `E`). Any other non-blank character opens no directive (a test checks
/// this against `directive_check`). `None` when the line has no such character.
fn safe_start(text: &str) -> Option<usize> {
    // Whether what follows the candidate already rules out `EDIA:`.
    let mut closed = false;
    for (i, c) in text.char_indices().rev() {
        if is_line_terminator(c) {
            return None;
        }
        if !is_blank(c) {
            if closed || !reads_as_letter(c, 'M') {
                return Some(i);
            }
            closed = true;
        } else if !is_hidden(c) {
            closed = true;
        }
    }
    None
}

/// `text` with its first line neutralized as if it started a line; the later lines come from
/// the stream neutralizer and are already neutral.
fn neutralize_first_line(text: &str) -> Cow<'_, str> {
    let end = text.find(is_line_terminator).unwrap_or(text.len());
    match neutralize(&text[..end]) {
        Cow::Borrowed(_) => Cow::Borrowed(text),
        Cow::Owned(line) => Cow::Owned(line + &text[end..]),
    }
}
