//! Hash tables for the converter and the grammar checker.
//!
//! foldhash instead of std's SipHash: the converter hashes names, keys and
//! expressions millions of times for a large schema, and SipHash took about
//! 8% of the slowest conversions. `Map` and `Set` are seeded per process
//! (a schema crafted to collide cannot be prepared in advance); `hash_of`
//! is fixed, for hashes that must be the same from run to run.

use std::hash::{BuildHasher, Hash};

/// A hash map with a fast, per-process seeded hasher.
pub(crate) type Map<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// A hash set with a fast, per-process seeded hasher.
pub(crate) type Set<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;

/// A hash of `value`, the same in every run (for bucketing before an exact
/// comparison).
pub fn hash_of<T: Hash + ?Sized>(value: &T) -> u64 {
    foldhash::fast::FixedState::default().hash_one(value)
}
