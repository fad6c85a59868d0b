//! One sequence's side of a generation, shared by the single-sequence loop
//! (`generate`) and the multi-sequence one (`batch`): the limits checked
//! before each token, what becomes of each token taken, what the
//! constraint forces after it (fast-forward), what prompt lookup proposes,
//! and which of the proposed tokens the sampler keeps.

use std::time::Instant;

use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;

use super::logprobs::Recorder;
use super::lookup::{core_of, LookupOdds, Proposer};
use super::output::Output;
use super::sampler::Sampler;
use super::think::Thinking;
use crate::backend::error::InferenceResult;
use crate::backend::generation::TokenLogprob;
use crate::backend::params::GenerateParams;
use crate::backend::{CacheSource, FinishReason, Generation, Timings};
use crate::chat::reasoning;
use crate::chat::tools::ToolPlan;

/// Most bytes of forced text looked at once (a run of fixed keys and
/// punctuation is far shorter; the rest is forwarded at the next step).
const MAX_FORCED_BYTES: usize = 256;

/// One sequence's side of a generation, shared by the single-sequence loop
/// (`Generator`, in `generate`) and the multi-sequence one (`batch`): the limits checked
/// before each token, and what becomes of each sampled token.
#[derive(Debug)]
pub struct Progress {
    output: Output,
    /// How the reply's tool calls are read, and the token never sampled.
    tools: Option<(ToolPlan, Option<LlamaToken>)>,
    generated: u32,
    /// Of `generated`, the tokens appended without sampling.
    forced: u32,
    /// Every token taken, marked `true` when it was forced (for tests and
    /// benchmarks that compare generations token by token).
    trace: Vec<(i32, bool)>,
    /// Whether the token being pushed was forced.
    pushing_forced: bool,
    /// Whether the constraint ended the generation (see [`forward`]).
    forced_end: bool,
    piece: Vec<u8>,
    thinking: Thinking,
    /// Whether the last token was taken without the grammar.
    free: bool,
    /// When the generation began, and when its prompt was read (with where
    /// its reused tokens came from).
    began: Instant,
    prompt_read: Option<(Instant, CacheSource)>,
    /// Prompt lookup's proposals (`None`: off), and what became of them.
    lookup: Option<Proposer>,
    proposed: u32,
    accepted: u32,
    /// Evaluations of generated tokens.
    pub steps: u32,
    /// Each token's probabilities, when asked for.
    logprobs: Option<Recorder>,
}

impl Progress {
    /// The progress of a generation from `prompt`.
    pub fn new(model: &LlamaModel, prompt: &[LlamaToken], params: &GenerateParams) -> Self {
        let tools = params.tool_plan.clone().map(|plan| {
            let banned = plan.ban.and_then(|text| {
                match model.vocab().tokenize(text.as_bytes(), false, true)[..] {
                    [token] => Some(token),
                    _ => None,
                }
            });
            (plan, banned)
        });
        Self {
            output: Output::new(params.stop.clone()),
            tools,
            generated: 0,
            forced: 0,
            trace: Vec::new(),
            pushing_forced: false,
            forced_end: false,
            piece: Vec::with_capacity(32),
            thinking: Thinking::new(model, prompt, params),
            free: true,
            began: Instant::now(),
            prompt_read: None,
            lookup: params
                .lookup
                .filter(|_| crate::engine::llama::context::can_rewind(model))
                .map(|settings| {
                    let vocab = model.vocab();
                    let mut piece = Vec::with_capacity(16);
                    let cores = prompt
                        .iter()
                        .map(|&token| {
                            piece.clear();
                            vocab.token_to_piece_into(token, &mut piece, false, None);
                            core_of(token, &piece)
                        })
                        .collect();
                    Proposer::new(settings, prompt, cores)
                }),
            proposed: 0,
            accepted: 0,
            steps: 0,
            logprobs: params.logprobs.map(Recorder::new),
        }
    }

