//! The probe kinds, one module each with its command building, observation and judgement
//! (`connect`, `resolve`, `exec`, `create`, `fact`, `logs`, `outside`, `audit`, `port-forward`,
//! `node-stats`, `termination-grace`, `csi-node`, `hns-load-balancer`). What the run
//! needs to know of a kind is here, as exhaustive `match`es on [`Probe`]: a new kind does not
//! compile until it says how its cells are laid out, what it needs and how it observes.
//! `judgement` is the prelude every kind shares, `expectation` evaluates a check's documented
//! expectation, `transport` runs commands in pods and classifies their output.

pub mod apiview;
pub mod audit;
pub mod chain;
pub mod clock;
pub mod connect;
pub mod create;
pub mod csinode;
pub mod egress;
pub mod exec;
pub mod expectation;
pub mod fact;
#[cfg(test)]
mod fidelity;
mod flow;
pub mod grace;
pub mod hnslb;
pub mod hostfacts;
pub mod judgement;
pub mod logs;
pub mod netpol;
pub mod nodestats;
pub mod outcome;
pub mod outside;
pub mod portforward;
pub mod resolve;
pub mod settle;
pub mod transport;

use crate::catalogue::suite::{Destination, Expectation, HnsSubject, Probe};
use judgement::{Case, Ctx, Probed};

/// How a kind's cells are laid over the cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Flows from a source pool to a destination: one probe per sampled node pair.
    Flow,
    /// About nodes: one cell per pool, each of the chosen nodes judged, the worst standing.
    Nodes(NodeChoice),
}

/// Which nodes of a pool a cell about nodes judges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeChoice {
    /// Every node, control planes included (facts read from the API).
    Every,
    /// Every worker.
    Workers,
    /// A few workers per pool, spread and different per check (each is a pod to start).
    Sample,
    /// The pool's first schedulable worker (a LoadBalancer exists once per pool).
    OnePerPool,
}

impl Probe {
    /// Whether the probe reads kube-proxy itself (its version, its log): nothing to read where
    /// another data plane programs Services (GKE Dataplane V2's anetd).
    pub fn reads_kube_proxy(&self) -> bool {
        matches!(
            self,
            Probe::Fact {
                fact: crate::catalogue::suite::FactCheck::KubeProxySkew | crate::catalogue::suite::FactCheck::DsrConfig
            } | Probe::Logs {
                agent: crate::catalogue::suite::Agent::KubeProxy,
                ..
            } | Probe::HnsLoadBalancer {
                // The annotation is the Windows kube-proxy's (KPWIN).
                subject: HnsSubject::PreserveDestination
            }
        )
    }

    /// How the kind's cells are laid over the cluster.
    pub fn shape(&self) -> Shape {
        match self {
            Probe::Connect { .. } | Probe::Resolve { .. } | Probe::NetworkPolicy { .. } => Shape::Flow,
            Probe::Fact { .. } => Shape::Nodes(NodeChoice::Every),
            Probe::Exec { .. } | Probe::Create { .. } | Probe::PortForward | Probe::TerminationGrace { .. } => {
                Shape::Nodes(NodeChoice::Sample)
            }
            // A read per node through the API (not free like a fact): every worker of the full
            // matrix, as the other per-node probes.
            Probe::NodeStats | Probe::CsiNode | Probe::HnsLoadBalancer { .. } => Shape::Nodes(NodeChoice::Workers),
            Probe::Outside {
                to: Destination::LoadBalancer,
            } => Shape::Nodes(NodeChoice::OnePerPool),
            Probe::Outside { .. } | Probe::Audit { .. } | Probe::Logs { .. } => Shape::Nodes(NodeChoice::Workers),
        }
    }

    /// The probe looks at a node from outside the cluster: its cells' source is `external`,
    /// the node is the destination, and the check's `to` OSes pick the nodes.
    pub fn looks_from_outside(&self) -> bool {
        match self {
            Probe::Outside { .. } => true,
            Probe::NetworkPolicy { .. }
            | Probe::Connect { .. }
            | Probe::Resolve { .. }
            | Probe::Exec { .. }
            | Probe::Create { .. }
            | Probe::Fact { .. }
            | Probe::Audit { .. }
            | Probe::Logs { .. }
            | Probe::PortForward
            | Probe::NodeStats
            | Probe::CsiNode
            | Probe::HnsLoadBalancer { .. }
            | Probe::TerminationGrace { .. } => false,
        }
    }

