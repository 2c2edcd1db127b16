//! Cluster DNS: the records the cluster's DNS service answers (services, headless services'
//! pods, pod A records, ExternalName aliases, and a small simulated outside world) and each
//! OS's resolver behaviour — Linux's search list with `ndots`, Windows' single suffix with
//! dotted names taken as fully qualified (DNS-SINGLE-SUFFIX, DNS-PQDN-DOTTED).

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::config::profile::NodeProfile;
use crate::store::Store;
use crate::store::resources;
use crate::vocab::json;

/// A container's DNS configuration, as its resolver sees it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DnsConfig {
    pub nameservers: Vec<String>,
    /// The search list; a Windows pod has one suffix, its namespace's (DNS-SINGLE-SUFFIX).
    pub searches: Vec<String>,
    /// Resolver options (`ndots` → `5`).
    pub options: Vec<(String, Option<String>)>,
}

/// What a container's resolver configuration depends on.
#[derive(Debug, Clone, Copy)]
pub struct Asker<'a> {
    /// The pod's spec.
    pub spec: &'a Value,
    pub namespace: &'a str,
    /// The profile of the pod's node (None while the pod is not bound to a known node).
    pub node: Option<&'a NodeProfile>,
    pub windows: bool,
    /// Whether the container runs as a Windows HostProcess container on its node.
    pub host_process: bool,
}

impl Asker<'_> {
    /// Whether the container shares its node's network namespace: `hostNetwork` on Linux, a
    /// HostProcess container on Windows (plain Windows pods ignore `hostNetwork`).
    fn host_network(&self) -> bool {
        if self.windows {
            self.host_process
        } else {
            json::bool(self.spec, "/hostNetwork") == Some(true)
        }
    }
}

/// A container's resolver configuration from its DNS policy, `dnsConfig` and the node's
/// kubelet configuration (`clusterDNS`, `clusterDomain`).
pub fn container_dns(asker: &Asker) -> DnsConfig {
    let spec = asker.spec;
    let cluster = match json::str(spec, "/dnsPolicy") {
        "None" => None,
        "Default" => Some(false),
        "ClusterFirstWithHostNet" => Some(!asker.host_process),
        _ => Some(!asker.host_network()),
    };
    let mut dns = match cluster {
        None => DnsConfig::default(),
        Some(true) => cluster_dns(asker),
        Some(false) => node_dns(asker),
    };
    for ns in json::array(spec, "/dnsConfig/nameservers")
        .iter()
        .filter_map(Value::as_str)
    {
        push_unique(&mut dns.nameservers, ns);
    }
    for search in json::array(spec, "/dnsConfig/searches")
        .iter()
        .filter_map(Value::as_str)
    {
        push_unique(&mut dns.searches, search);
    }
    for opt in json::array(spec, "/dnsConfig/options") {
        let name = json::str(opt, "/name").to_string();
        let value = opt.get("value").and_then(Value::as_str).map(str::to_string);
        match dns.options.iter_mut().find(|(n, _)| *n == name) {
            Some(existing) => existing.1 = value,
            None if !name.is_empty() => dns.options.push((name, value)),
            None => {}
        }
    }
    if !asker.windows {
        // The kubelet keeps at most three nameservers and 32 search domains.
        dns.nameservers.truncate(3);
        dns.searches.truncate(32);
    }
    dns
}

/// The cluster resolver of a pod: the kubelet's `clusterDNS` and the search list of its
/// namespace under `clusterDomain` (one suffix on Windows, DNS-SINGLE-SUFFIX).
pub fn cluster_dns(asker: &Asker) -> DnsConfig {
    // What the node's kubelet configuration (its `/configz`) says, read from the profile it is
    // made from rather than the document built for each lookup.
    let nameservers: Vec<String> = asker
        .node
        .map_or(crate::config::profile::CLUSTER_DNS, NodeProfile::cluster_dns)
        .iter()
        .map(|s| (*s).to_string())
        .collect();
    let domain = match asker.node.map_or("", |n| n.cluster_domain.as_str()) {
        "" => "cluster.local",
        d => d,
    };
    let ns = asker.namespace;
    let searches = if asker.windows {
        vec![format!("{ns}.svc.{domain}")]
    } else {
        vec![
            format!("{ns}.svc.{domain}"),
            format!("svc.{domain}"),
            domain.to_string(),
        ]
    };
    DnsConfig {
        nameservers,
        searches,
        options: vec![("ndots".into(), Some("5".into()))],
    }
}

