//! NetworkPolicy (`networking.k8s.io/v1`) as the cluster's policy engine enforces it, one
//! decision per pod flow: a pod selected by a policy of a type (Ingress, Egress) is isolated for
//! that direction, and a connection gets through only when the source's egress and the
//! destination's ingress both allow it; rules allow by pod selector, namespace selector and
//! `ipBlock` (with `except`), on ports by number, name (the destination pod's container port
//! names) or range, per protocol (KNP: kubernetes.io "Network Policies"). Ingress is enforced by
//! the destination node's agent and egress by the source node's, each only where the engine
//! runs ([`PolicyEngine::enforces_on`]) and its agent is up (`netpol-agent-stopped`), and a
//! policy takes effect on a node only once that node's programming delay has passed since it
//! changed — until then the node keeps the policy's previous version, as agents program
//! asynchronously. Traffic from a pod's own node is always allowed (KNP: "traffic to and from
//! the node where a Pod is running is always allowed").

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::{Map, Value};

use super::{Cidr, NodeFacts, Proto};
use crate::config::faults::Fault;
use crate::config::platform::Os;
use crate::config::policy_engine::PolicyEngine;
use crate::store::selector::LabelSelector;
use crate::vocab::json;

/// The rule a denied ingress decision names.
pub const INGRESS_RULE: &str = "NETPOL-DENY-INGRESS";
/// The rule a denied egress decision names.
pub const EGRESS_RULE: &str = "NETPOL-DENY-EGRESS";

/// A port a rule names.
#[derive(Debug, Clone, PartialEq)]
enum PortRef {
    Any,
    Number(u16, Option<u16>),
    Name(String),
}

#[derive(Debug, Clone, PartialEq)]
struct PortRule {
    proto: Proto,
    port: PortRef,
}

#[derive(Debug, Clone)]
enum Peer {
    /// Pods selected by `pods` in the namespaces `namespaces` selects (None: the policy's own).
    Pods {
        namespaces: Option<LabelSelector>,
        pods: LabelSelector,
    },
    Block {
        cidr: Cidr,
        except: Vec<Cidr>,
    },
}

#[derive(Debug, Clone)]
struct Rule {
    /// Empty: every peer.
    peers: Vec<Peer>,
    /// Empty: every port.
    ports: Vec<PortRule>,
}

/// One policy's spec.
#[derive(Debug, Clone)]
pub struct Spec {
    namespace: String,
    selector: LabelSelector,
    /// None: the policy is not of type Ingress.
    ingress: Option<Vec<Rule>>,
    egress: Option<Vec<Rule>>,
}

fn proto_of(v: &Value) -> Option<Proto> {
    match v.get("protocol").and_then(Value::as_str).unwrap_or("TCP") {
        "TCP" => Some(Proto::Tcp),
        "UDP" => Some(Proto::Udp),
        _ => None,
    }
}

fn selector(v: Option<&Value>) -> Option<LabelSelector> {
    match v {
        None => None,
        Some(v) => LabelSelector::from_label_selector_object(v).ok(),
    }
}

fn rules(v: Option<&Value>, peer_key: &str) -> Vec<Rule> {
    let list = v.and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    list.iter()
        .map(|r| {
            let peers = r
                .get(peer_key)
                .and_then(Value::as_array)
                .map_or(&[][..], Vec::as_slice)
                .iter()
                .filter_map(|p| {
                    if let Some(block) = p.get("ipBlock") {
                        let cidr = Cidr::parse(block.get("cidr")?.as_str()?)?;
                        let except = block
                            .get("except")
                            .and_then(Value::as_array)
                            .map_or(&[][..], Vec::as_slice)
                            .iter()
                            .filter_map(|e| e.as_str().and_then(Cidr::parse))
                            .collect();
                        return Some(Peer::Block { cidr, except });
                    }
                    let namespaces = selector(p.get("namespaceSelector"));
                    let pods = selector(p.get("podSelector")).unwrap_or_default();
                    Some(Peer::Pods { namespaces, pods })
                })
                .collect();
            let ports = r
                .get("ports")
                .and_then(Value::as_array)
                .map_or(&[][..], Vec::as_slice)
                .iter()
                .filter_map(|p| {
                    let proto = proto_of(p)?;
                    let end = p
                        .get("endPort")
                        .and_then(Value::as_u64)
                        .and_then(|e| u16::try_from(e).ok());
                    let port = match p.get("port") {
                        None => PortRef::Any,
                        Some(Value::String(name)) => PortRef::Name(name.clone()),
                        Some(n) => PortRef::Number(n.as_u64().and_then(|n| u16::try_from(n).ok())?, end),
                    };
                    Some(PortRule { proto, port })
                })
                .collect();
            Rule { peers, ports }
        })
        .collect()
}

