//! Case generators: the typed MCP model, sample images, the proptest strategies that draw op
//! inputs (valid, near-valid and hostile) for campaigns and property tests, and the corner
//! families (`corners`) that both those strategies and the fuzz targets draw from.

pub mod bench_docs;
pub mod cases;
pub mod corners;
pub mod mcp;
pub mod mcp_results;
pub mod sample_images;
