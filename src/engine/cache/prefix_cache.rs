//! The prompt prefixes this process has evaluated, kept as saved sequence
//! states so that a later prompt starting with one of them evaluates only the
//! rest: an application with several system prompts (an extractor, a
//! classifier, a support chat) reuses each, not only the last one.
//!
//! One cache per process, shared by every model loaded in it and bounded in
//! bytes (least recently used first out). Entries belong to the model that
//! made them (a number given at load, never reused), so a state is only ever
//! restored into a context of the model that computed it.
//!
//! States are copies of the KV cells (`llama_state_seq_get_data`), not
//! sequences left resident in the context: a resident sequence would cost
//! every later decode (each step attends, masked, over all used cells),
//! while a saved copy costs one memcpy when it is restored and nothing per
//! step.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use llama_cpp_2::token::LlamaToken;

use super::persistent::least_recent;
pub use super::prefix_store::common_prefix;
use super::prefix_store::{self, ModelIdentity};
use crate::backend::CacheSource;
use crate::engine::llama::context::SavedState;

/// Default bound of the cache: room for about fourteen system prompts of
/// 400 tokens on SmolLM2-135M (23 KiB of keys and values per token), two
/// 2,000-token prefixes on a 0.5B model, a 1,000-token one on an 8B model.
pub const DEFAULT_LIMIT_BYTES: usize = 128 << 20;

/// Default least number of tokens a prompt must add to what the cache holds
/// for its state to be saved: below this, evaluating them again costs less
/// than keeping them.
pub const DEFAULT_MIN_TOKENS: usize = 32;

/// Fewest prompt tokens a restored state must bring beyond what the context
/// holds already (a restore copies the whole state).
pub const MIN_GAIN: usize = 16;

/// The cache's figures, for `phpinfo()`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    pub limit_bytes: usize,
    pub bytes: usize,
    pub entries: usize,
    /// Prompts that started from a saved state.
    pub hits: u64,
    /// Prompts that found no cached prefix worth restoring, where the
    /// context did not hold one either.
    pub misses: u64,
    pub evictions: u64,
}

/// Whose a saved state is: the model that computed it, the LoRA adapters it
/// applied (`lora::ActiveSet::id`, 0: none), and the number of KV streams
/// of its context (llama.cpp writes it into the state and refuses the
/// state in a context with another).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    pub model: u64,
    pub adapters: u64,
    pub streams: u32,
}

/// A saved state that a prompt can start from.
#[derive(Debug, Clone)]
pub struct Hit {
    /// Tokens the state and the prompt share.
    pub common: usize,
    /// The tokens the state holds.
    pub tokens: Arc<[LlamaToken]>,
    pub state: Arc<SavedState>,
    /// The logits of the last of `tokens` as the evaluation that made the
    /// state left them (`None` from a batch, or an entry without them): a prompt
    /// that is the state's tokens exactly starts from these rather than
    /// evaluating its last token again alone, which llama.cpp's kernels for
    /// one row compute with another rounding than those for a batch, so
    /// that a greedy reply could differ from a fresh evaluation's.
    pub logits: Option<Arc<[f32]>>,
    /// Where it was found: this process's cache, or the shared store.
    pub source: CacheSource,
}

/// Whose the states of a loaded model are: its number in this process, and
/// its identity in the store shared by the machine's processes (`None`:
/// its states are not shared), and the LoRA adapters applied (0: none; a
/// state computed under adapters serves only calls under the same ones).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owner {
    pub model: u64,
    pub shared: Option<ModelIdentity>,
    pub adapters: u64,
}

impl Owner {
    fn key(&self, streams: u32) -> Key {
        Key {
            model: self.model,
            adapters: self.adapters,
            streams,
        }
    }

    fn store_key(&self, streams: u32) -> Option<u64> {
        let key = prefix_store::key(self.shared.as_ref()?, streams)?;
        Some(match self.adapters {
            0 => key,
            adapters => crate::hashing::hash_of(&(key, adapters)),
        })
    }
}

