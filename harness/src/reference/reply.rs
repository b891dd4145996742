//! Final assistant replies (rule D2; op `parse_reply` of sut-protocol.md): legacy `MEDIA:` lines
//! become structured media, `[[...]]` tags become flags, `[embed ...]` shortcodes become canvas
//! blocks; every other byte of the text is kept as is.
//!
//! Order matters for S1: tags and shortcodes are removed first, because removing them can bring
//! a `MEDIA:` to a line start (`[[audio_as_voice]]MEDIA:/x`); media lines are removed last, so
//! the text delivered has no directive line at all. A removal joins the text on either side,
//! which can make a new tag or shortcode (`[[reply_to[[reply_to_current]]:1]]`,
//! `[[\nMEDIA:/x\nreply_to_current]]`, `[embed\nMEDIA:/x]\nref="a" /]`), so the three passes
//! repeat until one removes nothing: the text delivered holds no tag, shortcode or media line
//! (the sanitizer trap of removing `<scr<script>ipt>` once). Every removal shortens the text,
//! so the repeats end. Each repeat is linear, and only text nested that way needs more than two:
//! markup nested k levels deep costs k repeats, quadratic in the worst case (2,000 levels in
//! 26 KB take 0.14 s), which a reply needs an adversary to reach.
//!
//! **What a media line is.** Exactly the lines the neutralizer calls directives (S1's widest
//! reading: every line terminator, blank, ignorable, case and NFKC disguise). So the parser and
//! the neutralizer can never disagree, and no directive line reaches the text: each one leaves
//! the text whole, its targets delivered or counted as rejected. Deliberate differences from
//! openclaw's `splitMediaFromOutput` (research notes §3), which reads only ASCII `MEDIA:` after
//! `\s*` on CR/LF lines:
//! - disguised directives (`ＭＥＤＩＡ：`, `\u2028MEDIA:`, `M\u200BEDIA:`) are media lines too;
//! - no Markdown code-region awareness: a `MEDIA:` line inside a fence is a media line (openclaw
//!   keeps it as live text, which a line-based consumer reads as a directive);
//! - a media line never leaves a remainder in the text (openclaw keeps unparsed parts such as
//!   `"second"` visible); a line with no target at all (`MEDIA:` alone, `MEDIA:screenshot` with no
//!   root) counts as one rejected target, where openclaw keeps it verbatim;
//! - no whitespace normalization (openclaw trims, collapses blank lines and spaces): a removed
//!   line takes its own terminator (`\r\n` counts as one) or, on the last line, the one before.
//!
//! **Targets of a media line** (the text after the colon to the end of the line, blanks
//! trimmed), first rule that applies:
//! 1. a JSON array of strings: its items;
//! 2. wrapped in one pair of backticks (a code span) with no other backtick: the inside, read by 4;
//! 3. a list of quoted items (`"…"`, `'…'`, `` `…` ``) separated by blanks or commas: the items,
//!    trimmed and not otherwise cleaned (an item ends at the first same quote followed by the end,
//!    a blank or a comma);
//! 4. otherwise split at blanks that precede a token starting a new source (`/`, `~`, `./`,
//!    `../`, `scheme:`), so paths with spaces stay whole; each part is cleaned like openclaw's
//!    `cleanCandidate` (wrapping quotes and brackets, trailing `,`, a serialized-JSON tail).
//!    openclaw also splits before bare relative paths after a path with an extension
//!    (`/tmp/a.png media/b.png` → two); here that is one path with a space.
//!
//! Each target is judged by [`MediaRoots::judge`] (S3) and delivered in canonical form, once
//! (duplicates in one reply are dropped).
//!
//! **Tags** (openclaw `parseInlineDirectives`): `[[audio_as_voice]]`, `[[reply_to_current]]`,
//! `[[reply_to:<id>]]`, case-insensitive with blanks inside the brackets; a tag is replaced by
//! one space when both neighbours are non-blank, else removed. `replyTo`: the last explicit id,
//! else `"current"` when `[[reply_to_current]]` was seen, else null (an explicit id `current`
//! reads the same). Ids are sanitized as openclaw's `sanitizeReplyDirectiveId` (control
//! characters and brackets removed, trimmed, at most 256 characters), plus line terminators;
//! an id left empty is ignored. Tags inside code are not special-cased (see above).

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::reference::embed;
use crate::reference::media_policy::{MediaRoots, has_scheme};
use crate::reference::neutralize::{directive_spans, is_blank, is_line_terminator};

