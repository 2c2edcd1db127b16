//! One `mixcheck run`, from a validated plan to its report: connect (or start the bundled
//! cluster), check permissions, read the facts, expand every selected check over the nodes the
//! cluster has, deploy the fixtures, probe with bounded concurrency, judge each cell, write
//! `results.json` and the summary, clean up — also on Ctrl-C and at the deadline.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use chrono::Utc;
use futures::StreamExt as _;
use k8s_openapi::api::authorization::v1::{ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec};
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use mixcheck_reports::cell::{
    Coordinates, Expectation as CellExpectation, Locality, NodeRef, NodeRole, Observed, Pool,
};
use mixcheck_reports::evidence::{Evidence, Excerpt};
use mixcheck_reports::verdict::{Expected, Outcome};
use mixcheck_reports::{Cell, CellId, Os, RunReport, Verdict};

use crate::deploy::{self, Deployment};
use crate::exit::Code;
use crate::facts::{self, ClusterFacts, ClusterNode};
use crate::fixture::Fixtures;
use crate::plan::RunPlan;
use crate::probe::{self, Request, Runner};
use crate::suite::{
    Check, Destination, NameForm, Origin, Pairs, Placement, Probe, Protocol, ServiceVariant, Suite, Verify,
};
use crate::verdict::{self, CellFacts};
use crate::workload::NotReady;

/// The outside address and name the outbound checks use (TCP 53 and ICMP on a public resolver;
/// HTTP on a public web site).
const OUTSIDE_IP: &str = "1.1.1.1";
const OUTSIDE_IP_PORT: u16 = 53;
const OUTSIDE_NAME: &str = "www.microsoft.com";

/// Pairs of one cell probed at once (inside the run's `--concurrency` cells).
const PAIRS_AT_ONCE: usize = 8;

/// Cells in progress per probe slot (`--concurrency`): most of a cell's time is waiting for
/// pods, which takes no slot.
const CELLS_PER_PROBE_SLOT: usize = 4;

/// How many nodes of a pool a workload check (a pod created or exec'd per node) runs on.
const WORKLOAD_NODES_PER_POOL: usize = 3;

/// At most `k` of `members`, evenly spread, starting at a position that depends only on `name`
/// (FNV-1a): a check samples the same nodes on every run of the same cluster, and different
/// checks sample different ones.
fn sample(members: &[usize], name: &str, k: usize) -> Vec<usize> {
    let len = members.len();
    if len <= k {
        return members.to_vec();
    }
    let hash = name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    let offset = usize::try_from(hash % len as u64).unwrap_or(0);
    let mut picked: Vec<usize> = (0..k).map(|j| members[(offset + j * len / k) % len]).collect();
    picked.sort_unstable();
    picked
}

/// What one run ended with.
pub struct Finished {
    pub code: Code,
    pub report: RunReport,
}

/// Runs the plan. Errors before any check become an aborted report with their exit code.
pub async fn execute(plan: &RunPlan, fixtures: &Fixtures) -> Finished {
    let started = Utc::now();
    let clock = Instant::now();
    let progress = crate::progress::Progress::for_stderr(plan.quiet);
    let say = |m: &str| progress.say(m);
    let run_id = uuid::Uuid::new_v4().simple().to_string()[..8].to_string();
    let placeholder = match &plan.target {
        crate::plan::TargetSpec::Bundled { profile, .. } => mixcheck_reports::Target::Bundled {
            profile: profile.clone(),
        },
        crate::plan::TargetSpec::Kubeconfig { context, .. } => mixcheck_reports::Target::Kubeconfig {
            context: context.clone().unwrap_or_else(|| "current-context".into()),
            server: String::new(),
        },
    };
    let mut report = RunReport::new(env!("CARGO_PKG_VERSION"), run_id.clone(), placeholder, started);
    report.strict = plan.strict;
    report.selection = plan.selection.clone();
    let abort = |mut report: RunReport, code: Code, reason: String| {
        report.aborted = Some(mixcheck_reports::Aborted {
            reason,
            exit_code: code as u8,
        });
        report.finished_at = Utc::now();
        report.duration_ms = u64::try_from(clock.elapsed().as_millis()).unwrap_or(u64::MAX);
        Finished { code, report }
    };
    let target = match tokio::time::timeout(plan.deadline, crate::target::connect(&plan.target, &say)).await {
        Ok(Ok(t)) => t,
        Ok(Err(e)) => {
            let code = match e {
                crate::target::TargetError::Kubeconfig { .. } => Code::Usage,
                crate::target::TargetError::Bundled(_) => Code::Failed,
                crate::target::TargetError::Unreachable { .. } => Code::Unreachable,
            };
            return abort(report, code, e.to_string());
        }
        Err(_) => {
            return abort(
                report,
                Code::Unreachable,
                "the cluster did not answer before the run's deadline".into(),
            );
        }
    };
    report.target = target.report.clone();
    let client = target.client.clone();
    if let Err(missing) = preflight(&client, &format!("mixcheck-{run_id}")).await {
        return abort(report, Code::Unreachable, missing);
    }
    let facts = match facts::collect(&client, plan.network_mode.as_deref(), plan.egress).await {
        Ok(f) => f,
        Err(e) => {
            return abort(
                report,
                Code::Unreachable,
                format!("cannot read the cluster's facts: {e}"),
            );
        }
    };
    report.facts = facts.report.clone();
    say(&format!(
        "Cluster: {} · {} nodes ({}) · network mode {}",
        facts
            .report
            .server_version
            .as_ref()
            .map(|f| f.value.as_str())
            .unwrap_or("?"),
        facts.nodes.len(),
        pools_line(&facts),
        facts.network_mode.as_ref().map_or("unknown", |m| m.value.as_str())
    ));
    let ns = format!("mixcheck-{run_id}");
    let deadline = clock + plan.deadline;
    let work = async {
        deploy::create_namespace(&client, &ns, &run_id)
            .await
            .map_err(|e| e.to_string())?;
        let cells = plan_cells(plan, &facts);
        let permits = tokio::sync::Semaphore::new(plan.concurrency);
        let workloads = crate::workload::Workloads::new(
            client.clone(),
            &ns,
            fixtures,
            deploy::run_labels(&run_id),
            plan.image_registry.clone(),
        );
        let no_fixtures = Deployment::default();
        let early_ctx = Ctx {
            permits: &permits,
            client: client.clone(),
            workloads: &workloads,
            pods: Api::namespaced(client.clone(), &ns),
            facts: &facts,
            dep: &no_fixtures,
            ns: &ns,
        };
        // Cells that create their own pods need none of the shared fixtures: they start at once,
        // while the fixtures are awaited (Windows pods start slowly on a real cluster).
        let (early, later): (Vec<_>, Vec<_>) = cells
            .iter()
            .enumerate()
            .partition(|(_, c)| matches!(c.check.probe, Probe::Create { .. }));
        let bar = progress.bar(crate::progress::Phase::Probe);
        bar.set_length(u64::try_from(cells.len()).unwrap_or(u64::MAX));
        let early = judge_cells(&early_ctx, early, plan.concurrency, &bar);
        let later = async {
            let dep = deploy::deploy(
                &client,
                &ns,
                &run_id,
                &facts,
                fixtures,
                plan.image_registry.as_deref(),
                deadline,
                &progress,
            )
            .await
            .map_err(|e| e.to_string())?;
            let probes: usize = cells
                .iter()
                .map(|c| if c.fixed.is_some() { 0 } else { c.pairs.len() })
                .sum();
            say(&format!(
                "Probing {} cells of {} checks ({probes} probes)…",
                cells.len(),
                plan.selected.len()
            ));
            let ctx = early_ctx.with_fixtures(&dep);
            Ok::<_, String>(judge_cells(&ctx, later, plan.concurrency, &bar).await)
        };
        let (mut results, later) = futures::future::join(early, later).await;
        progress.finish();
        results.extend(later?);
        results.sort_by_key(|(i, _)| *i);
        Ok::<Vec<Cell>, String>(results.into_iter().map(|(_, c)| c).collect())
    };
    let outcome = tokio::select! {
        r = work => Ended::Done(r),
        _ = interrupted() => Ended::Interrupted,
        _ = tokio::time::sleep_until(deadline.into()) => Ended::Deadline,
    };
    if plan.keep {
        say(&deploy::describe_keep(&ns));
    } else {
        cleanup(&client, &ns, &say).await;
    }
    target.stop().await;
    let (code, cells, aborted) = match outcome {
        Ended::Done(Ok(cells)) => (None, cells, None),
        Ended::Done(Err(e)) => (
            Some(Code::Failed),
            Vec::new(),
            Some(format!("the run could not deploy its fixtures: {e}")),
        ),
        Ended::Interrupted => (
            Some(Code::Interrupted),
            Vec::new(),
            Some("interrupted (Ctrl-C); the run namespace was deleted".into()),
        ),
        Ended::Deadline => (
            Some(Code::Failed),
            Vec::new(),
            Some(format!(
                "the run's deadline ({}s, --timeout) passed before every check ran",
                plan.deadline.as_secs()
            )),
        ),
    };
    report.cells = cells;
    if let (Some(code), Some(reason)) = (code, aborted) {
        return abort(report, code, reason);
    }
    report.finished_at = Utc::now();
    report.duration_ms = u64::try_from(clock.elapsed().as_millis()).unwrap_or(u64::MAX);
    let code = if report.gate_passed(plan.strict) {
        Code::Passed
    } else {
        Code::Failed
    };
    Finished { code, report }
}