/// What a prompt's lookup found, and what the next save needs to know.
#[derive(Debug)]
pub struct Lookup {
    pub hit: Option<Hit>,
    /// The model's key in the shared store and the longest prefix of the
    /// prompt the store holds (`None`: not asked, the store being off or
    /// having nothing to add).
    stored: Option<(u64, usize)>,
}

/// The best saved prefix of `prompt` for a context of `streams` KV streams
/// holding `live` of its tokens already: from this process's cache, or from
/// the shared store when that holds more of the prompt (the state loaded
/// from it is then kept in this process's cache too). Only states of at
/// most `max_len` tokens are offered.
pub fn lookup(
    owner: Owner,
    streams: u32,
    prompt: &[LlamaToken],
    max_len: usize,
    live: usize,
) -> Lookup {
    let key = owner.key(streams);
    let memory = best(key, prompt, max_len, live);
    let floor = memory.as_ref().map_or(live, |h| h.common.max(live));
    let found = owner
        .store_key(streams)
        .filter(|_| prompt.len() > floor + MIN_GAIN)
        .and_then(|k| {
            let bound = owner.shared.as_ref()?.bound;
            Some((
                k,
                prefix_store::find(k, bound, prompt, max_len, floor + MIN_GAIN)?,
            ))
        });
    let Some((store_key, found)) = found else {
        return Lookup {
            hit: memory,
            stored: None,
        };
    };
    let stored = Some((store_key, found.covered));
    let Some(f) = found.found else {
        return Lookup {
            hit: memory,
            stored,
        };
    };
    let tokens: Arc<[LlamaToken]> = f.tokens.into();
    let state = Arc::new(f.state.into_saved());
    let logits: Option<Arc<[f32]>> = f.logits.map(Arc::from);
    cache().insert_shared(key, Arc::clone(&tokens), Arc::clone(&state), logits.clone());
    Lookup {
        hit: Some(Hit {
            common: f.common,
            tokens,
            state,
            logits,
            source: CacheSource::Shared,
        }),
        stored,
    }
}

/// Keep the state of `prompt`, just read into a context of `streams` KV
/// streams, where it is worth keeping: in this process's cache and in the
/// shared store (when `lookup` found that it holds too little of it).
/// `save` takes the state; it is called at most once. `logits`: those of
/// the prompt's last token, kept with the state (see [`Hit::logits`]).
pub fn remember(
    owner: Owner,
    streams: u32,
    prompt: &[LlamaToken],
    lookup: &Lookup,
    logits: Option<&[f32]>,
    save: impl FnOnce() -> Option<SavedState>,
) {
    let key = owner.key(streams);
    let in_memory = wants(key, prompt);
    let to_store = lookup
        .stored
        .filter(|&(_, covered)| prefix_store::wants(prompt.len(), covered));
    if !in_memory && to_store.is_none() {
        return;
    }
    let Some(state) = save() else {
        return;
    };
    if let Some((store_key, covered)) = to_store {
        prefix_store::write(
            store_key,
            streams,
            prompt,
            covered,
            state.bytes(),
            logits.unwrap_or_default(),
        );
    }
    if in_memory {
        cache().insert_shared(key, prompt.into(), Arc::new(state), logits.map(Arc::from));
    }
}

#[derive(Debug)]
struct Entry {
    owner: Key,
    tokens: Arc<[LlamaToken]>,
    state: Arc<SavedState>,
    logits: Option<Arc<[f32]>>,
    last_used: u64,
}

impl Entry {
    /// What it holds, in bytes: the state and the logits.
    fn bytes(&self) -> usize {
        self.state.len()
            + self
                .logits
                .as_ref()
                .map_or(0, |l| std::mem::size_of_val(&l[..]))
    }
}

#[derive(Debug)]
struct Cache {
    entries: Vec<Entry>,
    bytes: usize,
    limit: usize,
    min_tokens: usize,
    clock: u64,
    stats: Stats,
}

static CACHE: Mutex<Cache> = Mutex::new(Cache::new(DEFAULT_LIMIT_BYTES, DEFAULT_MIN_TOKENS));

