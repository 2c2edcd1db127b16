//! The evidence bundle for a support ticket (`mixcheck run --bundle FILE.tar.gz`): the run's
//! reports, facts and diagnosis, the objects of the run namespace, the nodes and the agents of
//! `kube-system` as the API showed them before cleanup — with every Secret value and token
//! redacted. Secret objects keep their keys and sizes only; the values of every Secret the run
//! could list, service-account tokens (JWTs) and private keys are scrubbed from every file,
//! reports included (a probe may have printed a secret it was checking).

use std::collections::BTreeSet;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{ConfigMap, Endpoints, Event, Node, Pod, Secret, Service};
use kube::api::{Api, ListParams};
use mixcheck_reports::RunReport;
use regex::Regex;
use serde_json::Value;

/// The limit on each API call.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// Secret values shorter than this are not scrubbed from text (they would match everywhere).
const MIN_SECRET_LEN: usize = 4;
/// What a redacted value becomes.
const REDACTED: &str = "<redacted>";

/// Why a bundle could not be written.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    #[error("--bundle {path}: {source}")]
    Write {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// What the run read for the bundle while its namespace still existed.
#[derive(Debug, Default)]
pub struct Collected {
    /// Files by path inside the bundle.
    pub files: Vec<(String, Value)>,
    /// The values of every Secret the run could list (scrubbed from every file).
    pub secrets: BTreeSet<String>,
    /// What could not be read, for the bundle's README.
    pub notes: Vec<String>,
}

async fn list<K>(api: Api<K>, params: &ListParams) -> Result<Vec<K>, String>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    match tokio::time::timeout(CALL_TIMEOUT, api.list(params)).await {
        Ok(Ok(l)) => Ok(l.items),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("timed out".into()),
    }
}

/// Objects as JSON without the noise of managed fields.
fn dump<K: serde::Serialize>(items: &[K]) -> Value {
    let mut v = serde_json::to_value(items).unwrap_or(Value::Null);
    if let Some(list) = v.as_array_mut() {
        for o in list {
            if let Some(meta) = o.pointer_mut("/metadata").and_then(Value::as_object_mut) {
                meta.remove("managedFields");
            }
        }
    }
    v
}

