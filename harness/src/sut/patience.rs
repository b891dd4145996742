//! How long to wait for one answer: calibrated per op on the SUT's answers, as AFL does for its
//! exec time-out (a multiple of the measured time, with a floor, under the user's ceiling), so a
//! SUT that answers in a millisecond does not pay the full `--timeout-ms` per hang. Per op,
//! because ops differ (a megabyte image takes longer than a URL check). The estimate is made
//! from an op's first answer on (hangs among the first cases must not cost the ceiling each)
//! and fixed after `SAMPLES` answers of that op.
//!
//! A wait that runs out at a calibrated time-out is a hang. The campaign confirms a hang
//! finding once by sending its case again with the full time-out (AFL's `hang_tmout` re-run);
//! when that is answered, it was a slow case, and the op's time-out doubles (`slow`).

use std::collections::HashMap;
use std::time::Duration;

use crate::protocol::Op;

/// Answers of one op measured before its calibrated time-out is fixed.
const SAMPLES: usize = 200;
/// The calibrated time-out is this multiple of the 99th percentile of the measured waits...
const P99_MULTIPLE: u32 = 10;
/// ...or of the longest one, whichever is longer...
const MAX_MULTIPLE: u32 = 3;
/// ...and never shorter than this: a noisy machine (two jobs on two cores, a garbage collector)
/// stalls a fast SUT for tens of milliseconds now and then.
const FLOOR: Duration = Duration::from_millis(100);
/// Calibrated time-outs are whole multiples of this (AFL rounds to 20 ms).
const ROUND: Duration = Duration::from_millis(10);

/// The waits of one SUT: its ceiling and each op's calibration.
#[derive(Debug)]
pub struct Patience {
    ceiling: Duration,
    calibrate: bool,
    ops: HashMap<Op, OpPatience>,
}

#[derive(Debug, Default)]
struct OpPatience {
    /// The waits measured so far, sorted; emptied once the time-out is fixed.
    samples: Vec<Duration>,
    calibrated: Option<Duration>,
    fixed: bool,
}

impl Patience {
    pub fn new(ceiling: Duration, calibrate: bool) -> Self {
        Self {
            ceiling,
            calibrate,
            ops: HashMap::new(),
        }
    }

    /// How long to wait for the next answer, to a request of `op`: its calibrated time-out, or
    /// before its first answer the longest of the other ops' (a hang among an op's first cases
    /// must not cost the ceiling when the SUT is known to be fast; a slow first case is caught
    /// by the confirmation), or the ceiling before any answer.
    pub fn wait(&self, op: Op) -> Duration {
        match self.ops.get(&op) {
            Some(p) => p.calibrated.unwrap_or(self.ceiling),
            None => self
                .ops
                .values()
                .map(|p| p.calibrated.unwrap_or(self.ceiling))
                .max()
                .unwrap_or(self.ceiling),
        }
    }

    /// `op`'s calibrated time-out, once there is one below the ceiling.
    pub fn calibrated(&self, op: Op) -> Option<Duration> {
        self.ops.get(&op).and_then(|p| p.calibrated)
    }

    /// An answer to `op` arrived after `waited`.
    pub fn answered(&mut self, op: Op, waited: Duration) {
        if !self.calibrate {
            return;
        }
        let ceiling = self.ceiling;
        let p = self.ops.entry(op).or_default();
        if p.fixed {
            return;
        }
        // Sorted as it grows: a percentile per answer, for the first `SAMPLES` answers only.
        let at = p.samples.partition_point(|&s| s <= waited);
        p.samples.insert(at, waited);
        let n = p.samples.len();
        let p99 = p.samples[(n * 99 / 100).min(n - 1)];
        let max = p.samples[n - 1];
        let wanted = (p99 * P99_MULTIPLE).max(max * MAX_MULTIPLE).max(FLOOR);
        let rounded = wanted.as_millis().div_ceil(ROUND.as_millis()) * ROUND.as_millis();
        let rounded = Duration::from_millis(u64::try_from(rounded).unwrap_or(u64::MAX));
        p.calibrated = (rounded < ceiling).then_some(rounded);
        if n == SAMPLES {
            p.fixed = true;
            p.samples = Vec::new();
        }
    }

