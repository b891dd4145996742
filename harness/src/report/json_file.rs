//! A report's JSON files, written pretty and atomically and read back at any depth.

use std::path::Path;

use anyhow::{Context, Result};
use serde::Serialize;

use crate::fs::write_atomic;

/// Writes `value` as pretty JSON (indentation capped: `pretty`), atomically.
pub fn write_json(path: &Path, value: &impl Serialize) -> Result<()> {
    let mut bytes = super::pretty::to_vec(value)?;
    bytes.push(b'\n');
    Ok(write_atomic(path, &bytes)?)
}

/// Reads the JSON document in `path`, nested to any depth: a finding's minimal input may be as
/// deep as a generated one, past serde_json's recursion limit. Such a value may also be too
/// deep to drop recursively on an ordinary stack; the CLI runs on one sized for the deepest
/// generated input (`main.rs`).
pub fn read_json(path: &Path) -> Result<serde_json::Value> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    crate::protocol::json::parse_value(&bytes)
        .with_context(|| format!("{} is not JSON", path.display()))
}
