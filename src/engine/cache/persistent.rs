//! Models a process keeps after the call that loaded them, so that a later
//! load of the same file with the same options finds them ready: weights,
//! context, thread pool and prompt cache.
//!
//! The table is keyed by the file's identity (device, inode, size,
//! modification time) and the load options: a file replaced on disk, even
//! under the same path, is a new key. It holds at most a given number of
//! entries and evicts the least recently used. Evicting or removing an entry
//! only forgets it here; whoever still holds the value keeps it alive.

use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::backend::params::LoadParams;

/// What identifies a file's contents without reading them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FileId {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime_sec: i64,
    pub mtime_nsec: i64,
}

impl FileId {
    /// The identity of the file `path` names now (links followed).
    pub fn of(path: &Path) -> io::Result<Self> {
        let meta = std::fs::metadata(path)?;
        Ok(Self {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime_sec: meta.mtime(),
            mtime_nsec: meta.mtime_nsec(),
        })
    }
}

/// A file and the options it was loaded with.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Key {
    pub file: FileId,
    pub params: LoadParams,
}

/// One entry, as listed for the user (`phpinfo()`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listing {
    pub path: PathBuf,
    /// Loads answered by this entry, the first one included.
    pub uses: u64,
}

#[derive(Debug)]
struct Entry<V> {
    key: Key,
    path: PathBuf,
    value: Arc<V>,
    last_used: u64,
    uses: u64,
}

/// A bounded table of loaded values, least recently used evicted first.
#[derive(Debug)]
pub struct Registry<V> {
    entries: Vec<Entry<V>>,
    clock: u64,
    /// Values made because the table did not have them.
    misses: u64,
}

impl<V> Default for Registry<V> {
    fn default() -> Self {
        Self {
            entries: Vec::new(),
            clock: 0,
            misses: 0,
        }
    }
}

impl<V> Registry<V> {
    /// The value for `key`, made by `make` (and kept) when the table lacks
    /// it. The table keeps at most `max` entries; with `max == 0` nothing is
    /// kept and every call makes a value. Returns the value and whether it
    /// was found.
    pub fn get_or_make<E>(
        &mut self,
        key: Key,
        path: &Path,
        max: usize,
        make: impl FnOnce() -> Result<V, E>,
    ) -> Result<(Arc<V>, bool), E> {
        self.clock += 1;
        if let Some(entry) = self.entries.iter_mut().find(|e| e.key == key) {
            entry.last_used = self.clock;
            entry.uses += 1;
            return Ok((Arc::clone(&entry.value), true));
        }
        // Make room first, so that an evicted model is freed before the new
        // one is loaded (when nobody else holds it).
        self.shrink_to(max.saturating_sub(1));
        let value = Arc::new(make()?);
        self.misses += 1;
        if max > 0 {
            self.entries.push(Entry {
                key,
                path: path.to_path_buf(),
                value: Arc::clone(&value),
                last_used: self.clock,
                uses: 1,
            });
        }
        Ok((value, false))
    }

    /// Forget `value` if the table holds it; true when it did.
    #[cfg(test)]
    pub fn remove(&mut self, value: &Arc<V>) -> bool {
        self.remove_at(Arc::as_ptr(value).cast())
    }

    /// Forget the value at `address` (the value behind an `Arc` whatever type
    /// it is seen as); true when the table held it.
    pub fn remove_at(&mut self, address: *const ()) -> bool {
        let before = self.entries.len();
        self.entries
            .retain(|e| !std::ptr::eq(Arc::as_ptr(&e.value).cast::<()>(), address));
        self.entries.len() != before
    }

    /// Evict the least recently used entries until at most `max` are left.
    pub fn shrink_to(&mut self, max: usize) {
        while self.entries.len() > max {
            let Some(oldest) = least_recent(&self.entries, |e| e.last_used) else {
                return;
            };
            self.entries.remove(oldest);
        }
    }