/// The node's own resolver: the first address of the node's /24 network, no search list.
fn node_dns(asker: &Asker) -> DnsConfig {
    let nameservers = asker
        .node
        .map(|n| {
            let [a, b, c, _] = n.ip.octets();
            vec![format!("{a}.{b}.{c}.1")]
        })
        .unwrap_or_default();
    DnsConfig {
        nameservers,
        ..DnsConfig::default()
    }
}

fn push_unique(list: &mut Vec<String>, item: &str) {
    if !list.iter().any(|x| x == item) {
        list.push(item.to_string());
    }
}

/// The cluster domain.
pub const CLUSTER_DOMAIN: &str = "cluster.local";

/// The zone the cluster DNS serves, as its configuration says: the `kubernetes ZONE …` line of
/// CoreDNS's Corefile (`kube-system/coredns`), else kube-dns's `--domain=` flag; else
/// [`CLUSTER_DOMAIN`]. The add-ons write it from the topology's `network.clusterDomain`.
pub fn served_domain(store: &Store) -> String {
    let corefile = store
        .get(resources::core("configmaps"), "kube-system", "coredns")
        .ok()
        .map(|cm| json::str(cm.value(), "/data/Corefile").to_string());
    let from_corefile = corefile.as_deref().and_then(|text| {
        text.lines()
            .find_map(|l| l.trim().strip_prefix("kubernetes "))
            .and_then(|rest| rest.split_whitespace().next())
            .map(str::to_string)
    });
    let from_kube_dns = || {
        let dep = store
            .get(resources::named("apps", "deployments"), "kube-system", "kube-dns")
            .ok()?;
        json::array(dep.value(), "/spec/template/spec/containers")
            .iter()
            .flat_map(|c| json::array(c, "/args").iter())
            .filter_map(Value::as_str)
            .find_map(|a| a.strip_prefix("--domain="))
            .map(|d| d.trim_end_matches('.').to_string())
    };
    from_corefile
        .or_else(from_kube_dns)
        .unwrap_or_else(|| CLUSTER_DOMAIN.to_string())
}

/// The simulated outside world: names and addresses (web hosts in TEST-NET-3, never routed).
pub const OUTSIDE_HOSTS: &[(&str, [u8; 4])] = &[
    ("example.com", [203, 0, 113, 10]),
    ("www.example.com", [203, 0, 113, 10]),
    ("www.microsoft.com", [203, 0, 113, 20]),
    ("kubernetes.io", [203, 0, 113, 30]),
    ("registry.k8s.io", [203, 0, 113, 40]),
    ("mcr.microsoft.com", [203, 0, 113, 50]),
    ("www.google.com", [203, 0, 113, 60]),
    // Public resolvers (they answer the outside names only).
    ("one.one.one.one", [1, 1, 1, 1]),
    ("dns.google", [8, 8, 8, 8]),
];

/// The outside addresses that are DNS servers.
pub const OUTSIDE_RESOLVERS: &[[u8; 4]] = &[[1, 1, 1, 1], [8, 8, 8, 8]];

/// What a name resolves to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    A(Vec<Ipv4Addr>),
    /// An alias (ExternalName service) to another name.
    Cname(String),
}

/// What the cluster DNS answers: the simulated outside world from a fixed table, and the
/// cluster's zone read from the store as each name is asked, as CoreDNS's `kubernetes` plugin
/// answers from its watch caches: a Service's name is one read of the Service, a pod's or a
/// headless Service's name reads the pods of one namespace, once for the records' life. (Built
/// whole for every network snapshot, the zone cost a run at 2,500 nodes 18 % of its CPU:
/// every pod named for the first lookup after each change.)
#[derive(Default)]
pub struct Records {
    /// Names answered from a table, keyed by lower-case fully qualified name.
    fixed: HashMap<String, Answer>,
    /// The cluster's zone, when these are the cluster DNS's records.
    zone: Option<Zone>,
}

