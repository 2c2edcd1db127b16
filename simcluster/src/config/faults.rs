//! The faults a simulated node can carry (topology `faults:` or `--fault NODE:FAULT`): one per
//! documented troubleshooting item, each with the id of the documented rule it breaks and
//! the documented symptom. Faults act only through the kubelet model and the network fabric.

use std::fmt;

use crate::config::platform::{Dataplane, NetworkMode, Os, Platform, PodNetwork};

/// One injectable node fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Fault {
    KubeletStopped,
    MacSpoofingDisabled,
    ExceptionListMissingCluster,
    ExceptionListCoversOutside,
    KubeProxyNoHostnameOverride,
    KubeProxyStopped,
    PauseImageWrongBuild,
    FlannelSubnetEnvMissing,
    FlanneldWaiting,
    HnsNetworkMissing,
    DnsUnreachable,
    PortExhaustion,
    FlannelRejoinStaleSourceVip,
    VxlanParamsMismatch,
    NetpolAgentStopped,
    HnsLbPolicyMissing,
    HnsStaleBackend,
    HnsStaleRemoteEndpoint,
    HnsLeakedPolicies,
}

/// What the table says about one fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaultSpec {
    pub fault: Fault,
    /// The name used in topologies and on the command line.
    pub name: &'static str,
    /// The id of the documented rule the fault breaks.
    pub rule: &'static str,
    /// The only OS whose nodes can carry it (None: any). Windows-only faults live in HNS, the
    /// Windows kube-proxy, flannel on Windows, or the VM NICs of l2bridge Windows nodes.
    pub os: Option<Os>,
    /// The network modes where it can occur (None: any).
    pub modes: Option<&'static [NetworkMode]>,
    /// The documented symptom, for `mixcheck sim faults`.
    pub symptom: &'static str,
}

/// flanneld, its subnet file and the HNS network its CNI plugin delegates to.
const FLANNEL_MODES: Option<&[NetworkMode]> = Some(&[NetworkMode::L2bridge, NetworkMode::Overlay]);

