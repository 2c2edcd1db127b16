//! Service addressing as the apiserver's allocators do it: ClusterIPs from the service CIDR
//! (the `kubernetes` service at .1, kube-dns at .10), NodePorts in 30000–32767, with the
//! upstream `Invalid` errors for taken or out-of-range values; headless and ExternalName
//! services get none. On a dual-stack cluster a Service asking `PreferDualStack` or
//! `RequireDualStack` gets an IPv6 ClusterIP too, at the same offset in the IPv6 service range
//! (<https://kubernetes.io/docs/concepts/services-networking/dual-stack/#services>).

use std::collections::BTreeSet;
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::store::api_error::{ApiError, Cause};
use crate::store::resources;
use crate::store::{Obj, Store};

/// The NodePort range.
pub const NODE_PORTS: std::ops::RangeInclusive<i64> = 30000..=32767;

/// Told of a Service's TCP NodePorts before the Service is stored: what must stand on them
/// before any client can learn them (the firewall in front of private node addresses,
/// `network::firewall`).
pub trait NodePortGuard: Send + Sync + std::fmt::Debug {
    fn guard(&self, ports: &[u16]);
}

/// Allocates service addresses; one lock makes allocation and creation atomic together.
#[derive(Debug)]
pub struct Allocator {
    base: u32,
    size: u32,
    /// Dual-stack: the IPv6 service range (`network.serviceCidrV6`); None on single-stack.
    ipv6: Option<String>,
    lock: Mutex<()>,
    /// Told of each created Service's NodePorts before it is stored.
    guard: Option<Arc<dyn NodePortGuard>>,
}

/// Parses `a.b.c.d/n` into (network, size).
pub fn parse_cidr(cidr: &str) -> Option<(u32, u32)> {
    let (ip, bits) = cidr.split_once('/')?;
    let ip: Ipv4Addr = ip.parse().ok()?;
    let bits: u32 = bits.parse().ok().filter(|b| (8..=30).contains(b))?;
    let size = 1u32 << (32 - bits);
    Some((u32::from(ip) & !(size - 1), size))
}

impl Allocator {
    pub fn new(service_cidr: &str) -> Self {
        let (base, size) = parse_cidr(service_cidr).unwrap_or((u32::from(Ipv4Addr::new(10, 96, 0, 0)), 1 << 20));
        Self {
            base,
            size,
            ipv6: None,
            lock: Mutex::new(()),
            guard: None,
        }
    }

    /// The same allocator, telling `guard` of each new Service's TCP NodePorts before the
    /// Service is stored.
    pub fn with_guard(mut self, guard: Option<Arc<dyn NodePortGuard>>) -> Self {
        self.guard = guard;
        self
    }

    /// The same allocator on a dual-stack cluster with this IPv6 service range (None: single-stack).
    pub fn with_ipv6(mut self, service_cidr_v6: Option<&str>) -> Self {
        self.ipv6 = service_cidr_v6.map(str::to_string);
        self
    }

    /// The IPv6 ClusterIP beside the IPv4 one `ip` (dual-stack clusters only).
    fn ipv6_of(&self, ip: &str) -> Option<String> {
        let cidr = self.ipv6.as_deref()?;
        let v4: Ipv4Addr = ip.parse().ok()?;
        let offset = u32::from(v4).checked_sub(self.base)?;
        crate::vocab::ipv6::service_address(cidr, offset).map(|a| a.to_string())
    }

