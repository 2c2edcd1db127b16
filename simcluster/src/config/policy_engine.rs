//! The cluster's NetworkPolicy engine (topology `network.policyEngine`) and where each engine
//! documents that it enforces policy: every node for Calico and Antrea, Windows Server 2022 only
//! among Windows builds for Azure NPM, Linux nodes only for the Amazon VPC CNI's network policy
//! agent, nowhere for flannel alone.

use serde::Deserialize;

use crate::config::faults::Fault;
use crate::config::platform::{Os, PodNetwork};

/// What enforces NetworkPolicy objects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PolicyEngine {
    /// Nothing: flannel "is focused on networking" and leaves network policy to other projects
    /// (flannel README), and a managed cluster without a policy add-on enforces none.
    None,
    /// Calico (Felix; `calico-node`, `calico-node-windows`): Calico for Windows lists no
    /// Kubernetes NetworkPolicy feature as unsupported; its Windows limits are host endpoint
    /// policy, WireGuard and ALP (CAL).
    Calico,
    /// Antrea (`antrea-agent`, `antrea-agent-windows`): Windows nodes since 0.7.0; the one
    /// documented gap is policy on Service traffic without AntreaProxy (ANTREA-WIN), which pod-IP
    /// flows do not take.
    Antrea,
    /// Azure Network Policy Manager (`azure-npm`, `azure-npm-win`): Linux and Windows Server 2022
    /// (Azure/azure-container-networking `docs/npm.md`; AKS "Secure traffic between pods").
    AzureNpm,
    /// The Amazon VPC CNI's network policy agent (`aws-eks-nodeagent` in `aws-node`): "you can
    /// apply the policies to Amazon EC2 Linux nodes only" (EKS user guide, cni-network-policy).
    VpcCni,
}

impl PolicyEngine {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Calico => "calico",
            Self::Antrea => "antrea",
            Self::AzureNpm => "azure-npm",
            Self::VpcCni => "vpc-cni",
        }
    }

    /// The engine as written, else the pod network's own: Calico enforces policy itself; flannel,
    /// Azure CNI without `--network-policy`, the VPC CNI without its agent enabled ("network
    /// policies are not enabled by default", VPC CNI network policy FAQ) and GKE's Windows
    /// bridge enforce none.
    pub fn resolve(given: Option<PolicyEngine>, network: PodNetwork) -> PolicyEngine {
        given.unwrap_or(match network {
            PodNetwork::Calico => Self::Calico,
            _ => Self::None,
        })
    }

    /// Whether the engine programs policies on a node of `os` and Windows `build` (the node's
    /// agent running): where its documentation says it runs.
    pub fn enforces_on(self, os: Os, build: Option<u32>) -> bool {
        match (self, os) {
            (Self::None, _) => false,
            (Self::Calico | Self::Antrea, _) | (Self::AzureNpm | Self::VpcCni, Os::Linux) => true,
            (Self::AzureNpm, Os::Windows) => build == Some(20348),
            (Self::VpcCni, Os::Windows) => false,
        }
    }

    /// Whether `fault` can occur on a node of `os` (`build`) under this engine: a policy agent
    /// can only stop where one runs.
    pub fn check_fault(self, fault: Fault, os: Os, build: Option<u32>) -> Result<(), String> {
        if fault != Fault::NetpolAgentStopped || self.enforces_on(os, build) {
            return Ok(());
        }
        Err(format!(
            "{fault} needs a policy engine that runs on the node (network.policyEngine {} does not)",
            self.as_str()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::calico_windows(PolicyEngine::Calico, Os::Windows, Some(17763), true)]
    #[case::antrea_windows(PolicyEngine::Antrea, Os::Windows, Some(20348), true)]
    #[case::npm_ws2022(PolicyEngine::AzureNpm, Os::Windows, Some(20348), true)]
    #[case::npm_ws2019(PolicyEngine::AzureNpm, Os::Windows, Some(17763), false)]
    #[case::npm_linux(PolicyEngine::AzureNpm, Os::Linux, None, true)]
    #[case::vpc_windows(PolicyEngine::VpcCni, Os::Windows, Some(20348), false)]
    #[case::vpc_linux(PolicyEngine::VpcCni, Os::Linux, None, true)]
    #[case::none_linux(PolicyEngine::None, Os::Linux, None, false)]
    fn engines_enforce_where_documented(
        #[case] engine: PolicyEngine,
        #[case] os: Os,
        #[case] build: Option<u32>,
        #[case] enforces: bool,
    ) {
        assert_eq!(engine.enforces_on(os, build), enforces);
        assert_eq!(
            engine.check_fault(Fault::NetpolAgentStopped, os, build).is_ok(),
            enforces
        );
    }

    #[rstest]
    #[case::flannel(PodNetwork::Flannel, PolicyEngine::None)]
    #[case::calico(PodNetwork::Calico, PolicyEngine::Calico)]
    #[case::azure(PodNetwork::AzureCni, PolicyEngine::None)]
    #[case::vpc(PodNetwork::VpcCni, PolicyEngine::None)]
    fn the_default_follows_the_pod_network(#[case] network: PodNetwork, #[case] engine: PolicyEngine) {
        assert_eq!(PolicyEngine::resolve(None, network), engine);
        assert_eq!(
            PolicyEngine::resolve(Some(PolicyEngine::Antrea), network),
            PolicyEngine::Antrea
        );
    }
}
