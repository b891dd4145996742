//! The runtime's own coverage in the reports (the protocol's coverage extension): one line of
//! figures for the summary and the page's facts, and the page's section with each unit's
//! unreached source lines. A SUT without the extension is said to report none.

use std::fmt::Write as _;

use crate::protocol::coverage::{UnitCoverage, totals};
use crate::report::escape::text;

/// Source lines shown per unit, and bytes per line: a unit is a function or a file, and a
/// minified bundle's line can be the whole file.
const SHOWN_LINES: usize = 400;
const LINE_KEEP: usize = 200;
/// A source file larger than this is not read for the page.
const SOURCE_MAX: u64 = 32 << 20;

/// What a report says when the SUT offers no coverage.
pub const NONE: &str = "not reported: the SUT does not offer the protocol's coverage extension \
                        (docs/spec/sut-protocol.md, Coverage)";

/// "L of N lines, B of M branches, U units" (`?` for a branch count the SUT never learned).
pub fn figures(units: &[UnitCoverage]) -> String {
    let (lines_reached, lines, branches_reached, branches) = totals(units);
    format!(
        "{lines_reached} of {lines} lines, {branches_reached} of {} branches in {} unit{}",
        branches.map_or("?".to_string(), |b| b.to_string()),
        units.len(),
        if units.len() == 1 { "" } else { "s" }
    )
}

/// The summary's paragraph: the figures, then one line per unit.
pub fn markdown(coverage: Option<&[UnitCoverage]>) -> String {
    let Some(units) = coverage else {
        return format!("Runtime coverage: {NONE}.\n");
    };
    let mut md = format!("Runtime coverage: {}\n\n", figures(units));
    for unit in units {
        let _ = writeln!(
            md,
            "- `{}`: {}",
            unit.name.replace('`', "'"),
            figures(std::slice::from_ref(unit))
        );
    }
    md
}

/// The page's section: a table of the units, and each unit's unreached lines with their source.
pub fn html(coverage: Option<&[UnitCoverage]>) -> String {
    let mut out = String::from("<section><h2>Runtime coverage</h2>");
    let Some(units) = coverage else {
        let _ = write!(out, "<p>{}.</p></section>", text(NONE));
        return out;
    };
    out.push_str(
        r#"<table><thead><tr><th class="rule">unit</th><th>lines</th><th>branches</th><th class="rule">file</th></tr></thead><tbody>"#,
    );
    for u in units {
        let _ = write!(
            out,
            r#"<tr><td class="rule">{}</td><td class="num">{} / {}</td><td class="num">{} / {}</td><td class="rule">{}</td></tr>"#,
            text(&u.name),
            u.lines_reached,
            u.lines,
            u.branches_reached,
            u.branches.map_or("?".into(), |b| b.to_string()),
            text(&u.file),
        );
    }
    out.push_str("</tbody></table>");
    for u in units.iter().filter(|u| !u.unreached.is_empty()) {
        let _ = write!(
            out,
            "<h3>{}: lines no case reached</h3>{}",
            text(&u.name),
            unreached_source(u)
        );
    }
    out.push_str("</section>");
    out
}

/// `<pre>` of the unit's unreached lines as `N: source`, read from its file when this machine
/// has it (else the numbers alone).
fn unreached_source(unit: &UnitCoverage) -> String {
    let source = std::fs::metadata(&unit.file)
        .ok()
        .filter(|m| m.len() <= SOURCE_MAX)
        .and_then(|_| std::fs::read_to_string(&unit.file).ok());
    let lines: Vec<&str> = source
        .as_deref()
        .map_or(Vec::new(), |s| s.lines().collect());
    let mut shown = String::new();
    for &n in unit.unreached.iter().take(SHOWN_LINES) {
        let line = lines
            .get((n as usize).wrapping_sub(1))
            .copied()
            .unwrap_or("");
        let _ = writeln!(
            shown,
            "{n:>6}: {}",
            crate::excerpt::bounded(line, LINE_KEEP)
        );
    }
    if unit.unreached.len() > SHOWN_LINES {
        let _ = writeln!(shown, "… {} more", unit.unreached.len() - SHOWN_LINES);
    }
    format!("<pre>{}</pre>", text(&shown))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(file: &str) -> UnitCoverage {
        UnitCoverage {
            name: "f".into(),
            file: file.into(),
            lines: 3,
            lines_reached: 2,
            branches: None,
            branches_reached: 1,
            unreached: vec![2],
        }
    }

    #[test]
    fn pages_show_figures_and_the_unreached_source() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("f.py");
        std::fs::write(&file, "def f(x):\n    return <x>\n    pass\n").expect("write");
        let units = [unit(&file.to_string_lossy())];
        assert_eq!(figures(&units), "2 of 3 lines, 1 of ? branches in 1 unit");
        assert!(markdown(Some(&units)).contains("- `f`: 2 of 3 lines"));
        let page = html(Some(&units));
        assert!(page.contains("     2:     return &lt;x&gt;"), "{page}");
        assert!(!page.contains("def f"), "{page}");
        assert!(html(None).contains("does not offer"));
        assert!(markdown(None).contains("does not offer"));
        // A file this machine does not have: the line numbers alone.
        assert!(html(Some(&[unit("/nonexistent/f.py")])).contains("     2: \n"));
    }
}
