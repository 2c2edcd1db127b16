//! Kubernetes protobuf request bodies (`application/vnd.kubernetes.protobuf`), as kubectl's
//! typed clients send them for built-in kinds. The envelope is the magic `k8s\0` and a
//! `runtime.Unknown` whose `typeMeta` names the kind and whose `raw` holds the object
//! (<https://kubernetes.io/docs/reference/using-api/api-concepts/#protobuf-encoding>). Each
//! served kind is decoded with its generated `k8s-pb` type ([`kinds`]) and transcoded into
//! the JSON the JSON path would store ([`transcode`]).

mod debug_text;
mod kinds;
mod transcode;

use prost::Message as _;
use serde_json::{Value, json};

use k8s_pb::apimachinery::pkg::runtime::Unknown;

/// A protobuf body that cannot be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtobufError {
    #[error("the protobuf body is malformed: {0}")]
    Malformed(String),
    #[error(
        "protobuf request bodies are not supported for {0}, which this server does not serve; send JSON or YAML instead"
    )]
    UnsupportedKind(String),
}

const MAGIC: &[u8] = b"k8s\0";

/// Decodes a protobuf request body into the JSON object it encodes.
pub fn decode(body: &[u8]) -> Result<Value, ProtobufError> {
    let envelope = body
        .strip_prefix(MAGIC)
        .ok_or_else(|| ProtobufError::Malformed("missing the k8s protobuf magic".into()))?;
    let unknown = Unknown::decode(envelope)
        .map_err(|e| ProtobufError::Malformed(format!("the runtime.Unknown envelope: {e}")))?;
    let type_meta = unknown.type_meta.unwrap_or_default();
    let api_version = type_meta.api_version.unwrap_or_default();
    let kind = type_meta.kind.unwrap_or_default();
    if kind.is_empty() {
        return Err(ProtobufError::Malformed("the envelope names no kind".into()));
    }
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version.as_str()));
    let raw = unknown.raw.unwrap_or_default();
    let mut obj = kinds::decode(group, version, &kind, &raw)
        .ok_or_else(|| ProtobufError::UnsupportedKind(format!("{api_version}/{kind}")))??;
    if let Some(map) = obj.as_object_mut() {
        map.shift_insert(0, "apiVersion".into(), json!(api_version));
        map.shift_insert(1, "kind".into(), json!(kind));
    }
    Ok(obj)
}