impl Spec {
    /// Reads a NetworkPolicy object; None when its pod selector cannot be read.
    pub fn read(obj: &Value) -> Option<Spec> {
        let namespace = obj.pointer("/metadata/namespace")?.as_str()?.to_string();
        let spec = obj.get("spec")?;
        let selector = selector(Some(spec.get("podSelector").unwrap_or(&Value::Object(Map::new()))))?;
        let types: Vec<&str> = spec
            .get("policyTypes")
            .and_then(Value::as_array)
            .map(|t| t.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        // Without policyTypes: Ingress always, Egress when the policy has egress rules (KNP).
        let ingress_type = types.is_empty() || types.contains(&"Ingress");
        let egress_type = types.contains(&"Egress") || (types.is_empty() && spec.get("egress").is_some());
        Some(Spec {
            namespace,
            ingress: ingress_type.then(|| rules(spec.get("ingress"), "from")),
            egress: egress_type.then(|| rules(spec.get("egress"), "to")),
            selector,
        })
    }
}

/// What a policy decision needs to know of a pod.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PodMeta {
    pub namespace: String,
    pub labels: Map<String, Value>,
    /// Container ports by name (`name`, port, protocol).
    pub ports: Vec<(String, u16, Proto)>,
}

impl PodMeta {
    /// What selectors read of a pod object: its namespace, labels and named container ports.
    pub fn read(pod: &Value) -> PodMeta {
        let ports = json::array(pod, "/spec/containers")
            .iter()
            .flat_map(|c| json::array(c, "/ports"))
            .filter_map(|port| {
                let name = port.get("name")?.as_str()?.to_string();
                let number = u16::try_from(port.get("containerPort")?.as_u64()?).ok()?;
                Some((name, number, proto_of(port)?))
            })
            .collect();
        PodMeta {
            namespace: json::str(pod, "/metadata/namespace").to_string(),
            labels: labels(pod),
            ports,
        }
    }
}

