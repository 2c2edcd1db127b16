//! `network-policy`: one NetworkPolicy case between a client pod on the source node and a server
//! pod on the destination node. The end the policy selects is created for the cell and labelled
//! for it alone (the server for an ingress policy, the client for an egress one), so that its
//! policy selects no other pod; the other end is the run's shared fixture on that node (its
//! client `cli-N` or server `srv-N`), labelled for the cell where a policy's peer selector
//! names it. One new pod per cell: a node with one free pod slot runs the cells in turn, and two
//! cells never wait on each other's slots. The flow must get through before any
//! policy; under the policy's closed form it must be denied once the nodes' agents had the
//! settle window to program it (policies are programmed asynchronously, like Services); an allow
//! case then opens the policy and the flow must get through again. The policy and the pods are
//! deleted when the cell is judged.

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use crate::catalogue::netpol::PolicyCase;
use crate::catalogue::suite::{FailureClass, Protocol};
use crate::cluster::facts::ClusterNode;
use crate::cluster::workload::{CellPod, NotReady, Started};
use crate::probes::judgement::{Case, Ctx, Probed, Unprobed};
use crate::probes::settle::{self, FlowKind};
use crate::probes::transport::{self, Observation, Request, Runner};

/// The label that ties a cell's pods to its policy.
pub const LABEL: &str = "mixcheck.io/netpol";

/// What a cell says when its flow failed before any policy existed: the pod network's failure,
/// not the policy's (the diagnosis reads it so).
pub const BEFORE_ANY_POLICY: &str = "before any policy";

/// The fixture of the cell's own pod (agnhost netexec with a `client` container).
const FIXTURE: &str = "netexec-server";

/// The label key that names the shared client as the cell's peer (`client`), one key per cell
/// so that concurrent cells label the same pod without touching each other's labels.
fn peer_label(cell: &str) -> String {
    format!("np.mixcheck.io/{cell}")
}

/// The ports of the server's netexec: TCP `http` 8080, UDP `udp` 8081.
fn port(protocol: Protocol) -> u16 {
    if protocol == Protocol::Udp { 8081 } else { 8080 }
}

/// The NetworkPolicy of `case` for cell `cell`, closed (`open` false) or open.
pub fn policy(case: PolicyCase, cell: &str, ns: &str, client_ip: &str, open: bool) -> Option<Value> {
    let server = json!({"matchLabels": {LABEL: format!("{cell}-server")}});
    let ingress = |rule: Value| json!({"podSelector": server, "policyTypes": ["Ingress"], "ingress": [rule]});
    let spec = match case {
        PolicyCase::NoPolicy => return None,
        PolicyCase::DenyIngress => json!({"podSelector": server, "policyTypes": ["Ingress"]}),
        PolicyCase::AllowPodSelector => {
            let who = if open { "client" } else { "nobody" };
            ingress(json!({"from": [{"podSelector": {"matchLabels": {peer_label(cell): who}}}]}))
        }
        PolicyCase::AllowNamespaceSelector => {
            let name = if open { ns.to_string() } else { format!("{ns}-none") };
            ingress(json!({"from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": name}}}]}))
        }
        PolicyCase::AllowNamedPort => {
            let name = if open { "http" } else { "no-such-port" };
            ingress(json!({"ports": [{"protocol": "TCP", "port": name}]}))
        }
        PolicyCase::AllowPort => {
            let p = if open { 8080 } else { 8079 };
            ingress(json!({"ports": [{"protocol": "TCP", "port": p}]}))
        }
        PolicyCase::AllowUdp => {
            let p = if open { 8081 } else { 8082 };
            ingress(json!({"ports": [{"protocol": "UDP", "port": p}]}))
        }
        PolicyCase::DenyEgress => json!({
            "podSelector": {"matchLabels": {LABEL: format!("{cell}-client")}},
            "policyTypes": ["Egress"],
            "egress": [{"ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]}]
        }),
        PolicyCase::IpBlockExcept => {
            let ip: std::net::Ipv4Addr = client_ip.parse().ok()?;
            let [a, b, c, d] = ip.octets();
            let except = if open {
                format!("{a}.{b}.{c}.{}/32", d ^ 1)
            } else {
                format!("{ip}/32")
            };
            ingress(json!({"from": [{"ipBlock": {"cidr": format!("{a}.{b}.{c}.0/24"), "except": [except]}}]}))
        }
    };
    Some(json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": format!("mixcheck-{cell}"), "namespace": ns},
        "spec": spec
    }))
}