    /// A case of `op` that ran out at the calibrated time-out was answered with the full one:
    /// the time-out was too short; it doubles, and is no longer estimated from the answers
    /// (which would lower it again).
    pub fn slow(&mut self, op: Op) {
        let ceiling = self.ceiling;
        let p = self.ops.entry(op).or_default();
        p.fixed = true;
        p.samples = Vec::new();
        p.calibrated = p.calibrated.map(|t| t * 2).filter(|&t| t < ceiling);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OP: Op = Op::NeutralizeText;

    fn calibrated_on(waits_ms: impl Iterator<Item = u64>) -> Patience {
        let mut p = Patience::new(Duration::from_secs(5), true);
        for ms in waits_ms {
            p.answered(OP, Duration::from_millis(ms));
        }
        p
    }

    #[test]
    fn waits_the_ceiling_before_the_first_answer() {
        let p = calibrated_on(std::iter::empty());
        assert_eq!(p.wait(OP), Duration::from_secs(5));
        assert_eq!(p.calibrated(OP), None);
    }

    #[test]
    fn a_fast_sut_gets_the_floor_from_its_first_answer() {
        assert_eq!(calibrated_on(std::iter::once(1)).wait(OP), FLOOR);
        assert_eq!(
            calibrated_on(std::iter::repeat_n(1, SAMPLES)).wait(OP),
            FLOOR
        );
    }

    #[test]
    fn each_op_has_its_own() {
        let mut p = calibrated_on(std::iter::once(1));
        p.answered(Op::CoerceToolResult, Duration::from_millis(200));
        assert_eq!(p.wait(OP), FLOOR);
        assert_eq!(p.wait(Op::CoerceToolResult), Duration::from_secs(2));
        assert_eq!(
            p.wait(Op::ParseReply),
            Duration::from_secs(2),
            "an op not answered yet: the longest of the others"
        );
    }

    #[test]
    fn a_high_percentile_and_the_longest_wait_set_it() {
        // 99th percentile 40 ms: ten times that, rounded.
        let p = calibrated_on((0..SAMPLES as u64).map(|i| if i >= 190 { 40 } else { 2 }));
        assert_eq!(p.wait(OP), Duration::from_millis(400));
        // One outlier of 300 ms: three times that.
        let p = calibrated_on((0..SAMPLES as u64).map(|i| if i == 0 { 300 } else { 2 }));
        assert_eq!(p.wait(OP), Duration::from_millis(900));
    }

    #[test]
    fn fixed_after_its_samples() {
        let p = calibrated_on(std::iter::repeat_n(1, SAMPLES).chain(std::iter::once(1_000)));
        assert_eq!(
            p.wait(OP),
            FLOOR,
            "an answer after the samples changes nothing"
        );
        let p = calibrated_on(std::iter::repeat_n(1, SAMPLES - 1).chain(std::iter::once(1_000)));
        assert_eq!(
            p.wait(OP),
            Duration::from_secs(3),
            "the longest sample, three times"
        );
    }

    #[test]
    fn never_above_the_ceiling() {
        let p = calibrated_on(std::iter::repeat_n(2_000, SAMPLES));
        assert_eq!(p.wait(OP), Duration::from_secs(5));
        assert_eq!(p.calibrated(OP), None);
    }

    #[test]
    fn off_means_the_ceiling() {
        let mut p = Patience::new(Duration::from_secs(5), false);
        p.answered(OP, Duration::from_millis(1));
        assert_eq!(p.wait(OP), Duration::from_secs(5));
    }

    #[test]
    fn a_slow_case_doubles_that_op_up_to_the_ceiling() {
        let mut p = calibrated_on(std::iter::once(1));
        p.answered(Op::ParseReply, Duration::from_millis(1));
        p.slow(OP);
        assert_eq!(p.wait(OP), FLOOR * 2);
        assert_eq!(p.wait(Op::ParseReply), FLOOR);
        p.answered(OP, Duration::from_millis(1));
        assert_eq!(
            p.wait(OP),
            FLOOR * 2,
            "no longer estimated after a slow case"
        );
        for _ in 0..10 {
            p.slow(OP);
        }
        assert_eq!(p.wait(OP), Duration::from_secs(5));
    }
}
