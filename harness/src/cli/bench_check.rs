//! `normfuzz bench-check`: the speed regression gate of `cargo xtask ci`. The reference's
//! coercion of every benchmark document (text, images, many small blocks) is timed against a
//! `serde_json::Value` round trip of the same bytes, interleaved (reference, round trip,
//! reference, ...) so that whatever else loads the machine weighs on both sides alike; the gate
//! reads the median of the per-round ratios, never an absolute time.

use std::hint::black_box;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Result;
use normfuzz::generate::bench_docs::{PROSE, coercion_docs};
use normfuzz::reference::coerce::coerce_json;
use normfuzz::reference::neutralize::neutralize;

#[derive(clap::Args)]
pub struct BenchCheckArgs {
    /// Fail when the reference's throughput on a document falls under this multiple of the
    /// round trip's (20% under the 2x goal of issue 37: the interleaved median moves by about
    /// that on a loaded 2-core machine; documents in `BELOW_GOAL` have their own floor).
    #[arg(long, default_value_t = 1.6)]
    min_ratio: f64,
    /// Interleaved rounds per document; the median ratio counts.
    #[arg(long, default_value_t = 21)]
    rounds: usize,
    /// Documents whose name starts with this prefix.
    #[arg(long, default_value = "")]
    only: String,
}

/// Documents that do not reach the goal yet, by name prefix, with the floor that protects the
/// level they reach (a line-start directive every 72 bytes: medians of 1.57x to 2.36x at load
/// average 6, so 1.6x would fail now and then; see docs/speed.md), until they do.
const BELOW_GOAL: &[(&str, f64)] = &[("text_directives", 1.3)];

pub fn run(args: BenchCheckArgs) -> Result<ExitCode> {
    let mut failed = 0;
    for doc in coercion_docs()
        .into_iter()
        .filter(|d| d.name.starts_with(&args.only))
    {
        let json = doc.json.as_str();
        let gate = BELOW_GOAL
            .iter()
            .find(|(prefix, _)| doc.name.starts_with(prefix))
            .map_or(args.min_ratio, |&(_, floor)| floor.min(args.min_ratio));
        let measure = || {
            ratios(
                args.rounds,
                || {
                    let value: serde_json::Value =
                        serde_json::from_str(black_box(json)).expect("valid");
                    serde_json::to_vec(&value).expect("serializable")
                },
                || coerce_json(black_box(json)).expect("valid").to_json_bytes(),
            )
        };
        // A median under the gate is measured once more: a burst of load on a shared machine
        // fails one measurement, a regression fails both.
        let mut ratios = measure();
        if ratios[ratios.len() / 2] < gate {
            ratios = measure();
        }
        let median = ratios[ratios.len() / 2];
        let ok = median >= gate;
        failed += usize::from(!ok);
        println!(
            "{} {:<22} {median:.2}x the serde_json round trip (rounds {:.2}..{:.2}, gate {:.2}x)",
            if ok { "ok  " } else { "FAIL" },
            doc.name,
            ratios[0],
            ratios[ratios.len() - 1],
            gate
        );
    }
    // Informational: the neutralizer against the literal search a naive defanger runs.
    let prose = PROSE.repeat(1_000_000 / PROSE.len());
    let ratios = ratios(
        args.rounds,
        || memchr::memmem::find_iter(black_box(prose.as_bytes()), b"MEDIA:").count(),
        || neutralize(black_box(&prose)).len(),
    );
    println!(
        "info neutralizer on 1 MB of colon-dense prose: {:.2}x the time of a memmem scan for MEDIA:",
        1.0 / ratios[ratios.len() / 2]
    );
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// `rounds` ratios, sorted: the baseline's time over ours, each from one slice of each, back to
/// back, of about 10 ms of the baseline.
fn ratios<A, B>(rounds: usize, baseline: impl Fn() -> A, ours: impl Fn() -> B) -> Vec<f64> {
    baseline();
    let once = time(1, &baseline).as_secs_f64().max(1e-7);
    let iters = (Duration::from_millis(10).as_secs_f64() / once).ceil() as u32;
    let mut ratios: Vec<f64> = (0..rounds.max(1))
        .map(|_| time(iters, &baseline).as_secs_f64() / time(iters, &ours).as_secs_f64())
        .collect();
    ratios.sort_by(f64::total_cmp);
    ratios
}

fn time<T>(iters: u32, f: &impl Fn() -> T) -> Duration {
    let start = Instant::now();
    for _ in 0..iters {
        black_box(f());
    }
    start.elapsed()
}
