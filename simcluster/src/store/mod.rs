//! The object store: every API object as JSON, one global resourceVersion, optimistic
//! concurrency, graceful deletion, and the bounded change history that feeds watches.
//!
//! The store knows nothing about HTTP. Writes take one lock, stamp the next resourceVersion,
//! serialise the object once (lists and watches reuse those bytes) and publish the change.

pub mod admission;
pub mod allocation;
pub mod api_error;
mod cooling;
pub mod custom;
pub mod defaults;
pub mod patch;
pub mod per_version;
pub mod pod_validation;
pub mod policy;
pub mod rbac;
pub mod resources;
pub mod selector;
mod stored;
pub mod tokens;
pub mod validation;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use chrono::{DateTime, Utc};
use serde_json::{Map, Value, json};
use tokio::sync::watch;

pub use self::cooling::keep_cool;
use self::resources::ResourceType;
use self::stored::meta_str;
pub use self::stored::{Obj, Stored};
use crate::store::api_error::{ApiError, Cause};

/// What happened to an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Added => "ADDED",
            Self::Modified => "MODIFIED",
            Self::Deleted => "DELETED",
        }
    }
}

/// One change, as recorded in the history and sent to watchers.
#[derive(Debug)]
pub struct Event {
    pub rv: u64,
    pub kind: EventType,
    pub resource: &'static ResourceType,
    /// The object after the change (for `Deleted`, its last state with the deletion's rv).
    pub object: Obj,
    /// The object before the change, for `Modified` and `Deleted`.
    pub previous: Option<Obj>,
}

/// Which part of an object a write may change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The object itself; `status` is kept when the kind has a status subresource.
    Main,
    /// Only `status`.
    Status,
}

/// Options of a delete.
#[derive(Debug, Clone, Default)]
pub struct DeleteOptions {
    pub grace_period_seconds: Option<i64>,
    pub precondition_uid: Option<String>,
    pub precondition_rv: Option<String>,
}

/// The result of a delete.
#[derive(Debug)]
pub enum Deleted {
    /// The object is gone; this was its last state.
    Removed(Obj),
    /// The object is marked for deletion (graceful deletion, finalizers) and still exists.
    Terminating(Obj),
}

impl Deleted {
    pub fn object(&self) -> &Obj {
        match self {
            Self::Removed(o) | Self::Terminating(o) => o,
        }
    }
}

/// Where a watch starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchFrom {
    /// Synthetic `ADDED` events for the current state, then changes.
    Now,
    /// Every change after this resourceVersion.
    After(u64),
}

/// A started watch: the events to send first, then the live feed.
#[derive(Debug)]
pub struct Watch {
    pub initial: Vec<Arc<Event>>,
    pub feed: Subscription,
    /// The resourceVersion the watch has covered once `initial` is sent.
    pub start_rv: u64,
}

/// Why a subscription has nothing to hand out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TryRecvError {
    /// Nothing new yet.
    Empty,
    /// The subscriber fell behind the history by this many changes: it must resynchronise.
    Lagged(u64),
}

/// Why `recv` ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecvError {
    /// The subscriber fell behind the history; its cursor moved to the oldest retained change.
    Lagged(u64),
}

/// A cursor over the store's change history: every change after the point of subscription,
/// in order. Retention is the history's alone, so a slow subscriber costs no memory; one that
/// falls behind the history gets `Lagged` and must resynchronise (like a 410 for watches).
#[derive(Debug)]
pub struct Subscription {
    store: Arc<Store>,
    after: u64,
    changes: watch::Receiver<u64>,
}

impl Subscription {
    /// The next change, without waiting.
    pub fn try_recv(&mut self) -> Result<Arc<Event>, TryRecvError> {
        match self.store.next_after(self.after) {
            Ok(e) => {
                self.after = e.rv;
                Ok(e)
            }
            Err(TryRecvError::Lagged(n)) => {
                self.after = self.store.read().compacted;
                Err(TryRecvError::Lagged(n))
            }
            Err(e) => Err(e),
        }
    }