/// A Secret with its values replaced by their sizes, and without the last-applied annotation
/// (which holds them too).
fn redact_secret(secret: &Secret) -> Value {
    let mut v = serde_json::to_value(secret).unwrap_or(Value::Null);
    if let Some(meta) = v.pointer_mut("/metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
    for field in ["data", "stringData"] {
        if let Some(map) = v.get_mut(field).and_then(Value::as_object_mut) {
            for (_, value) in map.iter_mut() {
                let len = value.as_str().map_or(0, str::len);
                *value = Value::String(format!("{REDACTED} ({len} bytes encoded)"));
            }
        }
    }
    if let Some(annotations) = v.pointer_mut("/metadata/annotations").and_then(Value::as_object_mut) {
        annotations.remove("kubectl.kubernetes.io/last-applied-configuration");
    }
    v
}

/// The values of a Secret, decoded.
fn values_of(secret: &Secret) -> Vec<String> {
    let mut out: Vec<String> = secret
        .data
        .iter()
        .flatten()
        .map(|(_, b)| String::from_utf8_lossy(&b.0).into_owned())
        .collect();
    out.extend(secret.string_data.iter().flatten().map(|(_, s)| s.clone()));
    out
}

/// The values of the Secrets the fixtures apply: known to the run whatever it may list.
fn fixture_secrets(fixtures: &crate::cluster::fixture::Fixtures, run_id: &str) -> Vec<String> {
    let mut out = Vec::new();
    for doc in fixtures.by_name.values().flat_map(|f| &f.others) {
        if doc.get("kind").and_then(Value::as_str) != Some("Secret") {
            continue;
        }
        let mut doc = doc.clone();
        crate::cluster::fixture::fill_run_id(&mut doc, run_id);
        if let Ok(secret) = serde_json::from_value::<Secret>(doc) {
            out.extend(values_of(&secret));
        }
    }
    out
}

/// Reads what the bundle holds of the cluster: the run namespace's objects, the nodes and the
/// agents of kube-system; and the Secret values to scrub (those of the fixtures the run applied,
/// and of every Secret it may list).
pub async fn collect(
    client: &kube::Client,
    ns: &str,
    run_id: &str,
    fixtures: &crate::cluster::fixture::Fixtures,
) -> Collected {
    let mut c = Collected::default();
    c.secrets.extend(fixture_secrets(fixtures, run_id));
    let all = ListParams::default();
    let note = |what: &str, e: String| format!("{what}: {e}");
    macro_rules! add {
        ($path:expr, $api:expr, $what:expr) => {
            match list($api, &all).await {
                Ok(items) => c.files.push(($path.to_string(), dump(&items))),
                Err(e) => c.notes.push(note($what, e)),
            }
        };
    }
    add!("cluster/nodes.json", Api::<Node>::all(client.clone()), "nodes");
    add!(
        "kube-system/pods.json",
        Api::<Pod>::namespaced(client.clone(), "kube-system"),
        "kube-system pods"
    );
    add!(
        "kube-system/daemonsets.json",
        Api::<DaemonSet>::namespaced(client.clone(), "kube-system"),
        "kube-system daemonsets"
    );
    add!(
        "kube-system/configmaps.json",
        Api::<ConfigMap>::namespaced(client.clone(), "kube-system"),
        "kube-system configmaps"
    );
    add!(
        "namespace/pods.json",
        Api::<Pod>::namespaced(client.clone(), ns),
        "pods"
    );
    add!(
        "namespace/services.json",
        Api::<Service>::namespaced(client.clone(), ns),
        "services"
    );
    add!(
        "namespace/endpoints.json",
        Api::<Endpoints>::namespaced(client.clone(), ns),
        "endpoints"
    );
    add!(
        "namespace/events.json",
        Api::<Event>::namespaced(client.clone(), ns),
        "events"
    );
    add!(
        "namespace/configmaps.json",
        Api::<ConfigMap>::namespaced(client.clone(), ns),
        "configmaps"
    );
    // Secrets: the run's own, redacted; the values of every Secret the run may list, to scrub.
    match list(Api::<Secret>::namespaced(client.clone(), ns), &all).await {
        Ok(items) => {
            c.secrets.extend(items.iter().flat_map(values_of));
            c.files.push((
                "namespace/secrets.json".into(),
                Value::Array(items.iter().map(redact_secret).collect()),
            ));
        }
        Err(e) => c.notes.push(note("secrets", e)),
    }
    match list(Api::<Secret>::all(client.clone()), &all).await {
        Ok(items) => c.secrets.extend(items.iter().flat_map(values_of)),
        Err(e) => c
            .notes
            .push(note("secrets of other namespaces (only the run's own are scrubbed)", e)),
    }
    c.secrets.retain(|s| s.len() >= MIN_SECRET_LEN);
    c
}

/// `text` with every secret value, JWT and private key replaced.
pub fn scrub(text: &str, secrets: &BTreeSet<String>) -> String {
    let mut out = text.to_string();
    // Longest first, so a value containing another is replaced whole.
    let mut values: Vec<&String> = secrets.iter().collect();
    values.sort_by_key(|v| std::cmp::Reverse(v.len()));
    for v in values {
        out = out.replace(v.as_str(), REDACTED);
    }
    static PATTERNS: std::sync::OnceLock<Vec<Regex>> = std::sync::OnceLock::new();
    let patterns = PATTERNS.get_or_init(|| {
        [
            // JWTs: service-account and OIDC tokens.
            r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+",
            r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----",
            // Bearer tokens in headers or kubeconfigs.
            r"(?i)(bearer\s+|token:\s*)[A-Za-z0-9._~+/=-]{16,}",
        ]
        .iter()
        .filter_map(|p| Regex::new(p).ok())
        .collect()
    });
    for re in patterns {
        out = re
            .replace_all(&out, |caps: &regex::Captures<'_>| match caps.get(1) {
                Some(prefix) => format!("{}{REDACTED}", prefix.as_str()),
                None => REDACTED.to_string(),
            })
            .into_owned();
    }
    out
}

