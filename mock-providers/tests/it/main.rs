//! The crate's integration tests, in one binary (one link instead of one per file): each module
//! was a test crate of its own, and `common` holds their shared helpers.

mod common;
mod drift;
mod errors;
mod hostile_load;
mod http;
mod image;
mod load;
mod mcp_e2e;
mod mcp_http;
mod mcp_protocol;
mod props;
mod rules;
mod telegram;