#[cfg(test)]
mod tests {
    use k8s_pb::api::{apps, core};
    use k8s_pb::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, Time};
    use k8s_pb::apimachinery::pkg::runtime::TypeMeta;
    use k8s_pb::apimachinery::pkg::util::intstr::IntOrString;
    use rstest::rstest;

    use super::*;

    fn envelope(api_version: &str, kind: &str, raw: Vec<u8>) -> Vec<u8> {
        let unknown = Unknown {
            type_meta: Some(TypeMeta {
                api_version: Some(api_version.into()),
                kind: Some(kind.into()),
            }),
            raw: Some(raw),
            content_encoding: Some(String::new()),
            content_type: Some(String::new()),
        };
        [MAGIC.to_vec(), unknown.encode_to_vec()].concat()
    }

    fn s(v: &str) -> Option<String> {
        Some(v.to_string())
    }

    /// A Deployment as `kubectl create deployment d1 --image=nginx --port=80` builds it; Go's
    /// marshaller writes the unset non-pointer fields as zeros.
    #[test]
    fn deployment_as_kubectl_create_sends_it() -> Result<(), ProtobufError> {
        let labels: std::collections::BTreeMap<String, String> = [("app".to_string(), "d1".to_string())].into();
        let container = core::v1::Container {
            name: s("nginx"),
            image: s("nginx"),
            image_pull_policy: s(""),
            ports: vec![core::v1::ContainerPort {
                container_port: Some(80),
                protocol: s(""),
                ..Default::default()
            }],
            resources: Some(Default::default()),
            ..Default::default()
        };
        let deployment = apps::v1::Deployment {
            metadata: Some(ObjectMeta {
                name: s("d1"),
                generate_name: s(""),
                namespace: s(""),
                labels: labels.clone().into_iter().collect(),
                creation_timestamp: Some(Time::default()),
                ..Default::default()
            }),
            spec: Some(apps::v1::DeploymentSpec {
                replicas: Some(1),
                selector: Some(LabelSelector {
                    match_labels: labels.clone().into_iter().collect(),
                    ..Default::default()
                }),
                template: Some(core::v1::PodTemplateSpec {
                    metadata: Some(ObjectMeta {
                        labels: labels.into_iter().collect(),
                        creation_timestamp: Some(Time::default()),
                        ..Default::default()
                    }),
                    spec: Some(core::v1::PodSpec {
                        containers: vec![container],
                        host_network: Some(false),
                        restart_policy: s(""),
                        ..Default::default()
                    }),
                }),
                min_ready_seconds: Some(0),
                strategy: Some(Default::default()),
                ..Default::default()
            }),
            status: Some(Default::default()),
        };
        let obj = decode(&envelope("apps/v1", "Deployment", deployment.encode_to_vec()))?;
        assert_eq!(
            obj,
            json!({
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "d1", "labels": {"app": "d1"}},
                "spec": {
                    "replicas": 1,
                    "selector": {"matchLabels": {"app": "d1"}},
                    "template": {
                        "metadata": {"labels": {"app": "d1"}},
                        "spec": {
                            "containers": [{
                                "name": "nginx",
                                "image": "nginx",
                                "ports": [{"containerPort": 80}],
                                "resources": {},
                            }],
                            "hostNetwork": false,
                        },
                    },
                    "strategy": {},
                    "minReadySeconds": 0,
                },
                "status": {},
            })
        );
        Ok(())
    }

    /// Bytes are base64 in JSON, int-or-string ports keep their type, acronyms keep their case.
    #[test]
    fn secret_bytes_service_ports_and_acronyms() -> Result<(), ProtobufError> {
        let secret = core::v1::Secret {
            metadata: Some(ObjectMeta {
                name: s("s1"),
                ..Default::default()
            }),
            data: [("k".to_string(), b"hi".to_vec())].into_iter().collect(),
            string_data: [("t".to_string(), "plain".to_string())].into_iter().collect(),
            r#type: s("Opaque"),
            ..Default::default()
        };
        let obj = decode(&envelope("v1", "Secret", secret.encode_to_vec()))?;
        assert_eq!(obj["data"], json!({"k": "aGk="}));
        assert_eq!(obj["stringData"], json!({"t": "plain"}));
        assert_eq!(obj["type"], json!("Opaque"));
        let service = core::v1::Service {
            metadata: Some(ObjectMeta {
                name: s("svc"),
                ..Default::default()
            }),
            spec: Some(core::v1::ServiceSpec {
                ports: vec![
                    core::v1::ServicePort {
                        port: Some(80),
                        target_port: Some(IntOrString {
                            r#type: Some(0),
                            int_val: Some(8080),
                            str_val: s(""),
                        }),
                        ..Default::default()
                    },
                    core::v1::ServicePort {
                        port: Some(81),
                        target_port: Some(IntOrString {
                            r#type: Some(1),
                            int_val: Some(0),
                            str_val: s("http"),
                        }),
                        ..Default::default()
                    },
                ],
                cluster_ip: s("None"),
                external_ips: vec!["10.0.0.1".into()],
                ..Default::default()
            }),
            status: None,
        };
        let obj = decode(&envelope("v1", "Service", service.encode_to_vec()))?;
        assert_eq!(
            obj["spec"],
            json!({
                "ports": [{"port": 80, "targetPort": 8080}, {"port": 81, "targetPort": "http"}],
                "clusterIP": "None",
                "externalIPs": ["10.0.0.1"],
            })
        );
        Ok(())
    }

    #[rstest]
    #[case::no_magic(b"{\"kind\":\"Pod\"}".to_vec(), "missing the k8s protobuf magic")]
    #[case::truncated_envelope([MAGIC, &[0x0a, 0x05, 0x01]].concat(), "runtime.Unknown envelope")]
    #[case::no_kind(envelope("v1", "", vec![]), "names no kind")]
    #[case::truncated_object(envelope("v1", "Pod", vec![0x0a, 0x09, 0x0a]), "the Pod object")]
    #[case::wrong_wire_type(envelope("apps/v1", "Deployment", vec![0x0b]), "the Deployment object")]
    fn malformed_bodies_are_named(#[case] body: Vec<u8>, #[case] needle: &str) {
        match decode(&body) {
            Err(ProtobufError::Malformed(m)) => assert!(m.contains(needle), "{m}"),
            other => panic!("expected a malformed body, got {other:?}"),
        }
    }

    #[test]
    fn a_kind_not_served_is_refused() {
        let body = envelope("example.com/v1", "Widget", vec![]);
        assert!(matches!(decode(&body), Err(ProtobufError::UnsupportedKind(k)) if k == "example.com/v1/Widget"));
    }
}