    /// Why the API server refuses a Service's `ipFamilyPolicy`/`ipFamilies` on this cluster:
    /// RequireDualStack or an IPv6 family on a single-stack cluster (upstream's validation), and
    /// an IPv6-primary Service, which the bundled cluster does not model.
    fn family_problem(&self, policy: &str, families: &[String]) -> Option<Cause> {
        if !matches!(policy, "SingleStack" | "PreferDualStack" | "RequireDualStack") {
            return Some(Cause::unsupported(
                "spec.ipFamilyPolicy",
                policy,
                &["PreferDualStack", "RequireDualStack", "SingleStack"],
            ));
        }
        if self.ipv6.is_none() {
            if policy == "RequireDualStack" {
                return Some(Cause::invalid(
                    "spec.ipFamilyPolicy",
                    policy,
                    "this cluster is not configured for dual-stack services",
                ));
            }
            if let Some(i) = families.iter().position(|f| f == "IPv6") {
                return Some(Cause::invalid(
                    format!("spec.ipFamilies[{i}]"),
                    "IPv6",
                    "not configured on this cluster",
                ));
            }
        } else if families.first().is_some_and(|f| f == "IPv6") {
            return Some(Cause::invalid(
                "spec.ipFamilies[0]",
                "IPv6",
                "the bundled cluster models IPv4-primary dual-stack only: list IPv4 first",
            ));
        }
        None
    }

    /// The n-th address of the service CIDR.
    pub fn address(&self, n: u32) -> Ipv4Addr {
        Ipv4Addr::from(self.base + n)
    }

    fn contains(&self, ip: Ipv4Addr) -> bool {
        let v = u32::from(ip);
        v > self.base && v < self.base + self.size - 1
    }

    /// Fills in `spec.clusterIP(s)` and node ports of a service about to be created, then
    /// creates it, all under the allocator's lock.
    pub fn create(&self, store: &Store, ns: &str, mut svc: Value) -> Result<Obj, ApiError> {
        let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        let (ips, ports) = in_use(store, None);
        self.assign(&mut svc, &ips, &ports, None)?;
        if let Some(guard) = &self.guard {
            let ports = tcp_node_ports(&svc);
            if !ports.is_empty() {
                guard.guard(&ports);
            }
        }
        store.create(resources::core("services"), ns, svc)
    }

    #[cfg(test)] // used by the tests only
    /// Keeps a service's addresses across an update (they are immutable once allocated) and
    /// allocates node ports a NodePort update adds.
    pub fn update(&self, store: &Store, old: &Value, new: &mut Value) -> Result<(), ApiError> {
        let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        let uid = old.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or("");
        let (ips, ports) = in_use(store, Some(uid));
        self.assign(new, &ips, &ports, Some(old))
    }

