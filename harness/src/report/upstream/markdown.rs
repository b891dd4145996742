//! `normfuzz upstream`'s bug report: one finding as Markdown for the runtime's own tracker,
//! self-contained (no normfuzz needed to read or reproduce it). Text from the run is in code
//! spans and fenced blocks (`markdown::code`, `fenced`), JSON is ASCII-only so invisible
//! characters show as escapes.

use std::fmt::Write as _;

use super::{Repro, RuntimeFile, Upstream, ascii_json};
use crate::campaign::impact::{Class, Impact};
use crate::report::markdown::{code, fenced};

/// The Markdown report: title, the harm first (the finding's impact: what the runtime's users
/// suffer, or its class when drafted though it is not a bug), the rule in plain words
/// (`Rule::summary`), the minimal input, what the model got, what it should get, and the repro
/// with its install line.
pub fn upstream_markdown(
    finding: &Upstream,
    impact: &Impact,
    runtime: &RuntimeFile,
    repro: &Repro,
) -> String {
    let rule = finding.rule;
    let mut md = String::new();
    let _ = writeln!(
        md,
        "# {}@{}: an MCP tool result breaks {rule}: {}\n",
        runtime.package,
        runtime.version,
        rule.summary()
    );
    let _ = match impact.class {
        Class::Bug => writeln!(md, "**Harm**: {}.\n", capitalized(&impact.why)),
        class => writeln!(
            md,
            "**Impact class: {class}**, not a bug of this runtime (drafted on request): {}.\n",
            impact.why
        ),
    };
    let packages: Vec<String> = runtime.packages().iter().map(|p| code(p)).collect();
    let _ = writeln!(
        md,
        "What the model gets from an MCP tool result breaks this rule:\n\n> **{rule}**: {}.\n\n\
         - packages: {}\n- code path: {}\n- what was seen: {}\n",
        rule.summary(),
        packages.join(", "),
        runtime.function,
        code(&finding.seen),
    );
    let (input_note, got_note) = if finding.end_to_end {
        (
            "The MCP `CallToolResult` the server returned in a real agent turn",
            "What the judge found in the request the runtime sent the provider",
        )
    } else {
        (
            "The MCP `CallToolResult` the server returns (already minimized)",
            "The runtime's output in the terms of the text and image blocks a provider request \
             carries",
        )
    };
    let _ = writeln!(
        md,
        "## Minimal input\n\n{input_note}:\n\n{}\n",
        fenced("json", &ascii_json(&finding.input, true))
    );
    let _ = writeln!(
        md,
        "## What the model got\n\n{got_note} (the repro below prints the runtime's output in its \
         own form):\n\n{}\n",
        fenced("json", &ascii_json(&finding.got, true))
    );
    let _ = writeln!(
        md,
        "## What it should get\n\nWhat a normalizer that keeps the rule gives for the same input \
         (the reference normalizer of normfuzz; wording of placeholders may differ):\n\n{}\n",
        fenced("json", &ascii_json(&finding.expected, true))
    );
    let _ = writeln!(
        md,
        "## Reproduce\n\nNeeds only the pinned packages. In an empty folder:\n\n{}\n\nthen save \
         this as `{}` there and run it; it prints what the model gets:\n\n{}",
        fenced("sh", runtime.install_line()),
        repro.file_name,
        fenced(repro.language, repro.script.trim_end()),
    );
    md
}

/// `text` with its first letter upper-cased.
fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_uppercase().chain(chars).collect()
    })
}
