//! What was read from each version of a stored object, kept by its resourceVersion across the
//! network's rebuilds (the fabric's pods, Services and Endpoints; the cluster DNS's pods), and
//! the hasher of such unique numbers.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use crate::store::Obj;

/// What was read from each version of a stored object, by its resourceVersion: what was read
/// and the rebuild that last saw it.
#[derive(Debug)]
pub struct ByVersion<T>(HashMap<u64, Seen<T>, BuildHasherDefault<AddressHasher>>);

type Seen<T> = (T, u64);

impl<T> Default for ByVersion<T> {
    fn default() -> Self {
        ByVersion(HashMap::default())
    }
}

impl<T: Clone> ByVersion<T> {
    /// What `obj`'s version says, read by `read` the first time; marks it seen in `rebuild`.
    pub fn get(&mut self, obj: &Obj, rebuild: u64, read: impl FnOnce(&Obj) -> T) -> T {
        let key = obj.resource_version();
        if let Some(entry) = self.0.get_mut(&key) {
            entry.1 = rebuild;
            return entry.0.clone();
        }
        let value = read(obj);
        self.0.insert(key, (value.clone(), rebuild));
        value
    }

    /// Forgets the versions `rebuild` did not see (changed or deleted since), when there are
    /// more than the `seen` it saw.
    pub fn sweep(&mut self, rebuild: u64, seen: Option<usize>) {
        if seen.is_none_or(|seen| self.0.len() > seen) {
            self.0.retain(|_, (_, at)| *at == rebuild);
        }
    }
}

/// Hashes a number already unique (an address, a resourceVersion) by one multiplication.
#[derive(Debug, Default)]
pub struct AddressHasher(u64);

impl std::hash::Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 << 8 | u64::from(*b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(29);
    }
}