/// One end of a cell's flow: a pod the cell started, or the run's shared fixture on the node.
struct End {
    name: String,
    ip: String,
    /// The container probes exec in (the own pod's `client`; the shared client's only one).
    container: Option<&'static str>,
    /// The pod the cell started (deleted when it is judged); None: the shared fixture.
    own: Option<Started>,
}

impl End {
    fn own(started: Started) -> Self {
        Self {
            name: started.name.clone(),
            ip: started.ip.clone(),
            container: Some("client"),
            own: Some(started),
        }
    }

    fn shared(p: Option<&crate::cluster::deploy::Placed>, what: &str, node: &str) -> Result<Self, Unprobed> {
        let name = crate::probes::flow::usable(p, what, node)?;
        Ok(Self {
            ip: p.map(|p| p.ip.clone()).unwrap_or_default(),
            name,
            container: None,
            own: None,
        })
    }
}

/// The pods of one cell.
struct Pods {
    client: End,
    server: End,
}

/// Probes one pair of a `network-policy` cell.
pub async fn observe(ctx: &Ctx<'_>, case: &Case<'_>, policy_case: PolicyCase) -> Probed {
    let (Some(from), Some(to)) = (case.from(ctx.facts), case.to(ctx.facts)) else {
        return Probed::Error("the cell has no node pair".into());
    };
    // One policy and two pods per pair: a cell of several node pairs probes each on its own.
    let cell = cell_name(case);
    let began = std::time::Instant::now();
    let pods = match start_pods(ctx, case, policy_case, &cell, from, to).await {
        Ok(p) => p,
        Err(probed) => return probed,
    };
    tracing::debug!("{cell}: pods ready after {:?}", began.elapsed());
    let pod_api: Api<Pod> = Api::namespaced(ctx.client.clone(), ctx.ns);
    let peer = policy_case == PolicyCase::AllowPodSelector && pods.client.own.is_none();
    let peer_patch = |value: Value| json!({"metadata": {"labels": {peer_label(&cell): value}}});
    let probed = if peer
        && let Err(e) = pod_api
            .patch(
                &pods.client.name,
                &PatchParams::default(),
                &Patch::Merge(&peer_patch(json!("client"))),
            )
            .await
    {
        Probed::Error(format!("labelling {} as the policy's peer: {e}", pods.client.name))
    } else {
        run_case(ctx, case, policy_case, &cell, from, &pods).await
    };
    tracing::debug!("{cell}: judged after {:?}", began.elapsed());
    let policies: Api<NetworkPolicy> = Api::namespaced(ctx.client.clone(), ctx.ns);
    let _ = policies
        .delete(&format!("mixcheck-{cell}"), &DeleteParams::default())
        .await;
    if peer {
        let _ = pod_api
            .patch(
                &pods.client.name,
                &PatchParams::default(),
                &Patch::Merge(&peer_patch(Value::Null)),
            )
            .await;
    }
    for end in [pods.client, pods.server] {
        if let Some(started) = end.own {
            ctx.workloads.stop(started).await;
        }
    }
    tracing::debug!("{cell}: cleaned up after {:?}", began.elapsed());
    probed
}

/// The pod a cell starts for itself: where the policy selects (the server, or the client of an
/// egress policy), named and labelled for the cell.
struct Own<'n> {
    node: &'n ClusterNode,
    egress: bool,
    suffix: String,
    value: String,
}

impl<'n> Own<'n> {
    fn of(policy_case: PolicyCase, cell: &str, from: &'n ClusterNode, to: &'n ClusterNode) -> Self {
        let egress = policy_case == PolicyCase::DenyEgress;
        let (node, role) = if egress { (from, "client") } else { (to, "server") };
        Self {
            node,
            egress,
            suffix: format!("-{cell}{}", &role[..1]),
            value: format!("{cell}-{role}"),
        }
    }

    fn label(&self) -> impl Fn(&mut Value) + Sync + '_ {
        move |pod: &mut Value| {
            pod["metadata"]["labels"][LABEL] = Value::from(self.value.clone());
        }
    }

    /// The pod to start for the cell of `index`, labelled by `label` ([`Own::label`]).
    fn pod<'x>(&'x self, index: usize, label: &'x (dyn Fn(&mut Value) + Sync)) -> CellPod<'x> {
        CellPod {
            fixture: FIXTURE,
            node: self.node,
            index,
            suffix: &self.suffix,
            mutate: label,
        }
    }
}

