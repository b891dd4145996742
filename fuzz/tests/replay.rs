//! Replays every checked-in fuzz input (seeds under `corpus/fuzz/<target>/`, minimized crashes
//! under `corpus/regressions/fuzz/<target>/`) through its target function, on stable and
//! without libFuzzer: a stored crash that still reproduces fails this test.

use std::path::Path;

#[test]
fn every_fuzz_corpus_file_passes_its_target() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus");
    let mut seeds = 0;
    for (name, target) in normfuzz_fuzz::TARGETS {
        for dir in [
            root.join("fuzz").join(name),
            root.join("regressions/fuzz").join(name),
        ] {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            let mut files: Vec<_> = entries.flatten().map(|e| e.path()).collect();
            files.sort();
            for file in files {
                let hidden = file
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with('.'));
                if !file.is_file() || hidden {
                    continue;
                }
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
        seeds >= 6 * 3,
        "fuzz corpus missing? replayed {seeds} files"
    );
}
