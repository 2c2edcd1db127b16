//! The `kubernetes` Service: its endpoints are the API server's host addresses, not pods
//! (`kubectl get endpoints kubernetes` lists the control plane's address and port 6443), so its
//! ClusterIP leads to a node's own stack rather than to a pod. A Windows host cannot reach
//! pod-backed ClusterIPs (WDBG, WUG), but a HostProcess pod on containerd 1.7 or later reaches
//! the API server through this Service: the upstream e2e "should support querying api-server
//! using in-cluster config" (test/e2e/windows/host_process.go, E2E/host_process) does exactly
//! that with the in-cluster configuration's KUBERNETES_SERVICE_HOST.

use super::{Decision, Endpoint, Fabric, Failure, Flow, Src};

/// The port the API server listens on at its host address (the Service's targetPort).
pub const API_SERVER_PORT: u16 = 6443;

/// The port of a managed API server's endpoint (AKS, EKS and GKE list port 443).
pub const MANAGED_API_SERVER_PORT: u16 = 443;

impl Fabric {
    /// Whether service `svc` is `default/kubernetes`.
    pub(super) fn is_api_service(&self, svc: usize) -> bool {
        self.services
            .get(svc)
            .is_some_and(|s| s.namespace == "default" && s.name == "kubernetes")
    }

    /// Whether the flow comes from the host network of a Windows node that reaches the API
    /// server through the `kubernetes` Service (HostProcess on containerd 1.7+).
    pub(super) fn windows_host_reaches_api(&self, flow: &Flow, svc: usize) -> bool {
        match flow.src {
            Src::Node(n) => {
                self.is_api_service(svc) && self.nodes.get(n).is_some_and(|node| node.windows && node.vip_from_host)
            }
            _ => false,
        }
    }

    /// A flow to the `kubernetes` ClusterIP, past the client node's proxy: to the API server's
    /// host address, across the node network.
    pub(super) fn to_api_server(&self, flow: &Flow) -> Decision {
        let Some(cp) = self.api_server else {
            // AKS, EKS and GKE run the API server off the cluster's nodes: the Service's endpoint
            // is the provider's address, reached across the node network like an outside host.
            let Some(host) = self.managed_api_server else {
                return Decision::fail(
                    Failure::Timeout,
                    "NET-POD-SVC-CLUSTERIP",
                    "the kubernetes Service has no endpoints (no control-plane node)",
                );
            };
            if let Some(v) = self.pod_out(flow.src, true, flow.proto) {
                return v;
            }
            return Decision::ok(
                Endpoint::Outside {
                    host,
                    port: MANAGED_API_SERVER_PORT,
                },
                self.source_ip(flow.src),
                "SEC-HOSTPROCESS",
                "the kubernetes Service leads to the managed API server",
            );
        };
        let from = self.src_node(flow.src);
        if let Some(v) = self.pod_out(flow.src, from != Some(cp), flow.proto) {
            return v;
        }
        let (rule, why) = match flow.src {
            Src::Node(n) if self.nodes[n].windows => (
                "SEC-HOSTPROCESS",
                "a HostProcess pod reaches the API server through the kubernetes Service",
            ),
            Src::Node(_) => (
                "HIST-1.9-VALIDATION",
                "a Linux node reaches the API server through the kubernetes Service",
            ),
            _ => (
                "NET-POD-SVC-CLUSTERIP",
                "pods reach the API server through the kubernetes Service",
            ),
        };
        Decision::ok(
            Endpoint::Node {
                node: cp,
                port: API_SERVER_PORT,
            },
            self.source_ip(flow.src),
            rule,
            why,
        )
    }
}