static NEXT_OWNER: AtomicU64 = AtomicU64::new(1);

fn cache() -> MutexGuard<'static, Cache> {
    // A panic while the lock was held leaves consistent data behind (every
    // update is a few plain assignments): carry on with it.
    CACHE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A number for a newly loaded model, never given before in this process.
pub fn new_owner() -> u64 {
    NEXT_OWNER.fetch_add(1, Ordering::Relaxed)
}

/// Bound the cache to `limit_bytes` (0: off, and emptied) and save only
/// prompts that add at least `min_tokens` to what it holds.
pub fn configure(limit_bytes: usize, min_tokens: usize) {
    let mut c = cache();
    c.limit = limit_bytes;
    c.min_tokens = min_tokens.max(1);
    c.stats.limit_bytes = limit_bytes;
    c.evict();
}

pub fn stats() -> Stats {
    let c = cache();
    Stats {
        bytes: c.bytes,
        entries: c.entries.len(),
        ..c.stats
    }
}

/// The saved state of `owner` sharing the longest prefix with `prompt`,
/// among those of at most `max_len` tokens, when it brings at least
/// [`MIN_GAIN`] tokens beyond the `live` ones the context shares with the
/// prompt already. Counts the lookup as a hit or a miss.
pub fn best(owner: Key, prompt: &[LlamaToken], max_len: usize, live: usize) -> Option<Hit> {
    cache().best(owner, prompt, max_len, live)
}

/// Whether the state of `tokens` (a prompt just evaluated) is worth
/// saving: the cache is on and they add at least the minimum to the
/// longest prefix of theirs it holds.
pub fn wants(owner: Key, tokens: &[LlamaToken]) -> bool {
    cache().wants(owner, tokens)
}

/// Drop the state of `tokens` that `owner` kept for contexts of `streams`
/// KV streams: llama.cpp refused it, and would again.
pub fn discard(owner: Owner, streams: u32, tokens: &[LlamaToken]) {
    cache().discard(owner.key(streams), tokens);
}

/// Drop the states of a model that is being freed.
pub fn forget_owner(model: u64) {
    cache().remove_where(|e| e.owner.model == model);
}

impl Cache {
    const fn new(limit: usize, min_tokens: usize) -> Self {
        Self {
            entries: Vec::new(),
            bytes: 0,
            limit,
            min_tokens,
            clock: 0,
            stats: Stats {
                limit_bytes: limit,
                bytes: 0,
                entries: 0,
                hits: 0,
                misses: 0,
                evictions: 0,
            },
        }
    }

    fn best(
        &mut self,
        owner: Key,
        prompt: &[LlamaToken],
        max_len: usize,
        live: usize,
    ) -> Option<Hit> {
        if self.limit == 0 {
            return None;
        }
        let found = self
            .entries
            .iter()
            .enumerate()
            .filter(|(_, e)| e.owner == owner && e.tokens.len() <= max_len)
            .map(|(i, e)| (i, common_prefix(&e.tokens, prompt)))
            .max_by_key(|&(i, common)| (common, std::cmp::Reverse(i)));
        let Some((i, common)) = found.filter(|&(_, common)| common >= MIN_GAIN) else {
            if live < MIN_GAIN {
                self.stats.misses += 1;
            }
            return None;
        };
        // Used either way: restored, or held by the context already.
        self.clock += 1;
        let clock = self.clock;
        let entry = self.entries.get_mut(i)?;
        entry.last_used = clock;
        if common < live + MIN_GAIN {
            if live < MIN_GAIN {
                self.stats.misses += 1;
            }
            return None;
        }
        let hit = Hit {
            common,
            tokens: Arc::clone(&entry.tokens),
            state: Arc::clone(&entry.state),
            logits: entry.logits.clone(),
            source: CacheSource::Memory,
        };
        self.stats.hits += 1;
        Some(hit)
    }

