//! The run's first stages: connect to the target (starting the bundled cluster), check with
//! access reviews that the credentials allow what the run does, and read the cluster's facts —
//! within the run's deadline; what stops a run here comes with its exit code.

use k8s_openapi::api::authorization::v1::{ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec};
use kube::api::{Api, PostParams};

use crate::cluster::facts::{self, ClusterFacts};
use crate::errors::Code;
use crate::run::plan::RunPlan;

/// Connects to the plan's target (starting the bundled cluster), checks the run's permissions
/// and reads the facts, within the run's deadline; what stops it comes with its exit code.
pub(crate) async fn open(
    plan: &RunPlan,
    run_id: &str,
    say: &dyn Fn(&str),
    warn: &dyn Fn(&str),
) -> Result<(crate::cluster::target::Target, ClusterFacts), Refused> {
    let target = match tokio::time::timeout(plan.deadline, crate::cluster::target::connect(&plan.target, say)).await {
        Ok(Ok(t)) => t,
        Ok(Err(e)) => {
            let e = crate::errors::Error::from(e);
            return Err((e.process_exit_code(), e.to_string(), None));
        }
        Err(_) => {
            return Err((
                Code::Unreachable,
                "the cluster did not answer before the run's deadline".into(),
                None,
            ));
        }
    };
    let seen = Some(target.report.clone());
    let existing = plan.namespace.is_some();
    let ns = plan.namespace.clone().unwrap_or_else(|| format!("mixcheck-{run_id}"));
    if existing && let Err(why) = existing_namespace(&target.client, &ns).await {
        target.stop().await;
        return Err((Code::Unreachable, why, seen));
    }
    let without = match preflight(&target.client, &ns, existing).await {
        Ok(w) => w,
        Err(missing) => {
            target.stop().await;
            return Err((Code::Unreachable, missing, seen));
        }
    };
    for m in &without {
        warn(&format!("Warning: no permission to {}: {}", m.what, m.costs));
    }
    match facts::collect(&target.client, plan.network_mode.as_deref(), plan.egress).await {
        Ok(mut f) => {
            for m in &without {
                for fact in m.unread {
                    f.report
                        .unread
                        .entry((*fact).to_string())
                        .or_insert_with(|| format!("no permission to {}", m.what));
                }
            }
            Ok((target, f))
        }
        Err(e) => {
            target.stop().await;
            Err((Code::Unreachable, format!("cannot read the cluster's facts: {e}"), seen))
        }
    }
}

/// Why a run could not start: its exit code, the reason, and the target when it answered.
pub(crate) type Refused = (Code, String, Option<mixcheck_reports::Target>);

/// One permission a run asks for, in the run namespace or cluster-wide.
struct Need {
    verb: &'static str,
    group: &'static str,
    resource: &'static str,
    sub: &'static str,
    /// In the run namespace (else cluster-wide).
    namespaced: bool,
    /// Why the run cannot do without it (None: optional).
    required: Option<Required>,
    /// What a run without it does not know or do, and the facts it leaves unread.
    costs: &'static str,
    unread: &'static [&'static str],
}

/// When a permission is required.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Required {
    Always,
    /// When the run creates its own namespace (no `--namespace`).
    OwnNamespace,
    /// When the run works in an existing namespace (`--namespace`): deleting what it created.
    ExistingNamespace,
}

const fn need(
    verb: &'static str,
    group: &'static str,
    resource: &'static str,
    sub: &'static str,
    namespaced: bool,
) -> Need {
    Need {
        verb,
        group,
        resource,
        sub,
        namespaced,
        required: Some(Required::Always),
        costs: "",
        unread: &[],
    }
}

const fn when(mut n: Need, r: Required) -> Need {
    n.required = Some(r);
    n
}

