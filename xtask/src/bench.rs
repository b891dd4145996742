//! `cargo xtask bench`: criterion benchmarks (the reference's, and the harness's per-case work in a
//! campaign batch) and campaign throughput, printed as the ratios the guide's Speed chapter
//! quotes; with `--anchor <runtime>`, that runtime's own coercion timed on the same documents in
//! the same run (`normfuzz bench-anchor`), and one table of all three.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

use crate::{build_normfuzz, cargo, fs::write_atomic, step, target_dir};

/// Criterion settings short enough for a shared 2-core machine (about 2 minutes in all).
const CRITERION_ARGS: [&str; 4] = ["--warm-up-time", "1", "--measurement-time", "3"];

pub fn bench(root: &Path, anchor: Option<&str>) -> Result<()> {
    let normfuzz = build_normfuzz(root)?;
    // The anchor first: a missing runtime or a script error shows before criterion's minutes.
    let anchor = anchor
        .map(|name| run_anchor(root, &normfuzz, name).map(|rows| (name, rows)))
        .transpose()?;
    step("cargo bench", {
        let mut cmd = cargo(
            root,
            &[
                "bench",
                "-p",
                "normfuzz",
                "--bench",
                "reference",
                "--bench",
                "campaign",
                "--",
            ],
        );
        cmd.args(CRITERION_ARGS).env("CARGO_TERM_COLOR", "never");
        cmd
    })?;
    let criterion = target_dir(root).join("criterion");
    if let Some((name, rows)) = anchor {
        let table = anchor_table(&criterion, name, &rows)?;
        println!("\n{table}");
        let path = target_dir(root).join(format!("bench-anchor/{name}.md"));
        write_atomic(&path, table.as_bytes())?;
        println!("(written to {})", path.display());
    }
    println!("\nratios (reference time / baseline time; below 1 means faster than the baseline):");
    for (group, baseline) in [
        ("coerce", "serde_json_roundtrip"),
        ("neutralize", "memmem_scan"),
        ("neutralize", "memchr_colon_scan"),
    ] {
        for param in params(&criterion.join(group).join("reference"))? {
            let ours = best_ns(&criterion.join(group).join("reference").join(&param))?;
            let theirs = best_ns(&criterion.join(group).join(baseline).join(&param))?;
            println!(
                "  {group:<10} {param:>22}: {:.2}x {baseline} ({:.1} vs {:.1} µs)",
                ours / theirs,
                ours / 1e3,
                theirs / 1e3
            );
        }
    }
    // The harness's per-case work (benches/campaign.rs): a change in it shows as these ratios.
    let group = criterion.join("campaign");
    let harness = best_ns(&group.join("harness"))?;
    for baseline in ["reference", "json_roundtrip"] {
        let theirs = best_ns(&group.join(baseline))?;
        println!(
            "  campaign   {:>22}: {:.2}x {baseline} ({:.1} vs {:.1} µs per batch)",
            "harness",
            harness / theirs,
            harness / 1e3,
            theirs / 1e3
        );
    }
    campaign_throughput(root, &normfuzz)?;
    Ok(())
}

/// One document as the anchor's script reports it.
struct AnchorRow {
    name: String,
    bytes: f64,
    ns: f64,
}

