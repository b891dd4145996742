//! normfuzz: the reference normalizer (executable spec) and the harness around it.
//!
//! See `ARCHITECTURE.md` at the repository root for the data path and where each rule id lives.

pub mod url_policy;