/// Every fault, one row each, in the order of the enum (and of `mixcheck sim faults`). MAC
/// spoofing matters where pod frames leave the VM with the pods' own MACs (l2bridge); the
/// source VIP and the VXLAN parameters exist on overlay only.
pub const FAULTS: &[FaultSpec] = &[
    FaultSpec {
        fault: Fault::KubeletStopped,
        name: "kubelet-stopped",
        rule: "POD-LIFECYCLE-BASICS",
        os: None,
        modes: None,
        symptom: "the kubelet stops posting status: the node turns NotReady (Unknown), gets the unreachable taints, and its pods do not start",
    },
    FaultSpec {
        fault: Fault::MacSpoofingDisabled,
        name: "mac-spoofing-disabled",
        rule: "NET-MAC-SPOOFING",
        os: Some(Os::Windows),
        modes: Some(&[NetworkMode::L2bridge]),
        symptom: "MAC spoofing is off on the VM NIC: it drops frames with the pods' MAC addresses, so pods on the node reach only pods on the same node (no cross-node traffic, no remote service backends, no outside traffic); host traffic works",
    },
    FaultSpec {
        fault: Fault::ExceptionListMissingCluster,
        name: "exceptionlist-missing-cluster",
        rule: "NET-OUTBOUND-NAT-EXCEPTIONLIST",
        os: Some(Os::Windows),
        modes: None,
        symptom: "the cluster ranges are missing from the OutboundNAT ExceptionList: pod traffic to other nodes is SNATed to the node's address (l2bridge: delivered, backends see the node IP instead of the pod IP; overlay: lost); outside traffic works",
    },
    FaultSpec {
        fault: Fault::ExceptionListCoversOutside,
        name: "exceptionlist-covers-outside",
        rule: "NET-OUTBOUND-NAT-EXCEPTIONLIST",
        os: Some(Os::Windows),
        modes: None,
        symptom: "the ExceptionList covers the outside range: pod traffic to outside addresses is not SNATed and replies never come back (TCP/UDP time out); in-cluster traffic works",
    },
    FaultSpec {
        fault: Fault::KubeProxyNoHostnameOverride,
        name: "kube-proxy-no-hostname-override",
        rule: "NET-KUBEPROXY-HOSTNAME",
        os: Some(Os::Windows),
        modes: None,
        symptom: "kube-proxy runs without --hostname-override: it deletes the node's own HNS endpoints, so pods on the node lose all connectivity and service flows through them break",
    },
    FaultSpec {
        fault: Fault::KubeProxyStopped,
        name: "kube-proxy-stopped",
        rule: "NET-POD-SVC-CLUSTERIP",
        os: Some(Os::Windows),
        modes: None,
        symptom: "kube-proxy is not running: no load-balancer policies on the node, so ClusterIP flows from its pods and NodePort flows to it time out; pod IP flows work",
    },
    FaultSpec {
        fault: Fault::PauseImageWrongBuild,
        name: "pause-image-wrong-build",
        rule: "VER-PAUSE-IMAGE",
        os: Some(Os::Windows),
        modes: None,
        symptom: "the sandbox (pause) image is built for another Windows build: FailedCreatePodSandBox (0xc0370101), pods stay ContainerCreating",
    },
    FaultSpec {
        fault: Fault::FlannelSubnetEnvMissing,
        name: "flannel-subnet-env-missing",
        rule: "NET-FLANNEL-SUBNET-ENV",
        os: Some(Os::Windows),
        modes: FLANNEL_MODES,
        symptom: "C:\\run\\flannel\\subnet.env is missing: the CNI plugin cannot set up pod networking, FailedCreatePodSandBox, pods stay ContainerCreating",
    },
    FaultSpec {
        fault: Fault::FlanneldWaiting,
        name: "flanneld-waiting",
        rule: "NET-FLANNEL-SUBNET-ENV",
        os: Some(Os::Windows),
        modes: FLANNEL_MODES,
        symptom: "flanneld is stuck at \"Waiting for the Network to be created\": subnet.env is never written, FailedCreatePodSandBox, pods stay ContainerCreating",
    },
    FaultSpec {
        fault: Fault::HnsNetworkMissing,
        name: "hns-network-missing",
        rule: "NET-HNS-NETWORK-PRESENT",
        os: Some(Os::Windows),
        modes: FLANNEL_MODES,
        symptom: "the HNS network of the pod network (flannel: cbr0, vxlan0 on overlay; GKE: l2bridge) does not exist: no network adapter for pods, the CNI plugin fails (FailedCreatePodSandBox), pods stay ContainerCreating (HostProcess pods still start)",
    },
    FaultSpec {
        fault: Fault::DnsUnreachable,
        name: "dns-unreachable",
        rule: "DNS-FQDN",
        os: None,
        modes: None,
        symptom: "the cluster DNS service is unreachable from this node: name lookups from its pods time out; connections by IP work",
    },
    FaultSpec {
        fault: Fault::PortExhaustion,
        name: "port-exhaustion",
        rule: "NET-POD-EXT-IP",
        os: None,
        modes: None,
        symptom: "the node's ephemeral ports are exhausted: every new connection from the host fails (Windows WSAENOBUFS 10055, Linux EADDRNOTAVAIL) and its pods' connections to outside addresses (SNAT) time out; in-cluster pod traffic works",
    },
    FaultSpec {
        fault: Fault::FlannelRejoinStaleSourceVip,
        name: "flannel-rejoin-stale-sourcevip",
        rule: "NET-FLANNEL-REJOIN",
        os: Some(Os::Windows),
        modes: Some(&[NetworkMode::Overlay]),
        symptom: "the node re-joined and flannel gave it a new subnet, but C:\\k\\SourceVip.json is stale: kube-proxy cannot create its source VIP endpoint, so service (ClusterIP and NodePort) flows through the node time out; pod IP flows work",
    },
    FaultSpec {
        fault: Fault::VxlanParamsMismatch,
        name: "vxlan-params-mismatch",
        rule: "NET-FLANNEL-VXLAN-PARAMS",
        os: Some(Os::Windows),
        modes: Some(&[NetworkMode::Overlay]),
        symptom: "the node's flannel VXLAN backend does not use VNI 4096 / UDP 4789 like the other nodes: pods on the node reach only pods on the same node; host traffic works",
    },
    FaultSpec {
        fault: Fault::NetpolAgentStopped,
        name: "netpol-agent-stopped",
        rule: "NETPOL-DENY-INGRESS",
        os: None,
        modes: None,
        symptom: "the policy engine's agent on the node (calico-node/Felix, antrea-agent, azure-npm, the VPC CNI's network policy agent) is not running: NetworkPolicies are not programmed there, so its pods' ingress and egress stay open whatever the policies say; every other flow works",
    },
    // The data plane drifted from the API (operator-needs.md items 1 and 3). AKS: the HNS load
    // balancer of kube-dns missing after "Policy creation failed: hcnCreateLoadBalancer failed"
    // (microsoft/hcsshim#1043); a removed load balancer never recreated by kube-proxy
    // (kubernetes#135802); load balancers that disappear (kubernetes#110849).
    FaultSpec {
        fault: Fault::HnsLbPolicyMissing,
        name: "hns-lb-policy-missing",
        rule: "NET-HNS-MATCHES-API",
        os: Some(Os::Windows),
        modes: None,
        symptom: "kube-proxy runs but the node has no HNS load balancer for the cluster DNS Service (\"Policy creation failed\", or one removed and never recreated): name lookups from its pods time out; every other Service and every flow by IP works",
    },
    // A load balancer whose endpoint list kube-proxy's update did not change (kubernetes#131466:
    // "the endpoints it attempts to update do not match those reflected in HNS"); a stale
    // CoreDNS backend after a restart (operator-needs.md item 3).
    FaultSpec {
        fault: Fault::HnsStaleBackend,
        name: "hns-stale-backend",
        rule: "NET-HNS-MATCHES-API",
        os: Some(Os::Windows),
        modes: None,
        symptom: "the node's HNS load balancer for the cluster DNS Service keeps a deleted CoreDNS replica's address among its backends: the share of lookups from its pods that pick it time out, the others answer",
    },
    // A remote endpoint deleted only once its pod is gone, missed when the address was reused
    // first: local and remote endpoints with one address, DNS timeouts from the pod
    // (microsoft/Windows-Containers#631; fixed by kubernetes#138000, back-ported to 1.36 and
    // 1.35 by #138603 and #138602).
    FaultSpec {
        fault: Fault::HnsStaleRemoteEndpoint,
        name: "hns-stale-remote-endpoint",
        rule: "NET-HNS-MATCHES-API",
        os: Some(Os::Windows),
        modes: None,
        symptom: "a pod address reused on the node still has the remote HNS endpoint of the pod that had it before on another node: the node lists it both local and remote, and replies to that pod's Service connections (cluster DNS included) go to the old node and time out",
    },
    // kube-proxy's "Service cleanup" that left the policy behind (Azure/AKS#2899 logs; leaked
    // state after churn, kubernetes#113524).
    FaultSpec {
        fault: Fault::HnsLeakedPolicies,
        name: "hns-leaked-policies",
        rule: "NET-HNS-MATCHES-API",
        os: Some(Os::Windows),
        modes: None,
        symptom: "the node keeps an HNS load balancer for a Service that no longer exists (kube-proxy's cleanup missed it): no flow breaks until the address is reused, but the node's policies no longer match the API",
    },
];

