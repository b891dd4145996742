//! The loopback canary route: `GET /canary/<marker>.png` answers a small PNG that carries its
//! marker after the image's end, and the server captures every hit with its path. A case names
//! such URLs (loopback, non-https: URLs the media policy refuses) where the model may ask the
//! runtime to fetch or send media, so any fetch shows in the capture, and bytes a channel
//! receives are traced back to the URL by the marker.

use base64::Engine as _;

/// The route's path prefix.
pub const PREFIX: &str = "/canary/";

/// A 1x1 PNG.
const PNG_1X1: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGM4IScHAAK2AQU0pnWqAAAAAElFTkSuQmCC";

/// The marker a canary path names: `/canary/<marker>.png` (any extension, or none).
pub fn marker(path: &str) -> Option<&str> {
    let name = path.strip_prefix(PREFIX)?;
    let marker = name.split_once('.').map_or(name, |(m, _)| m);
    (!marker.is_empty() && !marker.contains('/')).then_some(marker)
}

/// What the route answers for `marker`: a valid PNG, then the marker after IEND (decoders
/// ignore it, byte comparison does not).
pub fn png(marker: &str) -> Vec<u8> {
    let mut bytes = base64::engine::general_purpose::STANDARD
        .decode(PNG_1X1)
        .unwrap_or_default();
    bytes.extend_from_slice(marker.as_bytes());
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_name_their_marker_and_the_png_carries_it() {
        assert_eq!(marker("/canary/nfzab12send.png"), Some("nfzab12send"));
        assert_eq!(marker("/canary/nfzab12send"), Some("nfzab12send"));
        assert_eq!(marker("/canary/a/b.png"), None);
        assert_eq!(marker("/canary/"), None);
        assert_eq!(marker("/v1/messages"), None);
        let png = png("nfzab12send");
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n") && png.ends_with(b"nfzab12send"));
    }
}
