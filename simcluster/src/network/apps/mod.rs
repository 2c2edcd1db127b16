//! The simulated network as a client in a container meets it: every lookup and connection goes
//! through the fabric from the client's source, and what answers once a flow is delivered —
//! agnhost netexec (HTTP endpoints including `/dial`, and its UDP server), serve-hostname, web
//! servers, the cluster DNS and outside resolvers, the kubelet port, outside web hosts.

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use crate::config::profile::NodeProfile;
use crate::network::dns::{self, DnsConfig, Records, Resolution};
use crate::network::fabric::{
    API_SERVER_PORT, App, Endpoint, Fabric, Failure, Flow, KUBELET_PORT, NetFacts, PodFacts, Proto, Reached, Src,
};
use crate::network::snapshot;
use crate::network::wire::{HttpReply, Lookup, Wire};
use crate::store::resources;
use crate::store::{Obj, Store};

/// A client address and the destination (address, port, protocol) it connects to.
type Round = (Ipv4Addr, Ipv4Addr, u16, Proto);

/// One port's backend addresses.
type Backends = std::collections::BTreeSet<Ipv4Addr>;

/// A Service's programming: its state, when it last changed, its backends per port now and
/// those of the state before (which nodes still forward to while they program the change),
/// and the rebuild that last saw the Service.
#[derive(Debug)]
struct Programmed {
    state: u64,
    at: std::time::Instant,
    backends: Arc<Vec<Backends>>,
    before: Arc<Vec<Backends>>,
    seen: u64,
}

/// Each Service's programming by `namespace/name`, and the rebuild under way.
#[derive(Debug, Default)]
struct Programming {
    services: HashMap<String, Programmed>,
    rebuild: u64,
}

/// The cluster's network: the store, the nodes and the topology's network settings.
#[derive(Debug)]
pub struct SimNet {
    store: Arc<Store>,
    profiles: Arc<Vec<NodeProfile>>,
    net: NetFacts,
    /// The ephemeral client ports handed out.
    picks: AtomicU64,
    /// The round-robin position of load-balanced flows, per client address and destination
    /// (address, port, protocol): a client's successive connections to one Service spread over
    /// its backends whatever other clients send meanwhile. HNS and kube-proxy's iptables and
    /// nftables rules choose per connection (a hash of the 5-tuple, whose source port changes
    /// with each connection; iptables' `statistic --mode random`), so one client's connections
    /// do not all land on one backend because another client's interleave with them.
    rounds: Mutex<HashMap<Round, u64>>,
    /// The last snapshot.
    cache: Mutex<Option<Snapshot>>,
    /// The pods' facts by object version, so that a rebuild reads only the changed pods.
    pods: Mutex<snapshot::PodCache>,
    /// The cluster DNS's record of each pod version, kept across snapshots.
    known_pods: Arc<Mutex<crate::network::dns::KnownPods>>,
    /// The nodes' facts for the fabric, made once from the profiles.
    nodes: Arc<Vec<crate::network::fabric::NodeFacts>>,
    /// Each Service's state (`namespace/name` → its addresses, ports and endpoints) as the
    /// proxies last saw it, and when that changed: the start of every node's programming delay.
    programmed: Mutex<Programming>,
    /// The cluster's NetworkPolicy engine (`network.policyEngine`, resolved).
    policy_engine: crate::config::policy_engine::PolicyEngine,
    /// Each NetworkPolicy's versions as the nodes' agents program them.
    policy_clock: crate::network::fabric::policy::Clock,
}

/// The fabric and the DNS records (built on first lookup) for one revision of the pods,
/// services, endpoints, namespaces and NetworkPolicies.
#[derive(Debug, Clone)]
struct Snapshot {
    fabric: Arc<Fabric>,
    records: Arc<OnceLock<Records>>,
    at: Revisions,
}

/// The store's revisions of what the fabric and the DNS records derive from (events, leases
/// and the like change far more often and do not matter here), each on its own: a change to
/// the policies alone leaves the pods and Services as they were.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Revisions {
    pods: u64,
    services: u64,
    endpoints: u64,
    namespaces: u64,
    policies: u64,
}