static TAG: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\[\[\s*(?:(audio_as_voice)|(reply_to_current)|reply_to\s*:([^\]\n]*))\s*\]\]")
        .expect("valid regex")
});
/// openclaw `TRAILING_SERIALIZED_JSON_AFTER_EXT_RE`: a path with an extension, then the rest of a
/// JSON document it was pasted from (`/a.png"}],"details":…`).
static JSON_TAIL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?s)^(.*\.[0-9A-Za-z_]{1,10})\\?"[\]},:]"#).expect("valid regex")
});

const MAX_REPLY_ID_CHARS: usize = 256;

/// Input of the protocol op `parse_reply`.
#[derive(Debug, Clone, Deserialize)]
pub struct ParseReplyInput {
    pub text: String,
    #[serde(default)]
    pub roots: Vec<String>,
}

impl ParseReplyInput {
    pub fn run(&self) -> ParsedReply {
        parse_reply(&self.text, &MediaRoots::new(&self.roots))
    }
}

/// Output of the protocol op `parse_reply`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ParsedReply {
    pub text: String,
    pub media_urls: Vec<String>,
    pub audio_as_voice: bool,
    /// `None`, `"current"`, or an explicit message id.
    pub reply_to: Option<String>,
    pub embeds: Vec<Value>,
    pub rejected_media: usize,
}

/// Parses a final assistant reply (D2).
pub fn parse_reply(text: &str, roots: &MediaRoots) -> ParsedReply {
    let mut reply = ParsedReply::default();
    let mut tags = Tags::default();
    let mut text = text.to_string();
    loop {
        let stripped = strip_tags(&text, &mut tags);
        let embeds = embed::extract(&stripped);
        reply.embeds.extend(embeds.blocks);
        reply.rejected_media += embeds.rejected;
        let rest = extract_media_lines(&embeds.text, roots, &mut reply);
        // Each removal shortens the text: an unchanged length means nothing was removed.
        if rest.len() == text.len() {
            break;
        }
        text = rest.into_owned();
    }
    reply.text = text;
    reply.audio_as_voice = tags.audio_as_voice;
    reply.reply_to = tags
        .explicit
        .or_else(|| tags.current.then(|| "current".to_string()));
    reply
}

/// The tags removed so far, over every repeat of the passes.
#[derive(Default)]
struct Tags {
    audio_as_voice: bool,
    current: bool,
    /// The last explicit id.
    explicit: Option<String>,
}

