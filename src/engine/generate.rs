//! The generation loop: evaluate the prompt, then sample one token at a time
//! until end-of-generation, `max_tokens`, the end of the context or a stop string.

use std::time::Instant;

use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;

use super::lookup::{core_of, LookupOdds, Proposer};
use super::output::Output;
use super::sampler::Sampler;
use super::session::Session;
use super::think::Thinking;
use super::threads::Claim;
use crate::chat::reasoning;
use crate::chat::tools::ToolPlan;
use crate::common::error::{InferenceError, InferenceResult};
use crate::common::params::GenerateParams;
use crate::common::{CacheSource, FinishReason, Generation, Timings};

/// How many tokens pass between two recounts of the processes generating at
/// the same time (a recount is a few dozen `flock` calls).
const RECOUNT_EVERY: u32 = 4;

/// Most bytes of forced text looked at once (a run of fixed keys and
/// punctuation is far shorter; the rest is forwarded at the next step).
const MAX_FORCED_BYTES: usize = 256;

/// One sequence's side of a generation, shared by the single-sequence loop
/// ([`Generator`]) and the multi-sequence one (`batch`): the limits checked
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
                .filter(|_| super::context::can_rewind(model))
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
        }
    }
}

/// One generation in a [`Session`], advanced a token at a time by
/// [`Generator::step`]: `run` drives it to the end at once, a stream one
/// step per piece asked for. Both therefore produce the same tokens.
pub struct Generator {
    sampler: Sampler,
    progress: Progress,
    /// The generated tokens not yet evaluated: the context holds the prompt
    /// and every generated token but these, since a token is evaluated only
    /// when another one is to follow it. One sampled token, and after it
    /// the tokens the constraint forced (evaluated in one batch).
    pending: Vec<LlamaToken>,
    /// Prompt lookup's proposals, a buffer reused from step to step.
    draft: Vec<LlamaToken>,
    prompt_tokens: usize,
    reused: usize,
}

impl Generator {
    /// Evaluate `prompt` in `session` (reusing the cached prefix it shares
    /// with the prompt when `params.cache_prompt` is set), ready for the
    /// first token. When the stop check comes during the evaluation, the
    /// generation is over already: `Err` holds its (empty) result.
    pub fn start(
        session: &mut Session,
        model: &LlamaModel,
        sampler: Sampler,
        prompt: &[LlamaToken],
        params: &GenerateParams,
        claim: Option<&Claim>,
    ) -> InferenceResult<Result<Self, Generation>> {
        if let Some(claim) = claim {
            session.set_threads(claim.threads());
        }
        session.set_stop(params.stop_check);
        let mut progress = Progress::new(model, prompt, params);
        let (reused, source) = match session.evaluate_prompt(prompt, params.cache_prompt) {
            Err(InferenceError::Aborted) => {
                return Ok(Err(progress.finish(FinishReason::Timeout, prompt.len(), 0)));
            }
            other => other?,
        };
        progress.prompt_read(source);
        progress.carry_odds(session.lookup_odds);
        let mut generator = Self {
            sampler,
            progress,
            pending: Vec::new(),
            draft: Vec::new(),
            prompt_tokens: prompt.len(),
            reused,
        };
        if params.fast_forward {
            // What the grammar forces right after the prompt.
            if let Some(finish) = generator.forward(session, model, params)? {
                return Ok(Err(generator.finish(finish)));
            }
        }
        Ok(Ok(generator))
    }

    /// Sample the next token (evaluating the ones before it first). Returns
    /// why the generation ends, if it ends here. With prompt lookup, the
    /// pending tokens are evaluated in one batch with a proposal of what
    /// follows them, and the step takes every proposed token the sampler
    /// picks in turn, then the first it does not (see [`Generator::verify`]).
    pub fn step(
        &mut self,
        session: &mut Session,
        model: &LlamaModel,
        params: &GenerateParams,
        claim: Option<&Claim>,
    ) -> InferenceResult<Option<FinishReason>> {
        let in_context = session.len() + self.pending.len();
        if let Some(finish) = self
            .progress
            .before_token(in_context, session.n_ctx(), params)
        {
            return Ok(Some(finish));
        }
        if self.pending.is_empty() {
            // Right after the prompt: its logits are ready.
            let token = self
                .progress
                .next_token(model, &mut self.sampler, session.logits()?)?;
            return self.take(session, model, params, token);
        }
        if let Some(claim) = claim.filter(|_| recount_due(self.progress.generated())) {
            session.set_threads(claim.threads());
        }
        let cached = session.len();
        let pending = self.pending.len();
        let room = self.progress.proposal_room(
            params,
            cached,
            session.n_ctx(),
            session.batch_capacity(),
            pending,
        );
        let mut draft = std::mem::take(&mut self.draft);
        let share = session.step_cost.extra_share();
        self.progress
            .propose(model, &self.sampler, (room, share), &mut draft);
        self.pending.extend_from_slice(&draft);
        let began = Instant::now();
        let evaluated = session.evaluate_rows(&self.pending, pending - 1, params.forced_one_by_one);
        if !params.forced_one_by_one {
            let ms = began.elapsed().as_secs_f64() * 1000.0;
            let tokens = self.pending.len();
            session
                .step_cost
                .record((tokens, tokens + 1 - pending, 1), ms);
        }
        self.progress.steps += 1;
        match evaluated {
            Err(InferenceError::Aborted) => {
                self.draft = draft;
                return Ok(Some(FinishReason::Timeout));
            }
            other => other?,
        }
        self.pending.clear();
        let verified = self.verify(
            session,
            model,
            params,
            (cached + pending, &draft),
            pending - 1,
        );
        self.draft = draft;
        if let Some(odds) = self.progress.odds() {
            session.lookup_odds = odds;
        }
        verified
    }

