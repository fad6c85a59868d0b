//! A llama.cpp context kept alive between calls on one model, with the tokens
//! whose keys and values its cache holds. A call whose prompt starts with
//! those tokens (same system prompt, same few-shot turns, or the previous
//! reply continued) evaluates only what is new.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::ThreadId;

use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;

use super::input::{Input, Placed, Run};
use super::lookup::{LookupOdds, StepCost};
use crate::backend::error::{InferenceError, InferenceResult};
use crate::backend::params::StopCheck;
use crate::backend::CacheSource;
use crate::engine::cache::prefix_cache::{self, common_prefix};
use crate::engine::llama::context::{Context, Shape};
use crate::engine::llama::lora::ActiveSet;
use crate::engine::llama::shelf::{Fit, Idle, Shelf};

/// Largest number of tokens evaluated in one llama.cpp batch.
pub const MAX_BATCH: u32 = 512;

/// A context and what its KV cache holds (sequence 0, positions `0..len`).
#[derive(Debug)]
pub struct Session {
    ctx: Context,
    /// Whose the prefixes it saves and restores are.
    owner: prefix_cache::Owner,
    cached: Vec<LlamaToken>,
    /// The logits after the last prompt evaluated, and its length: a prompt
    /// found whole in the cache gets them back instead of evaluating its
    /// last token again, alone, which llama.cpp computes with other kernels
    /// (slightly other numbers, and at times another greedy token) than the
    /// batch that first evaluated it.
    prompt_logits: Option<(usize, Vec<f32>)>,
    /// Whether [`Session::logits`] are `prompt_logits` (no evaluation since
    /// they were restored).
    restored: bool,
    /// The rows of [`Session::row`]: from which token of the last
    /// evaluation, and their copies when its tokens were evaluated one by
    /// one (else they are the context's).
    rows_from: usize,
    rows: Option<Vec<f32>>,
    /// What evaluating generated tokens costs in this context (prompt
    /// lookup weighs its proposals with it).
    pub step_cost: StepCost,
    /// How prompt lookup's proposals fared in this context lately.
    pub lookup_odds: LookupOdds,
}

impl Idle for Session {
    fn rest(&mut self) {
        self.ctx.rest();
    }
}

impl Session {
    /// A context of `n_ctx` tokens with an empty cache, keeping `model` alive
    /// (see [`Context::new`] for `poll`).
    pub fn new(
        model: &Arc<LlamaModel>,
        owner: prefix_cache::Owner,
        n_threads: u32,
        n_ctx: u32,
        poll: u32,
    ) -> InferenceResult<Self> {
        Ok(Self {
            owner,
            ctx: Context::new(
                model,
                n_threads,
                Shape::logits(n_ctx, 1, n_ctx.min(MAX_BATCH)),
                poll,
            )?,
            cached: Vec::new(),
            prompt_logits: None,
            restored: false,
            rows_from: 0,
            rows: None,
            step_cost: StepCost::new(),
            lookup_odds: LookupOdds::default(),
        })
    }

    pub fn n_ctx(&self) -> u32 {
        self.ctx.n_ctx()
    }

    /// Most tokens one evaluation takes.
    pub fn batch_capacity(&self) -> usize {
        self.ctx.batch_capacity()
    }

    /// Run the next evaluations on `n` threads.
    pub fn set_threads(&mut self, n: u32) {
        self.ctx.set_threads(n);
    }

    /// False in a process forked after the session was made.
    pub fn is_usable(&self) -> bool {
        self.ctx.is_usable()
    }

    /// How many tokens at the start of `prompt` the cache holds already,
    /// for a call under the LoRA adapters labelled `adapters` (none when
    /// the cache was computed under others).
    pub fn shared_with(&self, prompt: &[LlamaToken], adapters: u64) -> usize {
        if adapters == self.owner.adapters {
            common_prefix(&self.cached, prompt)
        } else {
            0
        }
    }

