//! The NetworkPolicy cases a `network-policy` probe writes (`case:` in a suite): which policy it
//! applies between a cell's client and server pods, in its closed form (the flow must be denied)
//! and, for an allow case, its open form (the flow must get through again).

use serde::Deserialize;

/// One NetworkPolicy case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PolicyCase {
    /// No policy: the unlabelled flow gets through.
    NoPolicy,
    /// Default-deny ingress on the server.
    DenyIngress,
    /// Ingress allowed from the client by pod selector.
    AllowPodSelector,
    /// Ingress allowed from the run's namespace by namespace selector.
    AllowNamespaceSelector,
    /// Ingress allowed on the server's named port (`http`).
    AllowNamedPort,
    /// Ingress allowed on the server's port by number.
    AllowPort,
    /// Ingress allowed on the server's UDP port by number.
    AllowUdp,
    /// Default-deny egress on the client, DNS (UDP and TCP 53) still allowed.
    DenyEgress,
    /// Ingress allowed from an `ipBlock` whose `except` names the client (closed), then another
    /// address (open).
    IpBlockExcept,
}

impl PolicyCase {
    /// The case's name, as suites write it.
    pub fn name(self) -> &'static str {
        match self {
            Self::NoPolicy => "no-policy",
            Self::DenyIngress => "deny-ingress",
            Self::AllowPodSelector => "allow-pod-selector",
            Self::AllowNamespaceSelector => "allow-namespace-selector",
            Self::AllowNamedPort => "allow-named-port",
            Self::AllowPort => "allow-port",
            Self::AllowUdp => "allow-udp",
            Self::DenyEgress => "deny-egress",
            Self::IpBlockExcept => "ip-block-except",
        }
    }

    /// Whether the case opens the flow again after closing it.
    pub fn opens(self) -> bool {
        matches!(
            self,
            Self::AllowPodSelector
                | Self::AllowNamespaceSelector
                | Self::AllowNamedPort
                | Self::AllowPort
                | Self::AllowUdp
                | Self::IpBlockExcept
        )
    }

    /// Whether the case applies a policy at all.
    pub fn has_policy(self) -> bool {
        self != Self::NoPolicy
    }
}