impl std::fmt::Debug for Records {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Records")
            .field("fixed", &self.fixed.len())
            .field("zone", &self.zone.as_ref().map(|z| z.domain.as_str()))
            .finish()
    }
}

/// The cluster's zone, answered from the store.
struct Zone {
    store: Arc<Store>,
    /// The served domain, lower-case, without a trailing dot.
    domain: String,
    /// Each namespace's running pods that have an address, read at the first pod or headless
    /// name asked in it.
    namespaces: Mutex<HashMap<String, Arc<Vec<Arc<PodRecord>>>>>,
    /// Each pod version's record, kept across the zones of successive network snapshots.
    known: Arc<Mutex<KnownPods>>,
}

/// Each pod version's record by namespace, with the read that last saw it: a zone is made
/// again whenever a pod changes, and at 5,000 nodes (or under full coverage, where pods come
/// and go all the time) decoding every pod of a namespace again for each zone was a
/// twentieth of a run's CPU.
#[derive(Debug, Default)]
pub struct KnownPods {
    namespaces: HashMap<String, crate::network::versions::ByVersion<Option<Arc<PodRecord>>>>,
    read: u64,
}

/// What the records of a running pod come from.
#[derive(Debug)]
struct PodRecord {
    ip: Ipv4Addr,
    labels: serde_json::Map<String, Value>,
    hostname: String,
    subdomain: String,
}

impl PodRecord {
    /// A running pod's record; None for a finished pod or one without an address. Read through
    /// a peek: the records outlive the pods' decoded values.
    fn of(p: &Value) -> Option<Self> {
        if matches!(json::str(p, "/status/phase"), "Succeeded" | "Failed") {
            return None;
        }
        Some(PodRecord {
            ip: json::str(p, "/status/podIP").parse().ok()?,
            labels: crate::vocab::json::get(p, "/metadata/labels")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default(),
            hostname: json::str(p, "/spec/hostname").to_string(),
            subdomain: json::str(p, "/spec/subdomain").to_string(),
        })
    }
}

impl Records {
    /// The records an outside resolver answers: the simulated outside world only.
    pub fn outside() -> Self {
        let mut records = Self::default();
        for (name, ip) in OUTSIDE_HOSTS {
            records
                .fixed
                .insert(name.to_ascii_lowercase(), Answer::A(vec![Ipv4Addr::from(*ip)]));
        }
        records
    }

    /// The records of the cluster DNS: its zone ([`served_domain`]) for the cluster's current
    /// Services and pods, and the outside world it forwards to.
    pub fn from_store(store: &Arc<Store>) -> Self {
        Self::from_store_knowing(store, &Arc::default())
    }

    /// [`Self::from_store`], with the pods' records read by earlier zones (`known`).
    pub fn from_store_knowing(store: &Arc<Store>, known: &Arc<Mutex<KnownPods>>) -> Self {
        let domain = served_domain(store).trim_end_matches('.').to_ascii_lowercase();
        Self {
            zone: Some(Zone {
                store: store.clone(),
                domain,
                namespaces: Mutex::new(HashMap::new()),
                known: known.clone(),
            }),
            ..Self::outside()
        }
    }

    /// The answer for a lower-case fully qualified name without its trailing dot.
    fn answer(&self, name: &str) -> Option<Answer> {
        self.zone
            .as_ref()
            .and_then(|z| z.answer(name))
            .or_else(|| self.fixed.get(name).cloned())
    }

    /// The addresses of a fully qualified name (following aliases), and the alias if any.
    pub fn lookup(&self, fqdn: &str) -> Option<(Vec<Ipv4Addr>, Option<String>)> {
        let key = fqdn.trim_end_matches('.').to_ascii_lowercase();
        match self.answer(&key)? {
            Answer::A(addrs) if addrs.is_empty() => None,
            Answer::A(addrs) => Some((addrs, None)),
            Answer::Cname(target) => {
                let addrs = match self.answer(&target.trim_end_matches('.').to_ascii_lowercase()) {
                    Some(Answer::A(a)) => a,
                    _ => Vec::new(),
                };
                Some((addrs, Some(target)))
            }
        }
    }
}

