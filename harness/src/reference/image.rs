//! Image validity for rule S2: what an image block must be before any provider sees it.
//!
//! Strict by design: the strictest real provider (Anthropic) decides each limit, so an image that
//! passes here passes everywhere. Only the header is read (via `imagesize`); pixels are never
//! decoded, and only a prefix of the base64 is decoded unless the header lies further in.

use imagesize::ImageType;

/// Largest accepted base64 string, in characters (Anthropic's 5 MB limit is on the base64).
pub const MAX_BASE64_LEN: usize = 5_242_880;
/// Largest accepted width or height in pixels.
pub const MAX_DIMENSION: usize = 8000;
/// Base64 characters decoded for each header read, in turn, before the whole payload; multiples
/// of 4. PNG and WebP headers sit in the first 30 bytes (a 10 KB screenshot no longer pays for
/// decoding 3 KB it does not read); a JPEG frame header follows its metadata segments, usually
/// within the first 3 KB, and large ones push it further, when the whole payload is decoded.
const PREFIX_CHARS: [usize; 2] = [64, 4 * 1024];

/// An image format every target provider accepts.
///
/// GIF is deliberately absent although spec rule S2 lists it: Gemini refuses it ("MIME type must
/// be image/png, image/jpeg, image/webp, image/heic, or image/heif", docs/research/providers.md §4.2), so a GIF
/// passed through would poison a Gemini session. A GIF becomes a C2 placeholder instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageFormat {
    Png,
    Jpeg,
    Webp,
}

impl ImageFormat {
    pub const ALL: [ImageFormat; 3] = [Self::Png, Self::Jpeg, Self::Webp];

    pub fn mime(self) -> &'static str {
        match self {
            Self::Png => "image/png",
            Self::Jpeg => "image/jpeg",
            Self::Webp => "image/webp",
        }
    }

    /// Exact, case-sensitive: `image/jpg` and `IMAGE/PNG` are rejected by real APIs.
    pub fn from_mime(mime: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.mime() == mime)
    }

    fn from_sniffed(t: ImageType) -> Option<Self> {
        match t {
            ImageType::Png => Some(Self::Png),
            ImageType::Jpeg => Some(Self::Jpeg),
            ImageType::Webp => Some(Self::Webp),
            _ => None,
        }
    }
}

/// Why an image block is not valid; `as_str` is the reason shown in the C2 placeholder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageReject {
    MissingData,
    DataNotString,
    EmptyData,
    TooLarge,
    DataUri,
    NotBase64,
    MissingMimeType,
    UnsupportedMimeType,
    NotAnImage,
    UnreadableHeader,
    TooManyPixels,
}

impl ImageReject {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::MissingData => "missing data",
            Self::DataNotString => "data is not a string",
            Self::EmptyData => "empty data",
            Self::TooLarge => "data larger than 5242880 base64 characters",
            Self::DataUri => "data is a data: URI, not bare base64",
            Self::NotBase64 => "data is not canonical padded base64",
            Self::MissingMimeType => "missing mimeType",
            Self::UnsupportedMimeType => "unsupported mimeType",
            Self::NotAnImage => "bytes are not a PNG, JPEG or WebP image",
            Self::UnreadableHeader => "image header unreadable",
            Self::TooManyPixels => "image dimensions exceed 8000 pixels",
        }
    }
}

/// A valid image: its real format (which may correct the declared type) and dimensions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ValidImage {
    pub format: ImageFormat,
    pub width: usize,
    pub height: usize,
}

