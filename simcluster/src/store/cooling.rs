//! The cooling sweep: stored versions whose decoded value went unread for a whole interval
//! give it up, in the tables and in the change history alike; their encodings stay, and the
//! next read decodes them again.
//!
//! What it spares: at 5,000 nodes the bundled cluster holds about 130,000 Events (each written
//! once, read only as JSON by whoever lists them) and a history of 10,000 versions most of
//! which a newer one superseded; as decoded values they were over a gigabyte.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use super::{Event, Obj, Store};

/// How often the cluster sweeps: a version unread for one to two intervals loses its value.
pub const INTERVAL: Duration = Duration::from_secs(2);

/// Where a version that gives up its value is held.
enum Place {
    Table((&'static str, &'static str), (String, String)),
    /// The history entry of this resourceVersion: its object, or the version before it.
    History(u64, bool),
}

impl Store {
    /// One sweep: every version whose value was not read since the last sweep is replaced, in
    /// its table and in the history, by the same version without its decoded value. Gives the
    /// number of versions that gave up their value (each counted once, wherever it was held).
    ///
    /// Writers wait only for the look (under the read lock, no allocation but the list of
    /// places) and the swaps; the copies are made with no lock held. A version written or
    /// read meanwhile is kept where it was replaced; its next read decodes it again.
    pub fn cool(&self) -> usize {
        let mut places: Vec<(Place, Obj)> = Vec::new();
        // One decision per version, wherever it is held.
        let mut decided: HashMap<usize, bool> = HashMap::new();
        {
            let inner = self.read();
            let mut cold = |o: &Obj| *decided.entry(Arc::as_ptr(o) as usize).or_insert_with(|| o.unread());
            for (tk, table) in &inner.tables {
                for (k, o) in table {
                    if cold(o) {
                        places.push((Place::Table(*tk, k.clone()), o.clone()));
                    }
                }
            }
            for e in &inner.history {
                if cold(&e.object) {
                    places.push((Place::History(e.rv, false), e.object.clone()));
                }
                if let Some(p) = e.previous.as_ref().filter(|p| cold(p)) {
                    places.push((Place::History(e.rv, true), p.clone()));
                }
            }
        }
        // The copies, shared by every place of the same version.
        let mut copies: HashMap<usize, Obj> = HashMap::new();
        let swaps: Vec<(Place, Obj, Obj)> = places
            .into_iter()
            .map(|(place, o)| {
                let copy = copies
                    .entry(Arc::as_ptr(&o) as usize)
                    .or_insert_with(|| o.without_value())
                    .clone();
                (place, o, copy)
            })
            .collect();
        let mut inner = self.write();
        let mut swapped: std::collections::HashSet<usize> = std::collections::HashSet::new();
        for (place, old, copy) in swaps {
            match place {
                Place::Table(tk, k) => {
                    if let Some(o) = inner.tables.get_mut(&tk).and_then(|t| t.get_mut(&k))
                        && Arc::ptr_eq(o, &old)
                    {
                        *o = copy;
                        swapped.insert(Arc::as_ptr(&old) as usize);
                    }
                }
                Place::History(rv, previous) => {
                    let at = inner.history.partition_point(|e| e.rv < rv);
                    if let Some(e) = inner.history.get_mut(at).filter(|e| e.rv == rv) {
                        let held = if previous { e.previous.as_ref() } else { Some(&e.object) };
                        if held.is_some_and(|h| Arc::ptr_eq(h, &old)) {
                            let (object, prev) = if previous {
                                (e.object.clone(), Some(copy))
                            } else {
                                (copy, e.previous.clone())
                            };
                            *e = Arc::new(Event {
                                rv: e.rv,
                                kind: e.kind,
                                resource: e.resource,
                                object,
                                previous: prev,
                            });
                            swapped.insert(Arc::as_ptr(&old) as usize);
                        }
                    }
                }
            }
        }
        drop(inner);
        // The old versions (some still held by readers) are released here, outside the lock.
        drop(copies);
        swapped.len()
    }
}

/// Sweeps `store` every [`INTERVAL`] for as long as the cluster runs.
pub async fn keep_cool(store: Arc<Store>) {
    let mut tick = tokio::time::interval(INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let started = std::time::Instant::now();
        let cooled = store.cool();
        if cooled > 0 {
            tracing::debug!(
                "{cooled} stored versions gave up their decoded value in {:?}",
                started.elapsed()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;
    use serde_json::json;

    use crate::store::resources;
    use crate::store::{Part, Store, StoreConfig, WatchFrom};

    fn store_with_pods(n: usize) -> Store {
        let store = Store::new(StoreConfig { history: 100 });
        let ns = resources::core("namespaces");
        store
            .create(ns, "", json!({"metadata": {"name": "shop"}}))
            .expect("test store");
        for i in 0..n {
            let pods = resources::core("pods");
            store
                .create(
                    pods,
                    "shop",
                    json!({"metadata": {"name": format!("p{i}"), "labels": {"app": "web"}},
                       "spec": {"containers": [{"name": "c", "image": "agnhost:2.52"}]}}),
                )
                .expect("test store");
        }
        store
    }

    #[rstest]
    #[case::one(1)]
    #[case::several(7)]
    fn unread_versions_give_up_their_value_and_read_the_same(#[case] n: usize) {
        let store = store_with_pods(n);
        let pods = resources::core("pods");
        let before: Vec<_> = store
            .list(pods, Some("shop"))
            .0
            .iter()
            .map(|o| o.value().clone())
            .collect();
        assert_eq!(store.cool(), 0, "every version was read since it was written");
        // The namespace and each pod, in the table and in the history alike: one decision each.
        assert_eq!(store.cool(), n + 1);
        let (after, _) = store.list(pods, Some("shop"));
        assert!(after.iter().all(|o| !o.is_decoded()));
        let values: Vec<_> = after.iter().map(|o| o.value().clone()).collect();
        assert_eq!(values, before);
        assert_eq!(store.cool(), 0, "read again: kept another interval");
    }

    #[test]
    fn the_history_gives_up_superseded_versions_and_still_replays_them() {
        let store = std::sync::Arc::new(store_with_pods(2));
        let pods = resources::core("pods");
        let first = store.get(pods, "shop", "p0").expect("test store").resource_version();
        store
            .modify(pods, "shop", "p0", Part::Main, |v| {
                v["metadata"]["labels"]["tier"] = json!("front");
                Ok(())
            })
            .expect("test store");
        store.cool();
        store.cool();
        let watch = store
            .watch(pods, Some("shop"), WatchFrom::After(first - 1))
            .expect("test store");
        assert!(watch.initial.iter().all(|e| !e.object.is_decoded()));
        let mut seen = Vec::new();
        for e in &watch.initial {
            seen.push((e.kind, e.object.value().pointer("/metadata/labels").cloned()));
            if let Some(prev) = &e.previous {
                assert_eq!(prev.value().pointer("/metadata/labels/tier"), None);
            }
        }
        let labels = |t: Option<&str>| {
            let mut l = json!({"app": "web"});
            if let Some(t) = t {
                l["tier"] = json!(t);
            }
            Some(l)
        };
        use crate::store::EventType::{Added, Modified};
        assert_eq!(
            seen,
            vec![
                (Added, labels(None)),
                (Added, labels(None)),
                (Modified, labels(Some("front")))
            ]
        );
    }
}
