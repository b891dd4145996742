//! The hand-written header readers against hand-made headers.

use crate::common::*;
use mock_providers::image::{ImageInfo, ImageKind, inspect};

#[test]
fn dimensions_are_read_from_each_header_kind() {
    let cases = [
        (png(8001, 3), ImageKind::Png, (8001, 3)),
        (jpeg(300, 9000), ImageKind::Jpeg, (300, 9000)),
        (gif(65535, 1), ImageKind::Gif, (65535, 1)),
        (webp_vp8(16383, 2), ImageKind::Webp, (16383, 2)),
        (webp_vp8l(16384, 5), ImageKind::Webp, (16384, 5)),
        (webp_vp8x(16_777_216, 7), ImageKind::Webp, (16_777_216, 7)),
    ];
    for (bytes, kind, size) in cases {
        assert_eq!(
            inspect(&bytes),
            Some(ImageInfo {
                kind,
                size: Some(size)
            }),
            "{kind:?}"
        );
    }
}

#[test]
fn truncated_or_foreign_bytes_have_no_size_or_no_kind() {
    for bytes in [
        &png(1, 1)[..20],
        &jpeg(1, 1)[..12],
        &gif(1, 1)[..8],
        &webp_vp8(1, 1)[..24],
    ] {
        assert_eq!(inspect(bytes).and_then(|i| i.size), None);
        assert!(inspect(bytes).is_some());
    }
    // A JPEG whose scan starts before any frame header has no size.
    assert_eq!(inspect(&[0xFF, 0xD8, 0xFF, 0xDA, 0, 2]).unwrap().size, None);
    for bytes in [
        &b""[..],
        b"GIF88a",
        b"RIFF\0\0\0\0WAVE",
        b"\x89PNG",
        b"BM",
        b"<svg",
    ] {
        assert_eq!(inspect(bytes), None, "{bytes:?}");
    }
    assert_eq!(
        inspect(b"\0\0\0\x18ftypheic\0\0\0\0").map(|i| i.kind),
        Some(ImageKind::Heif)
    );
}