enum Ended {
    Done(Result<Vec<Cell>, String>),
    Interrupted,
    Deadline,
}

/// Resolves on Ctrl-C or SIGTERM.
async fn interrupted() {
    #[cfg(unix)]
    {
        let term = async {
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(mut s) => {
                    s.recv().await;
                }
                Err(_) => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

fn pools_line(facts: &ClusterFacts) -> String {
    let mut pools: BTreeMap<String, usize> = BTreeMap::new();
    for n in &facts.nodes {
        *pools.entry(n.pool()).or_default() += 1;
    }
    pools
        .iter()
        .map(|(p, n)| format!("{n}× {p}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Deletes the run namespace (everything the run created is in it).
pub async fn cleanup(client: &kube::Client, ns: &str, say: &dyn Fn(&str)) {
    let api: Api<Namespace> = Api::all(client.clone());
    match tokio::time::timeout(Duration::from_secs(30), api.delete(ns, &DeleteParams::background())).await {
        Ok(Ok(_)) => say(&format!("Deleted the run namespace {ns}")),
        Ok(Err(kube::Error::Api(s))) if s.code == 404 => {}
        Ok(Err(e)) => {
            eprintln!("mixcheck: could not delete the run namespace {ns}: {e} (delete it with `mixcheck cleanup`)")
        }
        Err(_) => eprintln!("mixcheck: deleting the run namespace {ns} timed out (delete it with `mixcheck cleanup`)"),
    }
}

/// The run namespaces on a cluster with their phase.
pub async fn leftovers(client: &kube::Client) -> Result<Vec<(String, String)>, kube::Error> {
    let api: Api<Namespace> = Api::all(client.clone());
    let list = api
        .list(&ListParams::default().labels(&format!(
            "{}={}",
            crate::fixture::MANAGED_BY.0,
            crate::fixture::MANAGED_BY.1
        )))
        .await?;
    Ok(list
        .items
        .into_iter()
        .map(|n| {
            let phase = n.status.and_then(|s| s.phase).unwrap_or_default();
            (n.metadata.name.unwrap_or_default(), phase)
        })
        .collect())
}

/// `mixcheck cleanup`: deletes every namespace a run left (label app.kubernetes.io/managed-by=mixcheck).
pub async fn cleanup_all(client: &kube::Client) -> Result<usize, kube::Error> {
    let api: Api<Namespace> = Api::all(client.clone());
    let list = api
        .list(&ListParams::default().labels(&format!(
            "{}={}",
            crate::fixture::MANAGED_BY.0,
            crate::fixture::MANAGED_BY.1
        )))
        .await?;
    let mut n = 0;
    for ns in list.items {
        if let Some(name) = ns.metadata.name {
            api.delete(&name, &DeleteParams::background()).await?;
            println!("deleted namespace {name}");
            n += 1;
        }
    }
    Ok(n)
}

/// Checks with SelfSubjectAccessReview that the credentials allow what the run does; lists
/// every missing permission.
async fn preflight(client: &kube::Client, ns: &str) -> Result<(), String> {
    let needs: &[(&str, &str, &str, &str, bool)] = &[
        // verb, group, resource, subresource, namespaced
        ("create", "", "namespaces", "", false),
        ("delete", "", "namespaces", "", false),
        ("list", "", "nodes", "", false),
        ("get", "", "nodes", "proxy", false),
        ("create", "", "pods", "", true),
        ("patch", "", "pods", "", true),
        ("list", "", "pods", "", true),
        ("create", "", "pods", "exec", true),
        ("create", "", "services", "", true),
        ("patch", "", "services", "", true),
        ("list", "", "events", "", true),
        ("list", "", "pods", "", false),
        ("get", "", "pods", "log", false),
        ("list", "apps", "daemonsets", "", false),
        ("list", "", "configmaps", "", false),
    ];
    let api: Api<SelfSubjectAccessReview> = Api::all(client.clone());
    let mut missing = Vec::new();
    for (verb, group, resource, sub, namespaced) in needs {
        let review = SelfSubjectAccessReview {
            spec: SelfSubjectAccessReviewSpec {
                resource_attributes: Some(ResourceAttributes {
                    verb: Some(verb.to_string()),
                    group: Some(group.to_string()),
                    resource: Some(resource.to_string()),
                    subresource: (!sub.is_empty()).then(|| sub.to_string()),
                    namespace: namespaced.then(|| ns.to_string()),
                    ..ResourceAttributes::default()
                }),
                ..SelfSubjectAccessReviewSpec::default()
            },
            ..SelfSubjectAccessReview::default()
        };
        let what = format!(
            "{verb} {}{resource}{}",
            if group.is_empty() {
                String::new()
            } else {
                format!("{group}/")
            },
            if sub.is_empty() {
                String::new()
            } else {
                format!("/{sub}")
            }
        );
        match api.create(&PostParams::default(), &review).await {
            Ok(r) if r.status.as_ref().is_some_and(|s| s.allowed) => {}
            Ok(_) => missing.push(what),
            Err(e) => return Err(format!("the access review for \"{what}\" failed: {e}")),
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "the credentials lack permissions the run needs:\n  - {}\n  check: the RBAC bindings of the kubeconfig's user (`kubectl auth can-i --list`)",
            missing.join("\n  - ")
        ))
    }
}

/// One probed pair of a cell: source and destination node indexes.
#[derive(Debug, Clone, Copy)]
struct Pair {
    from: Option<usize>,
    to: Option<usize>,
}

/// A cell before probing.
#[derive(Debug)]
struct CellPlan<'a> {
    suite: &'a Suite,
    check: &'a Check,
    coordinates: Coordinates,
    placement: Option<Placement>,
    protocol: Option<Protocol>,
    variant: Option<String>,
    pairs: Vec<Pair>,
    /// Set when the cell is decided without probing.
    fixed: Option<(Verdict, String)>,
}

/// Node pairs covering every node of both pools at least once (about max(|S|, |D|) pairs).
fn sample_pairs(from: &[usize], to: &[usize], same_node: bool) -> Vec<Pair> {
    if same_node {
        return from
            .iter()
            .filter(|n| to.contains(n))
            .map(|n| Pair {
                from: Some(*n),
                to: Some(*n),
            })
            .collect();
    }
    let k = from.len().max(to.len());
    let mut out = Vec::new();
    for i in 0..k {
        let s = from[i % from.len()];
        let d = (0..to.len()).map(|j| to[(i + j) % to.len()]).find(|d| *d != s);
        if let Some(d) = d {
            out.push(Pair {
                from: Some(s),
                to: Some(d),
            });
        }
    }
    out
}

fn os_of(o: crate::suite::Os) -> Os {
    match o {
        crate::suite::Os::Linux => Os::Linux,
        crate::suite::Os::Windows => Os::Windows,
    }
}

/// Expands the selected checks over the cluster's pools.
fn plan_cells<'a>(plan: &'a RunPlan, facts: &ClusterFacts) -> Vec<CellPlan<'a>> {
    // Workers that are not Ready stay in their pools: their cells say the node is down (see
    // `not_ready`) instead of vanishing from the report.
    let nodes: Vec<(usize, &ClusterNode)> = facts
        .nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| !n.control_plane)
        .collect();
    let mut pools: BTreeMap<String, (Os, Vec<usize>)> = BTreeMap::new();
    for (i, n) in &nodes {
        pools.entry(n.pool()).or_insert((n.os, Vec::new())).1.push(*i);
    }
    let pools_of = |os: &[crate::suite::Os]| -> Vec<(String, Os, Vec<usize>)> {
        pools
            .iter()
            .filter(|(_, (o, _))| os.iter().any(|x| os_of(*x) == *o))
            .map(|(p, (o, n))| (p.clone(), *o, n.clone()))
            .collect()
    };
    let mut cells = Vec::new();
    for (suite, check) in plan.checks() {
        let m = &check.matrix;
        let from_os = if m.from.is_empty() {
            vec![crate::suite::Os::Linux, crate::suite::Os::Windows]
        } else {
            m.from.clone()
        };
        let protocols: Vec<Option<Protocol>> = if m.protocol.is_empty() {
            vec![None]
        } else {
            m.protocol.iter().copied().map(Some).collect()
        };
        let placements: Vec<Option<Placement>> = if m.placement.is_empty() {
            vec![None]
        } else {
            m.placement.iter().copied().map(Some).collect()
        };
        let variants: Vec<Option<String>> = if m.variant.is_empty() {
            vec![None]
        } else {
            m.variant.iter().cloned().map(Some).collect()
        };
        let unsupported: Option<String> = None;
        if !matches!(check.probe, Probe::Connect { .. } | Probe::Resolve { .. }) {
            cells.extend(node_cells(
                suite,
                check,
                facts,
                &from_os,
                &protocols,
                &variants,
                unsupported,
            ));
            continue;
        }
        let to_pools: Option<Vec<(String, Os, Vec<usize>)>> = (!m.to.is_empty()).then(|| pools_of(&m.to));
        for (fp, fos, fnodes) in pools_of(&from_os) {
            let destinations: Vec<(Option<String>, Option<Os>, Vec<usize>)> = match &to_pools {
                Some(tp) => tp
                    .iter()
                    .map(|(p, o, n)| (Some(p.clone()), Some(*o), n.clone()))
                    .collect(),
                // Without a `to` list: the destination is the probe's own target (same pool,
                // the outside world, the same pod).
                None => vec![(None, None, fnodes.clone())],
            };
            for (tp, tos, tnodes) in destinations {
                if let Some(tos) = tos {
                    let keep = match m.pairs {
                        Pairs::All => true,
                        Pairs::SameOs => tos == fos,
                        Pairs::CrossOs => tos != fos,
                    };
                    if !keep {
                        continue;
                    }
                }
                for placement in &placements {
                    if *placement == Some(Placement::SameNode) && tp.as_deref().is_some_and(|t| t != fp) {
                        continue;
                    }
                    for protocol in &protocols {
                        for variant in &variants {
                            let same = *placement == Some(Placement::SameNode) || tp.is_none() && placement.is_none();
                            let pairs = sample_pairs(&fnodes, &tnodes, same);
                            let dest_pool = match (&tp, &check.probe) {
                                (Some(t), _) => Some(Pool::named(t.clone())),
                                (
                                    None,
                                    Probe::Connect {
                                        to: Destination::OutsideIp | Destination::OutsideName,
                                        ..
                                    },
                                ) => Some(Pool::named("external")),
                                (
                                    None,
                                    Probe::Connect {
                                        to: Destination::Localhost,
                                        ..
                                    },
                                ) => Some(Pool::named("same-pod")),
                                (None, Probe::Resolve { .. }) => Some(Pool::named("cluster-dns")),
                                // Its own pool's service or pods.
                                _ => Some(Pool::named(fp.clone())),
                            };
                            let coordinates = Coordinates {
                                source: Some(Pool::named(fp.clone())),
                                destination: dest_pool,
                                locality: placement.map(|p| match p {
                                    Placement::SameNode => Locality::SameNode,
                                    Placement::OtherNode => Locality::OtherNode,
                                }),
                                protocol: protocol.map(|p| p.to_string()),
                                variant: variant.clone(),
                            };
                            let fixed = if let Some(why) = &unsupported {
                                Some((Verdict::Error, why.clone()))
                            } else if pairs.is_empty() {
                                Some((
                                    Verdict::NotApplicable,
                                    format!(
                                        "the cluster has no second schedulable node for {fp} → {}",
                                        tp.clone().unwrap_or_default()
                                    ),
                                ))
                            } else {
                                None
                            };
                            cells.push(CellPlan {
                                suite,
                                check,
                                coordinates,
                                placement: *placement,
                                protocol: *protocol,
                                variant: variant.clone(),
                                pairs,
                                fixed,
                            });
                        }
                    }
                }
            }
        }
    }
    distinguish_checks_of_one_rule(&mut cells);
    cells
}

/// Cells of checks about nodes (fact, exec, create, outside, audit probes): one per pool of
/// `from` (or `to` for outside probes), or one per node with `perNode`; every node of a pool is
/// judged and the worst result stands.
fn node_cells<'a>(
    suite: &'a Suite,
    check: &'a Check,
    facts: &ClusterFacts,
    from_os: &[crate::suite::Os],
    protocols: &[Option<Protocol>],
    variants: &[Option<String>],
    unsupported: Option<String>,
) -> Vec<CellPlan<'a>> {
    let m = &check.matrix;
    // Facts cover every node (control planes too); workloads only workers (those not Ready are
    // judged by `not_ready`).
    let all_nodes = matches!(check.probe, Probe::Fact { .. });
    let oses: Vec<crate::suite::Os> = match (&check.probe, m.to.is_empty()) {
        (Probe::Outside { .. }, false) => m.to.clone(),
        _ => from_os.to_vec(),
    };
    let mut pools: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, n) in facts.nodes.iter().enumerate() {
        if (all_nodes || !n.control_plane) && oses.iter().any(|o| os_of(*o) == n.os) {
            pools.entry(n.pool()).or_default().push(i);
        }
    }
    let outside = matches!(check.probe, Probe::Outside { .. });
    let mut groups: Vec<(String, Option<String>, Vec<usize>)> = Vec::new();
    // One cell per pool (ids never carry node names, so a baseline survives node
    // replacement); every node of the pool is judged and the worst result stands.
    // A LoadBalancer exists once per pool, over the pool's first schedulable server (deploy).
    let one_per_pool = matches!(
        check.probe,
        Probe::Outside {
            to: Destination::LoadBalancer
        }
    );
    // A workload check's outcome follows the pool's build and versions, and each of its pods is
    // a real pod to schedule and start (a Windows one takes long): it runs on a few nodes per
    // pool, a different few per check, spread over the pool (the network checks visit every
    // node).
    let workload = matches!(check.probe, Probe::Exec { .. } | Probe::Create { .. });
    for (pool, mut members) in pools {
        if workload {
            members = sample(&members, &check.name, WORKLOAD_NODES_PER_POOL);
        }
        if one_per_pool {
            let first = members.iter().copied().find(|&i| facts.nodes[i].schedulable());
            members.truncate(1);
            if let Some(i) = first {
                members = vec![i];
            }
        }
        groups.push((pool, None, members));
    }
    let mut out = Vec::new();
    for (pool, node, members) in groups {
        for protocol in protocols {
            for variant in variants {
                let variant = match (&node, variant) {
                    (Some(n), Some(v)) => Some(format!("{v}@{n}")),
                    (Some(n), None) => Some(n.clone()),
                    (None, v) => v.clone(),
                };
                let coordinates = Coordinates {
                    source: Some(Pool::named(if outside { "external".to_string() } else { pool.clone() })),
                    destination: outside.then(|| Pool::named(pool.clone())),
                    locality: None,
                    protocol: protocol.map(|p| p.to_string()),
                    variant: variant.clone(),
                };
                let pairs = members
                    .iter()
                    .map(|&i| {
                        if outside {
                            Pair {
                                from: None,
                                to: Some(i),
                            }
                        } else {
                            Pair {
                                from: Some(i),
                                to: None,
                            }
                        }
                    })
                    .collect();
                out.push(CellPlan {
                    suite,
                    check,
                    coordinates,
                    placement: None,
                    protocol: *protocol,
                    variant: variant.clone(),
                    pairs,
                    fixed: unsupported.clone().map(|w| (Verdict::Error, w)),
                });
            }
        }
    }
    out
}

