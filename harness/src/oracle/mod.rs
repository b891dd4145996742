//! The independent oracle: judges a SUT's answer from its input and output alone.
//!
//! Architecture invariant: nothing under `oracle/` uses `crate::reference`. A bug shared by the
//! reference and its judge hides itself, so the judges use their own readings of the rules (and
//! the mock providers' hand-written decoders); `tests/it/layout.rs` fails on a forbidden import.
//! The reference's answer reaches a judge only as data, to classify differences.

pub mod directive;
pub mod judge;