    /// Forget every entry.
    pub fn clear(&mut self) {
        self.entries.clear();
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// How many values the table had to make since the process started.
    pub fn misses(&self) -> u64 {
        self.misses
    }

    /// The entries, most recently used first.
    pub fn listing(&self) -> Vec<Listing> {
        let mut entries: Vec<&Entry<V>> = self.entries.iter().collect();
        entries.sort_by_key(|e| std::cmp::Reverse(e.last_used));
        entries
            .into_iter()
            .map(|e| Listing {
                path: e.path.clone(),
                uses: e.uses,
            })
            .collect()
    }
}

/// The index of the entry `used` says was used least recently.
pub fn least_recent<T>(entries: &[T], used: impl Fn(&T) -> u64) -> Option<usize> {
    entries
        .iter()
        .enumerate()
        .min_by_key(|(_, e)| used(e))
        .map(|(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::convert::Infallible;

    fn key(ino: u64) -> Key {
        Key {
            file: FileId {
                dev: 1,
                ino,
                size: 10,
                mtime_sec: 0,
                mtime_nsec: 0,
            },
            params: LoadParams::default(),
        }
    }

    fn get(r: &mut Registry<String>, ino: u64, max: usize) -> (Arc<String>, bool) {
        let path = PathBuf::from(format!("/m/{ino}"));
        match r.get_or_make::<Infallible>(key(ino), &path, max, || Ok(format!("model {ino}"))) {
            Ok(found) => found,
            Err(never) => match never {},
        }
    }

    #[test]
    fn a_second_load_finds_the_first() {
        let mut r = Registry::default();
        let (a, found_a) = get(&mut r, 1, 2);
        let (b, found_b) = get(&mut r, 1, 2);
        assert!(!found_a && found_b);
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(r.misses(), 1);
        assert_eq!(r.listing()[0].uses, 2);
    }

    #[test]
    fn any_change_of_identity_or_options_is_another_key() {
        let mut r: Registry<String> = Registry::default();
        let base = key(1);
        let mut variants = vec![base.clone()];
        for change in 0..6 {
            let mut k = base.clone();
            match change {
                0 => k.file.dev = 2,
                1 => k.file.ino = 2,
                2 => k.file.size = 11,
                3 => k.file.mtime_sec = 1,
                4 => k.file.mtime_nsec = 1,
                _ => k.params.n_threads += 1,
            }
            variants.push(k);
        }
        for k in &variants {
            let made =
                r.get_or_make::<Infallible>(k.clone(), Path::new("/m"), 16, || Ok(String::new()));
            assert!(matches!(made, Ok((_, false))), "{k:?} was found");
        }
        assert_eq!(r.len(), variants.len());
    }

    #[test]
    fn the_least_recently_used_is_evicted() {
        let mut r = Registry::default();
        get(&mut r, 1, 2);
        get(&mut r, 2, 2);
        get(&mut r, 1, 2); // 1 is now more recent than 2
        get(&mut r, 3, 2); // evicts 2
        assert!(get(&mut r, 1, 2).1);
        assert!(get(&mut r, 3, 2).1);
        assert!(!get(&mut r, 2, 2).1, "2 was evicted");
        assert_eq!(r.len(), 2);
        let paths: Vec<PathBuf> = r.listing().into_iter().map(|l| l.path).collect();
        assert_eq!(paths, [PathBuf::from("/m/2"), PathBuf::from("/m/3")]);
    }

    #[test]
    fn a_limit_of_zero_keeps_nothing() {
        let mut r = Registry::default();
        let (a, _) = get(&mut r, 1, 0);
        let (b, found) = get(&mut r, 1, 0);
        assert!(!found && !Arc::ptr_eq(&a, &b));
        assert!(r.is_empty());
    }

    #[test]
    fn removing_forgets_only_that_value_and_leaves_holders_theirs() {
        let mut r = Registry::default();
        let (a, _) = get(&mut r, 1, 2);
        get(&mut r, 2, 2);
        assert!(r.remove(&a));
        assert!(!r.remove(&a));
        assert_eq!(*a, "model 1", "the holder keeps its value");
        assert!(!get(&mut r, 1, 2).1);
        assert!(get(&mut r, 2, 2).1);
    }

    #[test]
    fn a_failed_make_keeps_nothing() {
        let mut r: Registry<String> = Registry::default();
        let made = r.get_or_make(key(1), Path::new("/m"), 2, || Err("no"));
        assert_eq!(made.err(), Some("no"));
        assert!(r.is_empty());
        assert_eq!(r.misses(), 0);
    }

    #[test]
    fn file_identity_changes_when_the_file_is_replaced() {
        let dir = std::env::temp_dir().join(format!("infer-persist-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("m.gguf");
        std::fs::write(&path, b"GGUF one").unwrap();
        let first = FileId::of(&path).unwrap();
        assert_eq!(first, FileId::of(&path).unwrap());
        let next = dir.join("m.next");
        std::fs::write(&next, b"GGUF two").unwrap();
        std::fs::rename(&next, &path).unwrap();
        assert_ne!(first, FileId::of(&path).unwrap());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
