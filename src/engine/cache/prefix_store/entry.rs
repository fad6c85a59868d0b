//! An entry of the prompt store as a file: its name, its header, how it is
//! read back and verified, written, and evicted from the directory. The
//! store (`mod.rs`) decides which entries to look at and when to write.

use std::fs::File;
use std::io::{self, Read, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use llama_cpp_2::token::LlamaToken;

use super::{
    StateBound, StoredState, HEADER, HEAD_TOKENS, MAGIC, MAX_LOGITS, STALE_TMP, SUFFIX, TMP_PREFIX,
    VERSION,
};
use crate::private_dir::PrivateDir;

/// What an entry may claim: the directory's bound and the model's.
#[derive(Debug, Clone, Copy)]
pub(super) struct Limits {
    pub(super) bytes: u64,
    pub(super) bound: StateBound,
}

/// What an entry's name says: `{key}-{head}-{len}-{full}.kv`, hashes in
/// hexadecimal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct EntryName {
    pub(super) key: u64,
    pub(super) head: u64,
    pub(super) len: usize,
    pub(super) full: u64,
}

impl std::fmt::Display for EntryName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:016x}-{:016x}-{}-{:016x}{SUFFIX}",
            self.key, self.head, self.len, self.full
        )
    }
}

impl EntryName {
    /// The start of the names of `key`'s entries whose first tokens hash to
    /// `head`.
    pub(super) fn prefix(key: u64, head: u64) -> String {
        format!("{key:016x}-{head:016x}-")
    }

    pub(super) fn parse(name: &str) -> Option<Self> {
        let mut parts = name.strip_suffix(SUFFIX)?.split('-');
        let hex = |s: &str| (s.len() == 16).then(|| u64::from_str_radix(s, 16).ok())?;
        let parsed = Self {
            key: hex(parts.next()?)?,
            head: hex(parts.next()?)?,
            len: parts.next()?.parse().ok()?,
            full: hex(parts.next()?)?,
        };
        (parts.next().is_none() && parsed.len >= HEAD_TOKENS).then_some(parsed)
    }
}

/// The entries of the directory by name (whatever they are: opening
/// checks), those whose name starts with `prefix`.
pub(super) fn list(held: &PrivateDir, prefix: &str) -> Vec<(String, EntryName)> {
    held.names_starting_with(prefix.as_bytes())
        .unwrap_or_default()
        .into_iter()
        .filter_map(|n| {
            let n = n.into_string().ok()?;
            let name = EntryName::parse(&n)?;
            Some((n, name))
        })
        .collect()
}

/// This user's regular entry files: name, size and modification time.
pub(super) fn our_entries(held: &PrivateDir) -> Vec<(String, u64, SystemTime)> {
    let me = crate::private_dir::euid();
    list(held, "")
        .into_iter()
        .filter_map(|(file, _)| {
            let st = held.stat(&file).ok()?;
            (st.st_mode & libc::S_IFMT == libc::S_IFREG && st.st_uid == me)
                .then(|| (file, u64::try_from(st.st_size).unwrap_or(0), modified(&st)))
        })
        .collect()
}

pub(super) fn modified(st: &libc::stat) -> SystemTime {
    let secs = u64::try_from(st.st_mtime).unwrap_or(0);
    let nanos = u32::try_from(st.st_mtime_nsec).unwrap_or(0);
    SystemTime::UNIX_EPOCH + Duration::new(secs, nanos)
}

/// An entry that is not used: not a whole regular file of this user's,
/// closed to others, of the key its name says and within its limits.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Reject;

/// Remove a rejected entry (whatever it is — a link, a FIFO, another
/// user's file: it stands in this user's directory under an entry's name
/// and can never be used); returns 1 (one entry rejected).
pub(super) fn dispose(held: &PrivateDir, file: &str) -> u64 {
    let _removed = held.remove(file).is_ok();
    1
}

impl From<io::Error> for Reject {
    fn from(_: io::Error) -> Self {
        Reject
    }
}

/// Open an entry for reading (a regular file of this user's, readable by no
/// one else: [`PrivateDir::open_file`]) and check its header against its
/// name, its size and the limits; returns it with its header.
pub(super) fn open_entry(
    held: &PrivateDir,
    file: &str,
    name: &EntryName,
    limits: Limits,
) -> Result<(File, [u8; HEADER]), Reject> {
    let mut opened = held.open_file(file, libc::O_RDONLY)?;
    let len = opened.metadata()?.len();
    let mut header = [0u8; HEADER];
    opened.read_exact(&mut header)?;
    let word = |at: usize| u64::from_le_bytes(header[at..at + 8].try_into().unwrap_or_default());
    let n_tokens = word(24);
    let state_len = word(32);
    let n_logits = word(40);
    let expected = (HEADER as u64)
        .checked_add(n_tokens.checked_mul(4).ok_or(Reject)?)
        .and_then(|n| n.checked_add(state_len))
        .and_then(|n| n.checked_add(n_logits.checked_mul(4)?));
    let valid = &header[..8] == MAGIC
        && header[8..12] == VERSION.to_le_bytes()
        && word(16) == name.key
        && n_tokens == name.len as u64
        && state_len > 0
        && state_len <= limits.bound.max_for(name.len)
        && n_logits <= MAX_LOGITS
        && expected == Some(len)
        && len <= limits.bytes;
    if !valid {
        return Err(Reject);
    }
    Ok((opened, header))
}

