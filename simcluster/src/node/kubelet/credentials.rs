//! The credentials a kubelet pulls a pod's image with: the pod's `imagePullSecrets`, read from
//! its namespace, each Secret of type `kubernetes.io/dockerconfigjson` (`.dockerconfigjson`,
//! its `auths`) or the legacy `kubernetes.io/dockercfg` (`.dockercfg`) made into a keyring and
//! looked up with the image's repository as the kubelet's keyring does
//! (`pkg/credentialprovider/keyring.go`, `secrets/secrets.go` MakeDockerKeyring):
//!
//! - a key is read as a URL, `https://` added when it has no scheme; a `/v1/` or `/v2/` path is
//!   the bare host (`https://index.docker.io/v1/` is `index.docker.io`);
//! - it matches a repository whose host has as many dot-separated labels, each matching the
//!   key's (a label may be a glob: `*.azurecr.io`), the same port, and whose path starts with
//!   the key's path (`registry.k8s.io/e2e-test-images` covers `…/e2e-test-images/agnhost`);
//! - an image of Docker Hub (`docker.io/…`) falls back to the key `index.docker.io`.
//!
//! An entry counts when it carries credentials (`auth`, `username`/`password`, an identity or
//! registry token); the simulated registries accept any, as they check that a pull is
//! authenticated, not who it is. A Secret of another type is skipped, as the kubelet skips it;
//! one that does not exist is reported as the kubelet reports it (`FailedToRetrieveImagePullSecret`).

use base64::Engine as _;
use serde_json::Value;

use crate::store::{Store, resources};
use crate::vocab::json;

/// What a pod's pull secrets give a pull.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct PullSecrets {
    /// Whether some secret holds credentials for the repository.
    pub found: bool,
    /// The secrets the pod names that its namespace does not have.
    pub missing: Vec<String>,
}

/// The pod's pull secrets' credentials for `repository` (`registry.k8s.io/pause`).
pub(super) fn for_repository(store: &Store, pod: &Value, repository: &str) -> PullSecrets {
    let namespace = json::str(pod, "/metadata/namespace");
    let mut out = PullSecrets::default();
    for reference in json::array(pod, "/spec/imagePullSecrets") {
        let name = json::str(reference, "/name");
        if name.is_empty() {
            continue;
        }
        match store.get(resources::core("secrets"), namespace, name) {
            Ok(secret) => out.found |= keys(secret.value()).iter().any(|k| matches(k, repository)),
            Err(_) => out.missing.push(name.to_string()),
        }
    }
    out
}

/// The registry keys of a Secret that carry credentials (none for a Secret of another type).
fn keys(secret: &Value) -> Vec<String> {
    let (field, nested) = match json::str(secret, "/type") {
        "kubernetes.io/dockerconfigjson" => ("/data/.dockerconfigjson", true),
        "kubernetes.io/dockercfg" => ("/data/.dockercfg", false),
        _ => return Vec::new(),
    };
    let config: Option<Value> = base64::engine::general_purpose::STANDARD
        .decode(json::str(secret, field))
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok());
    let auths = config.and_then(|c| if nested { c.get("auths").cloned() } else { Some(c) });
    let Some(Value::Object(auths)) = auths else {
        return Vec::new();
    };
    auths
        .into_iter()
        .filter(|(_, entry)| {
            ["auth", "username", "password", "identitytoken", "registrytoken"]
                .iter()
                .any(|f| !json::str(entry, &format!("/{f}")).is_empty())
        })
        .map(|(key, _)| key)
        .collect()
}