    fn wants(&self, owner: Key, tokens: &[LlamaToken]) -> bool {
        if self.limit == 0 {
            return false;
        }
        let covered = self
            .entries
            .iter()
            .filter(|e| e.owner == owner)
            .map(|e| common_prefix(&e.tokens, tokens))
            .max()
            .unwrap_or(0);
        tokens.len().saturating_sub(covered) >= self.min_tokens
    }

    /// A state without logits (the tests' entries).
    #[cfg(test)]
    fn insert(&mut self, owner: Key, tokens: &[LlamaToken], state: SavedState) {
        self.insert_shared(owner, tokens.into(), Arc::new(state), None);
    }

    /// Keep `state`, the saved state of `tokens`, for `owner`, with the
    /// logits of its last token. The entries it extends go (it holds them
    /// whole); the least recently used go while the cache is over its bound.
    /// An entry larger than the bound is not kept.
    fn insert_shared(
        &mut self,
        owner: Key,
        tokens: Arc<[LlamaToken]>,
        state: Arc<SavedState>,
        logits: Option<Arc<[f32]>>,
    ) {
        let entry = Entry {
            owner,
            tokens,
            state,
            logits,
            last_used: 0,
        };
        if entry.bytes() > self.limit {
            return;
        }
        self.remove_where(|e| {
            e.owner == owner
                && e.tokens.len() <= entry.tokens.len()
                && entry.tokens.starts_with(&e.tokens)
        });
        self.clock += 1;
        self.bytes += entry.bytes();
        self.entries.push(Entry {
            last_used: self.clock,
            ..entry
        });
        self.evict();
    }

    fn discard(&mut self, owner: Key, tokens: &[LlamaToken]) {
        self.remove_where(|e| e.owner == owner && &e.tokens[..] == tokens);
    }

    /// Drop the entries `gone` picks, and their bytes from the count.
    fn remove_where(&mut self, gone: impl Fn(&Entry) -> bool) {
        let mut freed = 0;
        self.entries.retain(|e| {
            let drop = gone(e);
            if drop {
                freed += e.bytes();
            }
            !drop
        });
        self.bytes -= freed;
    }