    /// The result of a generation that ended before it began.
    pub fn empty(params: &GenerateParams) -> Self {
        Self {
            output: Output::new(params.stop.clone()),
            tools: None,
            generated: 0,
            forced: 0,
            trace: Vec::new(),
            pushing_forced: false,
            forced_end: false,
            piece: Vec::new(),
            thinking: Thinking::none(),
            free: true,
            began: Instant::now(),
            prompt_read: None,
            lookup: None,
            proposed: 0,
            accepted: 0,
            steps: 0,
            logprobs: params.logprobs.map(Recorder::new),
        }
    }

    /// The next token: one the engine writes itself (closing a thought), or
    /// `sampler`'s pick from `logits`, the grammar applying to the answer.
    pub fn next_token(
        &mut self,
        model: &LlamaModel,
        sampler: &mut Sampler,
        logits: &[f32],
    ) -> InferenceResult<LlamaToken> {
        if let Some(token) = self.thinking.forced() {
            sampler.accept_free(token);
            self.free = true;
            return Ok(token);
        }
        if let Some(word) = self.thinking.take_feed() {
            sampler.feed(model, word)?;
        }
        let vocab = model.vocab();
        let thinking = &self.thinking;
        let opens = |token: LlamaToken| {
            let mut piece = Vec::with_capacity(16);
            vocab.token_to_piece_into(token, &mut piece, true, None);
            thinking.opens(&piece)
        };
        let banned = self.tools.as_ref().and_then(|(_, banned)| *banned);
        let token = match banned {
            Some(banned) => {
                let mut masked = logits.to_vec();
                if let Some(logit) = masked.get_mut(banned.0 as usize) {
                    *logit = f32::NEG_INFINITY;
                }
                sampler.sample(&masked, self.thinking.phase(&opens))?
            }
            None => sampler.sample(logits, self.thinking.phase(&opens))?,
        };
        self.free = sampler.took_free();
        if let Some(recorder) = &mut self.logprobs {
            recorder.sampled(model, logits, token, sampler.last_candidates());
        }
        Ok(token)
    }

    /// Why the generation must end before the next token is sampled, given
    /// how many tokens its context holds (the prompt and every generated
    /// token, the last one included even if not yet evaluated), if it must.
    pub fn before_token(
        &self,
        in_context: usize,
        n_ctx: u32,
        params: &GenerateParams,
    ) -> Option<FinishReason> {
        if self.generated >= params.max_tokens || in_context >= n_ctx as usize {
            return Some(FinishReason::Length);
        }
        if params.stop_check.due() {
            return Some(FinishReason::Timeout);
        }
        None
    }

    /// Take the next `token`: the token that goes into the context (the
    /// engine may write others in its place, see [`Thinking::admit`]), and
    /// why the generation ends with it, if it does.
    pub fn push(
        &mut self,
        model: &LlamaModel,
        mut token: LlamaToken,
    ) -> (LlamaToken, Option<FinishReason>) {
        let vocab = model.vocab();
        loop {
            if vocab.is_eog(token) {
                match self.thinking.close_instead_of_ending(model) {
                    true => match self.thinking.forced() {
                        Some(instead) => {
                            token = instead;
                            continue;
                        }
                        None => return (token, Some(FinishReason::Eos)),
                    },
                    false => return (token, Some(FinishReason::Eos)),
                }
            }
            self.piece.clear();
            vocab.token_to_piece_into(token, &mut self.piece, false, None);
            if self.thinking.admit(model, self.output.text(), &self.piece) {
                break;
            }
            match self.thinking.forced() {
                Some(instead) => token = instead,
                None => break,
            }
        }
        self.generated += 1;
        self.trace.push((token.0, self.pushing_forced));
        if let Some(lookup) = &mut self.lookup {
            lookup.push(token, core_of(token, &self.piece));
        }
        let stop = self.output.push(&self.piece);
        if let Some(recorder) = &mut self.logprobs {
            recorder.taken(model, token, self.output.text().len());
        }
        self.thinking.advance(model, self.free, self.output.text());
        (token, stop.then_some(FinishReason::Stop))
    }

