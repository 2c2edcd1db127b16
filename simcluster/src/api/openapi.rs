//! OpenAPI v3 documents of the served group-versions: the paths of each resource (PATCH with
//! its group-version-kind and the `fieldValidation` parameter, so that `kubectl apply`'s strict
//! validation delegates to the server) and the complete schemas of its kinds, generated from
//! `k8s-openapi`'s v1.33 types (their `schemars` descriptions), for `kubectl explain` and for
//! the server's own unknown-field check ([`unknown_fields`]).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use k8s_openapi::schemars::JsonSchema;
use k8s_openapi::schemars::generate::{SchemaGenerator, SchemaSettings};
use serde_json::{Map, Value, json};

use crate::store::resources::{self, ResourceType};
fn gv_key(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

fn group_versions() -> Vec<(&'static str, &'static str)> {
    let mut out: Vec<(&'static str, &'static str)> = Vec::new();
    for r in resources::all() {
        if !out.contains(&(r.group, r.version)) {
            out.push((r.group, r.version));
        }
    }
    out
}

/// `/openapi/v3`: the index of per-group-version documents.
pub fn index(hash: &str) -> Value {
    let mut paths = Map::new();
    for (g, v) in group_versions() {
        let key = gv_key(g, v);
        paths.insert(
            key.clone(),
            json!({"serverRelativeURL": format!("/openapi/v3/{key}?hash={hash}")}),
        );
    }
    json!({"paths": paths})
}

/// The schema name (`io.k8s.api.core.v1.Pod`) of a served kind, registering its schema and
/// everything it references with the generator; None for a kind without a type.
fn register(generator: &mut SchemaGenerator, group: &str, kind: &str) -> Option<String> {
    use k8s_openapi::api::{
        apps, authentication, authorization, autoscaling, batch, coordination, core, discovery, networking, node, rbac,
        scheduling, storage,
    };
    fn add<T: JsonSchema>(generator: &mut SchemaGenerator) -> Option<String> {
        generator.subschema_for::<T>();
        Some(T::schema_name().into_owned())
    }
    match (group, kind) {
        ("", "Namespace") => add::<core::v1::Namespace>(generator),
        ("", "Node") => add::<core::v1::Node>(generator),
        ("", "Pod") => add::<core::v1::Pod>(generator),
        ("", "Service") => add::<core::v1::Service>(generator),
        ("", "Endpoints") => add::<core::v1::Endpoints>(generator),
        ("", "Secret") => add::<core::v1::Secret>(generator),
        ("", "ConfigMap") => add::<core::v1::ConfigMap>(generator),
        ("", "ServiceAccount") => add::<core::v1::ServiceAccount>(generator),
        ("", "Event") => add::<core::v1::Event>(generator),
        ("discovery.k8s.io", "EndpointSlice") => add::<discovery::v1::EndpointSlice>(generator),
        ("coordination.k8s.io", "Lease") => add::<coordination::v1::Lease>(generator),
        ("apps", "Deployment") => add::<apps::v1::Deployment>(generator),
        ("apps", "ReplicaSet") => add::<apps::v1::ReplicaSet>(generator),
        ("apps", "DaemonSet") => add::<apps::v1::DaemonSet>(generator),
        ("batch", "Job") => add::<batch::v1::Job>(generator),
        ("batch", "CronJob") => add::<batch::v1::CronJob>(generator),
        ("", "ResourceQuota") => add::<core::v1::ResourceQuota>(generator),
        ("scheduling.k8s.io", "PriorityClass") => add::<scheduling::v1::PriorityClass>(generator),
        ("node.k8s.io", "RuntimeClass") => add::<node::v1::RuntimeClass>(generator),
        ("storage.k8s.io", "CSINode") => add::<storage::v1::CSINode>(generator),
        ("networking.k8s.io", "NetworkPolicy") => add::<networking::v1::NetworkPolicy>(generator),
        ("authorization.k8s.io", "SelfSubjectAccessReview") => {
            add::<authorization::v1::SelfSubjectAccessReview>(generator)
        }
        ("authorization.k8s.io", "SelfSubjectRulesReview") => {
            add::<authorization::v1::SelfSubjectRulesReview>(generator)
        }
        ("autoscaling", "Scale") => add::<autoscaling::v1::Scale>(generator),
        ("authentication.k8s.io", "TokenRequest") => add::<authentication::v1::TokenRequest>(generator),
        ("rbac.authorization.k8s.io", "Role") => add::<rbac::v1::Role>(generator),
        ("rbac.authorization.k8s.io", "ClusterRole") => add::<rbac::v1::ClusterRole>(generator),
        ("rbac.authorization.k8s.io", "RoleBinding") => add::<rbac::v1::RoleBinding>(generator),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding") => add::<rbac::v1::ClusterRoleBinding>(generator),
        _ => None,
    }
}

/// Every schema of every served kind (and `autoscaling/v1` Scale), by name; the served kinds
/// carry `x-kubernetes-group-version-kind`.
fn schemas() -> &'static Map<String, Value> {
    static SCHEMAS: OnceLock<Map<String, Value>> = OnceLock::new();
    SCHEMAS.get_or_init(|| {
        let mut generator = SchemaSettings::openapi3().into_generator();
        let mut kinds: Vec<(String, Value)> = Vec::new();
        let gvks = resources::all().iter().map(|r| (r.group, r.version, r.kind)).chain([
            ("autoscaling", "v1", "Scale"),
            ("authentication.k8s.io", "v1", "TokenRequest"),
        ]);
        for (group, version, kind) in gvks {
            if let Some(name) = register(&mut generator, group, kind) {
                kinds.push((name, json!([{"group": group, "version": version, "kind": kind}])));
            }
        }
        let mut defs = generator.take_definitions(true);
        for (name, gvk) in kinds {
            if let Some(schema) = defs.get_mut(&name).and_then(Value::as_object_mut) {
                schema.insert("x-kubernetes-group-version-kind".into(), gvk);
            }
        }
        defs
    })
}

