//! Many prompts generated together: each prompt is a sequence of one
//! llama.cpp context (its own KV stream), and every step evaluates one batch
//! carrying the next token of every active sequence. Each sequence has its
//! own sampler, grammar state, stop strings and finish reason, and yields
//! what [`super::generate::run`] yields for its prompt alone (the per-token
//! rules live in [`Progress`], shared by both loops).
//!
//! When there are more prompts than sequences, a sequence whose generation
//! ends is refilled at once with the next prompt, in the same batch as the
//! tokens of the others (continuous batching).

use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;

use super::generate::recount_due;
use super::input::Input;
use super::lookup::StepCost;
use super::progress::{self, Progress};
use super::sampler::{CallSampling, Sampler};
use super::session::MAX_BATCH;
use crate::backend::error::{InferenceError, InferenceResult};
use crate::backend::params::GenerateParams;
use crate::backend::{CacheSource, FinishReason, Generation};
use crate::engine::cache::prefix_cache;
use crate::engine::llama::context::{cells_for, BatchToken, Context, Shape, MAX_SEQUENCES};
use crate::engine::llama::threads::Claim;

/// Sequences decoded together when the caller does not say: enough to keep
/// the cores busy on a CPU, few enough that the KV cache of prompts of a few
/// hundred tokens each stays within tens of megabytes on a small model.
pub const DEFAULT_PARALLEL: u32 = 32;

/// The most sequences a caller may ask for (llama.cpp's limit).
pub const MAX_PARALLEL: u32 = MAX_SEQUENCES;

/// The context `prompts` need: one sequence per prompt up to `parallel`, and
/// per sequence the cells its longest prompt and `max_tokens` can fill (never
/// more than `n_ctx`, the caller's per-prompt context).
pub fn shape_for(prompts: &[Input], params: &GenerateParams, parallel: u32) -> Shape {
    let n_seq = prompts
        .len()
        .clamp(1, parallel.clamp(1, MAX_PARALLEL) as usize) as u32;
    let longest = prompts.iter().map(Input::len).max().unwrap_or(1) as u64;
    let wanted = cells_for(longest + u64::from(params.max_tokens));
    let n_ctx = wanted.min(u64::from(params.n_ctx)) as u32;
    Shape::logits(n_ctx, n_seq, MAX_BATCH.max(n_seq))
}

/// What the next batch carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Turn {
    /// Prompt tokens of the sequences still reading theirs, as many as fit.
    Read,
    /// This many pending tokens of every generating sequence.
    Generate(usize),
}

/// The next batch's turn, from the pending tokens of each active sequence
/// (0: it is reading its prompt): reading while any sequence is, else the
/// fewest any sequence has pending, from each.
fn turn(pending: impl IntoIterator<Item = usize>) -> Turn {
    let mut fewest = None;
    for n in pending {
        if n == 0 {
            return Turn::Read;
        }
        fewest = Some(fewest.map_or(n, |f: usize| f.min(n)));
    }
    fewest.map_or(Turn::Read, Turn::Generate)
}

/// One prompt being generated in one sequence of the context.
struct Slot<'a> {
    index: usize,
    prompt: &'a Input,
    sampler: Sampler,
    progress: Progress,
    /// Tokens of the sequence in the cache: the next position.
    len: usize,
    /// The generated tokens not yet evaluated: the sampled one and those
    /// the constraint forced after it (evaluated only when another is to
    /// follow them, as in the single-sequence loop).
    pending: Vec<LlamaToken>,
    /// Where its logits are in the batch just decoded, if it asked for any:
    /// its last pending token's, then its proposal's.
    row: Option<usize>,
    /// The proposal (prompt lookup) fed after its pending tokens.
    draft: Vec<LlamaToken>,
    /// Prompt tokens restored from the prefix cache, not evaluated.
    reused: usize,
    /// Where they came from.
    source: CacheSource,
    /// The prefix cache's lookup for its prompt (`None`: the call does not
    /// use the cache), to save the prompt's state once read.
    lookup: Option<prefix_cache::Lookup>,
    /// Whether the batch just decoded held the last token of its prompt.
    read_now: bool,
}

