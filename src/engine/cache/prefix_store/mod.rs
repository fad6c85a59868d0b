//! The prompt prefixes shared by the processes of one machine: PHP-FPM
//! workers, CLI workers and `php -S` with the same model reuse each other's
//! evaluated prefixes through files in one directory
//! (`infer.prompt_cache_dir`, best on a tmpfs such as `/dev/shm/…`).
//!
//! An entry is one saved sequence state and the tokens it holds. Its name
//! carries the key of what the numbers depend on (see [`identity`]), a hash
//! of its first [`HEAD_TOKENS`] tokens, its length and a hash of all its
//! tokens, so that a lookup lists the directory and opens only the entries
//! that can share a prefix with the prompt. The file repeats the key and
//! the tokens in a header and ends in a CRC-32 of everything it holds; an
//! entry that is truncated, damaged, written for another key or not ours is
//! never restored, and removed. A state is never believed larger than the
//! model can need for its tokens ([`StateBound`]), and its memory is
//! reserved fallibly: a hostile length is a rejected entry, not an abort.
//!
//! The directory is reached as a [`PrivateDir`]: this user's, others may not
//! write to it, no symbolic link on the way, every entry opened without
//! following one and without blocking on a FIFO. Processes of different
//! namespaces (`infer.prompt_cache_namespace`) never share an entry: the
//! namespace is part of every key.
//!
//! Entries are written to a temporary file created with mode 0600 and
//! renamed into place, so a reader sees a whole entry or none, and two
//! writers of the same prefix each put a whole one there. The directory is
//! bounded in bytes: after each write the least recently used entries go
//! (a hit touches its entry's modification time).
//!
//! Nothing here writes to the user's output: a failure is counted in the
//! statistics (`phpinfo()`) and the prefix is evaluated as if the store were
//! empty.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use llama_cpp_2::token::LlamaToken;

use super::persistent::FileId;
use crate::engine::llama::context::SavedState;
use crate::engine::llama::runtime::system_info;
use crate::private_dir::{PrivateDir, Rule};

mod entry;
use entry::{
    checksum, dispose, evict, hash_tokens, list, load, our_entries, read_tokens, temporary_name,
    write_new, EntryName, Fnv, Limits, Reject,
};

/// Default bound of the directory: about 55 prefixes of 400 tokens of
/// SmolLM2-135M (23 KiB per token), 100 of a 0.5B model (12 KiB per token).
pub const DEFAULT_LIMIT_BYTES: u64 = 512 << 20;

/// Default least number of tokens a prompt must add to what the store holds
/// for its state to be written: every write costs tens of KiB per token of
/// the directory's memory, and a prefix below this evaluates in a few
/// decode steps.
pub const DEFAULT_MIN_TOKENS: usize = 64;

/// Tokens hashed into an entry's name to find the entries a prompt may
/// share a prefix with. Prompts shorter than this are never stored.
pub const HEAD_TOKENS: usize = 16;

const MAGIC: &[u8; 8] = b"INFERKV\0";
/// The layout of an entry; any change of it changes every key. 2: the
/// logits of the last token follow the state.
const VERSION: u32 = 2;
/// Magic, version, streams, key, token count, state length, logits
/// count, CRC-32.
const HEADER: usize = 52;
/// The most logits an entry may hold (a vocabulary of 4M tokens; the
/// largest in use have about 260k): a count above it is a damaged entry.
const MAX_LOGITS: u64 = 1 << 22;
const SUFFIX: &str = ".kv";
const TMP_PREFIX: &str = ".tmp-";
/// A temporary file this old was left by a process that died mid-write.
const STALE_TMP: Duration = Duration::from_secs(600);
/// Entries whose tokens are read at most per lookup (the most a prompt's
/// first tokens can be shared by before a lookup costs more than it saves).
const MAX_READ_PER_LOOKUP: usize = 32;

/// A state's bytes read back from an entry this module verified (header,
/// checksum, key): only this module can make one, so file contents become a
/// `SavedState` only through it.
pub struct StoredState(Box<[u8]>);

impl StoredState {
    /// The state, to restore into a context.
    pub fn into_saved(self) -> SavedState {
        // SAFETY: only this module makes a `StoredState`, from an entry
        // whose header, checksum and key it verified: bytes a context of
        // this build, model and layout wrote.
        unsafe { SavedState::from_verified_bytes(self.0) }
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl std::fmt::Debug for StoredState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "StoredState({} bytes)", self.0.len())
    }
}

/// Length of the longest common prefix of `a` and `b`.
pub fn common_prefix(a: &[LlamaToken], b: &[LlamaToken]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// The store's figures, for `phpinfo()`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    /// The directory (`None`: the store is off).
    pub dir: Option<PathBuf>,
    /// Why the store is not used although a directory is set.
    pub problem: Option<String>,
    pub limit_bytes: u64,
    /// What this user's entries take now, and how many there are.
    pub bytes: u64,
    pub entries: usize,
    /// Prompts of this process that started from an entry.
    pub hits: u64,
    /// Lookups of this process that found no entry worth loading.
    pub misses: u64,
    pub writes: u64,
    /// Writes that failed (a full or read-only directory, …).
    pub failed_writes: u64,
    /// Entries found damaged, written for another key, or not this user's.
    pub rejected: u64,
    pub evictions: u64,
}