    /// The next change, waiting for one.
    pub async fn recv(&mut self) -> Result<Arc<Event>, RecvError> {
        loop {
            self.changes.mark_unchanged();
            match self.try_recv() {
                Ok(e) => return Ok(e),
                Err(TryRecvError::Lagged(n)) => return Err(RecvError::Lagged(n)),
                Err(TryRecvError::Empty) => {
                    if self.changes.changed().await.is_err() {
                        // The store is gone; nothing will ever come.
                        std::future::pending::<()>().await;
                    }
                }
            }
        }
    }
}

/// Settings of a store.
#[derive(Debug, Clone)]
pub struct StoreConfig {
    /// How many changes the history keeps for watches that resume from a resourceVersion.
    pub history: usize,
}

impl Default for StoreConfig {
    fn default() -> Self {
        Self { history: 10_000 }
    }
}

type Table = BTreeMap<(String, String), Obj>;

#[derive(Debug, Default)]
struct Inner {
    rv: u64,
    tables: HashMap<(&'static str, &'static str), Table>,
    history: VecDeque<Arc<Event>>,
    /// The highest resourceVersion dropped from the history (0 when nothing was dropped).
    compacted: u64,
    /// Per resource, the resourceVersion of its latest change (for caches of derived state).
    changed: HashMap<(&'static str, &'static str), u64>,
}

/// The object store.
#[derive(Debug)]
pub struct Store {
    inner: RwLock<Inner>,
    /// The latest resourceVersion, for subscribers waiting on the history.
    latest: watch::Sender<u64>,
    config: StoreConfig,
    /// The service-account tokens issued so far (they are not API objects).
    tokens: tokens::TokenBook,
    /// The cluster's admission policy (`admission`), set once at start.
    admission: std::sync::OnceLock<crate::config::topology::Admission>,
}

impl Default for Store {
    fn default() -> Self {
        Self::new(StoreConfig::default())
    }
}

fn key(rt: &ResourceType) -> (&'static str, &'static str) {
    // The registry's resources are 'static; copying the strs keeps the key cheap.
    let r: &'static ResourceType = resources::named(rt.group, rt.plural);
    (r.group, r.plural)
}

fn obj_key(rt: &ResourceType, ns: &str, name: &str) -> (String, String) {
    let ns = if rt.namespaced { ns } else { "" };
    (ns.to_string(), name.to_string())
}

