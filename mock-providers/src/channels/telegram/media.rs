//! The media sending methods and what the server checks of a file: a photo's size, the media
//! type an answer names.

use super::params::Upload;
use super::refusal::{Refusal, bad};

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
pub(super) fn photo_size(bytes: &[u8]) -> Result<(u32, u32), Refusal> {
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
pub(super) fn mime_type(u: &Upload) -> String {
    match u.content_type.as_deref() {
        Some(t) if t != "application/octet-stream" => t.to_string(),
        _ => crate::image::inspect(&u.bytes)
            .map_or("application/octet-stream", |i| i.kind.media_type())
            .to_string(),
    }
}