/// Cell ids are `suite/RULE[coordinates]`; where a suite has several checks of one rule (for
/// example SVC-TYPES over headless, ExternalName and LoadBalancer services), the check's name
/// goes into the variant so that every id stays unique (JUnit names, baselines).
fn distinguish_checks_of_one_rule(cells: &mut [CellPlan<'_>]) {
    let mut checks: BTreeMap<(&str, &str), BTreeSet<&str>> = BTreeMap::new();
    for c in cells.iter() {
        checks
            .entry((c.suite.name.as_str(), c.check.rule.as_str()))
            .or_default()
            .insert(c.check.name.as_str());
    }
    let shared: BTreeSet<(String, String)> = checks
        .into_iter()
        .filter(|(_, names)| names.len() > 1)
        .map(|((suite, rule), _)| (suite.to_string(), rule.to_string()))
        .collect();
    for c in cells.iter_mut() {
        if shared.contains(&(c.suite.name.clone(), c.check.rule.clone())) {
            let name = c.check.name.clone();
            c.coordinates.variant = Some(match c.coordinates.variant.take() {
                Some(v) => format!("{name}:{v}"),
                None => name,
            });
        }
    }
}

/// Judges cells side by side, unordered (a slow cell does not hold the slots of the fast ones
/// behind it); each result keeps its plan index. Workload cells go first: their pods take the
/// longest to show what they do, and waiting for them holds no probe slot, so the quick
/// network cells fill the time around them.
async fn judge_cells<'p>(
    ctx: &Ctx<'_>,
    mut cells: Vec<(usize, &CellPlan<'p>)>,
    concurrency: usize,
    bar: &indicatif::ProgressBar,
) -> Vec<(usize, Cell)> {
    cells.sort_by_key(|(i, c)| (!matches!(c.check.probe, Probe::Create { .. } | Probe::Exec { .. }), *i));
    futures::stream::iter(cells)
        .map(|(i, c)| async move {
            let cell = judge_cell(ctx, c, i).await;
            bar.inc(1);
            bar.set_message(cell.id.as_str().to_string());
            (i, cell)
        })
        .buffer_unordered(concurrency.saturating_mul(CELLS_PER_PROBE_SLOT))
        .collect()
        .await
}

struct Ctx<'a> {
    /// At most `--concurrency` probes in flight, whatever cells and pairs they belong to.
    permits: &'a tokio::sync::Semaphore,
    client: kube::Client,
    workloads: &'a crate::workload::Workloads<'a>,
    pods: Api<Pod>,
    facts: &'a ClusterFacts,
    dep: &'a Deployment,
    ns: &'a str,
}

/// One judged pair.
struct PairJudgement {
    verdict: Verdict,
    expected: Option<CellExpectation>,
    reason: Option<String>,
    summary: String,
    output: Option<probe::Output>,
    class: Option<crate::suite::FailureClass>,
    flaky: bool,
    sources: Vec<String>,
    /// A remedy that replaces the check's (the pair was not probed for a reason of its own).
    remedy: Option<String>,
}

fn judgement(verdict: Verdict, reason: String) -> PairJudgement {
    PairJudgement {
        verdict,
        expected: None,
        reason: Some(reason.clone()),
        summary: reason,
        output: None,
        class: None,
        flaky: false,
        sources: Vec::new(),
        remedy: None,
    }
}