/// The name of a pair's cell: its policy and its pods are named after it.
fn cell_name(case: &Case<'_>) -> String {
    format!(
        "np{}-{}-{}",
        case.index,
        case.pair.from.unwrap_or(0),
        case.pair.to.unwrap_or(0)
    )
}

/// Starts the pair's own pod ahead of its turn (while the shared fixtures are awaited), where
/// the pair will be probed; its cell takes it when it runs.
pub async fn prestart(ctx: &Ctx<'_>, case: &Case<'_>, policy_case: PolicyCase) {
    let (Some(from), Some(to)) = (case.from(ctx.facts), case.to(ctx.facts)) else {
        return;
    };
    if !crate::probes::judgement::will_probe(ctx, case) {
        return;
    }
    let own = Own::of(policy_case, &cell_name(case), from, to);
    let label = own.label();
    ctx.workloads.prestart(&own.pod(case.index, &label)).await;
}

/// The cell's ends: its own pod where the policy selects, labelled for the cell; the run's
/// shared fixture at the other end.
async fn start_pods(
    ctx: &Ctx<'_>,
    case: &Case<'_>,
    policy_case: PolicyCase,
    cell: &str,
    from: &ClusterNode,
    to: &ClusterNode,
) -> Result<Pods, Probed> {
    let own = Own::of(policy_case, cell, from, to);
    let label = own.label();
    let pod = own.pod(case.index, &label);
    // The shared end first: a cell that cannot run starts no pod (and stops one started ahead).
    let shared = if own.egress {
        End::shared(ctx.dep.servers.get(&to.name), "netexec server", &to.name)
    } else {
        End::shared(ctx.dep.clients.get(&from.name), "client pod", &from.name)
    };
    let shared = match shared {
        Ok(end) => end,
        Err(why) => {
            ctx.workloads.discard(&pod).await;
            return Err(Probed::from(why));
        }
    };
    let started = ctx.workloads.start(&pod).await;
    let own_end = match started {
        Ok(started) => End::own(started),
        Err(NotReady::Refused(why) | NotReady::Unpullable(why)) => return Err(Probed::Unknown(why)),
        Err(why) => return Err(Probed::Error(why.to_string())),
    };
    Ok(if own.egress {
        Pods {
            client: own_end,
            server: shared,
        }
    } else {
        Pods {
            client: shared,
            server: own_end,
        }
    })
}

/// One attempt of the flow from the client to the server.
async fn attempt(ctx: &Ctx<'_>, runner: Runner, pods: &Pods, req: &Request) -> Result<Observation, String> {
    let argv = transport::command(runner, req);
    match ctx.exec(&pods.client.name, pods.client.container, &argv).await {
        Ok((out, _)) => Ok(transport::classify(req, &out)),
        Err(e) => Err(format!("exec in {}: {}", pods.client.name, e.message)),
    }
}

