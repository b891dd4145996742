//! The CPU a campaign used: the harness's own (generation, the reference, the judges and mock
//! providers in process, protocol encoding) against its SUT processes'. Read from getrusage(2):
//! `RUSAGE_SELF` for the harness, `RUSAGE_CHILDREN` for the SUTs it started and reaped (a SUT's
//! own children count when the SUT reaped them; one killed with its process group does not).
//! Both are process-wide: `normfuzz conform` runs one campaign per process, and is measured
//! exactly; campaigns run side by side in one process (tests) each see the others' too.
//!
//! Hand-written: one libc call, which the SUT driver already depends on, and no crate offers
//! the children's usage.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// CPU time (user and system) of the harness and of its SUT processes over a campaign.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CpuUse {
    pub harness_ms: u64,
    pub sut_ms: u64,
}

impl CpuUse {
    /// The harness's share of the CPU the campaign used; None when nothing was measured.
    pub fn harness_share(&self) -> Option<f64> {
        let total = self.harness_ms + self.sut_ms;
        (total > 0).then(|| self.harness_ms as f64 / total as f64)
    }
}

impl std::ops::AddAssign for CpuUse {
    fn add_assign(&mut self, other: CpuUse) {
        self.harness_ms += other.harness_ms;
        self.sut_ms += other.sut_ms;
    }
}

/// The CPU used so far by this process and by its reaped children.
#[derive(Debug, Clone, Copy)]
pub struct CpuClock {
    harness: Duration,
    children: Duration,
}

impl CpuClock {
    pub fn now() -> Self {
        Self {
            harness: used(libc::RUSAGE_SELF),
            children: used(libc::RUSAGE_CHILDREN),
        }
    }

    /// The harness's own CPU time since `self` was read, to the microsecond (benches/campaign.rs).
    pub fn harness_since(&self) -> Duration {
        used(libc::RUSAGE_SELF).saturating_sub(self.harness)
    }

    /// What was used since `self` was read: call it once the SUT processes have been reaped.
    pub fn used_since(&self) -> CpuUse {
        let now = Self::now();
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        CpuUse {
            harness_ms: ms(now.harness.saturating_sub(self.harness)),
            sut_ms: ms(now.children.saturating_sub(self.children)),
        }
    }
}

/// User and system time of `who` (zero if the call fails: it only fails on a bad `who`).
fn used(who: libc::c_int) -> Duration {
    // SAFETY: rusage is plain data, written whole by getrusage.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        if libc::getrusage(who, &mut usage) != 0 {
            return Duration::ZERO;
        }
        usage
    };
    let time = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec.max(0) as u64) + Duration::from_micros(t.tv_usec.max(0) as u64)
    };
    time(usage.ru_utime) + time(usage.ru_stime)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lower bounds only: tests running beside this one in the process add to both clocks.
    #[test]
    fn a_reaped_childs_work_is_the_suts_and_work_here_the_harnesss() {
        let clock = CpuClock::now();
        let status = std::process::Command::new("sh")
            .args(["-c", "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done"])
            .status()
            .expect("sh runs");
        assert!(status.success());
        // Busy here until the clock shows it, for 5 s at most (a clock that never moves fails).
        let (before, started) = (CpuClock::now(), std::time::Instant::now());
        let mut x = 0u64;
        while before.used_since().harness_ms < 30 && started.elapsed() < Duration::from_secs(5) {
            for _ in 0..100_000 {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(1));
            }
        }
        let used = clock.used_since();
        assert!(used.sut_ms >= 30, "{used:?}");
        assert!(used.harness_ms >= 30, "{used:?}");
    }

    #[test]
    fn the_share_is_the_harnesss_part_of_both() {
        let used = CpuUse {
            harness_ms: 150,
            sut_ms: 850,
        };
        assert_eq!(used.harness_share(), Some(0.15));
        assert_eq!(CpuUse::default().harness_share(), None);
    }
}