impl Revisions {
    fn of(store: &Store) -> Revisions {
        let at = |rt| store.changed_at(&[rt]);
        Revisions {
            pods: at(resources::core("pods")),
            services: at(resources::core("services")),
            endpoints: at(resources::core("endpoints")),
            namespaces: at(resources::core("namespaces")),
            policies: at(resources::named("networking.k8s.io", "networkpolicies")),
        }
    }

    /// Whether the Services and their Endpoints are as at `other`.
    fn same_services(&self, other: &Revisions) -> bool {
        (self.services, self.endpoints) == (other.services, other.endpoints)
    }

    /// Whether what the policies read besides the pods (policies, namespaces' labels) is as at
    /// `other`.
    fn same_policies(&self, other: &Revisions) -> bool {
        (self.policies, self.namespaces) == (other.policies, other.namespaces)
    }
}

/// How deep `/dial` may nest (a netexec asking a netexec to dial …).
const MAX_DIAL_DEPTH: u8 = 3;

/// Keeps the Services' change stamps current: the fabric is rebuilt soon after pods, services
/// or endpoints change (within 50 ms), so that a change is stamped when it happened — a node's
/// proxy starts programming it then — not when the next flow happens to look.
pub async fn keep_stamped(store: Arc<Store>, net: Arc<SimNet>) {
    let mut feed = store.subscribe();
    loop {
        match feed.recv().await {
            Ok(e)
                if (e.resource.group.is_empty() && matches!(e.resource.plural, "pods" | "services" | "endpoints"))
                    || e.resource.plural == "networkpolicies" =>
            {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                // One rebuild for the whole batch.
                while feed.try_recv().is_ok() {}
                let net = net.clone();
                let _ = tokio::task::spawn_blocking(move || drop(net.fabric())).await;
            }
            Ok(_) | Err(crate::store::RecvError::Lagged(_)) => {}
        }
    }
}

impl SimNet {
    pub fn new(store: Arc<Store>, profiles: Arc<Vec<NodeProfile>>, net: NetFacts) -> SimNet {
        SimNet {
            nodes: Arc::new(snapshot::node_facts(&profiles)),
            store,
            profiles,
            net,
            picks: AtomicU64::new(0),
            rounds: Mutex::new(HashMap::new()),
            cache: Mutex::new(None),
            pods: Mutex::new(snapshot::PodCache::default()),
            known_pods: Arc::default(),
            programmed: Mutex::new(Programming::default()),
            policy_engine: crate::config::policy_engine::PolicyEngine::None,
            policy_clock: crate::network::fabric::policy::Clock::default(),
        }
    }

    /// The same network with NetworkPolicies enforced by `engine`.
    pub fn with_policy_engine(mut self, engine: crate::config::policy_engine::PolicyEngine) -> SimNet {
        self.policy_engine = engine;
        self
    }