impl Slot<'_> {
    /// Why the generation ends before its next token, if it does. A slot in
    /// the middle of its prompt goes on.
    fn before_token(&self, n_ctx: u32, params: &GenerateParams) -> Option<FinishReason> {
        let ready = !self.pending.is_empty() || self.len == 0;
        let in_context = if self.len == 0 {
            self.prompt.len()
        } else {
            self.len + self.pending.len()
        };
        ready
            .then(|| self.progress.before_token(in_context, n_ctx, params))
            .flatten()
    }

    /// Append this slot's tokens for the next decode to `batch`: up to
    /// `budget` of its pending tokens (the sampled one and those the
    /// constraint forced after it; logits for the last), or of its prompt;
    /// then, when all its pending tokens fit, its `draft` (logits for each).
    /// Returns how many.
    fn feed(&mut self, seq: u32, batch: &mut Vec<BatchToken>, budget: usize) -> usize {
        let start = batch.len();
        if self.pending.is_empty() && self.prompt.image_at(self.len).is_some() {
            self.row = None;
            return 0;
        }
        if !self.pending.is_empty() {
            let last = self.pending.len();
            let len = self.len;
            let whole = last <= budget;
            if !whole {
                self.draft.clear();
            }
            batch.extend(
                self.pending
                    .drain(..last.min(budget))
                    .chain(self.draft.iter().copied())
                    .enumerate()
                    .map(|(i, token)| BatchToken {
                        token,
                        seq,
                        pos: len + i,
                        logits: i + 1 >= last,
                    }),
            );
        } else {
            self.draft.clear();
            // Text up to the next image (read on its own, before a batch).
            let end = self.prompt.text_until(self.len).min(self.len + budget);
            batch.extend(self.prompt.tokens()[self.len..end].iter().enumerate().map(
                |(i, &token)| BatchToken {
                    token,
                    seq,
                    pos: self.len + i,
                    logits: self.len + i + 1 == self.prompt.len(),
                },
            ));
        }
        let fed = batch.len() - start;
        self.read_now = self.len < self.prompt.len() && self.len + fed == self.prompt.len();
        self.len += fed;
        // Only this slot's own tokens count: a slot that fed nothing (no
        // budget left) must not take the logits of the one before it.
        self.row = batch[start..]
            .iter()
            .position(|t| t.logits)
            .map(|i| start + i);
        fed
    }
}