/// What a prompt's lookup found.
#[derive(Debug)]
pub struct Lookup {
    /// An entry sharing at least the tokens asked for with the prompt,
    /// loaded and verified.
    pub found: Option<Found>,
    /// The longest prefix of the prompt the store holds (as far as its
    /// entries' names and tokens tell), to decide whether to write it.
    pub covered: usize,
}

#[derive(Debug)]
pub struct Found {
    /// Tokens the entry and the prompt share.
    pub common: usize,
    /// The tokens the entry holds.
    pub tokens: Vec<LlamaToken>,
    pub state: StoredState,
    /// The logits of its last token, as the evaluation that made the state
    /// left them (`None` when the entry holds none).
    pub logits: Option<Vec<f32>>,
}

/// What a model's states depend on besides their tokens, the build and the
/// machine: the file (by identity: a file replaced or touched is another)
/// and the load options that change the numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelIdentity {
    pub file: FileId,
    pub n_gpu_layers: u32,
    pub main_gpu: Option<u32>,
    pub n_vocab: i32,
    pub n_layer: u32,
    pub n_embd: i32,
    /// The image projector loaded with the model: the states of prompts
    /// with images hold what it made of them.
    pub projector: Option<FileId>,
    /// The most a saved sequence of this model can take.
    pub bound: StateBound,
}

/// The most bytes a saved sequence state can take: `fixed` plus `per_token`
/// for each token it holds. Derived from the model's shape with room to
/// spare (it is a sanity bound, not the size): every layer's keys and
/// values, as wide as the widest attention the model could have, in 32-bit
/// floats, plus each cell's position and sequences, plus room for a
/// recurrent state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateBound {
    pub fixed: u64,
    pub per_token: u64,
}

impl StateBound {
    /// `width` is the widest of the model's embedding and its heads times
    /// their key or value length.
    pub fn for_shape(n_layer: u32, width: u64) -> StateBound {
        let n_layer = u64::from(n_layer);
        StateBound {
            fixed: (1 << 20) + n_layer.saturating_mul(width).saturating_mul(4 * 128),
            per_token: 64
                + n_layer
                    .saturating_mul(2)
                    .saturating_mul(width)
                    .saturating_mul(4),
        }
    }

    pub fn max_for(&self, tokens: usize) -> u64 {
        self.fixed
            .saturating_add(self.per_token.saturating_mul(tokens as u64))
    }
}

#[derive(Debug)]
struct Store {
    dir: Option<Dir>,
    problem: Option<String>,
    /// A setting refused by the binding: the store stays off, and says why.
    refused: Option<(PathBuf, String)>,
    namespace: String,
    limit: u64,
    stats: Stats,
}

static STORE: Mutex<Store> = Mutex::new(Store {
    dir: None,
    problem: None,
    refused: None,
    namespace: String::new(),
    limit: DEFAULT_LIMIT_BYTES,
    stats: Stats {
        dir: None,
        problem: None,
        limit_bytes: DEFAULT_LIMIT_BYTES,
        bytes: 0,
        entries: 0,
        hits: 0,
        misses: 0,
        writes: 0,
        failed_writes: 0,
        rejected: 0,
        evictions: 0,
    },
});

fn store() -> MutexGuard<'static, Store> {
    // Every update under the lock is a few plain assignments.
    STORE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Use the directory `dir` (empty: the store is off), bounded to
/// `limit_bytes`, for prompts that add at least `min_tokens` to what it
/// holds, sharing entries with the processes of `namespace` only. Nothing
/// is touched until the first lookup.
pub fn configure(dir: &str, limit_bytes: u64, min_tokens: usize, namespace: &str) {
    let mut s = store();
    s.refused = None;
    s.namespace = namespace.to_owned();
    let dir = (!dir.is_empty() && limit_bytes > 0).then(|| Dir {
        path: PathBuf::from(dir),
        limit: limit_bytes,
        min_tokens: min_tokens.max(HEAD_TOKENS),
    });
    if dir.as_ref().map(|d| &d.path) != s.dir.as_ref().map(|d| &d.path) {
        s.problem = None;
    }
    s.dir = dir;
    s.limit = limit_bytes;
}

/// Keep the store off because a setting is refused (`why` names it);
/// `phpinfo()` shows it beside `dir`.
pub fn refuse(dir: &str, why: String) {
    let mut s = store();
    s.dir = None;
    s.refused = Some((PathBuf::from(dir), why));
}