    /// Marks everything the cluster runs now as programmed on every node long ago: a cluster is
    /// handed over in a steady state (a real one under validation has run for a while, its
    /// system Services programmed everywhere); only what changes afterwards lags.
    pub fn settle_all(&self) {
        drop(self.fabric());
        let long_ago = std::time::Instant::now()
            .checked_sub(std::time::Duration::from_secs(3600))
            .unwrap_or_else(std::time::Instant::now);
        {
            let mut programmed = self.programmed.lock().unwrap_or_else(|p| p.into_inner());
            for entry in programmed.services.values_mut() {
                entry.at = long_ago;
                entry.before = entry.backends.clone();
            }
        }
        // The next fabric is stamped from the settled entries.
        *self.cache.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    /// The fabric for the cluster's current state (rebuilt only when pods, services or
    /// endpoints changed).
    pub fn fabric(&self) -> Arc<Fabric> {
        self.snapshot().fabric
    }

    /// The snapshot of the cluster's current state. Taken under the cache's lock, revisions
    /// included (a caller that read them before another rebuilt must not put an older snapshot
    /// back), and made from the last one where it can: with the same pods in the same places
    /// (addresses, listeners, nodes), Services and Endpoints, its wiring is the last one's,
    /// and its policies too unless they, the namespaces' labels or the pods' labels changed.
    fn snapshot(&self) -> Snapshot {
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        let at = Revisions::of(&self.store);
        if let Some(snap) = cache.as_ref()
            && snap.at == at
        {
            return snap.clone();
        }
        let started = std::time::Instant::now();
        let before = cache.take();
        let mut pods = self.pods.lock().unwrap_or_else(|p| p.into_inner());
        let running = snapshot::running_pods(&self.store, &self.profiles, &mut pods);
        let same_base = before
            .as_ref()
            .filter(|b| b.at.same_services(&at) && snapshot::same_network(&b.fabric.pods, &running));
        let (fabric, made) = match same_base {
            Some(b)
                if b.at.same_policies(&at)
                    && b.fabric
                        .policies
                        .as_ref()
                        .is_none_or(|p| snapshot::same_meta(&p.pods, &running)) =>
            {
                (b.fabric.clone(), "the last")
            }
            // The pods' labels (which only policies read) come from this rebuild's pods.
            Some(b) => (
                Arc::new(b.fabric.with_policies(self.policies(&running))),
                "the last with its policies read again",
            ),
            None => {
                let mut fabric = snapshot::fabric(
                    &self.store,
                    &self.profiles,
                    (&self.nodes, &self.net),
                    running,
                    &mut pods,
                );
                self.stamp_changes(&mut fabric);
                fabric.policies = self.policies(&fabric.pods);
                (Arc::new(fabric), "rebuilt")
            }
        };
        drop(pods);
        // The records read the store when asked: the same while pods, Services, Endpoints and
        // namespaces are.
        let records = match before {
            Some(b) if (b.at.pods, b.at.namespaces) == (at.pods, at.namespaces) && b.at.same_services(&at) => b.records,
            _ => Arc::new(OnceLock::new()),
        };
        let snap = Snapshot { fabric, records, at };
        *cache = Some(snap.clone());
        tracing::trace!(?at, pods = snap.fabric.pods.len(), took = ?started.elapsed(), "network snapshot: {made}");
        snap
    }

    /// The cluster's NetworkPolicies over a fabric's `pods`.
    fn policies(&self, pods: &[Arc<PodFacts>]) -> Option<Arc<crate::network::fabric::policy::Policies>> {
        crate::network::fabric::policy::from_store(&self.store, self.policy_engine, pods, &self.policy_clock)
            .map(Arc::new)
    }

    /// Stamps each Service with when its state last changed (new, other ports, other
    /// endpoints), so that a node forwards the change only after its proxy's programming delay,
    /// and records the backends programmed before it (they keep answering meanwhile).
    fn stamp_changes(&self, fabric: &mut Fabric) {
        let mut programmed = self.programmed.lock().unwrap_or_else(|p| p.into_inner());
        let now = std::time::Instant::now();
        let wiring: &mut crate::network::fabric::Wiring = fabric;
        let slowest = wiring.nodes.iter().map(|n| n.programming).max().unwrap_or_default();
        let rebuild = programmed.rebuild.wrapping_add(1);
        programmed.rebuild = rebuild;
        wiring.settled.clear();
        let mut key = String::new();
        for i in 0..wiring.services.len() {
            let s = &wiring.services[i];
            let pods = &wiring.pods;
            // What the proxies program for the Service, as one number: its address, and per port
            // the number, NodePort, protocol and sorted backends (a hash, not a rendering: a
            // DaemonSet's Service has a backend per node and changes at every rebuild's look).
            let state = {
                use std::hash::{Hash, Hasher};
                let mut h = std::collections::hash_map::DefaultHasher::new();
                s.cluster_ip.hash(&mut h);
                for p in &s.ports {
                    let mut backends: Vec<(Ipv4Addr, u16)> =
                        p.targets.iter().map(|(pod, port)| (pods[*pod].ip, *port)).collect();
                    backends.sort_unstable();
                    (p.port, p.node_port, p.proto, backends).hash(&mut h);
                }
                h.finish()
            };
            // Each port's backend addresses, made only for a new or changed state.
            let backends = || -> Arc<Vec<Backends>> {
                Arc::new(
                    s.ports
                        .iter()
                        .map(|p| p.targets.iter().map(|(pod, _)| pods[*pod].ip).collect())
                        .collect(),
                )
            };
            key.clear();
            key.push_str(&s.namespace);
            key.push('/');
            key.push_str(&s.name);
            let entry = match programmed.services.get_mut(key.as_str()) {
                Some(entry) => entry,
                None => programmed.services.entry(key.clone()).or_insert(Programmed {
                    state,
                    at: now,
                    backends: backends(),
                    before: Arc::default(),
                    seen: rebuild,
                }),
            };
            if entry.state != state {
                // What every node had programmed: the last state, once all of them caught up.
                if entry.at.elapsed() >= slowest {
                    entry.before = std::mem::take(&mut entry.backends);
                }
                entry.state = state;
                entry.at = now;
                entry.backends = backends();
            }
            entry.seen = rebuild;
            let (at, before) = (entry.at, entry.before.clone());
            wiring.services[i].changed_at = Some(at);
            wiring.settled.insert(i, before);
        }
        programmed.services.retain(|_, p| p.seen == rebuild);
    }

    /// The next ephemeral port number (before mapping into the port range).
    fn pick(&self) -> u64 {
        self.picks.fetch_add(1, Ordering::Relaxed)
    }

    /// The next round-robin position of `client`'s load-balanced flows to this destination.
    fn round(&self, client: Ipv4Addr, ip: Ipv4Addr, port: u16, proto: Proto) -> u64 {
        let mut rounds = self.rounds.lock().unwrap_or_else(|p| p.into_inner());
        let next = rounds.entry((client, ip, port, proto)).or_default();
        let pick = *next;
        *next += 1;
        pick
    }

    /// The client a container is, or None when the pod has no network (not running).
    pub fn client_for(self: &Arc<Self>, pod: &Obj, container: &str, dns: DnsConfig, windows: bool) -> Option<Client> {
        let Snapshot { fabric, records, .. } = self.snapshot();
        let index = fabric.pod_index(pod.namespace(), pod.name())?;
        let container = pod
            .value()
            .pointer("/spec/containers")
            .and_then(|c| c.as_array())
            .and_then(|cs| {
                cs.iter()
                    .position(|c| c.get("name").and_then(|n| n.as_str()) == Some(container))
            })
            .unwrap_or(0);
        let src = fabric.source_of(index, container);
        Some(Client {
            net: self.clone(),
            fabric,
            src,
            dns,
            windows,
            depth: 0,
            records,
        })
    }

    /// A client outside the cluster at `ip` (for the real listeners).
    pub fn outside_client(self: &Arc<Self>, ip: Ipv4Addr) -> Client {
        let Snapshot { fabric, records, .. } = self.snapshot();
        Client {
            net: self.clone(),
            fabric,
            src: Src::Outside(ip),
            dns: DnsConfig::default(),
            windows: false,
            depth: 0,
            records,
        }
    }

    /// The DNS configuration of a pod's first container (for `/dial` names).
    fn pod_dns(&self, namespace: &str, name: &str) -> Option<(DnsConfig, bool)> {
        let obj = self.store.get(resources::core("pods"), namespace, name).ok()?;
        let first = obj
            .value()
            .pointer("/spec/containers/0/name")
            .and_then(|n| n.as_str())
            .unwrap_or("")
            .to_string();
        let on = crate::config::profile::placement(&self.profiles, obj.value(), &first);
        let asker = dns::Asker {
            spec: obj.value().get("spec").unwrap_or(&serde_json::Value::Null),
            namespace: obj.namespace(),
            node: on.node,
            windows: on.os == crate::config::platform::Os::Windows,
            host_process: on.host_process,
        };
        Some((dns::container_dns(&asker), asker.windows))
    }
}

/// CoreDNS's HTTP plugins: `health` on 8080 (`/health`), `ready` on 8181 (`/ready`),
/// `prometheus` on 9153 (`/metrics`); Go's mux answers anything else with a 404.
fn coredns_http(at: Endpoint, path: &str) -> HttpReply {
    let port = match at {
        Endpoint::Pod { port, .. } => port,
        _ => 0,
    };
    match (port, path) {
        (8080, "/health") | (8181, "/ready") => reply(200, "OK"),
        (9153, "/metrics") => reply(
            200,
            "# HELP coredns_health_request_failures_total The number of times the health check failed.\n\
             # TYPE coredns_health_request_failures_total counter\n\
             coredns_health_request_failures_total 0\n",
        ),
        _ => reply(404, "404 page not found\n"),
    }
}

/// A client at one source, over one snapshot of the fabric.
#[derive(Debug, Clone)]
pub struct Client {
    net: Arc<SimNet>,
    fabric: Arc<Fabric>,
    src: Src,
    dns: DnsConfig,
    windows: bool,
    depth: u8,
    records: Arc<OnceLock<Records>>,
}

fn reply(status: u16, body: impl Into<String>) -> HttpReply {
    HttpReply {
        status,
        body: body.into(),
    }
}

impl Client {
    pub fn fabric(&self) -> &Fabric {
        &self.fabric
    }