/// Checks S2 for a block's `data` and `mimeType` (already known to be strings).
///
/// The declared type must be one of the four allowed types; when the bytes are another allowed
/// type, the returned format is the real one and the caller uses its MIME type.
pub fn validate_image(data: &str, mime_type: &str) -> Result<ValidImage, ImageReject> {
    if data.is_empty() {
        return Err(ImageReject::EmptyData);
    }
    // Before any decoding, so memory stays bounded whatever arrives.
    if data.len() > MAX_BASE64_LEN {
        return Err(ImageReject::TooLarge);
    }
    if data.starts_with("data:") {
        return Err(ImageReject::DataUri);
    }
    // Non-forgiving STANDARD: alphabet, padding and zero trailing bits all checked (RFC 4648).
    base64_simd::STANDARD
        .check(data.as_bytes())
        .map_err(|_| ImageReject::NotBase64)?;
    if ImageFormat::from_mime(mime_type).is_none() {
        return Err(ImageReject::UnsupportedMimeType);
    }
    let mut read = data.len().min(PREFIX_CHARS[0]);
    let first = decode(&data[..read])?;
    let format = imagesize::image_type(&first)
        .ok()
        .and_then(ImageFormat::from_sniffed)
        .filter(|&f| has_signature(f, &first))
        .ok_or(ImageReject::NotAnImage)?;
    // A header the first read cannot hold: a longer prefix, then the whole payload.
    let mut size = imagesize::blob_size(&first);
    for chars in [PREFIX_CHARS[1], data.len()] {
        let chars = chars.min(data.len());
        if size.is_ok() || chars <= read {
            continue;
        }
        size = imagesize::blob_size(&decode(&data[..chars])?);
        read = chars;
    }
    let size = size.map_err(|_| ImageReject::UnreadableHeader)?;
    if size.width == 0 || size.height == 0 {
        return Err(ImageReject::UnreadableHeader);
    }
    if size.width > MAX_DIMENSION || size.height > MAX_DIMENSION {
        return Err(ImageReject::TooManyPixels);
    }
    Ok(ValidImage {
        format,
        width: size.width,
        height: size.height,
    })
}

