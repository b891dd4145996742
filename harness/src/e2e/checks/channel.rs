//! The delivered layer: what a chat channel received (the mock Telegram Bot API's capture), read
//! as a user sees it, and judged against the files planted for the case (`e2e/plant.rs`).
//!
//! Texts: every `text` and `caption` a call carries (sends, edits, album items), rendered the
//! way the channel renders them (`parse_mode` HTML: tags dropped, entities decoded; MarkdownV2:
//! escapes dropped), because a directive hidden behind `&#77;EDIA:` is still a directive to the
//! user. A message the runtime deletes later was still delivered: it counts. Media: a URL a call
//! asks the channel to fetch is a media target (S3 by URL policy); an upload is compared by bytes
//! with the planted files (S3 when it is a file outside the roots, F1 when an image the reply
//! named inside them never arrives, D3 when the same bytes arrive twice).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::{Delivered, E2eFinding, Layer};
use crate::e2e::marker::sha256_hex;
use crate::e2e::plant::Planted;
use crate::excerpt::bounded;
use crate::oracle::path::has_scheme;
use crate::rule::Rule;

/// One file a call uploaded (a multipart part with a file name or a non-text body).
#[derive(Debug, Clone, PartialEq)]
pub struct Upload {
    pub method: String,
    pub field: String,
    pub file_name: Option<String>,
    pub content_type: Option<String>,
    pub sha256: String,
    pub bytes: Vec<u8>,
    /// Where the capture keeps the bytes (evidence).
    pub saved: Option<PathBuf>,
}

/// What the channel received, in arrival order.
#[derive(Debug, Default, PartialEq)]
pub struct ChannelView {
    pub delivered: Delivered,
    pub uploads: Vec<Upload>,
    /// Calls that put something in front of the user (sends and edits).
    pub messages: usize,
}

/// Telegram methods that show the user something.
pub fn shows_user(method: &str) -> bool {
    method.starts_with("send") && method != "sendChatAction" || method.starts_with("edit")
}

/// Parameters of a media method that name its file (an upload, a URL, or a `file_id`).
const MEDIA_FIELDS: [&str; 8] = [
    "photo",
    "document",
    "audio",
    "voice",
    "video",
    "animation",
    "video_note",
    "sticker",
];

/// Reads a channel capture (mock-providers' `channels/telegram.rs` documents the record): one
/// record per call, `{method, params, status, files: [{field, fileName, contentType, sha256,
/// path | base64}]}`, `path` relative to `dir`. A call the channel refused showed nothing.
pub fn channel_view(records: &[Value], dir: &Path) -> ChannelView {
    let mut view = ChannelView::default();
    for record in records {
        let method = record["method"].as_str().unwrap_or_default();
        let refused = record["status"].as_u64().is_some_and(|s| s != 200);
        if !shows_user(method) || refused {
            continue;
        }
        view.messages += 1;
        let params = &record["params"];
        let uploads: Vec<Upload> = record["files"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|f| upload(method, f, dir))
            .collect();
        let mode = params["parse_mode"].as_str();
        for key in ["text", "caption"] {
            if let Some(t) = params[key].as_str() {
                view.delivered.texts.push(rendered(t, mode));
            }
        }
        // An album's items arrive as a JSON string (multipart) or an array (JSON body).
        let media_items = match &params["media"] {
            Value::String(s) => serde_json::from_str(s).unwrap_or(Value::Null),
            other => other.clone(),
        };
        for item in media_items.as_array().into_iter().flatten() {
            if let Some(t) = item["caption"].as_str() {
                view.delivered
                    .texts
                    .push(rendered(t, item["parse_mode"].as_str().or(mode)));
            }
            if let Some(target) = item["media"].as_str() {
                media_target(target, &mut view.delivered);
            }
        }
        for field in MEDIA_FIELDS {
            if let Some(target) = params[field].as_str() {
                media_target(target, &mut view.delivered);
            }
        }
        view.uploads.extend(uploads);
    }
    view
}

/// A file named by string: a URL the channel would fetch is judged as media; `attach://` points
/// at an upload (judged by bytes) and a bare `file_id` at a file the channel already has.
fn media_target(target: &str, delivered: &mut Delivered) {
    if has_scheme(target) && !target.starts_with("attach://") {
        delivered.media.push(target.to_string());
    }
}

fn upload(method: &str, file: &Value, dir: &Path) -> Upload {
    let saved = file["path"].as_str().map(|p| dir.join(p));
    let bytes = match (&saved, file["base64"].as_str()) {
        (Some(p), _) => std::fs::read(p).ok(),
        (None, Some(b64)) => base64_simd::STANDARD.decode_to_vec(b64).ok(),
        (None, None) => None,
    }
    .unwrap_or_default();
    let s = |k: &str| file[k].as_str().map(str::to_string);
    Upload {
        method: method.to_string(),
        field: s("field").unwrap_or_default(),
        file_name: s("fileName"),
        content_type: s("contentType"),
        sha256: s("sha256").unwrap_or_else(|| sha256_hex(&bytes)),
        bytes,
        saved,
    }
}

