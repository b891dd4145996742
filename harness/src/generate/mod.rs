//! Case generators: the typed MCP model, sample images, and the proptest strategies that draw
//! op inputs (valid, near-valid and hostile) for campaigns and property tests.

pub mod cases;
pub mod mcp;
pub mod mcp_results;
pub mod sample_images;