impl Zone {
    /// The answer for a name of the zone: `SVC.NS.svc`, `HOSTNAME.SVC.NS.svc` (a headless
    /// Service's pod) and `A-B-C-D.NS.pod`, each under the domain.
    fn answer(&self, name: &str) -> Option<Answer> {
        let rest = name.strip_suffix(self.domain.as_str())?.strip_suffix('.')?;
        let labels: Vec<&str> = rest.split('.').collect();
        match labels.as_slice() {
            [svc, ns, "svc"] => self.service(ns, svc),
            [hostname, svc, ns, "svc"] => self.headless_hostname(ns, svc, hostname),
            [addr, ns, "pod"] => self.pod(ns, addr),
            _ => None,
        }
    }

    fn service(&self, ns: &str, name: &str) -> Option<Answer> {
        let svc = self.store.get(resources::core("services"), ns, name).ok()?;
        let v = svc.value();
        match (json::str(v, "/spec/type"), json::str(v, "/spec/clusterIP")) {
            ("ExternalName", _) => Some(Answer::Cname(json::str(v, "/spec/externalName").to_string())),
            // Headless: the ready pods the selector picks.
            (_, "None") => {
                let mut addrs = self.selected(ns, v, |p| Some(p.ip));
                addrs.sort();
                Some(Answer::A(addrs))
            }
            (_, ip) => ip.parse::<Ipv4Addr>().ok().map(|a| Answer::A(vec![a])),
        }
    }

    /// `HOSTNAME.SVC.NS.svc`: a pod of headless Service SVC whose `spec.hostname` and
    /// `spec.subdomain` name it.
    fn headless_hostname(&self, ns: &str, name: &str, hostname: &str) -> Option<Answer> {
        let svc = self.store.get(resources::core("services"), ns, name).ok()?;
        let v = svc.value();
        if json::str(v, "/spec/type") == "ExternalName" || json::str(v, "/spec/clusterIP") != "None" {
            return None;
        }
        self.selected(ns, v, |p| {
            (p.subdomain == svc.name() && p.hostname.eq_ignore_ascii_case(hostname)).then_some(p.ip)
        })
        .pop()
        .map(|ip| Answer::A(vec![ip]))
    }

    /// `A-B-C-D.NS.pod`: a running pod of the namespace with that address.
    fn pod(&self, ns: &str, addr: &str) -> Option<Answer> {
        let mut octets = addr.split('-').map(|o| o.parse::<u8>().ok());
        let ip = Ipv4Addr::new(octets.next()??, octets.next()??, octets.next()??, octets.next()??);
        if octets.next().is_some() || addr != ip.to_string().replace('.', "-") {
            return None;
        }
        self.pods(ns).iter().any(|p| p.ip == ip).then(|| Answer::A(vec![ip]))
    }

    /// What `keep` makes of each running pod of `ns` that a headless Service's selector picks
    /// (none without a selector), in the store's order.
    fn selected<T>(&self, ns: &str, svc: &Value, mut keep: impl FnMut(&PodRecord) -> Option<T>) -> Vec<T> {
        let Some(selector) = crate::vocab::json::get(svc, "/spec/selector")
            .and_then(Value::as_object)
            .filter(|sel| !sel.is_empty())
        else {
            return Vec::new();
        };
        self.pods(ns)
            .iter()
            .filter(|p| selector.iter().all(|(k, want)| p.labels.get(k) == Some(want)))
            .filter_map(|p| keep(p))
            .collect()
    }

    /// The running pods of `ns` that have an address, read once (each pod version's record
    /// once across zones).
    fn pods(&self, ns: &str) -> Arc<Vec<Arc<PodRecord>>> {
        let mut namespaces = self.namespaces.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(pods) = namespaces.get(ns) {
            return pods.clone();
        }
        let (objects, _) = self.store.list(resources::core("pods"), Some(ns));
        let mut known = self.known.lock().unwrap_or_else(|p| p.into_inner());
        known.read += 1;
        let read = known.read;
        let versions = known.namespaces.entry(ns.to_string()).or_default();
        let pods: Arc<Vec<Arc<PodRecord>>> = Arc::new(
            objects
                .iter()
                .filter_map(|pod| versions.get(pod, read, |pod| pod.peek(PodRecord::of).map(Arc::new)))
                .collect(),
        );
        versions.sweep(read, Some(objects.len()));
        if objects.is_empty() {
            // A namespace deleted (a run's, once it ends) leaves nothing behind.
            known.namespaces.remove(ns);
        }
        namespaces.insert(ns.to_string(), pods.clone());
        pods
    }
}