/// `n` bytes of memory for an entry, or a rejection where the allocator
/// cannot give them (never an abort).
pub(super) fn buffer(n: usize) -> Result<Vec<u8>, Reject> {
    let mut bytes = Vec::new();
    bytes.try_reserve_exact(n).map_err(|_| Reject)?;
    bytes.resize(n, 0);
    Ok(bytes)
}

pub(super) fn read_token_bytes(
    file: &mut File,
    n: usize,
) -> Result<(Vec<LlamaToken>, Vec<u8>), Reject> {
    let mut bytes = buffer(n.checked_mul(4).ok_or(Reject)?)?;
    file.read_exact(&mut bytes)?;
    let tokens = bytes
        .chunks_exact(4)
        .map(|c| LlamaToken(i32::from_le_bytes([c[0], c[1], c[2], c[3]])))
        .collect();
    Ok((tokens, bytes))
}

/// The tokens an entry holds (its header checked, not its checksum).
pub(super) fn read_tokens(
    held: &PrivateDir,
    file: &str,
    name: &EntryName,
    limits: Limits,
) -> Result<Vec<LlamaToken>, Reject> {
    let (mut opened, _) = open_entry(held, file, name, limits)?;
    Ok(read_token_bytes(&mut opened, name.len)?.0)
}

/// Read a whole entry and verify it: header, checksum, tokens matching its
/// name and starting with `prefix`. A hit marks it used.
pub(super) fn load(
    held: &PrivateDir,
    file: &str,
    name: &EntryName,
    limits: Limits,
    prefix: &[LlamaToken],
) -> Result<(Vec<LlamaToken>, StoredState, Vec<f32>), Reject> {
    let (mut opened, header) = open_entry(held, file, name, limits)?;
    let (tokens, token_bytes) = read_token_bytes(&mut opened, name.len)?;
    let state_len = u64::from_le_bytes(header[32..40].try_into().unwrap_or_default());
    let mut state = buffer(usize::try_from(state_len).map_err(|_| Reject)?)?;
    opened.read_exact(&mut state)?;
    let n_logits = u64::from_le_bytes(header[40..48].try_into().unwrap_or_default());
    let mut logit_bytes = buffer(
        usize::try_from(n_logits)
            .ok()
            .and_then(|n| n.checked_mul(4))
            .ok_or(Reject)?,
    )?;
    opened.read_exact(&mut logit_bytes)?;
    let crc = u32::from_le_bytes(header[48..52].try_into().unwrap_or_default());
    let valid = checksum(&header[..48], &token_bytes, &state, &logit_bytes) == crc
        && hash_tokens(&tokens) == name.full
        && hash_tokens(&tokens[..HEAD_TOKENS]) == name.head
        && tokens.starts_with(prefix);
    if !valid {
        return Err(Reject);
    }
    // Most recently used last out. A file that cannot be touched is still
    // a valid entry.
    let _touched = opened.set_modified(SystemTime::now()).is_ok();
    let logits = logit_bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    Ok((tokens, StoredState(state.into_boxed_slice()), logits))
}

pub(super) fn checksum(header: &[u8], tokens: &[u8], state: &[u8], logits: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(header);
    h.update(tokens);
    h.update(state);
    h.update(logits);
    h.finalize()
}

/// A name no other writer uses: the process, the time and a counter.
pub(super) fn temporary_name() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "{TMP_PREFIX}{}-{nanos}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// Create `file` (which must not exist) with mode 0600 and write `parts`.
pub(super) fn write_new(held: &PrivateDir, file: &str, parts: &[&[u8]]) -> io::Result<()> {
    let mut opened = held.create_new(file)?;
    for part in parts {
        opened.write_all(part)?;
    }
    Ok(())
}

/// Remove this user's least recently used entries until the directory is
/// within `limit`, and temporary files left by dead writers; returns the
/// entries removed.
pub(super) fn evict(held: &PrivateDir, limit: u64) -> u64 {
    remove_stale_temporaries(held);
    let mut entries = our_entries(held);
    let mut total: u64 = entries.iter().map(|e| e.1).sum();
    entries.sort_by_key(|e| e.2);
    let mut evicted = 0;
    for (file, size, _) in entries {
        if total <= limit {
            break;
        }
        if held.remove(&file).is_ok() {
            evicted += 1;
        }
        // Gone either way (another process may have removed it first).
        total -= size;
    }
    evicted
}

pub(super) fn remove_stale_temporaries(held: &PrivateDir) {
    let me = crate::private_dir::euid();
    let now = SystemTime::now();
    for name in held.names().unwrap_or_default() {
        let Some(name) = name.to_str() else {
            continue;
        };
        if !name.starts_with(TMP_PREFIX) {
            continue;
        }
        let Ok(st) = held.stat(name) else {
            continue;
        };
        let stale = now
            .duration_since(modified(&st))
            .is_ok_and(|age| age > STALE_TMP);
        if st.st_mode & libc::S_IFMT == libc::S_IFREG && st.st_uid == me && stale {
            let _removed = held.remove(name).is_ok();
        }
    }
}

/// FNV-1a, 64 bits: stable across builds and processes (std's hashers are
/// not), and enough to tell entries apart by name; the contents are
/// verified on load.
pub(super) struct Fnv(pub(super) u64);

impl Fnv {
    pub(super) fn new() -> Self {
        Self(0xcbf2_9ce4_8422_2325)
    }

    pub(super) fn bytes(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }

    pub(super) fn u64(&mut self, v: u64) {
        self.bytes(&v.to_le_bytes());
    }
}

pub(super) fn hash_tokens(tokens: &[LlamaToken]) -> u64 {
    let mut h = Fnv::new();
    for t in tokens {
        h.bytes(&t.0.to_le_bytes());
    }
    h.0
}
