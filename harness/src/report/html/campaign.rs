//! The campaign page: verdict, the rule × op matrix, progress plots and every finding with both
//! answers and its repro.

use std::fmt::Write as _;

use super::layout::{charts, code, header, json_pre, page, pre};
use super::plot::{Chart, Series};
use crate::campaign::Standing;
use crate::campaign::{Finding, Sample};
use crate::report::escape::{escape, text};
use crate::report::matrix::State;
use crate::report::view::{CampaignView, finding_file};

pub fn campaign(campaign: &CampaignView<'_>) -> String {
    let outcome = campaign.outcome;
    let seconds = outcome.elapsed_ms as f64 / 1000.0;
    let gate = outcome.findings.iter().filter(|f| f.gate).count();
    let mut facts = vec![
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
    if let Some(judged) = &outcome.baseline {
        facts.push((
            "baseline",
            format!(
                "{}: {}{}",
                code(&judged.file),
                text(&judged.counts()),
                judged
                    .not_reached
                    .iter()
                    .map(|k| format!(
                        " · {} on {} ({})",
                        text(k.rule.as_str()),
                        text(k.op.as_str()),
                        text(&k.cause)
                    ))
                    .collect::<String>()
            ),
        ));
    }
    facts.push((
        "runtime coverage",
        outcome.coverage.as_deref().map_or_else(
            || text(crate::report::coverage::NONE),
            |units| text(&crate::report::coverage::figures(units)),
        ),
    ));
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
    body.push_str(&crate::report::coverage::html(outcome.coverage.as_deref()));
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
        let _ = write!(out, r#"<tr><td class="rule">{}</td>"#, text(rule.as_str()));
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

fn campaign_charts(campaign: &CampaignView<'_>) -> Vec<Chart<'static>> {
    let timeline = &campaign.outcome.timeline;
    let since_start = |value: fn(&crate::campaign::Sample) -> u64| -> Vec<(f64, f64)> {
        std::iter::once((0.0, 0.0))
            .chain(
                timeline
                    .iter()
                    .map(|s| (s.elapsed_ms as f64 / 1000.0, value(s) as f64)),
            )
            .collect()
    };
    let mut charts = vec![
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
    ];
    if campaign.outcome.coverage.is_some() {
        charts.push(Chart {
            title: "Runtime coverage: the runtime's own lines and branches reached",
            x_label: "seconds since the campaign started",
            y_label: "reached so far",
            series: vec![
                Series {
                    label: "lines".into(),
                    points: since_start(|s| s.runtime_lines),
                },
                Series {
                    label: "branches".into(),
                    points: since_start(|s| s.runtime_branches),
                },
            ],
        });
    }
    charts
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
    let (class, label) = match (f.gate, f.baseline) {
        (true, Some(Standing::Known)) => ("fail", "known gate failure"),
        (true, Some(Standing::New)) => ("fail", "new gate failure"),
        (true, None) => ("fail", "gate failure"),
        (false, _) => ("divergence", "divergence"),
    };
    let file = finding_file(f);
    format!(
        r#"<article class="{class}" id="f-{id}"><h3><span class="badge {class}">{label}</span> {id_text}</h3><p class="meta"><b>rule</b> {rule} · <b>op</b> {op} · <b>cases hit</b> {hits} · <b>kind</b> {kind}</p><h4>Detail</h4>{detail}<h4>Minimal input</h4>{input}<div class="answers"><div><h4>Reference answer</h4>{reference}</div><div><h4>SUT answer</h4>{sut}</div></div><h4>Repro</h4>{repro}<p class="note">Full values: <a href="{file_attr}">{file_text}</a></p></article>"#,
        id = escape(&f.id),
        id_text = code(&f.id),
        rule = text(f.rule.as_str()),
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