fn strip_tags<'t>(text: &'t str, tags: &mut Tags) -> Cow<'t, str> {
    if !text.contains("[[") {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    for caps in TAG.captures_iter(text) {
        let Some(tag) = caps.get(0) else { continue };
        out.push_str(&text[copied..tag.start()]);
        let before = text[..tag.start()].chars().next_back();
        let after = text[tag.end()..].chars().next();
        if before.is_some_and(|c| !c.is_whitespace()) && after.is_some_and(|c| !c.is_whitespace()) {
            out.push(' ');
        }
        copied = tag.end();
        if caps.get(1).is_some() {
            tags.audio_as_voice = true;
        } else if caps.get(2).is_some() {
            tags.current = true;
        } else if let Some(id) = caps
            .get(3)
            .map(|m| sanitize_reply_id(m.as_str()))
            .filter(|id| !id.is_empty())
        {
            tags.explicit = Some(id);
        }
    }
    if copied == 0 {
        return Cow::Borrowed(text);
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

fn sanitize_reply_id(raw: &str) -> String {
    let kept: String = raw
        .trim()
        .chars()
        .filter(|&c| !c.is_control() && !is_line_terminator(c) && c != '[' && c != ']')
        .collect();
    kept.trim().chars().take(MAX_REPLY_ID_CHARS).collect()
}

/// Removes every directive line, judging its targets into `reply`.
fn extract_media_lines<'t>(
    text: &'t str,
    roots: &MediaRoots,
    reply: &mut ParsedReply,
) -> Cow<'t, str> {
    let mut out = String::new();
    let mut copied = 0;
    // Targets delivered by an earlier repeat of the passes count too.
    let mut delivered: HashSet<String> = reply.media_urls.iter().cloned().collect();
    let mut removed_last_line = false;
    for span in directive_spans(text) {
        // Only blanks lie between the line start and the directive.
        let line_start = text[..span.start]
            .char_indices()
            .rfind(|&(_, c)| is_line_terminator(c))
            .map_or(0, |(i, c)| i + c.len_utf8());
        let line_end = text[span.end..]
            .find(is_line_terminator)
            .map_or(text.len(), |i| span.end + i);
        removed_last_line = line_end == text.len();
        out.push_str(&text[copied..line_start]);
        copied = line_end + terminator_len(&text[line_end..]);
        let targets = media_targets(&text[span.end..line_end]);
        if targets.is_empty() {
            reply.rejected_media += 1;
        }
        for target in targets {
            match roots.judge(&target) {
                Ok(canonical) if delivered.insert(canonical.clone()) => {
                    reply.media_urls.push(canonical)
                }
                Ok(_) => {}
                Err(_) => reply.rejected_media += 1,
            }
        }
    }
    if copied == 0 {
        return Cow::Borrowed(text);
    }
    out.push_str(&text[copied..]);
    if removed_last_line {
        // The last line had no terminator of its own: take the one that ended the line before.
        let cut = if out.ends_with("\r\n") {
            2
        } else {
            out.chars()
                .next_back()
                .filter(|&c| is_line_terminator(c))
                .map_or(0, char::len_utf8)
        };
        out.truncate(out.len() - cut);
    }
    Cow::Owned(out)
}

fn terminator_len(rest: &str) -> usize {
    if rest.starts_with("\r\n") {
        2
    } else {
        rest.chars().next().map_or(0, char::len_utf8)
    }
}

/// The targets of one media line's payload (grammar in the module docs).
fn media_targets(payload: &str) -> Vec<Cow<'_, str>> {
    let p = payload.trim_matches(is_blank);
    if p.starts_with('[')
        && let Ok(items) = serde_json::from_str::<Vec<String>>(p)
    {
        return items.into_iter().map(Cow::Owned).collect();
    }
    if let Some(inner) = p
        .strip_prefix('`')
        .and_then(|q| q.strip_suffix('`'))
        .filter(|q| !q.contains('`'))
    {
        return unquoted_targets(inner.trim_matches(is_blank));
    }
    quoted_list(p).unwrap_or_else(|| unquoted_targets(p))
}

fn quoted_list(p: &str) -> Option<Vec<Cow<'_, str>>> {
    let mut items = Vec::new();
    let mut rest = p;
    loop {
        rest = rest.trim_start();
        if !items.is_empty()
            && let Some(after_comma) = rest.strip_prefix(',')
        {
            rest = after_comma.trim_start();
        }
        let Some(quote) = rest.chars().next() else {
            break;
        };
        if !matches!(quote, '"' | '\'' | '`') {
            return None;
        }
        let body = &rest[1..];
        let end = body.match_indices(quote).map(|(i, _)| i).find(|&i| {
            body[i + 1..]
                .chars()
                .next()
                .is_none_or(|c| c.is_whitespace() || c == ',')
        })?;
        items.push(Cow::Borrowed(body[..end].trim()));
        rest = &body[end + 1..];
    }
    (!items.is_empty()).then_some(items)
}

