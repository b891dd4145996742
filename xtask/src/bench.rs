//! `cargo xtask bench`: criterion benchmarks and campaign throughput, printed as the ratios README quotes.

use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context, Result};

use crate::{build_normfuzz, cargo, step};

pub fn bench(root: &Path) -> Result<()> {
    step("cargo bench", {
        let mut cmd = cargo(root, &["bench", "-p", "normfuzz", "--bench", "reference"]);
        cmd.env("CARGO_TERM_COLOR", "never");
        cmd
    })?;
    let criterion = root.join("target/criterion");
    println!("\nratios (reference time / baseline time; below 1 means faster than the baseline):");
    for (group, baseline) in [
        ("coerce_text", "serde_json_roundtrip"),
        ("coerce_image", "serde_json_roundtrip"),
        ("neutralize", "memmem_scan"),
        ("neutralize", "memchr_colon_scan"),
    ] {
        let dir = criterion.join(group).join("reference");
        let mut params: Vec<String> = std::fs::read_dir(&dir)
            .with_context(|| format!("no results in {}", dir.display()))?
            .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
            .filter(|p| p != "report")
            .collect();
        params.sort_by_key(|p| p.parse::<u64>().unwrap_or(u64::MAX));
        for param in params {
            let ours = mean_ns(&dir.join(&param))?;
            let theirs = mean_ns(&criterion.join(group).join(baseline).join(&param))?;
            println!(
                "  {group:<13} {param:>20}: {:.2}x {baseline} ({:.1} vs {:.1} µs)",
                ours / theirs,
                ours / 1e3,
                theirs / 1e3
            );
        }
    }
    campaign_throughput(root)?;
    Ok(())
}

/// Cases per second through the whole runner (generate, SUT, reference, judge), in process and
/// through a pipelined `serve-reference` subprocess, for a simple op and for all ops.
fn campaign_throughput(root: &Path) -> Result<()> {
    let normfuzz = build_normfuzz(root)?;
    let serve = format!("{} serve-reference", normfuzz.display());
    println!("\ncampaign throughput (cases/s, seed 1):");
    for (label, sut, ops, jobs) in [
        (
            "in process, neutralize_text",
            "reference",
            Some("neutralize_text"),
            "1",
        ),
        (
            "subprocess, neutralize_text",
            serve.as_str(),
            Some("neutralize_text"),
            "1",
        ),
        (
            "subprocess, neutralize_text, 2 jobs",
            serve.as_str(),
            Some("neutralize_text"),
            "2",
        ),
        ("subprocess, all ops, 2 jobs", serve.as_str(), None, "2"),
    ] {
        let report = root
            .join("target/bench-reports")
            .join(label.replace([',', ' '], "_"));
        let mut cmd = Command::new(&normfuzz);
        cmd.args([
            "conform", "--sut", sut, "--jobs", jobs, "--cases", "100000", "--report",
        ])
        .arg(&report);
        if let Some(ops) = ops {
            cmd.args(["--ops", ops]);
        }
        let output = cmd
            .stderr(Stdio::null())
            .output()
            .with_context(|| format!("cannot run {label}"))?;
        let index: serde_json::Value =
            serde_json::from_slice(&std::fs::read(report.join("index.json"))?)?;
        let (cases, ms) = (
            index["cases"].as_f64().unwrap_or(0.0),
            index["elapsedMs"].as_f64().unwrap_or(1.0),
        );
        println!(
            "  {label:<38} {:>9.0}  ({})",
            cases * 1000.0 / ms.max(1.0),
            output.status
        );
    }
    Ok(())
}

fn mean_ns(dir: &Path) -> Result<f64> {
    let path = dir.join("new/estimates.json");
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let value: serde_json::Value = serde_json::from_str(&text)?;
    value["mean"]["point_estimate"]
        .as_f64()
        .with_context(|| format!("no mean in {}", path.display()))
}