/// The current time as Kubernetes writes it (RFC 3339, seconds).
pub fn timestamp(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

fn now() -> String {
    timestamp(Utc::now())
}

const NAME_SUFFIX_CHARS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

fn random_suffix() -> String {
    uuid::Uuid::new_v4()
        .as_bytes()
        .iter()
        .take(5)
        .map(|b| NAME_SUFFIX_CHARS[usize::from(*b) % NAME_SUFFIX_CHARS.len()] as char)
        .collect()
}

impl Store {
    pub fn new(config: StoreConfig) -> Self {
        let (latest, _) = watch::channel(0);
        Self {
            inner: RwLock::new(Inner::default()),
            latest,
            config,
            tokens: tokens::TokenBook::default(),
            admission: std::sync::OnceLock::new(),
        }
    }

    /// Sets the cluster's admission policy (once; later calls are ignored).
    pub fn set_admission_policy(&self, policy: crate::config::topology::Admission) {
        let _ = self.admission.set(policy);
    }

    /// The cluster's admission policy (nothing denied unless set).
    pub fn admission_policy(&self) -> &crate::config::topology::Admission {
        static NONE: crate::config::topology::Admission = crate::config::topology::Admission::OPEN;
        self.admission.get().unwrap_or(&NONE)
    }

    /// The service-account tokens this cluster issued.
    pub fn tokens(&self) -> &tokens::TokenBook {
        &self.tokens
    }

    fn read(&self) -> RwLockReadGuard<'_, Inner> {
        self.inner.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Inner> {
        self.inner.write().unwrap_or_else(|p| p.into_inner())
    }

    /// The latest resourceVersion.
    pub fn current_rv(&self) -> u64 {
        self.read().rv
    }

    /// The resourceVersion of the latest change to any object of these resources (0 when
    /// none changed): a cache of state derived from them is current while this stays.
    pub fn changed_at(&self, resources: &[&ResourceType]) -> u64 {
        let inner = self.read();
        resources
            .iter()
            .filter_map(|rt| inner.changed.get(&key(rt)).copied())
            .max()
            .unwrap_or(0)
    }

    /// One object.
    pub fn get(&self, rt: &ResourceType, ns: &str, name: &str) -> Result<Obj, ApiError> {
        self.read()
            .tables
            .get(&key(rt))
            .and_then(|t| t.get(&obj_key(rt, ns, name)))
            .cloned()
            .ok_or_else(|| not_found(rt, name))
    }

    /// The objects of these names (namespace, name) that exist, under one read of the store.
    pub fn get_each<'a>(&self, rt: &ResourceType, names: impl IntoIterator<Item = &'a (String, String)>) -> Vec<Obj> {
        let inner = self.read();
        let Some(table) = inner.tables.get(&key(rt)) else {
            return Vec::new();
        };
        names
            .into_iter()
            // A namespaced kind's key is (namespace, name) as given: no copy per lookup.
            .filter_map(|k| match rt.namespaced {
                true => table.get(k),
                false => table.get(&obj_key(rt, &k.0, &k.1)),
            })
            .cloned()
            .collect()
    }

    /// The objects of a kind, in one namespace or all, with the resourceVersion of the list.
    pub fn list(&self, rt: &ResourceType, ns: Option<&str>) -> (Vec<Obj>, u64) {
        let inner = self.read();
        let items = match inner.tables.get(&key(rt)) {
            None => Vec::new(),
            Some(table) => match ns.filter(|_| rt.namespaced) {
                Some(ns) => table
                    .range((ns.to_string(), String::new())..)
                    .take_while(|((n, _), _)| n == ns)
                    .map(|(_, o)| o.clone())
                    .collect(),
                None => table.values().cloned().collect(),
            },
        };
        (items, inner.rv)
    }

    /// Gives `value` a name from its `generateName` when it has none: the prefix and five
    /// random characters no object of the kind in `ns` has yet. The API server's registry does
    /// this before validating admission runs (`rest.BeforeCreate`), so admission names the
    /// object that would be created; `create` keeps the name.
    pub fn generate_name(&self, rt: &ResourceType, ns: &str, value: &mut Value) {
        let (name, generate) = (meta_str(value, "name"), meta_str(value, "generateName"));
        if !name.is_empty() || generate.is_empty() {
            return;
        }
        let generate = generate.to_string();
        let inner = self.read();
        let table = inner.tables.get(&key(rt));
        for _ in 0..8 {
            let candidate = format!("{generate}{}", random_suffix());
            if !table.is_some_and(|t| t.contains_key(&obj_key(rt, ns, &candidate))) {
                drop(inner);
                set_meta(value, "name", json!(candidate));
                return;
            }
        }
    }

    /// Creates an object, assigning name (from generateName), uid, resourceVersion,
    /// creationTimestamp, generation and the kind's defaults.
    pub fn create(&self, rt: &'static ResourceType, ns: &str, mut value: Value) -> Result<Obj, ApiError> {
        let Some(obj) = value.as_object_mut() else {
            return Err(ApiError::BadRequest("the object must be a JSON object".into()));
        };
        obj.insert("apiVersion".into(), json!(rt.api_version()));
        obj.insert("kind".into(), json!(rt.kind));
        let meta = obj
            .entry("metadata")
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .ok_or_else(|| ApiError::BadRequest("metadata must be an object".into()))?;
        if rt.namespaced {
            meta.insert("namespace".into(), json!(ns));
        } else {
            meta.remove("namespace");
        }
        for field in [
            "resourceVersion",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "managedFields",
        ] {
            meta.remove(field);
        }
        let mut name = meta.get("name").and_then(Value::as_str).unwrap_or("").to_string();
        let generate = meta
            .get("generateName")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if name.is_empty() && generate.is_empty() {
            return Err(invalid(
                rt,
                "",
                vec![Cause::required("metadata.name", "name or generateName is required")],
            ));
        }
        meta.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
        meta.insert("creationTimestamp".into(), json!(now()));
        if rt.has_spec {
            meta.insert("generation".into(), json!(1));
        }
        defaults::on_create(rt, &mut value);

        let mut inner = self.write();
        if rt.namespaced {
            check_namespace_open(&inner, ns)?;
        }
        let table_key = key(rt);
        if name.is_empty() {
            let table = inner.tables.get(&table_key);
            // Retry like the apiserver would on a generated-name collision.
            for _ in 0..8 {
                let candidate = format!("{generate}{}", random_suffix());
                if !table.is_some_and(|t| t.contains_key(&obj_key(rt, ns, &candidate))) {
                    name = candidate;
                    break;
                }
            }
            if name.is_empty() {
                return Err(ApiError::Internal("could not generate a unique name".into()));
            }
            set_meta(&mut value, "name", json!(name));
        }
        defaults::on_named(rt, &mut value);
        let k = obj_key(rt, ns, &name);
        if inner.tables.get(&table_key).is_some_and(|t| t.contains_key(&k)) {
            return Err(ApiError::AlreadyExists {
                group: rt.group.into(),
                resource: rt.plural.into(),
                name,
            });
        }
        let rv = inner.rv + 1;
        set_meta(&mut value, "resourceVersion", json!(rv.to_string()));
        let stored = if rt.kind == "Event" {
            Stored::new_cold(value)?
        } else {
            Stored::new(value)?
        };
        inner.rv = rv;
        inner.tables.entry(table_key).or_default().insert(k, stored.clone());
        self.publish(&mut inner, rt, EventType::Added, stored.clone(), None);
        Ok(stored)
    }

    /// Replaces an object (PUT). A stale `metadata.resourceVersion` gives 409 Conflict; an
    /// empty one means "unconditional".
    pub fn update(
        &self,
        rt: &'static ResourceType,
        ns: &str,
        name: &str,
        part: Part,
        value: Value,
    ) -> Result<Obj, ApiError> {
        let expected = meta_str(&value, "resourceVersion").to_string();
        self.modify(rt, ns, name, part, |current| {
            if !expected.is_empty() && expected != meta_str(current, "resourceVersion") {
                return Err(ApiError::Conflict {
                    group: rt.group.into(),
                    resource: rt.plural.into(),
                    name: name.into(),
                });
            }
            *current = value;
            Ok(())
        })
    }

    /// Atomically reads, changes and writes back one object. `change` gets the current value
    /// and edits it; identity fields are restored afterwards, the part rules applied, and the
    /// generation bumped when the spec changed. An unchanged object is not rewritten.
    pub fn modify<F>(
        &self,
        rt: &'static ResourceType,
        ns: &str,
        name: &str,
        part: Part,
        change: F,
    ) -> Result<Obj, ApiError>
    where
        F: FnOnce(&mut Value) -> Result<(), ApiError>,
    {
        let mut inner = self.write();
        let table_key = key(rt);
        let k = obj_key(rt, ns, name);
        let old = inner
            .tables
            .get(&table_key)
            .and_then(|t| t.get(&k))
            .cloned()
            .ok_or_else(|| not_found(rt, name))?;
        let mut next = old.value().clone();
        change(&mut next)?;
        if !next.is_object() {
            return Err(ApiError::BadRequest("the object must be a JSON object".into()));
        }
        let new_name = meta_str(&next, "name");
        if !new_name.is_empty() && new_name != name {
            return Err(ApiError::BadRequest(format!(
                "the name of the object ({new_name}) does not match the name on the URL ({name})"
            )));
        }
        let mut next = merge_parts(rt, old.value(), next, part);
        restore_identity(rt, old.value(), &mut next);
        if part == Part::Main {
            defaults::on_write(rt, &mut next);
            rbac::check_update(rt, old.value(), &next)?;
        }
        if rt.has_spec && old.value().get("spec") != next.get("spec") {
            let generation = old
                .value()
                .pointer("/metadata/generation")
                .and_then(Value::as_i64)
                .unwrap_or(0);
            set_meta(&mut next, "generation", json!(generation + 1));
        }
        set_meta(&mut next, "resourceVersion", json!(old.resource_version().to_string()));
        if &next == old.value() {
            return Ok(old);
        }
        // An object marked for deletion whose last finalizer went goes away now.
        if old.is_terminating() && finalizers_empty(&next) && !awaits_kubelet(rt, &next) && !is_namespace(rt) {
            let stored = self.remove_locked(&mut inner, rt, &k, next)?;
            return Ok(stored);
        }
        let rv = inner.rv + 1;
        set_meta(&mut next, "resourceVersion", json!(rv.to_string()));
        let stored = Stored::new(next)?;
        inner.rv = rv;
        inner.tables.entry(table_key).or_default().insert(k, stored.clone());
        self.publish(&mut inner, rt, EventType::Modified, stored.clone(), Some(old));
        Ok(stored)
    }

    /// Deletes an object. Pods bound to a node are deleted gracefully (they get a
    /// deletionTimestamp and stay until their kubelet removes them with grace 0); objects with
    /// finalizers stay until the finalizers are gone; namespaces become `Terminating` and go
    /// once [`Store::finalize_namespace`] has emptied them.
    pub fn delete(
        &self,
        rt: &'static ResourceType,
        ns: &str,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<Deleted, ApiError> {
        let mut inner = self.write();
        let table_key = key(rt);
        let k = obj_key(rt, ns, name);
        let old = inner
            .tables
            .get(&table_key)
            .and_then(|t| t.get(&k))
            .cloned()
            .ok_or_else(|| not_found(rt, name))?;
        if let Some(uid) = opts.precondition_uid.as_deref().filter(|u| *u != old.uid()) {
            return Err(precondition(
                rt,
                name,
                format!(
                    "the UID in the precondition ({uid}) does not match the UID in record ({}). The object might have been deleted and then recreated",
                    old.uid()
                ),
            ));
        }
        if let Some(rv) = opts
            .precondition_rv
            .as_deref()
            .filter(|r| *r != old.resource_version().to_string())
        {
            return Err(precondition(
                rt,
                name,
                format!(
                    "the ResourceVersion in the precondition ({rv}) does not match the ResourceVersion in record ({}). The object might have been modified",
                    old.resource_version()
                ),
            ));
        }
        let grace = graceful_period(rt, old.value(), opts.grace_period_seconds);
        let has_finalizers = !finalizers_empty(old.value());
        let is_namespace = is_namespace(rt);
        if grace.is_none() && !has_finalizers && !is_namespace {
            let last = old.value().clone();
            let stored = self.remove_locked(&mut inner, rt, &k, last)?;
            return Ok(Deleted::Removed(stored));
        }
        // Mark for deletion (or shorten a pending graceful deletion).
        let mut next = old.value().clone();
        let already = old.is_terminating();
        let deadline = chrono::Duration::try_seconds(grace.unwrap_or(0))
            .and_then(|d| Utc::now().checked_add_signed(d))
            .unwrap_or(DateTime::<Utc>::MAX_UTC);
        let shorten = match (
            grace,
            next.pointer("/metadata/deletionGracePeriodSeconds")
                .and_then(Value::as_i64),
        ) {
            (Some(g), Some(cur)) => g < cur,
            _ => false,
        };
        if !already || shorten {
            set_meta(&mut next, "deletionTimestamp", json!(timestamp(deadline)));
            if let Some(g) = grace {
                set_meta(&mut next, "deletionGracePeriodSeconds", json!(g));
            }
        }
        if is_namespace && let Some(obj) = next.as_object_mut() {
            obj.insert("status".into(), json!({"phase": "Terminating"}));
        }
        if next == *old.value() {
            return Ok(Deleted::Terminating(old));
        }
        let rv = inner.rv + 1;
        set_meta(&mut next, "resourceVersion", json!(rv.to_string()));
        let stored = Stored::new(next)?;
        inner.rv = rv;
        inner.tables.entry(table_key).or_default().insert(k, stored.clone());
        self.publish(&mut inner, rt, EventType::Modified, stored.clone(), Some(old));
        Ok(Deleted::Terminating(stored))
    }

    /// Removes a terminating object now, whatever its grace period (what a kubelet does once
    /// a pod's containers have stopped). Finalizers still hold it.
    pub fn remove_terminated(&self, rt: &'static ResourceType, ns: &str, name: &str) -> Result<Option<Obj>, ApiError> {
        let opts = DeleteOptions {
            grace_period_seconds: Some(0),
            ..Default::default()
        };
        match self.delete(rt, ns, name, &opts)? {
            Deleted::Removed(o) => Ok(Some(o)),
            Deleted::Terminating(_) => Ok(None),
        }
    }

    /// The namespace controller's work for one terminating namespace: deletes what it still
    /// holds and removes the namespace once it is empty. Returns true when the namespace is gone.
    pub fn finalize_namespace(&self, name: &str) -> Result<bool, ApiError> {
        let ns_rt = resources::core("namespaces");
        let ns_obj = match self.get(ns_rt, "", name) {
            Ok(o) => o,
            Err(ApiError::NotFound { .. }) => return Ok(true),
            Err(e) => return Err(e),
        };
        if !ns_obj.is_terminating() {
            return Ok(false);
        }
        let mut remaining = 0usize;
        for rt in resources::all().iter().filter(|r| r.namespaced) {
            let (items, _) = self.list(rt, Some(name));
            for item in items {
                remaining += 1;
                match self.delete(rt, name, item.name(), &DeleteOptions::default()) {
                    Ok(Deleted::Removed(_)) | Err(ApiError::NotFound { .. }) => remaining -= 1,
                    Ok(Deleted::Terminating(_)) => {}
                    Err(e) => return Err(e),
                }
            }
        }
        if remaining > 0 {
            return Ok(false);
        }
        let mut inner = self.write();
        let k = obj_key(ns_rt, "", name);
        let Some(current) = inner.tables.get(&key(ns_rt)).and_then(|t| t.get(&k)).cloned() else {
            return Ok(true);
        };
        // Something may have been created between the sweep and now; check under the lock.
        let empty = resources::all().iter().filter(|r| r.namespaced).all(|rt| {
            inner.tables.get(&key(rt)).is_none_or(|t| {
                t.range((name.to_string(), String::new())..)
                    .next()
                    .is_none_or(|((n, _), _)| n != name)
            })
        });
        if !empty {
            return Ok(false);
        }
        let mut last = current.value().clone();
        if let Some(spec) = last.get_mut("spec").and_then(Value::as_object_mut) {
            spec.insert("finalizers".into(), json!([]));
        }
        self.remove_locked(&mut inner, ns_rt, &k, last)?;
        Ok(true)
    }

    /// Starts a watch on one kind. `WatchFrom::After(rv)` fails with 410 Expired when the
    /// history no longer holds every change after `rv`.
    pub fn watch(self: &Arc<Self>, rt: &ResourceType, ns: Option<&str>, from: WatchFrom) -> Result<Watch, ApiError> {
        // Subscribing under the read lock means no write lands between the snapshot or the
        // history replay and the live feed: no gap and no duplicate.
        let inner = self.read();
        let feed = self.subscribe_after(inner.rv);
        let table_key = key(rt);
        let ns = ns.filter(|_| rt.namespaced);
        let initial = match from {
            WatchFrom::Now => {
                let resource = resources::named(rt.group, rt.plural);
                let objects: Vec<Obj> = match inner.tables.get(&table_key) {
                    None => Vec::new(),
                    Some(t) => t
                        .iter()
                        .filter(|((n, _), _)| ns.is_none_or(|ns| ns == n))
                        .map(|(_, o)| o.clone())
                        .collect(),
                };
                objects
                    .into_iter()
                    .map(|o| {
                        Arc::new(Event {
                            rv: o.resource_version(),
                            kind: EventType::Added,
                            resource,
                            object: o,
                            previous: None,
                        })
                    })
                    .collect()
            }
            WatchFrom::After(rv) => {
                if rv < inner.compacted {
                    return Err(ApiError::Expired {
                        requested: rv,
                        oldest: inner.compacted + 1,
                    });
                }
                let start = inner.history.partition_point(|e| e.rv <= rv);
                inner
                    .history
                    .range(start..)
                    .filter(|e| key(e.resource) == table_key)
                    .filter(|e| ns.is_none_or(|ns| ns == e.object.namespace()))
                    .cloned()
                    .collect()
            }
        };
        Ok(Watch {
            initial,
            feed,
            start_rv: inner.rv,
        })
    }

    /// Every change in the store from now on (for controllers).
    pub fn subscribe(self: &Arc<Self>) -> Subscription {
        self.subscribe_after(self.current_rv())
    }

    fn subscribe_after(self: &Arc<Self>, rv: u64) -> Subscription {
        Subscription {
            store: self.clone(),
            after: rv,
            changes: self.latest.subscribe(),
        }
    }

    /// The first recorded change after `rv`, or why there is none.
    fn next_after(&self, rv: u64) -> Result<Arc<Event>, TryRecvError> {
        let inner = self.read();
        if rv < inner.compacted {
            return Err(TryRecvError::Lagged(inner.compacted - rv));
        }
        let at = inner.history.partition_point(|e| e.rv <= rv);
        inner.history.get(at).cloned().ok_or(TryRecvError::Empty)
    }

    /// The oldest resourceVersion a watch can still resume from.
    pub fn oldest_resumable_rv(&self) -> u64 {
        self.read().compacted
    }

    fn remove_locked(
        &self,
        inner: &mut Inner,
        rt: &ResourceType,
        k: &(String, String),
        mut last: Value,
    ) -> Result<Obj, ApiError> {
        let table_key = key(rt);
        let old = inner.tables.get_mut(&table_key).and_then(|t| t.remove(k));
        let rv = inner.rv + 1;
        set_meta(&mut last, "resourceVersion", json!(rv.to_string()));
        let stored = Stored::new(last)?;
        inner.rv = rv;
        self.publish(inner, rt, EventType::Deleted, stored.clone(), old);
        Ok(stored)
    }

    fn publish(&self, inner: &mut Inner, rt: &ResourceType, kind: EventType, object: Obj, previous: Option<Obj>) {
        let event = Arc::new(Event {
            rv: inner.rv,
            kind,
            resource: resources::named(rt.group, rt.plural),
            object,
            previous,
        });
        inner.changed.insert(key(rt), inner.rv);
        inner.history.push_back(event.clone());
        while inner.history.len() > self.config.history {
            if let Some(dropped) = inner.history.pop_front() {
                inner.compacted = dropped.rv;
            }
        }
        let rv = event.rv;
        drop(event);
        self.latest.send_replace(rv);
    }
}

fn not_found(rt: &ResourceType, name: &str) -> ApiError {
    ApiError::not_found(rt.group, rt.plural, name)
}

fn invalid(rt: &ResourceType, name: &str, causes: Vec<Cause>) -> ApiError {
    ApiError::Invalid {
        group: rt.group.into(),
        kind: rt.kind.into(),
        name: name.into(),
        causes,
    }
}

fn precondition(rt: &ResourceType, name: &str, reason: String) -> ApiError {
    ApiError::Precondition {
        group: rt.group.into(),
        resource: rt.plural.into(),
        name: name.into(),
        reason,
    }
}

fn check_namespace_open(inner: &Inner, ns: &str) -> Result<(), ApiError> {
    let ns_rt = resources::core("namespaces");
    match inner
        .tables
        .get(&key(ns_rt))
        .and_then(|t| t.get(&(String::new(), ns.to_string())))
    {
        None => Err(ApiError::not_found("", "namespaces", ns)),
        Some(n) if n.is_terminating() => Err(ApiError::Forbidden {
            group: String::new(),
            resource: "namespaces".into(),
            name: ns.into(),
            reason: format!("unable to create new content in namespace {ns} because it is being terminated"),
        }),
        Some(_) => Ok(()),
    }
}

fn set_meta(v: &mut Value, field: &str, value: Value) {
    if let Some(obj) = v.as_object_mut() {
        let meta = obj.entry("metadata").or_insert_with(|| json!({}));
        if !meta.is_object() {
            *meta = json!({});
        }
        if let Some(m) = meta.as_object_mut() {
            m.insert(field.into(), value);
        }
    }
}

fn is_namespace(rt: &ResourceType) -> bool {
    rt.group.is_empty() && rt.plural == "namespaces"
}

fn finalizers_empty(v: &Value) -> bool {
    v.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty)
}

