//! The harness's own per-case work in a campaign batch, as ratios within one run (issue 37: the
//! harness's share of a campaign's CPU against a fast shim is its per-case cost).
//!
//! - `harness`: a whole `coerce_tool_result` campaign of [`CASES`] cases in process
//!   (`campaign::run` against `ReferenceSut`): generation, the reference (as the SUT and as the
//!   reference), every judge with the mock providers' validation of every output, the
//!   bookkeeping of the job loop. The SUT's answers are the reference's own, so the judges run
//!   their whole path on every case.
//! - `reference`: the reference alone on the same cases (drawn the way job 0 of the campaign
//!   draws them: the same strategy and seed).
//! - `json_roundtrip`: the same cases written and read back as the protocol does
//!   (`protocol::json`, depth-safe: some inputs are nested past serde_json's limit).
//!
//! Each is timed in CPU time of the whole process (getrusage, as `campaign/cpu.rs` reads the
//! harness's share), not wall time: the campaign's threads wait on each other. `cargo xtask
//! bench` prints `harness` over each of the other two: a change in the harness's per-case cost
//! shows as a ratio change, whatever the machine's load.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use normfuzz::campaign::cpu::CpuClock;
use normfuzz::campaign::{Campaign, Progress, run};
use normfuzz::protocol::{Op, json};
use normfuzz::sut::{ReferenceSut, Sut};
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::Value;

/// One job's first batch: every case is drawn, sent and judged in one batch.
const CASES: u64 = 128;
const SEED: u64 = 1;

/// The cases job 0 of a campaign of `SEED` draws (`campaign/jobs.rs`: the RNG is seeded with the
/// seed and the job number).
fn cases() -> Vec<Value> {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&SEED.to_le_bytes());
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &bytes);
    let mut runner = TestRunner::new_with_rng(Config::default(), rng);
    let strategy = normfuzz::generate::cases::op_input(Op::CoerceToolResult);
    (0..CASES)
        .map(|_| {
            strategy
                .new_tree(&mut runner)
                .expect("generator draws")
                .current()
        })
        .collect()
}

fn campaign() -> Campaign {
    Campaign {
        cases: Some(CASES),
        ..Campaign::new(vec![Op::CoerceToolResult], SEED)
    }
}

/// The process's CPU time (every thread's, as the campaign's own figure reads it) for `iters`
/// runs of `f`: a campaign's threads wait on each other, and waiting is no harness work.
fn cpu(iters: u64, mut f: impl FnMut()) -> Duration {
    let clock = CpuClock::now();
    for _ in 0..iters {
        f();
    }
    clock.harness_since()
}

fn batch(c: &mut Criterion) {
    let inputs = cases();
    let campaign = campaign();
    let outcome = run(&campaign, || Ok(ReferenceSut), &Progress::default()).expect("runs");
    assert_eq!(outcome.cases(), CASES, "every case judged");
    assert!(
        outcome.findings.is_empty(),
        "the reference judged against itself: {:?}",
        outcome.findings.first().map(|f| &f.id)
    );
    let mut group = c.benchmark_group("campaign");
    group.sample_size(20);
    group.throughput(Throughput::Elements(CASES));
    group.bench_function("harness", |b| {
        b.iter_custom(|iters| {
            cpu(iters, || {
                let outcome = run(
                    black_box(&campaign),
                    || Ok(ReferenceSut),
                    &Progress::default(),
                );
                black_box(outcome.expect("runs").cases());
            })
        })
    });
    let batch: Vec<(Op, &Value)> = inputs.iter().map(|i| (Op::CoerceToolResult, i)).collect();
    group.bench_function("reference", |b| {
        b.iter_custom(|iters| {
            cpu(iters, || {
                black_box(ReferenceSut.call(black_box(&batch)).expect("answers"));
            })
        })
    });
    group.bench_function("json_roundtrip", |b| {
        b.iter_custom(|iters| {
            cpu(iters, || {
                let mut bytes = Vec::new();
                for input in black_box(&inputs) {
                    bytes.clear();
                    json::write_value(&mut bytes, input);
                    json::drop_value(json::parse_value(&bytes).expect("valid"));
                }
            })
        })
    });
    group.finish();
}

criterion_group!(benches, batch);
criterion_main!(benches);