    /// The probe's destination is the netexec server pod itself (by its IP): every node has one,
    /// so a flow may end on any node, not only on those with the full set of fixtures.
    pub fn reaches_the_server_pod(&self) -> bool {
        matches!(
            self,
            Probe::Connect {
                to: crate::catalogue::suite::Destination::PodIp | crate::catalogue::suite::Destination::PodIpv6,
                ..
            }
        )
    }

    /// The probe reads the API only: it is judged on a node that is not Ready too.
    pub fn reads_the_api_only(&self) -> bool {
        match self {
            // Read on the node's host, through a pod there.
            Probe::Fact {
                fact:
                    crate::catalogue::suite::FactCheck::HnsNetwork
                    | crate::catalogue::suite::FactCheck::KubeletPriority
                    | crate::catalogue::suite::FactCheck::CniCheck
                    | crate::catalogue::suite::FactCheck::SourceVip,
            } => false,
            Probe::Fact { .. } | Probe::Audit { .. } | Probe::CsiNode => true,
            Probe::Connect { .. }
            | Probe::NetworkPolicy { .. }
            | Probe::Resolve { .. }
            | Probe::Exec { .. }
            | Probe::Create { .. }
            | Probe::Outside { .. }
            | Probe::Logs { .. }
            | Probe::PortForward
            | Probe::NodeStats
            | Probe::HnsLoadBalancer { .. }
            | Probe::TerminationGrace { .. } => false,
        }
    }

    /// The probe needs the shared fixtures (servers, clients, services); one that creates its
    /// own pods starts while they are awaited.
    pub fn needs_fixtures(&self) -> bool {
        match self {
            Probe::Create { .. } | Probe::NodeStats | Probe::CsiNode | Probe::TerminationGrace { .. } => false,
            // One end of a policy cell is the run's shared client or server.
            Probe::NetworkPolicy { .. }
            | Probe::PortForward
            | Probe::Connect { .. }
            | Probe::Resolve { .. }
            | Probe::Exec { .. }
            | Probe::Fact { .. }
            | Probe::Outside { .. }
            | Probe::Audit { .. }
            | Probe::HnsLoadBalancer { .. }
            | Probe::Logs { .. } => true,
        }
    }

    /// The shared fixtures beyond the core ones that the probe uses.
    pub fn fixture_needs(&self) -> crate::cluster::deploy::Needs {
        let host_port = match self {
            Probe::Connect { to, .. } | Probe::Outside { to } => *to == Destination::HostPort,
            Probe::Resolve { .. }
            | Probe::Exec { .. }
            | Probe::Create { .. }
            | Probe::Fact { .. }
            | Probe::Audit { .. }
            | Probe::Logs { .. }
            | Probe::PortForward
            | Probe::NodeStats
            | Probe::CsiNode
            | Probe::NetworkPolicy { .. }
            | Probe::HnsLoadBalancer { .. }
            | Probe::TerminationGrace { .. } => false,
        };
        let subject = |s| matches!(self, Probe::HnsLoadBalancer { subject } if *subject == s);
        crate::cluster::deploy::Needs {
            host_port,
            backend_limit: subject(HnsSubject::BackendLimit),
            preserve_destination: subject(HnsSubject::PreserveDestination),
        }
    }

    /// The keys of the exec fixture pods a pair of this probe may use on `node`
    /// ([`crate::cluster::workload::Workloads::key`]); created pods are deleted once judged.
    pub fn pod_keys(&self, node: &str) -> Vec<String> {
        use crate::cluster::workload::Workloads;
        match self {
            Probe::Exec { fixture, .. } => vec![Workloads::key(fixture, "", node)],
            Probe::Resolve { dns, .. } => match resolve::variant_suffix(*dns) {
                "" => Vec::new(),
                variant => vec![Workloads::key("netexec-client", variant, node)],
            },
            Probe::Connect { .. }
            | Probe::Create { .. }
            | Probe::Fact { .. }
            | Probe::Outside { .. }
            | Probe::Audit { .. }
            | Probe::Logs { .. }
            | Probe::PortForward
            | Probe::NodeStats
            | Probe::CsiNode
            | Probe::HnsLoadBalancer { .. }
            | Probe::NetworkPolicy { .. }
            | Probe::TerminationGrace { .. } => Vec::new(),
        }
    }

