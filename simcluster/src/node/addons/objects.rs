//! The plain API objects every add-on is assembled from — namespaces, ConfigMaps, service
//! accounts, `apps` resources — and the [`Object`] constructor that the upstream manifests and
//! the managed platforms' objects share.

use serde_json::{Value, json};

use super::Object;
use crate::store::resources::{self, ResourceType};

pub(super) fn object(resource: &'static ResourceType, namespace: &str, value: Value) -> Object {
    Object {
        resource,
        namespace: namespace.to_string(),
        value,
    }
}

pub(super) fn apps(plural: &str) -> &'static ResourceType {
    resources::named("apps", plural)
}

pub(super) fn service_account(ns: &str, name: &str) -> Object {
    object(
        resources::core("serviceaccounts"),
        ns,
        json!({"metadata": {"name": name}}),
    )
}

pub(super) fn namespace(name: &str, labels: Value) -> Object {
    object(
        resources::core("namespaces"),
        "",
        json!({"metadata": {"name": name, "labels": labels}}),
    )
}

pub(super) fn config_map(ns: &str, name: &str, labels: Value, data: Value) -> Object {
    object(
        resources::core("configmaps"),
        ns,
        json!({"metadata": {"name": name, "labels": labels}, "data": data}),
    )
}
