//! Real, tiny images made in process, for tests and generators: one 1x1 image per allowed
//! format (encoded once with Pillow and embedded), plus header-only variants that claim any size.

use crate::reference::image::ImageFormat;

const PNG_1X1: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGM4IScHAAK2AQU0pnWqAAAAAElFTkSuQmCC";
/// A 1x1 GIF: a real image, but not one every provider accepts (Gemini refuses GIF).
pub const GIF_1X1: &str = "R0lGODdhAQABAIEAAMgeHgAAAAAAAAAAACwAAAAAAQABAAAIBAABBAQAOw==";
const WEBP_1X1: &str = "UklGRh4AAABXRUJQVlA4TBEAAAAvAAAAAAdQjyLXo/+BiOh/AAA=";
const JPEG_1X1: &str = "/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDABALDA4MChAODQ4SERATGCgaGBYWGDEjJR0oOjM9PDkzODdASFxOQERXRTc4UG1RV19iZ2hnPk1xeXBkeFxlZ2P/2wBDARESEhgVGC8aGi9jQjhCY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2P/wAARCAABAAEDASIAAhEBAxEB/8QAHwAAAQUBAQEBAQEAAAAAAAAAAAECAwQFBgcICQoL/8QAtRAAAgEDAwIEAwUFBAQAAAF9AQIDAAQRBRIhMUEGE1FhByJxFDKBkaEII0KxwRVS0fAkM2JyggkKFhcYGRolJicoKSo0NTY3ODk6Q0RFRkdISUpTVFVWV1hZWmNkZWZnaGlqc3R1dnd4eXqDhIWGh4iJipKTlJWWl5iZmqKjpKWmp6ipqrKztLW2t7i5usLDxMXGx8jJytLT1NXW19jZ2uHi4+Tl5ufo6erx8vP09fb3+Pn6/8QAHwEAAwEBAQEBAQEBAQAAAAAAAAECAwQFBgcICQoL/8QAtREAAgECBAQDBAcFBAQAAQJ3AAECAxEEBSExBhJBUQdhcRMiMoEIFEKRobHBCSMzUvAVYnLRChYkNOEl8RcYGRomJygpKjU2Nzg5OkNERUZHSElKU1RVVldYWVpjZGVmZ2hpanN0dXZ3eHl6goOEhYaHiImKkpOUlZaXmJmaoqOkpaanqKmqsrO0tba3uLm6wsPExcbHyMnK0tPU1dbX2Nna4uPk5ebn6Onq8vP09fb3+Pn6/9oADAMBAAIRAxEAPwDHooorhPqD/9k=";

/// The base64 of a complete 1x1 image of `format`.
pub fn tiny_base64(format: ImageFormat) -> &'static str {
    match format {
        ImageFormat::Png => PNG_1X1,
        ImageFormat::Jpeg => JPEG_1X1,
        ImageFormat::Webp => WEBP_1X1,
    }
}

/// The bytes of a complete 1x1 image of `format`.
pub fn tiny(format: ImageFormat) -> Vec<u8> {
    base64_simd::STANDARD
        .decode_to_vec(tiny_base64(format))
        .expect("embedded sample images are valid base64")
}

/// A PNG signature and IHDR (with a correct CRC) claiming `width` x `height`, and no pixels:
/// enough for any header reader, far too little for a decoder.
pub fn png_header(width: u32, height: u32) -> Vec<u8> {
    let mut ihdr = b"IHDR".to_vec();
    ihdr.extend_from_slice(&width.to_be_bytes());
    ihdr.extend_from_slice(&height.to_be_bytes());
    ihdr.extend_from_slice(&[8, 6, 0, 0, 0]); // 8-bit RGBA, no interlace
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    png.extend_from_slice(&13u32.to_be_bytes());
    png.extend_from_slice(&ihdr);
    png.extend_from_slice(&crc32fast::hash(&ihdr).to_be_bytes());
    png
}

