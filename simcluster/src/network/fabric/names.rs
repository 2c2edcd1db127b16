//! The fabric's index of its pods by namespace and name: every exec looks its pod up, and a
//! scan of 20,000 pods' names was a tenth of a 5,000-node run's probing.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use super::PodFacts;

/// A hash of each pod's namespace and name → its index ([`COLLIDE`] where two pods' hashes are
/// the same), made at the second lookup in a fabric (a fabric rebuilt after each pod change, as
/// under full coverage, is often asked once: a scan then costs less than an index), and how
/// many pods there were when it was made (pods added since are found by a scan).
#[derive(Debug, Default)]
pub struct PodNames {
    index: OnceLock<(HashMap<u64, usize>, usize)>,
    asked: AtomicBool,
}

impl Clone for PodNames {
    /// A copy starts without an index (its pods may change before it is asked).
    fn clone(&self) -> Self {
        PodNames::default()
    }
}

/// More than one pod has this hash: look them up by a scan.
const COLLIDE: usize = usize::MAX;

/// FNV-1a of the namespace, a separator no name holds, and the name.
fn hash(namespace: &str, name: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in namespace.bytes().chain([0xff]).chain(name.bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

impl PodNames {
    fn made(pods: &[Arc<PodFacts>]) -> (HashMap<u64, usize>, usize) {
        let mut names = HashMap::with_capacity(pods.len());
        for (i, p) in pods.iter().enumerate() {
            names
                .entry(hash(&p.namespace, &p.name))
                .and_modify(|at| *at = COLLIDE)
                .or_insert(i);
        }
        (names, pods.len())
    }

    /// The index in `pods` (the fabric's pods) of the pod with this namespace and name.
    pub fn find(&self, pods: &[Arc<PodFacts>], namespace: &str, name: &str) -> Option<usize> {
        let is = |p: &PodFacts| p.namespace == namespace && p.name == name;
        let scan = || pods.iter().position(|p| is(p));
        if !self.asked.swap(true, Ordering::Relaxed) && self.index.get().is_none() {
            return scan();
        }
        let (names, made_for) = self.index.get_or_init(|| Self::made(pods));
        if *made_for != pods.len() {
            return scan();
        }
        match names.get(&hash(namespace, name)).copied() {
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
        let names = PodNames::default();
        for (i, p) in pods.iter().enumerate() {
            assert_eq!(names.find(&pods, &p.namespace, &p.name), Some(i));
            assert_eq!(
                names.index.get().is_some(),
                i > 0,
                "the index is made at the second lookup"
            );
        }
        assert_eq!(names.find(&pods, "a", "missing"), None);
        assert_eq!(names.find(&pods, "c", "p-0"), None);
        pods.push(pod("a", "late"));
        assert_eq!(names.find(&pods, "a", "late"), Some(pods.len() - 1));

        let (mut made, count) = PodNames::made(&pods);
        let (first, second) = (hash("a", "p-0"), pods.len() - 1);
        made.insert(first, COLLIDE);
        let collided = PodNames::default();
        let _ = collided.index.set((made, count));
        assert_eq!(collided.find(&pods, "a", "p-0"), Some(0));
        assert_eq!(collided.find(&pods, "a", "late"), Some(second));
    }
}