    /// The label of the LoRA adapter set the session evaluates under.
    pub fn adapters(&self) -> u64 {
        self.owner.adapters
    }

    /// Evaluate under the LoRA adapters `set` from now on. What the cache
    /// holds was computed under the set before: when that was another, it
    /// is emptied, and the prefixes saved and restored are those of `set`.
    pub fn use_adapters(&mut self, set: &ActiveSet<'_>) -> InferenceResult<()> {
        if set.id == self.owner.adapters {
            return Ok(());
        }
        // The cells go, their bytes stay (as llama-server drops a slot's
        // cache): zeroing the whole cache took 4 ms of a switch's 7 here.
        if !self.ctx.forget_from(0) {
            self.ctx.clear();
        }
        self.cached.clear();
        self.prompt_logits = None;
        self.restored = false;
        self.rows = None;
        self.ctx.set_adapters(set)?;
        self.owner.adapters = set.id;
        Ok(())
    }

    /// Tokens in the cache, which is also the position of the next one.
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        self.cached.len()
    }

    /// Logits of the last token evaluated (or of the prompt found whole in
    /// the cache).
    pub fn logits(&self) -> InferenceResult<&[f32]> {
        match &self.prompt_logits {
            Some((_, logits)) if self.restored => Ok(logits),
            _ => self.ctx.last_logits(),
        }
    }

    /// Make the cache hold exactly `prompt` and leave the logits of its last
    /// token ready for sampling. With `reuse`, the longest prefix already
    /// cached is kept, or restored from the process's prefix cache when a
    /// saved state shares more of the prompt; a prompt found whole gets the
    /// logits its evaluation left, else at least its last token is
    /// evaluated. Returns the number of tokens reused and where from; saves
    /// the prompt's state in the prefix cache when it is new enough.
    pub fn evaluate_prompt(
        &mut self,
        input: &Input,
        reuse: bool,
    ) -> InferenceResult<(usize, CacheSource)> {
        input.check_ends_with_text()?;
        let prompt = input.tokens();
        self.restored = false;
        let mut shared = if reuse {
            common_prefix(&self.cached, prompt)
        } else {
            0
        };
        let whole = shared == prompt.len()
            && self
                .prompt_logits
                .as_ref()
                .is_some_and(|(len, _)| *len == prompt.len());
        if whole && (self.cached.len() == prompt.len() || self.ctx.forget_from(prompt.len())) {
            self.cached.truncate(prompt.len());
            self.restored = true;
            return Ok((prompt.len(), CacheSource::Memory));
        }
        let mut source = CacheSource::Memory;
        let lookup = reuse.then(|| {
            let room = self.ctx.n_ctx() as usize;
            prefix_cache::lookup(self.owner, self.ctx.streams(), prompt, room, shared)
        });
        if let Some(hit) = lookup.as_ref().and_then(|l| l.hit.as_ref()) {
            // The prompt is the state's tokens exactly, with the logits
            // their evaluation left: the whole state and those logits are
            // what a fresh evaluation gives, to the bit.
            let whole = match &hit.logits {
                Some(logits) if hit.tokens[..] == *prompt && logits.len() == self.ctx.n_vocab() => {
                    Some(logits)
                }
                _ => None,
            };
            let keep = match whole {
                Some(_) => prompt.len(),
                None => input.reusable(hit.common),
            };
            // Either way the context holds what `restore` left: the hit's
            // prefix, or nothing when llama.cpp refused the state.
            let restored = self.restore(hit, keep);
            shared = self.cached.len();
            if restored {
                source = hit.source;
                if let Some(logits) = whole {
                    self.prompt_logits = Some((prompt.len(), logits.to_vec()));
                    self.restored = true;
                    return Ok((prompt.len(), source));
                }
            } else {
                prefix_cache::discard(self.owner, self.ctx.streams(), &hit.tokens);
            }
        }
        // An image is read whole: a prefix kept ends before or after one.
        let mut keep = input.reusable(shared);
        if keep < self.cached.len() {
            keep = self.keep_first(keep);
        }
        let n_batch = self.ctx.batch_capacity();
        self.prompt_logits = None;
        for run in input.runs(keep) {
            match run {
                Run::Text { start, tokens } => {
                    let ends = start + tokens.len() == prompt.len();
                    let chunks = tokens.len().div_ceil(n_batch);
                    for (i, chunk) in tokens.chunks(n_batch).enumerate() {
                        let last = if ends && i + 1 == chunks {
                            chunk.len() - 1
                        } else {
                            chunk.len()
                        };
                        self.decode(chunk, last)?;
                    }
                }
                Run::Image(placed) => self.decode_image(input, placed)?,
            }
        }
        let logits = self.ctx.last_logits()?.to_vec();
        self.prompt_logits = Some((prompt.len(), logits));
        if let Some(lookup) = &lookup {
            let ctx = &self.ctx;
            let logits = self.prompt_logits.as_ref().map(|(_, l)| &l[..]);
            prefix_cache::remember(self.owner, ctx.streams(), prompt, lookup, logits, || {
                ctx.save_sequence(0)
            });
        }
        if keep == 0 {
            source = CacheSource::None;
        }
        Ok((keep, source))
    }

    /// Replace the context's cells with the saved state of `hit`, cut to
    /// its first `keep` tokens. False, with the context emptied, when
    /// llama.cpp refuses the state or cannot cut it.
    fn restore(&mut self, hit: &prefix_cache::Hit, keep: usize) -> bool {
        self.ctx.clear();
        self.cached.clear();
        self.prompt_logits = None;
        if !self.ctx.restore_sequence(0, &hit.state) {
            return false;
        }
        if keep < hit.tokens.len() && !self.ctx.forget_from(keep) {
            self.ctx.clear();
            return false;
        }
        self.cached.extend_from_slice(&hit.tokens[..keep]);
        true
    }

    /// Evaluate generated `tokens` in one batch at the next positions (the
    /// sampled one, those the constraint forced after it, then a proposal:
    /// see `lookup`), keeping the logits of the `i`-th for every
    /// `i >= rows_from` ([`Session::row`]): the next token is sampled from
    /// the last pending one's, and each proposed token is checked against
    /// the pick from the row before it. With
    /// `one_by_one`, each token is evaluated alone, with the kernels of a
    /// single decode step (for the tests that compare decisions; slower).
    pub fn evaluate_rows(
        &mut self,
        tokens: &[LlamaToken],
        rows_from: usize,
        one_by_one: bool,
    ) -> InferenceResult<()> {
        self.rows = None;
        if !one_by_one {
            self.rows_from = rows_from;
            return self.decode(tokens, rows_from);
        }
        let mut rows = Vec::new();
        for (i, token) in tokens.iter().enumerate() {
            self.decode(std::slice::from_ref(token), usize::from(i < rows_from))?;
            if i >= rows_from {
                rows.extend_from_slice(self.ctx.last_logits()?);
            }
        }
        self.rows_from = rows_from;
        self.rows = Some(rows);
        Ok(())
    }

    /// The logits of the `i`-th token of the last [`Session::evaluate_rows`].
    pub fn row(&self, i: usize) -> InferenceResult<&[f32]> {
        match &self.rows {
            Some(rows) => {
                let width = self.ctx.n_vocab();
                let at = i.checked_sub(self.rows_from).map(|r| r * width);
                at.and_then(|at| rows.get(at..at + width)).ok_or_else(|| {
                    InferenceError::DecodeFailed {
                        detail: format!("no logits for token {i} of the batch"),
                    }
                })
            }
            None => self.ctx.logits(i),
        }
    }

    /// Drop the cached tokens from position `len` on (a proposal's tokens
    /// the sampler did not pick). An error when the model's memory cannot
    /// drop a partial range; the session must then be dropped.
    pub fn rewind(&mut self, len: usize) -> InferenceResult<()> {
        if len >= self.cached.len() {
            return Ok(());
        }
        if !self.ctx.forget_from(len) {
            return Err(super::lookup::not_dropped());
        }
        self.cached.truncate(len);
        Ok(())
    }

    /// Evaluate `tokens` at the next positions, with logits for those from
    /// index `logits_from` on. When the stop check aborts it, the cache is
    /// put back to `cached` (`InferenceError::Aborted`); on any other
    /// failure the cache no longer matches `cached`, so the caller must drop
    /// the session.
    fn decode(&mut self, tokens: &[LlamaToken], logits_from: usize) -> InferenceResult<()> {
        self.restored = false;
        match self.ctx.decode(tokens, self.cached.len(), logits_from) {
            Ok(()) => {
                self.cached.extend_from_slice(tokens);
                Ok(())
            }
            Err(InferenceError::Aborted) => {
                // Stopped part-way: drop what this batch left in the cache,
                // so that the cache holds exactly `cached` again.
                self.keep_first(self.cached.len());
                Err(InferenceError::Aborted)
            }
            Err(e) => Err(e),
        }
    }

    /// Evaluate the image `placed` of `input` at the end of what the
    /// session holds (its start).
    fn decode_image(&mut self, input: &Input, placed: &Placed) -> InferenceResult<()> {
        self.restored = false;
        let start = self.cached.len();
        match input.decode_image(&mut self.ctx, placed, 0, start) {
            Ok(()) => {
                self.cached
                    .extend_from_slice(&input.tokens()[placed.start..placed.end()]);
                Ok(())
            }
            Err(e) => {
                // Part of the image may be in the memory: drop it.
                self.keep_first(start);
                Err(e)
            }
        }
    }

    /// Keep the first `len` tokens in the memory (as `cached` records them)
    /// and drop the rest; when the memory cannot drop a partial range, start
    /// over empty. How many are kept.
    fn keep_first(&mut self, len: usize) -> usize {
        if self.ctx.forget_from(len) {
            self.cached.truncate(len);
            len
        } else {
            self.ctx.clear();
            self.cached.clear();
            0
        }
    }

    /// The stop check the next evaluations ask between graph nodes.
    pub fn set_stop(&mut self, check: StopCheck) {
        self.ctx.set_stop(check);
    }
}