/// `text` as the user reads it. Telegram's HTML subset: tags are dropped and the entities it
/// supports (`&lt;` `&gt;` `&amp;` `&quot;` and numeric ones) decoded; MarkdownV2: a backslash
/// escapes the next character. Hand-written: the subset is tiny and a general HTML parser would
/// also decode entities Telegram leaves alone.
pub fn rendered(text: &str, parse_mode: Option<&str>) -> String {
    match parse_mode.map(str::to_ascii_lowercase).as_deref() {
        Some("html") => {
            let mut out = String::with_capacity(text.len());
            let mut rest = text;
            while let Some(i) = rest.find(['<', '&']) {
                out.push_str(&rest[..i]);
                rest = &rest[i..];
                if rest.starts_with('<') {
                    match rest.find('>') {
                        Some(end) => rest = &rest[end + 1..],
                        None => {
                            out.push_str(rest);
                            rest = "";
                        }
                    }
                } else {
                    // Entities are short: look for `;` within a few bytes only.
                    let end = rest.bytes().skip(1).take(12).position(|b| b == b';');
                    let decoded =
                        end.and_then(|end| decode_entity(&rest[1..1 + end]).map(|c| (c, end)));
                    match decoded {
                        Some((c, end)) => {
                            out.push(c);
                            rest = &rest[end + 2..];
                        }
                        None => {
                            out.push('&');
                            rest = &rest[1..];
                        }
                    }
                }
            }
            out.push_str(rest);
            out
        }
        Some("markdownv2") | Some("markdown") => {
            let mut out = String::with_capacity(text.len());
            let mut chars = text.chars();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => out.extend(chars.next()),
                    c => out.push(c),
                }
            }
            out
        }
        _ => text.to_string(),
    }
}

fn decode_entity(name: &str) -> Option<char> {
    match name {
        "lt" => Some('<'),
        "gt" => Some('>'),
        "amp" => Some('&'),
        "quot" => Some('"'),
        _ => {
            let n = name.strip_prefix('#')?;
            let code = match n.strip_prefix(['x', 'X']) {
                Some(hex) => u32::from_str_radix(hex, 16).ok()?,
                None => n.parse().ok()?,
            };
            char::from_u32(code)
        }
    }
}

/// Which planted file an upload carries: the same bytes, the file's marker inside them (a
/// runtime that re-wraps a file), or the same file name (one that re-encodes an image).
fn carried<'a>(upload: &Upload, planted: &'a [Planted]) -> Option<(&'a Planted, &'static str)> {
    planted.iter().find_map(|p| {
        if upload.sha256 == p.sha256 {
            Some((p, "identical bytes"))
        } else if p
            .marker
            .as_ref()
            .is_some_and(|m| memchr::memmem::find(&upload.bytes, m.as_bytes()).is_some())
        {
            Some((p, "the planted marker"))
        } else {
            let base = Path::new(&p.named).file_name()?.to_str()?;
            (upload.file_name.as_deref() == Some(base)).then_some((p, "the same file name"))
        }
    })
}

fn upload_evidence(u: &Upload) -> Value {
    json!({
        "method": u.method, "field": u.field, "fileName": u.file_name,
        "contentType": u.content_type, "size": u.bytes.len(), "sha256": u.sha256,
        "saved": u.saved, "head": bounded(&String::from_utf8_lossy(&u.bytes[..u.bytes.len().min(120)]), 160),
    })
}

