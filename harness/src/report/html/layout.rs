//! The page layout every `report.html` shares: style, head, verdict banner, and the blocks
//! (code, preformatted text and JSON, charts) the pages are made of.

use std::fmt::Write as _;

use serde::Serialize;

use super::plot::{Chart, svg};
use crate::report::escape::{escape, text};

/// Bytes of one JSON value shown in the page.
pub(super) const SHOWN_MAX: usize = 4096;

pub(super) const STYLE: &str = r#"
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

/// A JSON value as pretty text in a `<pre>`, cut at `SHOWN_MAX` bytes (indentation capped, so
/// an input nested a million deep stays linear: `report::pretty`).
pub(super) fn json_pre(value: &impl Serialize) -> String {
    let json = crate::report::pretty::to_vec(value).map_or_else(
        |e| format!("(cannot show as JSON: {e})"),
        |bytes| String::from_utf8_lossy(&bytes).into_owned(),
    );
    pre(&json)
}

pub(super) fn pre(s: &str) -> String {
    format!(
        "<pre>{}</pre>",
        text(&crate::excerpt::bounded(s, SHOWN_MAX))
    )
}

/// The whole page: head with the inline style and the policy, then `body`.
pub(super) fn page(title: &str, body: &str) -> String {
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
pub(super) fn header(passed: bool, title: &str, facts: &[(&str, String)]) -> String {
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

pub(super) fn code(s: &str) -> String {
    format!("<code>{}</code>", text(s))
}

pub(super) fn charts(charts: &[Chart<'_>], note: &str) -> String {
    let svgs: String = charts.iter().map(svg).collect();
    format!(r#"<div class="charts">{svgs}</div><p class="note">{note}</p>"#)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_values_are_cut() {
        let long = serde_json::json!({"text": "a".repeat(10 * SHOWN_MAX)});
        let shown = json_pre(&long);
        assert!(shown.len() < 2 * SHOWN_MAX, "{}", shown.len());
        assert!(shown.contains(crate::excerpt::CUT_MARKER));
    }
}
