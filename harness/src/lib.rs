//! normfuzz: the reference normalizer (executable spec) and the harness around it.
//!
//! The modules are the data path (see `ARCHITECTURE.md` at the repository root):
//! `generate` draws cases, `reference` answers them as the spec says, `protocol` carries them to
//! and from a system under test, `oracle` judges the answers without the reference's code. Two
//! data paths run them: `campaign` (through `sut`, the SUT driver: shrinks failures, classifies
//! them against baselines) and `e2e` (real runtimes, one turn each); `report` writes what both
//! found. Only those four need the `runner` feature (tokio, clap, ...): the fuzz crate builds
//! without it.

#[cfg(feature = "runner")]
pub mod campaign;
#[cfg(feature = "runner")]
pub mod e2e;
pub mod excerpt;
pub mod fs;
pub mod generate;
pub mod json_scan;
pub mod oracle;
pub mod protocol;
pub mod reference;
#[cfg(feature = "runner")]
pub mod report;
pub mod rule;
#[cfg(feature = "runner")]
pub mod sut;
