//! normfuzz: the reference normalizer (executable spec) and the harness around it.
//!
//! See `ARCHITECTURE.md` at the repository root for the data path and where each rule id lives.

pub mod cases;
pub mod coerce;
pub mod conform;
pub mod directive_check;
pub mod e2e;
pub mod embed;
pub mod generate;
pub mod image;
pub mod json_text;
pub mod judge;
pub mod mcp;
pub mod media_policy;
pub mod neutralize;
pub mod protocol;
pub mod reference;
pub mod reply;
pub mod report;
pub mod retry;
pub mod sample_images;
pub mod sse;
pub mod stream;
pub mod sut;
pub mod turn;
pub mod url_policy;
pub mod vision;