/// S3, D3 and F1 on the uploads; `expected` are the planted images the final reply named.
pub fn check_uploads(
    view: &ChannelView,
    planted: &[Planted],
    expected: &[&Planted],
) -> Vec<E2eFinding> {
    let mut out = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    let mut arrived: Vec<&Planted> = Vec::new();
    for u in &view.uploads {
        let hit = carried(u, planted);
        if let Some((p, how)) = hit {
            arrived.push(p);
            if !p.inside_roots {
                out.push(E2eFinding::new(
                    Rule::S3,
                    Layer::Delivered,
                    format!(
                        "the channel received {} (outside the media roots; matched by {how})",
                        bounded(&p.named, 200)
                    ),
                    json!({"file": p.named, "planted": p.planted, "field": p.field,
                           "upload": upload_evidence(u)}),
                ));
            }
        }
        if seen.contains(&u.sha256.as_str()) {
            out.push(E2eFinding::new(
                Rule::D3,
                Layer::Delivered,
                "the same file was uploaded to the channel twice",
                upload_evidence(u),
            ));
        }
        seen.push(&u.sha256);
    }
    for p in expected {
        if !arrived.iter().any(|a| a.named == p.named) {
            out.push(E2eFinding::new(
                Rule::F1,
                Layer::Delivered,
                format!(
                    "the reply named {}, an image inside the media roots, and the channel never received it",
                    bounded(&p.named, 200)
                ),
                json!({"file": p.named, "uploads": view.uploads.len(), "messages": view.messages}),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rendering_follows_the_parse_mode() {
        assert_eq!(
            rendered("<b>a</b> &lt;x&gt; &#77;EDIA: &amp;", Some("HTML")),
            "a <x> MEDIA: &"
        );
        assert_eq!(
            rendered("&#x4d;EDIA:/x &bogus; <i", Some("HTML")),
            "MEDIA:/x &bogus; <i"
        );
        assert_eq!(
            rendered("MEDIA\\:/x \\_a", Some("MarkdownV2")),
            "MEDIA:/x _a"
        );
        assert_eq!(rendered("&#77;EDIA:", None), "&#77;EDIA:");
    }

    fn planted(named: &str, bytes: &[u8], marker: Option<&str>, inside: bool) -> Planted {
        Planted {
            named: named.into(),
            file: PathBuf::from(named),
            sha256: sha256_hex(bytes),
            size: bytes.len() as u64,
            marker: marker.map(str::to_string),
            inside_roots: inside,
            planted: true,
            from_reply: true,
            field: None,
        }
    }

    fn up(bytes: &[u8], name: &str) -> Upload {
        Upload {
            method: "sendPhoto".into(),
            field: "photo".into(),
            file_name: Some(name.into()),
            content_type: None,
            sha256: sha256_hex(bytes),
            bytes: bytes.to_vec(),
            saved: None,
        }
    }

    fn rules(f: &[E2eFinding]) -> Vec<String> {
        f.iter()
            .map(|f| format!("{}-{}", f.rule, f.layer))
            .collect()
    }

    #[test]
    fn uploads_are_judged_by_bytes_marker_and_name() {
        let canary = planted("/tmp/secret.png", b"PNG..canary-1", Some("canary-1"), false);
        let chart = planted("out/chart.png", b"PNG..canary-2", Some("canary-2"), true);
        let all = [canary.clone(), chart.clone()];
        let view = |uploads: Vec<Upload>| ChannelView {
            uploads,
            ..ChannelView::default()
        };
        // The canary's bytes, verbatim, re-wrapped (marker) or re-encoded (name): S3 each way.
        for u in [
            up(b"PNG..canary-1", "file.bin"),
            up(b"wrapped PNG..canary-1 more", "x.png"),
            up(b"re-encoded", "secret.png"),
        ] {
            assert_eq!(
                rules(&check_uploads(&view(vec![u]), &all, &[])),
                ["S3-delivered"]
            );
        }
        // The expected image arrives: nothing; it does not: F1; it arrives twice: D3.
        let chart_up = up(b"PNG..canary-2", "chart.png");
        assert!(check_uploads(&view(vec![chart_up.clone()]), &all, &[&chart]).is_empty());
        assert_eq!(
            rules(&check_uploads(&view(vec![]), &all, &[&chart])),
            ["F1-delivered"]
        );
        assert_eq!(
            rules(&check_uploads(
                &view(vec![chart_up.clone(), chart_up]),
                &all,
                &[&chart]
            )),
            ["D3-delivered"]
        );
        // An unrelated upload is none of these.
        assert!(check_uploads(&view(vec![up(b"other", "other.png")]), &all, &[]).is_empty());
    }

    #[test]
    fn capture_records_become_texts_targets_and_uploads() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("u1.bin"), b"bytes").unwrap();
        let records = vec![
            json!({"method": "getUpdates", "params": {"text": "MEDIA:/ignored"}}),
            json!({"method": "sendChatAction", "params": {"action": "typing"}}),
            json!({"method": "sendMessage", "params": {"text": "<b>hi</b>\n&#77;EDIA:/etc/passwd", "parse_mode": "HTML"}}),
            json!({"method": "sendPhoto", "params": {"photo": "http://169.254.169.254/x.png", "caption": "c"}}),
            json!({"method": "sendMediaGroup", "params": {"media": "[{\"type\":\"photo\",\"media\":\"attach://f\",\"caption\":\"MEDIA:x\"},{\"type\":\"photo\",\"media\":\"AgACfileid\"}]"},
                   "files": [{"field": "f", "fileName": "a.png", "path": "u1.bin"}]}),
            json!({"method": "editMessageText", "params": {"text": "edited"}}),
            json!({"method": "sendMessage", "params": {"text": "MEDIA:/refused"}, "status": 400}),
            json!({"method": "sendDocument", "params": {}, "files": [{"field": "document", "base64": "Ynl0ZXM="}]}),
        ];
        let view = channel_view(&records, dir.path());
        assert_eq!(view.messages, 5);
        assert_eq!(
            view.delivered.texts,
            ["hi\nMEDIA:/etc/passwd", "c", "MEDIA:x", "edited"]
        );
        assert_eq!(view.delivered.media, ["http://169.254.169.254/x.png"]);
        assert_eq!(view.uploads.len(), 2);
        assert_eq!(view.uploads[0].bytes, b"bytes");
        assert_eq!(view.uploads[0].sha256, sha256_hex(b"bytes"));
        assert_eq!(view.uploads[1].bytes, b"bytes", "carried as base64");
        let findings = super::super::check_delivered(&view.delivered, &[], Layer::Delivered);
        assert_eq!(rules(&findings), ["S1-delivered", "S3-delivered"]);
    }
}