/// The structure each format's specification puts before the dimensions. `imagesize` matches
/// looser prefixes (`\x89PNG` alone), and providers that decode the image refuse such bytes;
/// found by the `coerce_bytes` fuzz target against the mock providers.
fn has_signature(format: ImageFormat, b: &[u8]) -> bool {
    match format {
        // Signature, then the IHDR chunk's length (13) and type.
        ImageFormat::Png => b.starts_with(b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR"),
        ImageFormat::Jpeg => b.starts_with(&[0xFF, 0xD8, 0xFF]),
        // RIFF container, then a lossy frame (start code 9D 01 2A), a lossless one (signature
        // byte 2F) or the extended header.
        ImageFormat::Webp => {
            b.starts_with(b"RIFF")
                && b.get(8..12) == Some(b"WEBP")
                && match b.get(12..16) {
                    Some(b"VP8 ") => b.get(23..26) == Some(&[0x9D, 0x01, 0x2A]),
                    Some(b"VP8L") => b.get(20) == Some(&0x2F),
                    Some(b"VP8X") => true,
                    _ => false,
                }
        }
    }
}

fn decode(b64: &str) -> Result<Vec<u8>, ImageReject> {
    base64_simd::STANDARD
        .decode_to_vec(b64.as_bytes())
        .map_err(|_| ImageReject::NotBase64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::sample_images as fixtures;

    fn b64(bytes: &[u8]) -> String {
        base64_simd::STANDARD.encode_to_string(bytes)
    }

    #[test]
    fn tiny_images_of_each_format_pass() {
        for format in ImageFormat::ALL {
            let data = b64(&fixtures::tiny(format));
            let valid = validate_image(&data, format.mime()).expect("valid fixture");
            assert_eq!((valid.format, valid.width, valid.height), (format, 1, 1));
        }
    }

    #[test]
    fn declared_type_is_corrected_among_allowed_types() {
        let png = b64(&fixtures::tiny(ImageFormat::Png));
        assert_eq!(
            validate_image(&png, "image/jpeg").map(|v| v.format),
            Ok(ImageFormat::Png)
        );
    }

    #[test]
    fn each_rejection() {
        let png = b64(&fixtures::tiny(ImageFormat::Png));
        let jpeg = fixtures::tiny_base64(ImageFormat::Jpeg);
        let webp = fixtures::tiny_base64(ImageFormat::Webp);
        assert!(webp.ends_with('='));
        assert!(jpeg.contains('/') && jpeg.contains('+'));
        let cases: Vec<(String, &str, ImageReject)> = vec![
            (String::new(), "image/png", ImageReject::EmptyData),
            (
                "A".repeat(MAX_BASE64_LEN + 4),
                "image/png",
                ImageReject::TooLarge,
            ),
            (
                format!("data:image/png;base64,{png}"),
                "image/png",
                ImageReject::DataUri,
            ),
            (
                webp.trim_end_matches('=').to_string(),
                "image/webp",
                ImageReject::NotBase64,
            ),
            (
                format!("{}\n{}", &png[..8], &png[8..]),
                "image/png",
                ImageReject::NotBase64,
            ),
            (
                jpeg.replace('/', "_").replace('+', "-"),
                "image/jpeg",
                ImageReject::NotBase64,
            ),
            ("QR==".to_string(), "image/png", ImageReject::NotBase64), // non-zero trailing bits
            (png.clone(), "image/jpg", ImageReject::UnsupportedMimeType),
            (png.clone(), "IMAGE/PNG", ImageReject::UnsupportedMimeType),
            (
                png.clone(),
                "image/svg+xml",
                ImageReject::UnsupportedMimeType,
            ),
            (
                b64(b"%PDF-1.4 not an image"),
                "image/png",
                ImageReject::NotAnImage,
            ),
            (
                b64(&fixtures::tiny(ImageFormat::Png)[..20]),
                "image/png",
                ImageReject::UnreadableHeader,
            ),
            (
                b64(&fixtures::png_header(8001, 1)),
                "image/png",
                ImageReject::TooManyPixels,
            ),
            (
                b64(&fixtures::png_header(1, 8001)),
                "image/png",
                ImageReject::TooManyPixels,
            ),
            (
                b64(&fixtures::png_header(0, 5)),
                "image/png",
                ImageReject::UnreadableHeader,
            ),
        ];
        for (data, mime, want) in cases {
            assert_eq!(
                validate_image(&data, mime),
                Err(want),
                "{mime} {}",
                &data[..data.len().min(40)]
            );
        }
        assert!(validate_image(&b64(&fixtures::png_header(8000, 8000)), "image/png").is_ok());
    }

    #[test]
    fn large_png_is_judged_from_its_header() {
        let data = b64(&fixtures::png_with_padding(1_000_000));
        assert_eq!(
            validate_image(&data, "image/png").map(|v| (v.width, v.height)),
            Ok((1, 1))
        );
    }

    #[test]
    fn headers_are_read_from_long_payloads_at_each_prefix_length() {
        use fixtures::{WebpKind, jpeg_with_padding, png_with_padding, webp_header};
        let mut images = vec![(ImageFormat::Png, png_with_padding(20_000))];
        for kind in WebpKind::ALL {
            let mut webp = webp_header(kind, 1, 1);
            webp.resize(20_000, 0);
            images.push((ImageFormat::Webp, webp));
        }
        // The frame header in the first read, in the second one, and only in the whole.
        for padding in [0, 1_000, 10_000] {
            images.push((ImageFormat::Jpeg, jpeg_with_padding(padding)));
        }
        for (format, bytes) in images {
            let data = b64(&bytes);
            assert_eq!(
                validate_image(&data, format.mime()).map(|v| (v.format, v.width, v.height)),
                Ok((format, 1, 1)),
                "{format:?} of {} bytes",
                bytes.len()
            );
        }
    }

    #[test]
    fn jpeg_header_beyond_the_prefix_is_found() {
        let jpeg = fixtures::jpeg_with_padding(100_000);
        let data = b64(&jpeg);
        assert!(data.len() > PREFIX_CHARS[1]);
        assert_eq!(validate_image(&data, "image/jpeg").map(|v| v.width), Ok(1));
    }
}
