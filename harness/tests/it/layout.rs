//! Architecture invariants the compiler cannot see: the oracle never reaches the reference.

use std::path::{Path, PathBuf};

/// Paths by which a module can reach the reference normalizer.
const FORBIDDEN: [&str; 3] = [
    "crate::reference",
    "normfuzz::reference",
    "super::reference",
];

/// Every `(file, line)` under `dir` that names the reference.
fn forbidden_imports(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("readable source folder") {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let source = std::fs::read_to_string(&path).expect("readable source");
                found.extend(
                    source
                        .lines()
                        .filter(|l| {
                            FORBIDDEN.iter().any(|f| l.contains(f)) || l.contains("reference::")
                        })
                        .filter(|l| !l.trim_start().starts_with("//"))
                        .map(|l| (path.clone(), l.to_string())),
                );
            }
        }
    }
    found
}

#[test]
fn the_oracle_does_not_import_the_reference() {
    let oracle = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/oracle");
    let found = forbidden_imports(&oracle);
    assert!(
        found.is_empty(),
        "the oracle reaches the reference: {found:#?}"
    );
}

#[test]
fn the_check_catches_a_forbidden_import() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir(dir.path().join("judge")).expect("subfolder");
    std::fs::write(
        dir.path().join("judge/bad.rs"),
        "use crate::reference::image::validate_image;\n",
    )
    .expect("write");
    std::fs::write(
        dir.path().join("ok.rs"),
        "// crate::reference in a comment is fine\nuse crate::rule::Rule;\n",
    )
    .expect("write");
    let found = forbidden_imports(dir.path());
    assert_eq!(found.len(), 1, "{found:?}");
}

/// ARCHITECTURE.md's rule table has one row per rule, naming the ops `judged_rules` lists.
#[test]
fn the_architecture_rule_table_matches_the_judges() {
    use normfuzz::oracle::judge::judged_rules;
    use normfuzz::protocol::Op;
    use normfuzz::rule::Rule;

    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../ARCHITECTURE.md");
    let text = std::fs::read_to_string(&path).expect("ARCHITECTURE.md");
    let table = text
        .split("<!-- rule table: checked by tests/it/layout.rs -->")
        .nth(1)
        .expect("the rule table marker");
    let rows: Vec<Vec<&str>> = table
        .lines()
        .skip(3)
        .take_while(|l| l.starts_with('|'))
        .map(|l| l.trim_matches('|').split(" | ").map(str::trim).collect())
        .collect();
    let ids: Vec<&str> = rows.iter().map(|r| r[0]).collect();
    let want: Vec<&str> = Rule::ALL.iter().map(|r| r.as_str()).collect();
    assert_eq!(ids, want, "one row per rule, in the spec's order");
    for row in &rows {
        let rule: Rule = row[0].parse().expect("rule id");
        let ops: Vec<&str> = Op::ALL
            .iter()
            .filter(|op| judged_rules(**op).contains(&rule))
            .map(|op| op.as_str())
            .collect();
        if ops.is_empty() {
            assert!(
                row[1] == "every op" || row[1].starts_with('—'),
                "{rule}: judged on no op, the row says {:?}",
                row[1]
            );
        } else {
            assert_eq!(row[1], ops.join(", "), "{rule}: ops column");
        }
        assert!(
            row.len() == 4 && !row[2].is_empty() && !row[3].is_empty(),
            "{rule}: {row:?}"
        );
    }
}