    pub fn source(&self) -> Src {
        self.src
    }

    /// Sends one flow through the fabric.
    pub fn send(&self, ip: Ipv4Addr, port: u16, proto: Proto) -> Result<Reached, Failure> {
        let flow = Flow {
            src: self.src,
            dst: ip,
            port,
            proto,
            pick: self.net.round(self.fabric.source_ip(self.src), ip, port, proto),
        };
        let attempt = self.net.pick();
        crate::network::fabric::attempt::during(attempt, || self.fabric.decide(&flow)).result
    }

    /// The ephemeral port a receiver sees.
    fn client_port(&self) -> u16 {
        let n = self.net.pick();
        40_000 + u16::try_from(n % 20_000).unwrap_or(0)
    }

    fn records(&self) -> &Records {
        self.records
            .get_or_init(|| Records::from_store_knowing(&self.net.store, &self.net.known_pods))
    }

    fn app_at(&self, at: Endpoint, proto: Proto) -> Option<App> {
        match at {
            Endpoint::Pod { pod, port } => self.fabric.pods[pod].serving(port, proto, None).map(|s| s.app),
            Endpoint::Outside { host, port } => self.fabric.outside[host]
                .serves
                .iter()
                .find(|(p, pr, _)| *p == port && *pr == proto)
                .map(|(_, _, app)| *app),
            Endpoint::Node { .. } => None,
        }
    }

