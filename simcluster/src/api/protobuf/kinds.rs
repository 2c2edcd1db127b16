//! The `k8s-pb` message type of each served kind (k8s-pb 0.8 is generated from the Kubernetes
//! 1.33 protos, the version of the `k8s-openapi` types the schemas come from).

use prost::Message;
use serde_json::Value;

use super::{ProtobufError, debug_text, transcode};
use crate::api::openapi;

/// Decodes `raw` as a `T` and transcodes it into JSON with the schema of `group`/`kind`.
fn transcoded<T: Message + Default + std::fmt::Debug>(
    group: &str,
    kind: &str,
    raw: &[u8],
) -> Result<Value, ProtobufError> {
    let message = T::decode(raw).map_err(|e| ProtobufError::Malformed(format!("the {kind} object: {e}")))?;
    let schema =
        openapi::kind_schema(group, kind).ok_or_else(|| ProtobufError::UnsupportedKind(format!("{group}/{kind}")))?;
    let tree = debug_text::parse(&format!("{message:?}"))
        .map_err(|e| ProtobufError::Malformed(format!("the {kind} object: {e}")))?;
    transcode::to_json(&tree, schema).map_err(|e| ProtobufError::Malformed(format!("the {kind} object: {e}")))
}

macro_rules! kinds {
    ($( ($group:literal, $version:literal, $kind:literal) => $ty:ty, )*) => {
        /// The JSON of a `group/version` `kind` object encoded in `raw`; None for a kind
        /// without a `k8s-pb` type here.
        pub fn decode(group: &str, version: &str, kind: &str, raw: &[u8]) -> Option<Result<Value, ProtobufError>> {
            match (group, version, kind) {
                $( ($group, $version, $kind) => Some(transcoded::<$ty>(group, kind, raw)), )*
                _ => None,
            }
        }

        /// Every kind with a `k8s-pb` type.
        #[cfg(test)]
        pub const KINDS: &[(&str, &str, &str)] = &[$( ($group, $version, $kind), )*];
    };
}

use k8s_pb::api::{
    apps, authentication, authorization, autoscaling, batch, coordination, core, discovery, networking, node, rbac,
    scheduling, storage,
};

kinds! {
    ("", "v1", "Namespace") => core::v1::Namespace,
    ("", "v1", "Node") => core::v1::Node,
    ("", "v1", "Pod") => core::v1::Pod,
    ("", "v1", "Service") => core::v1::Service,
    ("", "v1", "Endpoints") => core::v1::Endpoints,
    ("", "v1", "Secret") => core::v1::Secret,
    ("", "v1", "ConfigMap") => core::v1::ConfigMap,
    ("", "v1", "ServiceAccount") => core::v1::ServiceAccount,
    ("", "v1", "Event") => core::v1::Event,
    ("discovery.k8s.io", "v1", "EndpointSlice") => discovery::v1::EndpointSlice,
    ("coordination.k8s.io", "v1", "Lease") => coordination::v1::Lease,
    ("apps", "v1", "Deployment") => apps::v1::Deployment,
    ("apps", "v1", "ReplicaSet") => apps::v1::ReplicaSet,
    ("apps", "v1", "DaemonSet") => apps::v1::DaemonSet,
    ("batch", "v1", "Job") => batch::v1::Job,
    ("batch", "v1", "CronJob") => batch::v1::CronJob,
    ("", "v1", "ResourceQuota") => core::v1::ResourceQuota,
    ("scheduling.k8s.io", "v1", "PriorityClass") => scheduling::v1::PriorityClass,
    ("node.k8s.io", "v1", "RuntimeClass") => node::v1::RuntimeClass,
    ("storage.k8s.io", "v1", "CSINode") => storage::v1::CSINode,
    ("networking.k8s.io", "v1", "NetworkPolicy") => networking::v1::NetworkPolicy,
    ("authorization.k8s.io", "v1", "SelfSubjectAccessReview") => authorization::v1::SelfSubjectAccessReview,
    ("authorization.k8s.io", "v1", "SelfSubjectRulesReview") => authorization::v1::SelfSubjectRulesReview,
    ("authentication.k8s.io", "v1", "TokenRequest") => authentication::v1::TokenRequest,
    ("autoscaling", "v1", "Scale") => autoscaling::v1::Scale,
    ("rbac.authorization.k8s.io", "v1", "Role") => rbac::v1::Role,
    ("rbac.authorization.k8s.io", "v1", "ClusterRole") => rbac::v1::ClusterRole,
    ("rbac.authorization.k8s.io", "v1", "RoleBinding") => rbac::v1::RoleBinding,
    ("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding") => rbac::v1::ClusterRoleBinding,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::resources;

    #[test]
    fn every_served_kind_has_a_message_type() {
        for r in resources::all() {
            assert!(
                KINDS.contains(&(r.group, r.version, r.kind)),
                "{}/{} has no k8s-pb type",
                r.api_version(),
                r.kind
            );
        }
    }

    #[test]
    fn every_kind_has_a_schema() {
        for (group, _, kind) in KINDS {
            assert!(
                openapi::kind_schema(group, kind).is_some(),
                "{group}/{kind} has no schema"
            );
        }
    }
}