    fn assign(
        &self,
        svc: &mut Value,
        ips: &BTreeSet<u32>,
        ports: &BTreeSet<i64>,
        old: Option<&Value>,
    ) -> Result<(), ApiError> {
        let name = svc
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let invalid = |causes: Vec<Cause>| ApiError::Invalid {
            group: String::new(),
            kind: "Service".into(),
            name: name.clone(),
            causes,
        };
        let ty = svc
            .pointer("/spec/type")
            .and_then(Value::as_str)
            .unwrap_or("ClusterIP")
            .to_string();
        let Some(spec) = svc.get_mut("spec").and_then(Value::as_object_mut) else {
            return Ok(());
        };
        if ty == "ExternalName" {
            spec.remove("clusterIP");
            spec.remove("clusterIPs");
            return Ok(());
        }
        let old_ip = old
            .and_then(|o| o.pointer("/spec/clusterIP"))
            .and_then(Value::as_str)
            .map(str::to_string);
        let requested = spec.get("clusterIP").and_then(Value::as_str).unwrap_or("").to_string();
        let ip = match (old_ip, requested.as_str()) {
            (Some(old), r) if r.is_empty() || r == old => old,
            (Some(old), r) => {
                return Err(invalid(vec![Cause::invalid(
                    "spec.clusterIPs[0]",
                    r,
                    &format!("may not change once set (was {old})"),
                )]));
            }
            (None, "None") => "None".to_string(),
            (None, "") => {
                // .1 is the kubernetes service and .10 kube-dns, as on kubeadm clusters.
                let free = (2..self.size.saturating_sub(1)).find(|n| *n != 10 && !ips.contains(&(self.base + n)));
                match free {
                    Some(n) => self.address(n).to_string(),
                    None => return Err(ApiError::Internal("the service CIDR is exhausted".into())),
                }
            }
            (None, r) => {
                let parsed: Option<Ipv4Addr> = r.parse().ok();
                match parsed {
                    Some(ip) if self.contains(ip) && !ips.contains(&u32::from(ip)) => r.to_string(),
                    Some(ip) if self.contains(ip) => {
                        return Err(invalid(vec![Cause::invalid(
                            "spec.clusterIPs",
                            &format!("[]string{{{r:?}}}"),
                            &format!("failed to allocate IP {r}: provided IP is already allocated"),
                        )]));
                    }
                    _ => {
                        return Err(invalid(vec![Cause::invalid(
                            "spec.clusterIPs",
                            &format!("[]string{{{r:?}}}"),
                            &format!("failed to allocate IP {r}: the provided IP ({r}) is not in the valid range"),
                        )]));
                    }
                }
            }
        };
        let policy = spec
            .get("ipFamilyPolicy")
            .and_then(Value::as_str)
            .unwrap_or("SingleStack")
            .to_string();
        let families: Vec<String> = spec
            .get("ipFamilies")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|f| f.as_str().map(str::to_string))
            .collect();
        if let Some(cause) = self.family_problem(&policy, &families) {
            return Err(invalid(vec![cause]));
        }
        spec.insert("clusterIP".into(), json!(ip));
        // PreferDualStack and RequireDualStack get both families on a dual-stack cluster
        // (IPv4, the cluster's primary family, first); PreferDualStack falls back to the one
        // family of a single-stack cluster and keeps its policy.
        let v6 = (policy != "SingleStack" && ip != "None")
            .then(|| self.ipv6_of(&ip))
            .flatten();
        match v6 {
            Some(v6) => {
                spec.insert("clusterIPs".into(), json!([ip, v6]));
                spec.insert("ipFamilies".into(), json!(["IPv4", "IPv6"]));
                spec.insert("ipFamilyPolicy".into(), json!(policy));
            }
            None => {
                spec.insert("clusterIPs".into(), json!([ip]));
                if ip != "None" {
                    spec.insert("ipFamilies".into(), json!(["IPv4"]));
                    spec.insert(
                        "ipFamilyPolicy".into(),
                        json!(if policy == "PreferDualStack" {
                            "PreferDualStack"
                        } else {
                            "SingleStack"
                        }),
                    );
                }
            }
        }
        spec.entry("internalTrafficPolicy").or_insert(json!("Cluster"));
        if ty != "NodePort" && ty != "LoadBalancer" {
            if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
                for p in ports.iter_mut().filter_map(Value::as_object_mut) {
                    p.remove("nodePort");
                }
            }
            return Ok(());
        }
        spec.entry("externalTrafficPolicy").or_insert(json!("Cluster"));
        let old_ports: Vec<i64> = old
            .and_then(|o| o.pointer("/spec/ports"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|p| p.get("nodePort").and_then(Value::as_i64))
            .collect();
        let mut taken: BTreeSet<i64> = ports.clone();
        let mut causes = Vec::new();
        if let Some(list) = spec.get_mut("ports").and_then(Value::as_array_mut) {
            for (i, p) in list.iter_mut().enumerate() {
                let Some(p) = p.as_object_mut() else { continue };
                match p.get("nodePort").and_then(Value::as_i64).filter(|n| *n != 0) {
                    Some(np) if old_ports.contains(&np) => {
                        taken.insert(np);
                    }
                    Some(np) if !NODE_PORTS.contains(&np) => causes.push(Cause::invalid(
                        format!("spec.ports[{i}].nodePort"),
                        &np.to_string(),
                        "provided port is not in the valid range. The range of valid ports is 30000-32767",
                    )),
                    Some(np) if taken.contains(&np) => causes.push(Cause::invalid(
                        format!("spec.ports[{i}].nodePort"),
                        &np.to_string(),
                        "provided port is already allocated",
                    )),
                    Some(np) => {
                        taken.insert(np);
                    }
                    None => {
                        // A stable pseudo-random start, as the allocator's random offset.
                        let span = (NODE_PORTS.end() - NODE_PORTS.start() + 1) as u64;
                        let seed = crate::config::profile::unit_hash(0, &format!("{name}/{i}"), 7);
                        let start = NODE_PORTS.start() + (seed * span as f64) as i64;
                        let free = (0..span as i64)
                            .map(|k| NODE_PORTS.start() + (start - NODE_PORTS.start() + k) % span as i64)
                            .find(|port| !taken.contains(port));
                        match free {
                            Some(port) => {
                                taken.insert(port);
                                p.insert("nodePort".into(), json!(port));
                            }
                            None => return Err(ApiError::Internal("the NodePort range is exhausted".into())),
                        }
                    }
                }
            }
        }
        if causes.is_empty() {
            Ok(())
        } else {
            Err(invalid(causes))
        }
    }
}

