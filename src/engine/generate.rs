//! The generation loop: evaluate the prompt, then sample one token at a time
//! until end-of-generation, `maxTokens`, the end of the context or a stop string.

use std::num::NonZeroU32;

use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use llama_cpp_2::token::LlamaToken;

use super::backend::{capture_stderr, clear_diagnostics, first_line, take_diagnostics};
use super::error::{InferenceError, InferenceResult};
use super::output::Output;
use super::params::{Constraint, GenerateParams, REPEAT_LAST_N};

/// Largest number of prompt tokens evaluated in one llama.cpp batch.
const MAX_BATCH: u32 = 512;

/// Why generation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinishReason {
    /// The model emitted an end-of-generation token.
    Eos,
    /// `maxTokens` or the end of the context was reached.
    Length,
    /// A stop string occurred.
    Stop,
}

impl FinishReason {
    pub fn as_str(self) -> &'static str {
        match self {
            FinishReason::Eos => "eos",
            FinishReason::Length => "length",
            FinishReason::Stop => "stop",
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
}

/// Generate from `prompt` with a fresh context of `params.n_ctx` tokens.
pub fn run(
    backend: &LlamaBackend,
    model: &LlamaModel,
    n_threads: u32,
    prompt: &[LlamaToken],
    params: &GenerateParams,
) -> InferenceResult<Generation> {
    let n_ctx = params.n_ctx;
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
    let mut sampler = Sampler::new(model, params)?;
    let mut ctx = new_context(backend, model, n_threads, n_ctx)?;
    let n_batch = n_ctx.min(MAX_BATCH) as usize;
    let mut batch = LlamaBatch::new(n_batch, 1);

    let mut pos: i32 = 0;
    let last = prompt.len() - 1;
    for (chunk_index, chunk) in prompt.chunks(n_batch).enumerate() {
        batch.clear();
        for (i, token) in chunk.iter().enumerate() {
            let is_last = chunk_index * n_batch + i == last;
            add(&mut batch, *token, pos, is_last)?;
            pos += 1;
        }
        decode(&mut ctx, &mut batch)?;
    }

    let vocab = model.vocab();
    let mut output = Output::new(&params.stop);
    let mut generated: u32 = 0;
    let mut piece = Vec::with_capacity(32);
    // `pos` counts the tokens in the context: the prompt and every generated
    // token. A sampled token is evaluated (at `pos - 1`) only when another one
    // is to follow it.
    let mut pending: Option<LlamaToken> = None;
    let finish = loop {
        if generated >= params.max_tokens || pos as u32 >= n_ctx {
            break FinishReason::Length;
        }
        if let Some(token) = pending.take() {
            batch.clear();
            add(&mut batch, token, pos - 1, true)?;
            decode(&mut ctx, &mut batch)?;
        }
        let token = sampler.sample(&ctx, batch.n_tokens() - 1)?;
        if vocab.is_eog(token) {
            break FinishReason::Eos;
        }
        generated += 1;
        pos += 1;
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
    })
}

fn new_context<'m>(
    backend: &LlamaBackend,
    model: &'m LlamaModel,
    n_threads: u32,
    n_ctx: u32,
) -> InferenceResult<LlamaContext<'m>> {
    let n_batch = n_ctx.min(MAX_BATCH);
    let threads = i32::try_from(n_threads).unwrap_or(i32::MAX);
    let params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(n_ctx))
        .with_n_batch(n_batch)
        .with_n_ubatch(n_batch)
        .with_n_threads(threads)
        .with_n_threads_batch(threads);
    clear_diagnostics();
    model
        .new_context(backend, params)
        .map_err(|e| InferenceError::ContextFailed {
            n_ctx,
            detail: take_diagnostics().unwrap_or_else(|| e.to_string()),
        })
}

/// The grammar (if any) and the sampler chain. The grammar masks the
/// candidates first, so every token sampled keeps the output inside it.
struct Sampler {
    grammar: Option<LlamaSampler>,
    chain: LlamaSampler,
    candidates: Vec<LlamaTokenData>,
}

impl Sampler {
    fn new(model: &LlamaModel, params: &GenerateParams) -> InferenceResult<Self> {
        let grammar = match &params.constraint {
            None => None,
            Some(Constraint::Grammar(gbnf)) => {
                clear_diagnostics();
                let (g, printed) = capture_stderr(|| LlamaSampler::grammar(model, gbnf, "root"));
                let g = g.map_err(|e| InferenceError::GrammarRejected {
                    detail: first_line(&printed)
                        .or_else(take_diagnostics)
                        .unwrap_or_else(|| e.to_string()),
                })?;
                Some(g)
            }
        };
        Ok(Self {
            grammar,
            chain: sampler_chain(model, params),
            candidates: Vec::new(),
        })
    }

    /// Pick the next token from the logits of batch position `idx`, and let
    /// every sampler see it.
    fn sample(&mut self, ctx: &LlamaContext<'_>, idx: i32) -> InferenceResult<LlamaToken> {
        let mut data = std::mem::take(&mut self.candidates);
        data.clear();
        data.extend(
            ctx.get_logits_ith(idx)
                .iter()
                .enumerate()
                .map(|(i, &logit)| LlamaTokenData::new(LlamaToken(i as i32), logit, 0.0)),
        );
        let mut array = LlamaTokenDataArray::new(data, false);
        if let Some(grammar) = &mut self.grammar {
            grammar.apply(&mut array);
            if !array.data.iter().any(|t| t.logit().is_finite()) {
                return Err(InferenceError::GrammarDeadEnd);
            }
        }
        self.chain.apply(&mut array);
        let token = array
            .selected_token()
            .ok_or(InferenceError::GrammarDeadEnd)?;
        self.candidates = array.data;
        if let Some(grammar) = &mut self.grammar {
            grammar
                .try_accept(token)
                .map_err(|_| InferenceError::GrammarDeadEnd)?;
        }
        self.chain.accept(token);
        Ok(token)
    }
}

/// The sampler chain, in llama.cpp's usual order: penalties, then the
/// filters, then temperature and the seeded draw (or greedy at temperature 0).
fn sampler_chain(model: &LlamaModel, params: &GenerateParams) -> LlamaSampler {
    let mut chain = Vec::with_capacity(6);
    if params.repeat_penalty != 1.0 {
        chain.push(LlamaSampler::penalties(
            model.n_vocab(),
            REPEAT_LAST_N,
            params.repeat_penalty,
            0.0,
            0.0,
        ));
    }
    if params.is_greedy() {
        chain.push(LlamaSampler::greedy());
    } else {
        if params.top_k > 0 {
            chain.push(LlamaSampler::top_k(params.top_k));
        }
        chain.push(LlamaSampler::top_p(params.top_p, 1));
        chain.push(LlamaSampler::min_p(params.min_p, 1));
        chain.push(LlamaSampler::temp(params.temperature));
        chain.push(LlamaSampler::dist(params.seed));
    }
    LlamaSampler::chain_simple(chain)
}

fn add(batch: &mut LlamaBatch, token: LlamaToken, pos: i32, logits: bool) -> InferenceResult<()> {
    batch
        .add(token, pos, &[0], logits)
        .map_err(|e| InferenceError::DecodeFailed {
            detail: e.to_string(),
        })
}

fn decode(ctx: &mut LlamaContext<'_>, batch: &mut LlamaBatch) -> InferenceResult<()> {
    clear_diagnostics();
    ctx.decode(batch).map_err(|e| InferenceError::DecodeFailed {
        detail: take_diagnostics().unwrap_or_else(|| e.to_string()),
    })
}
