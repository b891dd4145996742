//! How long to wait for one answer: calibrated per op on the SUT's answers, as AFL does for its
//! exec time-out (a multiple of the measured time, with a floor, under the user's ceiling), so a
//! SUT that answers in a millisecond does not pay the full `--timeout-ms` per hang. Per op,
//! because ops differ (a megabyte image takes longer than a URL check). The estimate is made
//! from an op's first answer on (hangs among the first cases must not cost the ceiling each)
//! and follows the SUT's pace: it is read from the op's latest `WINDOW` answers, so a shim that
//! slows down when the machine gets loaded is given longer.
//!
//! A wait that runs out at the calibrated time-out makes the answer *suspect*, not hung: the
//! process is not killed yet but given `grace` more, as long as restarting it would cost (its
//! measured start-up, the ski-rental rule: waiting at most what the alternative costs is never
//! worse than twice the best choice). An answer in the grace is a slow answer: no restart, and
//! the estimate grows with it. Only a wait that outlasts the grace too is a hang. The campaign
//! then confirms a hang finding once with the full time-out (AFL's `hang_tmout` re-run); when
//! that is answered, it was a slow case, and the op's time-out doubles (`slow`).

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use crate::protocol::Op;

/// Answers of one op its calibrated time-out is read from: the latest ones.
const WINDOW: usize = 256;
/// Once the window is full, the estimate is read again after this many answers, or at once after
/// an answer longer than every other in the window (reading it sorts the window).
const REESTIMATE_EVERY: usize = 16;
/// The calibrated time-out is this multiple of the 99th percentile of the window's waits...
const P99_MULTIPLE: u32 = 10;
/// ...or of the longest one, whichever is longer...
const MAX_MULTIPLE: u32 = 3;
/// ...and never shorter than this: a noisy machine (two jobs on two cores, a garbage collector)
/// stalls a fast SUT for tens of milliseconds now and then.
const FLOOR: Duration = Duration::from_millis(100);
/// Calibrated time-outs are whole multiples of this (AFL rounds to 20 ms).
const ROUND: Duration = Duration::from_millis(10);

/// The waits of one SUT: its ceiling, each op's calibration and the grace a suspect answer gets.
#[derive(Debug)]
pub struct Patience {
    ceiling: Duration,
    calibrate: bool,
    /// What a restart costs: the SUT's last start-up (spawn and handshake).
    restart: Duration,
    ops: HashMap<Op, OpPatience>,
}

#[derive(Debug, Default)]
struct OpPatience {
    /// The latest waits, oldest first, at most `WINDOW`.
    recent: VecDeque<Duration>,
    /// Answers since the estimate was last read.
    unread: usize,
    calibrated: Option<Duration>,
    /// Set by a slow case: the estimate never goes below it again.
    floor: Option<Duration>,
    /// Its last suspect answer never came: the op hangs for real, and its next suspect answers
    /// get the floor as grace, until one comes late after all.
    hangs: bool,
}

impl Patience {
    pub fn new(ceiling: Duration, calibrate: bool) -> Self {
        Self {
            ceiling,
            calibrate,
            restart: Duration::ZERO,
            ops: HashMap::new(),
        }
    }

    /// How long to wait for the next answer, to a request of `op`: its calibrated time-out, or
    /// before its first answer the longest of the other ops' (a hang among an op's first cases
    /// must not cost the ceiling when the SUT is known to be fast; a slow first case is caught
    /// by the grace and the confirmation), or the ceiling before any answer.
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

    /// The SUT (re)started in `took`: what the next restart is expected to cost.
    pub fn started(&mut self, took: Duration) {
        self.restart = took;
    }

    /// How much longer than `waited` (a wait that ran out) a suspect answer to `op` is waited
    /// for before it is a hang: what a restart costs, or the floor once the op's last suspect
    /// answer never came (an op that hangs on a bug must not pay the grace on every hang; another
    /// op's slow answer still gets it); up to the ceiling. None when `waited` was the ceiling.
    pub fn grace(&self, op: Op, waited: Duration) -> Option<Duration> {
        let left = self.ceiling.saturating_sub(waited);
        let grace = if self.ops.get(&op).is_some_and(|p| p.hangs) {
            FLOOR
        } else {
            self.restart.max(FLOOR)
        };
        (!left.is_zero()).then(|| grace.min(left))
    }

    /// A suspect answer to `op` never came, grace included.
    pub fn hung(&mut self, op: Op) {
        self.ops.entry(op).or_default().hangs = true;
    }

    /// An answer to `op` arrived after `waited`.
    pub fn answered(&mut self, op: Op, waited: Duration) {
        if !self.calibrate {
            return;
        }
        let ceiling = self.ceiling;
        let p = self.ops.entry(op).or_default();
        // Late, yet answered: its suspect answers may be slow ones again.
        if p.calibrated.is_some_and(|t| waited > t) {
            p.hangs = false;
        }
        let longest = p.recent.iter().max().copied().unwrap_or_default();
        if p.recent.len() == WINDOW {
            p.recent.pop_front();
        }
        p.recent.push_back(waited);
        p.unread += 1;
        if p.recent.len() < WINDOW || p.unread >= REESTIMATE_EVERY || waited > longest {
            p.unread = 0;
            p.estimate(ceiling);
        }
    }

