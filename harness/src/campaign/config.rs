//! What a campaign is asked to run: seed, jobs, time, ops, inputs, steering, shard.

use std::time::Duration;

use anyhow::Result;
use serde_json::Value;

use super::baseline::Baseline;
use crate::protocol::Op;

/// What a campaign runs.
#[derive(Debug, Clone)]
pub struct Campaign {
    pub ops: Vec<Op>,
    pub cases: Option<u64>,
    pub time: Option<Duration>,
    pub seed: u64,
    pub jobs: usize,
    pub strict: bool,
    /// End the campaign once a first gate failure is found and shrunk (mutant kill runs).
    pub stop_on_gate: bool,
    /// Which part of the cases this process runs (`Shard::WHOLE` for all of them).
    pub shard: Shard,
    /// Known findings: theirs are counted and listed as found, not shrunk again.
    pub baseline: Option<Baseline>,
    /// When not empty, the campaign runs exactly these cases of its one op, in order (`cases`
    /// is their count), instead of drawing any: real servers' results (`conform --inputs`).
    pub inputs: Vec<Input>,
    /// Coverage steering (`campaign/steer.rs`): a share of each batch mutated from the inputs
    /// that reached new runtime coverage; with a folder, the corpus kept there across runs.
    pub steer: Option<Steer>,
}

impl Campaign {
    /// A campaign of `ops` on `seed`: one job, neither a case count nor a time set (the caller
    /// sets its bound), no baseline, inputs or steering, not strict.
    pub fn new(ops: Vec<Op>, seed: u64) -> Campaign {
        Campaign {
            ops,
            cases: None,
            time: None,
            seed,
            jobs: 1,
            strict: false,
            stop_on_gate: false,
            shard: Shard::WHOLE,
            baseline: None,
            inputs: Vec::new(),
            steer: None,
        }
    }
}

/// How a campaign is steered by the runtime's coverage.
#[derive(Debug, Clone, Default)]
pub struct Steer {
    /// `--corpus DIR`: loaded first, new entries written there at the end.
    pub corpus: Option<std::path::PathBuf>,
}

/// One case of a fixed list: its input and where it came from (a finding it shows first names
/// it). Not shrunk: it is the case as the server sent it.
#[derive(Debug, Clone)]
pub struct Input {
    pub input: Value,
    pub source: String,
}

/// Shard `index` of `count` (0-based): with `jobs` jobs here, this process runs jobs
/// `index * jobs .. (index + 1) * jobs` of a campaign of `count * jobs` jobs. The shards of one
/// seed and job count draw disjoint cases that together are exactly the cases of the unsharded
/// campaign with `count * jobs` jobs, whatever machine runs each shard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: u64,
    pub count: u64,
}

impl Shard {
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };

    /// `K/N` with 1 <= K <= N, as `--shard` takes it.
    pub fn parse(text: &str) -> Result<Shard> {
        let parsed = text.split_once('/').and_then(|(k, n)| {
            Some((k.trim().parse::<u64>().ok()?, n.trim().parse::<u64>().ok()?))
        });
        match parsed {
            Some((k, n)) if (1..=n).contains(&k) => Ok(Shard {
                index: k - 1,
                count: n,
            }),
            _ => anyhow::bail!("a shard is K/N with 1 <= K <= N, not {text:?}"),
        }
    }
}