/// An object's labels.
fn labels(obj: &Value) -> Map<String, Value> {
    obj.pointer("/metadata/labels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

/// One end of a flow.
#[derive(Debug, Clone, Copy)]
pub struct End<'a> {
    /// The pod (None: a node's host network or an outside client).
    pub pod: Option<&'a PodMeta>,
    pub ip: Ipv4Addr,
    /// The node it is on (None: outside the cluster).
    pub node: Option<usize>,
}

/// One policy as each node has it programmed: its spec now, the one before its last change,
/// and when that change happened.
#[derive(Debug, Clone)]
struct Versions {
    now: Spec,
    before: Option<Spec>,
    changed: Instant,
}

/// The policies of the cluster, the engine that enforces them and what selectors read.
#[derive(Debug, Clone)]
pub struct Policies {
    engine: PolicyEngine,
    policies: Vec<Arc<Versions>>,
    namespaces: Arc<NamespaceLabels>,
    /// The fabric's pods' labels and port names, by the fabric's pod index.
    pub pods: Vec<Arc<PodMeta>>,
}

/// Each namespace's labels by its name.
type NamespaceLabels = HashMap<String, Map<String, Value>>;

/// What the agents last saw, kept between fabric rebuilds: each policy's versions by namespace
/// and name (with the object's resourceVersion and its spec's text), and the namespaces'
/// labels with the revision of the namespaces they were read at.
#[derive(Debug, Default)]
pub struct Clock(Mutex<Seen>);

#[derive(Debug, Default)]
struct Seen {
    policies: HashMap<String, HashMap<String, Known>>,
    namespaces: Option<(u64, Arc<NamespaceLabels>)>,
}

/// One policy as last seen: its object's resourceVersion, its spec's text and its versions.
#[derive(Debug)]
struct Known {
    version: u64,
    state: String,
    versions: Arc<Versions>,
    /// Whether the rebuild under way saw it.
    seen: bool,
}

impl Policies {
    /// The policies of `objects` (stored NetworkPolicy objects) with the namespaces' labels,
    /// stamped through `clock`: a policy's spec is read once per version of its object.
    fn read(
        engine: PolicyEngine,
        objects: &[crate::store::Obj],
        namespaces: Arc<NamespaceLabels>,
        pods: Vec<Arc<PodMeta>>,
        clock: &Clock,
    ) -> Policies {
        let mut known = clock.0.lock().unwrap_or_else(|p| p.into_inner());
        let mut policies = Vec::with_capacity(objects.len());
        for obj in objects {
            let in_ns = known.policies.entry(obj.namespace().to_string()).or_default();
            // The same object version as the last rebuild: its spec is read already.
            if let Some(entry) = in_ns.get_mut(obj.name())
                && entry.version == obj.resource_version()
            {
                entry.seen = true;
                policies.push(entry.versions.clone());
                continue;
            }
            let value = obj.value();
            let Some(spec) = Spec::read(value) else { continue };
            let state = value.get("spec").map(Value::to_string).unwrap_or_default();
            let versions = match in_ns.remove(obj.name()) {
                Some(old) if old.state == state => old.versions,
                old => Arc::new(Versions {
                    before: old.map(|o| o.versions.now.clone()),
                    now: spec,
                    changed: Instant::now(),
                }),
            };
            policies.push(versions.clone());
            in_ns.insert(
                obj.name().to_string(),
                Known {
                    version: obj.resource_version(),
                    state,
                    versions,
                    seen: true,
                },
            );
        }
        for in_ns in known.policies.values_mut() {
            in_ns.retain(|_, k| std::mem::take(&mut k.seen));
        }
        known.policies.retain(|_, in_ns| !in_ns.is_empty());
        Policies {
            engine,
            policies,
            namespaces,
            pods,
        }
    }

    /// Whether the node's agent enforces policies (the engine runs there and is up).
    fn enforced(&self, node: &NodeFacts) -> bool {
        let os = if node.windows { Os::Windows } else { Os::Linux };
        self.engine.enforces_on(os, node.build) && !node.faults.contains(&Fault::NetpolAgentStopped)
    }

    /// The specs node `node` has programmed.
    fn programmed<'a>(&'a self, node: &'a NodeFacts) -> impl Iterator<Item = &'a Spec> + 'a {
        self.policies.iter().filter_map(move |v| {
            if v.changed.elapsed() >= node.programming {
                Some(&v.now)
            } else {
                v.before.as_ref()
            }
        })
    }

    fn peer_matches(&self, peer: &Peer, policy_ns: &str, other: End<'_>) -> bool {
        match peer {
            Peer::Block { cidr, except } => cidr.contains(other.ip) && !except.iter().any(|e| e.contains(other.ip)),
            Peer::Pods { namespaces, pods } => {
                let Some(pod) = other.pod else { return false };
                let ns_ok = match namespaces {
                    None => pod.namespace == policy_ns,
                    Some(sel) => sel.matches(self.namespaces.get(&pod.namespace)),
                };
                ns_ok && pods.matches(Some(&pod.labels))
            }
        }
    }

    fn port_matches(rule: &PortRule, port: u16, proto: Proto, dst: End<'_>) -> bool {
        if rule.proto != proto {
            return false;
        }
        match &rule.port {
            PortRef::Any => true,
            PortRef::Number(p, end) => port >= *p && port <= end.unwrap_or(*p),
            PortRef::Name(name) => dst
                .pod
                .is_some_and(|d| d.ports.iter().any(|(n, p, pr)| n == name && *p == port && *pr == proto)),
        }
    }

    /// Whether one direction's rules of the specs selecting `pod` allow the flow; None when no
    /// spec selects it for that direction (not isolated).
    fn allowed<'a>(
        &self,
        specs: impl Iterator<Item = &'a Spec>,
        pod: &PodMeta,
        ingress: bool,
        peer: End<'_>,
        dst: End<'_>,
        (port, proto): (u16, Proto),
    ) -> Option<bool> {
        let mut isolated = false;
        for spec in specs {
            if spec.namespace != pod.namespace || !spec.selector.matches(Some(&pod.labels)) {
                continue;
            }
            let Some(rules) = (if ingress { &spec.ingress } else { &spec.egress }) else {
                continue;
            };
            isolated = true;
            let allows = rules.iter().any(|r| {
                (r.peers.is_empty() || r.peers.iter().any(|p| self.peer_matches(p, &spec.namespace, peer)))
                    && (r.ports.is_empty() || r.ports.iter().any(|pr| Self::port_matches(pr, port, proto, dst)))
            });
            if allows {
                return Some(true);
            }
        }
        isolated.then_some(false)
    }

    /// Whether the policies let `src` reach `dst` on `port`/`proto`: Err names the rule and why
    /// not. ICMP is left alone (NetworkPolicy names TCP, UDP and SCTP only).
    pub fn decide(
        &self,
        nodes: &[NodeFacts],
        src: End<'_>,
        dst: End<'_>,
        port: u16,
        proto: Proto,
    ) -> Result<(), (&'static str, &'static str)> {
        if proto == Proto::Icmp || self.policies.is_empty() {
            return Ok(());
        }
        if let (Some(pod), Some(n)) = (src.pod, src.node.and_then(|n| nodes.get(n)))
            && self.enforced(n)
            && self.allowed(self.programmed(n), pod, false, dst, dst, (port, proto)) == Some(false)
        {
            return Err((
                EGRESS_RULE,
                "a NetworkPolicy isolates the source pod for egress and none of its rules allows this destination and port",
            ));
        }
        let Some(pod) = dst.pod else { return Ok(()) };
        let Some(n) = dst.node.and_then(|n| nodes.get(n)) else {
            return Ok(());
        };
        // The pod's own node is always let in (KNP).
        if src.pod.is_none() && src.node == dst.node {
            return Ok(());
        }
        if self.enforced(n) && self.allowed(self.programmed(n), pod, true, src, dst, (port, proto)) == Some(false) {
            return Err((
                INGRESS_RULE,
                "a NetworkPolicy isolates the destination pod for ingress and none of its rules allows this source and port",
            ));
        }
        Ok(())
    }
}