/// ClusterIPs and node ports already used (excluding the service with `skip_uid`).
fn in_use(store: &Store, skip_uid: Option<&str>) -> (BTreeSet<u32>, BTreeSet<i64>) {
    let mut ips = BTreeSet::new();
    let mut ports = BTreeSet::new();
    for svc in store.list(resources::core("services"), None).0 {
        if skip_uid.is_some_and(|u| u == svc.uid()) {
            continue;
        }
        let v = svc.value();
        if let Some(ip) = v
            .pointer("/spec/clusterIP")
            .and_then(Value::as_str)
            .and_then(|s| s.parse::<Ipv4Addr>().ok())
        {
            ips.insert(u32::from(ip));
        }
        for p in v.pointer("/spec/ports").and_then(Value::as_array).into_iter().flatten() {
            if let Some(np) = p.get("nodePort").and_then(Value::as_i64) {
                ports.insert(np);
            }
        }
    }
    (ips, ports)
}

/// The services every cluster has: `default/kubernetes` and `kube-system/kube-dns`.
pub fn seed(store: &Store, allocator: &Allocator) -> Result<(), ApiError> {
    let svc = resources::core("services");
    let kubernetes = json!({"metadata": {"name": "kubernetes", "labels": {"component": "apiserver", "provider": "kubernetes"}},
        "spec": {"clusterIP": allocator.address(1).to_string(), "ports": [{"name": "https", "port": 443, "targetPort": 6443, "protocol": "TCP"}]}});
    let dns = json!({"metadata": {"name": "kube-dns", "labels": {"k8s-app": "kube-dns", "kubernetes.io/name": "CoreDNS"}},
        "spec": {"clusterIP": allocator.address(10).to_string(), "selector": {"k8s-app": "kube-dns"},
            "ports": [{"name": "dns", "port": 53, "protocol": "UDP"}, {"name": "dns-tcp", "port": 53, "protocol": "TCP"},
                      {"name": "metrics", "port": 9153, "protocol": "TCP"}]}});
    for (ns, obj) in [("default", kubernetes), ("kube-system", dns)] {
        let mut obj = obj;
        crate::store::defaults::on_create(svc, &mut obj);
        allocator.create(store, ns, obj)?;
    }
    Ok(())
}

