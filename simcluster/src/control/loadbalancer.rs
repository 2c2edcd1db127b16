//! The load-balancer controller a cloud (or MetalLB) runs: every `type: LoadBalancer` Service
//! gets an ingress address from the cluster's pool, with the events the cloud provider's service
//! controller records (`EnsuringLoadBalancer`, then `EnsuredLoadBalancer`), and keeps it until
//! the Service is deleted or changes type
//! (<https://kubernetes.io/docs/concepts/services-networking/service/#loadbalancer>;
//! k8s.io/cloud-provider controllers/service). Runs only where the topology has one
//! (`network.loadBalancers`).

use std::collections::BTreeSet;
use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::control::events::{self, Kind, Source};
use crate::store::{Part, Store, resources};
use crate::vocab::json as j;

/// The addresses ingress IPs are taken from, in order.
pub struct Pool(Vec<Ipv4Addr>);

impl Pool {
    /// `count` addresses of the /16 of 127.0.0.0/8 that `base` (a node address) is in, on a
    /// third octet of their own, so they never collide with node addresses.
    pub fn beside(base: Ipv4Addr, count: usize) -> Pool {
        let [a, b, c, _] = base.octets();
        let third = c.wrapping_add(128);
        Pool(
            (0..count)
                .map(|i| Ipv4Addr::new(a, b, third.wrapping_add((i / 250) as u8), (i % 250) as u8 + 2))
                .collect(),
        )
    }
}

/// The ingress addresses a Service holds.
fn ingress_of(v: &Value) -> Vec<Ipv4Addr> {
    j::get(v, "/status/loadBalancer/ingress")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|i| j::str(i, "/ip").parse().ok())
        .collect()
}

/// Gives each LoadBalancer Service without an address the next free one, until the store closes.
pub async fn run(store: Arc<Store>, pool: Pool) {
    let mut feed = store.subscribe();
    loop {
        assign(&store, &pool);
        let deadline = tokio::time::sleep(Duration::from_secs(2));
        tokio::pin!(deadline);
        loop {
            tokio::select! {
                event = feed.recv() => match event {
                    Ok(e) if e.resource.group.is_empty() && e.resource.plural == "services" => break,
                    Ok(_) => continue,
                    Err(_) => break,
                },
                _ = &mut deadline => break,
            }
        }
    }
}

/// One pass: addresses for the Services that lack one; none taken by Services of another type.
fn assign(store: &Store, pool: &Pool) {
    let services = store.list(resources::core("services"), None).0;
    let mut taken: BTreeSet<Ipv4Addr> = BTreeSet::new();
    for svc in &services {
        if j::str(svc.value(), "/spec/type") == "LoadBalancer" {
            taken.extend(ingress_of(svc.value()));
        }
    }
    let source = Source::controller("service-controller");
    for svc in &services {
        let v = svc.value();
        let load_balancer = j::str(v, "/spec/type") == "LoadBalancer";
        let held = ingress_of(v);
        if !load_balancer && !held.is_empty() {
            // No longer a LoadBalancer: the address goes back to the pool.
            let _ = store.modify(
                resources::core("services"),
                svc.namespace(),
                svc.name(),
                Part::Status,
                |s| {
                    s["status"]["loadBalancer"] = json!({});
                    Ok(())
                },
            );
            continue;
        }
        if !load_balancer || !held.is_empty() {
            continue;
        }
        let _ = events::record(
            store,
            v,
            None,
            Kind::Normal,
            "EnsuringLoadBalancer",
            "Ensuring load balancer",
            &source,
        );
        let Some(ip) = pool.0.iter().find(|ip| !taken.contains(ip)).copied() else {
            let _ = events::record(
                store,
                v,
                None,
                Kind::Warning,
                "SyncLoadBalancerFailed",
                "Error syncing load balancer: failed to ensure load balancer: no available IPs in the pool",
                &source,
            );
            continue;
        };
        let written = store.modify(
            resources::core("services"),
            svc.namespace(),
            svc.name(),
            Part::Status,
            |s| {
                s["status"]["loadBalancer"] = json!({"ingress": [{"ip": ip.to_string()}]});
                Ok(())
            },
        );
        if written.is_ok() {
            taken.insert(ip);
            let _ = events::record(
                store,
                v,
                None,
                Kind::Normal,
                "EnsuredLoadBalancer",
                "Ensured load balancer",
                &source,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pool_is_beside_the_node_addresses_and_apart_from_them() {
        let pool = Pool::beside(Ipv4Addr::new(127, 9, 40, 12), 3);
        assert_eq!(
            pool.0,
            [
                Ipv4Addr::new(127, 9, 168, 2),
                Ipv4Addr::new(127, 9, 168, 3),
                Ipv4Addr::new(127, 9, 168, 4)
            ]
        );
    }
}
