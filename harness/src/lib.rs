//! normfuzz: the reference normalizer (executable spec) and the harness around it.
//!
//! See `ARCHITECTURE.md` at the repository root for the data path and where each rule id lives.
//! The runner modules (generators, SUT driver, conformance loop, reports, e2e) sit behind the
//! default `runner` feature: the fuzz crate builds without it, and so without their dependencies.

#[cfg(feature = "runner")]
pub mod cases;
pub mod coerce;
#[cfg(feature = "runner")]
pub mod conform;
pub mod directive_check;
#[cfg(feature = "runner")]
pub mod e2e;
pub mod embed;
#[cfg(feature = "runner")]
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
#[cfg(feature = "runner")]
pub mod report;
pub mod retry;
pub mod sample_images;
pub mod sse;
pub mod stream;
#[cfg(feature = "runner")]
pub mod sut;
pub mod turn;
pub mod url_policy;
pub mod vision;
