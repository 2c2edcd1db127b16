//! What a reader made of each object's version, kept while the object keeps that version: a
//! loop that looks at every pod of a big cluster at each change reads only the versions that
//! changed (and keeps no pod decoded; see [`Stored`](super::Stored)).

use std::collections::{HashMap, HashSet};

use super::Obj;

/// By object uid: the resourceVersion read and what was made of it.
#[derive(Debug)]
pub struct PerVersion<T>(HashMap<String, (u64, T)>);

impl<T> Default for PerVersion<T> {
    fn default() -> Self {
        PerVersion(HashMap::new())
    }
}

impl<T: Clone> PerVersion<T> {
    /// What `read` made of `obj`'s version, read only where the version is new.
    pub fn of(&mut self, obj: &Obj, read: impl FnOnce(&Obj) -> T) -> T {
        let version = obj.resource_version();
        if let Some((at, made)) = self.0.get(obj.uid())
            && *at == version
        {
            return made.clone();
        }
        let made = read(obj);
        self.0.insert(obj.uid().to_string(), (version, made.clone()));
        made
    }

    /// Forgets a deleted object.
    pub fn forget(&mut self, uid: &str) {
        self.0.remove(uid);
    }

    /// Forgets the objects not in `listed` (deleted since).
    pub fn keep_only(&mut self, listed: &[Obj]) {
        if self.0.len() > listed.len() {
            let live: HashSet<&str> = listed.iter().map(|o| o.uid()).collect();
            self.0.retain(|uid, _| live.contains(uid.as_str()));
        }
    }

    /// How many objects it holds.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.0.len()
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Part, Store, resources};
    use serde_json::json;

    /// A version is read once; a copy of it without its value is not decoded again; the next
    /// version is read again; forgotten or unlisted objects go.
    #[test]
    fn reads_each_version_once() {
        let store = Store::default();
        let cms = resources::core("configmaps");
        store
            .create(resources::core("namespaces"), "", json!({"metadata": {"name": "ns"}}))
            .expect("ns");
        let first = store
            .create(cms, "ns", json!({"metadata": {"name": "c"}, "data": {"k": "1"}}))
            .expect("cm");
        let mut cache = PerVersion::default();
        let read = |o: &Obj| crate::vocab::json::str(o.value(), "/data/k").to_string();
        assert_eq!(cache.of(&first, read), "1");
        let cold = first.without_value();
        assert_eq!(cache.of(&cold, read), "1");
        assert!(!cold.is_decoded(), "the same version is not read again");
        let next = store
            .modify(cms, "ns", "c", Part::Main, |c| {
                c["data"]["k"] = json!("2");
                Ok(())
            })
            .expect("next");
        assert_eq!(cache.of(&next, read), "2");
        cache.keep_only(std::slice::from_ref(&next));
        assert_eq!(cache.len(), 1);
        cache.keep_only(&[]);
        assert!(cache.is_empty());
        assert_eq!(cache.of(&next, read), "2");
        cache.forget(next.uid());
        assert!(cache.is_empty());
    }
}
