//! One stored version of an object: its JSON encoding, the metadata every reader asks for, and
//! its decoded value, kept while the cluster reads it and dropped when it goes cold.
//!
//! A decoded `serde_json::Value` takes six to eight times the bytes of its encoding (a pod of
//! 4 KB is about 31 KB as a value, an Event of 0.7 KB about 4.5 KB). Most versions are written
//! once and never read as values again (Events, superseded versions in the change history),
//! so the store keeps every version's encoding and decodes it again on the next read after a
//! cooling sweep ([`Store::cool`](super::Store::cool)) found it unread for a whole interval.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use serde_json::{Map, Value};

use crate::store::api_error::ApiError;

/// A stored object: its JSON encoding and, while it is read, its decoded value.
#[derive(Debug)]
pub struct Stored {
    json: Bytes,
    value: OnceLock<Value>,
    /// Set by every read of the value; a cooling sweep clears it.
    read: AtomicBool,
    name: Box<str>,
    namespace: Box<str>,
    uid: Box<str>,
    resource_version: u64,
    terminating: bool,
    /// A pod's `spec.nodeName` (empty for anything else, and for a pod not bound): readers that
    /// want one node's pods pick them without decoding every pod of the cluster, as
    /// kube-apiserver's watch cache indexes pods by `spec.nodeName` for the kubelets' field
    /// selectors.
    node_name: Box<str>,
}

/// A shared, immutable version of an object.
pub type Obj = Arc<Stored>;

pub(super) fn meta_str<'a>(v: &'a Value, field: &str) -> &'a str {
    v.get("metadata")
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
        .unwrap_or("")
}

impl Stored {
    /// Encodes `value` once; the value stays decoded until a sweep finds it unread.
    pub(super) fn new(value: Value) -> Result<Arc<Self>, ApiError> {
        Self::encode(value, true)
    }

    /// Encodes `value` and keeps only the encoding: for a version written once and seldom read
    /// as a value (an Event: 0.7 KB encoded, 4.5 KB decoded; 75 MB of a 2,500-node run's peak
    /// held until the next sweep).
    pub(super) fn new_cold(value: Value) -> Result<Arc<Self>, ApiError> {
        Self::encode(value, false)
    }

    fn encode(value: Value, keep: bool) -> Result<Arc<Self>, ApiError> {
        let json = crate::vocab::json::encode(&value);
        let stored = Self {
            json: Bytes::from(json),
            value: OnceLock::new(),
            read: AtomicBool::new(keep),
            name: meta_str(&value, "name").into(),
            namespace: meta_str(&value, "namespace").into(),
            uid: meta_str(&value, "uid").into(),
            resource_version: meta_str(&value, "resourceVersion").parse().unwrap_or(0),
            terminating: value
                .pointer("/metadata/deletionTimestamp")
                .is_some_and(|v| !v.is_null()),
            node_name: value
                .get("spec")
                .and_then(|s| s.get("nodeName"))
                .and_then(Value::as_str)
                .unwrap_or("")
                .into(),
        };
        if keep {
            let _ = stored.value.set(value);
        }
        Ok(Arc::new(stored))
    }

    /// The object's value, decoded from its encoding again if a sweep dropped it.
    pub fn value(&self) -> &Value {
        if !self.read.load(Ordering::Relaxed) {
            self.read.store(true, Ordering::Relaxed);
        }
        self.value.get_or_init(|| {
            // The bytes are this store's own encoding of a value, so they decode; an object
            // that did not would read as null rather than take the cluster down.
            crate::vocab::json::decode(&self.json).unwrap_or_else(|e| {
                tracing::error!("a stored object no longer decodes: {e}");
                Value::Null
            })
        })
    }

    /// What `read` makes of the object's value, without keeping a decoding made for it: a
    /// filter that looks at every object of a kind once (a LIST's selectors, a lookup's
    /// records) would otherwise hold every object decoded until the next sweep — at 2,500
    /// nodes 0.57 GB of the peak (heaptrack; docs/benchmarks.md, "2026-12-06 (last)").
    pub fn peek<R>(&self, read: impl FnOnce(&Value) -> R) -> R {
        match self.value.get() {
            Some(value) => read(value),
            None => read(&crate::vocab::json::decode(&self.json).unwrap_or(Value::Null)),
        }
    }

    /// What `read` makes of `metadata.labels` (None when the object has none), decoding only
    /// the labels when the value is not decoded.
    pub fn peek_labels<R>(&self, read: impl FnOnce(Option<&Map<String, Value>>) -> R) -> R {
        #[derive(serde::Deserialize)]
        struct Labelled {
            metadata: Option<Meta>,
        }
        #[derive(serde::Deserialize)]
        struct Meta {
            labels: Option<Map<String, Value>>,
        }
        match self.value.get() {
            Some(value) => read(
                value
                    .get("metadata")
                    .and_then(|m| m.get("labels"))
                    .and_then(Value::as_object),
            ),
            None => {
                let labelled: Option<Labelled> = serde_json::from_slice(&self.json).ok();
                read(labelled.and_then(|l| l.metadata).and_then(|m| m.labels).as_ref())
            }
        }
    }

