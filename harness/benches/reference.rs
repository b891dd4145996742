//! Reference normalizer speed, as ratios within one run:
//! - coercion (parse, coerce, serialize) against a `serde_json::Value` round trip of the same
//!   bytes, on the documents of `normfuzz::generate::bench_docs` (text of three kinds, PNG
//!   screenshots from 10 KB to 5 MB, many small blocks);
//! - the neutralizer against a `memchr::memmem` scan for `MEDIA:` over the same text;
//! - the streaming neutralizer (4 KiB byte chunks) against the whole-text one.
//!
//! `cargo xtask bench` runs this and prints the ratios; with `--anchor openclaw` it also times
//! openclaw's coercion on the same documents.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use normfuzz::generate::bench_docs::{PROSE, coercion_docs};

fn coercion(c: &mut Criterion) {
    let mut group = c.benchmark_group("coerce");
    group.sample_size(20);
    for doc in coercion_docs() {
        let (name, doc) = (doc.name, doc.json);
        assert!(normfuzz::reference::coerce::coerce_json(&doc).is_ok());
        group.throughput(Throughput::Bytes(doc.len() as u64));
        group.bench_with_input(BenchmarkId::new("reference", &name), &doc, |b, doc| {
            b.iter(|| {
                normfuzz::reference::coerce::coerce_json(black_box(doc))
                    .expect("valid")
                    .to_json_bytes()
            })
        });
        group.bench_with_input(
            BenchmarkId::new("serde_json_roundtrip", &name),
            &doc,
            |b, doc| {
                b.iter(|| {
                    let value: serde_json::Value =
                        serde_json::from_str(black_box(doc)).expect("valid");
                    serde_json::to_vec(&value).expect("serializable")
                })
            },
        );
    }
    group.finish();
}

fn neutralizer(c: &mut Criterion) {
    let clean = PROSE.repeat(1_000_000 / PROSE.len());
    let dirty = format!("{clean}  MEDIA:/tmp/secret.png\n").repeat(2);
    let mut group = c.benchmark_group("neutralize");
    for (name, text) in [("clean_1MB", &clean), ("with_directives_2MB", &dirty)] {
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_with_input(BenchmarkId::new("reference", name), text, |b, t| {
            b.iter(|| normfuzz::reference::neutralize::neutralize(black_box(t)).len())
        });
        // Two baselines: the literal `MEDIA:` search a naive (case-sensitive, ASCII-only) defanger
        // would run, and a scan for the colon every directive ends with.
        group.bench_with_input(BenchmarkId::new("memmem_scan", name), text, |b, t| {
            b.iter(|| memchr::memmem::find_iter(black_box(t.as_bytes()), b"MEDIA:").count())
        });
        group.bench_with_input(BenchmarkId::new("memchr_colon_scan", name), text, |b, t| {
            b.iter(|| memchr::memchr_iter(b':', black_box(t.as_bytes())).count())
        });
    }
    group.finish();
}

/// The streaming neutralizer fed 4 KiB byte chunks (splitting characters), next to the
/// whole-text one on the same text.
fn stream_neutralizer(c: &mut Criterion) {
    let clean = PROSE.repeat(1_000_000 / PROSE.len());
    let dirty = format!("{clean}  MEDIA:/tmp/secret.png\n").repeat(2);
    let mut group = c.benchmark_group("neutralize_stream");
    for (name, text) in [("clean_1MB", &clean), ("with_directives_2MB", &dirty)] {
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_with_input(
            BenchmarkId::new("stream_4KiB_chunks", name),
            text,
            |b, t| {
                b.iter(|| {
                    let mut stream = normfuzz::reference::stream::StreamNeutralizer::new();
                    let mut out = String::with_capacity(t.len() + 64);
                    for chunk in black_box(t.as_bytes()).chunks(4096) {
                        stream.push(chunk, &mut out);
                    }
                    stream.finish(&mut out);
                    out.len()
                })
            },
        );
        group.bench_with_input(BenchmarkId::new("whole_text", name), text, |b, t| {
            b.iter(|| normfuzz::reference::neutralize::neutralize(black_box(t)).len())
        });
    }
    group.finish();
}

criterion_group!(benches, coercion, neutralizer, stream_neutralizer);
criterion_main!(benches);