const fn optional(mut n: Need, costs: &'static str, unread: &'static [&'static str]) -> Need {
    n.required = None;
    n.costs = costs;
    n.unread = unread;
    n
}

/// What a run asks for: creating and reading its pods, exec, Services and events in its
/// namespace and listing nodes are required; the rest (the node proxy, kube-system's agents
/// and configuration, cluster-wide reads) only adds facts and evidence (`deploy/rbac.yaml`
/// and `deploy/rbac-namespaced.yaml` say why each is asked for).
const NEEDS: &[Need] = &[
    need("list", "", "nodes", "", false),
    when(need("create", "", "namespaces", "", false), Required::OwnNamespace),
    when(need("delete", "", "namespaces", "", false), Required::OwnNamespace),
    need("create", "", "pods", "", true),
    need("patch", "", "pods", "", true),
    need("list", "", "pods", "", true),
    need("create", "", "pods", "exec", true),
    need("create", "", "services", "", true),
    need("patch", "", "services", "", true),
    need("list", "", "events", "", true),
    when(
        need("deletecollection", "", "pods", "", true),
        Required::ExistingNamespace,
    ),
    when(
        need("deletecollection", "", "services", "", true),
        Required::ExistingNamespace,
    ),
    when(
        need("deletecollection", "", "secrets", "", true),
        Required::ExistingNamespace,
    ),
    optional(
        need("get", "", "nodes", "proxy", false),
        "the kubelets' configuration (configz), node logs and stats unread — MEM-* and kubelet-flag cells indeterminate",
        &["kubelet configuration (configz)", "cluster domain"],
    ),
    optional(
        need("list", "", "pods", "", false),
        "kube-proxy and CNI pods outside the run namespace unread — per-node kube-proxy versions unknown",
        &["kube-proxy version per node"],
    ),
    optional(
        need("get", "", "pods", "log", false),
        "agent logs (kube-proxy, flannel) unread — log evidence missing from the diagnosis",
        &[],
    ),
    optional(
        need("list", "apps", "daemonsets", "", false),
        "network add-on DaemonSets unread — network mode and DSR from the nodes' readings or --network-mode only",
        &["network mode (from the add-ons)", "dsr"],
    ),
    optional(
        need("list", "", "configmaps", "", false),
        "kube-proxy and flannel configuration unread — cluster CIDR and VXLAN parameters unknown",
        &["cluster CIDR", "flannel configuration"],
    ),
    optional(
        need("list", "node.k8s.io", "runtimeclasses", "", false),
        "RuntimeClasses unread — SCHED-RUNTIMECLASS indeterminate",
        &["runtime classes"],
    ),
];

/// A permission the run goes without: what it costs (one warning line) and the facts it
/// leaves unread.
pub(crate) struct Missing {
    pub what: String,
    pub costs: &'static str,
    pub unread: &'static [&'static str],
}

/// Checks with SelfSubjectAccessReview that the credentials allow what the run does. Missing
/// required permissions stop the run (all listed); missing optional ones are returned.
async fn preflight(client: &kube::Client, ns: &str, existing: bool) -> Result<Vec<Missing>, String> {
    let api: Api<SelfSubjectAccessReview> = Api::all(client.clone());
    let mut missing = Vec::new();
    let mut optional = Vec::new();
    for n in NEEDS {
        let applies = match n.required {
            Some(Required::OwnNamespace) => !existing,
            Some(Required::ExistingNamespace) => existing,
            _ => true,
        };
        if !applies {
            continue;
        }
        let review = SelfSubjectAccessReview {
            spec: SelfSubjectAccessReviewSpec {
                resource_attributes: Some(ResourceAttributes {
                    verb: Some(n.verb.to_string()),
                    group: Some(n.group.to_string()),
                    resource: Some(n.resource.to_string()),
                    subresource: (!n.sub.is_empty()).then(|| n.sub.to_string()),
                    namespace: n.namespaced.then(|| ns.to_string()),
                    ..ResourceAttributes::default()
                }),
                ..SelfSubjectAccessReviewSpec::default()
            },
            ..SelfSubjectAccessReview::default()
        };
        let what = describe(n, ns);
        match api.create(&PostParams::default(), &review).await {
            Ok(r) if r.status.as_ref().is_some_and(|s| s.allowed) => {}
            Ok(_) if n.required.is_some() => missing.push(what),
            Ok(_) => optional.push(Missing {
                what,
                costs: n.costs,
                unread: n.unread,
            }),
            Err(e) => return Err(format!("the access review for \"{what}\" failed: {e}")),
        }
    }
    if missing.is_empty() {
        Ok(optional)
    } else {
        Err(format!(
            "the credentials lack permissions the run needs:\n  - {}\n  check: the RBAC bindings of the kubeconfig's user (`kubectl auth can-i --list{}`); deploy/rbac.yaml and deploy/rbac-namespaced.yaml grant them",
            missing.join("\n  - "),
            if existing { format!(" -n {ns}") } else { String::new() }
        ))
    }
}

/// `create pods/exec in namespace x`, `list apps/daemonsets (all namespaces)`.
fn describe(n: &Need, ns: &str) -> String {
    let group = if n.group.is_empty() {
        String::new()
    } else {
        format!("{}/", n.group)
    };
    let sub = if n.sub.is_empty() {
        String::new()
    } else {
        format!("/{}", n.sub)
    };
    let scope = match (n.namespaced, n.resource) {
        (true, _) => format!(" in namespace {ns}"),
        (false, "nodes" | "namespaces" | "runtimeclasses") => String::new(),
        (false, _) => " (all namespaces)".to_string(),
    };
    format!("{} {group}{}{sub}{scope}", n.verb, n.resource)
}

/// Whether the existing namespace `ns` can be used: it exists (or cannot be read, which a
/// namespace-scoped identity often cannot: then its first object will tell).
async fn existing_namespace(client: &kube::Client, ns: &str) -> Result<(), String> {
    let api: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    match api.get(ns).await {
        Ok(n) if n.metadata.deletion_timestamp.is_some() => Err(format!(
            "--namespace {ns}: the namespace is being deleted\n  check: `kubectl get namespace {ns}`; name a namespace that stays"
        )),
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Err(format!(
            "--namespace {ns}: no such namespace (the run never creates or deletes a namespace it is given)\n  check: `kubectl get namespace {ns}`; create it, or leave --namespace out to let the run create its own"
        )),
        Err(_) => Ok(()),
    }
}
