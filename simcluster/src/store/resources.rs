//! The static table of API resources the bundled cluster serves; discovery, OpenAPI and
//! tables are generated from it.

/// How `kubectl get` renders a kind (server-side `Table` columns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Printer {
    Node,
    Pod,
    Service,
    Deployment,
    ReplicaSet,
    DaemonSet,
    Job,
    Event,
    Namespace,
    /// Roles and ClusterRoles: `NAME CREATED AT`.
    Role,
    /// RoleBindings and ClusterRoleBindings: `NAME ROLE AGE` (wide: users, groups, service accounts).
    RoleBinding,
    Generic,
}

/// One served resource, e.g. `pods` in the core group.
#[derive(Debug, PartialEq, Eq)]
pub struct ResourceType {
    pub group: &'static str,
    pub version: &'static str,
    pub plural: &'static str,
    pub singular: &'static str,
    pub kind: &'static str,
    pub namespaced: bool,
    pub short_names: &'static [&'static str],
    pub categories: &'static [&'static str],
    /// Subresources served under `<plural>/<name>/<sub>`.
    pub subresources: &'static [&'static str],
    /// Whether `metadata.generation` tracks spec changes.
    pub has_spec: bool,
    /// Field selectors beyond `metadata.name` / `metadata.namespace`.
    pub field_selectors: &'static [&'static str],
    pub printer: Printer,
    /// The verbs served (discovery lists them; others answer 405).
    pub verbs: &'static [&'static str],
}

impl ResourceType {
    /// `v1` or `apps/v1`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// `pods` or `deployments.apps`, as upstream messages name a resource.
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.plural.to_string()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    pub fn has_subresource(&self, sub: &str) -> bool {
        self.subresources.contains(&sub)
    }

    /// Whether writes to the main resource ignore `status` (a status subresource exists).
    pub fn has_status(&self) -> bool {
        self.has_subresource("status")
    }

    /// The URL prefix of the group-version: `/api/v1` or `/apis/apps/v1`.
    pub fn gv_path(&self) -> String {
        if self.group.is_empty() {
            format!("/api/{}", self.version)
        } else {
            format!("/apis/{}/{}", self.group, self.version)
        }
    }

    /// Whether the kind is only ever created (reviews: the answer comes back, nothing is stored).
    pub fn create_only(&self) -> bool {
        self.verbs == CREATE_ONLY
    }

    /// Whether `field` is a supported field-selector label for this kind.
    pub fn supports_field(&self, field: &str) -> bool {
        matches!(field, "metadata.name" | "metadata.namespace") || self.field_selectors.contains(&field)
    }
}

const STD_VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

/// The verbs of review kinds (SelfSubjectAccessReview, …): create only.
const CREATE_ONLY: &[&str] = &["create"];

macro_rules! resource {
    ($group:expr, $version:expr, $plural:expr, $singular:expr, $kind:expr, $ns:expr,
     short: [$($short:expr),*], cat: [$($cat:expr),*], sub: [$($sub:expr),*],
     spec: $spec:expr, fields: [$($field:expr),*], printer: $printer:ident) => {
        resource!($group, $version, $plural, $singular, $kind, $ns,
            short: [$($short),*], cat: [$($cat),*], sub: [$($sub),*],
            spec: $spec, fields: [$($field),*], printer: $printer, verbs: STD_VERBS)
    };
    ($group:expr, $version:expr, $plural:expr, $singular:expr, $kind:expr, $ns:expr,
     short: [$($short:expr),*], cat: [$($cat:expr),*], sub: [$($sub:expr),*],
     spec: $spec:expr, fields: [$($field:expr),*], printer: $printer:ident, verbs: $verbs:expr) => {
        ResourceType {
            group: $group,
            version: $version,
            plural: $plural,
            singular: $singular,
            kind: $kind,
            namespaced: $ns,
            short_names: &[$($short),*],
            categories: &[$($cat),*],
            subresources: &[$($sub),*],
            has_spec: $spec,
            field_selectors: &[$($field),*],
            printer: Printer::$printer,
            verbs: $verbs,
        }
    };
}