    /// The object's JSON encoding.
    pub fn json(&self) -> &Bytes {
        &self.json
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    pub fn resource_version(&self) -> u64 {
        self.resource_version
    }

    pub fn uid(&self) -> &str {
        &self.uid
    }

    /// `spec.nodeName` (a pod's node; empty when there is none).
    pub fn node_name(&self) -> &str {
        &self.node_name
    }

    pub fn is_terminating(&self) -> bool {
        self.terminating
    }

    /// Whether the value is decoded now.
    pub fn is_decoded(&self) -> bool {
        self.value.get().is_some()
    }

    /// A cooling sweep's look at this version: whether it is decoded and its value went unread
    /// since the last look. The second chance: a version read since the last look loses its
    /// mark now, and its value at the next look that finds it unread.
    pub(super) fn unread(&self) -> bool {
        !self.read.swap(false, Ordering::Relaxed) && self.is_decoded()
    }

    /// The same version without its decoded value (the next read decodes it): for a holder
    /// that keeps a version long but reads it seldom, so that the value it no longer reads
    /// is not kept alive by it after the store's sweep let go of it.
    pub fn without_value(&self) -> Arc<Self> {
        Arc::new(Self {
            json: self.json.clone(),
            value: OnceLock::new(),
            read: AtomicBool::new(false),
            name: self.name.clone(),
            namespace: self.namespace.clone(),
            uid: self.uid.clone(),
            resource_version: self.resource_version,
            terminating: self.terminating,
            node_name: self.node_name.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    fn pod() -> Value {
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web-0", "namespace": "shop", "uid": "u-1", "resourceVersion": "42",
                         "labels": {"app": "web", "tier": "front"}},
            "spec": {"nodeName": "win-1", "containers": [{"name": "web", "image": "agnhost:2.52",
                     "ports": [{"containerPort": 8080}]}], "terminationGracePeriodSeconds": 30,
                     "overhead": {"cpu": 0.25}},
            "status": {"phase": "Running", "podIP": "10.0.1.7", "ready": true, "restarts": null}
        })
    }

    #[test]
    fn metadata_reads_do_not_decode() {
        let s = Stored::new(pod()).expect("test store");
        assert!(!s.unread(), "a version just written counts as read");
        assert!(s.unread());
        let cold = s.without_value();
        assert!(!cold.is_decoded());
        assert_eq!(
            (
                cold.name(),
                cold.namespace(),
                cold.uid(),
                cold.resource_version(),
                cold.is_terminating(),
                cold.node_name()
            ),
            ("web-0", "shop", "u-1", 42, false, "win-1")
        );
        let unbound = Stored::new(json!({"metadata": {"name": "p"}, "spec": {"containers": []}})).expect("unbound");
        assert_eq!(unbound.node_name(), "", "a pod no node was given");
        assert!(
            !cold.is_decoded(),
            "metadata came from the version, not from decoding it"
        );
        assert_eq!(cold.json(), s.json());
    }

    /// A look at a cold version reads what its value holds and leaves it cold; a decoded one
    /// is read in place.
    #[rstest]
    #[case::pod(pod(), Some(json!({"app": "web", "tier": "front"})))]
    #[case::no_labels(json!({"metadata": {"name": "n"}}), None)]
    #[case::no_metadata(json!({"kind": "Event"}), None)]
    fn a_peek_reads_the_value_and_keeps_no_decoding(#[case] value: Value, #[case] labels: Option<Value>) {
        let hot = Stored::new(value.clone()).expect("test store");
        let cold = hot.without_value();
        let written_cold = Stored::new_cold(value.clone()).expect("test store");
        for s in [&hot, &cold, &written_cold] {
            assert_eq!(s.peek(|v| v.clone()), value);
            assert_eq!(s.peek_labels(|l| l.cloned().map(Value::Object)), labels);
        }
        assert!(
            !cold.is_decoded() && !written_cold.is_decoded(),
            "a peek kept what it decoded"
        );
        assert_eq!(written_cold.value(), &value);
        assert!(hot.is_decoded());
    }

    #[rstest]
    #[case::pod(pod())]
    #[case::terminating(json!({"metadata": {"name": "n", "deletionTimestamp": "2026-12-06T00:00:00Z"}, "x": [1.5, -3, 18446744073709551615u64, "é\n"]}))]
    #[case::empty_object(json!({}))]
    fn a_cooled_version_decodes_to_the_same_value(#[case] value: Value) {
        let s = Stored::new(value.clone()).expect("test store");
        let cold = s.without_value();
        assert_eq!(cold.value(), &value);
        assert_eq!(
            serde_json::to_vec(cold.value()).expect("encodes"),
            cold.json().as_ref(),
            "key order kept"
        );
        assert_eq!(cold.is_terminating(), s.is_terminating());
    }

    #[test]
    fn a_version_read_between_sweeps_stays_decoded() {
        let s = Stored::new(pod()).expect("test store");
        for _ in 0..3 {
            let _ = s.value();
            assert!(!s.unread(), "read since the last sweep");
        }
        assert!(s.unread(), "unread for a whole interval");
        let cold = s.without_value();
        assert!(!cold.unread(), "nothing to drop: not decoded");
        let _ = cold.value();
        assert!(!cold.unread(), "decoded again by a read, which marks it");
        assert!(cold.unread());
    }
}