/// A terminating pod bound to a node waits for its kubelet (a delete with grace 0).
fn awaits_kubelet(rt: &ResourceType, v: &Value) -> bool {
    rt.group.is_empty()
        && rt.plural == "pods"
        && v.pointer("/metadata/deletionGracePeriodSeconds")
            .and_then(Value::as_i64)
            .unwrap_or(0)
            > 0
}

/// The longest grace period honoured (ten years); larger requests are clamped to it.
const MAX_GRACE_SECONDS: i64 = 10 * 365 * 24 * 3600;

/// The grace period a delete gets, or None for an immediate removal.
fn graceful_period(rt: &ResourceType, v: &Value, requested: Option<i64>) -> Option<i64> {
    if !(rt.group.is_empty() && rt.plural == "pods") {
        return None;
    }
    let bound = v
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .is_some_and(|n| !n.is_empty());
    let phase = v.pointer("/status/phase").and_then(Value::as_str).unwrap_or("");
    if !bound || matches!(phase, "Succeeded" | "Failed") {
        return None;
    }
    let grace = requested
        .or_else(|| v.pointer("/spec/terminationGracePeriodSeconds").and_then(Value::as_i64))
        .unwrap_or(30)
        .min(MAX_GRACE_SECONDS);
    (grace > 0).then_some(grace)
}