static RESOURCES: &[ResourceType] = &[
    resource!("", "v1", "namespaces", "namespace", "Namespace", false,
        short: ["ns"], cat: [], sub: ["status", "finalize"], spec: false,
        fields: ["status.phase"], printer: Namespace),
    resource!("", "v1", "nodes", "node", "Node", false,
        short: ["no"], cat: [], sub: ["status", "proxy"], spec: true,
        fields: ["spec.unschedulable"], printer: Node),
    resource!("", "v1", "pods", "pod", "Pod", true,
        short: ["po"], cat: ["all"], sub: ["status", "log", "exec", "attach", "portforward", "binding"], spec: false,
        fields: ["spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
                 "spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName"],
        printer: Pod),
    resource!("", "v1", "services", "service", "Service", true,
        short: ["svc"], cat: ["all"], sub: ["status"], spec: false,
        fields: ["spec.clusterIP", "spec.type"], printer: Service),
    resource!("", "v1", "endpoints", "endpoints", "Endpoints", true,
        short: ["ep"], cat: [], sub: [], spec: false, fields: [], printer: Generic),
    resource!("", "v1", "secrets", "secret", "Secret", true,
        short: [], cat: [], sub: [], spec: false, fields: ["type"], printer: Generic),
    resource!("", "v1", "configmaps", "configmap", "ConfigMap", true,
        short: ["cm"], cat: [], sub: [], spec: false, fields: [], printer: Generic),
    resource!("", "v1", "serviceaccounts", "serviceaccount", "ServiceAccount", true,
        short: ["sa"], cat: [], sub: ["token"], spec: false, fields: [], printer: Generic),
    resource!("", "v1", "events", "event", "Event", true,
        short: ["ev"], cat: [], sub: [], spec: false,
        fields: ["involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
                 "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
                 "involvedObject.fieldPath", "reason", "reportingComponent", "source", "type"],
        printer: Event),
    resource!("discovery.k8s.io", "v1", "endpointslices", "endpointslice", "EndpointSlice", true,
        short: [], cat: [], sub: [], spec: false, fields: ["addressType"], printer: Generic),
    resource!("networking.k8s.io", "v1", "networkpolicies", "networkpolicy", "NetworkPolicy", true,
        short: ["netpol"], cat: [], sub: [], spec: true, fields: [], printer: Generic),
    resource!("coordination.k8s.io", "v1", "leases", "lease", "Lease", true,
        short: [], cat: [], sub: [], spec: false, fields: [], printer: Generic),
    resource!("apps", "v1", "deployments", "deployment", "Deployment", true,
        short: ["deploy"], cat: ["all"], sub: ["status", "scale"], spec: true, fields: [],
        printer: Deployment),
    resource!("apps", "v1", "replicasets", "replicaset", "ReplicaSet", true,
        short: ["rs"], cat: ["all"], sub: ["status", "scale"], spec: true, fields: ["status.replicas"],
        printer: ReplicaSet),
    resource!("apps", "v1", "daemonsets", "daemonset", "DaemonSet", true,
        short: ["ds"], cat: ["all"], sub: ["status"], spec: true, fields: [], printer: DaemonSet),
    resource!("batch", "v1", "jobs", "job", "Job", true,
        short: [], cat: ["all"], sub: ["status"], spec: true, fields: ["status.successful"], printer: Job),
    resource!("batch", "v1", "cronjobs", "cronjob", "CronJob", true,
        short: ["cj"], cat: ["all"], sub: ["status"], spec: true, fields: [], printer: Generic),
    resource!("", "v1", "resourcequotas", "resourcequota", "ResourceQuota", true,
        short: ["quota"], cat: [], sub: ["status"], spec: false, fields: [], printer: Generic),
    resource!("scheduling.k8s.io", "v1", "priorityclasses", "priorityclass", "PriorityClass", false,
        short: ["pc"], cat: [], sub: [], spec: false, fields: [], printer: Generic),
    resource!("authorization.k8s.io", "v1", "selfsubjectaccessreviews", "selfsubjectaccessreview",
        "SelfSubjectAccessReview", false,
        short: [], cat: [], sub: [], spec: false, fields: [], printer: Generic, verbs: CREATE_ONLY),
    resource!("authorization.k8s.io", "v1", "selfsubjectrulesreviews", "selfsubjectrulesreview",
        "SelfSubjectRulesReview", false,
        short: [], cat: [], sub: [], spec: false, fields: [], printer: Generic, verbs: CREATE_ONLY),
    resource!("node.k8s.io", "v1", "runtimeclasses", "runtimeclass", "RuntimeClass", false,
        short: [], cat: [], sub: [], spec: false, fields: [], printer: Generic),
    resource!("storage.k8s.io", "v1", "csinodes", "csinode", "CSINode", false,
        short: [], cat: [], sub: [], spec: false, fields: [], printer: Generic),
    resource!("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "clusterrolebinding",
        "ClusterRoleBinding", false,
        short: [], cat: [], sub: [], spec: false, fields: [], printer: RoleBinding),
    resource!("rbac.authorization.k8s.io", "v1", "clusterroles", "clusterrole", "ClusterRole", false,
        short: [], cat: [], sub: [], spec: false, fields: [], printer: Role),
    resource!("rbac.authorization.k8s.io", "v1", "rolebindings", "rolebinding", "RoleBinding", true,
        short: [], cat: [], sub: [], spec: false, fields: [], printer: RoleBinding),
    resource!("rbac.authorization.k8s.io", "v1", "roles", "role", "Role", true,
        short: [], cat: [], sub: [], spec: false, fields: [], printer: Role),
];