    /// Tokens generated so far (sampled or forced), the end-of-generation
    /// token excluded.
    pub fn generated(&self) -> u32 {
        self.generated
    }

    /// The tokens the constraint forces next, to append without sampling:
    /// the forced text tokenized as the model's tokenizer splits it, less
    /// its last token when that one could still merge with what follows (a
    /// longer token begins with it): the model then chooses, among the
    /// tokens the grammar allows, one that starts with those bytes or a
    /// part of them. Empty unless the grammar alone decides what comes next.
    pub fn forced_tokens(&self, model: &LlamaModel, sampler: &Sampler) -> Vec<LlamaToken> {
        if !self.thinking.grammar_decides() {
            return Vec::new();
        }
        let Some(forced) = sampler.forced_bytes(MAX_FORCED_BYTES) else {
            return Vec::new();
        };
        if forced.is_empty() {
            return Vec::new();
        }
        let vocab = model.vocab();
        let mut tokens = vocab.tokenize(&forced, false, false);
        if tokens.last().is_some_and(|&t| sampler.may_merge(t)) {
            tokens.pop();
        }
        // The tokens must spell a prefix of the forced text exactly (a
        // tokenizer that normalises text would not); else nothing is forced.
        // They stop where the model writes the text itself: a user-defined
        // token's text, which it may spell as that token or as text.
        let mut spelled = Vec::with_capacity(forced.len());
        for (i, &token) in tokens.iter().enumerate() {
            if sampler.model_spells(forced.get(spelled.len()..).unwrap_or_default()) {
                tokens.truncate(i);
                break;
            }
            vocab.token_to_piece_into(token, &mut spelled, false, None);
        }
        if !forced.starts_with(&spelled) || spelled.is_empty() {
            return Vec::new();
        }
        tokens
    }

    /// Into `out` (cleared first), prompt lookup's proposal of at most
    /// `room` tokens to follow the tokens so far (see `lookup`): cut before
    /// an end-of-generation token, and where the grammar, when it alone
    /// decides, refuses one. Empty when lookup is off.
    pub fn propose(
        &mut self,
        model: &LlamaModel,
        sampler: &Sampler,
        (room, extra_share): (usize, f64),
        out: &mut Vec<LlamaToken>,
    ) {
        out.clear();
        let Some(lookup) = &mut self.lookup else {
            return;
        };
        lookup.propose(room, extra_share, out);
        let vocab = model.vocab();
        if let Some(end) = out.iter().position(|&t| vocab.is_eog(t)) {
            out.truncate(end);
        }
        if self.thinking.grammar_decides() {
            out.truncate(sampler.allowed_run(out));
        }
        self.proposed += out.len() as u32;
    }

    /// How many tokens a proposal may hold after `pending` tokens that are
    /// `generated` already: no more than can still be generated, nor than
    /// fit the context after `cached` tokens, nor a batch of `batch`.
    pub fn proposal_room(
        &self,
        params: &GenerateParams,
        cached: usize,
        n_ctx: u32,
        batch: usize,
        pending: usize,
    ) -> usize {
        if self.lookup.is_none() {
            return 0;
        }
        let tokens = params.max_tokens.saturating_sub(self.generated) as usize;
        let context = (n_ctx as usize).saturating_sub(cached + pending);
        tokens.min(context).min(batch.saturating_sub(pending))
    }

    /// Start from the `odds` an earlier generation in the context left.
    pub fn carry_odds(&mut self, odds: LookupOdds) {
        if let Some(lookup) = &mut self.lookup {
            lookup.set_odds(odds);
        }
    }

