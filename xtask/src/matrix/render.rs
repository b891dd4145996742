//! The matrix table as it is published: `matrix.md` (a Markdown table and the distinct bugs per
//! runtime, by cause) and `matrix.json`, rendered from the rows `table.rs` judged.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::table::{Cell, Class, Reason, Row, State};

/// The rule columns: every rule of any row, in first-seen order.
fn columns(rows: &[Row]) -> Vec<&str> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for row in rows {
        for (rule, _) in &row.cells {
            if seen.insert(rule.as_str()) {
                out.push(rule.as_str());
            }
        }
    }
    out
}

pub fn markdown(rows: &[Row], date: &str, command: &str) -> String {
    let rules = columns(rows);
    let mut out = format!(
        "# Runtime matrix\n\nMade on {date} by `{command}`. A runtime's first row is its unit \
         level (`normfuzz conform` against its protocol shim), a row marked (e2e) its end-to-end \
         level (real agent turns, `normfuzz e2e`; one finding per case and rule), a row marked \
         (real servers) the unit level on the results real MCP servers sent \
         (corpus/real-servers/, `normfuzz conform --inputs`, the same baseline). Cells: **pass**; \
         **known** (a finding the runtime's baseline lists, with why it is real); **NEW** (a \
         finding the baseline does not list: the run fails); *known, not reached* (listed, not \
         hit by this run); **STALE** (e2e: listed, the case ran, the finding is gone: the run \
         fails); n/a (not judged on the ops the shim offers, or by the e2e judge). Each number \
         links to a \
         finding file (a count without links: those cases are filed under another rule of the row); \
         cases/s is the whole campaign (generation, shim, reference, judges, \
         shrinking); steady, the rate over the batches during which no job was shrinking \
         (each new gate finding is shrunk once, one case at a time, for up to 10 s, which \
         dominates a short campaign; known findings and divergences are not shrunk); harness \
         CPU, the harness's share of the campaign's CPU (its own against the shim processes'); \
         runtime coverage, the lines and branches of the \
         functions its `runtime.toml` names (`coverage`) that the campaign reached, as its shim \
         reports them (the SUT protocol's coverage extension; none: the shim does not report \
         it).\n\n| runtime | cases | cases/s | steady cases/s | harness CPU | divergent | runtime \
         coverage |"
    );
    for rule in &rules {
        out.push_str(&format!(" {rule} |"));
    }
    out.push_str("\n|---|---:|---:|---:|---:|---:|---|");
    out.push_str(&"---|".repeat(rules.len()));
    out.push('\n');
    for row in rows {
        out.push_str(&format!("| {} |", row.label));
        if let Some(err) = &row.error {
            let first = err.lines().next().unwrap_or("").replace('|', "\\|");
            out.push_str(&format!(" not run: {first} |"));
            // The columns after `cases`: cases/s, steady, harness CPU, divergent, coverage.
            out.push_str(&" |".repeat(rules.len() + 5));
            out.push('\n');
            continue;
        }
        let judging = row
            .steady_rate
            .map_or_else(|| "–".to_string(), |r| format!("{r:.0}"));
        let cpu = row
            .harness_cpu
            .map_or_else(|| "–".to_string(), |share| format!("{:.0}%", share * 100.0));
        out.push_str(&format!(
            " {} | {:.0} | {judging} | {cpu} | {} | {} |",
            row.cases,
            row.cases_per_second(),
            row.divergent,
            row.coverage.as_deref().unwrap_or("none")
        ));
        for rule in &rules {
            let cell = row.cells.iter().find(|(r, _)| r == rule).map(|(_, c)| c);
            out.push_str(&format!(" {} |", cell_markdown(cell)));
        }
        out.push('\n');
    }
    out.push_str("\n| runtime | package | function under test |\n|---|---|---|\n");
    for row in rows {
        out.push_str(&format!(
            "| {} | `{}` | {} |\n",
            row.label, row.package, row.function
        ));
    }
    if rows.iter().any(|r| !r.reasons.is_empty()) {
        out.push_str("\n## Known findings, verified in the runtime's code\n\n");
        for row in rows {
            for r in &row.reasons {
                out.push_str(&format!(
                    "- {} {} [{}, `{}`]: {}\n",
                    row.label,
                    r.rule,
                    r.class.as_str(),
                    r.cause,
                    r.reason
                ));
            }
        }
    }
    let mut page = distinct_bugs(rows);
    page.push_str(&out);
    page
}

