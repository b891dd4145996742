//! The `CallToolResult` documents the speed figures are measured on: `benches/reference.rs`
//! times the reference and a `serde_json::Value` round trip on them, and `cargo xtask bench
//! --anchor` writes the same bytes to files (`normfuzz bench-anchor`) for a real runtime's
//! coercion. One definition, so every column of the table reads the same documents.

use serde_json::json;

/// One benchmark document: a stable name (criterion id, file stem, table row) and its JSON.
pub struct BenchDoc {
    pub name: String,
    pub json: String,
}

/// Prose with a colon every ~50 bytes, quotes, dashes and accented words, no directive.
pub const PROSE: &str = "Note: the build finished in 42s. See https://example.com/docs for details; \
    the “quoted” part — with dashes — stays as is. Résumé: nothing to report at 10:45.\n";

/// Prose that mentions `MEDIA:` mid-line: every mention reaches the backward check.
const MENTIONS: &str = "Attachments use the MEDIA: prefix, e.g. reply with MEDIA:/tmp/a.png at \
    the end; the gateway strips it. Status: ok at 10:45.\n";

/// Prose followed by a real line-start directive, which the reference neutralizes.
const DIRECTIVES: &str = "Rendered the page at 10:45; see the screenshot.\n  MEDIA:/tmp/shot.png\n";

/// Every document, in table order: text of each kind at 10 KB and 1 MB, one PNG screenshot from
/// 10 KB to the 5 MB limit, and 1 MB of many small blocks.
pub fn coercion_docs() -> Vec<BenchDoc> {
    let mut docs = Vec::new();
    for (kind, line) in [
        ("text_prose", PROSE),
        ("text_mentions", MENTIONS),
        ("text_directives", DIRECTIVES),
    ] {
        for (label, size) in [("10KB", 10_000), ("1MB", 1_000_000)] {
            docs.push(BenchDoc {
                name: format!("{kind}_{label}"),
                json: text_blocks(&line.repeat(12), size),
            });
        }
    }
    for (label, size) in [
        ("10KB", 10_000),
        ("100KB", 100_000),
        ("1MB", 1_000_000),
        ("5MB", 5_000_000),
    ] {
        docs.push(BenchDoc {
            name: format!("image_png_{label}"),
            json: png_screenshot(size),
        });
    }
    docs.push(BenchDoc {
        name: "small_blocks_1MB".to_string(),
        json: small_blocks(1_000_000),
    });
    docs
}

/// Text blocks of `text` filling about `size` bytes.
fn text_blocks(text: &str, size: usize) -> String {
    let block = json!({"type": "text", "text": text});
    let per_block = block.to_string().len() + 1;
    let blocks = vec![block; (size / per_block).max(1)];
    json!({"content": blocks, "isError": false}).to_string()
}

/// One PNG (header first, like a screenshot) whose base64 fills the document, up to the
/// 5,242,880-character limit, after a short caption block.
fn png_screenshot(size: usize) -> String {
    let padding = (size.min(5_242_000) * 3 / 4).saturating_sub(200);
    let png = super::sample_images::png_with_padding(padding);
    let data = base64_simd::STANDARD.encode_to_string(&png);
    json!({"content": [
        {"type": "text", "text": "screenshot"},
        {"type": "image", "data": data, "mimeType": "image/png"},
    ]})
    .to_string()
}

/// Short one-line text blocks (a listing's rows), about 40 bytes each.
fn small_blocks(size: usize) -> String {
    let mut blocks = Vec::new();
    let mut len = 0;
    while len < size {
        let block = json!({"type": "text", "text": format!("row {}: ok", blocks.len())});
        len += block.to_string().len() + 1;
        blocks.push(block);
    }
    json!({"content": blocks, "isError": false}).to_string()
}
