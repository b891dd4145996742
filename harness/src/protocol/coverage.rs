//! The protocol's coverage extension, version 1 (`docs/spec/sut-protocol.md`, "Coverage"): a
//! SUT that offers it lists its units (the functions or files its profile names, with their
//! lines and branch count) in the handshake, and each answer may carry what that request newly
//! reached. [`Reached`] folds those answers into the runtime's coverage, which every job's SUT
//! keeps and the campaign merges.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The extension version this harness reads; an offer of another version is ignored.
pub const VERSION: u64 = 1;

/// One unit a SUT measures: a named function (nested ones included) or a whole file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unit {
    pub name: String,
    /// The source file, as the SUT's machine names it (the report shows its unreached lines).
    pub file: String,
    /// The unit's lines that can run, 1-based.
    pub lines: Vec<u32>,
    /// Its branch count, or `None` when the SUT learns it as the run goes (`branchTotal`).
    pub branches: Option<u64>,
}

#[derive(Deserialize)]
struct Offer {
    version: u64,
    units: Vec<Unit>,
}

/// What one answer newly reached in one unit.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct UnitDelta {
    #[serde(default)]
    lines: Vec<u32>,
    #[serde(default)]
    branches: Vec<String>,
    branch_total: Option<u64>,
}

/// A runtime's coverage of its units: what the answers so far reached.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Reached {
    pub units: Vec<Unit>,
    pub lines: Vec<BTreeSet<u32>>,
    pub branches: Vec<BTreeSet<String>>,
    /// The branch count learned so far for units offered without one.
    pub branch_totals: Vec<Option<u64>>,
}

impl Reached {
    /// Nothing reached yet of the units a handshake's `coverage` offers; `None` for no offer, a
    /// malformed one or another version (the extension is optional: the run goes on without it).
    pub fn offered(offer: Option<&Value>) -> Option<Self> {
        let offer = Offer::deserialize(offer?).ok()?;
        if offer.version != VERSION || offer.units.is_empty() {
            return None;
        }
        let n = offer.units.len();
        Some(Self {
            branch_totals: offer.units.iter().map(|u| u.branches).collect(),
            units: offer.units,
            lines: vec![BTreeSet::new(); n],
            branches: vec![BTreeSet::new(); n],
        })
    }

    /// Folds in one answer's `coverage`: `{"<unit index>": {"lines", "branches", "branchTotal"?}}`;
    /// answers whether it reached a line or branch not reached before. Entries naming no offered
    /// unit, and malformed entries, are skipped: coverage only steers and reports, it never
    /// faults a SUT.
    pub fn fold(&mut self, delta: &Value) -> bool {
        let Some(units) = delta.as_object() else {
            return false;
        };
        let mut new = false;
        for (index, entry) in units {
            let (Ok(i), Ok(entry)) = (index.parse::<usize>(), UnitDelta::deserialize(entry)) else {
                continue;
            };
            if i >= self.units.len() {
                continue;
            }
            for line in entry.lines {
                new |= self.lines[i].insert(line);
            }
            for branch in entry.branches {
                new |= self.branches[i].insert(branch);
            }
            if let Some(total) = entry.branch_total {
                let known = &mut self.branch_totals[i];
                *known = Some(known.map_or(total, |k| k.max(total)));
            }
        }
        new
    }

    /// Adds what `other` (another job's SUT, of the same units) reached.
    pub fn merge(&mut self, other: &Reached) {
        if other.units != self.units {
            return;
        }
        for i in 0..self.units.len() {
            self.lines[i].extend(other.lines[i].iter().copied());
            self.branches[i].extend(other.branches[i].iter().cloned());
            self.branch_totals[i] = match (self.branch_totals[i], other.branch_totals[i]) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            };
        }
    }

    /// Lines and branches reached, over all units (the timeline's growth figures).
    pub fn counts(&self) -> (u64, u64) {
        let lines = self.lines.iter().map(|l| l.len() as u64).sum();
        let branches = self.branches.iter().map(|b| b.len() as u64).sum();
        (lines, branches)
    }

    /// The report's figures: per unit, lines and branches reached of all, and the unreached lines.
    pub fn report(&self) -> Vec<UnitCoverage> {
        self.units
            .iter()
            .enumerate()
            .map(|(i, unit)| UnitCoverage {
                name: unit.name.clone(),
                file: unit.file.clone(),
                lines: unit.lines.len() as u64,
                lines_reached: unit
                    .lines
                    .iter()
                    .filter(|l| self.lines[i].contains(l))
                    .count() as u64,
                branches: self.branch_totals[i],
                branches_reached: self.branches[i].len() as u64,
                unreached: unit
                    .lines
                    .iter()
                    .copied()
                    .filter(|l| !self.lines[i].contains(l))
                    .collect(),
            })
            .collect()
    }
}

