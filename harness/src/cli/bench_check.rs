//! `normfuzz bench-check`: the speed regression gate of `cargo xtask ci`. The reference's
//! coercion of every text benchmark document is timed against a `serde_json::Value` round trip
//! of the same bytes, interleaved (reference, round trip, reference, ...) so that whatever else
//! loads the machine weighs on both sides alike; the gate reads the median of the per-round
//! ratios, never an absolute time.

use std::hint::black_box;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Result;
use normfuzz::generate::bench_docs::coercion_docs;
use normfuzz::reference::coerce::coerce_json;

#[derive(clap::Args)]
pub struct BenchCheckArgs {
    /// Fail when the reference's throughput on a text document falls under this multiple of
    /// the round trip's.
    #[arg(long, default_value_t = 0.8)]
    min_ratio: f64,
    /// Interleaved rounds per document; the median ratio counts.
    #[arg(long, default_value_t = 15)]
    rounds: usize,
    /// Documents whose name starts with this prefix.
    #[arg(long, default_value = "text_")]
    only: String,
}

pub fn run(args: BenchCheckArgs) -> Result<ExitCode> {
    let mut failed = 0;
    for doc in coercion_docs()
        .into_iter()
        .filter(|d| d.name.starts_with(&args.only))
    {
        let json = doc.json.as_str();
        let ours = || coerce_json(black_box(json)).expect("valid").to_json_bytes();
        let theirs = || {
            let value: serde_json::Value = serde_json::from_str(black_box(json)).expect("valid");
            serde_json::to_vec(&value).expect("serializable")
        };
        // Iterations per timed slice: about 10 ms of the round trip, measured once warm.
        theirs();
        let once = time(1, &theirs);
        let iters = (Duration::from_millis(10).as_secs_f64() / once.as_secs_f64()).ceil() as u32;
        let mut ratios: Vec<f64> = (0..args.rounds)
            .map(|_| time(iters, &theirs).as_secs_f64() / time(iters, &ours).as_secs_f64())
            .collect();
        ratios.sort_by(f64::total_cmp);
        let median = ratios[ratios.len() / 2];
        let ok = median >= args.min_ratio;
        failed += usize::from(!ok);
        println!(
            "{} {:<22} {median:.2}x the serde_json round trip (rounds {:.2}..{:.2}, gate {:.2}x)",
            if ok { "ok  " } else { "FAIL" },
            doc.name,
            ratios[0],
            ratios[ratios.len() - 1],
            args.min_ratio
        );
    }
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn time<T>(iters: u32, f: &impl Fn() -> T) -> Duration {
    let start = Instant::now();
    for _ in 0..iters {
        black_box(f());
    }
    start.elapsed()
}