    /// How the proposals fared (`None`: lookup is off).
    pub fn odds(&self) -> Option<LookupOdds> {
        self.lookup.as_ref().map(Proposer::odds)
    }

    /// `n` proposed tokens were kept.
    pub fn kept(&mut self, n: usize) {
        self.accepted += n as u32;
    }

    /// Whether the constraint admits nothing but the end here, when it
    /// alone decides what comes next: the model could only sample an
    /// end-of-generation token, so none is sampled (see [`forward`]).
    fn constraint_ends(&self, sampler: &Sampler) -> bool {
        self.thinking.grammar_decides() && sampler.must_end()
    }

    /// Take `token`, which the constraint forced (see [`Self::forced_tokens`]):
    /// it counts as generated, as a sampled one does, and goes through the
    /// same stop strings.
    pub fn push_forced(
        &mut self,
        model: &LlamaModel,
        token: LlamaToken,
    ) -> (LlamaToken, Option<FinishReason>) {
        self.free = false;
        self.forced += 1;
        self.pushing_forced = true;
        let pushed = self.push(model, token);
        self.pushing_forced = false;
        pushed
    }

    /// The log-probabilities of the tokens so far, when asked for.
    pub fn logprobs(&self) -> Option<&[TokenLogprob]> {
        self.logprobs.as_ref().map(Recorder::entries)
    }

    /// The text so far, and how many bytes at its end could still turn out
    /// to begin a stop string.
    pub fn text(&self) -> (&str, usize) {
        (self.output.text(), self.output.undecided_tail())
    }

    /// The prompt has been read (its reused tokens from `source`): what
    /// follows is generation time.
    pub fn prompt_read(&mut self, source: CacheSource) {
        self.prompt_read = Some((Instant::now(), source));
    }

    /// How long reading the prompt and generating took, until now.
    fn timings(&self) -> Timings {
        let now = Instant::now();
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
        match self.prompt_read {
            Some((read, cache)) => Timings {
                prompt_ms: ms(read.duration_since(self.began)),
                generation_ms: ms(now.duration_since(read)),
                cache,
                forced_tokens: self.forced,
                forced_end: self.forced_end,
                lookup_proposed: self.proposed,
                lookup_accepted: self.accepted,
                steps: self.steps,
            },
            None => Timings {
                prompt_ms: ms(now.duration_since(self.began)),
                generation_ms: 0.0,
                cache: CacheSource::None,
                ..Timings::default()
            },
        }
    }

    pub fn finish(self, finish: FinishReason, prompt_tokens: usize, reused: usize) -> Generation {
        let timings = self.timings();
        let text = self.output.into_text();
        let logprobs = self.logprobs.map(|r| r.finish(text.len()));
        let (finish, tool_calls, without_calls) = match &self.tools {
            Some((plan, _)) if plan.read_calls => {
                // Calls are read in the answer, after the last thought.
                let answer_at = text
                    .rfind(reasoning::CLOSE)
                    .map_or(0, |at| at + reasoning::CLOSE.len());
                let (rest, calls) = plan.format.parse(&text[answer_at..]);
                let without = || format!("{}{rest}", &text[..answer_at]);
                if calls.is_empty() {
                    (finish, calls, None)
                } else if finish == FinishReason::Eos {
                    (FinishReason::ToolCalls, calls, Some(without()))
                } else {
                    (finish, calls, Some(without()))
                }
            }
            _ => (finish, Vec::new(), None),
        };
        Generation {
            text,
            finish,
            tokens_generated: self.generated,
            prompt_tokens: prompt_tokens as u32,
            reused_tokens: reused as u32,
            tool_calls,
            without_calls,
            timings,
            trace: self.trace,
            logprobs,
        }
    }
}