    /// A client in the pod a flow reached (for netexec's `/dial`).
    fn inside(&self, pod: usize) -> Client {
        let p = &self.fabric.pods[pod];
        let (dns, windows) = self
            .net
            .pod_dns(&p.namespace, &p.name)
            .unwrap_or_else(|| (DnsConfig::default(), self.fabric.nodes[p.node].windows));
        Client {
            net: self.net.clone(),
            fabric: self.fabric.clone(),
            src: self.fabric.source_of(pod, 0),
            dns,
            windows,
            depth: self.depth + 1,
            records: self.records.clone(),
        }
    }

    /// What answers an HTTP GET of `target` once the flow reached `reached`.
    fn answer_http(&self, reached: Reached, target: &str) -> Result<HttpReply, Failure> {
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        match reached.at {
            Endpoint::Pod { pod, .. } => {
                let p = &self.fabric.pods[pod];
                match self.app_at(reached.at, Proto::Tcp) {
                    Some(App::Netexec) => Ok(self.netexec(pod, reached, path, query)),
                    Some(App::ServeHostname) => Ok(reply(200, p.hostname.clone())),
                    Some(App::Web) => Ok(reply(
                        200,
                        format!(
                            "<html><head><title>{0}</title></head><body><h1>{0}</h1><p>served by pod {1}/{2}</p></body></html>\n",
                            p.hostname, p.namespace, p.name
                        ),
                    )),
                    Some(App::DnsHealth) => Ok(coredns_http(reached.at, path)),
                    Some(App::ApiServer) => Ok(api_server_http(path)),
                    Some(App::Dns | App::UdpEcho) | None => Err(Failure::Reset),
                }
            }
            Endpoint::Node { port, .. } if port == KUBELET_PORT => {
                Ok(reply(400, "Client sent an HTTP request to an HTTPS server.\n"))
            }
            // The API server's health endpoints are open to anonymous clients (the
            // system:public-info-viewer role); TLS is not modelled, as for the kubelet.
            Endpoint::Node { port, .. } if port == API_SERVER_PORT => Ok(api_server_http(path)),
            Endpoint::Node { .. } => Err(Failure::Reset),
            Endpoint::Outside { host, .. } => match self.app_at(reached.at, Proto::Tcp) {
                Some(App::Web) => {
                    let name = &self.fabric.outside[host].name;
                    Ok(reply(
                        200,
                        format!(
                            "<!doctype html>\n<html><head><title>{name}</title></head><body><h1>{name}</h1></body></html>\n"
                        ),
                    ))
                }
                Some(App::ApiServer) => Ok(api_server_http(path)),
                _ => Err(Failure::Reset),
            },
        }
    }