/// The cluster's policies from the store, with what selectors read of the fabric's `pods` (in
/// its order) and the namespaces; None when there is no NetworkPolicy (nothing to decide).
pub fn from_store(
    store: &crate::store::Store,
    engine: PolicyEngine,
    pods: &[Arc<super::PodFacts>],
    clock: &Clock,
) -> Option<Policies> {
    use crate::store::resources;
    let objects = store
        .list(resources::named("networking.k8s.io", "networkpolicies"), None)
        .0;
    if objects.is_empty() {
        *clock.0.lock().unwrap_or_else(|p| p.into_inner()) = Seen::default();
        return None;
    }
    let namespaces = namespace_labels(store, clock);
    // Each pod's labels and named ports, read with the rest of its facts once per version.
    let pods = pods.iter().map(|p| p.meta.clone()).collect();
    Some(Policies::read(engine, &objects, namespaces, pods, clock))
}

/// Each namespace's labels, read again only when a namespace changed.
fn namespace_labels(store: &crate::store::Store, clock: &Clock) -> Arc<NamespaceLabels> {
    use crate::store::resources;
    let at = store.changed_at(&[resources::core("namespaces")]);
    let mut known = clock.0.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((read_at, labels)) = &known.namespaces
        && *read_at == at
    {
        return labels.clone();
    }
    let labels: Arc<HashMap<_, _>> = Arc::new(
        store
            .list(resources::core("namespaces"), None)
            .0
            .iter()
            .map(|ns| (ns.name().to_string(), labels(ns.value())))
            .collect(),
    );
    known.namespaces = Some((at, labels.clone()));
    labels
}
