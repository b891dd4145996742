//! The independent oracle: judges a SUT's answer from its input and output alone.
//!
//! Architecture invariant: nothing under `oracle/` uses `crate::reference`. A bug shared by the
//! reference and its judge hides itself, so the judges read the rules their own way (regex
//! Unicode classes, their own IANA rows, the mock providers' hand-written decoders); the layout
//! test in `harness/tests/it` fails on a forbidden import. The reference's answer reaches a
//! judge only as data, to find where the SUT is more permissive and to classify differences.

#[cfg(feature = "runner")]
mod block_features;
pub mod directive;
pub mod image;
pub mod judge;
// Read by the campaign only (cause signatures, impact classes), and jsonschema is a `runner`
// dependency: the libFuzzer build of the oracle goes without both.
#[cfg(feature = "runner")]
pub mod mcp_schema;
pub mod path;
pub mod providers;
#[cfg(feature = "runner")]
pub mod signature;
pub mod url;