    /// After an evaluation that ended with `draft` (its tokens at positions
    /// `first..`), the picks (see [`verify`]); the proposed tokens not kept
    /// leave the context.
    fn verify(
        &mut self,
        session: &mut Session,
        model: &LlamaModel,
        params: &GenerateParams,
        (first, draft): (usize, &[LlamaToken]),
        last_pending_row: usize,
    ) -> InferenceResult<Option<FinishReason>> {
        let (kept, finish) = {
            let rows = |i: usize| session.row(last_pending_row + i);
            verify(
                (&mut self.progress, &mut self.sampler, model),
                &mut self.pending,
                draft,
                (first, session.n_ctx()),
                params,
                rows,
            )?
        };
        session.rewind(first + kept)?;
        Ok(finish)
    }

    /// Take `token`, sampled after the tokens the context holds: it is
    /// pending, with what the constraint forces after it.
    fn take(
        &mut self,
        session: &Session,
        model: &LlamaModel,
        params: &GenerateParams,
        token: LlamaToken,
    ) -> InferenceResult<Option<FinishReason>> {
        let (token, finish) = self.progress.push(model, token);
        if finish.is_some() {
            return Ok(finish);
        }
        self.pending.push(token);
        self.forward_if(session, model, params)
    }

    fn forward_if(
        &mut self,
        session: &Session,
        model: &LlamaModel,
        params: &GenerateParams,
    ) -> InferenceResult<Option<FinishReason>> {
        if params.fast_forward {
            return self.forward(session, model, params);
        }
        Ok(None)
    }

    /// Append what the constraint forces after the pending tokens, without
    /// sampling (see [`forward`]).
    fn forward(
        &mut self,
        session: &Session,
        model: &LlamaModel,
        params: &GenerateParams,
    ) -> InferenceResult<Option<FinishReason>> {
        forward(
            &mut self.progress,
            &mut self.sampler,
            model,
            &mut self.pending,
            (session.len(), session.n_ctx()),
            params,
        )
    }

    /// What has been generated so far (see [`Progress::text`]).
    pub fn text(&self) -> (&str, usize) {
        self.progress.text()
    }

    pub fn finish(self, finish: FinishReason) -> Generation {
        self.progress
            .finish(finish, self.prompt_tokens, self.reused)
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

/// Generate from `prompt` in `session`, whose cache is reused for the
/// prefix it shares with the prompt when `params.cache_prompt` is set. On an
/// error the session's cache may no longer match what it records, so the
/// caller must drop it.
pub fn run(
    session: &mut Session,
    model: &LlamaModel,
    sampler: Sampler,
    prompt: &[LlamaToken],
    params: &GenerateParams,
    claim: Option<&Claim>,
) -> InferenceResult<Generation> {
    let mut generator = match Generator::start(session, model, sampler, prompt, params, claim)? {
        Ok(generator) => generator,
        Err(stopped) => return Ok(stopped),
    };
    loop {
        if let Some(finish) = generator.step(session, model, params, claim)? {
            return Ok(generator.finish(finish));
        }
    }
}

/// Whether the processes generating at the same time are due for a recount
/// after `step` tokens.
pub fn recount_due(step: u32) -> bool {
    step.is_multiple_of(RECOUNT_EVERY)
}

/// The checks made before any evaluation: the context fits the model and the
/// prompt fits the context.
pub fn check_fits(model: &LlamaModel, prompt: &[LlamaToken], n_ctx: u32) -> InferenceResult<()> {
    let max = model.n_ctx_train();
    if max > 0 && n_ctx > max {
        return Err(InferenceError::ContextTooLarge { n_ctx, max });
    }
    if prompt.is_empty() {
        return Err(InferenceError::EmptyPrompt);
    }
    if prompt.len() > n_ctx as usize {
        return Err(InferenceError::PromptTooLong {
            tokens: prompt.len(),
            n_ctx,
        });
    }
    Ok(())
}