    /// agnhost netexec's HTTP endpoints (unknown paths fall to `/`, as in its mux).
    fn netexec(&self, pod: usize, reached: Reached, path: &str, query: &str) -> HttpReply {
        let params: HashMap<String, String> = form_urlencoded::parse(query.as_bytes()).into_owned().collect();
        let p = &self.fabric.pods[pod];
        match path {
            "/hostname" | "/hostName" => reply(200, p.hostname.clone()),
            "/clientip" => reply(200, format!("{}:{}", reached.seen_from, self.client_port())),
            "/echo" => {
                let msg = params.get("msg").cloned().unwrap_or_default();
                match params.get("code").map(String::as_str) {
                    None | Some("") => reply(200, msg),
                    Some(code) => match code.parse::<u16>() {
                        Ok(status) if (100..600).contains(&status) => reply(status, msg),
                        _ => reply(
                            200,
                            format!("argument 'code' must be an integer or empty, got {code:?}\n"),
                        ),
                    },
                }
            }
            // 412 until (or unless) the UDP server runs.
            "/healthz" if p.serves.iter().any(|s| s.app == App::Netexec && s.proto == Proto::Udp) => reply(200, ""),
            "/healthz" => reply(412, ""),
            "/dial" => self.inside(pod).dial(&params),
            _ => reply(
                200,
                format!("NOW: {}", chrono::Utc::now().format("%Y-%m-%d %H:%M:%S%.9f %z UTC")),
            ),
        }
    }