/// Generate from every prompt of `prompts` in `ctx`, `ctx.n_seq()` at a
/// time; the results are in the order of `prompts`. Each prompt gets a fresh
/// sampler (the same parameters and seed, and a copy of `grammar`). On an
/// error the context's cache is in no known state; the next call clears
/// each sequence before using it anyway.
pub fn run(
    ctx: &mut Context,
    cache_owner: Option<prefix_cache::Owner>,
    model: &LlamaModel,
    prompts: &[Input],
    params: &GenerateParams,
    sampling: &CallSampling,
    claim: Option<&Claim>,
) -> InferenceResult<Vec<Generation>> {
    let n_ctx = params.n_ctx;
    let mut results: Vec<Option<Generation>> = vec![None; prompts.len()];
    let mut queue = prompts.iter().enumerate();
    let mut slots: Vec<Option<Slot<'_>>> = (0..ctx.n_seq()).map(|_| None).collect();
    let mut batch = Vec::with_capacity(ctx.batch_capacity());
    let mut step: u32 = 0;
    let mut step_cost = StepCost::new();
    loop {
        // Start a prompt in every free sequence, and end the generations
        // whose limits are reached (freeing their sequence for the next).
        for (seq, place) in slots.iter_mut().enumerate() {
            loop {
                if place.is_none() {
                    let Some((index, prompt)) = queue.next() else {
                        break;
                    };
                    ctx.forget_sequence(seq as u32);
                    let text = prompt.text_tokens();
                    let progress = Progress::new(model, &text, params);
                    let (reused, source, lookup) = match cache_owner {
                        Some(owner) => {
                            let (reused, source, lookup) =
                                restore_prefix(ctx, seq as u32, owner, prompt);
                            (reused, source, Some(lookup))
                        }
                        None => (0, CacheSource::None, None),
                    };
                    *place = Some(Slot {
                        index,
                        prompt,
                        sampler: sampling.sampler(model, params, &text),
                        progress,
                        len: reused,
                        pending: Vec::new(),
                        row: None,
                        draft: Vec::new(),
                        reused,
                        source,
                        lookup,
                        read_now: false,
                    });
                }
                let Some(finish) = place.as_ref().and_then(|s| s.before_token(n_ctx, params))
                else {
                    break;
                };
                if let Some(slot) = place.take() {
                    results[slot.index] =
                        Some(slot.progress.finish(finish, slot.prompt.len(), slot.reused));
                }
            }
        }

        // The images the reading sequences have come to, each evaluated on
        // its own (embeddings, not tokens).
        match read_images(ctx, &mut slots) {
            Err(InferenceError::Aborted) => {
                time_out(&mut slots, &mut queue, &mut results, params);
                break;
            }
            other => other?,
        }

        // One batch. Prompts first: while a sequence is still reading its
        // prompt, the batch carries only prompt tokens (as many as fit), and
        // the generating sequences wait with their pending token. Mixing one
        // token of each generating sequence with long prompt runs makes
        // llama.cpp split the batch into many small, slow micro-batches
        // (sequences in a micro-batch must contribute equal token counts),
        // and only the total time of the call matters to its caller.
        //
        // Generating, every sequence gives as many tokens as the one with
        // the fewest pending: for the same reason, a batch whose sequences
        // carry unequal counts (one with forced tokens beside others with
        // their sampled one) is evaluated in several micro-batches, each a
        // pass over the weights. A sequence with more keeps the rest for the
        // next steps, without logits until its last.
        batch.clear();
        let (reading, each) = match turn(slots.iter().flatten().map(|s| s.pending.len())) {
            Turn::Read => (true, usize::MAX),
            Turn::Generate(each) => (false, each),
        };
        let mut budget = ctx.batch_capacity();
        let mut generating = 0;
        let share = step_cost.extra_share();
        for (seq, slot) in slots.iter_mut().enumerate() {
            let Some(slot) = slot else { continue };
            if reading != slot.pending.is_empty() {
                continue;
            }
            if !reading {
                generating += 1;
                // A proposal after the pending tokens, when they all go.
                let pending = slot.pending.len();
                let room = match pending <= budget.min(each) {
                    true => slot
                        .progress
                        .proposal_room(params, slot.len, n_ctx, budget, pending),
                    false => 0,
                };
                slot.progress
                    .propose(model, &slot.sampler, (room, share), &mut slot.draft);
                slot.progress.steps += 1;
            }
            // As many as the sequence with the fewest pending gives, or
            // all its pending tokens and its proposal.
            let allowed = match slot.draft.is_empty() {
                true => budget.min(each),
                false => budget.min(slot.pending.len() + slot.draft.len()),
            };
            budget -= slot.feed(seq as u32, &mut batch, allowed);
        }
        if batch.is_empty() {
            break;
        }
        if let Some(claim) = claim.filter(|_| recount_due(step)) {
            ctx.set_threads(claim.threads());
        }
        step = step.wrapping_add(1);
        let began = std::time::Instant::now();
        let decoded = ctx.decode_batch(batch.iter().copied());
        if !reading && decoded.is_ok() {
            let ms = began.elapsed().as_secs_f64() * 1000.0;
            let rows = batch.iter().filter(|t| t.logits).count();
            step_cost.record((batch.len(), rows, generating), ms);
        }
        match decoded {
            Err(InferenceError::Aborted) => {
                time_out(&mut slots, &mut queue, &mut results, params);
                break;
            }
            other => other?,
        }

        for (seq, place) in slots.iter_mut().enumerate() {
            let Some(slot) = place else { continue };
            if std::mem::take(&mut slot.read_now) {
                slot.progress.prompt_read(slot.source);
                if let (Some(owner), Some(lookup)) = (cache_owner, &slot.lookup) {
                    let streams = ctx.streams();
                    prefix_cache::remember(
                        owner,
                        streams,
                        slot.prompt.tokens(),
                        lookup,
                        None,
                        || ctx.save_sequence(seq as u32),
                    );
                }
            }
            let Some(row) = slot.row.take() else { continue };
            let in_prompt = |e: InferenceError| e.in_prompt(slot.index);
            let draft = std::mem::take(&mut slot.draft);
            let first = slot.len - draft.len();
            let (kept, finish) = progress::verify(
                (&mut slot.progress, &mut slot.sampler, model),
                &mut slot.pending,
                &draft,
                (first, n_ctx),
                params,
                |i| ctx.logits(row + i),
            )
            .map_err(in_prompt)?;
            slot.draft = draft;
            slot.draft.clear();
            if first + kept < slot.len {
                if !ctx.forget_sequence_from(seq as u32, first + kept) {
                    return Err(in_prompt(super::lookup::not_dropped()));
                }
                slot.len = first + kept;
            }
            match finish {
                None => {}
                Some(finish) => {
                    if let Some(slot) = place.take() {
                        results[slot.index] =
                            Some(slot.progress.finish(finish, slot.prompt.len(), slot.reused));
                    }
                }
            }
        }
    }
    results
        .into_iter()
        .enumerate()
        .map(|(index, g)| {
            g.ok_or_else(|| InferenceError::DecodeFailed {
                detail: format!("prompt {index} was left unfinished"),
            })
        })
        .collect()
}

