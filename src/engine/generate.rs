//! The generation loop: evaluate the prompt, then sample one token at a time
//! until end-of-generation, `max_tokens`, the end of the context or a stop string.

use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;

use super::error::{InferenceError, InferenceResult};
use super::output::Output;
use super::params::GenerateParams;
use super::sampler::Sampler;
use super::session::Session;
use super::threads::Claim;

/// How many tokens pass between two recounts of the processes generating at
/// the same time (a recount is a few dozen `flock` calls).
const RECOUNT_EVERY: u32 = 4;

/// Why generation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinishReason {
    /// The model emitted an end-of-generation token.
    Eos,
    /// `max_tokens` or the end of the context was reached.
    Length,
    /// A stop string occurred.
    Stop,
    /// The caller's interrupt (`GenerateParams::interrupt`) asked to stop.
    Timeout,
}

impl FinishReason {
    pub fn as_str(self) -> &'static str {
        match self {
            FinishReason::Eos => "eos",
            FinishReason::Length => "length",
            FinishReason::Stop => "stop",
            FinishReason::Timeout => "timeout",
        }
    }
}

/// What one call produced.
#[derive(Debug, Clone, PartialEq)]
pub struct Generation {
    pub text: String,
    pub finish: FinishReason,
    /// Tokens sampled, the end-of-generation token excluded.
    pub tokens_generated: u32,
    pub prompt_tokens: u32,
    /// Prompt tokens whose cached keys and values were reused, not evaluated.
    pub reused_tokens: u32,
}

/// Generate from `prompt` in `session`, whose cache is reused for the
/// prefix it shares with the prompt when `params.cache_prompt` is set. On an
/// error the session's cache may no longer match what it records, so the
/// caller must drop it.
pub fn run(
    session: &mut Session,
    model: &LlamaModel,
    mut sampler: Sampler,
    prompt: &[LlamaToken],
    params: &GenerateParams,
    claim: Option<&Claim>,
) -> InferenceResult<Generation> {
    let n_ctx = session.n_ctx();
    if let Some(claim) = claim {
        session.set_threads(claim.threads());
    }
    let reused = session.evaluate_prompt(prompt, params.cache_prompt)?;

    let vocab = model.vocab();
    let mut output = Output::new(&params.stop);
    let mut generated: u32 = 0;
    let mut piece = Vec::with_capacity(32);
    // The context holds the prompt and every generated token but the last:
    // a sampled token is evaluated only when another one is to follow it.
    let mut pending: Option<LlamaToken> = None;
    let finish = loop {
        let in_context = session.len() + usize::from(pending.is_some());
        if generated >= params.max_tokens || in_context >= n_ctx as usize {
            break FinishReason::Length;
        }
        if params.interrupt.is_some_and(|stop| stop()) {
            break FinishReason::Timeout;
        }
        if let Some(token) = pending.take() {
            if let Some(claim) = claim.filter(|_| generated.is_multiple_of(RECOUNT_EVERY)) {
                session.set_threads(claim.threads());
            }
            session.evaluate_token(token)?;
        }
        let token = sampler.sample(session.logits()?)?;
        if vocab.is_eog(token) {
            break FinishReason::Eos;
        }
        generated += 1;
        piece.clear();
        vocab.token_to_piece_into(token, &mut piece, false, None);
        if output.push(&piece) {
            break FinishReason::Stop;
        }
        pending = Some(token);
    };

    Ok(Generation {
        text: output.into_text(),
        finish,
        tokens_generated: generated,
        prompt_tokens: prompt.len() as u32,
        reused_tokens: reused as u32,
    })
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