/// The TCP NodePorts of a Service (a port without a protocol is TCP).
fn tcp_node_ports(svc: &Value) -> Vec<u16> {
    svc.pointer("/spec/ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|p| matches!(p.get("protocol").and_then(Value::as_str), None | Some("TCP")))
        .filter_map(|p| p.get("nodePort").and_then(Value::as_u64))
        .filter_map(|n| u16::try_from(n).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn store() -> Store {
        let store = Store::default();
        for ns in ["default", "kube-system", "a"] {
            store
                .create(resources::core("namespaces"), "", json!({"metadata": {"name": ns}}))
                .expect("ns");
        }
        store
    }

    fn svc(name: &str, spec: Value) -> Value {
        json!({"metadata": {"name": name}, "spec": spec})
    }

    #[test]
    fn cluster_ips_come_from_the_cidr_and_skip_the_reserved() {
        let store = store();
        let alloc = Allocator::new("10.96.0.0/12");
        seed(&store, &alloc).expect("seed");
        let dns = store
            .get(resources::core("services"), "kube-system", "kube-dns")
            .expect("dns");
        assert_eq!(dns.value()["spec"]["clusterIP"], "10.96.0.10");
        let mut seen = BTreeSet::new();
        for i in 0..12 {
            let s = alloc
                .create(&store, "a", svc(&format!("s{i}"), json!({"ports": [{"port": 80}]})))
                .expect("svc");
            let ip = s.value()["spec"]["clusterIP"].as_str().unwrap_or("").to_string();
            assert!(ip.starts_with("10.96.0."), "{ip}");
            assert_ne!(ip, "10.96.0.10");
            assert!(seen.insert(ip));
        }
    }

    #[rstest]
    #[case::taken_ip(json!({"clusterIP": "10.96.0.10", "ports": [{"port": 80}]}), "provided IP is already allocated")]
    #[case::outside(json!({"clusterIP": "192.168.0.5", "ports": [{"port": 80}]}), "is not in the valid range")]
    #[case::taken_port(json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 30080}]}), "provided port is already allocated")]
    #[case::port_range(json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 8080}]}), "The range of valid ports is 30000-32767")]
    fn conflicts_are_invalid(#[case] spec: Value, #[case] needle: &str) {
        let store = store();
        let alloc = Allocator::new("10.96.0.0/12");
        seed(&store, &alloc).expect("seed");
        alloc
            .create(
                &store,
                "a",
                svc(
                    "first",
                    json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 30080}]}),
                ),
            )
            .expect("first");
        let err = alloc.create(&store, "a", svc("second", spec)).expect_err("conflict");
        assert_eq!(err.code(), 422);
        assert!(err.to_string().contains(needle), "{err}");
    }

    #[test]
    fn node_port_zero_means_allocate() {
        let store = store();
        let alloc = Allocator::new("10.96.0.0/12");
        let s = alloc
            .create(
                &store,
                "a",
                svc(
                    "zero",
                    json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 0}]}),
                ),
            )
            .expect("svc");
        let np = s.value()["spec"]["ports"][0]["nodePort"].as_i64().unwrap_or(0);
        assert!(NODE_PORTS.contains(&np), "{np}");
    }

    /// What a guard saw: each call's ports, and whether the store had the Service then.
    #[derive(Debug)]
    struct Seen {
        store: Arc<Store>,
        calls: Mutex<Vec<(Vec<u16>, bool)>>,
    }

    impl NodePortGuard for Seen {
        fn guard(&self, ports: &[u16]) {
            let stored = self.store.get(resources::core("services"), "a", "np").is_ok();
            self.calls.lock().expect("calls").push((ports.to_vec(), stored));
        }
    }

    /// The guard hears of a Service's TCP NodePorts (not its UDP one) before the Service is
    /// stored, and of nothing for a ClusterIP Service.
    #[test]
    fn the_guard_hears_of_tcp_node_ports_before_the_service_is_stored() {
        let store = Arc::new(store());
        let seen = Arc::new(Seen {
            store: store.clone(),
            calls: Mutex::default(),
        });
        let alloc = Allocator::new("10.96.0.0/12").with_guard(Some(seen.clone()));
        alloc
            .create(&store, "a", svc("cip", json!({"ports": [{"port": 80}]})))
            .expect("ClusterIP");
        let s = alloc
            .create(
                &store,
                "a",
                svc(
                    "np",
                    json!({"type": "NodePort", "ports": [{"name": "t", "port": 80},
                        {"name": "u", "port": 53, "protocol": "UDP"}]}),
                ),
            )
            .expect("NodePort");
        let tcp = s.value()["spec"]["ports"][0]["nodePort"]
            .as_u64()
            .and_then(|p| u16::try_from(p).ok());
        let calls = seen.calls.lock().expect("calls").clone();
        assert_eq!(calls, [(tcp.into_iter().collect(), false)]);
    }

    #[test]
    fn node_ports_are_allocated_in_range_and_kept_on_update() {
        let store = store();
        let alloc = Allocator::new("10.96.0.0/12");
        let s = alloc
            .create(
                &store,
                "a",
                svc(
                    "np",
                    json!({"type": "NodePort", "ports": [{"name": "a", "port": 80}, {"name": "b", "port": 81}]}),
                ),
            )
            .expect("svc");
        let ports: Vec<i64> = s.value()["spec"]["ports"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p["nodePort"].as_i64())
            .collect();
        assert_eq!(ports.len(), 2);
        assert!(ports.iter().all(|p| NODE_PORTS.contains(p)));
        assert_ne!(ports[0], ports[1]);
        let mut next = s.value().clone();
        next["spec"]["clusterIP"] = json!("");
        alloc.update(&store, s.value(), &mut next).expect("update");
        assert_eq!(next["spec"]["clusterIP"], s.value()["spec"]["clusterIP"]);
        assert_eq!(next["spec"]["ports"][0]["nodePort"], ports[0]);
    }

    #[rstest]
    #[case::headless(json!({"clusterIP": "None", "ports": [{"port": 80}]}), json!("None"))]
    #[case::external(json!({"type": "ExternalName", "externalName": "example.com"}), Value::Null)]
    fn headless_and_external_names_get_no_address(#[case] spec: Value, #[case] ip: Value) {
        let store = store();
        let alloc = Allocator::new("10.96.0.0/12");
        let s = alloc.create(&store, "a", svc("x", spec)).expect("svc");
        assert_eq!(s.value().pointer("/spec/clusterIP").cloned().unwrap_or(Value::Null), ip);
    }

    /// K8SDS: on a dual-stack cluster PreferDualStack and RequireDualStack get an IPv6 ClusterIP
    /// beside the IPv4 one (IPv4, the primary family, first), SingleStack stays IPv4; on a
    /// single-stack cluster PreferDualStack falls back to IPv4 and RequireDualStack is refused.
    #[rstest]
    #[case::dual_prefer(true, "PreferDualStack", Ok(vec!["10.96.0.2", "fd00:10:96::2"]))]
    #[case::dual_require(true, "RequireDualStack", Ok(vec!["10.96.0.2", "fd00:10:96::2"]))]
    #[case::dual_single(true, "SingleStack", Ok(vec!["10.96.0.2"]))]
    #[case::single_prefer(false, "PreferDualStack", Ok(vec!["10.96.0.2"]))]
    #[case::single_require(false, "RequireDualStack", Err("not configured for dual-stack"))]
    fn ip_family_policies(#[case] dual: bool, #[case] policy: &str, #[case] want: Result<Vec<&str>, &str>) {
        let store = store();
        let alloc = Allocator::new("10.96.0.0/12").with_ipv6(dual.then_some("fd00:10:96::/112"));
        let made = alloc.create(
            &store,
            "a",
            svc("x", json!({"ipFamilyPolicy": policy, "ports": [{"port": 80}]})),
        );
        match (made, want) {
            (Ok(s), Ok(ips)) => {
                assert_eq!(s.value()["spec"]["clusterIPs"], json!(ips));
                assert_eq!(
                    s.value()["spec"]["ipFamilies"].as_array().map(Vec::len),
                    Some(ips.len())
                );
                assert_eq!(s.value()["spec"]["ipFamilyPolicy"], policy);
            }
            (Err(e), Err(needle)) => assert!(e.to_string().contains(needle), "{e}"),
            (got, want) => panic!("{got:?}, expected {want:?}"),
        }
    }
}
