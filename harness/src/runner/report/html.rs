//! `report.html`: one self-contained page per run. No script, and nothing fetched: the style is
//! inline, the plots are inline SVG, and a Content-Security-Policy of `default-src 'none'` makes
//! the browser refuse any request or script that hostile text might still smuggle in.
//!
//! Every piece of text from a run (inputs, answers, details, names) goes through `escape` or
//! `text`: HTML-escaped, with control, bidirectional and zero-width characters shown as `\uXXXX`
//! (they are exactly what directive-smuggling inputs are made of). JSON values are shown as
//! pretty JSON, cut at `SHOWN_MAX` bytes; the finding's file holds the full value.

use std::fmt::Write as _;

use serde::Serialize;

use super::fuzz::{FuzzRun, Status};
use super::matrix::State;
use super::plot::{Chart, Series, svg};
use super::{CampaignView, E2eView, finding_file, is_invisible};
use crate::runner::campaign::{Finding, Sample};

/// Bytes of one JSON value shown in the page.
const SHOWN_MAX: usize = 4096;

const STYLE: &str = r#"
:root { --pass: #1a7f37; --pass-bg: #dafbe1; --fail: #cf222e; --fail-bg: #ffebe9;
  --div: #9a6700; --div-bg: #fff8c5; --na: #8c959f; --na-bg: #f6f8fa; --line: #d0d7de; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1f2328; background: #fff; }
header { padding: 20px 32px; border-bottom: 4px solid var(--line); }
header.pass { background: var(--pass-bg); border-color: var(--pass); }
header.fail { background: var(--fail-bg); border-color: var(--fail); }
h1 { margin: 0 0 10px; font-size: 26px; }
h1 .verdict { display: inline-block; padding: 0 12px; margin-right: 10px; border-radius: 6px; color: #fff; }
header.pass .verdict { background: var(--pass); } header.fail .verdict { background: var(--fail); }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 0; }
dl.facts dt { font-weight: 600; } dl.facts dd { margin: 0; }
main { padding: 8px 32px 40px; max-width: 1400px; }
h2 { margin: 28px 0 10px; font-size: 20px; border-bottom: 1px solid var(--line); padding-bottom: 4px; }
h3 { margin: 0 0 8px; font-size: 17px; } h4 { margin: 12px 0 4px; font-size: 14px; }
code, pre { font: 13px/1.4 ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; }
pre { margin: 0; padding: 8px 10px; background: var(--na-bg); border: 1px solid var(--line); border-radius: 6px;
  white-space: pre-wrap; overflow-wrap: anywhere; max-height: 360px; overflow: auto; }
.esc { background: #ffd8b5; color: #6b2e00; border-radius: 2px; }
table { border-collapse: collapse; }
th, td { border: 1px solid var(--line); padding: 4px 8px; text-align: center; }
th { background: var(--na-bg); font-size: 13px; }
th.rule, td.rule { text-align: left; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.cell { min-width: 64px; font-weight: 600; font-variant-numeric: tabular-nums; }
.cell a { color: inherit; text-decoration: none; display: block; } .cell a:hover { text-decoration: underline; }
td.pass { color: var(--pass); background: var(--pass-bg); }
td.fail { color: var(--fail); background: var(--fail-bg); }
td.divergence { color: var(--div); background: var(--div-bg); }
td.na { color: var(--na); background: #fff; font-weight: 400; }
.legend span { display: inline-block; margin-right: 14px; }
.swatch { display: inline-block; width: 12px; height: 12px; border: 1px solid var(--line); vertical-align: -1px; margin-right: 4px; }
.charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(420px, 1fr)); gap: 16px; }
svg.chart { width: 100%; max-width: 640px; height: auto; border: 1px solid var(--line); border-radius: 6px; background: #fff; }
svg .grid { stroke: #eaeef2; } svg .axis { stroke: #57606a; }
svg text { font: 12px system-ui, sans-serif; fill: #1f2328; } svg .chart-title { font-weight: 600; font-size: 13px; }
svg .tick { fill: #57606a; font-size: 11px; }
.note { color: #57606a; font-size: 13px; max-width: 900px; }
article { border: 1px solid var(--line); border-left: 6px solid var(--line); border-radius: 6px; padding: 12px 16px; margin: 14px 0; }
article.fail { border-left-color: var(--fail); } article.divergence { border-left-color: var(--div); }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; color: #fff; font-size: 12px; vertical-align: 2px; }
.badge.fail { background: var(--fail); } .badge.divergence { background: var(--div); }
.meta { margin: 0 0 6px; } .meta b { font-weight: 600; }
.answers { display: grid; grid-template-columns: repeat(auto-fit, minmax(380px, 1fr)); gap: 12px; }
"#;

/// Text for element content: escaped, invisible characters highlighted.
pub fn text(s: &str) -> String {
    escape_with(s, true)
}

/// Text for attribute values and SVG: escaped, invisible characters as plain `\uXXXX`.
pub fn escape(s: &str) -> String {
    escape_with(s, false)
}

fn escape_with(s: &str, highlight: bool) -> String {
    let mut out = String::with_capacity(s.len() + s.len() / 8);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if is_invisible(c) => {
                let (open, close) = if highlight {
                    (r#"<span class="esc">"#, "</span>")
                } else {
                    ("", "")
                };
                let _ = write!(out, "{open}\\u{:04x}{close}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out
}

/// A JSON value as pretty text in a `<pre>`, cut at `SHOWN_MAX` bytes.
fn json_pre(value: &impl Serialize) -> String {
    let json = serde_json::to_string_pretty(value)
        .unwrap_or_else(|e| format!("(cannot show as JSON: {e})"));
    pre(&json)
}

fn pre(s: &str) -> String {
    format!(
        "<pre>{}</pre>",
        text(&crate::excerpt::bounded(s, SHOWN_MAX))
    )
}

/// The whole page: head with the inline style and the policy, then `body`.
fn page(title: &str, body: &str) -> String {
    format!(
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{}</title><style>{STYLE}</style></head>
<body>{body}</body></html>
"#,
        escape(title)
    )
}

/// The verdict banner: PASS or FAIL, a title, and the run's facts (values are HTML already).
fn header(passed: bool, title: &str, facts: &[(&str, String)]) -> String {
    let class = if passed { "pass" } else { "fail" };
    let mut out = format!(
        r#"<header class="{class}"><h1><span class="verdict">{}</span>{}</h1><dl class="facts">"#,
        if passed { "PASS" } else { "FAIL" },
        text(title)
    );
    for (name, value) in facts {
        let _ = write!(out, "<dt>{}</dt><dd>{value}</dd>", text(name));
    }
    out.push_str("</dl></header>");
    out
}

fn code(s: &str) -> String {
    format!("<code>{}</code>", text(s))
}

fn charts(charts: &[Chart<'_>], note: &str) -> String {
    let svgs: String = charts.iter().map(svg).collect();
    format!(r#"<div class="charts">{svgs}</div><p class="note">{note}</p>"#)
}

// ---------------------------------------------------------------------------------------------
// conform

pub fn campaign(campaign: &CampaignView<'_>) -> String {
    let outcome = campaign.outcome;
    let seconds = outcome.elapsed_ms as f64 / 1000.0;
    let gate = outcome.findings.iter().filter(|f| f.gate).count();
    let facts = [
        ("SUT command", code(campaign.sut_command)),
        ("seed", outcome.seed.to_string()),
        (
            "cases",
            format!(
                "{} in {seconds:.1} s ({:.0} cases/s)",
                outcome.cases(),
                outcome.cases() as f64 / seconds.max(0.001)
            ),
        ),
        (
            "failed cases",
            format!(
                "{}{}",
                outcome.failed(campaign.strict),
                if campaign.strict {
                    " (strict: divergences count)"
                } else {
                    ""
                }
            ),
        ),
        (
            "findings",
            format!(
                "{gate} gate failures, {} divergences",
                outcome.findings.len() - gate
            ),
        ),
    ];
    let mut body = header(
        campaign.passed(),
        &format!("normfuzz conform against {}", outcome.sut),
        &facts,
    );
    body.push_str("<main>");
    body.push_str(&matrix(campaign));
    body.push_str("<section><h2>Progress</h2>");
    body.push_str(&charts(
        &campaign_charts(campaign),
        "Throughput counts cases whose verdict is in, so it dips while a new failure is being \
         shrunk. Reference-answer shapes: distinct (op, shape) pairs among the reference's \
         answers, where a shape keeps keys, block types, booleans, reasons and MIME types and \
         drops the data, so it grows when the generator reaches behaviour it had not reached \
         yet. Verdict cells: distinct verdicts seen, (op, pass) once an op had a case that broke \
         nothing and (op, rule) once the rule was broken on that op (the ✗ and ≠ cells above).",
    ));
    body.push_str("</section>");
    let _ = write!(
        body,
        "<section><h2>Findings ({})</h2>",
        outcome.findings.len()
    );
    if outcome.findings.is_empty() {
        body.push_str("<p>No case broke a rule or differed from the reference.</p>");
    }
    for finding in &outcome.findings {
        body.push_str(&finding_article(finding, campaign.repro(finding)));
    }
    body.push_str("</section></main>");
    page(
        &format!(
            "normfuzz conform: {} {}",
            outcome.sut,
            if campaign.passed() { "pass" } else { "FAIL" }
        ),
        &body,
    )
}

/// The rule × op table, each cell linking to its first finding.
fn matrix(campaign: &CampaignView<'_>) -> String {
    let m = &campaign.matrix;
    let mut out = String::from(
        r#"<section><h2>Rules × ops</h2><p class="legend"><span><i class="swatch" style="background:var(--pass-bg)"></i>✓ pass</span><span><i class="swatch" style="background:var(--fail-bg)"></i>✗ fail (gate), violations</span><span><i class="swatch" style="background:var(--div-bg)"></i>≠ divergence from the reference, cases</span><span><i class="swatch"></i>– not judged on this op</span></p><table id="matrix"><thead><tr><th class="rule">rule</th>"#,
    );
    for op in &m.ops {
        // Let long op names break after their underscores.
        let _ = write!(out, "<th>{}</th>", text(op.as_str()).replace('_', "_<wbr>"));
    }
    out.push_str(r#"</tr><tr><th class="rule">cases</th>"#);
    for op in &m.ops {
        let cases = campaign.outcome.per_op.get(op).map_or(0, |t| t.cases);
        let _ = write!(out, r#"<th class="num">{cases}</th>"#);
    }
    out.push_str("</tr></thead><tbody>");
    for &rule in &m.rules {
        let _ = write!(out, r#"<tr><td class="rule">{}</td>"#, text(rule));
        for &op in &m.ops {
            let Some(cell) = m.cell(rule, op) else {
                continue;
            };
            let (mark, class) = match cell.state {
                State::Pass => ("✓".to_string(), "pass"),
                State::Fail => (format!("✗ {}", cell.hits), "fail"),
                State::Divergence => (format!("≠ {}", cell.hits), "divergence"),
                State::NotApplicable => ("–".to_string(), "na"),
            };
            let title = match cell.state {
                State::NotApplicable => format!("{rule} is not judged on {op}"),
                _ => format!(
                    "{rule} on {op}: {} in {} cases; {}",
                    cell.state.as_str(),
                    cell.cases,
                    match cell.findings.len() {
                        0 if cell.hits > 0 => {
                            "no minimal case: another rule was reported first on these cases"
                                .to_string()
                        }
                        n => format!("{n} finding(s)"),
                    }
                ),
            };
            let content = match cell.findings.first() {
                Some(f) => format!(r##"<a href="#f-{}">{mark}</a>"##, escape(&f.id)),
                None => mark,
            };
            let _ = write!(
                out,
                r#"<td class="cell {class}" title="{}">{content}</td>"#,
                escape(&title)
            );
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table></section>");
    out
}

fn campaign_charts(campaign: &CampaignView<'_>) -> [Chart<'static>; 2] {
    let timeline = &campaign.outcome.timeline;
    let since_start = |value: fn(&crate::runner::campaign::Sample) -> u64| -> Vec<(f64, f64)> {
        std::iter::once((0.0, 0.0))
            .chain(
                timeline
                    .iter()
                    .map(|s| (s.elapsed_ms as f64 / 1000.0, value(s) as f64)),
            )
            .collect()
    };
    [
        Chart {
            title: "Throughput: cases judged per second, per sampling interval",
            x_label: "seconds since the campaign started",
            y_label: "cases/s",
            series: vec![Series {
                label: "cases/s".into(),
                points: throughput(timeline),
            }],
        },
        Chart {
            title: "Coverage: distinct reference-answer shapes and verdict cells seen",
            x_label: "seconds since the campaign started",
            y_label: "distinct seen so far",
            series: vec![
                Series {
                    label: "reference-answer shapes".into(),
                    points: since_start(|s| s.reference_shapes),
                },
                Series {
                    label: "verdict cells".into(),
                    points: since_start(|s| s.verdict_cells),
                },
            ],
        },
    ]
}

/// Cases per second over each interval between samples, plotted at the interval's end. An
/// interval shorter than `MIN_RATE_INTERVAL_MS` (the final sample comes right after the last
/// periodic one) is merged into its neighbour: a rate over a few milliseconds is noise.
fn throughput(timeline: &[Sample]) -> Vec<(f64, f64)> {
    const MIN_RATE_INTERVAL_MS: u64 = 100;
    let rate = |from: (u64, u64), to: &Sample| {
        let seconds = (to.elapsed_ms - from.0) as f64 / 1000.0;
        (
            to.elapsed_ms as f64 / 1000.0,
            to.cases.saturating_sub(from.1) as f64 / seconds,
        )
    };
    let mut points = Vec::new();
    // The start of the interval being measured, and the start of the last one plotted.
    let (mut from, mut plotted_from) = ((0, 0), None);
    for s in timeline {
        if s.elapsed_ms >= from.0 + MIN_RATE_INTERVAL_MS {
            points.push(rate(from, s));
            plotted_from = Some(from);
            from = (s.elapsed_ms, s.cases);
        }
    }
    if let Some(end) = timeline.last()
        && end.elapsed_ms > from.0
    {
        let start = match plotted_from {
            Some(start) => {
                points.pop();
                start
            }
            None => from,
        };
        points.push(rate(start, end));
    }
    points
}

fn finding_article(f: &Finding, repro: &str) -> String {
    let (class, label) = if f.gate {
        ("fail", "gate failure")
    } else {
        ("divergence", "divergence")
    };
    let file = finding_file(f);
    format!(
        r#"<article class="{class}" id="f-{id}"><h3><span class="badge {class}">{label}</span> {id_text}</h3><p class="meta"><b>rule</b> {rule} · <b>op</b> {op} · <b>cases hit</b> {hits} · <b>kind</b> {kind}</p><h4>Detail</h4>{detail}<h4>Minimal input</h4>{input}<div class="answers"><div><h4>Reference answer</h4>{reference}</div><div><h4>SUT answer</h4>{sut}</div></div><h4>Repro</h4>{repro}<p class="note">Full values: <a href="{file_attr}">{file_text}</a></p></article>"#,
        id = escape(&f.id),
        id_text = code(&f.id),
        rule = text(f.rule),
        op = text(f.op.as_str()),
        hits = f.hits,
        kind = text(&f.kind),
        detail = pre(&f.detail),
        input = json_pre(&f.input),
        reference = json_pre(&f.reference),
        sut = json_pre(&f.sut),
        repro = pre(repro),
        file_attr = escape(&file),
        file_text = text(&file),
    )
}

// ---------------------------------------------------------------------------------------------
// fuzz-report

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
    let series = |value: fn(&super::fuzz::FuzzSample) -> Option<u64>| -> Vec<Series> {
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

// ---------------------------------------------------------------------------------------------
// e2e

/// Rules the e2e judge checks on every case, in the matrix's column order.
const E2E_RULES: [&str; 10] = [
    "provider", "B1", "F1", "F2", "F4", "F5", "S1", "S3", "D3", "error",
];

pub fn e2e(view: &E2eView) -> String {
    let failed = view.failed();
    let mut facts: Vec<(&str, String)> = view.facts.iter().map(|(k, v)| (*k, text(v))).collect();
    facts.push(("cases", view.cases.len().to_string()));
    facts.push(("failing", failed.to_string()));
    let mut body = header(
        failed == 0,
        &format!("normfuzz e2e: {}", view.runtime),
        &facts,
    );
    body.push_str("<main><h2>Cases by rule</h2>");
    body.push_str(r#"<p class="legend"><span><span class="swatch" style="background:var(--pass-bg)"></span>pass</span><span><span class="swatch" style="background:var(--fail-bg)"></span>new finding</span><span><span class="swatch" style="background:var(--div-bg)"></span>known (baseline)</span></p>"#);
    body.push_str(r#"<table id="matrix"><tr><th class="rule">case</th><th>API</th>"#);
    for rule in E2E_RULES {
        let _ = write!(body, "<th>{}</th>", text(rule));
    }
    body.push_str("<th>time</th></tr>");
    for c in &view.cases {
        let _ = write!(
            body,
            r#"<tr><td class="rule" title="{}">{}</td><td>{}</td>"#,
            escape(&c.about),
            code(&c.id),
            text(&c.api)
        );
        for rule in E2E_RULES {
            let finding = c.findings.iter().find(|f| f.rule == rule);
            let cell = match (rule, &c.error, finding) {
                ("error", Some(e), _) => {
                    format!(r#"<td class="cell fail" title="{}">✗</td>"#, escape(e))
                }
                ("error", None, _) => r#"<td class="cell na">–</td>"#.to_string(),
                (_, Some(_), _) => r#"<td class="cell na">–</td>"#.to_string(),
                (_, None, Some(f)) => format!(
                    r##"<td class="cell {}" title="{}"><a href="#{}">{}</a></td>"##,
                    if f.known { "divergence" } else { "fail" },
                    escape(&f.reason),
                    escape(&anchor(&c.id, rule)),
                    if f.known { "known" } else { "✗ new" }
                ),
                (_, None, None) => r#"<td class="cell pass">✓</td>"#.to_string(),
            };
            body.push_str(&cell);
        }
        let _ = write!(
            body,
            r#"<td class="num">{:.1} s</td></tr>"#,
            c.elapsed_ms as f64 / 1000.0
        );
    }
    body.push_str("</table>");
    if !view.stale.is_empty() {
        body.push_str("<h2>Stale baseline entries</h2><ul>");
        for (case, rule, reason) in &view.stale {
            let _ = write!(
                body,
                "<li>{} {}: {}</li>",
                code(case),
                text(rule),
                text(reason)
            );
        }
        body.push_str("</ul>");
    }
    body.push_str("<h2>Findings</h2>");
    for c in &view.cases {
        for f in &c.findings {
            let class = if f.known { "divergence" } else { "fail" };
            let _ = write!(
                body,
                r#"<article id="{}" class="{class}"><h3><span class="badge {class}">{}</span> {} {}</h3><p class="meta">{}</p><h4>Evidence</h4>{}<p class="meta"><b>repro</b> {}</p><p class="meta"><b>file</b> <a href="{}">{}</a> (with the captured request and the delivered output)</p></article>"#,
                escape(&anchor(&c.id, &f.rule)),
                if f.known { "known" } else { "new" },
                text(&f.rule),
                code(&c.id),
                text(&f.reason),
                json_pre(&f.evidence),
                code(&f.repro),
                escape(&f.file),
                text(&f.file)
            );
        }
    }
    body.push_str("</main>");
    page(&format!("normfuzz e2e: {}", view.runtime), &body)
}

fn anchor(case: &str, rule: &str) -> String {
    format!("f-{case}--{rule}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_text_is_escaped_and_invisible_characters_shown() {
        let hostile = "</pre><script>alert('x')</script>\"\u{0}\u{1b}[31m\u{202e}\u{200b}MEDIA:";
        let shown = text(hostile);
        assert!(!shown.contains("<script"), "{shown}");
        assert!(!shown.contains("</pre>"), "{shown}");
        assert!(
            shown.contains("&lt;script&gt;alert(&#39;x&#39;)"),
            "{shown}"
        );
        for visible in [r"\u0000", r"\u001b", r"\u202e", r"\u200b"] {
            assert!(
                shown.contains(&format!(r#"<span class="esc">{visible}</span>"#)),
                "{visible} in {shown}"
            );
        }
        let attr = escape(hostile);
        assert!(!attr.contains(['<', '>', '"', '\'']), "{attr}");
        assert!(
            !attr.contains('\u{0}') && !attr.contains('\u{202e}'),
            "{attr}"
        );
    }

    #[test]
    fn throughput_ignores_the_final_short_interval() {
        let sample = |elapsed_ms, cases| Sample {
            elapsed_ms,
            cases,
            ..Sample::default()
        };
        let timeline = [sample(500, 0), sample(1000, 1000), sample(1003, 1010)];
        assert_eq!(throughput(&timeline), [(0.5, 0.0), (1.003, 1010.0 / 0.503)]);
        assert_eq!(throughput(&[sample(40, 100)]), [(0.04, 2500.0)]);
    }

    #[test]
    fn long_values_are_cut() {
        let long = serde_json::json!({"text": "a".repeat(10 * SHOWN_MAX)});
        let shown = json_pre(&long);
        assert!(shown.len() < 2 * SHOWN_MAX, "{}", shown.len());
        assert!(shown.contains(crate::excerpt::CUT_MARKER));
    }
}