/// The key of a model's states in contexts of `streams` KV streams;
/// `None` when the build cannot be identified (the store is then unused).
pub fn key(model: &ModelIdentity, streams: u32) -> Option<u64> {
    let mut h = Fnv::new();
    h.bytes(MAGIC);
    h.u64(u64::from(VERSION));
    h.bytes(build_identity()?);
    let mut file = |f: &FileId| {
        for v in [f.dev, f.ino, f.size] {
            h.u64(v);
        }
        for v in [f.mtime_sec, f.mtime_nsec] {
            h.u64(v as u64);
        }
    };
    file(&model.file);
    match &model.projector {
        Some(projector) => file(projector),
        None => h.u64(u64::MAX),
    }
    h.u64(i64::from(model.n_vocab) as u64);
    h.u64(u64::from(model.n_gpu_layers));
    h.u64(model.main_gpu.map_or(u64::MAX, u64::from));
    h.u64(u64::from(model.n_layer));
    h.u64(model.n_embd as u64);
    h.u64(u64::from(streams));
    let namespace = store().namespace.clone();
    h.u64(namespace.len() as u64);
    h.bytes(namespace.as_bytes());
    Some(h.0)
}

/// The extension's version, the identity of the file its code was loaded
/// from (any other build is another file) and llama.cpp's description of
/// the CPU features its kernels use. `None` when the file cannot be found.
fn build_identity() -> Option<&'static [u8]> {
    static ID: OnceLock<Option<Vec<u8>>> = OnceLock::new();
    ID.get_or_init(|| {
        let file = own_file()?;
        let mut id = format!("{} {file:?} ", env!("CARGO_PKG_VERSION")).into_bytes();
        id.extend_from_slice(&system_info());
        Some(id)
    })
    .as_deref()
}

/// The identity of the file this code was loaded from (the extension's
/// shared object): the mapping that holds this function, as the kernel
/// lists it (PHP may have loaded the extension by a relative path), and
/// only while that path still names the file mapped.
fn own_file() -> Option<FileId> {
    let addr = own_file as fn() -> Option<FileId> as usize;
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines().find_map(|line| {
        // start-end perms offset dev inode path
        let mut fields = line.split_whitespace();
        let (start, end) = fields.next()?.split_once('-')?;
        let (start, end) = (
            usize::from_str_radix(start, 16).ok()?,
            usize::from_str_radix(end, 16).ok()?,
        );
        if !(start..end).contains(&addr) {
            return None;
        }
        let inode: u64 = fields.nth(3)?.parse().ok()?;
        let path = Path::new(fields.next()?);
        let file = FileId::of(path).ok()?;
        (path.is_absolute() && file.ino == inode).then_some(file)
    })
}

/// Find the entry of `key` sharing the longest prefix with `prompt`, among
/// those of at most `max_len` tokens, and load it when it shares at least
/// `need` tokens and its state is within `bound`. `None` when the store is off or its directory is not
/// usable.
pub fn find(
    key: u64,
    bound: StateBound,
    prompt: &[LlamaToken],
    max_len: usize,
    need: usize,
) -> Option<Lookup> {
    let dir = usable_dir()?;
    let (lookup, counts) = dir.find(key, bound, prompt, max_len, need);
    store().stats.add(&counts);
    Some(lookup)
}

/// Whether a prompt of `len` tokens, `covered` of which the store holds
/// already, is worth writing.
pub fn wants(len: usize, covered: usize) -> bool {
    store().dir.as_ref().is_some_and(|d| d.wants(len, covered))
}

/// Write `state`, the saved state of `tokens`, under `key`, when the store
/// is on and they add at least its minimum to the `covered` tokens it holds
/// already; then bring the directory back within its bound.
pub fn write(
    key: u64,
    streams: u32,
    tokens: &[LlamaToken],
    covered: usize,
    state: &[u8],
    logits: &[f32],
) {
    let Some(dir) = usable_dir() else {
        return;
    };
    let counts = dir.write_with(key, streams, tokens, covered, state, logits);
    store().stats.add(&counts);
}

/// The store's figures; the bytes and entries are counted in the directory
/// now.
pub fn stats() -> Stats {
    let (dir, mut stats) = {
        let s = store();
        let mut stats = s.stats.clone();
        stats.problem = s.problem.clone();
        stats.limit_bytes = s.limit;
        if let Some((path, why)) = &s.refused {
            stats.dir = Some(path.clone());
            stats.problem = Some(why.clone());
        }
        (s.dir.clone(), stats)
    };
    if let Some(dir) = &dir {
        stats.dir = Some(dir.path.clone());
    }
    let held = dir
        .filter(|_| stats.problem.is_none())
        .and_then(|d| d.open().ok());
    if let Some(held) = held {
        for (_, size, _) in our_entries(&held) {
            stats.bytes += size;
            stats.entries += 1;
        }
    }
    stats
}

