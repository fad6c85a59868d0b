//! The generation loop: evaluate the prompt, then sample one token at a time
//! until end-of-generation, `max_tokens`, the end of the context or a stop string.

use std::time::Instant;

use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;

use super::input::Input;
use super::progress::{forward, verify, Progress};
use super::sampler::Sampler;
use super::session::Session;
use crate::backend::error::{InferenceError, InferenceResult};
use crate::backend::params::GenerateParams;
use crate::backend::{FinishReason, Generation};
use crate::engine::llama::threads::Claim;

/// How many tokens pass between two recounts of the processes generating at
/// the same time (a recount is a few dozen `flock` calls).
const RECOUNT_EVERY: u32 = 4;

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
        prompt: &Input,
        params: &GenerateParams,
        claim: Option<&Claim>,
    ) -> InferenceResult<Result<Self, Generation>> {
        if let Some(claim) = claim {
            session.set_threads(claim.threads());
        }
        session.set_stop(params.stop_check);
        let mut progress = Progress::new(model, &prompt.text_tokens(), params);
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
            // Right after the prompt: its logits are ready, and nothing is
            // proposed (one plain step).
            let (_, finish) = verify(
                (&mut self.progress, &mut self.sampler, model),
                &mut self.pending,
                &[],
                (session.len(), session.n_ctx()),
                params,
                |_| session.logits(),
            )?;
            return Ok(finish);
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

    /// The log-probabilities of the tokens so far, when asked for.
    pub fn logprobs(&self) -> Option<&[crate::backend::generation::TokenLogprob]> {
        self.progress.logprobs()
    }

    pub fn finish(self, finish: FinishReason) -> Generation {
        self.progress
            .finish(finish, self.prompt_tokens, self.reused)
    }
}

/// Generate from `prompt` in `session`, whose cache is reused for the
/// prefix it shares with the prompt when `params.cache_prompt` is set. On an
/// error the session's cache may no longer match what it records, so the
/// caller must drop it.
pub fn run(
    session: &mut Session,
    model: &LlamaModel,
    sampler: Sampler,
    prompt: &Input,
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
pub fn check_fits(model: &LlamaModel, prompt: &Input, n_ctx: u32) -> InferenceResult<()> {
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
