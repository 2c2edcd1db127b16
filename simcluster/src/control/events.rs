//! Core `Event` objects as the scheduler, controllers and kubelets record them: upstream
//! reasons and messages, `involvedObject`, `source`, and aggregation of repeats (count and
//! lastTimestamp) the way the event recorder does.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};

use crate::store::api_error::ApiError;
use crate::store::resources;
use crate::store::{Part, Store, timestamp};

/// Normal or Warning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Normal,
    Warning,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Self::Normal => "Normal",
            Self::Warning => "Warning",
        }
    }
}

/// Who records an event.
#[derive(Debug, Clone)]
pub struct Source {
    pub component: &'static str,
    pub host: Option<String>,
}

impl Source {
    pub fn scheduler() -> Self {
        Self {
            component: "default-scheduler",
            host: None,
        }
    }

    pub fn kubelet(node: &str) -> Self {
        Self {
            component: "kubelet",
            host: Some(node.to_string()),
        }
    }

    pub fn controller(name: &'static str) -> Self {
        Self {
            component: name,
            host: None,
        }
    }
}

/// The object an event is about, taken from the object itself.
fn involved(obj: &Value, field_path: Option<&str>) -> Value {
    let meta = |f: &str| obj.pointer(&format!("/metadata/{f}")).cloned().unwrap_or(Value::Null);
    let mut reference = json!({
        "kind": obj.get("kind").cloned().unwrap_or(Value::Null),
        "namespace": meta("namespace"),
        "name": meta("name"),
        "uid": meta("uid"),
        "apiVersion": obj.get("apiVersion").cloned().unwrap_or(Value::Null),
        "resourceVersion": meta("resourceVersion"),
    });
    if let Some(path) = field_path {
        reference["fieldPath"] = json!(path);
    }
    reference
}

/// Records an event about `obj`. A repeat of the same reason and message for the same object
/// bumps `count` and `lastTimestamp` of the existing event instead of creating another.
pub fn record(
    store: &Store,
    obj: &Value,
    field_path: Option<&str>,
    kind: Kind,
    reason: &str,
    message: &str,
    source: &Source,
) -> Result<(), ApiError> {
    let events = resources::core("events");
    let name = obj.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
    let uid = obj.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or("");
    // Cluster-scoped objects (nodes) get their events in "default", as upstream does.
    let ns = obj
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .unwrap_or("default");
    let key = key_hash(uid, field_path.unwrap_or(""), reason, message);
    let now = timestamp(chrono::Utc::now());
    // A repeat (same object, reason and message) bumps the event it already has.
    let existing = aggregation()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(&key)
        .cloned();
    if let Some(existing) = existing {
        let bumped = store.modify(events, ns, &existing, Part::Main, |ev| {
            let count = ev.get("count").and_then(Value::as_i64).unwrap_or(1);
            ev["count"] = json!(count + 1);
            ev["lastTimestamp"] = json!(now);
            Ok(())
        });
        match bumped {
            Ok(_) => return Ok(()),
            Err(ApiError::NotFound { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    // Named like client-go's recorder: the object's name and a time-ordered hex suffix, so
    // listing an object's events gives them in the order they happened.
    let event_name = format!("{name}.{:016x}", next_stamp());
    remember(key, &event_name);
    let mut source_json = json!({"component": source.component});
    if let Some(host) = &source.host {
        source_json["host"] = json!(host);
    }
    let event = json!({
        "metadata": {"name": event_name, "namespace": ns},
        "involvedObject": involved(obj, field_path),
        "reason": reason,
        "message": message,
        "type": kind.as_str(),
        "source": source_json,
        "count": 1,
        "firstTimestamp": now,
        "lastTimestamp": now,
        "reportingComponent": "",
        "reportingInstance": "",
    });
    match store.create(events, ns, event) {
        // A namespace being deleted refuses new content; the event is simply lost, as upstream.
        Ok(_)
        | Err(ApiError::Forbidden { .. })
        | Err(ApiError::NotFound { .. })
        | Err(ApiError::AlreadyExists { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Event names of recent (object, reason, message) keys, for aggregation (like the
/// recorder's LRU cache; uids make keys unique across clusters in one process).
fn aggregation() -> &'static Mutex<HashMap<u64, String>> {
    static CACHE: std::sync::OnceLock<Mutex<HashMap<u64, String>>> = std::sync::OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

fn remember(key: u64, name: &str) {
    let mut cache = aggregation().lock().unwrap_or_else(|p| p.into_inner());
    if cache.len() >= 200_000 {
        cache.clear();
    }
    cache.insert(key, name.to_string());
}

/// Nanoseconds since the epoch, strictly increasing across calls.
fn next_stamp() -> u64 {
    static LAST: AtomicU64 = AtomicU64::new(0);
    let now = u64::try_from(chrono::Utc::now().timestamp_nanos_opt().unwrap_or(0)).unwrap_or(0);
    let mut prev = LAST.load(Ordering::Relaxed);
    loop {
        let next = now.max(prev + 1);
        match LAST.compare_exchange_weak(prev, next, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return next,
            Err(p) => prev = p,
        }
    }
}

fn key_hash(uid: &str, field_path: &str, reason: &str, message: &str) -> u64 {
    let mut hasher = crate::vocab::hash::Fnv::default();
    for part in [uid, field_path, reason, message] {
        hasher.write(part.as_bytes()).write(&[0]);
    }
    hasher.finish()
}

/// Shorthand: record and log (never fails the caller; events are best effort upstream too).
pub fn emit(store: &Store, obj: &Value, kind: Kind, reason: &str, message: &str, source: &Source) {
    if let Err(e) = record(store, obj, None, kind, reason, message, source) {
        tracing::debug!("event {reason} not recorded: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeats_aggregate_into_one_event() {
        let store = Store::default();
        store
            .create(resources::core("namespaces"), "", json!({"metadata": {"name": "a"}}))
            .expect("ns");
        let pod = store
            .create(
                resources::core("pods"),
                "a",
                json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}),
            )
            .expect("pod");
        let src = Source::kubelet("n1");
        for _ in 0..3 {
            emit(
                &store,
                pod.value(),
                Kind::Warning,
                "BackOff",
                "Back-off restarting failed container c",
                &src,
            );
        }
        emit(
            &store,
            pod.value(),
            Kind::Normal,
            "Pulling",
            "Pulling image \"i\"",
            &src,
        );
        let (events, _) = store.list(resources::core("events"), Some("a"));
        assert_eq!(events.len(), 2);
        let backoff = events
            .iter()
            .find(|e| e.value()["reason"] == "BackOff")
            .expect("backoff");
        assert_eq!(backoff.value()["count"], 3);
        assert_eq!(backoff.value()["involvedObject"]["name"], "p");
        assert_eq!(backoff.value()["involvedObject"]["uid"], pod.uid());
        assert_eq!(backoff.value()["source"], json!({"component": "kubelet", "host": "n1"}));
        assert_eq!(backoff.value()["type"], "Warning");
        // Listed in the order they happened (names are time-ordered).
        let reasons: Vec<_> = events.iter().map(|e| e.value()["reason"].clone()).collect();
        assert_eq!(reasons, [json!("BackOff"), json!("Pulling")]);
    }
}
