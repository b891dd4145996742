//! The e2e page: cases by rule against the runtime's baseline, stale baseline entries, and each
//! finding with its evidence and repro.

use std::fmt::Write as _;

use super::layout::{code, header, json_pre, page};
use crate::report::escape::{escape, text};
use crate::report::view::E2eView;

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
                    if f.fails { "fail" } else { "divergence" },
                    escape(&f.reason),
                    escape(&anchor(&c.id, &f.label())),
                    if f.fails { "✗ new" } else { f.standing() }
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
            let class = if f.fails { "fail" } else { "divergence" };
            let _ = write!(
                body,
                r#"<article id="{}" class="{class}"><h3><span class="badge {class}">{}</span> {} {}</h3><p class="meta">{}</p><h4>Evidence</h4>{}<p class="meta"><b>repro</b> {}</p><p class="meta"><b>file</b> <a href="{}">{}</a> (with the captured request and the delivered output)</p></article>"#,
                escape(&anchor(&c.id, &f.label())),
                f.standing(),
                text(&f.label()),
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