/// A pair on a worker that is not Ready cannot be probed (its fixtures never start): an error
/// naming the node, with the documented remedy (once the cell's expectation says it applies).
/// Facts and audits are still read from the API.
fn not_ready(facts: &ClusterFacts, pair: Pair, probe: &Probe) -> Option<PairJudgement> {
    if matches!(probe, Probe::Fact { .. } | Probe::Audit { .. }) {
        return None;
    }
    let node = [pair.from, pair.to]
        .into_iter()
        .flatten()
        .filter_map(|i| facts.nodes.get(i))
        .find(|n| !n.ready)?;
    let state = node.conditions.get("Ready").map_or("missing", String::as_str);
    let mut j = judgement(
        Verdict::Error,
        format!(
            "node {} is not Ready (Ready={state}): nothing runs there, so the cell was not probed",
            node.name
        ),
    );
    j.remedy = Some(crate::triage::NOT_READY.to_string());
    Some(j)
}

fn node_ref(n: &ClusterNode, role: NodeRole) -> NodeRef {
    NodeRef {
        name: n.name.clone(),
        os: n.os,
        build: n.build,
        role,
    }
}

impl<'a> Ctx<'a> {
    /// The same run, with the shared fixtures deployed.
    fn with_fixtures<'b>(&self, dep: &'b Deployment) -> Ctx<'b>
    where
        'a: 'b,
    {
        Ctx {
            permits: self.permits,
            client: self.client.clone(),
            workloads: self.workloads,
            pods: self.pods.clone(),
            facts: self.facts,
            dep,
            ns: self.ns,
        }
    }

    fn pods_client(&self) -> &kube::Client {
        &self.client
    }

    /// Runs a probe command in a pod, within the run's limit of probes in flight (waiting for
    /// pods to start holds no slot: that is the watch's work, not the cluster's).
    async fn exec(
        &self,
        pod: &str,
        container: Option<&str>,
        argv: &[String],
    ) -> Result<(probe::Output, bool), probe::TransportError> {
        let _permit = self.permits.acquire().await;
        probe::exec_retrying(&self.pods, pod, container, argv).await
    }
}

async fn judge_cell(ctx: &Ctx<'_>, plan: &CellPlan<'_>, index: usize) -> Cell {
    let clock = Instant::now();
    let check = plan.check;
    let mut judged: Vec<(Pair, PairJudgement)> = Vec::new();
    if let Some((verdict, why)) = &plan.fixed {
        judged.push((Pair { from: None, to: None }, judgement(*verdict, why.clone())));
    } else {
        // The pairs of one cell run side by side too (a pool of many nodes is many probes).
        let mut done: Vec<(usize, Pair, PairJudgement)> = futures::stream::iter(plan.pairs.iter().enumerate())
            .map(|(k, pair)| async move {
                let j = match &plan.check.probe {
                    Probe::Connect { .. } | Probe::Resolve { .. } => judge_pair(ctx, plan, *pair).await,
                    _ => judge_other(ctx, plan, *pair, index).await,
                };
                (k, *pair, j)
            })
            .buffer_unordered(PAIRS_AT_ONCE)
            .collect()
            .await;
        done.sort_by_key(|(k, ..)| *k);
        judged.extend(done.into_iter().map(|(_, p, j)| (p, j)));
    }
    // The cell takes the worst of its pairs.
    let worst = judged.iter().min_by_key(|(_, j)| j.verdict.rank()).map(|(p, _)| *p);
    let mut nodes = Vec::new();
    for (pair, _) in &judged {
        for (idx, role) in [(pair.from, NodeRole::Source), (pair.to, NodeRole::Destination)] {
            if let Some(n) = idx.and_then(|i| ctx.facts.nodes.get(i)) {
                let r = node_ref(n, role);
                if !nodes.contains(&r) {
                    nodes.push(r);
                }
            }
        }
    }
    let (_, j) = judged
        .into_iter()
        .find(|(p, _)| Some((p.from, p.to)) == worst.map(|w| (w.from, w.to)))
        .unwrap_or((
            Pair { from: None, to: None },
            judgement(Verdict::Error, "no pair was judged".into()),
        ));
    let id = CellId::new(&plan.suite.name, &check.rule, &plan.coordinates).unwrap_or_else(|_| {
        CellId::new(&plan.suite.name, &check.rule, &Coordinates::default()).unwrap_or_else(|_| {
            // Suite and rule names are validated kebab-case and catalogue ids; this cannot fail.
            CellId::new("invalid", "INVALID", &Coordinates::default()).unwrap_or_else(|e| panic!("cell id: {e}"))
        })
    });
    let remedy = match (j.verdict, j.class) {
        _ if j.remedy.is_some() => j.remedy.clone(),
        (Verdict::Fail | Verdict::Error | Verdict::KnownLimitation | Verdict::Warn, class) => {
            let own = class
                .and_then(|c| check.remedy.get(&c))
                .or_else(|| check.remedy.get(&crate::suite::FailureClass::Any));
            // A pod that never got a sandbox says nothing about the check: the node's remedy.
            let node = match j.verdict {
                Verdict::Fail | Verdict::Error => crate::triage::sandbox(&j.summary, own.map(String::as_str)),
                _ => None,
            };
            node.map(str::to_string).or_else(|| own.cloned())
        }
        _ => None,
    };
    let evidence = j.output.as_ref().map(|o| Evidence {
        pod: Some(format!("{}/{}", ctx.ns, o.pod)),
        command: o.argv.clone(),
        exit_code: o.exit_code,
        stdout: Excerpt::new(&o.stdout),
        stderr: Excerpt::new(&o.stderr),
        events: Vec::new(),
    });
    Cell {
        id,
        suite: plan.suite.name.clone(),
        check: check.name.clone(),
        rule_id: check.rule.clone(),
        title: check.title.clone(),
        category: plan.suite.category.clone(),
        verdict: j.verdict,
        expected: j.expected.unwrap_or(CellExpectation {
            kind: Expected::Works,
            text: j.reason.clone().unwrap_or_default(),
        }),
        coordinates: plan.coordinates.clone(),
        nodes,
        observed: Observed {
            summary: j.summary,
            evidence,
        },
        remedy,
        sources: if j.sources.is_empty() {
            check.sources.clone()
        } else {
            j.sources
        },
        reproduce: j.output.as_ref().map(|o| probe::reproduce(ctx.ns, o)),
        reason: j.reason,
        flaky: j.flaky,
        duration_ms: u64::try_from(clock.elapsed().as_millis()).unwrap_or(u64::MAX),
    }
}

/// What the expectations of a pair's cell are judged on: the cluster's facts and the pair's nodes.
fn cell_facts<'a>(
    facts: &'a ClusterFacts,
    plan: &'a CellPlan<'_>,
    pair: Pair,
    placement: Option<Placement>,
) -> CellFacts<'a> {
    CellFacts {
        kubernetes: facts.version,
        from: pair.from.and_then(|i| facts.nodes.get(i)),
        to: pair.to.and_then(|i| facts.nodes.get(i)),
        placement,
        protocol: plan.protocol,
        variant: plan.variant.as_deref(),
        network_mode: facts.network_mode.as_ref().map(|f| f.value.as_str()),
        dsr: facts.dsr.as_ref().map(|f| f.value),
        flannel: facts
            .flannel_version
            .as_ref()
            .and_then(|f| facts::major_minor(&f.value)),
        egress: facts.egress.value,
        feature_gates: facts.feature_gates.as_ref(),
    }
}

