//! normfuzz: the reference normalizer (executable spec) and the harness around it.
//!
//! See `ARCHITECTURE.md` at the repository root for the data path and where each rule id lives.

pub mod coerce;
pub mod directive_check;
pub mod generate;
pub mod image;
pub mod json_text;
pub mod mcp;
pub mod neutralize;
pub mod sample_images;
pub mod url_policy;