fn unquoted_targets(p: &str) -> Vec<Cow<'_, str>> {
    let mut targets = Vec::new();
    let mut start = None;
    let mut last_end = 0;
    for (i, token) in tokens(p) {
        if let Some(s) = start
            && begins_source(clean(token))
        {
            targets.push(clean(&p[s..last_end]));
            start = None;
        }
        start.get_or_insert(i);
        last_end = i + token.len();
    }
    if let Some(s) = start {
        targets.push(clean(&p[s..last_end]));
    }
    targets.into_iter().map(Cow::Borrowed).collect()
}

/// Blank-separated tokens with their offsets.
fn tokens(p: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut from = 0;
    std::iter::from_fn(move || {
        let start = from + p[from..].find(|c: char| !c.is_whitespace())?;
        let end = p[start..]
            .find(char::is_whitespace)
            .map_or(p.len(), |i| start + i);
        from = end;
        Some((start, &p[start..end]))
    })
}

fn begins_source(token: &str) -> bool {
    token.starts_with(['/', '~'])
        || token.starts_with("./")
        || token.starts_with("../")
        || has_scheme(token)
}

/// openclaw `cleanCandidate`: wrapping punctuation a model or a JSON document left around a path.
fn clean(raw: &str) -> &str {
    let stripped = raw
        .trim_start_matches(['`', '"', '\'', '[', '{', '('])
        .trim_end_matches(['`', '"', '\'', '\\', '}', ')', ']', ',']);
    JSON_TAIL
        .captures(stripped)
        .and_then(|c| c.get(1))
        .map_or(stripped, |m| m.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn targets(p: &str) -> Vec<String> {
        media_targets(p).into_iter().map(Cow::into_owned).collect()
    }

    #[test]
    fn target_grammar() {
        assert_eq!(
            targets(" /Users/pete/My Files/render final.png "),
            ["/Users/pete/My Files/render final.png"]
        );
        assert_eq!(
            targets("/tmp/a.png /tmp/b.png"),
            ["/tmp/a.png", "/tmp/b.png"]
        );
        assert_eq!(
            targets("/tmp/first.png, /tmp/second.png"),
            ["/tmp/first.png", "/tmp/second.png"]
        );
        assert_eq!(
            targets(r#"["/tmp/a.png", "/tmp/b.png"]"#),
            ["/tmp/a.png", "/tmp/b.png"]
        );
        assert_eq!(
            targets(r#""/tmp/first image.png" '/tmp/second image.png'"#),
            ["/tmp/first image.png", "/tmp/second image.png"]
        );
        assert_eq!(
            targets(r#""/tmp/Hello, World.png""#),
            ["/tmp/Hello, World.png"]
        );
        assert_eq!(
            targets("`/tmp/a.png /tmp/b.png`"),
            ["/tmp/a.png", "/tmp/b.png"]
        );
        assert_eq!(
            targets(r#""https://example.com/v.mp4?token=ends,""#),
            ["https://example.com/v.mp4?token=ends,"]
        );
        assert_eq!(
            targets("https://example.com/v.mp4?token=ends,"),
            ["https://example.com/v.mp4?token=ends"]
        );
        assert_eq!(
            targets(r#"/path/to/image.png"}],"details":{"provider":"openai"}"#),
            ["/path/to/image.png"]
        );
        assert_eq!(
            targets("/tmp/project screenshots/../../.env /tmp/safe/second.png"),
            [
                "/tmp/project screenshots/../../.env",
                "/tmp/safe/second.png"
            ]
        );
        assert!(targets("  ").is_empty());
    }

    #[test]
    fn quote_scan_is_linear() {
        let payload = "'a ".repeat(32_000);
        assert_eq!(targets(payload.trim_end()).len(), 1);
    }
}