/// Evaluate, in its sequence, the image each slot reading its prompt has
/// come to (and the images right after it).
fn read_images(ctx: &mut Context, slots: &mut [Option<Slot<'_>>]) -> InferenceResult<()> {
    for (seq, slot) in slots.iter_mut().enumerate() {
        let Some(slot) = slot else { continue };
        while slot.pending.is_empty() {
            let Some(image) = slot.prompt.image_at(slot.len) else {
                break;
            };
            slot.prompt
                .decode_image(ctx, image, seq as u32, slot.len)
                .map_err(|e| e.in_prompt(slot.index))?;
            slot.len = image.end();
        }
    }
    Ok(())
}

/// The stop check came in the middle of an evaluation: every prompt ends
/// here with what it has (its sequence is cleared before the context is
/// used again), and those not begun with nothing.
fn time_out<'a>(
    slots: &mut [Option<Slot<'a>>],
    queue: &mut impl Iterator<Item = (usize, &'a Input)>,
    results: &mut [Option<Generation>],
    params: &GenerateParams,
) {
    for place in slots.iter_mut() {
        if let Some(slot) = place.take() {
            results[slot.index] = Some(slot.progress.finish(
                FinishReason::Timeout,
                slot.prompt.len(),
                slot.reused,
            ));
        }
    }
    for (index, prompt) in queue {
        results[index] =
            Some(Progress::empty(params).finish(FinishReason::Timeout, prompt.len(), 0));
    }
}

/// Start sequence `seq` (empty) from the cached prefix of `prompt` that
/// `owner` saved, when there is one worth restoring; returns the prompt
/// tokens it holds then (at most all but the last), where they came from,
/// and the lookup, for saving the prompt's state once it is read.
fn restore_prefix(
    ctx: &mut Context,
    seq: u32,
    owner: prefix_cache::Owner,
    prompt: &Input,
) -> (usize, CacheSource, prefix_cache::Lookup) {
    let room = ctx.n_ctx() as usize;
    let lookup = prefix_cache::lookup(owner, ctx.streams(), prompt.tokens(), room, 0);
    let Some(hit) = &lookup.hit else {
        return (0, CacheSource::None, lookup);
    };
    let keep = prompt.reusable(hit.common);
    if !ctx.restore_sequence(seq, &hit.state) {
        prefix_cache::discard(owner, ctx.streams(), &hit.tokens);
        return (0, CacheSource::None, lookup);
    }
    if keep < hit.tokens.len() && !ctx.forget_sequence_from(seq, keep) {
        ctx.forget_sequence(seq);
        return (0, CacheSource::None, lookup);
    }
    let source = hit.source;
    (keep, source, lookup)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prompts(lens: &[usize]) -> Vec<Input> {
        lens.iter()
            .map(|&n| Input::from(vec![LlamaToken(1); n]))
            .collect()
    }

    #[test]
    fn shape_holds_the_longest_prompt_and_its_tokens_within_n_ctx() {
        let params = GenerateParams {
            max_tokens: 48,
            n_ctx: 2048,
            ..GenerateParams::default()
        };
        let shape = shape_for(&prompts(&[10, 300, 64]), &params, 32);
        assert_eq!((shape.n_seq, shape.n_ctx), (3, 512));
        let long = GenerateParams {
            max_tokens: 4096,
            ..params
        };
        assert_eq!(shape_for(&prompts(&[10]), &long, 32).n_ctx, 2048);
    }

    #[test]
    fn a_batch_reads_prompts_while_any_sequence_is_reading_one() {
        assert_eq!(turn([1, 0, 4]), Turn::Read);
        assert_eq!(turn([0]), Turn::Read);
        assert_eq!(turn([]), Turn::Read);
    }

    #[test]
    fn generating_sequences_give_equal_counts_the_fewest_pending() {
        // One sequence with forced tokens beside others with their sampled
        // one: one token each, the forced ones over the next steps.
        assert_eq!(turn([1, 5, 1, 3]), Turn::Generate(1));
        // Every sequence in a forced run: as many as the shortest.
        assert_eq!(turn([4, 6, 3]), Turn::Generate(3));
        assert_eq!(turn([2]), Turn::Generate(2));
    }

    #[test]
    fn shape_caps_sequences_at_parallel_and_batch_holds_them_all() {
        let params = GenerateParams::default();
        let many = prompts(&vec![1; 10_000]);
        assert_eq!(shape_for(&many, &params, 32).n_seq, 32);
        let wide = shape_for(&many, &params, 10_000);
        assert_eq!(wide.n_seq, MAX_PARALLEL);
        assert!(wide.n_batch >= wide.n_seq);
        assert_eq!(shape_for(&many, &params, 0).n_seq, 1);
    }
}