/// The schema of a served kind (or `Scale`, `TokenRequest`), for the protobuf transcoder.
pub(crate) fn kind_schema(group: &str, kind: &str) -> Option<&'static Value> {
    registry_schema_name(group, kind).and_then(|n| schemas().get(&n))
}

/// `schema` with its `$ref`s (and a leading `allOf`) followed.
pub(crate) fn resolved(schema: &'static Value) -> &'static Value {
    let mut schema = schema;
    for _ in 0..16 {
        if let Some(target) = ref_name(schema).and_then(|n| schemas().get(n)) {
            schema = target;
        } else if let Some(first) = schema.get("allOf").and_then(Value::as_array).and_then(|a| a.first()) {
            schema = first;
        } else {
            break;
        }
    }
    schema
}

/// The schema name behind a `$ref` (`#/components/schemas/NAME`).
fn ref_name(schema: &Value) -> Option<&str> {
    schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix("#/components/schemas/"))
}

/// `names` and every schema they reference, transitively.
fn reachable(roots: impl IntoIterator<Item = String>) -> BTreeSet<String> {
    fn refs(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                if let Some(name) = ref_name(v) {
                    out.push(name.to_string());
                }
                m.values().for_each(|x| refs(x, out));
            }
            Value::Array(a) => a.iter().for_each(|x| refs(x, out)),
            _ => {}
        }
    }
    let all = schemas();
    let mut seen = BTreeSet::new();
    let mut todo: Vec<String> = roots.into_iter().collect();
    while let Some(name) = todo.pop() {
        if let Some(schema) = all.get(&name)
            && seen.insert(name)
        {
            refs(schema, &mut todo);
        }
    }
    seen
}

fn schema_name(r: &ResourceType) -> Option<String> {
    registry_schema_name(r.group, r.kind)
}

