//! Architecture invariants the compiler cannot see: the oracle never reaches the reference.

use std::path::{Path, PathBuf};

/// Paths by which a module can reach the reference normalizer.
const FORBIDDEN: [&str; 3] = ["crate::reference", "normfuzz::reference", "super::reference"];

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
                        .filter(|l| FORBIDDEN.iter().any(|f| l.contains(f)) || l.contains("reference::"))
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
    assert!(found.is_empty(), "the oracle reaches the reference: {found:#?}");
}

#[test]
fn the_check_catches_a_forbidden_import() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir(dir.path().join("judge")).expect("subfolder");
    std::fs::write(dir.path().join("judge/bad.rs"), "use crate::reference::image::validate_image;\n")
        .expect("write");
    std::fs::write(dir.path().join("ok.rs"), "// crate::reference in a comment is fine\nuse crate::rule::Rule;\n")
        .expect("write");
    let found = forbidden_imports(dir.path());
    assert_eq!(found.len(), 1, "{found:?}");
}