/// One unit's coverage as `index.json` gives it (`docs/schemas/conform-index.schema.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UnitCoverage {
    pub name: String,
    pub file: String,
    pub lines: u64,
    pub lines_reached: u64,
    /// `None`: the SUT never learned the branch count (it offered none and reported none).
    pub branches: Option<u64>,
    pub branches_reached: u64,
    /// The unit's lines no answer reached, ascending.
    pub unreached: Vec<u32>,
}

/// The figures of several units, summed: (lines reached, lines, branches reached, branches
/// where known).
pub fn totals(units: &[UnitCoverage]) -> (u64, u64, u64, Option<u64>) {
    let mut sum = (0, 0, 0, Some(0));
    for u in units {
        sum.0 += u.lines_reached;
        sum.1 += u.lines;
        sum.2 += u.branches_reached;
        sum.3 = sum.3.zip(u.branches).map(|(a, b)| a + b);
    }
    sum
}

/// Per unit index, what a report of several runs reached: their unreached lines intersected.
pub fn merge_units(into: &mut [UnitCoverage], from: &[UnitCoverage]) {
    let from: BTreeMap<(&str, &str), &UnitCoverage> = from
        .iter()
        .map(|u| ((u.name.as_str(), u.file.as_str()), u))
        .collect();
    for unit in into.iter_mut() {
        let Some(other) = from.get(&(unit.name.as_str(), unit.file.as_str())) else {
            continue;
        };
        unit.unreached.retain(|l| other.unreached.contains(l));
        unit.lines_reached = unit.lines - unit.unreached.len() as u64;
        unit.branches_reached = unit.branches_reached.max(other.branches_reached);
        unit.branches = match (unit.branches, other.branches) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn offer() -> Value {
        json!({"version": 1, "units": [
            {"name": "f", "file": "/a.py", "lines": [1, 2, 3], "branches": 2},
            {"name": "g", "file": "/b.mjs", "lines": [7, 8], "branches": null},
        ]})
    }

    #[test]
    fn folds_answers_into_per_unit_coverage() {
        let mut reached = Reached::offered(Some(&offer())).expect("version 1 offer");
        assert!(reached.fold(&json!({"0": {"lines": [1, 3], "branches": ["1>3"]}})));
        assert!(
            reached.fold(&json!({"1": {"lines": [7], "branches": ["10-20"], "branchTotal": 3}}))
        );
        assert!(!reached.fold(&json!({"9": {"lines": [1]}, "x": {}, "0": "junk"})));
        assert!(
            !reached.fold(&json!({"0": {"lines": [3], "branches": ["1>3"]}})),
            "nothing new"
        );
        assert_eq!(reached.counts(), (3, 2));
        let report = reached.report();
        assert_eq!(report[0].unreached, vec![2]);
        assert_eq!((report[0].lines_reached, report[0].branches), (2, Some(2)));
        assert_eq!(
            (report[1].branches, report[1].branches_reached),
            (Some(3), 1)
        );
        assert_eq!(totals(&report), (3, 5, 2, Some(5)));
    }

    #[test]
    fn ignores_other_versions_and_malformed_offers() {
        assert!(Reached::offered(None).is_none());
        assert!(Reached::offered(Some(&json!({"version": 2, "units": []}))).is_none());
        assert!(Reached::offered(Some(&json!({"version": 1, "units": "x"}))).is_none());
    }

    #[test]
    fn merges_jobs_and_runs() {
        let mut a = Reached::offered(Some(&offer())).expect("offer");
        let mut b = a.clone();
        a.fold(&json!({"0": {"lines": [1]}}));
        b.fold(&json!({"0": {"lines": [2]}, "1": {"branchTotal": 4}}));
        a.merge(&b);
        assert_eq!(a.lines[0].len(), 2);
        assert_eq!(a.branch_totals[1], Some(4));
        let mut runs = a.report();
        let mut other = Reached::offered(Some(&offer())).expect("offer");
        other.fold(&json!({"0": {"lines": [3]}}));
        merge_units(&mut runs, &other.report());
        assert_eq!((runs[0].lines_reached, runs[0].unreached.len()), (3, 0));
    }
}
