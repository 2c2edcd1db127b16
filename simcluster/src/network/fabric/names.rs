//! The fabric's index of its pods by namespace and name: every exec looks its pod up, and a
//! scan of 20,000 pods' names was a tenth of a 5,000-node run's probing.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::{Arc, LazyLock};

use super::PodFacts;

/// A hash of each pod's namespace and name → its index ([`COLLIDE`] where two pods' hashes are
/// the same), and how many pods there were when it was made (pods added since are found by a
/// scan).
#[derive(Debug, Clone, Default)]
pub struct PodNames(HashMap<u64, usize>, usize);

/// More than one pod has this hash: look them up by a scan.
const COLLIDE: usize = usize::MAX;

/// One hasher for every index, so that indexes made at different times agree.
static HASHER: LazyLock<std::collections::hash_map::RandomState> =
    LazyLock::new(std::collections::hash_map::RandomState::new);

fn hash(namespace: &str, name: &str) -> u64 {
    let mut h = HASHER.build_hasher();
    h.write(namespace.as_bytes());
    h.write_u8(0xff);
    h.write(name.as_bytes());
    h.finish()
}

impl PodNames {
    pub fn of(pods: &[Arc<PodFacts>]) -> PodNames {
        let mut names = HashMap::with_capacity(pods.len());
        for (i, p) in pods.iter().enumerate() {
            names
                .entry(hash(&p.namespace, &p.name))
                .and_modify(|at| *at = COLLIDE)
                .or_insert(i);
        }
        PodNames(names, pods.len())
    }

    /// The index in `pods` (those the index was made of) of the pod with this namespace and name.
    pub fn find(&self, pods: &[Arc<PodFacts>], namespace: &str, name: &str) -> Option<usize> {
        let is = |p: &PodFacts| p.namespace == namespace && p.name == name;
        let scan = || pods.iter().position(|p| is(p));
        if self.1 != pods.len() {
            return scan();
        }
        match self.0.get(&hash(namespace, name)).copied() {
            Some(COLLIDE) => scan(),
            Some(i) => pods.get(i).filter(|p| is(p)).map(|_| i),
            None => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(namespace: &str, name: &str) -> Arc<PodFacts> {
        Arc::new(PodFacts {
            namespace: namespace.into(),
            name: name.into(),
            hostname: name.into(),
            ip: std::net::Ipv4Addr::new(10, 1, 0, 5),
            ipv6: None,
            node: 0,
            host_network: false,
            serves: Vec::new(),
            host_ports: Vec::new(),
            meta: Arc::default(),
        })
    }

    /// Every pod is found by its namespace and name, in a fabric of one or thousands of pods;
    /// the same name in another namespace is another pod; a name no pod has is None; pods added
    /// after the index was made are found by a scan; two pods whose hashes collide are both found.
    #[rstest::rstest]
    #[case::one(1)]
    #[case::thousands(5_000)]
    fn finds_each_pod_by_namespace_and_name(#[case] n: usize) {
        let mut pods: Vec<Arc<PodFacts>> = (0..n)
            .flat_map(|i| [pod("a", &format!("p-{i}")), pod("b", &format!("p-{i}"))])
            .collect();
        let names = PodNames::of(&pods);
        for (i, p) in pods.iter().enumerate() {
            assert_eq!(names.find(&pods, &p.namespace, &p.name), Some(i));
        }
        assert_eq!(names.find(&pods, "a", "missing"), None);
        assert_eq!(names.find(&pods, "c", "p-0"), None);
        pods.push(pod("a", "late"));
        assert_eq!(names.find(&pods, "a", "late"), Some(pods.len() - 1));

        let mut collided = PodNames::of(&pods);
        let (first, second) = (hash("a", "p-0"), pods.len() - 1);
        collided.0.insert(first, COLLIDE);
        assert_eq!(collided.find(&pods, "a", "p-0"), Some(0));
        assert_eq!(collided.find(&pods, "a", "late"), Some(second));
    }
}