fn registry_schema_name(group: &str, kind: &str) -> Option<String> {
    static NAMES: OnceLock<BTreeMap<(String, String), String>> = OnceLock::new();
    NAMES
        .get_or_init(|| {
            let mut generator = SchemaSettings::openapi3().into_generator();
            resources::all()
                .iter()
                .map(|r| (r.group, r.kind))
                .chain([("autoscaling", "Scale"), ("authentication.k8s.io", "TokenRequest")])
                .filter_map(|(g, k)| register(&mut generator, g, k).map(|n| ((g.to_string(), k.to_string()), n)))
                .collect()
        })
        .get(&(group.to_string(), kind.to_string()))
        .cloned()
}

fn operation(r: &ResourceType, action: &str, params: &[&str], kind: (&str, &str, &str)) -> Value {
    let parameters: Vec<Value> = params
        .iter()
        .map(|p| json!({"name": p, "in": "query", "schema": {"type": "string", "uniqueItems": true}}))
        .collect();
    let (group, version, kind_name) = kind;
    let mut op = json!({
        "operationId": format!("{action}{}", r.kind),
        "parameters": parameters,
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": {"group": group, "version": version, "kind": kind_name},
        "responses": {"200": {"description": "OK"}},
    });
    if let Some(name) = registry_schema_name(group, kind_name) {
        op["responses"]["200"]["content"] =
            json!({"application/json": {"schema": {"$ref": format!("#/components/schemas/{name}")}}});
    }
    op
}

/// `/openapi/v3/<api/v1 | apis/g/v>`: the document of one group-version, or None.
pub fn document(gv: &str) -> Option<Value> {
    let (group, version) = match gv.split('/').collect::<Vec<_>>().as_slice() {
        ["api", v] => ("", *v),
        ["apis", g, v] => (*g, *v),
        _ => return None,
    };
    let resources = resources::in_group_version(group, version)?;
    let mut paths = Map::new();
    let mut roots = Vec::new();
    const WRITE: &[&str] = &["dryRun", "fieldManager", "fieldValidation", "pretty"];
    const PATCH: &[&str] = &["dryRun", "fieldManager", "fieldValidation", "force", "pretty"];
    for r in resources {
        let gvk = (r.group, r.version, r.kind);
        roots.extend(schema_name(r));
        let prefix = r.gv_path();
        let collection = if r.namespaced {
            format!("{prefix}/namespaces/{{namespace}}/{}", r.plural)
        } else {
            format!("{prefix}/{}", r.plural)
        };
        if r.create_only() {
            paths.insert(collection, json!({"post": operation(r, "post", WRITE, gvk)}));
            continue;
        }
        paths.insert(
            collection.clone(),
            json!({"get": operation(r, "list", &["labelSelector", "fieldSelector", "watch"], gvk), "post": operation(r, "post", WRITE, gvk)}),
        );
        paths.insert(
            format!("{collection}/{{name}}"),
            json!({
                "get": operation(r, "get", &[], gvk),
                "put": operation(r, "put", WRITE, gvk),
                "patch": operation(r, "patch", PATCH, gvk),
                "delete": operation(r, "delete", &["dryRun", "gracePeriodSeconds", "propagationPolicy"], gvk),
            }),
        );
        if r.has_subresource("token") {
            roots.extend(registry_schema_name("authentication.k8s.io", "TokenRequest"));
            paths.insert(
                format!("{collection}/{{name}}/token"),
                json!({"post": operation(r, "post", WRITE, ("authentication.k8s.io", "v1", "TokenRequest"))}),
            );
        }
        for sub in r.subresources.iter().filter(|s| matches!(**s, "status" | "scale")) {
            let sub_gvk = if *sub == "scale" {
                roots.extend(registry_schema_name("autoscaling", "Scale"));
                ("autoscaling", "v1", "Scale")
            } else {
                gvk
            };
            paths.insert(
                format!("{collection}/{{name}}/{sub}"),
                json!({
                    "get": operation(r, "get", &[], sub_gvk),
                    "put": operation(r, "put", WRITE, sub_gvk),
                    "patch": operation(r, "patch", PATCH, sub_gvk),
                }),
            );
        }
    }
    let all = schemas();
    let components: Map<String, Value> = reachable(roots)
        .into_iter()
        .filter_map(|name| all.get(&name).map(|s| (name, s.clone())))
        .collect();
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "unversioned"},
        "paths": paths,
        "components": {"schemas": components},
    }))
}

