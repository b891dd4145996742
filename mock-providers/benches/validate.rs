//! Validated requests per second, in process (`validate` only, no HTTP).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use mock_providers::{Provider, tool_result_request, validate};
use serde_json::json;
use std::hint::black_box;

/// A 64x64 PNG header padded to ~12 KiB, like a small screenshot thumbnail.
fn png_b64() -> String {
    let mut v =
        b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR\0\0\0\x40\0\0\0\x40\x08\x06\0\0\0\0\0\0\0".to_vec();
    v.resize(12 * 1024, 0);
    STANDARD.encode(v)
}

fn bench(c: &mut Criterion) {
    let blocks = json!([
        {"type": "text", "text": "Attachment summary: quarterly report.\nMEDIA: not a directive here"},
        {"type": "image", "data": png_b64(), "mimeType": "image/png"},
        {"type": "text", "text": "end"}
    ]);
    let mut group = c.benchmark_group("validate");
    group.throughput(Throughput::Elements(1));
    for p in Provider::ALL {
        let body = tool_result_request(p, &blocks);
        assert!(validate(p, &body).is_accepted());
        group.bench_function(p.name(), |b| b.iter(|| validate(p, black_box(&body))));
    }
    let bad = tool_result_request(
        Provider::Anthropic,
        &json!([{"type": "image", "data": "%%", "mimeType": "image/png"}]),
    );
    group.bench_function("anthropic-rejected", |b| {
        b.iter(|| validate(Provider::Anthropic, black_box(&bad)))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
