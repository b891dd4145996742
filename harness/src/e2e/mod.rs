//! End-to-end mode: a real agent runtime, installed from its registry and described by an
//! adapter file, run one turn per case against the mock providers and the mock MCP server, in a
//! loopback-only sandbox; what reached the model and what the runtime delivered are judged by
//! rule id and compared with the runtime version's baseline of known findings.

pub mod adapter;
pub mod baseline;
pub mod case;
pub mod cases;
pub mod checks;
pub mod driver;
pub mod fallback;
pub mod fallback_cases;
pub mod hostile;
pub mod install;
pub mod marker;
pub mod one_turn;
pub mod plant;
pub mod vision;
pub mod writes;