/// Every served resource.
pub fn all() -> &'static [ResourceType] {
    RESOURCES
}

/// The resource at `group/version/plural`.
pub fn lookup(group: &str, version: &str, plural: &str) -> Option<&'static ResourceType> {
    RESOURCES
        .iter()
        .find(|r| r.group == group && r.version == version && r.plural == plural)
}

/// The resources of one group-version, or None when it is not served.
pub fn in_group_version(group: &str, version: &str) -> Option<Vec<&'static ResourceType>> {
    let found: Vec<&'static ResourceType> = RESOURCES
        .iter()
        .filter(|r| r.group == group && r.version == version)
        .collect();
    (!found.is_empty()).then_some(found)
}

/// The resource serving `kind` in `apiVersion` (e.g. `apps/v1`, `Deployment`).
pub fn by_kind(api_version: &str, kind: &str) -> Option<&'static ResourceType> {
    RESOURCES
        .iter()
        .find(|r| r.kind == kind && r.api_version() == api_version)
}

/// Well-known resources, for code that needs one by name.
pub fn core(plural: &str) -> &'static ResourceType {
    named("", plural)
}

/// The resource `plural` in `group` (first version served).
pub fn named(group: &str, plural: &str) -> &'static ResourceType {
    RESOURCES
        .iter()
        .find(|r| r.group == group && r.plural == plural)
        .unwrap_or_else(|| panic_unknown(group, plural))
}

#[cold]
fn panic_unknown(group: &str, plural: &str) -> ! {
    // Only reachable through a programming error: every caller names a resource from the table.
    panic!("resource {plural}.{group} is not in the registry")
}

/// The API groups and their versions, in discovery order.
pub fn groups() -> Vec<(&'static str, Vec<&'static str>)> {
    let mut out: Vec<(&'static str, Vec<&'static str>)> = Vec::new();
    for r in RESOURCES.iter().filter(|r| !r.group.is_empty()) {
        match out.iter_mut().find(|(g, _)| *g == r.group) {
            Some((_, versions)) if !versions.contains(&r.version) => versions.push(r.version),
            Some(_) => {}
            None => out.push((r.group, vec![r.version])),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_resource_is_unique_and_findable() {
        for r in all() {
            assert_eq!(lookup(r.group, r.version, r.plural), Some(r));
            assert_eq!(by_kind(&r.api_version(), r.kind), Some(r));
        }
        let mut shorts: Vec<_> = all().iter().flat_map(|r| r.short_names).collect();
        let n = shorts.len();
        shorts.sort();
        shorts.dedup();
        assert_eq!(shorts.len(), n, "duplicate short names");
    }

    #[test]
    fn groups_are_listed_once() {
        let groups = groups();
        assert!(groups.iter().any(|(g, v)| *g == "apps" && v == &["v1"]));
        // networking.k8s.io serves NetworkPolicy (the network-policy suite, issue #38).
        assert_eq!(groups.len(), 10);
        assert!(groups.iter().any(|(g, v)| *g == "networking.k8s.io" && v == &["v1"]));
        assert!(groups.iter().any(|(g, v)| *g == "storage.k8s.io" && v == &["v1"]));
        assert!(groups.iter().any(|(g, v)| *g == "batch" && v == &["v1"]));
        assert!(
            groups
                .iter()
                .any(|(g, v)| *g == "rbac.authorization.k8s.io" && v == &["v1"])
        );
    }

    #[test]
    fn qualified_names() {
        assert_eq!(core("pods").qualified(), "pods");
        assert_eq!(named("apps", "deployments").qualified(), "deployments.apps");
        assert_eq!(named("apps", "deployments").gv_path(), "/apis/apps/v1");
    }
}