/// A complete `size` x `size` PNG of one RGB colour (8-bit, no filter, deflate "stored"
/// blocks): a real image whose bytes differ by colour, so the e2e fallback cases give each
/// image source (the user's, a local path, each tool run) its own and can tell where one came
/// from. At most 64 x 64, so the pixel data fits one stored block.
pub fn solid_png(size: u8, rgb: [u8; 3]) -> Vec<u8> {
    let side = usize::from(size.clamp(1, 64));
    // Each scanline: filter type 0 (none), then the pixels.
    let row: Vec<u8> = std::iter::once(0)
        .chain(rgb.iter().copied().cycle().take(3 * side))
        .collect();
    let raw = row.repeat(side);
    let len = u16::try_from(raw.len()).unwrap_or(u16::MAX);
    // zlib header (deflate, 32 KiB window, no dictionary), one final stored block, Adler-32.
    let mut zlib = vec![0x78, 0x01, 0x01];
    zlib.extend_from_slice(&len.to_le_bytes());
    zlib.extend_from_slice(&(!len).to_le_bytes());
    zlib.extend_from_slice(&raw);
    let (mut a, mut b) = (1u32, 0u32);
    for byte in &raw {
        a = (a + u32::from(*byte)) % 65_521;
        b = (b + a) % 65_521;
    }
    zlib.extend_from_slice(&(b << 16 | a).to_be_bytes());
    let side = u32::try_from(side).unwrap_or(1);
    let mut ihdr = side.to_be_bytes().to_vec();
    ihdr.extend_from_slice(&side.to_be_bytes());
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]); // 8-bit RGB, no interlace
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    for (kind, data) in [(&b"IHDR"[..], &ihdr[..]), (b"IDAT", &zlib), (b"IEND", &[])] {
        let mut chunk = kind.to_vec();
        chunk.extend_from_slice(data);
        png.extend_from_slice(&u32::try_from(data.len()).unwrap_or(0).to_be_bytes());
        png.extend_from_slice(&chunk);
        png.extend_from_slice(&crc32fast::hash(&chunk).to_be_bytes());
    }
    png
}

/// The 1x1 PNG with a private ancillary chunk of `padding` bytes after its header, as a large
/// screenshot has its pixel data after the header.
pub fn png_with_padding(padding: usize) -> Vec<u8> {
    let png = tiny(ImageFormat::Png);
    // Signature (8) and IHDR (4 length + 4 type + 13 data + 4 CRC) come first.
    let (head, rest) = png.split_at(33);
    let mut chunk = b"npAd".to_vec();
    chunk.resize(4 + padding, b'.');
    let mut out = head.to_vec();
    out.extend_from_slice(&u32::try_from(padding).unwrap_or(u32::MAX).to_be_bytes());
    out.extend_from_slice(&chunk);
    out.extend_from_slice(&crc32fast::hash(&chunk).to_be_bytes());
    out.extend_from_slice(rest);
    out
}

/// The 1x1 JPEG with `padding` bytes of comment segments between SOI and the frame header,
/// as large EXIF or ICC segments do in camera output.
pub fn jpeg_with_padding(padding: usize) -> Vec<u8> {
    let jpeg = tiny(ImageFormat::Jpeg);
    let mut out = jpeg[..2].to_vec();
    let mut left = padding;
    while left > 0 {
        left -= push_comment(&mut out, left);
    }
    out.extend_from_slice(&jpeg[2..]);
    out
}

/// A JPEG of SOI, a frame header claiming `width` x `height` (baseline, or progressive when
/// `progressive`) and EOI, and no pixels.
pub fn jpeg_header(width: u16, height: u16, progressive: bool) -> Vec<u8> {
    let mut jpeg = vec![
        0xFF,
        0xD8,
        0xFF,
        if progressive { 0xC2 } else { 0xC0 },
        0x00,
        0x11,
        8,
    ];
    jpeg.extend_from_slice(&height.to_be_bytes());
    jpeg.extend_from_slice(&width.to_be_bytes());
    // Three components: id, sampling factors, quantization table.
    jpeg.extend_from_slice(&[3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1]);
    jpeg.extend_from_slice(&[0xFF, 0xD9]);
    jpeg
}