    /// netexec `/dial`: `tries` requests from this pod to `host:port`, as agnhost answers them:
    /// always 200 with `{"errors":[…],"responses":[…]}` (each key only when it has something to
    /// say: `responses` only when the last try answered), 400 for bad parameters.
    fn dial(&self, params: &HashMap<String, String>) -> HttpReply {
        let get = |k: &str| params.get(k).map(String::as_str).unwrap_or("");
        let (request, host, port) = (get("request"), get("host"), get("port"));
        let bad = |text: String| reply(400, format!("{text}\n"));
        let tries = match get("tries") {
            "" => 1,
            t => match t.parse::<i64>() {
                Ok(n) => n.clamp(0, 100),
                Err(_) => {
                    return bad(format!(
                        "tries parameter is invalid. strconv.Atoi: parsing {t:?}: invalid syntax"
                    ));
                }
            },
        };
        if request.is_empty() {
            return bad("request parameter not specified. <nil>".into());
        }
        let protocol = get("protocol").to_ascii_lowercase();
        let udp = match protocol.as_str() {
            "" | "http" => false,
            "udp" => true,
            "sctp" => return bad("host and/or port param are invalid. sctp is not supported by this network".into()),
            _ => return bad(format!("unsupported protocol. {}", get("protocol"))),
        };
        if self.depth > MAX_DIAL_DEPTH {
            return bad("dial nested too deeply".into());
        }
        let Ok(port) = port.parse::<u16>() else {
            let kind = if udp { "udp" } else { "tcp" };
            return bad(format!(
                "host and/or port param are invalid. lookup {kind}/{port}: unknown port"
            ));
        };
        let ip = match self.address(host) {
            Ok(ip) => ip,
            Err(e) => return bad(format!("host and/or port param are invalid. {e}")),
        };
        let me = self.fabric.source_ip(self.src);
        let mut responses = Vec::new();
        let mut errors = Vec::new();
        let mut last = String::new();
        for _ in 0..tries {
            let outcome = if udp {
                match self.udp(ip, port, request) {
                    Ok(r) if !r.is_empty() => Ok(r),
                    Ok(_) => Err(format!("reading from udp connection failed. err:'{}'", "<nil>")),
                    Err(f) => Err(format!(
                        "reading from udp connection failed. err:'read udp {me}:{}->{ip}:{port}: {}'",
                        self.client_port(),
                        self.go_error(&f, true)
                    )),
                }
            } else {
                let path = format!("/{request}");
                self.http_get(ip, port, &path).map(|r| r.body).map_err(|f| {
                    let url = format!("http://{ip}:{port}{path}");
                    match f {
                        Failure::Timeout | Failure::NoReply => {
                            format!("Get {url:?}: dial tcp {ip}:{port}: i/o timeout (Client.Timeout exceeded while awaiting headers)")
                        }
                        Failure::Reset => format!(
                            "Get {url:?}: read tcp {me}:{}->{ip}:{port}: {}",
                            self.client_port(),
                            self.go_error(&f, false)
                        ),
                        _ => format!("Get {url:?}: dial tcp {ip}:{port}: {}", self.go_error(&f, false)),
                    }
                })
            };
            match outcome {
                Ok(r) => {
                    last.clone_from(&r);
                    responses.push(r);
                }
                Err(e) => {
                    last.clear();
                    errors.push(e);
                }
            }
        }
        let mut out = serde_json::Map::new();
        if !errors.is_empty() {
            out.insert("errors".into(), serde_json::json!(errors));
        }
        if !last.is_empty() {
            out.insert("responses".into(), serde_json::json!(responses));
        }
        reply(200, serde_json::Value::Object(out).to_string())
    }

    /// How Go's net package words a failure on this client's OS.
    fn go_error(&self, f: &Failure, udp: bool) -> String {
        match (f, self.windows) {
            (Failure::Timeout | Failure::NoReply, _) => "i/o timeout".into(),
            (Failure::Refused, false) if udp => "read: connection refused".into(),
            (Failure::Refused, false) => "connect: connection refused".into(),
            // Windows reports an ICMP port unreachable on UDP as a reset.
            (Failure::Refused, true) if udp => {
                "wsarecv: An existing connection was forcibly closed by the remote host.".into()
            }
            (Failure::Refused, true) => {
                "connectex: No connection could be made because the target machine actively refused it.".into()
            }
            (Failure::Reset, false) => "read: connection reset by peer".into(),
            (Failure::Reset, true) => "wsarecv: An existing connection was forcibly closed by the remote host.".into(),
            (Failure::Other(m), _) => m.clone(),
        }
    }

    /// An IP literal, or the first address the client's resolver finds (Go's wording on failure).
    fn address(&self, host: &str) -> Result<Ipv4Addr, String> {
        if host.is_empty() {
            return Ok(Ipv4Addr::UNSPECIFIED);
        }
        if let Ok(ip) = host.parse() {
            return Ok(ip);
        }
        let server = self.dns.nameservers.first().map_or("", String::as_str);
        let suffix = if self.windows {
            String::new()
        } else {
            format!(" on {server}:53")
        };
        match self.resolve(host, None) {
            Lookup::Found { addrs, .. } if !addrs.is_empty() => Ok(addrs[0]),
            Lookup::Timeout { .. } => Err(format!("lookup {host}{suffix}: i/o timeout")),
            _ => Err(format!("lookup {host}{suffix}: no such host")),
        }
    }
}

impl Wire for Client {
    fn over_ipv6(&self, ip: std::net::Ipv6Addr) -> Result<Ipv4Addr, Failure> {
        self.fabric.ipv6_route(self.src, ip).map_err(|d| match d.result {
            Err(failure) => failure,
            Ok(_) => Failure::Timeout,
        })
    }