/// The directory, when the store is on and the directory is usable
/// (created with mode 0700 when missing). A directory that is not this
/// user's or that others can write to is not used: its entries could be
/// anyone's. Why not is kept for `phpinfo()`.
fn usable_dir() -> Option<Dir> {
    let dir = store().dir.clone()?;
    let verdict = if build_identity().is_none() {
        Err("the extension's own file cannot be identified".to_owned())
    } else {
        dir.open().map(drop)
    };
    let ok = verdict.is_ok();
    store().problem = verdict.err();
    ok.then_some(dir)
}

impl Stats {
    fn add(&mut self, c: &Counts) {
        self.hits += c.hits;
        self.misses += c.misses;
        self.writes += c.writes;
        self.failed_writes += c.failed_writes;
        self.rejected += c.rejected;
        self.evictions += c.evictions;
    }
}

/// What one lookup or write did, for the statistics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Counts {
    hits: u64,
    misses: u64,
    writes: u64,
    failed_writes: u64,
    rejected: u64,
    evictions: u64,
}

/// A store's directory and its settings.
#[derive(Debug, Clone)]
struct Dir {
    path: PathBuf,
    limit: u64,
    min_tokens: usize,
}

impl Dir {
    fn wants(&self, len: usize, covered: usize) -> bool {
        len >= self.min_tokens && len - covered.min(len) >= self.min_tokens
    }

    /// The directory, opened and checked (created mode 0700 when missing).
    fn open(&self) -> Result<PrivateDir, String> {
        PrivateDir::open(&self.path, Rule::NoOtherWriters, true).map_err(|p| p.to_string())
    }

    fn find(
        &self,
        key: u64,
        bound: StateBound,
        prompt: &[LlamaToken],
        max_len: usize,
        need: usize,
    ) -> (Lookup, Counts) {
        let mut counts = Counts::default();
        let mut lookup = Lookup {
            found: None,
            covered: 0,
        };
        if prompt.len() < HEAD_TOKENS {
            return (lookup, counts);
        }
        let Ok(held) = self.open() else {
            return (lookup, counts);
        };
        let limits = Limits {
            bytes: self.limit,
            bound,
        };
        let head = hash_tokens(&prompt[..HEAD_TOKENS]);
        // Every entry that may share a prefix with the prompt, and how much.
        let mut shared = Vec::new();
        let mut reads = 0;
        for (file, name) in list(&held, &EntryName::prefix(key, head)) {
            if name.key != key || name.head != head {
                continue;
            }
            // A prefix of the prompt by its hash (checked again on load),
            // else read the entry's tokens.
            let common =
                if name.len <= prompt.len() && hash_tokens(&prompt[..name.len]) == name.full {
                    name.len
                } else if reads < MAX_READ_PER_LOOKUP {
                    reads += 1;
                    match read_tokens(&held, &file, &name, limits) {
                        Ok(tokens) => common_prefix(&tokens, prompt),
                        Err(Reject) => {
                            counts.rejected += dispose(&held, &file);
                            continue;
                        }
                    }
                } else {
                    continue;
                };
            shared.push((common, file, name));
        }
        // The best first; those that fail to load no longer count.
        shared.sort_by_key(|c| std::cmp::Reverse(c.0));
        let mut usable = Vec::with_capacity(shared.len());
        for (common, file, name) in shared {
            if lookup.found.is_none() && name.len <= max_len && common >= need {
                match load(&held, &file, &name, limits, &prompt[..common]) {
                    Ok((tokens, state, logits)) => {
                        lookup.found = Some(Found {
                            common,
                            tokens,
                            state,
                            logits: (!logits.is_empty()).then_some(logits),
                        });
                    }
                    Err(Reject) => {
                        counts.rejected += dispose(&held, &file);
                        continue;
                    }
                }
            }
            usable.push(common);
        }
        lookup.covered = usable.into_iter().max().unwrap_or(0);
        if lookup.found.is_some() {
            counts.hits += 1;
        } else {
            counts.misses += 1;
        }
        (lookup, counts)
    }

    /// An entry without logits (the tests' entries).
    #[cfg(test)]
    fn write(
        &self,
        key: u64,
        streams: u32,
        tokens: &[LlamaToken],
        covered: usize,
        state: &[u8],
    ) -> Counts {
        self.write_with(key, streams, tokens, covered, state, &[])
    }