// The rows are in the enum's order, one per variant: a fault's row is `FAULTS[fault as usize]`.
const _: () = {
    assert!(FAULTS.len() == Fault::HnsLeakedPolicies as usize + 1);
    let mut i = 0;
    while i < FAULTS.len() {
        assert!(FAULTS[i].fault as usize == i);
        i += 1;
    }
};

/// Every fault, in the order `mixcheck sim faults` lists them (the table's).
pub const ALL: &[Fault] = &faults_of::<{ FAULTS.len() }>(FAULTS);

const fn faults_of<const N: usize>(rows: &[FaultSpec]) -> [Fault; N] {
    let mut out = [Fault::KubeletStopped; N];
    let mut i = 0;
    while i < N {
        out[i] = rows[i].fault;
        i += 1;
    }
    out
}

impl Fault {
    /// The fault's row of [`FAULTS`].
    pub fn spec(self) -> &'static FaultSpec {
        &FAULTS[self as usize]
    }

    /// The name used in topologies and on the command line.
    pub fn name(self) -> &'static str {
        self.spec().name
    }

    /// The fault with this name.
    pub fn parse(name: &str) -> Option<Fault> {
        FAULTS.iter().find(|row| row.name == name).map(|row| row.fault)
    }

    /// The id of the documented rule the fault breaks.
    pub fn rule(self) -> &'static str {
        self.spec().rule
    }

    /// Whether the fault only exists on Windows nodes.
    pub fn windows_only(self) -> bool {
        self.spec().os == Some(Os::Windows)
    }

    /// The network modes where the fault can occur (None: any).
    pub fn modes(self) -> Option<&'static [NetworkMode]> {
        self.spec().modes
    }

    /// Whether the fault can be injected on a node of this OS in a network of this mode; the
    /// error says why not.
    pub fn check(self, os: Os, mode: NetworkMode) -> Result<(), String> {
        let spec = self.spec();
        if let Some(only) = spec.os.filter(|only| *only != os) {
            let shown = match only {
                Os::Linux => "Linux",
                Os::Windows => "Windows",
            };
            return Err(format!("{self} exists only on {shown} nodes"));
        }
        match spec.modes {
            Some(modes) if !modes.contains(&mode) => Err(format!(
                "{self} needs network.mode {}, not {}",
                modes.iter().map(|m| m.as_str()).collect::<Vec<_>>().join(" or "),
                mode.as_str()
            )),
            _ => Ok(()),
        }
    }

    /// Whether the fault can occur with this pod network plugin: flanneld's faults (its subnet
    /// file, its wait for the HNS network, its VXLAN backend, the stale source VIP of its
    /// re-join) need flannel; the ExceptionList faults live in a CNI configuration's
    /// OutBoundNAT policy, which the VPC CNI's vpc-bridge does not write. A missing HNS network
    /// stays missing only where the network is created once at node set-up and the CNI plugin
    /// only looks it up: flannel (flanneld creates it, win-bridge/win-overlay look it up) and
    /// GKE (`k8s-node-setup.psm1` creates `l2bridge`, `sdnbridge` looks it up). Azure CNI, the
    /// VPC CNI and Calico create their network when a pod is set up and it is missing.
    pub fn check_network(self, network: PodNetwork) -> Result<(), String> {
        if self == Self::HnsNetworkMissing {
            let recreated = match network {
                PodNetwork::AzureCni | PodNetwork::AzureCniOverlay => Some(
                    "Azure CNI's azure-vnet plugin creates its HNS network azure when a pod is set up and the network is missing (Azure/azure-container-networking cni/network/network.go, network/network_windows.go)",
                ),
                PodNetwork::VpcCni => Some(
                    "the VPC CNI's vpc-bridge plugin creates its HNS network vpcbr… when a pod is set up and the network is missing (aws/amazon-vpc-cni-plugins plugins/vpc-bridge/network/bridge_windows.go)",
                ),
                PodNetwork::Calico => Some(
                    "Calico's CNI plugin creates its HNS network Calico when a pod is set up and the network is missing (projectcalico/calico cni-plugin, EnsureNetworkExists)",
                ),
                PodNetwork::Transparent => Some("a transparent network's HNS network is not modelled"),
                PodNetwork::Flannel | PodNetwork::GkeWinBridge => None,
            };
            return match recreated {
                Some(why) => Err(format!(
                    "{self} cannot last on a pod network of {}: {why}",
                    network.as_str()
                )),
                None => Ok(()),
            };
        }
        let allowed: &[PodNetwork] = match self {
            Self::FlannelSubnetEnvMissing
            | Self::FlanneldWaiting
            | Self::FlannelRejoinStaleSourceVip
            | Self::VxlanParamsMismatch => &[PodNetwork::Flannel],
            Self::MacSpoofingDisabled => &[PodNetwork::Flannel, PodNetwork::Calico, PodNetwork::AzureCni],
            Self::ExceptionListMissingCluster | Self::ExceptionListCoversOutside => &[
                PodNetwork::Flannel,
                PodNetwork::Calico,
                PodNetwork::AzureCni,
                PodNetwork::AzureCniOverlay,
                PodNetwork::GkeWinBridge,
            ],
            _ => return Ok(()),
        };
        if allowed.contains(&network) {
            Ok(())
        } else {
            Err(format!(
                "{self} needs a pod network of {}, not {}",
                allowed.iter().map(|n| n.as_str()).collect::<Vec<_>>().join(" or "),
                network.as_str()
            ))
        }
    }

    /// Whether the fault can occur on this platform and dataplane, the error saying why not:
    /// MAC spoofing is a setting of a Hyper-V VM's NIC (`Set-VMNetworkAdapter -MacAddressSpoofing`,
    /// WNET: needed for l2bridge on Hyper-V hosts), which the VMs of AKS, EKS and GKE do not
    /// expose to their users; GKE Dataplane V2 runs no kube-proxy (GKE docs "About GKE Dataplane
    /// V2": "implemented without kube-proxy"), so kube-proxy's faults cannot occur there.
    pub fn check_platform(self, platform: Platform, dataplane: Dataplane) -> Result<(), String> {
        match self {
            Self::MacSpoofingDisabled if platform.managed() => Err(format!(
                "{self} cannot occur on platform {}: MAC spoofing is a Hyper-V VM NIC setting (Set-VMNetworkAdapter -MacAddressSpoofing) that a managed platform's VMs do not expose",
                platform.as_str()
            )),
            Self::KubeProxyStopped
            | Self::KubeProxyNoHostnameOverride
            | Self::HnsLbPolicyMissing
            | Self::HnsStaleBackend
            | Self::HnsStaleRemoteEndpoint
            | Self::HnsLeakedPolicies
                if dataplane == Dataplane::V2 =>
            {
                Err(format!(
                    "{self} cannot occur with network.dataplane v2: Dataplane V2 runs no kube-proxy (anetd programs Services; GKE docs \"About GKE Dataplane V2\")"
                ))
            }
            _ => Ok(()),
        }
    }

    /// The documented symptom, for `mixcheck sim faults`.
    pub fn symptom(self) -> &'static str {
        self.spec().symptom
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A fault as a topology's `faults:` or `--fault NODE:FAULT@P` names it: the fault, and the
/// share P of connection attempts it holds for where it is intermittent (None: always).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Injected {
    pub fault: Fault,
    pub share: Option<f64>,
}