/// The served document of a group-version, serialised once.
pub fn document_bytes(gv: &str) -> Option<bytes::Bytes> {
    static DOCS: OnceLock<BTreeMap<String, bytes::Bytes>> = OnceLock::new();
    DOCS.get_or_init(|| {
        group_versions()
            .into_iter()
            .filter_map(|(g, v)| {
                let key = gv_key(g, v);
                document(&key).map(|d| (key, bytes::Bytes::from(d.to_string())))
            })
            .collect()
    })
    .get(gv)
    .cloned()
}

/// A field of an object that its kind's schema does not declare.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownField {
    /// As upstream names it: `spec.containers[0].foo`.
    pub path: String,
    /// Where it is, as a JSON pointer.
    pub pointer: String,
}

/// The fields of `obj` that the schema of `rt`'s kind does not declare, in document order
/// (empty for kinds without a schema). Maps and `x-kubernetes-preserve-unknown-fields`
/// subtrees take any keys.
pub fn unknown_fields(rt: &ResourceType, obj: &Value) -> Vec<UnknownField> {
    let mut out = Vec::new();
    if let Some(schema) = schema_name(rt).and_then(|n| schemas().get(&n)) {
        walk(schemas(), schema, obj, "", "", &mut out, 0);
    }
    out
}

fn walk(
    defs: &Map<String, Value>,
    schema: &Value,
    v: &Value,
    path: &str,
    pointer: &str,
    out: &mut Vec<UnknownField>,
    depth: usize,
) {
    if depth > 64 {
        return;
    }
    if let Some(target) = ref_name(schema).and_then(|n| defs.get(n)) {
        return walk(defs, target, v, path, pointer, out, depth + 1);
    }
    if let Some(first) = schema.get("allOf").and_then(Value::as_array).and_then(|a| a.first()) {
        return walk(defs, first, v, path, pointer, out, depth + 1);
    }
    if schema.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true)) {
        return;
    }
    let escape = |k: &str| k.replace('~', "~0").replace('/', "~1");
    match v {
        Value::Object(map) => {
            let props = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties").filter(|a| a.is_object());
            if props.is_none() && additional.is_none() {
                return;
            }
            for (k, value) in map {
                let child_path = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                let child_pointer = format!("{pointer}/{}", escape(k));
                match props.and_then(|p| p.get(k)).or(additional) {
                    Some(s) => walk(defs, s, value, &child_path, &child_pointer, out, depth + 1),
                    None => out.push(UnknownField {
                        path: child_path,
                        pointer: child_pointer,
                    }),
                }
            }
        }
        Value::Array(items) => {
            if let Some(item) = schema.get("items") {
                for (i, x) in items.iter().enumerate() {
                    walk(
                        defs,
                        item,
                        x,
                        &format!("{path}[{i}]"),
                        &format!("{pointer}/{i}"),
                        out,
                        depth + 1,
                    );
                }
            }
        }
        _ => {}
    }
}