async fn judge_pair(ctx: &Ctx<'_>, plan: &CellPlan<'_>, pair: Pair) -> PairJudgement {
    let facts = ctx.facts;
    let from = pair.from.and_then(|i| facts.nodes.get(i));
    let to = pair.to.and_then(|i| facts.nodes.get(i));
    let cell_facts = cell_facts(facts, plan, pair, plan.placement);
    let e = match verdict::expectation(plan.check, &cell_facts) {
        Ok(e) => e,
        Err(fact) => return judgement(Verdict::Indeterminate, format!("unknown: {fact}")),
    };
    let sources = if e.sources.is_empty() {
        plan.check.sources.clone()
    } else {
        e.sources.clone()
    };
    let Some(kind) = verdict::expected(e.result) else {
        let mut j = judgement(Verdict::NotApplicable, e.says.clone());
        j.sources = sources;
        return j;
    };
    let expected = Some(CellExpectation {
        kind,
        text: e.says.clone(),
    });
    let with = |mut j: PairJudgement| {
        j.expected = expected.clone();
        j.sources = sources.clone();
        j
    };
    if let Some(down) = not_ready(facts, pair, &plan.check.probe) {
        return with(down);
    }
    let request = match build_request(ctx, plan, from, to) {
        Ok(r) => r,
        Err(Unprobed::Indeterminate(why)) => return with(judgement(Verdict::Indeterminate, why)),
        Err(Unprobed::Error(why)) => return with(judgement(Verdict::Error, why)),
        Err(Unprobed::Variant(dns)) => match dns_client_request(ctx, plan, from, to, dns).await {
            Ok(r) => r,
            // The node failed the variant client while its plain client runs: the variant's
            // own change (hostNetwork, a dnsConfig) is what it refused — a probe result.
            Err(NotReady::Failed(why)) if from.is_some_and(|n| plain_client_runs(ctx, n)) => {
                let class = crate::suite::FailureClass::PodFailed;
                let outcome = verdict::outcome(e, &probe::Observation::Failed(class));
                let verdict = verdict::decide(e, &outcome);
                let mut j = judgement(verdict, why);
                j.reason = (outcome == Outcome::FailedOtherwise && kind != Expected::Works)
                    .then(|| format!("failed ({}), not in the documented way", class.name()));
                j.class = Some(class);
                return with(j);
            }
            Err(why) => return with(judgement(Verdict::Error, why.to_string())),
        },
    };
    let (pod, container, runner, req, verify) = request;
    let argv = probe::command(runner, &req);
    let (out, flaky) = match ctx.exec(&pod, container.as_deref(), &argv).await {
        Ok(x) => x,
        Err(e) => return with(judgement(Verdict::Error, format!("the probe could not run: {e}"))),
    };
    let mut result = probe::classify(&req, &out);
    // A resolve probe asks whether the name resolves: any answer but a DNS failure (a refused
    // or reset connection included) means it did.
    if matches!(plan.check.probe, Probe::Resolve { .. })
        && matches!(
            result,
            probe::Observation::Failed(
                crate::suite::FailureClass::Refused
                    | crate::suite::FailureClass::Reset
                    | crate::suite::FailureClass::Other
            )
        )
    {
        result = probe::Observation::Reached(String::new());
    }
    let mut flaky = flaky;
    let mut detail = String::new();
    if let probe::Observation::Reached(body) = &result {
        match verify {
            Verify::Reachable => {}
            Verify::ClientIpPreserved => {
                let seen = body
                    .trim()
                    .rsplit_once(':')
                    .map_or(body.trim(), |(ip, _)| ip)
                    .to_string();
                let own = from.map(|n| n.address.clone()).unwrap_or_default();
                if seen != own {
                    detail = format!(" (backend saw {seen}, the client is {own})");
                    result = probe::Observation::Failed(crate::suite::FailureClass::Mismatch);
                }
            }
            Verify::OneBackend => {
                let mut answers = vec![result.clone()];
                for _ in 0..9 {
                    match ctx.exec(&pod, container.as_deref(), &argv).await {
                        Ok((o, f)) => {
                            flaky |= f;
                            answers.push(probe::classify(&req, &o));
                        }
                        Err(e) => return with(judgement(Verdict::Error, format!("the probe could not run: {e}"))),
                    }
                }
                if let Some((observation, why)) = one_backend(&answers) {
                    result = observation;
                    detail = why;
                }
            }
        }
    }
    let outcome = verdict::outcome(e, &result);
    let verdict = verdict::decide(e, &outcome);
    let target = match req.protocol {
        Protocol::Icmp => format!("{} icmp", req.host),
        p => format!("{}:{} {p}", req.host, req.port),
    };
    let summary = match &result {
        probe::Observation::Reached(_) => format!("{pod} → {target}: reached{detail}"),
        probe::Observation::Failed(c) => format!("{pod} → {target}: {}{detail}", c.name()),
    };
    let class = match &result {
        probe::Observation::Failed(c) => Some(*c),
        probe::Observation::Reached(_) => None,
    };
    let reason = match &outcome {
        Outcome::FailedOtherwise if kind != Expected::Works => Some(format!(
            "failed ({}), not in the documented way",
            class.map_or("?", |c| c.name())
        )),
        _ => None,
    };
    with(PairJudgement {
        verdict,
        expected: None,
        reason,
        summary,
        output: Some(out),
        class,
        flaky: flaky && verdict == Verdict::Pass,
        sources: Vec::new(),
        remedy: None,
    })
}

/// `verify: one-backend` over the answers to successive requests: a request that failed is the
/// flow's failure (the others must not hide it); otherwise more than one backend answering is a
/// mismatch. None when every request reached the same backend.
fn one_backend(answers: &[probe::Observation]) -> Option<(probe::Observation, String)> {
    let mut seen = std::collections::BTreeSet::new();
    for (n, answer) in answers.iter().enumerate() {
        match answer {
            probe::Observation::Reached(body) => {
                seen.insert(body.trim().to_string());
            }
            probe::Observation::Failed(class) => {
                let why = format!(" (request {} of {}: {})", n + 1, answers.len(), class.name());
                return Some((answer.clone(), why));
            }
        }
    }
    (seen.len() > 1).then(|| {
        let why = format!(
            " ({} requests reached {} backends: {})",
            answers.len(),
            seen.len(),
            seen.into_iter().collect::<Vec<_>>().join(", ")
        );
        (probe::Observation::Failed(crate::suite::FailureClass::Mismatch), why)
    })
}

enum Unprobed {
    Indeterminate(String),
    Error(String),
    /// The probe runs in a client of another DNS set-up.
    Variant(crate::suite::DnsVariant),
}

type Built = (String, Option<String>, Runner, Request, Verify);

fn usable(p: Option<&deploy::Placed>, what: &str, node: &str) -> Result<String, Unprobed> {
    match p {
        Some(p) if p.problem.is_none() => Ok(p.name.clone()),
        Some(p) => Err(Unprobed::Error(format!(
            "the {what} on {node} is not usable: {}",
            p.problem.clone().unwrap_or_default()
        ))),
        None => Err(Unprobed::Error(format!("no {what} was deployed on {node}"))),
    }
}

/// The pod to exec in and what to ask for, for one pair.
fn build_request(
    ctx: &Ctx<'_>,
    plan: &CellPlan<'_>,
    from: Option<&ClusterNode>,
    to: Option<&ClusterNode>,
) -> Result<Built, Unprobed> {
    let dep = ctx.dep;
    let protocol = plan.protocol.unwrap_or(Protocol::Tcp);
    let src = from.ok_or_else(|| Unprobed::Error("the cell has no source node".into()))?;
    let (origin, verify, service) = match &plan.check.probe {
        Probe::Connect {
            from, verify, service, ..
        } => (*from, *verify, *service),
        Probe::Resolve { from, .. } => (*from, Verify::Reachable, ServiceVariant::Cluster),
        _ => return Err(Unprobed::Error("not a connection probe".into())),
    };
    let localhost = matches!(
        plan.check.probe,
        Probe::Connect {
            to: Destination::Localhost,
            ..
        }
    );
    if let Probe::Resolve { dns, .. } = &plan.check.probe
        && *dns != crate::suite::DnsVariant::ClusterFirst
    {
        // Resolved by a client pod of that DNS set-up, created on demand (see judge_pair).
        return Err(Unprobed::Variant(*dns));
    }
    let (pod, container, runner) = match (origin, localhost) {
        (_, true) => (
            usable(dep.servers.get(&src.name), "netexec server", &src.name)?,
            Some("client".to_string()),
            Runner::in_pod(src),
        ),
        (Origin::Pod, false) => (
            usable(dep.clients.get(&src.name), "client pod", &src.name)?,
            None,
            Runner::in_pod(src),
        ),
        (Origin::Host, false) => {
            if src.os == Os::Windows && src.host_process() != Some(true) {
                return Err(Unprobed::Indeterminate(format!(
                    "HostProcess pods are not available on {} (they need Kubernetes 1.23+ and containerd 1.6+): no documented in-cluster way to probe from the Windows host",
                    src.name
                )));
            }
            let runner = if src.os == Os::Windows {
                Runner::WindowsHost
            } else {
                Runner::Agnhost(Os::Linux)
            };
            (
                usable(dep.hosts.get(&src.name), "node-side probe", &src.name)?,
                None,
                runner,
            )
        }
    };
    let dst = to.unwrap_or(src);
    let server_ip = |n: &ClusterNode| -> Result<String, Unprobed> {
        match dep.servers.get(&n.name) {
            Some(p) if p.problem.is_none() => Ok(p.ip.clone()),
            Some(p) => Err(Unprobed::Error(format!(
                "the netexec server on {} is not usable: {}",
                n.name,
                p.problem.clone().unwrap_or_default()
            ))),
            None => Err(Unprobed::Error(format!("no netexec server on {}", n.name))),
        }
    };
    // Every service, name and port of a node fronts its netexec server: with the server not
    // usable (e.g. its sandbox never started) there is nothing to judge behind them.
    let svc = |n: &ClusterNode, local: bool| -> Result<&deploy::ServiceInfo, Unprobed> {
        server_ip(n)?;
        let map = if local { &dep.local_services } else { &dep.services };
        map.get(&n.name)
            .ok_or_else(|| Unprobed::Error(format!("no service over the server on {}", n.name)))
    };
    let http = |host: String, port: u16, path: &str| Request {
        host,
        port,
        protocol,
        path: path.to_string(),
        tls: false,
    };
    let path = match verify {
        Verify::ClientIpPreserved => "/clientip",
        _ => "/hostname",
    };
    let req = match &plan.check.probe {
        Probe::Resolve { name, .. } => {
            let host = match name {
                NameForm::PodFqdn => {
                    server_ip(dst)?;
                    let hostname = dep.hostnames.get(&dst.name).cloned().unwrap_or_default();
                    format!("{hostname}.{}.{}.svc.cluster.local", deploy::SUBDOMAIN, ctx.ns)
                }
                NameForm::Fqdn => format!("{}.{}.svc.cluster.local", svc(dst, false)?.name, ctx.ns),
                NameForm::Short => svc(dst, false)?.name.clone(),
                NameForm::Dotted => format!("{}.{}", svc(dst, false)?.name, ctx.ns),
                NameForm::OtherNamespaceDotted => "kubernetes.default".to_string(),
                NameForm::Outside => OUTSIDE_NAME.to_string(),
            };
            let port = match name {
                NameForm::PodFqdn => 8080,
                NameForm::OtherNamespaceDotted => 443,
                _ => 80,
            };
            let mut r = http(host, port, "/hostname");
            r.protocol = Protocol::Tcp;
            r.tls = port == 443;
            if r.tls {
                r.path = "/version".into();
            }
            r
        }
        Probe::Connect { to: dest, .. } => match dest {
            Destination::PodIp => {
                let port = if protocol == Protocol::Udp { 8081 } else { 8080 };
                http(server_ip(dst)?, port, path)
            }
            Destination::ClusterIp => {
                if service == ServiceVariant::ClientIpAffinity {
                    let s = dep
                        .affinity
                        .get(&dst.pool())
                        .ok_or_else(|| Unprobed::Error(format!("no affinity service for pool {}", dst.pool())))?;
                    http(s.cluster_ip.clone(), 80, "/hostname")
                } else {
                    let s = svc(dst, service == ServiceVariant::LocalPolicy)?;
                    let port = if protocol == Protocol::Udp { 90 } else { 80 };
                    http(s.cluster_ip.clone(), port, path)
                }
            }
            Destination::ServiceFqdn => http(
                format!("{}.{}.svc.cluster.local", svc(dst, false)?.name, ctx.ns),
                80,
                path,
            ),
            Destination::ServiceShort => match service {
                ServiceVariant::Headless => {
                    server_ip(dst)?;
                    let name = dep.headless.get(&dst.name).ok_or_else(|| {
                        Unprobed::Error(format!("no headless service over the server on {}", dst.name))
                    })?;
                    http(name.clone(), 8080, path)
                }
                ServiceVariant::ExternalName => {
                    server_ip(dst)?;
                    let name = dep.external_names.get(&dst.name).ok_or_else(|| {
                        Unprobed::Error(format!("no ExternalName service for the server on {}", dst.name))
                    })?;
                    http(name.clone(), 80, path)
                }
                _ => http(svc(dst, false)?.name.clone(), 80, path),
            },
            Destination::NodePort | Destination::LoopbackNodePort => {
                let s = svc(dst, service == ServiceVariant::LocalPolicy)?;
                let port = if protocol == Protocol::Udp {
                    s.node_ports.1
                } else {
                    s.node_ports.0
                }
                .ok_or_else(|| Unprobed::Error(format!("service {} has no node port", s.name)))?;
                let host = if *dest == Destination::LoopbackNodePort {
                    "127.0.0.1".to_string()
                } else {
                    dst.address.clone()
                };
                http(host, port, path)
            }
            Destination::HostPort => {
                server_ip(dst)?;
                http(dst.address.clone(), deploy::HOST_PORT, path)
            }
            Destination::NodeIp => {
                let mut r = http(dst.address.clone(), 10250, "/healthz");
                r.tls = true;
                r
            }
            Destination::OutsideIp => {
                let mut r = http(OUTSIDE_IP.to_string(), OUTSIDE_IP_PORT, "/");
                // A raw TCP connect: the port speaks DNS, not HTTP.
                if r.protocol == Protocol::Tcp {
                    r.protocol = Protocol::Udp;
                    return Ok((pod, container, runner, raw_tcp(r), verify));
                }
                r
            }
            Destination::OutsideName => http(OUTSIDE_NAME.to_string(), 80, "/"),
            Destination::LoadBalancer => {
                let s = dep
                    .load_balancers
                    .get(&dst.pool())
                    .ok_or_else(|| Unprobed::Error(format!("no LoadBalancer service in pool {}", dst.pool())))?;
                let ip = s.ingress.clone().ok_or_else(|| {
                    Unprobed::Indeterminate(format!(
                        "service {} got no load-balancer address (does the cluster have a load-balancer controller?)",
                        s.name
                    ))
                })?;
                http(ip, 80, path)
            }
            Destination::Localhost => http("127.0.0.1".to_string(), 8080, "/hostname"),
        },
        _ => return Err(Unprobed::Error("not a connection probe".into())),
    };
    Ok((pod, container, runner, req, verify))
}

