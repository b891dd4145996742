//! The media sending methods (`send{Photo,Document,…}`, `sendMediaGroup`) and what the server
//! checks of a file: where it comes from, a photo's size, the media type an answer names.

use serde_json::{Value, json};

use super::params::{Params, Upload};
use super::refusal::{Refusal, bad, strip};
use super::text::caption;
use super::{Channel, StoredFile, now};

/// A media sending method: its file parameter, the noun of its "there is no … in the request"
/// refusal, whether its object has a duration, and whether an album may hold it.
pub(super) struct MediaKind {
    pub(super) method: &'static str,
    pub(super) field: &'static str,
    pub(super) noun: &'static str,
    pub(super) timed: bool,
    pub(super) in_album: bool,
}

pub(super) const MEDIA_KINDS: [MediaKind; 7] = [
    MediaKind {
        method: "sendPhoto",
        field: "photo",
        noun: "photo",
        timed: false,
        in_album: true,
    },
    MediaKind {
        method: "sendDocument",
        field: "document",
        noun: "document",
        timed: false,
        in_album: true,
    },
    MediaKind {
        method: "sendAudio",
        field: "audio",
        noun: "audio",
        timed: true,
        in_album: true,
    },
    MediaKind {
        method: "sendVoice",
        field: "voice",
        noun: "voice",
        timed: true,
        in_album: false,
    },
    MediaKind {
        method: "sendVideo",
        field: "video",
        noun: "video",
        timed: true,
        in_album: true,
    },
    MediaKind {
        method: "sendAnimation",
        field: "animation",
        noun: "animation",
        timed: true,
        in_album: false,
    },
    MediaKind {
        method: "sendVideoNote",
        field: "video_note",
        noun: "video note",
        timed: true,
        in_album: false,
    },
];

/// A photo's pixel size, or the server's refusal: not an image it reads, or dimensions past
/// sendPhoto's documented bounds (sum at most 10000, ratio at most 20).
fn photo_size(bytes: &[u8]) -> Result<(u32, u32), Refusal> {
    use crate::image::{ImageKind, inspect};
    let info = inspect(bytes)
        .filter(|i| !matches!(i.kind, ImageKind::Heif))
        .and_then(|i| i.size)
        .ok_or_else(|| bad("IMAGE_PROCESS_FAILED"))?;
    let (w, h) = info;
    let (small, large) = (w.min(h).max(1), w.max(h));
    if u64::from(w) + u64::from(h) > 10_000 || large / small > 20 {
        return Err(bad("PHOTO_INVALID_DIMENSIONS"));
    }
    Ok(info)
}

/// The media type the answer names: the part's own unless it is grammY's generic one, then the
/// image type the bytes show.
fn mime_type(u: &Upload) -> String {
    match u.content_type.as_deref() {
        Some(t) if t != "application/octet-stream" => t.to_string(),
        _ => crate::image::inspect(&u.bytes)
            .map_or("application/octet-stream", |i| i.kind.media_type())
            .to_string(),
    }
}

impl Channel {
    /// The file a parameter names (its value, or the part of the same name).
    fn input_file(&self, p: &Params, field: &str, value: &str) -> Option<Source> {
        let part = match value.strip_prefix("attach://") {
            Some(name) => name,
            None if !value.is_empty() => {
                return Some(
                    if value.starts_with("http://") || value.starts_with("https://") {
                        Source::Url
                    } else {
                        Source::FileId(value.to_string())
                    },
                );
            }
            None => field,
        };
        p.upload(part).map(Source::Upload)
    }