    fn write_with(
        &self,
        key: u64,
        streams: u32,
        tokens: &[LlamaToken],
        covered: usize,
        state: &[u8],
        logits: &[f32],
    ) -> Counts {
        let mut counts = Counts::default();
        let logits = if logits.len() as u64 <= MAX_LOGITS {
            logits
        } else {
            &[]
        };
        let logit_bytes: Vec<u8> = logits.iter().flat_map(|l| l.to_le_bytes()).collect();
        let size = HEADER + 4 * tokens.len() + state.len() + logit_bytes.len();
        if !self.wants(tokens.len(), covered) || size as u64 > self.limit {
            return counts;
        }
        let Ok(held) = self.open() else {
            counts.failed_writes += 1;
            return counts;
        };
        let name = EntryName {
            key,
            head: hash_tokens(&tokens[..HEAD_TOKENS]),
            len: tokens.len(),
            full: hash_tokens(tokens),
        };
        let token_bytes: Vec<u8> = tokens.iter().flat_map(|t| t.0.to_le_bytes()).collect();
        let mut header = [0u8; HEADER];
        header[..8].copy_from_slice(MAGIC);
        header[8..12].copy_from_slice(&VERSION.to_le_bytes());
        header[12..16].copy_from_slice(&streams.to_le_bytes());
        header[16..24].copy_from_slice(&key.to_le_bytes());
        header[24..32].copy_from_slice(&(tokens.len() as u64).to_le_bytes());
        header[32..40].copy_from_slice(&(state.len() as u64).to_le_bytes());
        header[40..48].copy_from_slice(&(logits.len() as u64).to_le_bytes());
        let crc = checksum(&header[..48], &token_bytes, state, &logit_bytes);
        header[48..52].copy_from_slice(&crc.to_le_bytes());
        let tmp = temporary_name();
        let written = write_new(&held, &tmp, &[&header, &token_bytes, state, &logit_bytes])
            .and_then(|()| held.rename(&tmp, &name.to_string()));
        if written.is_err() {
            // Whatever part of it exists is of no use to anyone.
            let _removed = held.remove(&tmp).is_ok();
            counts.failed_writes += 1;
            return counts;
        }
        counts.writes += 1;
        counts.evictions = evict(&held, self.limit);
        counts
    }
}