/// A TCP connect without HTTP (agnhost connect), expressed as a request the command builder
/// turns into `agnhost connect HOST:PORT` (no `--protocol`).
fn raw_tcp(mut r: Request) -> Request {
    r.protocol = Protocol::Tcp;
    r.path = probe::RAW_TCP.to_string();
    r
}

/// Judges one node of a fact, exec, create or outside cell.
async fn judge_other(ctx: &Ctx<'_>, plan: &CellPlan<'_>, pair: Pair, index: usize) -> PairJudgement {
    let facts = ctx.facts;
    let node_idx = pair.from.or(pair.to).unwrap_or(0);
    let Some(node) = facts.nodes.get(node_idx) else {
        return judgement(Verdict::Error, "the cell has no node".into());
    };
    let cell_facts = cell_facts(facts, plan, pair, None);
    let e = match verdict::expectation(plan.check, &cell_facts) {
        Ok(e) => e,
        Err(fact) => return judgement(Verdict::Indeterminate, format!("unknown: {fact}")),
    };
    let sources = if e.sources.is_empty() {
        plan.check.sources.clone()
    } else {
        e.sources.clone()
    };
    let Some(kind) = verdict::expected(e.result) else {
        let mut j = judgement(Verdict::NotApplicable, e.says.clone());
        j.sources = sources;
        return j;
    };
    if let Some(mut down) = not_ready(facts, pair, &plan.check.probe) {
        down.expected = Some(CellExpectation {
            kind,
            text: e.says.clone(),
        });
        down.sources = sources;
        return down;
    }
    let finish = |observation: probe::Observation, summary: String, output: Option<probe::Output>| {
        let outcome = verdict::outcome(e, &observation);
        let verdict = verdict::decide(e, &outcome);
        let class = match &observation {
            probe::Observation::Failed(c) => Some(*c),
            probe::Observation::Reached(_) => None,
        };
        PairJudgement {
            verdict,
            expected: Some(CellExpectation {
                kind,
                text: e.says.clone(),
            }),
            reason: None,
            summary,
            output,
            class,
            flaky: false,
            sources: sources.clone(),
            remedy: None,
        }
    };
    let error = |why: String| {
        let mut j = judgement(Verdict::Error, why);
        j.expected = Some(CellExpectation {
            kind,
            text: e.says.clone(),
        });
        j.sources = sources.clone();
        j
    };
    match &plan.check.probe {
        Probe::Logs {
            agent,
            fails,
            requires,
            line,
            must,
        } => match crate::agents::log_of(&ctx.client, &node.name, *agent).await {
            Err(why) => error(why),
            Ok(None) => {
                let mut j = judgement(
                    Verdict::Indeterminate,
                    format!(
                        "unknown: {} has no {agent:?} pod and its kubelet serves no /logs/{}",
                        node.name,
                        agent.node_log()
                    ),
                );
                j.sources = sources.clone();
                j
            }
            Ok(Some(log)) => match crate::agents::judge_log(
                &log.text,
                &crate::agents::LogRule {
                    fails: fails.as_deref(),
                    requires: requires.as_deref(),
                    line: line.as_deref(),
                    must: must.as_deref(),
                },
            ) {
                Err(bad) => error(format!("the check's log expression: {bad}")),
                Ok(crate::agents::LogFinding::Clean) => finish(
                    probe::Observation::Reached(format!("log of {}", log.pod)),
                    format!("{}: the log of {} has no offending line", node.name, log.pod),
                    None,
                ),
                Ok(crate::agents::LogFinding::Offence(offence)) => finish(
                    probe::Observation::Failed(crate::suite::FailureClass::Mismatch),
                    format!("{}: the log of {} says: {offence}", node.name, log.pod),
                    None,
                ),
                Ok(crate::agents::LogFinding::Silent(why)) => {
                    let mut j = judgement(
                        Verdict::Indeterminate,
                        format!("unknown: the log of {} on {}: {why}", log.pod, node.name),
                    );
                    j.sources = sources.clone();
                    j
                }
            },
        },
        Probe::Fact { fact } => match facts::judge(*fact, node, facts, e.limit.as_deref()) {
            Ok((true, seen)) => finish(
                probe::Observation::Reached(seen.clone()),
                format!("{}: {seen}", node.name),
                None,
            ),
            Ok((false, seen)) => finish(
                probe::Observation::Failed(crate::suite::FailureClass::Mismatch),
                format!("{}: {seen}", node.name),
                None,
            ),
            Err(fact) => {
                let mut j = judgement(Verdict::Indeterminate, format!("unknown: {fact}"));
                j.sources = sources.clone();
                j
            }
        },
        Probe::Outside { to } => {
            let Some(svc) = ctx.dep.services.get(&node.name) else {
                return error(format!("no service over the server on {}", node.name));
            };
            if let Some(why) = ctx.dep.servers.get(&node.name).and_then(|p| p.problem.as_ref()) {
                return error(format!("the netexec server on {} is not usable: {why}", node.name));
            }
            let url = match to {
                Destination::LoadBalancer => {
                    match ctx.dep.load_balancers.get(&node.pool()).and_then(|s| s.ingress.clone()) {
                        Some(ip) => format!("http://{ip}:80/hostname"),
                        None => {
                            let mut j = judgement(
                                Verdict::Indeterminate,
                                format!(
                                    "unknown: the LoadBalancer service of pool {} got no ingress address (does the cluster have a load-balancer controller?)",
                                    node.pool()
                                ),
                            );
                            j.sources = sources.clone();
                            return j;
                        }
                    }
                }
                Destination::HostPort => format!("http://{}:{}/hostname", node.address, deploy::HOST_PORT),
                _ => match svc.node_ports.0 {
                    Some(port) => format!("http://{}:{port}/hostname", node.address),
                    None => return error(format!("service {} has no node port", svc.name)),
                },
            };
            let (obs, seen) = {
                let _permit = ctx.permits.acquire().await;
                outside_get(&url).await
            };
            finish(obs, format!("this machine → {url}: {seen}"), None)
        }
        Probe::Exec {
            fixture,
            command,
            stdout,
        } => {
            let os = match node.os {
                Os::Linux => crate::suite::Os::Linux,
                Os::Windows => crate::suite::Os::Windows,
            };
            let Some(argv) = command.get(&os) else {
                return finish(
                    probe::Observation::Failed(crate::suite::FailureClass::Other),
                    format!("the check has no {} command", node.os),
                    None,
                );
            };
            // A HostProcess fixture on a Windows node without HostProcess: no documented
            // in-cluster way to look from the host (windows-rules.md §3.0).
            if node.os == Os::Windows
                && node.host_process() != Some(true)
                && ctx
                    .workloads
                    .fixtures
                    .get(fixture)
                    .and_then(|f| f.pod_for(node))
                    .is_some_and(crate::fixture::needs_host_process)
            {
                let mut j = judgement(
                    Verdict::Indeterminate,
                    format!(
                        "HostProcess pods are not available on {} (they need Kubernetes 1.23+ and containerd 1.6+): no documented in-cluster way to probe from the Windows host",
                        node.name
                    ),
                );
                j.sources = sources.clone();
                return j;
            }
            let pod = match ctx.workloads.ready_pod(fixture, node, node_idx).await {
                Ok(p) => p,
                // The node refused the fixture's pod (not an image it could not pull): what the
                // check's spec asks for failed — a probe result the suite may document.
                Err(NotReady::Failed(why)) => {
                    return finish(
                        probe::Observation::Failed(crate::suite::FailureClass::PodFailed),
                        why,
                        None,
                    );
                }
                Err(why) => return error(why.to_string()),
            };
            let argv: Vec<String> = argv.iter().map(|a| a.replace("{{namespace}}", ctx.ns)).collect();
            let out = match ctx.exec(&pod, None, &argv).await {
                Ok((o, _)) => o,
                Err(e) => return error(format!("the probe could not run: {e}")),
            };
            let text = out.stdout_text();
            let matched = match stdout {
                Some(re) => regex::Regex::new(re).map(|r| r.is_match(&text)).unwrap_or(false),
                None => true,
            };
            let obs = if out.exit_code == Some(0) && matched {
                probe::Observation::Reached(text.clone())
            } else if out.exit_code == Some(0) {
                probe::Observation::Failed(crate::suite::FailureClass::Mismatch)
            } else {
                probe::Observation::Failed(crate::suite::FailureClass::Other)
            };
            let first = text.lines().next().unwrap_or_default().to_string();
            finish(obs, format!("{pod}: exit {:?}, {first:?}", out.exit_code), Some(out))
        }
        Probe::Create {
            fixture,
            outcome,
            message,
        } => match ctx.workloads.create(fixture, node, node_idx, index).await {
            Ok((name, seen)) => {
                use crate::suite::{CreateOutcome as O, FailureClass as C};
                // `message` is the documented signature of a refusal or failure: it must match
                // a failure the probe saw, whether or not that failure is the probe's outcome.
                let signature = |m: &str| {
                    message
                        .as_ref()
                        .is_none_or(|re| regex::Regex::new(re).map(|r| r.is_match(m)).unwrap_or(false))
                };
                let obs = if seen.outcome == *outcome && (seen.outcome == O::Runs || signature(&seen.message)) {
                    probe::Observation::Reached(seen.message.clone())
                } else {
                    probe::Observation::Failed(match seen.outcome {
                        O::Runs => C::Accepted,
                        _ if !signature(&seen.message) => C::Other,
                        O::RejectedByApi => C::Rejected,
                        O::Fails => C::PodFailed,
                        O::Unschedulable => C::Other,
                    })
                };
                let summary = format!(
                    "pod {name}: {:?}{}",
                    seen.outcome,
                    if seen.message.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", seen.message)
                    }
                );
                finish(obs, summary, None)
            }
            Err(why) => error(why),
        },
        Probe::Audit {
            audit: crate::suite::AuditKind::LinuxWorkloadsOnWindows,
        } => {
            let windows: Vec<&ClusterNode> = facts
                .nodes
                .iter()
                .filter(|n| n.os == Os::Windows && n.schedulable())
                .collect();
            match audit_workloads(ctx.pods_client(), &windows).await {
                Ok(found) if found.is_empty() => finish(
                    probe::Observation::Reached(String::new()),
                    "no DaemonSet or Deployment without an OS selector can land on the Windows nodes".into(),
                    None,
                ),
                Ok(found) => finish(
                    probe::Observation::Failed(crate::suite::FailureClass::Mismatch),
                    format!(
                        "without an OS selector and not kept off Windows by taints: {}",
                        found.join(", ")
                    ),
                    None,
                ),
                Err(e) => error(format!("listing workloads: {e}")),
            }
        }
        Probe::Audit {
            audit: crate::suite::AuditKind::WindowsMemoryRequestNotLimit,
        } => match audit_memory_requests(ctx.pods_client()).await {
            Ok(found) if found.is_empty() => finish(
                probe::Observation::Reached(String::new()),
                "every Windows workload sets only a memory limit, or a request equal to it".into(),
                None,
            ),
            Ok(found) => finish(
                probe::Observation::Failed(crate::suite::FailureClass::Mismatch),
                format!("memory request differs from the limit: {}", found.join(", ")),
                None,
            ),
            Err(e) => error(format!("listing workloads: {e}")),
        },
        Probe::Connect { .. } | Probe::Resolve { .. } => error("not a node probe".into()),
    }
}

