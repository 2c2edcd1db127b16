//! The Services the run makes only to read the Windows nodes' HNS load balancers against
//! (`crate::probes::hnslb`): a selectorless Service with 1,025 hand-written EndpointSlice
//! addresses and no pods, beside a one-backend control (NET-SVC-BACKEND-LIMIT), and a
//! LoadBalancer over the run's servers annotated `preserve-destination: "true"`
//! (NET-PRESERVE-DEST). Made once per run where a selected check needs them and the cluster has
//! Windows nodes; deleted with the run's objects (by its label).

use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::Api;
use serde_json::json;

use super::{Applying, DeployError, LoadBalancer, SHARED_SERVER, ServiceInfo, apply};
use crate::cluster::fixture::RUN_LABEL;

/// The Service with more backends than any documented HNS load balancer takes.
pub const OVER_LIMIT: &str = "backends-over";
/// Its control: the same kind of Service with one backend, made beside it, so that a missing
/// load balancer for the first is told apart from a kube-proxy that has not synced yet.
pub const CONTROL: &str = "backends-control";
/// The LoadBalancer annotated `preserve-destination: "true"`.
pub const PRESERVE: &str = "preserve-dest";
/// One more backend than the documentation's current limit ("more than 1024 … not supported",
/// WNET; 64 in older pages: W20, W22, WNETo).
pub const OVER_LIMIT_BACKENDS: u32 = 1025;
/// The most endpoints one EndpointSlice may hold (API validation).
const PER_SLICE: usize = 1000;

/// The subjects the run made, with the addresses the cluster gave them.
#[derive(Debug, Clone, Default)]
pub struct HnsSubjects {
    /// The over-limit Service and its control, when made.
    pub over: Option<ServiceInfo>,
    pub control: Option<ServiceInfo>,
    /// The preserve-destination LoadBalancer and its ingress address, when made.
    pub preserve: Option<LoadBalancer>,
    /// The preserve-destination Service's own addresses (its cluster IP is programmed first).
    pub preserve_service: Option<ServiceInfo>,
    /// Why the hand-written EndpointSlices could not be made (the cluster refused them).
    pub refused: Option<String>,
}

/// Backend `i`'s address: in 198.18.0.0/15, RFC 2544's benchmarking range, which nothing
/// routes — no connection is ever made to them.
fn backend_address(i: u32) -> String {
    format!("198.18.{}.{}", i / 250, i % 250 + 1)
}

/// The EndpointSlices of a selectorless Service `service` with `count` ready addresses, at
/// most [`PER_SLICE`] each, labelled with the run's labels and as managed by mixcheck (not by
/// the EndpointSlice controller, which would delete them).
pub fn slices(
    service: &str,
    first: u32,
    count: u32,
    labels: &std::collections::BTreeMap<String, String>,
) -> Vec<(String, serde_json::Value)> {
    let addresses: Vec<String> = (first..first + count).map(backend_address).collect();
    addresses
        .chunks(PER_SLICE)
        .enumerate()
        .map(|(n, chunk)| {
            let mut l = labels.clone();
            l.insert("kubernetes.io/service-name".into(), service.into());
            l.insert("endpointslice.kubernetes.io/managed-by".into(), "mixcheck.io".into());
            let name = format!("{service}-{n}");
            let endpoints: Vec<serde_json::Value> = chunk
                .iter()
                .map(|ip| json!({"addresses": [ip], "conditions": {"ready": true}}))
                .collect();
            let slice = json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                "metadata": {"name": name, "labels": l}, "addressType": "IPv4", "endpoints": endpoints,
                "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]});
            (name, slice)
        })
        .collect()
}

