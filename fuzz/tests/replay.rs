//! Replays every checked-in fuzz input (seeds under `corpus/fuzz/<target>/`, minimized crashes
//! under `corpus/regressions/fuzz/<target>/`) through its target function, on stable and
//! without libFuzzer: a stored crash that still reproduces fails this test. Also checks that
//! `normfuzz_fuzz::TARGETS` are the `[[bin]]` entries of `fuzz/Cargo.toml`, the one list of
//! fuzz targets that build.sh and xtask read.

use std::path::Path;

use normfuzz::fs::visible_files;

#[test]
fn every_fuzz_corpus_file_passes_its_target() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus");
    let mut seeds = 0;
    for (name, target) in normfuzz_fuzz::TARGETS {
        for dir in [
            root.join("fuzz").join(name),
            root.join("regressions/fuzz").join(name),
        ] {
            for file in visible_files(&dir) {
                let data =
                    std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
                let outcome = std::panic::catch_unwind(|| target(&data));
                assert!(
                    outcome.is_ok(),
                    "{name}: {} fails its target",
                    file.display()
                );
                seeds += 1;
            }
        }
    }
    assert!(
        seeds >= normfuzz_fuzz::TARGETS.len() * 3,
        "fuzz corpus missing? replayed {seeds} files"
    );
}

#[test]
fn targets_are_the_cargo_bins() {
    let manifest =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"))
            .expect("fuzz/Cargo.toml");
    // The `name` of each `[[bin]]` table, in order.
    let mut bins = Vec::new();
    let mut in_bin = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_bin = line == "[[bin]]";
        } else if let Some(name) = line.strip_prefix("name = ").filter(|_| in_bin) {
            bins.push(name.trim_matches('"'));
        }
    }
    let targets: Vec<&str> = normfuzz_fuzz::TARGETS.iter().map(|(n, _)| *n).collect();
    assert_eq!(
        targets, bins,
        "normfuzz_fuzz::TARGETS and fuzz/Cargo.toml's [[bin]] entries"
    );
}
