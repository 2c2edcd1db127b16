//! Legacy API discovery documents (`/api`, `/apis`, per group-version resource lists), generated
//! from the registry.

use serde_json::{Value, json};

use crate::store::resources::{self, ResourceType};

/// `/api`: the core group's versions.
pub fn core_versions() -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": ""}],
    })
}

fn group_doc(name: &str, versions: &[&str]) -> Value {
    let versions: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{name}/{v}"), "version": v}))
        .collect();
    let preferred = versions.first().cloned().unwrap_or(Value::Null);
    json!({"name": name, "versions": versions, "preferredVersion": preferred})
}

#[cfg(test)] // used by the tests only
/// `/apis`: the named groups.
pub fn group_list() -> Value {
    group_list_with(&[])
}

/// `/apis` with the groups of the cluster's custom resources (`(group, version)`) after the
/// built-in ones.
pub fn group_list_with(custom: &[(&str, &str)]) -> Value {
    let groups: Vec<Value> = served_groups()
        .iter()
        .map(|(name, versions)| group_doc(name, versions))
        .chain(custom.iter().map(|(g, v)| group_doc(g, &[v])))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// The stored resources' groups and the resource metrics API (served, as an aggregated API
/// would be, by [`crate::api::metrics`]).
fn served_groups() -> Vec<(&'static str, Vec<&'static str>)> {
    let mut groups = resources::groups();
    groups.push((super::metrics::GROUP, vec![super::metrics::VERSION]));
    groups
}

/// `/apis/<group>`: one group, or None when it is not served.
pub fn group(name: &str) -> Option<Value> {
    served_groups()
        .into_iter()
        .find(|(g, _)| *g == name)
        .map(|(g, versions)| {
            let mut doc = group_doc(g, &versions);
            if let Some(obj) = doc.as_object_mut() {
                obj.insert("kind".into(), json!("APIGroup"));
                obj.insert("apiVersion".into(), json!("v1"));
            }
            doc
        })
}

fn verbs_for_sub(sub: &str) -> &'static [&'static str] {
    match sub {
        "status" => &["get", "patch", "update"],
        "log" => &["get"],
        "exec" | "attach" | "portforward" => &["create", "get"],
        "binding" | "token" => &["create"],
        "finalize" => &["update"],
        "proxy" => &["create", "delete", "get", "patch", "update"],
        "scale" => &["get", "patch", "update"],
        _ => &["get"],
    }
}

fn resource_entry(r: &ResourceType) -> Value {
    json!({
        "name": r.plural,
        "singularName": r.singular,
        "namespaced": r.namespaced,
        "kind": r.kind,
        "verbs": r.verbs,
        "shortNames": r.short_names,
        "categories": r.categories,
    })
}

/// `/api/v1` or `/apis/<group>/<version>`: the resources of a group-version.
pub fn resource_list(group: &str, version: &str) -> Option<Value> {
    if (group, version) == (super::metrics::GROUP, super::metrics::VERSION) {
        return Some(super::metrics::resource_list());
    }
    let resources = resources::in_group_version(group, version)?;
    let mut entries = Vec::new();
    for r in resources {
        let mut entry = resource_entry(r);
        if r.short_names.is_empty()
            && let Some(obj) = entry.as_object_mut()
        {
            obj.remove("shortNames");
        }
        if r.categories.is_empty()
            && let Some(obj) = entry.as_object_mut()
        {
            obj.remove("categories");
        }
        entries.push(entry);
        for sub in r.subresources {
            let kind = match *sub {
                "binding" => "Binding",
                "token" => "TokenRequest",
                "scale" => "Scale",
                "log" | "exec" | "attach" | "portforward" | "proxy" => match *sub {
                    "portforward" => "PodPortForwardOptions",
                    "exec" => "PodExecOptions",
                    "attach" => "PodAttachOptions",
                    "proxy" => "NodeProxyOptions",
                    _ => "Pod",
                },
                _ => r.kind,
            };
            let mut entry = json!({
                "name": format!("{}/{sub}", r.plural),
                "singularName": "",
                "namespaced": r.namespaced,
                "kind": kind,
                "verbs": verbs_for_sub(sub),
            });
            // The scale subresource answers in autoscaling/v1, whatever the parent's group.
            if *sub == "scale" {
                entry["group"] = json!("autoscaling");
                entry["version"] = json!("v1");
            }
            // TokenRequest is an authentication.k8s.io/v1 kind.
            if *sub == "token" {
                entry["group"] = json!("authentication.k8s.io");
                entry["version"] = json!("v1");
            }
            entries.push(entry);
        }
    }
    let group_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Some(json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": entries,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_list_has_pods_with_subresources() {
        let doc = resource_list("", "v1").expect("core");
        let names: Vec<&str> = doc["resources"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| r["name"].as_str())
            .collect();
        for expected in [
            "pods",
            "pods/log",
            "pods/exec",
            "pods/status",
            "pods/binding",
            "nodes/status",
            "namespaces",
        ] {
            assert!(names.contains(&expected), "{expected} missing from {names:?}");
        }
        let pods = &doc["resources"][names.iter().position(|n| *n == "pods").unwrap_or(0)];
        assert_eq!(pods["shortNames"], json!(["po"]));
        assert_eq!(pods["categories"], json!(["all"]));
    }

    #[test]
    fn groups_and_unknowns() {
        let list = group_list();
        assert!(
            list["groups"]
                .as_array()
                .is_some_and(|g| g.iter().any(|g| g["name"] == "apps"))
        );
        assert!(group("apps").is_some());
        assert!(group("batch").is_some());
        assert!(group("rbac.authorization.k8s.io").is_some());
        assert!(group("policy").is_none());
        assert!(resource_list("apps", "v2").is_none());
    }

    #[test]
    fn rbac_kinds_and_the_token_subresource_are_listed() {
        let doc = resource_list("rbac.authorization.k8s.io", "v1").expect("rbac");
        let entries = doc["resources"].as_array().cloned().unwrap_or_default();
        let names: Vec<(&str, bool)> = entries
            .iter()
            .filter_map(|r| Some((r["name"].as_str()?, r["namespaced"].as_bool()?)))
            .collect();
        assert_eq!(
            names,
            [
                ("clusterrolebindings", false),
                ("clusterroles", false),
                ("rolebindings", true),
                ("roles", true)
            ]
        );
        let core = resource_list("", "v1").expect("core");
        let token = core["resources"]
            .as_array()
            .and_then(|r| r.iter().find(|e| e["name"] == "serviceaccounts/token"))
            .cloned()
            .expect("serviceaccounts/token");
        assert_eq!(token["kind"], "TokenRequest");
        assert_eq!(token["group"], "authentication.k8s.io");
        assert_eq!(token["verbs"], json!(["create"]));
    }
}
