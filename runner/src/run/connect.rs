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
    if let Err(missing) = preflight(&target.client, &format!("mixcheck-{run_id}")).await {
        target.stop().await;
        return Err((Code::Unreachable, missing, seen));
    }
    match facts::collect(&target.client, plan.network_mode.as_deref(), plan.egress).await {
        Ok(f) => Ok((target, f)),
        Err(e) => {
            target.stop().await;
            Err((Code::Unreachable, format!("cannot read the cluster's facts: {e}"), seen))
        }
    }
}

/// Why a run could not start: its exit code, the reason, and the target when it answered.
pub(crate) type Refused = (Code, String, Option<mixcheck_reports::Target>);

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
