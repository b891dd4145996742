//! A finding's impact class. `std` and `serde` only: `xtask` compiles this very file
//! (`#[path]` in `xtask/src/matrix/table.rs`) to read baselines' classes without depending on
//! the `normfuzz` crate.

use serde::{Deserialize, Serialize};

/// What a finding means to the runtime that has it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Class {
    Bug,
    Hardening,
    Spec,
}

impl Class {
    pub const ALL: [Class; 3] = [Class::Bug, Class::Hardening, Class::Spec];

    pub fn as_str(self) -> &'static str {
        match self {
            Class::Bug => "bug",
            Class::Hardening => "hardening",
            Class::Spec => "spec",
        }
    }

    /// `bug`, `hardening` or `spec`, as `--fail-on` takes them.
    pub fn parse(text: &str) -> Result<Class, String> {
        Class::ALL
            .into_iter()
            .find(|c| c.as_str() == text.trim())
            .ok_or_else(|| format!("unknown impact class {text:?} (bug, hardening, spec)"))
    }
}

impl std::fmt::Display for Class {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
