//! The rule × op matrix of a campaign, as in the Autobahn testsuite report: for each op the SUT
//! was tested on and each rule id, whether the rule held, broke, only diverged from the
//! reference, or is not judged on that op. The HTML matrix, the JUnit test cases and
//! `index.json` are all read from it.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::json;

use crate::campaign::{Finding, Outcome};
use crate::oracle::judge::judged_rules;
use crate::protocol::Op;
use crate::rule::Rule;

/// Judged on every op: the answer itself (faults, shape) and the comparison with the reference.
const EVERY_OP: [Rule; 3] = [Rule::B1, Rule::Protocol, Rule::Divergence];

fn judged_on(op: Op, rule: Rule) -> bool {
    judged_rules(op).contains(&rule) || EVERY_OP.contains(&rule)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    Pass,
    Fail,
    Divergence,
    NotApplicable,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Pass => "pass",
            State::Fail => "fail",
            State::Divergence => "divergence",
            State::NotApplicable => "n/a",
        }
    }
}

pub struct Cell<'a> {
    pub state: State,
    /// Violations of the rule on this op (one case may break a rule more than once).
    pub hits: u64,
    /// Cases judged on this op.
    pub cases: u64,
    /// The minimal cases found for this rule on this op, one per kind.
    pub findings: Vec<&'a Finding>,
}

pub struct Matrix<'a> {
    /// Columns: the ops at least one case ran on.
    pub ops: Vec<Op>,
    /// Rows: every rule judged on at least one column, in the spec's order.
    pub rules: Vec<Rule>,
    cells: BTreeMap<(Rule, Op), Cell<'a>>,
}

impl<'a> Matrix<'a> {
    pub fn new(outcome: &'a Outcome) -> Self {
        let ops: Vec<Op> = outcome
            .per_op
            .iter()
            .filter(|(_, t)| t.cases > 0)
            .map(|(op, _)| *op)
            .collect();
        let mut rules: Vec<Rule> = ops
            .iter()
            .flat_map(|op| judged_rules(*op).iter().chain(&EVERY_OP).copied())
            .chain(
                outcome
                    .per_op
                    .values()
                    .flat_map(|t| t.rules.keys().copied()),
            )
            .chain(outcome.findings.iter().map(|f| f.rule))
            .collect();
        rules.sort();
        rules.dedup();
        let mut cells = BTreeMap::new();
        for &op in &ops {
            let tally = &outcome.per_op[&op];
            for &rule in &rules {
                let hits = tally.rules.get(&rule).copied().unwrap_or(0);
                let findings: Vec<&Finding> = outcome
                    .findings
                    .iter()
                    .filter(|f| f.op == op && f.rule == rule)
                    .collect();
                let judged = judged_on(op, rule);
                let state = match (hits > 0 || !findings.is_empty(), rule == Rule::Divergence) {
                    (false, _) if !judged => State::NotApplicable,
                    (false, _) => State::Pass,
                    (true, true) => State::Divergence,
                    (true, false) => State::Fail,
                };
                let cell = Cell {
                    state,
                    hits,
                    cases: tally.cases,
                    findings,
                };
                cells.insert((rule, op), cell);
            }
        }
        Matrix { ops, rules, cells }
    }

    /// The cell of `rule` on `op`; `None` only for an op that is not a column.
    pub fn cell(&self, rule: Rule, op: Op) -> Option<&Cell<'a>> {
        self.cells.get(&(rule, op))
    }

    /// The rules judged on `op` (every cell but the not-applicable ones), in row order.
    pub fn judged(&self, op: Op) -> impl Iterator<Item = (Rule, &Cell<'a>)> {
        self.rules.iter().filter_map(move |&rule| {
            self.cells
                .get(&(rule, op))
                .filter(|c| c.state != State::NotApplicable)
                .map(|c| (rule, c))
        })
    }

    pub fn to_json(&self) -> serde_json::Value {
        let cells: serde_json::Map<String, serde_json::Value> = self
            .rules
            .iter()
            .map(|&rule| {
                let row: serde_json::Map<String, serde_json::Value> = self
                    .ops
                    .iter()
                    .filter_map(|&op| self.cells.get(&(rule, op)).map(|c| (op, c)))
                    .map(|(op, c)| {
                        let ids: Vec<&str> = c.findings.iter().map(|f| f.id.as_str()).collect();
                        let cell = json!({"state": c.state, "hits": c.hits, "findings": ids});
                        (op.as_str().to_string(), cell)
                    })
                    .collect();
                (rule.to_string(), row.into())
            })
            .collect();
        json!({"ops": self.ops, "rules": self.rules, "cells": cells})
    }
}