    fn dns_server(&self) -> String {
        self.dns.nameservers.first().cloned().unwrap_or_default()
    }

    fn resolve(&self, name: &str, server: Option<&str>) -> Lookup {
        let servers: Vec<String> = match server {
            Some(s) => vec![s.to_string()],
            None => self.dns.nameservers.clone(),
        };
        let first = servers.first().cloned().unwrap_or_default();
        for s in &servers {
            let Ok(ip) = s.parse::<Ipv4Addr>() else {
                continue;
            };
            let Ok(reached) = self.send(ip, 53, Proto::Udp) else {
                continue;
            };
            let cluster = match reached.at {
                Endpoint::Pod { .. } if self.app_at(reached.at, Proto::Udp) == Some(App::Dns) => true,
                Endpoint::Outside { .. } if self.app_at(reached.at, Proto::Udp) == Some(App::Dns) => false,
                _ => continue,
            };
            let outside;
            let records = if cluster {
                self.records()
            } else {
                outside = Records::outside();
                &outside
            };
            let mut config = self.dns.clone();
            if config.nameservers.is_empty() {
                config.nameservers.push(s.clone());
            }
            return match dns::resolve(records, name, &config, self.windows) {
                Resolution::Resolved { name, addresses, alias } => Lookup::Found {
                    fqdn: name,
                    addrs: addresses,
                    alias,
                },
                Resolution::NotFound { .. } => Lookup::NotFound,
                Resolution::NoNameserver => Lookup::Timeout { server: first },
            };
        }
        Lookup::Timeout { server: first }
    }

    fn connect(&self, ip: Ipv4Addr, port: u16, proto: Proto) -> Result<(), Failure> {
        self.send(ip, port, proto).map(|_| ())
    }

    fn http_get(&self, ip: Ipv4Addr, port: u16, target: &str) -> Result<HttpReply, Failure> {
        let reached = self.send(ip, port, Proto::Tcp)?;
        self.answer_http(reached, target)
    }

    fn udp(&self, ip: Ipv4Addr, port: u16, payload: &str) -> Result<String, Failure> {
        let reached = self.send(ip, port, Proto::Udp)?;
        let Endpoint::Pod { pod, .. } = reached.at else {
            // Outside resolvers ignore a payload that is not a DNS query.
            return Err(Failure::Timeout);
        };
        let p = &self.fabric.pods[pod];
        match self.app_at(reached.at, Proto::Udp) {
            Some(App::Netexec) => {
                // agnhost lower-cases what it receives; unknown commands get no answer.
                let text = payload.trim().to_lowercase();
                if text == "hostname" {
                    Ok(p.hostname.clone())
                } else if let Some(rest) = text.strip_prefix("echo ") {
                    Ok(rest.to_string())
                } else if text == "clientip" {
                    Ok(format!("{}:{}", reached.seen_from, self.client_port()))
                } else {
                    Err(Failure::Timeout)
                }
            }
            Some(App::ServeHostname) => Ok(p.hostname.clone()),
            Some(App::UdpEcho) => Ok(payload.to_string()),
            _ => Err(Failure::Timeout),
        }
    }

    fn ping(&self, ip: Ipv4Addr) -> Result<(), Failure> {
        self.send(ip, 0, Proto::Icmp).map(|_| ())
    }
}

#[cfg(test)]
mod tests;

/// The API server's health endpoints are open to anonymous clients (the
/// system:public-info-viewer role); other paths are refused. TLS is not modelled, as for the
/// kubelet.
fn api_server_http(path: &str) -> HttpReply {
    match path {
        "/healthz" | "/livez" | "/readyz" => reply(200, "ok"),
        _ => reply(403, "forbidden: User \"system:anonymous\" cannot get path\n"),
    }
}
