//! normfuzz: the reference normalizer (executable spec) and the harness around it.
//!
//! The modules are the data path (see `ARCHITECTURE.md` at the repository root):
//! `generate` draws cases, `reference` answers them as the spec says, `protocol` carries them to
//! and from a system under test, `oracle` judges the answers without the reference's code, and
//! `runner` drives campaigns, shrinks failures, runs real runtimes end to end and writes reports.
//! Only `runner` needs the `runner` feature (tokio, clap, ...): the fuzz crate builds without it.

pub mod excerpt;
pub mod fs;
pub mod generate;
pub mod json_scan;
pub mod oracle;
pub mod protocol;
pub mod reference;
pub mod rule;
#[cfg(feature = "runner")]
pub mod runner;