/// The outcome of resolving a name as a container's resolver would.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    Resolved {
        /// The fully qualified name that answered.
        name: String,
        addresses: Vec<Ipv4Addr>,
        alias: Option<String>,
    },
    /// No candidate name exists (NXDOMAIN); the candidates tried, in order.
    NotFound { tried: Vec<String> },
    /// The container has no nameserver to ask.
    NoNameserver,
}

/// The candidate names a resolver tries for `name`, in order.
pub fn candidates(name: &str, dns: &DnsConfig, windows: bool) -> Vec<String> {
    let name = name.trim();
    if name.ends_with('.') {
        return vec![name.trim_end_matches('.').to_string()];
    }
    let dots = name.matches('.').count();
    if windows {
        // One suffix for single-label names; anything with a dot is taken as fully qualified.
        if dots > 0 {
            return vec![name.to_string()];
        }
        return dns.searches.iter().map(|s| format!("{name}.{s}")).collect();
    }
    let ndots = dns
        .options
        .iter()
        .find(|(n, _)| n == "ndots")
        .and_then(|(_, v)| v.as_deref()?.parse::<usize>().ok())
        .unwrap_or(1);
    let searched: Vec<String> = dns.searches.iter().map(|s| format!("{name}.{s}")).collect();
    if dots >= ndots {
        std::iter::once(name.to_string()).chain(searched).collect()
    } else {
        searched.into_iter().chain(std::iter::once(name.to_string())).collect()
    }
}

