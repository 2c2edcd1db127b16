//! What the scheduler's words mean for a pod the run waits on: the reasons that clear up without
//! anyone acting, so that a pod they hold back is waited for rather than judged unschedulable.

/// Scheduler messages of a node that has no room yet but will: its pod slots free up as
/// terminating pods go (the pod budget waits for them), and on EKS a Windows node's IP
/// addresses — the VPC resource controller's `vpc.amazonaws.com/PrivateIPv4Address`, one per
/// Windows pod (EKS user guide "Windows support"; aws/containers-roadmap#240) — are handed back
/// as pods go the same way.
pub const ROOM_FREES_UP: &[&str] = &["Too many pods", "Insufficient vpc.amazonaws.com/PrivateIPv4Address"];

/// Scheduler messages that clear up without anyone acting: [`ROOM_FREES_UP`], and a node's
/// transient taints (not ready, unreachable, network unavailable), which go when it settles.
pub const TRANSIENT_UNSCHEDULABLE: &[&str] = &[
    "Too many pods",
    "Insufficient vpc.amazonaws.com/PrivateIPv4Address",
    "node.kubernetes.io/not-ready",
    "node.kubernetes.io/unreachable",
    "node.kubernetes.io/network-unavailable",
];

/// Whether a scheduler message says the node is only short of room that frees up.
pub fn room_frees_up(message: &str) -> bool {
    ROOM_FREES_UP.iter().any(|r| message.contains(r))
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case::slots(
        "0/4 nodes are available: 1 Too many pods, 3 node(s) didn't match Pod's node affinity/selector.",
        true
    )]
    #[case::eks_ips(
        "0/3 nodes are available: 1 Insufficient vpc.amazonaws.com/PrivateIPv4Address, 2 node(s) didn't match Pod's node affinity/selector.",
        true
    )]
    #[case::ports(
        "0/3 nodes are available: 1 node(s) didn't have free ports for the requested pod ports.",
        false
    )]
    #[case::memory("0/3 nodes are available: 3 Insufficient memory.", false)]
    fn room_that_frees_up(#[case] message: &str, #[case] frees: bool) {
        assert_eq!(room_frees_up(message), frees);
        assert!(ROOM_FREES_UP.iter().all(|r| TRANSIENT_UNSCHEDULABLE.contains(r)));
    }
}
