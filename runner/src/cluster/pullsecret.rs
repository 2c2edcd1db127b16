//! The run's pull secrets on the cluster (`--image-pull-secret`): each one checked before the
//! run creates anything — it exists and is a registry credential the kubelet reads — and those
//! of other namespaces copied into the run namespace before any pod (type and data as they
//! are, labelled as the run's objects, so that the run's cleanup deletes them with it).

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ObjectMeta, PostParams};

use crate::cluster::registry::PullSecret;

/// The limit on each API call.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// The Secret types the kubelet reads registry credentials from
/// (`pkg/credentialprovider/secrets`: `.dockerconfigjson`, and the legacy `.dockercfg`).
const PULL_SECRET_TYPES: [&str; 2] = ["kubernetes.io/dockerconfigjson", "kubernetes.io/dockercfg"];

/// Why a pull secret cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PullSecretError {
    /// The Secret does not exist or is not a registry credential (a setup error, exit 2).
    #[error("{0}")]
    Unusable(String),
    /// The credentials may not read it, or the API did not answer (exit 3).
    #[error("{0}")]
    Unreadable(String),
}

/// Where the run reads `secret` from: its own namespace, or the run namespace.
fn source_namespace<'a>(secret: &'a PullSecret, run_ns: &'a str) -> &'a str {
    secret.namespace.as_deref().unwrap_or(run_ns)
}

/// Reads a pull secret, or says why it cannot be used.
async fn read(client: &kube::Client, secret: &PullSecret, run_ns: &str) -> Result<Secret, PullSecretError> {
    let ns = source_namespace(secret, run_ns);
    let flag = format!("--image-pull-secret {}", secret.shown());
    let api: Api<Secret> = Api::namespaced(client.clone(), ns);
    let got = match tokio::time::timeout(CALL_TIMEOUT, api.get_opt(&secret.name)).await {
        Ok(Ok(got)) => got,
        Ok(Err(kube::Error::Api(s))) if s.code == 403 => {
            return Err(PullSecretError::Unreadable(format!(
                "{flag}: the credentials may not read Secret {ns}/{} (get secrets in namespace {ns}: {})",
                secret.name, s.message
            )));
        }
        Ok(Err(e)) => {
            return Err(PullSecretError::Unreadable(format!(
                "{flag}: reading Secret {ns}/{}: {e}",
                secret.name
            )));
        }
        Err(_) => {
            return Err(PullSecretError::Unreadable(format!(
                "{flag}: reading Secret {ns}/{} timed out",
                secret.name
            )));
        }
    };
    let Some(found) = got else {
        let hint = if secret.namespace.is_none() {
            format!(
                " (the run namespace; a run that creates its namespace finds none there: name the Secret's own namespace, --image-pull-secret NAMESPACE/{})",
                secret.name
            )
        } else {
            String::new()
        };
        return Err(PullSecretError::Unusable(format!(
            "{flag}: there is no Secret {:?} in namespace {ns}{hint}",
            secret.name
        )));
    };
    let kind = found.type_.clone().unwrap_or_default();
    if !PULL_SECRET_TYPES.contains(&kind.as_str()) {
        return Err(PullSecretError::Unusable(format!(
            "{flag}: Secret {ns}/{} is of type {kind:?}; the kubelet reads registry credentials only from kubernetes.io/dockerconfigjson Secrets (kubectl create secret docker-registry)",
            secret.name
        )));
    }
    Ok(found)
}

/// Checks every pull secret before the run creates anything (see [`read`]).
pub async fn check(client: &kube::Client, run_ns: &str, secrets: &[PullSecret]) -> Result<(), PullSecretError> {
    for s in secrets {
        read(client, s, run_ns).await?;
    }
    Ok(())
}

/// The copy of `source` the run puts in its namespace.
fn copy_of(source: &Secret, name: &str, labels: &BTreeMap<String, String>, from: &str) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            labels: Some(labels.clone()),
            annotations: Some([("mixcheck.io/copied-from".to_string(), from.to_string())].into()),
            ..ObjectMeta::default()
        },
        type_: source.type_.clone(),
        data: source.data.clone(),
        immutable: None,
        string_data: None,
    }
}

/// Copies the pull secrets of other namespaces into the run namespace `run_ns`, labelled
/// `labels` (the run's); a Secret of that name the run did not put there is in the way.
pub async fn copy(
    client: &kube::Client,
    run_ns: &str,
    labels: &BTreeMap<String, String>,
    secrets: &[PullSecret],
) -> Result<(), String> {
    let here: Api<Secret> = Api::namespaced(client.clone(), run_ns);
    for s in secrets.iter().filter(|s| source_namespace(s, run_ns) != run_ns) {
        let source = read(client, s, run_ns).await.map_err(|e| e.to_string())?;
        let copy = copy_of(&source, &s.name, labels, &s.shown());
        match tokio::time::timeout(CALL_TIMEOUT, here.create(&PostParams::default(), &copy)).await {
            Ok(Ok(_)) => {}
            Ok(Err(kube::Error::Api(e))) if e.code == 409 => {
                let existing = here.get(&s.name).await.ok();
                let ours = existing
                    .and_then(|e| e.metadata.labels)
                    .is_some_and(|l| labels.iter().all(|(k, v)| l.get(k) == Some(v)));
                if !ours {
                    return Err(format!(
                        "--image-pull-secret {}: the run namespace {run_ns} has a Secret {:?} of its own; the copy would replace it",
                        s.shown(),
                        s.name
                    ));
                }
            }
            Ok(Err(e)) => return Err(format!("copying pull secret {} into {run_ns}: {e}", s.shown())),
            Err(_) => return Err(format!("copying pull secret {} into {run_ns}: timed out", s.shown())),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::ByteString;

    /// The copy keeps the type and data, takes the run's labels and says where it came from.
    #[test]
    fn a_copy_keeps_type_and_data_and_is_the_runs() {
        let source = Secret {
            metadata: ObjectMeta {
                name: Some("regcred".into()),
                namespace: Some("default".into()),
                labels: Some([("team".to_string(), "a".to_string())].into()),
                resource_version: Some("7".into()),
                ..ObjectMeta::default()
            },
            type_: Some("kubernetes.io/dockerconfigjson".into()),
            data: Some([(".dockerconfigjson".to_string(), ByteString(b"{\"auths\":{}}".to_vec()))].into()),
            ..Secret::default()
        };
        let labels = crate::cluster::deploy::run_labels("ab12");
        let copy = copy_of(&source, "regcred", &labels, "default/regcred");
        assert_eq!(copy.type_, source.type_);
        assert_eq!(copy.data, source.data);
        assert_eq!(copy.metadata.labels.as_ref(), Some(&labels));
        assert_eq!(copy.metadata.namespace, None);
        assert_eq!(copy.metadata.resource_version, None);
        assert_eq!(
            copy.metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get("mixcheck.io/copied-from")),
            Some(&"default/regcred".to_string())
        );
    }

    #[test]
    fn secrets_are_read_from_their_namespace_or_the_runs() {
        let here = PullSecret::parse("regcred").expect("valid");
        let there = PullSecret::parse("ci/regcred").expect("valid");
        assert_eq!(source_namespace(&here, "mixcheck-ab12"), "mixcheck-ab12");
        assert_eq!(source_namespace(&there, "mixcheck-ab12"), "ci");
    }
}
