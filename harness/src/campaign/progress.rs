//! The live counters every job adds to while a campaign runs, read by the progress bar and the
//! timeline's samples.

use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

use crate::protocol::{Answer, Fault};

/// Live counters for a progress display, each moved as the SUT answers (not when a batch ends).
#[derive(Default)]
pub struct Progress {
    pub cases: AtomicU64,
    pub failed: AtomicU64,
    pub findings: AtomicU64,
    /// Faults seen (cases, companions and shrinking steps alike): each one restarts the SUT.
    pub hangs: AtomicU64,
    pub crashes: AtomicU64,
    /// Garbled answers (`protocol` faults).
    pub garbled: AtomicU64,
    /// Time the waits that ran out cost, summed over jobs (the restarts after them not counted).
    pub hang_ms: AtomicU64,
    /// Cases first counted as hangs whose finding, sent again with the full time-out, was
    /// answered: slow cases, withdrawn.
    pub slow: AtomicU64,
    /// Answers after the calibrated wait, within the grace a restart's cost bought them: counted
    /// when each SUT is done (`Sut::late_answers`).
    pub late: AtomicU64,
}

impl Progress {
    /// Counts `answer` if it is a fault.
    pub(crate) fn fault(&self, answer: &Answer) {
        let Answer::Fault(fault) = answer else {
            return;
        };
        match fault {
            Fault::Hang { timeout_ms, .. } => {
                self.hangs.fetch_add(1, Ordering::Relaxed);
                self.hang_ms.fetch_add(*timeout_ms, Ordering::Relaxed);
            }
            Fault::Crash { .. } => {
                self.crashes.fetch_add(1, Ordering::Relaxed);
            }
            Fault::Protocol { .. } => {
                self.garbled.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// The faults so far, for the report.
    pub fn faults(&self) -> Faults {
        Faults {
            hangs: self.hangs.load(Ordering::Relaxed),
            hang_ms: self.hang_ms.load(Ordering::Relaxed),
            crashes: self.crashes.load(Ordering::Relaxed),
            garbled: self.garbled.load(Ordering::Relaxed),
            slow: self.slow.load(Ordering::Relaxed),
            late: self.late.load(Ordering::Relaxed),
        }
    }
}

/// The SUT's faults over a campaign (each one cost a restart) and the time its hangs cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Faults {
    pub hangs: u64,
    pub hang_ms: u64,
    pub crashes: u64,
    pub garbled: u64,
    /// Cases that ran out at a calibrated time-out but were answered with the full one.
    #[serde(default)]
    pub slow: u64,
    /// Answers after the calibrated time-out, within its grace: slow answers that cost no
    /// restart (not faults).
    #[serde(default)]
    pub late: u64,
}

impl Faults {
    pub fn restarts(&self) -> u64 {
        self.hangs + self.crashes + self.garbled
    }
}

impl std::ops::AddAssign for Faults {
    fn add_assign(&mut self, other: Faults) {
        self.hangs += other.hangs;
        self.hang_ms += other.hang_ms;
        self.crashes += other.crashes;
        self.garbled += other.garbled;
        self.slow += other.slow;
        self.late += other.late;
    }
}
