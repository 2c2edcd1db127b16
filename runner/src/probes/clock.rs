//! The clock a run judges waiting times on: wall time on a real cluster; the bundled cluster's
//! simulated clock (its topology's `timing.scale` real seconds to a second) when the run started
//! that cluster itself, so that a check which waits — a shutdown delay, a grace period — takes
//! the cluster's time, not the caller's, and is judged the same at any scale.

use std::time::Duration;

/// The least real time the harness waits for an answer on a fast simulated clock: the bundled
/// cluster answers on loopback from this process, which still takes real time on a busy machine.
const LEAST_REAL_WAIT: Duration = Duration::from_secs(1);

/// How many real seconds one second of the cluster's clock lasts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Clock {
    scale: f64,
}

impl Clock {
    /// A real cluster: its seconds are the wall clock's.
    pub const WALL: Clock = Clock { scale: 1.0 };

    /// The clock of a bundled cluster whose topology says `timing.scale`.
    pub fn simulated(scale: f64) -> Self {
        Self {
            scale: if scale.is_finite() { scale.max(0.0) } else { 1.0 },
        }
    }

    /// Real seconds per second of the cluster's clock.
    pub fn scale(self) -> f64 {
        self.scale
    }

    /// What `real` wall time measured on this machine lasted on the cluster's clock; None when
    /// the clock stands still (`timing.scale: 0`: every wait is instant, so durations say nothing).
    pub fn on_cluster(self, real: Duration) -> Option<Duration> {
        (self.scale > 0.0).then(|| real.div_f64(self.scale))
    }

    /// How long to wait in real time for an answer that may take `on_cluster` on the cluster's
    /// clock — a connection held silent, an agent's log still empty: the same on a real cluster;
    /// on a fast simulated clock a share of it, but never less than a second (or `on_cluster`,
    /// if shorter), because the answer itself still takes real time.
    pub fn real_wait(self, on_cluster: Duration) -> Duration {
        let scaled = on_cluster.mul_f64(self.scale);
        if self.scale >= 1.0 {
            scaled
        } else {
            scaled.max(on_cluster.min(LEAST_REAL_WAIT))
        }
    }
}

impl Default for Clock {
    fn default() -> Self {
        Clock::WALL
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::wall(1.0, 8_000, Some(8_000))]
    #[case::tenfold(0.1, 800, Some(8_000))]
    #[case::slower(2.0, 16_000, Some(8_000))]
    #[case::stopped(0.0, 5, None)]
    #[case::nonsense(f64::NAN, 8_000, Some(8_000))]
    fn a_wall_time_is_read_on_the_cluster_clock(
        #[case] scale: f64,
        #[case] real_ms: u64,
        #[case] expected: Option<u64>,
    ) {
        let got = Clock::simulated(scale).on_cluster(Duration::from_millis(real_ms));
        assert_eq!(got.map(|d| d.as_millis()), expected.map(u128::from));
    }

    /// A wait of the harness's own: the wall time on a real cluster; a share of it on a fast
    /// clock, floored at a second (the loopback answer's own real time); longer on a slow one.
    #[rstest]
    #[case::wall(1.0, 10_000, 10_000)]
    #[case::twentyfold(0.05, 20_000, 1_000)]
    #[case::twentyfold_long(0.05, 60_000, 3_000)]
    #[case::floor_keeps_short_waits(0.05, 300, 300)]
    #[case::stopped(0.0, 5_000, 1_000)]
    #[case::slower(2.0, 5_000, 10_000)]
    fn a_wait_is_on_the_cluster_clock_with_a_real_floor(
        #[case] scale: f64,
        #[case] on_cluster_ms: u64,
        #[case] real_ms: u128,
    ) {
        let got = Clock::simulated(scale).real_wait(Duration::from_millis(on_cluster_ms));
        assert_eq!(got.as_millis(), real_ms);
    }
}