/// The runner's own HTTP GET (the outside client's view of a NodePort), with a timeout.
async fn outside_get(url: &str) -> (probe::Observation, String) {
    use crate::suite::FailureClass as C;
    let client = match reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(probe::CONNECT_SECS.into()))
        .timeout(Duration::from_secs((probe::CONNECT_SECS * 2).into()))
        .no_proxy()
        .build()
    {
        Ok(c) => c,
        Err(e) => return (probe::Observation::Failed(C::Other), e.to_string()),
    };
    match client.get(url).send().await {
        Ok(r) => {
            let status = r.status();
            let body = r.text().await.unwrap_or_default();
            (
                probe::Observation::Reached(body.clone()),
                format!("HTTP {status}: {}", body.trim()),
            )
        }
        Err(e) if e.is_timeout() => (probe::Observation::Failed(C::Timeout), "timeout".into()),
        Err(e) if e.is_connect() => {
            let text = format!("{e:?}");
            let class = if text.contains("refused") || text.contains("Refused") {
                C::Refused
            } else {
                C::Timeout
            };
            (probe::Observation::Failed(class), class.name().to_string())
        }
        Err(e) => (probe::Observation::Failed(C::Other), e.to_string()),
    }
}

/// The DaemonSets and Deployments of the cluster whose pod template `flagged` picks, named
/// `kind namespace/name`.
async fn workloads_where(
    client: &kube::Client,
    flagged: &(dyn Fn(&k8s_openapi::api::core::v1::PodSpec) -> bool + Sync),
) -> Result<Vec<String>, kube::Error> {
    use k8s_openapi::api::apps::v1::{DaemonSet, Deployment as Deploy};
    let mut found = Vec::new();
    for ds in Api::<DaemonSet>::all(client.clone())
        .list(&ListParams::default())
        .await?
        .items
    {
        if ds
            .spec
            .as_ref()
            .and_then(|s| s.template.spec.as_ref())
            .is_some_and(flagged)
        {
            found.push(format!(
                "daemonset {}/{}",
                ds.metadata.namespace.unwrap_or_default(),
                ds.metadata.name.unwrap_or_default()
            ));
        }
    }
    for d in Api::<Deploy>::all(client.clone())
        .list(&ListParams::default())
        .await?
        .items
    {
        if d.spec
            .as_ref()
            .and_then(|s| s.template.spec.as_ref())
            .is_some_and(flagged)
        {
            found.push(format!(
                "deployment {}/{}",
                d.metadata.namespace.unwrap_or_default(),
                d.metadata.name.unwrap_or_default()
            ));
        }
    }
    Ok(found)
}

/// SCHED-NODESELECTOR's audit: DaemonSets and Deployments without an OS selector that the
/// Windows nodes' taints do not keep away, i.e. that would put (Linux) pods on Windows nodes.
async fn audit_workloads(client: &kube::Client, windows: &[&ClusterNode]) -> Result<Vec<String>, kube::Error> {
    let lands_on_windows = |spec: &k8s_openapi::api::core::v1::PodSpec| -> bool {
        let os = spec.node_selector.as_ref().and_then(|s| s.get("kubernetes.io/os"));
        let affinity_os = spec
            .affinity
            .as_ref()
            .and_then(|a| a.node_affinity.as_ref())
            .and_then(|n| n.required_during_scheduling_ignored_during_execution.as_ref())
            .is_some_and(|r| {
                r.node_selector_terms.iter().any(|t| {
                    t.match_expressions
                        .iter()
                        .flatten()
                        .any(|e| e.key == "kubernetes.io/os")
                })
            });
        if os.is_some() || affinity_os {
            return false;
        }
        let tolerations = spec.tolerations.clone().unwrap_or_default();
        windows.iter().any(|n| {
            n.taints
                .iter()
                .filter(|t| t.effect == "NoSchedule" || t.effect == "NoExecute")
                .all(|t| {
                    tolerations.iter().any(|tol| {
                        let key_ok = tol.key.as_deref().is_none_or(|k| k.is_empty() || k == t.key);
                        let op_exists = tol.operator.as_deref() == Some("Exists");
                        let value_ok = op_exists
                            || tol.value.as_deref().unwrap_or_default() == t.value.as_deref().unwrap_or_default();
                        let effect_ok = tol.effect.as_deref().is_none_or(|e| e.is_empty() || e == t.effect);
                        key_ok && value_ok && effect_ok
                    })
                })
        })
    };
    workloads_where(client, &lands_on_windows).await
}