/// Applies the part rules: a main write keeps the stored status (when the kind has a status
/// subresource); a status write keeps everything but the status.
fn merge_parts(rt: &ResourceType, old: &Value, next: Value, part: Part) -> Value {
    match part {
        Part::Main if rt.has_status() => {
            let mut next = next;
            if let Some(obj) = next.as_object_mut() {
                match old.get("status") {
                    Some(s) => obj.insert("status".into(), s.clone()),
                    None => obj.remove("status"),
                };
            }
            next
        }
        Part::Main => next,
        Part::Status => {
            let mut merged = old.clone();
            if let Some(obj) = merged.as_object_mut() {
                match next.get("status") {
                    Some(s) => obj.insert("status".into(), s.clone()),
                    None => obj.remove("status"),
                };
            }
            merged
        }
    }
}

/// Puts back what a write may not change: identity, kind, creation and deletion stamps.
fn restore_identity(rt: &ResourceType, old: &Value, next: &mut Value) {
    let Some(obj) = next.as_object_mut() else { return };
    obj.insert("apiVersion".into(), json!(rt.api_version()));
    obj.insert("kind".into(), json!(rt.kind));
    let old_meta = old
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let meta = obj.entry("metadata").or_insert_with(|| json!({}));
    if !meta.is_object() {
        *meta = json!({});
    }
    let Some(meta) = meta.as_object_mut() else { return };
    for field in [
        "name",
        "namespace",
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
        "generateName",
    ] {
        restore(meta, &old_meta, field);
    }
    meta.remove("managedFields");
    if rt.kind == "Service" {
        keep_service_addresses(old, next);
    }
}