/// How a WebP file starts: lossy, lossless or extended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WebpKind {
    Lossy,
    Lossless,
    Extended,
}

impl WebpKind {
    pub const ALL: [WebpKind; 3] = [Self::Lossy, Self::Lossless, Self::Extended];
}

/// A RIFF/WebP container whose first chunk claims `width` x `height` (at most 16383 for lossy,
/// 16384 for lossless), and no pixels.
pub fn webp_header(kind: WebpKind, width: u32, height: u32) -> Vec<u8> {
    let (fourcc, payload): (&[u8; 4], Vec<u8>) = match kind {
        WebpKind::Lossy => {
            // Frame tag (key frame, version 0, shown, partition size 0), start code, 14-bit
            // width and height with no scaling.
            let mut p = vec![0x10, 0x00, 0x00, 0x9D, 0x01, 0x2A];
            p.extend_from_slice(&(width as u16 & 0x3FFF).to_le_bytes());
            p.extend_from_slice(&(height as u16 & 0x3FFF).to_le_bytes());
            (b"VP8 ", p)
        }
        WebpKind::Lossless => {
            let bits =
                (width.saturating_sub(1) & 0x3FFF) | (height.saturating_sub(1) & 0x3FFF) << 14;
            let mut p = vec![0x2F];
            p.extend_from_slice(&bits.to_le_bytes());
            (b"VP8L", p)
        }
        WebpKind::Extended => {
            let mut p = vec![0; 4];
            p.extend_from_slice(&width.saturating_sub(1).to_le_bytes()[..3]);
            p.extend_from_slice(&height.saturating_sub(1).to_le_bytes()[..3]);
            (b"VP8X", p)
        }
    };
    let mut chunk = fourcc.to_vec();
    chunk.extend_from_slice(&u32::try_from(payload.len()).unwrap_or(0).to_le_bytes());
    chunk.extend_from_slice(&payload);
    if payload.len() % 2 == 1 {
        chunk.push(0);
    }
    let mut webp = b"RIFF".to_vec();
    webp.extend_from_slice(&u32::try_from(4 + chunk.len()).unwrap_or(0).to_le_bytes());
    webp.extend_from_slice(b"WEBP");
    webp.extend_from_slice(&chunk);
    webp
}

/// Appends a JPEG comment segment holding `min(left, 65,533)` filler bytes (its marker and
/// length take 4 more); returns the filler length.
fn push_comment(out: &mut Vec<u8>, left: usize) -> usize {
    let chunk = left.min(65_533);
    out.extend_from_slice(&[0xFF, 0xFE]);
    out.extend_from_slice(&u16::try_from(chunk + 2).unwrap_or(u16::MAX).to_be_bytes());
    out.resize(out.len() + chunk, b'.');
    chunk
}

/// A real 1x1 PNG or JPEG padded so that its base64 is exactly `base64_len` characters (a
/// multiple of 4): a screenshot-sized image, judged from its header.
pub fn padded_base64(format: ImageFormat, base64_len: usize) -> String {
    let bytes = base64_len / 4 * 3;
    let tiny_len = tiny(format).len();
    let image = match format {
        ImageFormat::Jpeg => {
            // Comment segments of at most 65,533 bytes after a 4-byte marker and length, as many
            // as the room needs, the last one shorter.
            let jpeg = tiny(ImageFormat::Jpeg);
            let room = bytes.saturating_sub(tiny_len);
            let segments = room.div_ceil(65_537);
            let mut left = room.saturating_sub(4 * segments);
            let mut out = jpeg[..2].to_vec();
            for _ in 0..segments {
                left -= push_comment(&mut out, left);
            }
            out.extend_from_slice(&jpeg[2..]);
            out
        }
        _ => png_with_padding(bytes.saturating_sub(tiny_len + 12)),
    };
    base64_simd::STANDARD.encode_to_string(image)
}