async fn run_case(
    ctx: &Ctx<'_>,
    case: &Case<'_>,
    policy_case: PolicyCase,
    cell: &str,
    from: &ClusterNode,
    pods: &Pods,
) -> Probed {
    let protocol = case.protocol.unwrap_or(Protocol::Tcp);
    let req = Request {
        host: pods.server.ip.clone(),
        port: port(protocol),
        protocol,
        path: "/hostname".into(),
        tls: false,
    };
    let runner = Runner::in_pod(from);
    let window = || tokio::time::Instant::now() + ctx.settle.window(FlowKind::Pod);
    let target = format!("{} → {}:{} {protocol}", pods.client.name, req.host, req.port);
    // Before any policy: the flow gets through.
    let before = settle::until_works(window(), ctx.settle.pause, || async {
        attempt(ctx, runner, pods, &req).await.map(|o| (o, ()))
    })
    .await;
    let before = match before {
        Ok(s) => s,
        Err(why) => return Probed::Error(why),
    };
    tracing::debug!(
        "{cell}: before any policy: {:?} ({} attempts)",
        before.observation,
        before.attempts.len()
    );
    if let Observation::Failed(class) = before.observation {
        return Probed::seen(
            Observation::Failed(class),
            format!("{target}: {} {BEFORE_ANY_POLICY}{}", class.name(), before.note()),
        );
    }
    if !policy_case.has_policy() {
        return Probed::seen(
            Observation::Reached(String::new()),
            format!("{target}: reached with no policy"),
        );
    }
    let policies: Api<NetworkPolicy> = Api::namespaced(ctx.client.clone(), ctx.ns);
    let Some(mut closed) = policy(policy_case, cell, ctx.ns, &pods.client.ip, false) else {
        return Probed::Error(format!("no policy for the client's address {}", pods.client.ip));
    };
    closed["metadata"]["labels"] = json!(ctx.workloads.labels);
    let name = format!("mixcheck-{cell}");
    if let Err(e) = create(&policies, &closed).await {
        return Probed::Unknown(format!("creating NetworkPolicy {name}: {e}"));
    }
    // Under the closed policy: denied once programmed (a flow that gets through is retried
    // until the window has passed).
    let denied = settle::until_works(window(), ctx.settle.pause, || async {
        attempt(ctx, runner, pods, &req).await.map(|o| match o {
            Observation::Reached(_) => (Observation::Failed(FailureClass::NotEnforced), String::new()),
            Observation::Failed(c) => (Observation::Reached(c.name().to_string()), String::new()),
        })
    })
    .await;
    let denied = match denied {
        Ok(s) => s,
        Err(why) => return Probed::Error(why),
    };
    tracing::debug!(
        "{cell}: under the closed policy: {:?} ({} attempts)",
        denied.observation,
        denied.attempts.len()
    );
    let how = match &denied.observation {
        Observation::Failed(_) => {
            return Probed::seen(
                Observation::Failed(FailureClass::NotEnforced),
                format!(
                    "{target}: still reached under NetworkPolicy {name} ({}) after its settle window: not enforced{}",
                    policy_case.name(),
                    denied.note()
                ),
            );
        }
        Observation::Reached(how) => how.clone(),
    };
    if !policy_case.opens() {
        return Probed::seen(
            Observation::Reached(String::new()),
            format!(
                "{target}: denied ({how}) under NetworkPolicy {name} ({}){}",
                policy_case.name(),
                denied.note()
            ),
        );
    }
    let Some(open) = policy(policy_case, cell, ctx.ns, &pods.client.ip, true) else {
        return Probed::Error(format!("no policy for the client's address {}", pods.client.ip));
    };
    let patch = json!({"spec": open["spec"]});
    if let Err(e) = policies
        .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        return Probed::Error(format!("opening NetworkPolicy {name}: {e}"));
    }
    let opened = settle::until_works(window(), ctx.settle.pause, || async {
        attempt(ctx, runner, pods, &req).await.map(|o| (o, ()))
    })
    .await;
    match opened {
        Ok(s) => {
            let summary = match &s.observation {
                Observation::Reached(_) => format!(
                    "{target}: denied ({how}) while closed, reached once NetworkPolicy {name} allowed it ({}){}",
                    policy_case.name(),
                    s.note()
                ),
                Observation::Failed(c) => format!(
                    "{target}: denied ({how}) while closed, still {} after NetworkPolicy {name} allowed it ({}){}",
                    c.name(),
                    policy_case.name(),
                    s.note()
                ),
            };
            Probed::seen(s.observation, summary)
        }
        Err(why) => Probed::Error(why),
    }
}

async fn create(api: &Api<NetworkPolicy>, obj: &Value) -> Result<(), String> {
    let typed: NetworkPolicy = serde_json::from_value(obj.clone()).map_err(|e| e.to_string())?;
    api.create(&PostParams::default(), &typed)
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::deny(PolicyCase::DenyIngress)]
    #[case::pods(PolicyCase::AllowPodSelector)]
    #[case::ns(PolicyCase::AllowNamespaceSelector)]
    #[case::named(PolicyCase::AllowNamedPort)]
    #[case::port(PolicyCase::AllowPort)]
    #[case::udp(PolicyCase::AllowUdp)]
    #[case::egress(PolicyCase::DenyEgress)]
    #[case::ipblock(PolicyCase::IpBlockExcept)]
    fn policies_select_only_the_cells_own_pods(#[case] case: PolicyCase) {
        for open in [false, true] {
            let p = policy(case, "np7", "mixcheck-x", "10.244.1.5", open).expect("a policy");
            assert_eq!(p["metadata"]["namespace"], "mixcheck-x");
            let selected = p["spec"]["podSelector"]["matchLabels"][LABEL]
                .as_str()
                .unwrap_or_default();
            assert!(selected.starts_with("np7-"), "{p}");
        }
        let closed = policy(case, "np7", "mixcheck-x", "10.244.1.5", false);
        let open = policy(case, "np7", "mixcheck-x", "10.244.1.5", true);
        assert_eq!(closed != open, case.opens());
    }

    #[test]
    fn no_policy_has_no_object() {
        assert!(policy(PolicyCase::NoPolicy, "np1", "ns", "10.0.0.1", false).is_none());
    }
}