/// After an evaluation whose last pending token's logits are `rows(0)`
/// and whose last tokens were `draft`, a proposal at positions `first..`
/// of a context of `n_ctx`: sample from the row before each proposed
/// token; while the sampler picks that token (or the constraint forces
/// it), it is kept and the next is checked. The first pick that differs
/// (or the pick after the whole proposal) goes to `pending`, with what the
/// constraint forces after it. Every pick goes through what a sampled
/// token goes through: the limits before it, the stop strings,
/// fast-forward after it. Returns how many proposed tokens were kept (the
/// caller drops the others from the context) and why the generation ends,
/// if it ends here. With an empty `draft`, this is one plain step.
pub fn verify<'a>(
    (progress, sampler, model): (&mut Progress, &mut Sampler, &LlamaModel),
    pending: &mut Vec<LlamaToken>,
    draft: &[LlamaToken],
    (first, n_ctx): (usize, u32),
    params: &GenerateParams,
    rows: impl Fn(usize) -> InferenceResult<&'a [f32]>,
) -> InferenceResult<(usize, Option<FinishReason>)> {
    let mut kept = 0;
    loop {
        let at = first + kept;
        if kept > 0 {
            if let Some(finish) = progress.before_token(at, n_ctx, params) {
                return Ok((kept, Some(finish)));
            }
        }
        let token = progress.next_token(model, sampler, rows(kept)?)?;
        let (token, finish) = progress.push(model, token);
        if finish.is_some() {
            return Ok((kept, finish));
        }
        if draft.get(kept) != Some(&token) {
            pending.push(token);
            let finish = match params.fast_forward {
                true => forward(progress, sampler, model, pending, (at, n_ctx), params)?,
                false => None,
            };
            return Ok((kept, finish));
        }
        kept += 1;
        progress.kept(1);
        if !params.fast_forward {
            continue;
        }
        // What the constraint forces next, kept where the proposal has it.
        let mut forced = Vec::new();
        let finish = forward(
            progress,
            sampler,
            model,
            &mut forced,
            (first + kept, n_ctx),
            params,
        )?;
        let same = forced
            .iter()
            .zip(&draft[kept..])
            .take_while(|(a, b)| a == b)
            .count();
        kept += same;
        progress.kept(same);
        if finish.is_some() || same < forced.len() {
            pending.extend_from_slice(&forced[same..]);
            return Ok((kept, finish));
        }
    }
}

/// Append to `pending` what the constraint forces after it (see
/// [`Progress::forced_tokens`]), for a sequence whose context holds
/// `cached` tokens of `n_ctx`: the single-sequence loop and each sequence
/// of a batch forward the same way. Each forced token counts toward
/// `max_tokens` and the context as a sampled one does, and goes through the
/// stop strings; the run stops short at either limit, or at the stop check,
/// and the next step reports why. When the constraint then admits nothing
/// but the end, the generation ends here (`Eos`, as the model's only choice
/// would have ended it) without evaluating the pending tokens and sampling
/// that end: one decode step less for every constrained answer. Returns why
/// the generation ends, when it ends here (a stop string, or that end).
pub fn forward(
    progress: &mut Progress,
    sampler: &mut Sampler,
    model: &LlamaModel,
    pending: &mut Vec<LlamaToken>,
    (cached, n_ctx): (usize, u32),
    params: &GenerateParams,
) -> InferenceResult<Option<FinishReason>> {
    for token in progress.forced_tokens(model, sampler) {
        if progress
            .before_token(cached + pending.len(), n_ctx, params)
            .is_some()
        {
            break;
        }
        if !sampler.accept_forced(token)? {
            break;
        }
        let (token, finish) = progress.push_forced(model, token);
        if finish.is_some() {
            return Ok(finish);
        }
        pending.push(token);
    }
    // Only where the next step would sample: not past a limit, nor due.
    if progress
        .before_token(cached + pending.len(), n_ctx, params)
        .is_none()
        && progress.constraint_ends(sampler)
    {
        progress.forced_end = true;
        return Ok(Some(FinishReason::Eos));
    }
    Ok(None)
}
