//! OpenAPI v3 documents, generated from the registry: enough for `kubectl apply`'s default
//! (strict) validation to find each kind's PATCH operation with its group-version-kind and
//! the `fieldValidation` parameter, so that it delegates validation to the server.

use serde_json::{Map, Value, json};

use crate::registry::{self, ResourceType};

fn gv_key(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

fn group_versions() -> Vec<(&'static str, &'static str)> {
    let mut out: Vec<(&'static str, &'static str)> = Vec::new();
    for r in registry::all() {
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

fn schema_name(r: &ResourceType) -> String {
    let group = if r.group.is_empty() {
        "core".to_string()
    } else {
        r.group.replace('.', "_")
    };
    format!("io.k8s.api.{group}.{}.{}", r.version, r.kind)
}

fn operation(r: &ResourceType, action: &str, params: &[&str]) -> Value {
    let parameters: Vec<Value> = params
        .iter()
        .map(|p| json!({"name": p, "in": "query", "schema": {"type": "string", "uniqueItems": true}}))
        .collect();
    json!({
        "operationId": format!("{action}{}", r.kind),
        "parameters": parameters,
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": {"group": r.group, "version": r.version, "kind": r.kind},
        "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{}", schema_name(r))}}}}},
    })
}

/// `/openapi/v3/<api/v1 | apis/g/v>`: the document of one group-version, or None.
pub fn document(gv: &str) -> Option<Value> {
    let (group, version) = match gv.split('/').collect::<Vec<_>>().as_slice() {
        ["api", v] => ("", *v),
        ["apis", g, v] => (*g, *v),
        _ => return None,
    };
    let resources = registry::in_group_version(group, version)?;
    let mut paths = Map::new();
    let mut schemas = Map::new();
    const WRITE: &[&str] = &["dryRun", "fieldManager", "fieldValidation", "pretty"];
    for r in resources {
        let prefix = r.gv_path();
        let collection = if r.namespaced {
            format!("{prefix}/namespaces/{{namespace}}/{}", r.plural)
        } else {
            format!("{prefix}/{}", r.plural)
        };
        paths.insert(
            collection.clone(),
            json!({"get": operation(r, "list", &["labelSelector", "fieldSelector", "watch"]), "post": operation(r, "post", WRITE)}),
        );
        paths.insert(
            format!("{collection}/{{name}}"),
            json!({
                "get": operation(r, "get", &[]),
                "put": operation(r, "put", WRITE),
                "patch": operation(r, "patch", &["dryRun", "fieldManager", "fieldValidation", "force", "pretty"]),
                "delete": operation(r, "delete", &["dryRun", "gracePeriodSeconds", "propagationPolicy"]),
            }),
        );
        schemas.insert(
            schema_name(r),
            json!({
                "type": "object",
                "x-kubernetes-group-version-kind": [{"group": r.group, "version": r.version, "kind": r.kind}],
                "properties": {
                    "apiVersion": {"type": "string"},
                    "kind": {"type": "string"},
                    "metadata": {"type": "object"},
                },
            }),
        );
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "unversioned"},
        "paths": paths,
        "components": {"schemas": schemas},
    }))
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
        assert!(document("apis/rbac.authorization.k8s.io/v1").is_none());
        assert!(document("garbage").is_none());
    }
}