    /// Drop least recently used entries until the cache is within its bound.
    fn evict(&mut self) {
        while self.bytes > self.limit {
            let Some(oldest) = least_recent(&self.entries, |e| e.last_used) else {
                break;
            };
            let gone = self.entries.swap_remove(oldest);
            self.bytes -= gone.bytes();
            self.stats.evictions += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ONE: Key = Key {
        model: 1,
        adapters: 0,
        streams: 1,
    };
    const TWO: Key = Key {
        model: 2,
        adapters: 0,
        streams: 1,
    };

    fn tokens(ids: std::ops::Range<i32>) -> Vec<LlamaToken> {
        ids.map(LlamaToken).collect()
    }

    /// A prompt of a 100-token "system prompt" `sys` and 20 tokens of `q`.
    fn prompt(sys: i32, q: i32) -> Vec<LlamaToken> {
        let mut t = tokens(sys * 1000..sys * 1000 + 100);
        t.extend(tokens(q * 100_000..q * 100_000 + 20));
        t
    }

    #[test]
    fn the_longest_shared_prefix_of_the_owner_is_found() {
        let mut c = Cache::new(1 << 20, 32);
        c.insert(ONE, &prompt(1, 1), SavedState::filler(100));
        c.insert(ONE, &prompt(2, 1), SavedState::filler(100));
        c.insert(TWO, &prompt(3, 1), SavedState::filler(100));
        let hit = c.best(ONE, &prompt(2, 7), 4096, 0).expect("a hit");
        assert_eq!((hit.common, &hit.tokens[..]), (100, &prompt(2, 1)[..]));
        // Another model's prefix is never offered.
        assert!(c.best(ONE, &prompt(3, 7), 4096, 0).is_none());
        // Nor one longer than the context, nor one the context holds already.
        assert!(c.best(ONE, &prompt(2, 7), 119, 0).is_none());
        assert!(c.best(ONE, &prompt(2, 7), 4096, 90).is_none());
        assert_eq!((c.stats.hits, c.stats.misses), (1, 2));
    }

    #[test]
    fn a_prompt_is_saved_only_when_it_adds_enough() {
        let mut c = Cache::new(1 << 20, 32);
        assert!(c.wants(ONE, &prompt(1, 1)));
        c.insert(ONE, &prompt(1, 1), SavedState::filler(100));
        // Same system prompt, another question: 20 new tokens.
        assert!(!c.wants(ONE, &prompt(1, 2)));
        assert!(c.wants(ONE, &prompt(2, 2)));
        assert!(c.wants(TWO, &prompt(1, 1)));
        let other_layout = Key {
            model: 1,
            adapters: 0,
            streams: 2,
        };
        assert!(c.wants(other_layout, &prompt(1, 2)));
        assert!(c.best(other_layout, &prompt(1, 2), 4096, 0).is_none());
        // The same model under LoRA adapters computes other states.
        let adapted = Key {
            model: 1,
            adapters: 7,
            streams: 1,
        };
        assert!(c.wants(adapted, &prompt(1, 2)));
        assert!(c.best(adapted, &prompt(1, 2), 4096, 0).is_none());
        assert!(!Cache::new(0, 32).wants(ONE, &prompt(1, 1)));
    }

    #[test]
    fn an_extension_replaces_the_prefix_it_holds() {
        let mut c = Cache::new(1 << 20, 32);
        let short = tokens(0..50);
        c.insert(ONE, &short, SavedState::filler(50));
        c.insert(ONE, &tokens(0..120), SavedState::filler(120));
        assert_eq!((c.entries.len(), c.bytes), (1, 120));
    }

    #[test]
    fn least_recently_used_go_first_within_the_bound() {
        let mut c = Cache::new(300, 32);
        for sys in 1..=3 {
            c.insert(ONE, &prompt(sys, 0), SavedState::filler(100));
        }
        // Use the oldest: the second becomes the least recently used.
        assert!(c.best(ONE, &prompt(1, 9), 4096, 0).is_some());
        c.insert(ONE, &prompt(4, 0), SavedState::filler(100));
        let kept: Vec<i32> = c.entries.iter().map(|e| e.tokens[0].0 / 1000).collect();
        let mut sorted = kept.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, vec![1, 3, 4]);
        assert_eq!((c.bytes, c.stats.evictions), (300, 1));
        // Larger than the whole bound: not kept, nothing evicted for it.
        c.insert(ONE, &prompt(5, 0), SavedState::filler(301));
        assert_eq!((c.entries.len(), c.bytes), (3, 300));
    }

    fn ids(ids: &[i32]) -> Vec<LlamaToken> {
        ids.iter().map(|&i| LlamaToken(i)).collect()
    }

    #[test]
    fn a_discarded_state_is_gone_and_its_bytes_freed() {
        let mut c = Cache::new(1 << 20, 32);
        c.insert(ONE, &prompt(1, 1), SavedState::filler(100));
        c.insert(ONE, &prompt(2, 1), SavedState::filler(50));
        c.discard(TWO, &prompt(1, 1));
        c.discard(ONE, &prompt(1, 2));
        assert_eq!(
            (c.entries.len(), c.bytes),
            (2, 150),
            "another owner's or other tokens"
        );
        c.discard(ONE, &prompt(1, 1));
        assert_eq!((c.entries.len(), c.bytes), (1, 50));
        assert!(c.best(ONE, &prompt(1, 7), 4096, 0).is_none());
    }

    #[test]
    fn common_prefix_counts_the_shared_start() {
        assert_eq!(common_prefix(&ids(&[1, 2, 3]), &ids(&[1, 2, 4])), 2);
        assert_eq!(common_prefix(&ids(&[1, 2]), &ids(&[1, 2, 3])), 2);
        assert_eq!(common_prefix(&ids(&[]), &ids(&[1])), 0);
        assert_eq!(common_prefix(&ids(&[5]), &ids(&[1])), 0);
    }
}
