//! Custom resources an add-on brings with its CRD (Calico's operator `Installation`): what the
//! cluster serves of them, read-only, by [`crate::api::custom`].

use serde_json::Value;

/// One custom resource and its objects.
#[derive(Debug, Clone)]
pub struct CustomResource {
    pub group: &'static str,
    pub version: &'static str,
    pub plural: &'static str,
    pub singular: &'static str,
    pub kind: &'static str,
    /// The objects, each a full object with `metadata.name` (cluster-scoped).
    pub objects: Vec<Value>,
}

impl CustomResource {
    /// `group/version`.
    pub fn group_version(&self) -> String {
        format!("{}/{}", self.group, self.version)
    }
}

/// The custom resources a cluster serves (none for most).
#[derive(Debug, Clone, Default)]
pub struct CustomResources(pub Vec<CustomResource>);

impl CustomResources {
    /// `(group, version)` of each served custom resource, for `/apis`.
    pub fn groups(&self) -> Vec<(&'static str, &'static str)> {
        self.0.iter().map(|r| (r.group, r.version)).collect()
    }
}