/// MEM-LIMIT-EQ-REQUEST's audit: Windows workloads whose containers request a different amount
/// of memory than their limit.
async fn audit_memory_requests(client: &kube::Client) -> Result<Vec<String>, kube::Error> {
    let differs = |spec: &k8s_openapi::api::core::v1::PodSpec| -> bool {
        let windows = spec
            .node_selector
            .as_ref()
            .and_then(|s| s.get("kubernetes.io/os"))
            .is_some_and(|o| o == "windows")
            || spec.os.as_ref().is_some_and(|o| o.name == "windows");
        windows
            && spec.containers.iter().any(|c| {
                let r = c.resources.as_ref();
                let req = r
                    .and_then(|r| r.requests.as_ref())
                    .and_then(|m| m.get("memory"))
                    .and_then(|q| facts::quantity_bytes(&q.0));
                let lim = r
                    .and_then(|r| r.limits.as_ref())
                    .and_then(|m| m.get("memory"))
                    .and_then(|q| facts::quantity_bytes(&q.0));
                matches!((req, lim), (Some(a), Some(b)) if a != b)
            })
    };
    workloads_where(client, &differs).await
}

/// A change to a stamped pod.
type PodEdit = Box<dyn Fn(&mut serde_json::Value) + Sync>;

/// The node's plain netexec client is deployed and usable.
fn plain_client_runs(ctx: &Ctx<'_>, node: &ClusterNode) -> bool {
    ctx.dep.clients.get(&node.name).is_some_and(|p| p.problem.is_none())
}

/// A resolve probe from a client pod with another DNS set-up (hostNetwork with
/// `ClusterFirstWithHostNet`, or `dnsPolicy: None` with a `dnsConfig` naming the cluster DNS),
/// created on demand from the netexec-client fixture.
async fn dns_client_request(
    ctx: &Ctx<'_>,
    plan: &CellPlan<'_>,
    from: Option<&ClusterNode>,
    to: Option<&ClusterNode>,
    dns: crate::suite::DnsVariant,
) -> Result<Built, NotReady> {
    use crate::suite::DnsVariant;
    let src = from.ok_or_else(|| NotReady::Other("the cell has no source node".into()))?;
    let index = ctx.facts.nodes.iter().position(|n| n.name == src.name).unwrap_or(0);
    let ns = ctx.ns.to_string();
    let dns_ip = match dns {
        DnsVariant::Custom => {
            let api: Api<k8s_openapi::api::core::v1::Service> = Api::namespaced(ctx.client.clone(), "kube-system");
            api.get("kube-dns")
                .await
                .ok()
                .and_then(|s| s.spec.and_then(|s| s.cluster_ip))
                .ok_or_else(|| {
                    NotReady::Other("the cluster DNS service kube-system/kube-dns has no ClusterIP".into())
                })?
        }
        _ => String::new(),
    };
    let (variant, mutate): (&str, PodEdit) = match dns {
        DnsVariant::ClusterFirstWithHostNet => (
            "-hostnet-dns",
            Box::new(|p: &mut serde_json::Value| {
                p["spec"]["hostNetwork"] = serde_json::json!(true);
                p["spec"]["dnsPolicy"] = serde_json::json!("ClusterFirstWithHostNet");
            }),
        ),
        DnsVariant::Custom => (
            "-custom-dns",
            Box::new(move |p: &mut serde_json::Value| {
                p["spec"]["dnsPolicy"] = serde_json::json!("None");
                p["spec"]["dnsConfig"] = serde_json::json!({
                    "nameservers": [dns_ip],
                    "searches": [format!("{ns}.svc.cluster.local"), "svc.cluster.local", "cluster.local"],
                    "options": [{"name": "ndots", "value": "5"}]
                });
            }),
        ),
        DnsVariant::ClusterFirst => ("", Box::new(|_: &mut serde_json::Value| {})),
    };
    let pod = ctx
        .workloads
        .ready_variant("netexec-client", variant, src, index, mutate.as_ref())
        .await?;
    // The same request a ClusterFirst client would make.
    let plain = CellPlan {
        suite: plan.suite,
        check: plan.check,
        coordinates: plan.coordinates.clone(),
        placement: plan.placement,
        protocol: plan.protocol,
        variant: plan.variant.clone(),
        pairs: Vec::new(),
        fixed: None,
    };
    let mut cf = plan.check.clone();
    if let Probe::Resolve { dns, .. } = &mut cf.probe {
        *dns = DnsVariant::ClusterFirst;
    }
    let plain = CellPlan { check: &cf, ..plain };
    match build_request(ctx, &plain, from, to) {
        Ok((_, _, runner, req, verify)) => Ok((pod, None, runner, req, verify)),
        Err(Unprobed::Indeterminate(w) | Unprobed::Error(w)) => Err(NotReady::Other(w)),
        Err(Unprobed::Variant(_)) => Err(NotReady::Other("unexpected DNS variant".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, ready: bool) -> ClusterNode {
        ClusterNode {
            name: name.into(),
            os: Os::Windows,
            build: Some(20348),
            address: "10.0.0.5".into(),
            kubelet: Some((1, 32)),
            runtime: Some(("containerd".into(), (1, 7))),
            taints: Vec::new(),
            control_plane: false,
            ready,
            labels: BTreeMap::new(),
            kernel: "10.0.20348.2762".into(),
            memory: (None, None),
            conditions: [("Ready".to_string(), if ready { "True" } else { "Unknown" }.to_string())].into(),
            configz: None,
        }
    }

    #[rstest::rstest]
    #[case::small_pool_whole(2, 3)]
    #[case::exact(3, 3)]
    #[case::large_pool_sampled(33, 3)]
    fn workload_checks_sample_a_few_spread_nodes_per_pool(#[case] len: usize, #[case] k: usize) {
        let members: Vec<usize> = (100..100 + len).collect();
        let a = sample(&members, "secret-at-rest", k);
        assert_eq!(a.len(), len.min(k));
        assert_eq!(
            a,
            sample(&members, "secret-at-rest", k),
            "the same check samples the same nodes"
        );
        let mut distinct = a.clone();
        distinct.dedup();
        assert_eq!(distinct, a, "no node twice");
        assert!(a.iter().all(|m| members.contains(m)));
        if len > k {
            // Spread over the pool: sorted picks are about len/k apart.
            assert!(a.windows(2).all(|w| w[1] - w[0] >= len / k - 1), "{a:?}");
            let names = [
                "hostprocess",
                "run-as-username",
                "emptydir-memory",
                "build-match",
                "privileged",
            ];
            let picks: std::collections::BTreeSet<Vec<usize>> = names.iter().map(|n| sample(&members, n, k)).collect();
            assert!(picks.len() > 1, "different checks sample different nodes");
        }
    }

    #[test]
    fn one_backend_is_a_mismatch_only_when_every_request_got_through() {
        use crate::suite::FailureClass as C;
        use probe::Observation::{Failed, Reached};
        let to = |b: &str| Reached(b.to_string());
        assert_eq!(one_backend(&[to("a"), to("a\n"), to("a")]), None);
        assert_eq!(
            one_backend(&[to("a"), to("b"), to("a")]),
            Some((
                Failed(C::Mismatch),
                " (3 requests reached 2 backends: a, b)".to_string()
            ))
        );
        // Half the requests timing out is the flow failing, not one backend answering.
        assert_eq!(
            one_backend(&[to("a"), Failed(C::Timeout), to("a")]),
            Some((Failed(C::Timeout), " (request 2 of 3: timeout)".to_string()))
        );
    }

    #[test]
    fn pairs_on_a_node_that_is_not_ready_are_not_probed_and_say_why() {
        let facts = ClusterFacts {
            version: (1, 32),
            nodes: vec![node("win2019-1", true), node("win2022-1", false)],
            network_mode: None,
            dsr: None,
            win_dsr_gate: None,
            flannel_version: None,
            egress: mixcheck_reports::Fact::new(true, "default"),
            feature_gates: None,
            report: Default::default(),
        };
        let connect = Probe::Connect {
            from: Origin::Pod,
            to: Destination::PodIp,
            service: ServiceVariant::Cluster,
            verify: Verify::Reachable,
        };
        let both = Pair {
            from: Some(0),
            to: Some(1),
        };
        let j = not_ready(&facts, both, &connect).expect("the destination is down");
        assert_eq!(j.verdict, Verdict::Error);
        assert!(
            j.summary.contains("node win2022-1 is not Ready (Ready=Unknown)"),
            "{}",
            j.summary
        );
        assert!(j.remedy.as_deref().is_some_and(|r| r.contains("kubelet")));
        let healthy = Pair {
            from: Some(0),
            to: Some(0),
        };
        assert!(not_ready(&facts, healthy, &connect).is_none());
        // Facts about the node are still read from the API.
        let fact = Probe::Fact {
            fact: crate::suite::FactCheck::OsLabels,
        };
        assert!(not_ready(&facts, both, &fact).is_none());
    }
}
