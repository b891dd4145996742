//! `cargo xtask fuzz`, `cargo xtask planted-bug` and the fuzz smoke of `cargo xtask ci`.
//!
//! Every build of the libFuzzer targets goes through `.clusterfuzzlite/build.sh`, the script
//! ClusterFuzzLite runs, so the flags live in one place and CI proves that script works on
//! stable; its outputs (`$OUT/<target>`, `.dict`, `_seed_corpus.zip`) are what the runs use.
//! The targets are the `[[bin]]` entries of `fuzz/Cargo.toml` (`targets.rs`), and the figures
//! of a run (exec/s, coverage) are what `normfuzz fuzz-report` parsed from its log
//! (`report.rs`): xtask reads no libFuzzer log itself.
//!
//! One file per task: `build.rs` (build.sh), `run.rs` (`cargo xtask fuzz`), `smoke.rs` (the CI
//! smoke), `planted_bug.rs` (`cargo xtask planted-bug`).

mod build;
mod planted_bug;
mod report;
mod run;
mod smoke;
mod targets;

pub use build::Flavor;
pub use planted_bug::planted_bug;
pub use report::ReportTo;
pub use run::fuzz;
pub use smoke::{SMOKE_RUNS, smoke, smoke_build, smoke_runs};
