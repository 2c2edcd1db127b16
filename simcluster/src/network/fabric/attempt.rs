//! The connection attempt being decided, for faults that hold for a share of attempts only
//! (`--fault NODE:FAULT@P`): each attempt gets a number, and whether an intermittent fault
//! holds for it is a reproducible draw from the topology's seed, the node and that number —
//! decided per attempt, as the intermittent DNS timeouts operators report are
//! (aws/containers-roadmap#2176, kubernetes#137381: some lookups of the same name fail, the
//! next ones work).

use std::cell::Cell;

use crate::config::faults::Fault;

thread_local! {
    /// The number of the attempt being decided on this thread (None outside a decision).
    static ATTEMPT: Cell<Option<u64>> = const { Cell::new(None) };
}

/// Runs `decide` as attempt number `n`: intermittent faults draw from `n` while it runs.
pub fn during<T>(n: u64, decide: impl FnOnce() -> T) -> T {
    let before = ATTEMPT.with(|a| a.replace(Some(n)));
    let out = decide();
    ATTEMPT.with(|a| a.set(before));
    out
}

/// Whether an intermittent `fault` of node `node` holds for the attempt being decided: a draw
/// below `share`. Outside an attempt (what a node lists or reports) it holds.
pub fn holds(seed: u64, node: &str, fault: Fault, share: f64) -> bool {
    match ATTEMPT.with(Cell::get) {
        Some(n) => {
            let key = format!("{node}/{fault}");
            crate::config::profile::unit_hash(seed, &key, n) < share
        }
        None => true,
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    /// Over many attempts, the share that the fault holds for is close to P; the same seed
    /// and attempt always decide the same way; another seed decides otherwise.
    #[rstest]
    #[case(0.1)]
    #[case(0.3)]
    #[case(0.6)]
    fn a_share_of_attempts_hold(#[case] share: f64) {
        let n = 4000u64;
        let held = (0..n)
            .filter(|&i| during(i, || holds(7, "win2022-1", Fault::DnsUnreachable, share)))
            .count();
        let seen = held as f64 / n as f64;
        assert!((seen - share).abs() < 0.03, "{seen} of attempts for a share of {share}");
        let again = (0..n)
            .filter(|&i| during(i, || holds(7, "win2022-1", Fault::DnsUnreachable, share)))
            .count();
        assert_eq!(held, again, "the same seed decides the same way");
        let other = (0..200u64)
            .map(|i| during(i, || holds(8, "win2022-1", Fault::DnsUnreachable, share)))
            .ne((0..200u64).map(|i| during(i, || holds(7, "win2022-1", Fault::DnsUnreachable, share))));
        assert!(other, "another seed draws otherwise");
    }

    #[test]
    fn outside_an_attempt_the_fault_holds() {
        assert!(holds(0, "w", Fault::DnsUnreachable, 0.01));
        during(3, || ());
        assert!(
            holds(0, "w", Fault::DnsUnreachable, 0.01),
            "the attempt ends with its decision"
        );
    }
}