    /// Starts what a pair of this probe creates for itself before its turn (while the shared
    /// fixtures are awaited), for the pair to take when it is judged: a NetworkPolicy cell's own
    /// pod. Nothing for the other kinds.
    pub async fn prestart(&self, ctx: &Ctx<'_>, case: &Case<'_>) {
        if let Probe::NetworkPolicy { case: policy_case } = self {
            netpol::prestart(ctx, case, *policy_case).await;
        }
    }

    /// Whether [`Self::prestart`] starts anything.
    pub fn starts_ahead(&self) -> bool {
        matches!(self, Probe::NetworkPolicy { .. })
    }

    /// The probe waits for a pod of its own (created or exec'd per node): its cells start
    /// first, since waiting holds no probe slot.
    pub fn waits_for_pods(&self) -> bool {
        match self {
            Probe::Exec { .. }
            | Probe::Create { .. }
            | Probe::TerminationGrace { .. }
            | Probe::NetworkPolicy { .. } => true,
            Probe::Connect { .. }
            | Probe::Resolve { .. }
            | Probe::Fact { .. }
            | Probe::Outside { .. }
            | Probe::Audit { .. }
            | Probe::Logs { .. }
            | Probe::PortForward
            | Probe::NodeStats
            | Probe::HnsLoadBalancer { .. }
            | Probe::CsiNode => false,
        }
    }

    /// The destination pool a flow without a `to` list reaches, when it is not the source's own
    /// pool (`external`, `same-pod`, `cluster-dns`).
    pub fn own_destination(&self) -> Option<&'static str> {
        match self {
            Probe::Connect { to, .. } => connect::own_destination(*to),
            Probe::Resolve { .. } => Some(resolve::DESTINATION),
            Probe::Exec { .. }
            | Probe::Create { .. }
            | Probe::Fact { .. }
            | Probe::Outside { .. }
            | Probe::Audit { .. }
            | Probe::Logs { .. }
            | Probe::PortForward
            | Probe::NodeStats
            | Probe::CsiNode
            | Probe::HnsLoadBalancer { .. }
            | Probe::NetworkPolicy { .. }
            | Probe::TerminationGrace { .. } => None,
        }
    }

    /// Probes one pair of a cell whose expectation `e` applies.
    pub async fn observe(&self, ctx: &Ctx<'_>, case: &Case<'_>, e: &Expectation) -> Probed {
        match self {
            Probe::Connect {
                from,
                to,
                service,
                verify,
            } => connect::observe(ctx, case, *from, *to, *service, *verify).await,
            Probe::Resolve { from, name, dns } => resolve::observe(ctx, case, *from, *name, *dns).await,
            Probe::Exec {
                fixture,
                command,
                stdout,
            } => exec::observe(ctx, case, fixture, command, stdout.as_deref()).await,
            Probe::Create {
                fixture,
                outcome,
                message,
                termination_message,
            } => {
                let expected = create::Expected {
                    outcome: *outcome,
                    message: message.as_deref(),
                    termination_message: termination_message.as_deref(),
                };
                create::observe(ctx, case, fixture, expected).await
            }
            Probe::Fact { fact } => fact::observe(ctx, case, *fact, e),
            Probe::Outside { to } => outside::observe(ctx, case, *to).await,
            Probe::Audit { audit } => audit::observe(ctx, *audit).await,
            Probe::PortForward => portforward::observe(ctx, case).await,
            Probe::NodeStats => nodestats::observe(ctx, case).await,
            Probe::NetworkPolicy { case: policy_case } => netpol::observe(ctx, case, *policy_case).await,
            Probe::CsiNode => csinode::observe(ctx, case).await,
            Probe::HnsLoadBalancer { subject } => hnslb::observe(ctx, case, *subject).await,
            Probe::TerminationGrace {
                fixture,
                shutdown_seconds,
            } => grace::observe(ctx, case, fixture, *shutdown_seconds).await,
            Probe::Logs {
                agent,
                fails,
                cleared_by,
                requires,
                line,
                must,
            } => {
                let rule = logs::LogRule {
                    fails: fails.as_deref(),
                    cleared_by: cleared_by.as_deref(),
                    requires: requires.as_deref(),
                    started: Some(agent.start_line()),
                    line: line.as_deref(),
                    must: must.as_deref(),
                };
                logs::observe(ctx, case, *agent, &rule).await
            }
        }
    }
}
