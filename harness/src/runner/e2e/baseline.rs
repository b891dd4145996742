//! Known findings of one runtime version (`<runtime>-<version>.baseline.toml`), as in the MCP
//! conformance suite's expected-failures file: a finding listed there keeps the run green, a new
//! one fails it, and a listed one that no longer reproduces is stale and fails it too, so the
//! baseline can only shrink as the runtime gets fixed.

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::{Context, Result};
use serde::Deserialize;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Baseline {
    #[serde(default)]
    pub known: Vec<Known>,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Known {
    pub case: String,
    pub rule: String,
    pub reason: String,
}

impl Baseline {
    pub fn load(path: &Path) -> Result<Baseline> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read baseline {}", path.display()))?;
        toml::from_str(&text).with_context(|| format!("invalid baseline {}", path.display()))
    }

    pub fn is_known(&self, case: &str, rule: &str) -> bool {
        self.known.iter().any(|k| k.case == case && k.rule == rule)
    }

    /// Entries for cases that ran (and finished) but whose finding did not show up.
    pub fn stale<'a>(
        &'a self,
        ran: &BTreeSet<&str>,
        found: &BTreeSet<(&str, &str)>,
    ) -> Vec<&'a Known> {
        self.known
            .iter()
            .filter(|k| {
                ran.contains(k.case.as_str())
                    && !found.contains(&(k.case.as_str(), k.rule.as_str()))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_new_and_stale() {
        let baseline: Baseline = toml::from_str(
            "[[known]]\ncase = \"a\"\nrule = \"F5\"\nreason = \"r\"\n[[known]]\ncase = \"b\"\nrule = \"S3\"\nreason = \"r\"\n",
        )
        .unwrap();
        assert!(baseline.is_known("a", "F5"));
        assert!(!baseline.is_known("a", "S1"));
        let ran = BTreeSet::from(["a", "b"]);
        let found = BTreeSet::from([("a", "F5")]);
        let stale = baseline.stale(&ran, &found);
        assert_eq!(stale.len(), 1);
        assert_eq!(stale[0].case, "b");
        // A case that did not run is not stale.
        assert!(baseline.stale(&BTreeSet::from(["a"]), &found).is_empty());
        assert!(toml::from_str::<Baseline>("[[known]]\ncase = \"a\"\n").is_err());
    }
}
