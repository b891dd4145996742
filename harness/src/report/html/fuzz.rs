//! The fuzz-report page: one row per target, speed and coverage plots, each crash with its
//! reason, artifact, repro and log excerpt.

use std::fmt::Write as _;

use super::layout::{charts, code, header, page, pre};
use super::plot::{Chart, Series};
use crate::report::escape::{escape, text};
use crate::report::libfuzzer::{FuzzRun, FuzzSample, Status};

pub fn fuzz(runs: &[FuzzRun]) -> String {
    let passed = runs.iter().all(|r| r.status == Status::Clean);
    let execs: u64 = runs.iter().map(|r| r.execs).sum();
    let facts = [
        (
            "targets",
            runs.iter()
                .map(|r| code(&r.target))
                .collect::<Vec<_>>()
                .join(", "),
        ),
        ("executions", execs.to_string()),
        (
            "not clean",
            runs.iter()
                .filter(|r| r.status != Status::Clean)
                .map(|r| format!("{} ({})", code(&r.target), r.status.as_str()))
                .collect::<Vec<_>>()
                .join(", "),
        ),
    ];
    let mut body = header(passed, "normfuzz fuzz (libFuzzer)", &facts);
    body.push_str(r#"<main><section><h2>Targets</h2><table id="targets"><thead><tr><th class="rule">target</th><th>status</th><th>executions</th><th>seconds</th><th>exec/s (average)</th><th>cov</th><th>ft</th><th>corpus</th><th>new units</th><th>peak RSS (MB)</th></tr></thead><tbody>"#);
    let num = |v: Option<u64>| v.map_or("?".to_string(), |v| v.to_string());
    for run in runs {
        let (class, status) = match run.status {
            Status::Clean => ("pass", "clean".to_string()),
            Status::Crashed => (
                "fail",
                format!(r##"<a href="#crash-{}">crashed</a>"##, escape(&run.target)),
            ),
            Status::Incomplete => ("fail", "incomplete".to_string()),
        };
        let _ = write!(
            body,
            r#"<tr><td class="rule">{}</td><td class="cell {class}">{status}</td><td class="num">{}</td><td class="num">{}</td><td class="num">{}</td><td class="num">{}</td><td class="num">{}</td><td class="num">{}</td><td class="num">{}</td><td class="num">{}</td></tr>"#,
            text(&run.target),
            run.execs,
            num(run.seconds),
            num(run.exec_per_sec),
            num(run.last().and_then(|s| s.cov)),
            num(run.last().and_then(|s| s.ft)),
            num(run.last().and_then(|s| s.corpus)),
            num(run.new_units),
            num(run.peak_rss_mb),
        );
    }
    body.push_str("</tbody></table></section><section><h2>Progress</h2>");
    let series = |value: fn(&FuzzSample) -> Option<u64>| -> Vec<Series> {
        runs.iter()
            .map(|run| Series {
                label: run.target.clone(),
                points: run
                    .series
                    .iter()
                    .filter_map(|s| value(s).map(|v| (s.execs as f64, v as f64)))
                    .collect(),
            })
            .collect()
    };
    body.push_str(&charts(
        &[
            Chart {
                title: "Speed: libFuzzer exec/s (its running average since start)",
                x_label: "executions (libFuzzer #N)",
                y_label: "exec/s",
                series: series(|s| s.exec_per_sec),
            },
            Chart {
                title: "Coverage: libFuzzer cov (covered code points)",
                x_label: "executions (libFuzzer #N)",
                y_label: "cov",
                series: series(|s| s.cov),
            },
        ],
        "Both plotted against executions, the one clock every libFuzzer status line carries. \
         exec/s is libFuzzer's executions divided by seconds since start, so it is 0 during the \
         first second. cov counts the instrumented code points (edges) reached so far.",
    ));
    body.push_str("</section>");
    let crashed: Vec<&FuzzRun> = runs.iter().filter(|r| r.crash.is_some()).collect();
    if !crashed.is_empty() {
        body.push_str("<section><h2>Crashes</h2>");
    }
    for run in crashed {
        let Some(crash) = &run.crash else {
            continue;
        };
        let _ = write!(
            body,
            r#"<article class="fail" id="crash-{id}"><h3><span class="badge fail">crash</span> {target}</h3><p class="meta"><b>reason</b> {reason}</p><p class="meta"><b>artifact</b> {artifact} · <b>log</b> {log}</p><h4>Repro</h4>{repro}<h4>Log excerpt</h4>{excerpt}</article>"#,
            id = escape(&run.target),
            target = code(&run.target),
            reason = text(&crash.reason),
            artifact = crash
                .artifact
                .as_deref()
                .map_or("none written".to_string(), code),
            log = code(&run.log),
            repro = pre(&run.repro().unwrap_or_default()),
            excerpt = pre(&crash.excerpt),
        );
    }
    body.push_str("</main>");
    page(
        &format!("normfuzz fuzz: {}", if passed { "pass" } else { "FAIL" }),
        &body,
    )
}