#[cfg(test)]
mod tests {
    use super::entry::buffer;
    use super::*;
    use std::fs::{self, OpenOptions};
    use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};

    const KEY: u64 = 0x1234;
    /// Room for the 1000-byte and 100,000-byte states these tests write.
    const BOUND: StateBound = StateBound {
        fixed: 200_000,
        per_token: 0,
    };

    /// A fresh directory under the system's temporary one.
    /// An entry's name for `prompt(1, 1)`, as long as `len` says, with the
    /// full hash `full`.
    fn name_of_prompt_1(len: usize, full: u64) -> EntryName {
        EntryName {
            key: KEY,
            head: hash_tokens(&prompt(1, 1)[..HEAD_TOKENS]),
            len,
            full,
        }
    }

    fn scratch(name: &str) -> Dir {
        let path = std::env::temp_dir().join(format!("infer-store-{}-{name}", std::process::id()));
        let _gone = fs::remove_dir_all(&path).is_ok();
        let dir = Dir {
            path,
            limit: 1 << 20,
            min_tokens: 32,
        };
        assert!(dir.open().is_ok());
        dir
    }

    /// A model's identity, as SmolLM2-135M's shape.
    fn identity() -> ModelIdentity {
        ModelIdentity {
            file: FileId {
                dev: 1,
                ino: 2,
                size: 3,
                mtime_sec: 4,
                mtime_nsec: 5,
            },
            n_gpu_layers: 0,
            main_gpu: None,
            n_vocab: 49152,
            n_layer: 30,
            n_embd: 576,
            projector: None,
            bound: StateBound::for_shape(30, 576),
        }
    }

    /// 100 tokens of system prompt `sys`, then 20 of question `q`.
    fn prompt(sys: i32, q: i32) -> Vec<LlamaToken> {
        let mut t: Vec<LlamaToken> = (sys * 1000..sys * 1000 + 100).map(LlamaToken).collect();
        t.extend((q * 100_000..q * 100_000 + 20).map(LlamaToken));
        t
    }

    fn only_entry(dir: &Dir) -> PathBuf {
        let entries = dir
            .open()
            .map(|held| our_entries(&held))
            .unwrap_or_default();
        assert_eq!(entries.len(), 1, "{entries:?}");
        dir.path.join(&entries[0].0)
    }

    #[test]
    fn an_entry_is_found_by_the_prompts_that_share_its_prefix() {
        let dir = scratch("found");
        let counts = dir.write(KEY, 1, &prompt(1, 1), 0, &[0u8; 1000]);
        assert_eq!(counts.writes, 1);
        // The same prompt: all of it; another question: the system prompt.
        let (same, _) = dir.find(KEY, BOUND, &prompt(1, 1), 4096, 16);
        let same = same.found.expect("a hit");
        assert_eq!((same.common, &same.tokens[..]), (120, &prompt(1, 1)[..]));
        assert_eq!(same.state.len(), 1000);
        let (other, counts) = dir.find(KEY, BOUND, &prompt(1, 2), 4096, 16);
        assert_eq!(
            (other.found.map(|f| f.common), other.covered),
            (Some(100), 100)
        );
        assert_eq!((counts.hits, counts.misses), (1, 0));
        // Not for another key, another system prompt, a context too short
        // for it, or a caller that holds as much already.
        assert!(dir
            .find(KEY + 1, BOUND, &prompt(1, 1), 4096, 16)
            .0
            .found
            .is_none());
        assert!(dir
            .find(KEY, BOUND, &prompt(2, 1), 4096, 16)
            .0
            .found
            .is_none());
        assert!(dir
            .find(KEY, BOUND, &prompt(1, 1), 119, 16)
            .0
            .found
            .is_none());
        let (held, counts) = dir.find(KEY, BOUND, &prompt(1, 2), 4096, 106);
        assert!(held.found.is_none());
        assert_eq!((held.covered, counts.misses), (100, 1));
    }

    #[test]
    fn files_are_this_users_alone() {
        let dir = scratch("modes");
        let sub = dir.path.join("a/b");
        let nested = Dir {
            path: sub.clone(),
            limit: 1 << 20,
            min_tokens: 32,
        };
        assert!(nested.open().is_ok());
        let mode = fs::metadata(&sub).map(|m| m.mode() & 0o777).ok();
        assert_eq!(mode, Some(0o700));
        dir.write(KEY, 1, &prompt(1, 1), 0, &[0u8; 1000]);
        let mode = fs::metadata(only_entry(&dir))
            .map(|m| m.mode() & 0o777)
            .ok();
        assert_eq!(mode, Some(0o600));
        // A directory others can write to is not used.
        fs::set_permissions(&sub, fs::Permissions::from_mode(0o777)).ok();
        let refused = nested.open().err().unwrap_or_default();
        assert!(refused.contains("other users can write to it"), "{refused}");
        let relative = Dir {
            path: PathBuf::from("relative"),
            ..nested
        };
        assert_eq!(
            relative.open().err(),
            Some("is not an absolute path".to_owned())
        );
    }

    #[test]
    fn a_prompt_is_written_only_when_it_adds_enough() {
        let dir = scratch("wants");
        assert!(dir.wants(120, 0));
        assert!(!dir.wants(120, 100), "20 new tokens");
        assert!(!dir.wants(31, 0), "below the minimum");
        assert_eq!(dir.write(KEY, 1, &prompt(1, 2), 100, &[0u8; 10]).writes, 0);
        // Larger than the whole directory.
        let huge = vec![0u8; 2 << 20];
        assert_eq!(dir.write(KEY, 1, &prompt(1, 1), 0, &huge).writes, 0);
        assert!(dir
            .open()
            .map(|held| our_entries(&held))
            .unwrap_or_default()
            .is_empty());
    }

    /// Every way an entry can be damaged: it is not loaded, counted as
    /// rejected and removed, and the prompt is a miss.
    #[test]
    fn a_damaged_entry_is_never_loaded_and_is_removed() {
        type Damage = fn(&Path);
        let damages: [(&str, Damage); 5] = [
            ("truncated", |p| {
                let len = fs::metadata(p).map_or(0, |m| m.len());
                OpenOptions::new()
                    .write(true)
                    .open(p)
                    .and_then(|f| f.set_len(len - 7))
                    .ok();
            }),
            ("bit flipped in the state", |p| flip(p, -3)),
            ("bit flipped in the tokens", |p| flip(p, HEADER as i64 + 5)),
            ("bit flipped in the header", |p| flip(p, 20)),
            ("readable by others", |p| {
                fs::set_permissions(p, fs::Permissions::from_mode(0o644)).ok();
            }),
        ];
        for (what, damage) in damages {
            let dir = scratch("damaged");
            dir.write(KEY, 1, &prompt(1, 1), 0, &[0u8; 1000]);
            let path = only_entry(&dir);
            damage(&path);
            let (lookup, counts) = dir.find(KEY, BOUND, &prompt(1, 1), 4096, 16);
            assert!(lookup.found.is_none(), "{what}");
            assert_eq!((counts.rejected, counts.misses), (1, 1), "{what}");
            // Removed: it stands under an entry's name and can never be used.
            assert!(!path.exists(), "{what}");
        }
    }

    /// Flip one bit of `path` at `at` (from the end when negative).
    fn flip(path: &Path, at: i64) {
        let mut bytes = fs::read(path).unwrap_or_default();
        let at = if at < 0 {
            bytes.len() - at.unsigned_abs() as usize
        } else {
            at as usize
        };
        bytes[at] ^= 0x10;
        fs::write(path, bytes).ok();
    }

    #[test]
    fn an_entry_of_another_key_under_this_keys_name_is_rejected() {
        let dir = scratch("foreign");
        dir.write(KEY + 1, 1, &prompt(1, 1), 0, &[0u8; 1000]);
        let theirs = only_entry(&dir);
        let name = theirs
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        let ours = name.replacen(&format!("{:016x}", KEY + 1), &format!("{KEY:016x}"), 1);
        fs::rename(&theirs, dir.path.join(&ours)).ok();
        let (lookup, counts) = dir.find(KEY, BOUND, &prompt(1, 1), 4096, 16);
        assert!(lookup.found.is_none());
        assert_eq!(counts.rejected, 1);
        assert!(!dir.path.join(&ours).exists());
    }

    #[test]
    fn a_directory_under_an_entrys_name_is_ignored() {
        let dir = scratch("dir");
        let name = name_of_prompt_1(120, hash_tokens(&prompt(1, 1)));
        let squatter = dir.path.join(name.to_string());
        fs::create_dir(&squatter).ok();
        fs::write(squatter.join("inside"), b"x").ok();
        let (lookup, counts) = dir.find(KEY, BOUND, &prompt(1, 1), 4096, 16);
        assert!(lookup.found.is_none());
        assert_eq!((counts.rejected, counts.misses), (1, 1));
        // A write to that name fails cleanly, leaving no temporary file.
        let counts = dir.write(KEY, 1, &prompt(1, 1), 0, &[0u8; 1000]);
        assert_eq!((counts.writes, counts.failed_writes), (0, 1));
        assert!(squatter.is_dir());
        let left: Vec<_> = fs::read_dir(&dir.path).map_or(Vec::new(), |r| r.flatten().collect());
        assert_eq!(left.len(), 1, "{left:?}");
    }

    /// A bound of two entries: the third write removes the least recently
    /// used, a hit counting as a use.
    #[test]
    fn the_least_recently_used_entries_go_past_the_bound() {
        let mut dir = scratch("bound");
        let state = 100_000;
        dir.limit = (2 * (HEADER + 4 * 120 + state) + 1000) as u64;
        dir.write(KEY, 1, &prompt(1, 1), 0, &vec![0u8; state]);
        std::thread::sleep(Duration::from_millis(20));
        dir.write(KEY, 1, &prompt(2, 1), 0, &vec![0u8; state]);
        std::thread::sleep(Duration::from_millis(20));
        assert!(dir
            .find(KEY, BOUND, &prompt(1, 1), 4096, 16)
            .0
            .found
            .is_some());
        std::thread::sleep(Duration::from_millis(20));
        let counts = dir.write(KEY, 1, &prompt(3, 1), 0, &vec![0u8; state]);
        assert_eq!((counts.writes, counts.evictions), (1, 1));
        let found = |sys| {
            dir.find(KEY, BOUND, &prompt(sys, 1), 4096, 16)
                .0
                .found
                .is_some()
        };
        assert_eq!((found(1), found(2), found(3)), (true, false, true));
    }

    #[test]
    fn names_are_read_back_as_written() {
        let name = EntryName {
            key: u64::MAX,
            head: 0,
            len: 4096,
            full: 0xabc,
        };
        assert_eq!(EntryName::parse(&name.to_string()), Some(name));
        for bad in [
            "x.kv",
            "1-2-3-4.kv",
            &name.to_string().replace(".kv", ".tmp"),
        ] {
            assert_eq!(EntryName::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn every_part_of_a_models_identity_and_the_layout_change_the_key() {
        let model = identity();
        let base = key(&model, 1);
        assert!(base.is_some());
        assert_eq!(key(&model, 1), base, "stable");
        assert_ne!(key(&model, 2), base, "KV streams");
        let changes: [fn(&mut ModelIdentity); 11] = [
            |m| m.file.dev += 1,
            |m| m.file.ino += 1,
            |m| m.file.size += 1,
            |m| m.file.mtime_sec += 1,
            |m| m.file.mtime_nsec += 1,
            |m| m.n_gpu_layers = 1,
            |m| m.main_gpu = Some(0),
            |m| m.n_vocab += 1,
            |m| m.n_layer += 1,
            |m| m.n_embd += 1,
            |m| m.projector = Some(m.file),
        ];
        for (i, change) in changes.iter().enumerate() {
            let mut other = model;
            change(&mut other);
            assert_ne!(key(&other, 1), base, "change {i}");
        }
        // Another projector beside the same model.
        let (mut one, mut two) = (model, model);
        one.projector = Some(model.file);
        two.projector = Some(FileId {
            ino: model.file.ino + 1,
            ..model.file
        });
        assert_ne!(key(&one, 1), key(&two, 1));
    }

    #[test]
    fn the_build_is_identified_by_its_own_file() {
        let id = build_identity().map(<[u8]>::to_vec).unwrap_or_default();
        let text = String::from_utf8_lossy(&id);
        assert!(text.starts_with(env!("CARGO_PKG_VERSION")), "{text}");
        let exe = std::env::current_exe()
            .ok()
            .and_then(|p| FileId::of(&p).ok());
        assert_eq!(own_file(), exe);
    }

    /// An entry keeps the logits of its last token (a prompt found whole
    /// starts from them, as from a fresh evaluation); a count of them past
    /// what any vocabulary has is a damaged entry, refused and removed.
    #[test]
    fn the_logits_of_the_last_token_come_back_and_a_damaged_count_is_refused() {
        let mut dir = scratch("logits");
        dir.limit = u64::MAX;
        let logits: Vec<f32> = (0..500).map(|i| i as f32 * 0.25 - 3.0).collect();
        dir.write_with(KEY, 1, &prompt(1, 1), 0, &[7u8; 1000], &logits);
        let (lookup, _) = dir.find(KEY, BOUND, &prompt(1, 1), 4096, 16);
        let found = lookup.found.expect("found");
        assert_eq!(found.logits.as_deref(), Some(&logits[..]));
        assert_eq!(found.state.len(), 1000);
        // Without logits: none come back.
        let plain = scratch("no-logits");
        plain.write(KEY, 1, &prompt(1, 1), 0, &[7u8; 1000]);
        let (lookup, _) = plain.find(KEY, BOUND, &prompt(1, 1), 4096, 16);
        assert_eq!(lookup.found.map(|f| f.logits), Some(None));
        // A count past MAX_LOGITS, the file's length to match.
        let path = only_entry(&dir);
        let mut bytes = fs::read(&path).unwrap_or_default();
        let claim = MAX_LOGITS + 1;
        bytes[40..48].copy_from_slice(&claim.to_le_bytes());
        fs::write(&path, &bytes[..HEADER]).ok();
        OpenOptions::new()
            .write(true)
            .open(&path)
            .and_then(|f| f.set_len(HEADER as u64 + 4 * 120 + 1000 + 4 * claim))
            .ok();
        let (lookup, counts) = dir.find(KEY, BOUND, &prompt(1, 1), 4096, 16);
        assert!(lookup.found.is_none());
        assert_eq!(counts.rejected, 1);
        assert!(!path.exists(), "removed");
    }

    /// An entry that claims a state far beyond what the model can need (a
    /// sparse file, so that its length agrees) is refused before anything
    /// of that size is allocated, and removed; one within the bound but
    /// beyond what the allocator can give is refused, not an abort.
    #[test]
    fn a_state_larger_than_the_model_can_need_is_refused_and_removed() {
        let mut dir = scratch("huge");
        dir.limit = u64::MAX;
        dir.write(KEY, 1, &prompt(1, 1), 0, &[0u8; 1000]);
        let path = only_entry(&dir);
        let claim: u64 = 1 << 40;
        let mut bytes = fs::read(&path).unwrap_or_default();
        bytes[32..40].copy_from_slice(&claim.to_le_bytes());
        fs::write(&path, &bytes[..HEADER]).ok();
        OpenOptions::new()
            .write(true)
            .open(&path)
            .and_then(|f| f.set_len(HEADER as u64 + 4 * 120 + claim))
            .ok();
        let (lookup, counts) = dir.find(KEY, BOUND, &prompt(1, 1), 4096, 16);
        assert!(lookup.found.is_none());
        assert_eq!(counts.rejected, 1);
        assert!(!path.exists(), "removed");
        // The allocation itself: more than can be asked for.
        assert_eq!(buffer(usize::MAX).err(), Some(Reject));
    }

    /// A FIFO under an entry's name is refused without blocking (a reader
    /// would wait forever for a writer) and removed.
    #[test]
    fn a_fifo_under_an_entrys_name_does_not_block() {
        let dir = scratch("fifo");
        let name = name_of_prompt_1(119, 0);
        let fifo = dir.path.join(name.to_string());
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap_or_default();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let (lookup, counts) = dir.find(KEY, BOUND, &prompt(1, 1), 4096, 16);
        assert!(lookup.found.is_none());
        assert_eq!(counts.rejected, 1);
        assert!(fs::symlink_metadata(&fifo).is_err(), "removed");
    }

    /// A store directory that is a symbolic link (to `/`) is not used,
    /// nor one reached through a link.
    #[test]
    fn a_directory_reached_through_a_link_is_refused() {
        let base = scratch("links");
        let link = base.path.join("to-root");
        std::os::unix::fs::symlink("/", &link).ok();
        for path in [link.clone(), link.join("tmp")] {
            let dir = Dir {
                path: path.clone(),
                limit: 1 << 20,
                min_tokens: 32,
            };
            let refused = dir.open().err().unwrap_or_default();
            assert!(
                refused.contains("passes through the symbolic link"),
                "{path:?}: {refused}"
            );
            assert_eq!(dir.write(KEY, 1, &prompt(1, 1), 0, &[0u8; 1000]).writes, 0);
        }
    }

    #[test]
    fn the_namespace_is_part_of_the_key() {
        let model = identity();
        let keys: Vec<Option<u64>> = ["", "shop", "blog"]
            .iter()
            .map(|ns| {
                configure("", 0, 0, ns);
                key(&model, 1)
            })
            .collect();
        configure("", 0, 0, "");
        assert!(keys.iter().all(Option::is_some));
        assert_ne!(keys[0], keys[1]);
        assert_ne!(keys[1], keys[2]);
    }
}