/// Installs the anchor runtime (the e2e cache) and times its coercion on the bench documents.
fn run_anchor(root: &Path, normfuzz: &Path, name: &str) -> Result<Vec<AnchorRow>> {
    let dir = root.join("harness/runtimes").join(name);
    let script = dir.join("bench.mjs");
    if !script.is_file() {
        bail!("no anchor script {} for runtime {name}", script.display());
    }
    eprintln!("==> normfuzz bench-anchor ({name})");
    let output = Command::new(normfuzz)
        .arg("bench-anchor")
        .arg("--adapter")
        .arg(dir.join(crate::matrix::E2E_ADAPTER))
        .arg("--script")
        .arg(&script)
        .arg("--docs")
        .arg(target_dir(root).join("bench-anchor/docs"))
        .stderr(Stdio::inherit())
        .output()
        .context("cannot run normfuzz bench-anchor")?;
    if !output.status.success() {
        bail!("normfuzz bench-anchor failed ({})", output.status);
    }
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| {
            let v: serde_json::Value = serde_json::from_str(line)
                .with_context(|| format!("bench-anchor printed {line:?}"))?;
            Ok(AnchorRow {
                name: v["name"].as_str().context("no name")?.to_string(),
                bytes: v["bytes"].as_f64().context("no bytes")?,
                ns: v["ns"].as_f64().context("no ns")?,
            })
        })
        .collect()
}

/// The table docs/speed.md quotes: MB/s of each side on each document, and the reference's
/// ratios.
fn anchor_table(criterion: &Path, name: &str, rows: &[AnchorRow]) -> Result<String> {
    let group = criterion.join("coerce");
    let mut table = format!(
        "| document | normfuzz coerce + serialize | serde_json `Value` round trip | {name} (Node: parse, coerce, stringify) | ÷ round trip | ÷ {name} |\n\
         |---|---:|---:|---:|---:|---:|\n"
    );
    let mbps = |bytes: f64, ns: f64| bytes * 1e3 / ns;
    for row in rows {
        let ours = mbps(
            row.bytes,
            best_ns(&group.join("reference").join(&row.name))?,
        );
        let serde = mbps(
            row.bytes,
            best_ns(&group.join("serde_json_roundtrip").join(&row.name))?,
        );
        let theirs = mbps(row.bytes, row.ns);
        writeln!(
            table,
            "| {} | {} | {} | {} | {:.2}x | {:.1}x |",
            row.name,
            rate(ours),
            rate(serde),
            rate(theirs),
            ours / serde,
            ours / theirs
        )?;
    }
    table.push_str(
        "\nMB/s of input JSON, best criterion sample (normfuzz, serde_json) and best of 5 \
         in-process runs (the anchor), one run of `cargo xtask bench --anchor ",
    );
    writeln!(table, "{name}`.")?;
    Ok(table)
}

fn rate(mb_per_s: f64) -> String {
    if mb_per_s >= 1000.0 {
        format!("{:.1} GB/s", mb_per_s / 1000.0)
    } else {
        format!("{mb_per_s:.0} MB/s")
    }
}

/// The benchmark parameters criterion stored under `dir`, in a stable order.
fn params(dir: &Path) -> Result<Vec<String>> {
    let mut params: Vec<String> = std::fs::read_dir(dir)
        .with_context(|| format!("no results in {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .filter(|p| p != "report")
        .collect();
    params.sort();
    Ok(params)
}

/// Time of one iteration in the fastest sample: like the anchor's best run, the figure least
/// disturbed by whatever else shares the machine.
fn best_ns(dir: &Path) -> Result<f64> {
    let path = dir.join("new/sample.json");
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let value: serde_json::Value = serde_json::from_str(&text)?;
    let (Some(iters), Some(times)) = (value["iters"].as_array(), value["times"].as_array()) else {
        bail!("no samples in {}", path.display());
    };
    iters
        .iter()
        .zip(times)
        .filter_map(|(n, t)| Some(t.as_f64()? / n.as_f64()?))
        .min_by(f64::total_cmp)
        .with_context(|| format!("no samples in {}", path.display()))
}

/// Cases per second through the whole runner (generate, SUT, reference, judge), in process and
/// through a pipelined `serve-reference` subprocess, for a simple op and for all ops.
fn campaign_throughput(root: &Path, normfuzz: &PathBuf) -> Result<()> {
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
        let report = target_dir(root)
            .join("bench-reports")
            .join(label.replace([',', ' '], "_"));
        let mut cmd = Command::new(normfuzz);
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