    /// A case of `op` that ran out at the calibrated time-out was answered with the full one:
    /// the time-out was too short; it doubles, and the estimate never goes below that again.
    pub fn slow(&mut self, op: Op) {
        let ceiling = self.ceiling;
        let p = self.ops.entry(op).or_default();
        p.floor = p.calibrated.map(|t| t * 2).or(Some(ceiling));
        p.estimate(ceiling);
    }
}

impl OpPatience {
    fn estimate(&mut self, ceiling: Duration) {
        let mut sorted: Vec<Duration> = self.recent.iter().copied().collect();
        sorted.sort_unstable();
        let wanted = match sorted.last() {
            Some(&max) => {
                let p99 = sorted[(sorted.len() * 99 / 100).min(sorted.len() - 1)];
                (p99 * P99_MULTIPLE).max(max * MAX_MULTIPLE).max(FLOOR)
            }
            None => FLOOR,
        };
        let wanted = wanted.max(self.floor.unwrap_or_default());
        let rounded = wanted.as_millis().div_ceil(ROUND.as_millis()) * ROUND.as_millis();
        let rounded = Duration::from_millis(u64::try_from(rounded).unwrap_or(u64::MAX));
        self.calibrated = (rounded < ceiling).then_some(rounded);
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
            calibrated_on(std::iter::repeat_n(1, WINDOW)).wait(OP),
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
        let p = calibrated_on((0..200).map(|i| if i >= 190 { 40 } else { 2 }));
        assert_eq!(p.wait(OP), Duration::from_millis(400));
        // One outlier of 300 ms: three times that.
        let p = calibrated_on((0..200).map(|i| if i == 0 { 300 } else { 2 }));
        assert_eq!(p.wait(OP), Duration::from_millis(900));
    }

    #[test]
    fn it_follows_the_pace_of_the_latest_answers() {
        let fast = || std::iter::repeat_n(1, WINDOW + REESTIMATE_EVERY);
        // A loaded machine: every answer takes 50 ms; a window of them later, 500 ms.
        let loaded = std::iter::repeat_n(50, WINDOW + REESTIMATE_EVERY);
        let p = calibrated_on(fast().chain(loaded));
        assert_eq!(p.wait(OP), Duration::from_millis(500));
        // Quiet again: back to the floor once the slow answers left the window.
        let p = calibrated_on(fast().chain(std::iter::repeat_n(50, 10)).chain(fast()));
        assert_eq!(p.wait(OP), FLOOR);
    }

    #[test]
    fn a_longer_answer_raises_it_at_once() {
        let mut p = calibrated_on(std::iter::repeat_n(1, WINDOW + 1));
        p.answered(OP, Duration::from_millis(400));
        assert_eq!(p.wait(OP), Duration::from_millis(1_200));
    }

    #[test]
    fn never_above_the_ceiling() {
        let p = calibrated_on(std::iter::repeat_n(2_000, WINDOW));
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
            "fast answers after a slow case do not lower it again"
        );
        for _ in 0..10 {
            p.slow(OP);
        }
        assert_eq!(p.wait(OP), Duration::from_secs(5));
    }

    #[test]
    fn a_suspect_answer_gets_what_a_restart_costs_up_to_the_ceiling() {
        let mut p = calibrated_on(std::iter::once(1));
        assert_eq!(p.grace(OP, FLOOR), Some(FLOOR), "never less than the floor");
        p.started(Duration::from_millis(1_500));
        assert_eq!(p.grace(OP, FLOOR), Some(Duration::from_millis(1_500)));
        p.started(Duration::from_secs(30));
        assert_eq!(
            p.grace(OP, Duration::from_secs(1)),
            Some(Duration::from_secs(4)),
            "the ceiling bounds the whole wait"
        );
        assert_eq!(p.grace(OP, Duration::from_secs(5)), None);
    }

    #[test]
    fn an_op_that_hung_gets_the_floor_until_an_answer_comes_late() {
        let mut p = calibrated_on(std::iter::once(1));
        p.answered(Op::ParseReply, Duration::from_millis(1));
        p.started(Duration::from_millis(1_500));
        p.hung(OP);
        assert_eq!(p.grace(OP, FLOOR), Some(FLOOR));
        assert_eq!(
            p.grace(Op::ParseReply, FLOOR),
            Some(Duration::from_millis(1_500)),
            "per op"
        );
        p.answered(OP, Duration::from_millis(1));
        assert_eq!(
            p.grace(OP, FLOOR),
            Some(FLOOR),
            "an answer in time says nothing"
        );
        p.answered(OP, Duration::from_millis(150));
        assert_eq!(p.grace(OP, FLOOR), Some(Duration::from_millis(1_500)));
    }
}