/// A Service's allocated ClusterIP and node ports survive updates that leave them out.
fn keep_service_addresses(old: &Value, next: &mut Value) {
    let Some(spec) = next.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    for field in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
        let missing = spec.get(field).is_none_or(|v| v.is_null() || v.as_str() == Some(""));
        if missing && let Some(v) = old.pointer(&format!("/spec/{field}")) {
            spec.insert(field.into(), v.clone());
        }
    }
    let old_ports = old
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let node_port_type = matches!(
        spec.get("type").and_then(Value::as_str),
        Some("NodePort" | "LoadBalancer")
    );
    if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
        for p in ports.iter_mut().filter_map(Value::as_object_mut) {
            if !node_port_type || p.get("nodePort").is_some_and(|v| !v.is_null()) {
                continue;
            }
            let same = old_ports
                .iter()
                .find(|o| o.get("port") == p.get("port") && o.get("protocol") == p.get("protocol"));
            if let Some(np) = same.and_then(|o| o.get("nodePort")) {
                p.insert("nodePort".into(), np.clone());
            }
        }
    }
}

fn restore(meta: &mut Map<String, Value>, old: &Map<String, Value>, field: &str) {
    match old.get(field) {
        Some(v) => meta.insert(field.into(), v.clone()),
        None => meta.remove(field),
    };
}

#[cfg(test)]
mod tests;