    /// Checks a file (TDLib: an empty file; a photo that is no image or has bad dimensions) and
    /// registers it: the media object of the answer.
    fn media_object(
        &self,
        kind: &MediaKind,
        p: &Params,
        source: &Source,
    ) -> Result<Value, Refusal> {
        let mut state = self.state();
        let n = state.files.len() + 1;
        let file_id = format!("mock-{}-{n}", kind.field);
        let (stored, upload) = match source {
            Source::FileId(id) => {
                let file = state
                    .files
                    .get(id)
                    .ok_or_else(|| bad("wrong file identifier/HTTP URL specified"))?;
                (file.clone(), None)
            }
            Source::Url => (
                StoredFile {
                    unique_id: format!("U{n}"),
                    size: None,
                    path: format!("{}s/url_{n}", kind.field),
                    bytes: None,
                },
                None,
            ),
            Source::Upload(i) => {
                let u = &p.uploads[*i];
                if u.bytes.is_empty() {
                    return Err(bad("file must be non-empty"));
                }
                (
                    StoredFile {
                        unique_id: format!("U{n}"),
                        size: Some(u.bytes.len()),
                        path: format!("{}s/file_{n}", kind.field),
                        bytes: Some(u.bytes.clone()),
                    },
                    Some(u),
                )
            }
        };
        let mut object = json!({
            "file_id": file_id,
            "file_unique_id": stored.unique_id,
        });
        if let Some(size) = stored.size {
            object["file_size"] = json!(size);
        }
        if kind.field == "photo" {
            let (width, height) = match upload {
                Some(u) => photo_size(&u.bytes)?,
                // A URL's image is never fetched: its size is unknown.
                None => (0, 0),
            };
            object["width"] = json!(width);
            object["height"] = json!(height);
            state.files.insert(file_id, stored);
            return Ok(json!([object]));
        }
        if let Some(u) = upload {
            object["file_name"] = json!(u.file_name);
            object["mime_type"] = json!(mime_type(u));
        }
        if kind.timed {
            object["duration"] = json!(0);
        }
        state.files.insert(file_id, stored);
        Ok(object)
    }

    pub(super) fn send_media(&self, kind: &MediaKind, p: &Params) -> Result<Value, Refusal> {
        let value = p.str(kind.field);
        let source = self
            .input_file(p, kind.field, &value)
            .ok_or_else(|| bad(format!("there is no {} in the request", kind.noun)))?;
        let raw_caption = p.get("caption");
        let caption = caption(raw_caption, &p.str("parse_mode"))?;
        self.check_chat(p)?;
        let object = self.media_object(kind, p, &source)?;
        let mut m = self.new_message();
        m[kind.field] = object;
        if let Some(c) = &caption {
            m["caption"] = json!(c);
        }
        Ok(self.sent(m, None, caption))
    }

    pub(super) fn send_media_group(&self, p: &Params) -> Result<Value, Refusal> {
        let media = p.get("media").unwrap_or_default();
        if media.is_empty() {
            return Err(bad("parameter \"media\" is required"));
        }
        let items: Value =
            serde_json::from_str(&media).map_err(|_| bad("can't parse media JSON object"))?;
        let Value::Array(items) = items else {
            return Err(bad("expected an Array of InputMedia"));
        };
        let mut parsed = Vec::new();
        for item in &items {
            let Value::Object(o) = item else {
                return Err(bad("can't parse InputMedia: expected an Object"));
            };
            let s = |k: &str| o.get(k).and_then(Value::as_str).map(str::to_string);
            let caption = caption(s("caption"), &s("parse_mode").unwrap_or_default())
                .map_err(|Refusal(_, d)| bad(format!("can't parse InputMedia: {}", strip(&d))))?;
            let kind_name = s("type").ok_or_else(|| {
                bad("can't parse InputMedia: field \"type\" must be of type String")
            })?;
            let kind = MEDIA_KINDS
                .iter()
                .find(|k| k.field == kind_name && k.in_album)
                .ok_or_else(|| {
                    let why = if kind_name == "animation" {
                        format!("type \"{kind_name}\" can't be used in sendMediaGroup")
                    } else {
                        format!("type \"{kind_name}\" is unsupported")
                    };
                    bad(format!("can't parse InputMedia: {why}"))
                })?;
            let source = self
                .input_file(p, "", &s("media").unwrap_or_default())
                .ok_or_else(|| bad("can't parse InputMedia: media not found"))?;
            parsed.push((kind, source, caption));
        }
        if parsed.len() > 10 {
            return Err(bad("too many messages to send as an album"));
        }
        if parsed.is_empty() {
            return Err(bad("there are no messages to send"));
        }
        self.check_chat(p)?;
        let group = format!("{}", 13_000_000_000_000_000_i64 + now());
        let mut messages = Vec::new();
        for (kind, source, caption) in &parsed {
            let object = self.media_object(kind, p, source)?;
            let mut m = self.new_message();
            m[kind.field] = object;
            m["media_group_id"] = json!(group);
            if let Some(c) = caption {
                m["caption"] = json!(c);
            }
            messages.push(self.sent(m, None, caption.clone()));
        }
        Ok(Value::Array(messages))
    }
}

/// Where a file comes from.
enum Source {
    Upload(usize),
    Url,
    FileId(String),
}
