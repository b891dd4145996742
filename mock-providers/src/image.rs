//! Magic-byte sniffing and header dimension reading, written by hand on purpose.
//!
//! This is the product: the mocks are the second oracle, so they must not share image code with the
//! reference normalizer in `harness` (which uses the `imagesize` crate). One bug must not hide in both.
//! Only headers are read; nothing is fully decoded, so a truncated body after a valid header is accepted
//! (documented limit: real APIs decode the whole image).

/// An image container format recognized from its leading bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageKind {
    Png,
    Jpeg,
    Gif,
    Webp,
    /// HEIC/HEIF (ISO-BMFF `ftyp` with a HEIF brand); only Gemini accepts it.
    Heif,
}

impl ImageKind {
    /// The media type a provider names this format with.
    pub fn media_type(self) -> &'static str {
        match self {
            ImageKind::Png => "image/png",
            ImageKind::Jpeg => "image/jpeg",
            ImageKind::Gif => "image/gif",
            ImageKind::Webp => "image/webp",
            ImageKind::Heif => "image/heif",
        }
    }
}

/// What the header says: the format and, when the header is complete, the pixel size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageInfo {
    pub kind: ImageKind,
    /// `None` when the header is truncated or malformed (a real decoder would fail).
    pub size: Option<(u32, u32)>,
}

/// Recognizes the format from the magic number and reads the dimensions from the header.
pub fn inspect(bytes: &[u8]) -> Option<ImageInfo> {
    let kind = sniff(bytes)?;
    let size = match kind {
        ImageKind::Png => png_size(bytes),
        ImageKind::Jpeg => jpeg_size(bytes),
        ImageKind::Gif => gif_size(bytes),
        ImageKind::Webp => webp_size(bytes),
        // No dimension rule applies to HEIF (Gemini only), so its boxes are not walked.
        ImageKind::Heif => None,
    };
    Some(ImageInfo { kind, size })
}

fn sniff(b: &[u8]) -> Option<ImageKind> {
    const HEIF_BRANDS: [&[u8; 4]; 9] = [
        b"heic", b"heix", b"hevc", b"hevx", b"heim", b"heis", b"mif1", b"msf1", b"heif",
    ];
    if b.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some(ImageKind::Png)
    } else if b.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some(ImageKind::Jpeg)
    } else if b.starts_with(b"GIF87a") || b.starts_with(b"GIF89a") {
        Some(ImageKind::Gif)
    } else if b.starts_with(b"RIFF") && b.get(8..12) == Some(b"WEBP") {
        Some(ImageKind::Webp)
    } else if b.get(4..8) == Some(b"ftyp")
        && b.get(8..12)
            .is_some_and(|brand| HEIF_BRANDS.iter().any(|h| &h[..] == brand))
    {
        Some(ImageKind::Heif)
    } else {
        None
    }
}

fn be16(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at + 2)?;
    Some(u32::from(s[0]) << 8 | u32::from(s[1]))
}

fn le16(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at + 2)?;
    Some(u32::from(s[1]) << 8 | u32::from(s[0]))
}

fn le24(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at + 3)?;
    Some(u32::from(s[2]) << 16 | u32::from(s[1]) << 8 | u32::from(s[0]))
}

fn be32(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at + 4)?;
    Some(u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
}

/// PNG: the first chunk must be IHDR (length 13); width and height are big-endian u32.
fn png_size(b: &[u8]) -> Option<(u32, u32)> {
    if be32(b, 8)? != 13 || b.get(12..16)? != b"IHDR" {
        return None;
    }
    Some((be32(b, 16)?, be32(b, 20)?))
}

/// GIF: logical screen width and height, little-endian u16 after the 6-byte signature.
fn gif_size(b: &[u8]) -> Option<(u32, u32)> {
    Some((le16(b, 6)?, le16(b, 8)?))
}

/// JPEG: walk the marker segments until a start-of-frame (SOF0..SOF15 except DHT, JPG, DAC).
fn jpeg_size(b: &[u8]) -> Option<(u32, u32)> {
    let mut at = 2;
    loop {
        if *b.get(at)? != 0xFF {
            return None;
        }
        // Any number of 0xFF fill bytes may precede a marker code.
        while *b.get(at)? == 0xFF {
            at += 1;
        }
        let marker = *b.get(at)?;
        at += 1;
        match marker {
            // Standalone markers carry no length.
            0x01 | 0xD0..=0xD7 => continue,
            // End of image or start of scan before any frame header: no size.
            0xD9 | 0xDA => return None,
            _ => {}
        }
        let len = be16(b, at)? as usize;
        if len < 2 {
            return None;
        }
        if matches!(marker, 0xC0..=0xCF) && !matches!(marker, 0xC4 | 0xC8 | 0xCC) {
            // Segment: length(2) precision(1) height(2) width(2).
            return Some((be16(b, at + 5)?, be16(b, at + 3)?));
        }
        at += len;
    }
}

/// WebP: RIFF container; the first chunk is VP8 (lossy), VP8L (lossless) or VP8X (extended).
fn webp_size(b: &[u8]) -> Option<(u32, u32)> {
    match b.get(12..16)? {
        b"VP8 " => {
            // Frame tag (3 bytes) then start code 9D 01 2A, then 14-bit width and height.
            if b.get(23..26)? != [0x9D, 0x01, 0x2A] {
                return None;
            }
            Some((le16(b, 26)? & 0x3FFF, le16(b, 28)? & 0x3FFF))
        }
        b"VP8L" => {
            if *b.get(20)? != 0x2F {
                return None;
            }
            let bits = u32::from_le_bytes(b.get(21..25)?.try_into().ok()?);
            Some(((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1))
        }
        b"VP8X" => Some((le24(b, 24)? + 1, le24(b, 27)? + 1)),
        _ => None,
    }
}
