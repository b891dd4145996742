//! The fuzz targets: the `[[bin]]` entries of `fuzz/Cargo.toml`, the one list (build.sh reads
//! it too, and `normfuzz_fuzz::TARGETS` is tested against it).

use std::path::Path;

use anyhow::{Context, Result, bail, ensure};

/// Every target, in `fuzz/Cargo.toml`'s order.
pub fn all(root: &Path) -> Result<Vec<String>> {
    let manifest = root.join("fuzz/Cargo.toml");
    let text = std::fs::read_to_string(&manifest)
        .with_context(|| format!("reading {}", manifest.display()))?;
    let targets = bin_names(&text);
    ensure!(
        !targets.is_empty(),
        "{} has no [[bin]] target",
        manifest.display()
    );
    Ok(targets)
}

/// `which` (a target name, or `all`) as a list of targets.
pub fn select(root: &Path, which: &str) -> Result<Vec<String>> {
    let targets = all(root)?;
    if which == "all" {
        return Ok(targets);
    }
    match targets.iter().find(|t| *t == which) {
        Some(t) => Ok(vec![t.clone()]),
        None => bail!("unknown fuzz target {which:?}; one of {targets:?} or `all`"),
    }
}

/// The `name = "..."` of each `[[bin]]` table of a Cargo manifest, in order.
fn bin_names(manifest: &str) -> Vec<String> {
    let mut in_bin = false;
    let mut names = Vec::new();
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_bin = line == "[[bin]]";
        } else if in_bin
            && let Some((key, value)) = line.split_once('=')
            && key.trim() == "name"
        {
            names.push(value.trim().trim_matches('"').to_string());
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bin_names_in_order() {
        let manifest = "[package]\nname = \"normfuzz-fuzz\"\n\n[dependencies]\nname = \"x\"\n\n\
            [[bin]]\nname = \"coerce_bytes\"\npath = \"fuzz_targets/coerce_bytes.rs\"\n\n\
            [[bin]]\npath = \"fuzz_targets/retry.rs\"\nname = \"retry\"\n\n[features]\n";
        assert_eq!(bin_names(manifest), ["coerce_bytes", "retry"]);
    }

    /// Every target has its wrapper and its dictionary, and every wrapper is a target.
    #[test]
    fn the_workspace_targets_are_complete() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let targets = all(&root).expect("fuzz/Cargo.toml");
        for target in &targets {
            for file in [
                format!("fuzz/fuzz_targets/{target}.rs"),
                format!("fuzz/dicts/{target}.dict"),
            ] {
                assert!(root.join(&file).is_file(), "{target}: no {file}");
            }
        }
        let mut wrappers: Vec<String> = std::fs::read_dir(root.join("fuzz/fuzz_targets"))
            .expect("fuzz/fuzz_targets")
            .flatten()
            .filter_map(|e| Some(e.file_name().to_str()?.strip_suffix(".rs")?.to_string()))
            .collect();
        wrappers.sort();
        let mut sorted = targets.clone();
        sorted.sort();
        assert_eq!(
            wrappers, sorted,
            "fuzz/fuzz_targets/*.rs and the [[bin]] entries"
        );
        assert_eq!(select(&root, "neutralize").unwrap(), ["neutralize"]);
        assert!(select(&root, "nope").is_err());
    }
}
