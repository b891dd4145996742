//! Known findings of one runtime version (`<runtime>-<version>.baseline.toml`), as in the MCP
//! conformance suite's expected-failures file: a finding listed there keeps the run green, a new
//! one fails it, and a listed one that no longer reproduces is stale and fails it too, so the
//! baseline can only shrink as the runtime gets fixed.

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::{Context, Result};
use serde::Deserialize;

use super::checks::Layer;
use crate::campaign::impact::Class;

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
    /// Where the finding shows: a payload-only finding (the channel refuses what the API still
    /// returns) stays listed as defence in depth, with `delivery` saying what the channel did.
    pub layer: Layer,
    /// The impact class read in the runtime's code (`campaign::impact`).
    pub class: Class,
    /// The root cause: the runtime's function and behaviour, shared by its consequences.
    pub cause: String,
    pub reason: String,
    /// For a payload or model finding: what reached the user through a channel (`--via channel`).
    #[serde(default)]
    pub delivery: Option<String>,
}

impl Baseline {
    pub fn load(path: &Path) -> Result<Baseline> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read baseline {}", path.display()))?;
        toml::from_str(&text).with_context(|| format!("invalid baseline {}", path.display()))
    }

    pub fn is_known(&self, case: &str, rule: &str, layer: Layer) -> bool {
        self.entry(case, rule, layer).is_some()
    }

    /// The entry that knows this finding.
    pub fn entry(&self, case: &str, rule: &str, layer: Layer) -> Option<&Known> {
        self.known
            .iter()
            .find(|k| k.case == case && k.rule == rule && k.layer == layer)
    }

    /// Entries for cases that ran (and finished), on a layer this run judged, whose finding did
    /// not show up.
    pub fn stale<'a>(
        &'a self,
        ran: &BTreeSet<&str>,
        layers: &[Layer],
        found: &BTreeSet<(&str, &str, Layer)>,
    ) -> Vec<&'a Known> {
        self.known
            .iter()
            .filter(|k| {
                ran.contains(k.case.as_str())
                    && layers.contains(&k.layer)
                    && !found.contains(&(k.case.as_str(), k.rule.as_str(), k.layer))
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
            "[[known]]\ncase = \"a\"\nrule = \"F5\"\nlayer = \"model\"\nclass = \"bug\"\n\
             cause = \"c\"\nreason = \"r\"\n\
             [[known]]\ncase = \"b\"\nrule = \"S3\"\nlayer = \"payload\"\nclass = \"hardening\"\n\
             cause = \"d\"\nreason = \"r\"\ndelivery = \"refused\"\n",
        )
        .unwrap();
        assert!(baseline.is_known("a", "F5", Layer::Model));
        assert!(!baseline.is_known("a", "S1", Layer::Model));
        assert!(
            !baseline.is_known("b", "S3", Layer::Delivered),
            "layers are apart"
        );
        let ran = BTreeSet::from(["a", "b"]);
        let found = BTreeSet::from([("a", "F5", Layer::Model)]);
        let payload_run = [Layer::Model, Layer::Payload];
        let stale = baseline.stale(&ran, &payload_run, &found);
        assert_eq!(stale.len(), 1);
        assert_eq!(stale[0].case, "b");
        // A case that did not run is not stale, nor an entry of a layer the run did not judge.
        assert!(
            baseline
                .stale(&BTreeSet::from(["a"]), &payload_run, &found)
                .is_empty()
        );
        let channel_run = [Layer::Model, Layer::Delivered];
        assert!(baseline.stale(&ran, &channel_run, &found).is_empty());
        assert!(toml::from_str::<Baseline>("[[known]]\ncase = \"a\"\n").is_err());
        assert!(
            toml::from_str::<Baseline>("[[known]]\ncase = \"a\"\nrule = \"F5\"\nreason = \"r\"\n")
                .is_err(),
            "the layer is required"
        );
    }
}