impl Applying<'_, '_> {
    /// The subjects the selected checks need, where the run deploys to a Windows node.
    pub(super) async fn hns_subjects(&mut self) -> Result<(), DeployError> {
        let plan = self.plan;
        let windows = plan.nodes.iter().any(|(_, n)| n.os == mixcheck_reports::Os::Windows);
        if !windows {
            return Ok(());
        }
        if plan.needs.backend_limit {
            let api: Api<EndpointSlice> = Api::namespaced(kube::Client::from(self.services.clone()), plan.ns);
            for (name, count, first) in [(OVER_LIMIT, OVER_LIMIT_BACKENDS, 0), (CONTROL, 1, OVER_LIMIT_BACKENDS)] {
                let spec = json!({"type": "ClusterIP",
                    "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}]});
                let svc = plan.service(name, spec);
                self.service(name, &svc).await?;
                for (slice_name, slice) in slices(name, first, count, &plan.labels) {
                    let mut refused = std::collections::BTreeMap::new();
                    match apply(&api, "endpointslice", &slice_name, &slice, &mut refused).await {
                        Ok(()) => {}
                        // The run's identity may not write EndpointSlices (an optional
                        // permission): this check only goes without them.
                        Err(DeployError::Api {
                            cause: kube::Error::Api(s),
                            ..
                        }) if s.code == 403 => {
                            self.out.dep.hns.refused = Some(format!(
                                "the credentials may not create EndpointSlices (discovery.k8s.io) in the run's namespace: {} (deploy/rbac.yaml and deploy/rbac-namespaced.yaml grant it)",
                                s.message
                            ));
                            break;
                        }
                        Err(e) => return Err(e),
                    }
                    if let Some(r) = refused.into_values().next() {
                        self.out.dep.hns.refused = Some(format!("EndpointSlice {slice_name}: {}", r.problem()));
                        break;
                    }
                }
            }
        }
        if plan.needs.preserve_destination {
            let spec = json!({"type": "LoadBalancer",
                "selector": {SHARED_SERVER.0: SHARED_SERVER.1, RUN_LABEL: plan.run_id},
                "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}]});
            let mut svc = plan.service(PRESERVE, spec);
            svc["metadata"]["annotations"] = json!({"preserve-destination": "true"});
            self.service(PRESERVE, &svc).await?;
        }
        Ok(())
    }
}

/// Files the subjects' addresses from the run's Services as listed (`by_name`: name → its
/// addresses; `ingress`: a Service's load-balancer address), keeping a refusal.
pub(super) fn address(
    hns: &mut HnsSubjects,
    by_name: &std::collections::BTreeMap<String, ServiceInfo>,
    ingress: impl Fn(&str) -> Option<Option<String>>,
) {
    hns.over = by_name.get(OVER_LIMIT).cloned();
    hns.control = by_name.get(CONTROL).cloned();
    hns.preserve_service = by_name.get(PRESERVE).cloned();
    hns.preserve = ingress(PRESERVE).map(|ingress| LoadBalancer {
        name: PRESERVE.to_string(),
        ingress,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backends_fill_slices_of_at_most_a_thousand_with_distinct_unroutable_addresses() {
        let labels = std::collections::BTreeMap::from([("mixcheck.io/run".to_string(), "r1".to_string())]);
        let made = slices(OVER_LIMIT, 0, OVER_LIMIT_BACKENDS, &labels);
        let sizes: Vec<usize> = made
            .iter()
            .map(|(_, s)| s["endpoints"].as_array().map_or(0, Vec::len))
            .collect();
        assert_eq!(sizes, [1000, 25]);
        let mut all: Vec<&str> = made
            .iter()
            .flat_map(|(_, s)| s["endpoints"].as_array().into_iter().flatten())
            .filter_map(|e| e["addresses"][0].as_str())
            .collect();
        assert!(all.iter().all(|a| a.starts_with("198.18.")), "{all:?}");
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 1025);
        let (_, first) = &made[0];
        assert_eq!(first["metadata"]["labels"]["kubernetes.io/service-name"], OVER_LIMIT);
        assert_eq!(first["metadata"]["labels"]["mixcheck.io/run"], "r1");
        assert_ne!(
            first["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"],
            "endpointslice-controller.k8s.io"
        );
        // The control's one backend is none of the over-limit Service's.
        let control = slices(CONTROL, OVER_LIMIT_BACKENDS, 1, &labels);
        let ip = control[0].1["endpoints"][0]["addresses"][0]
            .as_str()
            .unwrap_or_default();
        assert!(!all.contains(&ip), "{ip}");
    }
}