/// Resolves `name` with a container's DNS configuration.
pub fn resolve(records: &Records, name: &str, dns: &DnsConfig, windows: bool) -> Resolution {
    if dns.nameservers.is_empty() {
        return Resolution::NoNameserver;
    }
    let tried = candidates(name, dns, windows);
    for candidate in &tried {
        if let Some((addresses, alias)) = records.lookup(candidate) {
            return Resolution::Resolved {
                name: candidate.clone(),
                addresses,
                alias,
            };
        }
    }
    Resolution::NotFound { tried }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Part;
    use rstest::rstest;
    use serde_json::json;

    fn store() -> Store {
        let store = Store::default();
        for ns in ["team", "team2"] {
            store
                .create(resources::core("namespaces"), "", json!({"metadata": {"name": ns}}))
                .expect("ns");
        }
        let svc = resources::core("services");
        store
            .create(
                svc,
                "team",
                json!({"metadata": {"name": "web"}, "spec": {"clusterIP": "10.96.0.50", "ports": [{"port": 80}]}}),
            )
            .expect("svc");
        store
            .create(
                svc,
                "team2",
                json!({"metadata": {"name": "other"}, "spec": {"clusterIP": "10.96.0.60", "ports": [{"port": 80}]}}),
            )
            .expect("svc");
        store
            .create(svc, "team", json!({"metadata": {"name": "db"}, "spec": {"clusterIP": "None", "selector": {"app": "db"}, "ports": [{"port": 5432}]}}))
            .expect("headless");
        store
            .create(
                svc,
                "team",
                json!({"metadata": {"name": "ext"}, "spec": {"type": "ExternalName", "externalName": "example.com"}}),
            )
            .expect("external");
        let pods = resources::core("pods");
        for (name, ip) in [("db-0", "10.244.1.5"), ("db-1", "10.244.2.6")] {
            store
                .create(
                    pods,
                    "team",
                    json!({"metadata": {"name": name, "labels": {"app": "db"}},
                    "spec": {"hostname": name, "subdomain": "db", "containers": [{"name": "c", "image": "i"}]}}),
                )
                .expect("pod");
            store
                .modify(pods, "team", name, Part::Status, |p| {
                    p["status"] = json!({"phase": "Running", "podIP": ip});
                    Ok(())
                })
                .expect("status");
        }
        store
    }

    fn linux() -> DnsConfig {
        DnsConfig {
            nameservers: vec!["10.96.0.10".into()],
            searches: vec![
                "team.svc.cluster.local".into(),
                "svc.cluster.local".into(),
                "cluster.local".into(),
            ],
            options: vec![("ndots".into(), Some("5".into()))],
        }
    }

    fn windows() -> DnsConfig {
        DnsConfig {
            nameservers: vec!["10.96.0.10".into()],
            searches: vec!["team.svc.cluster.local".into()],
            options: Vec::new(),
        }
    }

    fn resolved(r: &Resolution) -> Option<String> {
        match r {
            Resolution::Resolved { addresses, .. } => {
                Some(addresses.iter().map(ToString::to_string).collect::<Vec<_>>().join(","))
            }
            _ => None,
        }
    }

    #[rstest]
    #[case::short_dns_short_name("web", Some("10.96.0.50"), Some("10.96.0.50"))]
    #[case::dns_pqdn_dotted_svc_ns("web.team", Some("10.96.0.50"), None)]
    #[case::dns_pqdn_dotted_svc_ns_svc("web.team.svc", Some("10.96.0.50"), None)]
    #[case::dns_fqdn("web.team.svc.cluster.local", Some("10.96.0.50"), Some("10.96.0.50"))]
    #[case::dns_fqdn_trailing_dot("web.team.svc.cluster.local.", Some("10.96.0.50"), Some("10.96.0.50"))]
    #[case::cross_namespace_fqdn("other.team2.svc.cluster.local", Some("10.96.0.60"), Some("10.96.0.60"))]
    #[case::cross_namespace_partial("other.team2", Some("10.96.0.60"), None)]
    #[case::other_namespace_short("other", None, None)]
    #[case::headless_pods("db", Some("10.244.1.5,10.244.2.6"), Some("10.244.1.5,10.244.2.6"))]
    #[case::headless_hostname("db-0.db.team.svc.cluster.local", Some("10.244.1.5"), Some("10.244.1.5"))]
    #[case::pod_record("10-244-2-6.team.pod.cluster.local", Some("10.244.2.6"), Some("10.244.2.6"))]
    #[case::net_pod_ext_dns("example.com", Some("203.0.113.10"), Some("203.0.113.10"))]
    #[case::external_name("ext", Some("203.0.113.10"), Some("203.0.113.10"))]
    #[case::missing("nope.example", None, None)]
    #[case::pod_record_upper_case("10-244-2-6.TEAM.pod.cluster.local", Some("10.244.2.6"), Some("10.244.2.6"))]
    #[case::pod_record_other_namespace("10-244-2-6.team2.pod.cluster.local", None, None)]
    #[case::pod_record_no_pod_there("10-244-9-9.team.pod.cluster.local", None, None)]
    #[case::pod_record_not_canonical("010-244-2-6.team.pod.cluster.local", None, None)]
    #[case::hostname_of_a_service_with_an_address("db-0.web.team.svc.cluster.local", None, None)]
    #[case::hostname_nobody_has("db-9.db.team.svc.cluster.local", None, None)]
    #[case::hostname_upper_case("DB-1.db.team.svc.cluster.local", Some("10.244.2.6"), Some("10.244.2.6"))]
    #[case::another_zone("web.team.svc.cluster.example", None, None)]
    fn linux_and_windows_resolvers(
        #[case] name: &str,
        #[case] on_linux: Option<&str>,
        #[case] on_windows: Option<&str>,
    ) {
        let records = Records::from_store(&Arc::new(store()));
        assert_eq!(
            resolved(&resolve(&records, name, &linux(), false)).as_deref(),
            on_linux,
            "linux {name}"
        );
        assert_eq!(
            resolved(&resolve(&records, name, &windows(), true)).as_deref(),
            on_windows,
            "windows {name}"
        );
    }

    #[test]
    fn candidate_order_follows_ndots() {
        let c = candidates("web", &linux(), false);
        assert_eq!(c.first().map(String::as_str), Some("web.team.svc.cluster.local"));
        assert_eq!(c.last().map(String::as_str), Some("web"));
        let mut one = linux();
        one.options = vec![("ndots".into(), Some("1".into()))];
        assert_eq!(candidates("example.com", &one, false)[0], "example.com");
        assert_eq!(candidates("web.team", &windows(), true), ["web.team"]);
        assert_eq!(candidates("web", &windows(), true), ["web.team.svc.cluster.local"]);
    }

    #[test]
    fn dns_policy_none_uses_only_the_given_config() {
        // DNS-CUSTOM-CONFIG: dnsPolicy None with a custom search list and nameserver.
        let records = Records::from_store(&Arc::new(store()));
        let custom = DnsConfig {
            nameservers: vec!["1.1.1.1".into()],
            searches: vec!["team2.svc.cluster.local".into()],
            options: vec![("ndots".into(), Some("2".into()))],
        };
        assert_eq!(
            resolved(&resolve(&records, "other", &custom, false)).as_deref(),
            Some("10.96.0.60")
        );
        assert_eq!(resolved(&resolve(&records, "web", &custom, false)), None);
        assert_eq!(
            resolve(&records, "web", &DnsConfig::default(), false),
            Resolution::NoNameserver
        );
    }

    /// The zone answers what the store holds when a name is asked, as CoreDNS answers from
    /// its watch of the API: a Service made after the records is found; a pod that finished
    /// leaves its headless Service — also for a zone that shares the pods' records read by an
    /// earlier one (as each network snapshot's zone does).
    #[rstest]
    fn the_zone_answers_from_the_store_when_asked(#[values(false, true)] shared: bool) {
        let store = Arc::new(store());
        let known = Arc::default();
        let zone = || {
            if shared {
                Records::from_store_knowing(&store, &known)
            } else {
                Records::from_store(&store)
            }
        };
        let records = zone();
        assert_eq!(resolved(&resolve(&records, "late", &linux(), false)), None);
        assert_eq!(
            resolved(&resolve(&records, "db", &linux(), false)).as_deref(),
            Some("10.244.1.5,10.244.2.6")
        );
        store
            .create(
                resources::core("services"),
                "team",
                json!({"metadata": {"name": "late"}, "spec": {"clusterIP": "10.96.0.70", "ports": [{"port": 80}]}}),
            )
            .expect("svc");
        assert_eq!(
            resolved(&resolve(&records, "late", &linux(), false)).as_deref(),
            Some("10.96.0.70")
        );
        store
            .modify(resources::core("pods"), "team", "db-1", Part::Status, |p| {
                p["status"]["phase"] = json!("Succeeded");
                Ok(())
            })
            .expect("status");
        let fresh = zone();
        assert_eq!(
            resolved(&resolve(&fresh, "db", &linux(), false)).as_deref(),
            Some("10.244.1.5")
        );
        assert_eq!(
            resolved(&resolve(&fresh, "10-244-2-6.team.pod.cluster.local", &linux(), false)),
            None
        );
    }

    /// The zone is the one CoreDNS's Corefile serves (`kubernetes ZONE …`), in any case.
    #[test]
    fn the_zone_is_the_corefiles() {
        let store = Arc::new(store());
        store
            .create(
                resources::core("namespaces"),
                "",
                json!({"metadata": {"name": "kube-system"}}),
            )
            .expect("ns");
        store
            .create(
                resources::core("configmaps"),
                "kube-system",
                json!({"metadata": {"name": "coredns"},
                       "data": {"Corefile": ".:53 {\n    kubernetes Corp.Example in-addr.arpa {\n    }\n}\n"}}),
            )
            .expect("corefile");
        let records = Records::from_store(&store);
        let mut config = linux();
        config.searches = vec!["team.svc.corp.example".into()];
        for name in ["web", "web.team.svc.corp.example", "WEB.team.svc.Corp.Example."] {
            assert_eq!(
                resolved(&resolve(&records, name, &config, false)).as_deref(),
                Some("10.96.0.50"),
                "{name}"
            );
        }
        assert_eq!(
            resolved(&resolve(&records, "web.team.svc.cluster.local", &config, false)),
            None
        );
        assert_eq!(
            resolved(&resolve(&records, "example.com", &config, false)).as_deref(),
            Some("203.0.113.10")
        );
    }

    #[test]
    fn external_name_reports_its_alias() {
        let records = Records::from_store(&Arc::new(store()));
        match resolve(&records, "ext.team.svc.cluster.local", &linux(), false) {
            Resolution::Resolved { alias, .. } => assert_eq!(alias.as_deref(), Some("example.com")),
            other => panic!("unexpected {other:?}"),
        }
    }
}