/// Per runtime (its unit and e2e rows together), its distinct bugs: each cause once, with the
/// rules and levels it breaks and the harm (the first sentence of its first entry's reason);
/// then how many entries are hardening or spec. What the matrix page leads with.
pub fn distinct_bugs(rows: &[Row]) -> String {
    let mut out = String::from(
        "# Distinct bugs per runtime\n\nEach baseline entry carries its impact class and root \
         cause, read in the runtime's code: **bug** (a harm the runtime's own users suffer), \
         hardening (the rule's premise is missing there, the input breaks the MCP schema and is \
         refused whole, or a later layer refuses it), spec (the same information in another \
         form). One cause may break several rules.\n",
    );
    let mut packages: Vec<&str> = rows.iter().map(|r| r.package.as_str()).collect();
    packages.dedup();
    for package in packages {
        let entries: Vec<(&Row, &Reason)> = rows
            .iter()
            .filter(|r| r.package == package)
            .flat_map(|row| row.reasons.iter().map(move |r| (row, r)))
            .collect();
        if entries.is_empty() {
            continue;
        }
        let mut causes: Vec<&str> = Vec::new();
        for (_, r) in entries.iter().filter(|(_, r)| r.class == Class::Bug) {
            if !causes.contains(&r.cause.as_str()) {
                causes.push(&r.cause);
            }
        }
        let count = |class| entries.iter().filter(|(_, r)| r.class == class).count();
        out.push_str(&format!(
            "\n## {package}: {} bugs ({} entries), {} hardening, {} spec\n\n",
            causes.len(),
            count(Class::Bug),
            count(Class::Hardening),
            count(Class::Spec)
        ));
        for cause in causes {
            let of_cause: Vec<&(&Row, &Reason)> = entries
                .iter()
                .filter(|(_, r)| r.class == Class::Bug && r.cause == cause)
                .collect();
            let mut rules: Vec<String> = of_cause
                .iter()
                .map(|(row, r)| {
                    let level = if row.label.ends_with("(e2e)") {
                        "e2e "
                    } else {
                        ""
                    };
                    format!("{level}{}", r.rule.split(' ').next().unwrap_or(&r.rule))
                })
                .collect();
            rules.dedup();
            let harm = first_sentence(&of_cause[0].1.reason);
            out.push_str(&format!("- `{cause}` ({}): {harm}\n", rules.join(", ")));
        }
    }
    out.push('\n');
    out
}

/// Up to the first sentence's end (or 240 characters), on a character boundary; "e.g." and
/// "i.e." end no sentence.
fn first_sentence(text: &str) -> String {
    let end = text
        .match_indices(". ")
        .map(|(i, _)| i)
        .find(|&i| !text[..i].ends_with("e.g") && !text[..i].ends_with("i.e"))
        .map_or(text.len(), |i| i + 1);
    let end = (0..=end.min(240))
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    let cut = &text[..end];
    if end < text.len() && !cut.ends_with('.') {
        format!("{cut}…")
    } else {
        cut.to_string()
    }
}

fn cell_markdown(cell: Option<&Cell>) -> String {
    let Some(cell) = cell else {
        return State::NotApplicable.as_str().into();
    };
    let word = match cell.state {
        State::New => "**NEW**".to_string(),
        State::Known => "known".to_string(),
        State::NotReached => "*known, not reached*".to_string(),
        State::Stale => "**STALE**".to_string(),
        other => other.as_str().to_string(),
    };
    if cell.hits == 0 {
        return word;
    }
    // Cases that broke the rule, then one link per finding file. A case that breaks several
    // rules is shrunk into one finding, under its first rule: a count without a link means every
    // case of this rule is filed under another rule of the same row.
    let links: Vec<String> = cell
        .findings
        .iter()
        .enumerate()
        .map(|(i, file)| format!(" [{}]({file})", i + 1))
        .collect();
    format!("{word} ({} cases){}", cell.hits, links.concat())
}

pub fn to_json(rows: &[Row], date: &str, command: &str) -> Value {
    json!({
        "kind": "matrix",
        "date": date,
        "command": command,
        "rules": columns(rows),
        "runtimes": rows.iter().map(|row| json!({
            "runtime": row.label,
            "package": row.package,
            "function": row.function,
            "cases": row.cases,
            "elapsedMs": row.elapsed_ms,
            "casesPerSecond": (row.cases_per_second() * 10.0).round() / 10.0,
            "steadyCasesPerSecond": row.steady_rate,
            "harnessCpuShare": row.harness_cpu,
            "divergent": row.divergent,
            "coverage": row.coverage,
            "error": row.error,
            "green": row.green(),
            "cells": row.cells.iter().map(|(rule, c)| (rule.clone(), json!({
                "state": c.state.as_str(),
                "hits": c.hits,
                "findings": c.findings,
            }))).collect::<serde_json::Map<_, _>>(),
            "known": row.reasons.iter().map(|r| json!({
                "rule": r.rule, "class": r.class.as_str(), "cause": r.cause, "reason": r.reason,
            })).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}