impl Injected {
    /// `dns-unreachable` or `dns-unreachable@0.3`; the error names what is wrong.
    pub fn parse(text: &str) -> Result<Injected, String> {
        let (name, share) = match text.split_once('@') {
            Some((name, p)) => (name, Some(p)),
            None => (text, None),
        };
        let fault = Fault::parse(name).ok_or_else(|| format!("unknown fault {name:?} (known: {})", names()))?;
        let Some(p) = share else {
            return Ok(Injected { fault, share: None });
        };
        let share = p
            .parse::<f64>()
            .ok()
            .filter(|p| *p > 0.0 && *p <= 1.0)
            .ok_or_else(|| format!("{text:?}: the share after @ must be a number in (0, 1], not {p:?}"))?;
        if !fault.intermittent() {
            return Err(format!(
                "{fault} cannot be intermittent (@P): only {} are decided per connection attempt",
                ALL.iter()
                    .filter(|f| f.intermittent())
                    .map(|f| f.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        Ok(Injected {
            fault,
            share: Some(share),
        })
    }
}

impl Fault {
    /// Whether the fault may hold for a share of connection attempts (`@P`): it acts only in the
    /// network fabric's decision of each connection, never in what a node lists or reports, so
    /// that holding it for some attempts is the whole of the fault. Intermittent DNS failures
    /// from Windows pods are the pain operators report most (aws/containers-roadmap#2176,
    /// kubernetes#137381); a NIC dropping pod frames now and then is the same at layer 2.
    pub fn intermittent(self) -> bool {
        matches!(self, Fault::DnsUnreachable | Fault::MacSpoofingDisabled)
    }
}

/// The names of every fault, comma separated (for error messages).
pub fn names() -> String {
    ALL.iter().map(|f| f.name()).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `FAULT@P`: a share in (0, 1] of an intermittent fault; anything else names its mistake.
    #[rstest::rstest]
    #[case::always("dns-unreachable", Ok((Fault::DnsUnreachable, None)))]
    #[case::share("dns-unreachable@0.3", Ok((Fault::DnsUnreachable, Some(0.3))))]
    #[case::whole("mac-spoofing-disabled@1", Ok((Fault::MacSpoofingDisabled, Some(1.0))))]
    #[case::zero("dns-unreachable@0", Err("must be a number in (0, 1]"))]
    #[case::above_one("dns-unreachable@1.5", Err("must be a number in (0, 1]"))]
    #[case::not_a_number("dns-unreachable@often", Err("must be a number in (0, 1]"))]
    #[case::not_intermittent("kubelet-stopped@0.5", Err("kubelet-stopped cannot be intermittent"))]
    #[case::unknown("dns-slow@0.5", Err("unknown fault \"dns-slow\""))]
    fn injected_faults_parse(#[case] text: &str, #[case] expect: Result<(Fault, Option<f64>), &str>) {
        match (Injected::parse(text), expect) {
            (Ok(got), Ok((fault, share))) => assert_eq!((got.fault, got.share), (fault, share)),
            (Err(why), Err(part)) => assert!(why.contains(part), "{why}"),
            (got, expect) => panic!("{text}: {got:?}, expected {expect:?}"),
        }
    }

    #[test]
    fn names_round_trip_and_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for f in ALL {
            assert_eq!(Fault::parse(f.name()), Some(*f));
            assert!(seen.insert(f.name()), "{f} listed twice");
            assert!(!f.symptom().is_empty());
        }
        assert_eq!(Fault::parse("nope"), None);
    }

    /// The enum's variants, by an exhaustive match: a new variant does not compile until it
    /// is given its place here (and so a row in the table).
    fn position(fault: Fault) -> usize {
        match fault {
            Fault::KubeletStopped => 0,
            Fault::MacSpoofingDisabled => 1,
            Fault::ExceptionListMissingCluster => 2,
            Fault::ExceptionListCoversOutside => 3,
            Fault::KubeProxyNoHostnameOverride => 4,
            Fault::KubeProxyStopped => 5,
            Fault::PauseImageWrongBuild => 6,
            Fault::FlannelSubnetEnvMissing => 7,
            Fault::FlanneldWaiting => 8,
            Fault::HnsNetworkMissing => 9,
            Fault::DnsUnreachable => 10,
            Fault::PortExhaustion => 11,
            Fault::FlannelRejoinStaleSourceVip => 12,
            Fault::VxlanParamsMismatch => 13,
            Fault::NetpolAgentStopped => 14,
            Fault::HnsLbPolicyMissing => 15,
            Fault::HnsStaleBackend => 16,
            Fault::HnsStaleRemoteEndpoint => 17,
            Fault::HnsLeakedPolicies => 18,
        }
    }

    #[test]
    fn the_table_has_one_row_per_fault_in_order() {
        assert_eq!(FAULTS.len(), position(Fault::HnsLeakedPolicies) + 1);
        assert_eq!(FAULTS.len(), ALL.len());
        let mut names = std::collections::HashSet::new();
        for (i, (row, fault)) in FAULTS.iter().zip(ALL).enumerate() {
            assert_eq!(row.fault, *fault, "row {i} is not ALL[{i}]");
            assert_eq!(
                position(row.fault),
                i,
                "row {i} ({}) is out of the enum's order",
                row.name
            );
            assert_eq!(row.fault.spec(), row);
            assert!(names.insert(row.name), "{} named twice", row.name);
            assert!(!row.rule.is_empty() && !row.symptom.is_empty(), "{}", row.name);
        }
    }

    #[rstest::rstest]
    #[case::any_os(Fault::KubeletStopped, Os::Linux, NetworkMode::Overlay, true)]
    #[case::windows_only(Fault::KubeProxyStopped, Os::Linux, NetworkMode::L2bridge, false)]
    #[case::l2bridge_only(Fault::MacSpoofingDisabled, Os::Windows, NetworkMode::Overlay, false)]
    #[case::flannel_modes(Fault::HnsNetworkMissing, Os::Windows, NetworkMode::Overlay, true)]
    #[case::not_azure_cni(Fault::FlanneldWaiting, Os::Windows, NetworkMode::L2tunnel, false)]
    #[case::overlay_only(Fault::VxlanParamsMismatch, Os::Windows, NetworkMode::L2bridge, false)]
    fn a_row_says_where_its_fault_can_occur(
        #[case] fault: Fault,
        #[case] os: Os,
        #[case] mode: NetworkMode,
        #[case] allowed: bool,
    ) {
        assert_eq!(fault.check(os, mode).is_ok(), allowed, "{:?}", fault.check(os, mode));
    }
}