/// Removes the fields at `pointers` (as [`unknown_fields`] found them), deepest first.
pub fn prune(obj: &mut Value, fields: &[UnknownField]) {
    for f in fields.iter().rev() {
        let Some((parent, key)) = f.pointer.rsplit_once('/') else {
            continue;
        };
        let key = key.replace("~1", "/").replace("~0", "~");
        if let Some(map) = obj.pointer_mut(parent).and_then(Value::as_object_mut) {
            map.remove(&key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_group_version_has_patch_with_field_validation() {
        let idx = index("h");
        let paths = idx["paths"].as_object().cloned().unwrap_or_default();
        assert!(paths.contains_key("api/v1"));
        assert!(paths.contains_key("apis/apps/v1"));
        for key in paths.keys() {
            let doc = document(key).expect("document");
            let patches: Vec<&Value> = doc["paths"]
                .as_object()
                .into_iter()
                .flatten()
                .filter_map(|(_, p)| p.get("patch"))
                .collect();
            // Reviews are create-only: no PATCH to verify against.
            if key == "apis/authorization.k8s.io/v1" {
                assert!(patches.is_empty(), "{key}");
                continue;
            }
            assert!(!patches.is_empty(), "{key}");
            for p in patches {
                assert!(p["x-kubernetes-group-version-kind"]["kind"].is_string());
                assert!(
                    p["parameters"]
                        .as_array()
                        .is_some_and(|ps| ps.iter().any(|x| x["name"] == "fieldValidation"))
                );
            }
        }
        assert!(document("apis/batch/v1").is_some());
        assert!(document("apis/rbac.authorization.k8s.io/v1").is_some());
        assert!(document("apis/policy/v1").is_none());
        assert!(document("garbage").is_none());
    }

    fn doc_schema<'a>(doc: &'a Value, name: &str) -> &'a Value {
        &doc["components"]["schemas"][name]
    }

    #[test]
    fn documents_carry_the_complete_schemas_of_their_kinds() {
        let core = document("api/v1").expect("core");
        let pod = doc_schema(&core, "io.k8s.api.core.v1.Pod");
        assert_eq!(
            pod["x-kubernetes-group-version-kind"],
            json!([{"group": "", "version": "v1", "kind": "Pod"}])
        );
        let os = doc_schema(&core, "io.k8s.api.core.v1.PodOS");
        assert!(os["properties"]["name"]["description"].is_string(), "{os}");
        assert_eq!(os["required"], json!(["name"]));
        // Described references are wrapped as upstream does.
        let spec_os = &doc_schema(&core, "io.k8s.api.core.v1.PodSpec")["properties"]["os"];
        assert_eq!(
            spec_os["allOf"][0]["$ref"],
            "#/components/schemas/io.k8s.api.core.v1.PodOS"
        );
        assert!(doc_schema(&core, "io.k8s.api.apps.v1.Deployment").is_null());

        let apps = document("apis/apps/v1").expect("apps");
        let strategy = doc_schema(&apps, "io.k8s.api.apps.v1.DeploymentStrategy");
        assert!(strategy["properties"]["rollingUpdate"].is_object(), "{strategy}");
        assert_eq!(
            doc_schema(&apps, "io.k8s.api.autoscaling.v1.Scale")["x-kubernetes-group-version-kind"][0]["group"],
            "autoscaling"
        );
        assert!(apps["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"]["patch"].is_object());

        let batch = document("apis/batch/v1").expect("batch");
        let job_spec = doc_schema(&batch, "io.k8s.api.batch.v1.JobSpec");
        assert_eq!(job_spec["properties"]["backoffLimit"]["type"], "integer");
        // Every reference resolves inside its document.
        for doc in [&core, &apps, &batch] {
            let text = doc.to_string();
            for r in text.split("\"$ref\":\"#/components/schemas/").skip(1) {
                let name = r.split('"').next().unwrap_or("");
                assert!(doc["components"]["schemas"].get(name).is_some(), "{name} unresolved");
            }
        }
    }

    #[test]
    fn unknown_fields_are_named_as_upstream_names_them() {
        let pods = resources::core("pods");
        let mut pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"any": "x"}, "colour": "red"},
            "spec": {"os": {"name": "linux"}, "nodeSelecter": {"a": "b"},
                "containers": [{"name": "c", "image": "i", "resources": {"limits": {"cpu": "1"}}, "imagePullPolicy": "Always", "bogus": 1}]}});
        let unknown = unknown_fields(pods, &pod);
        let paths: Vec<&str> = unknown.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            paths,
            ["metadata.colour", "spec.nodeSelecter", "spec.containers[0].bogus"]
        );
        prune(&mut pod, &unknown);
        assert!(unknown_fields(pods, &pod).is_empty());
        assert_eq!(pod["spec"]["containers"][0]["image"], "i");
        assert_eq!(pod["metadata"]["labels"]["any"], "x");
        let job =
            json!({"spec": {"backoffLimit": 1, "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}});
        assert!(unknown_fields(resources::named("batch", "jobs"), &job).is_empty());
    }
}