/// The sessions a model keeps for its next calls, and the threads on which
/// a stream of the model is open (their other calls are refused until it
/// ends). The model and each of its streams hold it: a stream that ends
/// gives its session back here, without knowing the model.
#[derive(Debug, Default)]
pub struct Sessions {
    kept: Shelf<Session>,
    streams: Mutex<Vec<ThreadId>>,
}

impl Sessions {
    /// The kept session that suits a call best (see [`Shelf::take`]).
    pub fn take(&self, score: impl Fn(&Session) -> Fit) -> Option<Session> {
        self.kept.take(score)
    }

    /// Keep `session` for a later call.
    pub fn put(&self, session: Session) {
        self.kept.put(session);
    }

    /// How many sessions are kept.
    pub fn kept(&self) -> usize {
        self.kept.inspect(<[_]>::len)
    }

    fn streams(&self) -> MutexGuard<'_, Vec<ThreadId>> {
        // Pushes and removals of ids only: a poisoned list is still whole.
        self.streams.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether a stream is open on `thread`.
    pub fn is_streaming(&self, thread: ThreadId) -> bool {
        self.streams().contains(&thread)
    }

    /// A stream opens on `thread`.
    pub fn open_stream(&self, thread: ThreadId) {
        self.streams().push(thread);
    }

    /// The stream opened on `thread` ends: its session is kept (`None` when
    /// the stream failed and its cache cannot be trusted), and that thread
    /// may call the model again.
    pub fn end_stream(&self, thread: ThreadId, session: Option<Session>) {
        {
            let mut streams = self.streams();
            if let Some(i) = streams.iter().position(|t| *t == thread) {
                streams.swap_remove(i);
            }
        }
        if let Some(session) = session {
            self.put(session);
        }
    }
}