/// Writes the bundle of `report` to `path` (atomically): README.txt, reports/, facts.json,
/// diagnosis.json and what `collected` holds, every file scrubbed.
pub fn write(path: &Path, report: &RunReport, collected: &Collected) -> Result<PathBuf, BundleError> {
    let err = |source: std::io::Error| BundleError::Write {
        path: path.display().to_string(),
        source,
    };
    let mut files: Vec<(String, String)> = Vec::new();
    let json = |v: &Value| serde_json::to_string_pretty(v).unwrap_or_default();
    files.push((
        "reports/results.json".into(),
        serde_json::to_string_pretty(report).unwrap_or_default(),
    ));
    if let Ok(junit) = mixcheck_reports::junit::render(report) {
        files.push(("reports/junit.xml".into(), junit));
    }
    files.push(("reports/report.md".into(), mixcheck_reports::markdown::render(report)));
    files.push(("reports/report.html".into(), mixcheck_reports::html::render(report)));
    files.push((
        "facts.json".into(),
        serde_json::to_string_pretty(&report.facts).unwrap_or_default(),
    ));
    if let Some(d) = &report.diagnosis {
        files.push((
            "diagnosis.json".into(),
            serde_json::to_string_pretty(d).unwrap_or_default(),
        ));
    }
    files.extend(collected.files.iter().map(|(p, v)| (p.clone(), json(v))));
    let mut readme = format!(
        "mixcheck {} evidence bundle of run {} ({} cells).\n\nreports/    results.json, junit.xml, report.md, report.html\nfacts.json  what the run learnt about the cluster\ndiagnosis.json  the likely causes and the evidence gathered per node\ncluster/    the nodes\nkube-system/  the agents' pods, DaemonSets and ConfigMaps\nnamespace/  the run namespace's objects (Secrets with their values redacted)\n\nEvery Secret value the run could list ({} values), service-account tokens and private keys\nare replaced by {REDACTED} in every file.\n",
        report.tool_version,
        report.run_id,
        report.cells.len(),
        collected.secrets.len()
    );
    for n in &collected.notes {
        readme.push_str(&format!("not collected: {n}\n"));
    }
    files.insert(0, ("README.txt".into(), readme));
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let tmp = tempfile::NamedTempFile::new_in(dir).map_err(err)?;
    {
        let gz = flate2::write::GzEncoder::new(tmp.as_file(), flate2::Compression::default());
        let mut tar = tar::Builder::new(gz);
        let prefix = format!("mixcheck-bundle-{}", report.run_id);
        for (name, text) in &files {
            let body = scrub(text, &collected.secrets);
            let mut header = tar::Header::new_gnu();
            header.set_size(body.len() as u64);
            header.set_mode(0o644);
            header.set_mtime(u64::try_from(report.finished_at.timestamp()).unwrap_or(0));
            header.set_cksum();
            tar.append_data(&mut header, format!("{prefix}/{name}"), body.as_bytes())
                .map_err(err)?;
        }
        let gz = tar.into_inner().map_err(err)?;
        let mut file = gz.finish().map_err(err)?;
        file.flush().map_err(err)?;
    }
    tmp.persist(path).map_err(|e| err(e.error))?;
    Ok(path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrub_replaces_secret_values_tokens_and_keys() {
        let secrets = BTreeSet::from(["hunter2-secret".to_string(), "hunter2".to_string()]);
        let text = "pw=hunter2-secret and hunter2; Authorization: Bearer abcdefghijklmnopqrstuvwxyz012345 \
                    jwt eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2EifQ.c2lnbmF0dXJl \
                    -----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY----- done";
        let out = scrub(text, &secrets);
        for gone in ["hunter2", "abcdefghijklmnop", "eyJhbGci", "MIIB"] {
            assert!(!out.contains(gone), "{gone} in {out}");
        }
        assert!(out.starts_with("pw=<redacted> and <redacted>;"), "{out}");
        assert!(out.ends_with(" done"), "{out}");
    }

    #[test]
    fn a_secret_keeps_its_keys_but_not_its_values() {
        let secret: Secret = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "s", "annotations": {
                "kubectl.kubernetes.io/last-applied-configuration": "{\"stringData\":{\"k\":\"v4lue\"}}",
                "keep": "me"
            }},
            "data": {"k": "djRsdWU="}
        }))
        .expect("secret");
        assert_eq!(values_of(&secret), ["v4lue"]);
        let v = redact_secret(&secret);
        let text = v.to_string();
        assert!(!text.contains("djRsdWU=") && !text.contains("v4lue"), "{text}");
        assert!(text.contains("\"k\":\"<redacted> (8 bytes encoded)\""), "{text}");
        assert!(text.contains("\"keep\":\"me\""), "{text}");
    }
}