/// A keyring key as the kubelet indexes it: `host[:port][/path]`, the scheme dropped and a
/// `/v1/` or `/v2/` path read as the host.
fn normalise(key: &str) -> String {
    let rest = key
        .strip_prefix("https://")
        .or_else(|| key.strip_prefix("http://"))
        .unwrap_or(key);
    let (host, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let path = ["/v2/", "/v1/"]
        .iter()
        .find_map(|p| path.strip_prefix(&p[..3]).filter(|_| path.starts_with(p)))
        .unwrap_or(path);
    if path.is_empty() || path == "/" {
        host.to_ascii_lowercase()
    } else {
        format!("{}{path}", host.to_ascii_lowercase())
    }
}

/// Whether keyring `key` matches `repository` (see the module doc).
fn matches(key: &str, repository: &str) -> bool {
    let key = normalise(key);
    let direct = host_and_path_match(&key, repository);
    let hub = key == "index.docker.io" && repository.starts_with("docker.io/");
    direct || hub
}

/// The keyring's URL match: host labels (globs), port and path prefix.
fn host_and_path_match(glob: &str, target: &str) -> bool {
    let split = |s: &str| -> (String, String) {
        match s.find('/') {
            Some(i) => (s[..i].to_string(), s[i..].to_string()),
            None => (s.to_string(), String::new()),
        }
    };
    let ((glob_host, glob_path), (target_host, target_path)) = (split(glob), split(target));
    let port = |h: &str| -> (String, String) {
        match h.rsplit_once(':') {
            Some((name, port)) => (name.to_string(), port.to_string()),
            None => (h.to_string(), String::new()),
        }
    };
    let ((glob_name, glob_port), (target_name, target_port)) = (port(&glob_host), port(&target_host));
    let glob_labels: Vec<&str> = glob_name.split('.').collect();
    let target_labels: Vec<&str> = target_name.split('.').collect();
    glob_port == target_port
        && glob_labels.len() == target_labels.len()
        && target_path.starts_with(&glob_path)
        && glob_labels.iter().zip(&target_labels).all(|(g, t)| label_matches(g, t))
}

/// A host label against a glob of `*` (any run) and `?` (any one character), as Go's
/// `filepath.Match` reads a label.
fn label_matches(glob: &str, label: &str) -> bool {
    fn go(g: &[char], l: &[char]) -> bool {
        match g.split_first() {
            None => l.is_empty(),
            Some(('*', rest)) => (0..=l.len()).any(|i| go(rest, &l[i..])),
            Some(('?', rest)) => !l.is_empty() && go(rest, &l[1..]),
            Some((c, rest)) => l.first() == Some(c) && go(rest, &l[1..]),
        }
    }
    let (g, l): (Vec<char>, Vec<char>) = (glob.chars().collect(), label.chars().collect());
    go(&g, &l)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::host("registry.k8s.io", "registry.k8s.io/e2e-test-images/agnhost", true)]
    #[case::scheme("https://registry.k8s.io", "registry.k8s.io/e2e-test-images/agnhost", true)]
    #[case::v2_path("https://registry.k8s.io/v2/", "registry.k8s.io/pause", true)]
    #[case::path_prefix("registry.k8s.io/e2e-test-images", "registry.k8s.io/e2e-test-images/agnhost", true)]
    #[case::other_path("registry.k8s.io/e2e-test-images", "registry.k8s.io/pause", false)]
    #[case::glob("*.k8s.io", "registry.k8s.io/pause", true)]
    #[case::glob_depth("*.io", "registry.k8s.io/pause", false)]
    #[case::parent_domain("k8s.io", "registry.k8s.io/pause", false)]
    #[case::port("harbor.corp:5000", "harbor.corp:5000/k8s/pause", true)]
    #[case::missing_port("harbor.corp", "harbor.corp:5000/k8s/pause", false)]
    #[case::hub_default("https://index.docker.io/v1/", "docker.io/library/busybox", true)]
    #[case::hub_direct("docker.io", "docker.io/library/busybox", true)]
    #[case::hub_not_elsewhere("https://index.docker.io/v1/", "registry.k8s.io/pause", false)]
    #[case::other_registry("mcr.microsoft.com", "registry.k8s.io/pause", false)]
    fn keyring_keys(#[case] key: &str, #[case] repository: &str, #[case] matched: bool) {
        assert_eq!(matches(key, repository), matched, "{key} vs {repository}");
    }

    fn secret(kind: &str, field: &str, config: &str) -> Value {
        let data = base64::engine::general_purpose::STANDARD.encode(config);
        serde_json::json!({"type": kind, "data": {field: data}})
    }

    /// Only entries with credentials count; other Secret types hold none.
    #[rstest]
    #[case::dockerconfigjson(
        secret("kubernetes.io/dockerconfigjson", ".dockerconfigjson", r#"{"auths": {"registry.k8s.io": {"auth": "dTpw"}, "empty.example.com": {}}}"#),
        vec!["registry.k8s.io"]
    )]
    #[case::username(
        secret("kubernetes.io/dockerconfigjson", ".dockerconfigjson", r#"{"auths": {"harbor.corp": {"username": "u", "password": "p"}}}"#),
        vec!["harbor.corp"]
    )]
    #[case::dockercfg(
        secret("kubernetes.io/dockercfg", ".dockercfg", r#"{"https://index.docker.io/v1/": {"auth": "dTpw"}}"#),
        vec!["https://index.docker.io/v1/"]
    )]
    #[case::opaque(secret("Opaque", ".dockerconfigjson", r#"{"auths": {"registry.k8s.io": {"auth": "dTpw"}}}"#), vec![])]
    #[case::not_json(secret("kubernetes.io/dockerconfigjson", ".dockerconfigjson", "{"), vec![])]
    fn secret_keys(#[case] secret: Value, #[case] expected: Vec<&str>) {
        assert_eq!(keys(&secret), expected);
    }
}
