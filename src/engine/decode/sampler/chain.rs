//! A call's sampler chain, as llama-server builds it (llama.cpp's common
//! sampler), and the logit biases it starts with.

use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::logit_bias::LlamaLogitBias;
use llama_cpp_2::token::LlamaToken;

use super::{GrammarSampler, Sampler};
use crate::backend::error::{InferenceError, InferenceResult};
use crate::backend::params::GenerateParams;
use crate::backend::sampling::{BiasTarget, Mirostat, Sampling};

/// The logit biases of a call, resolved for one model: the caller's, by
/// token id or text, and the model's suppressed tokens at -inf (as
/// llama-server adds them).
#[derive(Debug, Clone, Default)]
pub struct Biases(Vec<LlamaLogitBias>);

impl Biases {
    /// The biases of `sampling` for `model`: a text gives each of its
    /// tokens the bias (tokenized as llama-server does, control markup
    /// read as text). An id outside the vocabulary, or a text of no
    /// tokens, is refused: llama.cpp would write outside its array.
    pub fn of(model: &LlamaModel, sampling: &Sampling) -> InferenceResult<Self> {
        let n_vocab = model.n_vocab();
        let mut biases = Vec::with_capacity(sampling.logit_bias.len());
        for entry in &sampling.logit_bias {
            match &entry.target {
                BiasTarget::Token(id) => {
                    if !(0..n_vocab).contains(id) {
                        return Err(InferenceError::InvalidOption {
                            key: "logit_bias",
                            detail: format!(
                                "names token {id}, which is not in this model's vocabulary (ids 0 to {})",
                                n_vocab - 1
                            ),
                        });
                    }
                    biases.push(LlamaLogitBias::new(LlamaToken(*id), entry.bias));
                }
                BiasTarget::Text(text) => {
                    let tokens = model.vocab().tokenize(text.as_bytes(), false, false);
                    if tokens.is_empty() {
                        return Err(InferenceError::InvalidOption {
                            key: "logit_bias",
                            detail: format!(
                                "names the text {text:?}, which is no token of this model"
                            ),
                        });
                    }
                    biases.extend(
                        tokens
                            .into_iter()
                            .map(|t| LlamaLogitBias::new(t, entry.bias)),
                    );
                }
            }
        }
        biases.extend(
            model
                .vocab()
                .suppress_tokens()
                .iter()
                .map(|&t| LlamaLogitBias::new(t, f32::NEG_INFINITY)),
        );
        Ok(Self(biases))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// What every sampler of a call starts from: the parsed grammar (a copy
/// for each sequence) and the biases resolved for the model.
#[derive(Debug)]
pub struct CallSampling {
    pub grammar: Option<GrammarSampler>,
    pub biases: Biases,
}

impl CallSampling {
    /// The sampler of one sequence, from `prompt`.
    pub fn sampler(
        &self,
        model: &LlamaModel,
        params: &GenerateParams,
        prompt: &[LlamaToken],
    ) -> Sampler {
        Sampler::new(model, params, self.grammar.clone(), &self.biases, prompt)
    }

    /// The sampler of the call's one sequence.
    pub fn into_sampler(
        self,
        model: &LlamaModel,
        params: &GenerateParams,
        prompt: &[LlamaToken],
    ) -> Sampler {
        Sampler::new(model, params, self.grammar, &self.biases, prompt)
    }
}

/// A call's samplers (see [`chain`]).
pub(super) struct Chain {
    pub(super) filters: Option<LlamaSampler>,
    pub(super) pick: LlamaSampler,
    /// Greedy with only samplers that move logits token by token: a
    /// refused pick is replaced from a shortlist (see [`Sampler::sample`]).
    pub(super) shortlist: bool,
    /// Greedy with nothing that moves a logit.
    pub(super) argmax: bool,
    /// The penalties or DRY read the tokens before (the prompt's too).
    pub(super) counts_history: bool,
}

/// llama-server's chain (llama.cpp's `common_sampler_init` with the default
/// order): `logit_bias` first, then penalties, DRY, top-n-sigma, top-k,
/// typical-p, top-p, min-p, XTC and the temperature (`temp_ext`), and the
/// seeded draw; under mirostat, the temperature and mirostat alone. Every
/// sampler of that list is in the chain, those at their neutral values too:
/// some sort the candidates, and the draw walks them in the order they are
/// left in.
///
/// At temperature 0 the pick is the most likely token left; where nothing
/// in the chain reads the candidates as a set (typical-p, XTC, mirostat),
/// only the samplers that move logits token by token (the bias, the
/// penalties, DRY) can change which one that is, and the chain is those and
/// the greedy pick: the same token, at a fraction of the work.
pub(super) fn chain(model: &LlamaModel, params: &GenerateParams, biases: &Biases) -> Chain {
    let s = &params.sampling;
    let n_vocab = model.n_vocab();
    let mut filters = Vec::with_capacity(10);
    if !biases.is_empty() {
        filters.push(LlamaSampler::logit_bias(n_vocab, &biases.0));
    }
    let last_n = |n: u32| i32::try_from(n).unwrap_or(i32::MAX);
    let min_keep = s.min_keep as usize;
    let penalties = || {
        LlamaSampler::penalties(
            n_vocab,
            last_n(s.repeat_last_n),
            s.repeat_penalty,
            s.frequency_penalty,
            s.presence_penalty,
        )
    };
    let dry = || {
        LlamaSampler::dry(
            model,
            s.dry.multiplier,
            s.dry.base,
            last_n(s.dry.allowed_length),
            last_n(s.dry.penalty_last_n),
            s.dry.sequence_breakers.iter().map(String::as_bytes),
        )
    };
    let counts_history = s.mirostat == Mirostat::Off && (s.penalizes() || s.dry.is_on());
    if params.is_greedy() && !s.greedy_reads_the_set() {
        if s.penalizes() {
            filters.push(penalties());
        }
        if s.dry.is_on() {
            filters.push(dry());
        }
        let argmax = filters.is_empty();
        return Chain {
            filters: (!argmax).then(|| LlamaSampler::chain_simple(filters)),
            pick: LlamaSampler::greedy(),
            shortlist: true,
            argmax,
            counts_history,
        };
    }
    let pick = match s.mirostat {
        Mirostat::Off => {
            filters.push(penalties());
            filters.push(dry());
            filters.push(LlamaSampler::top_n_sigma(s.top_n_sigma));
            filters.push(LlamaSampler::top_k(s.top_k));
            filters.push(LlamaSampler::typical(s.typical_p, min_keep));
            filters.push(LlamaSampler::top_p(s.top_p, min_keep));
            filters.push(LlamaSampler::min_p(s.min_p, min_keep));
            filters.push(LlamaSampler::xtc(
                s.xtc_probability,
                s.xtc_threshold,
                min_keep,
                params.seed,
            ));
            filters.push(LlamaSampler::temp_ext(
                params.temperature,
                s.dynatemp_range,
                s.dynatemp_exponent,
            ));
            LlamaSampler::dist(params.seed)
        }
        Mirostat::V1 { tau, eta } => {
            filters.push(LlamaSampler::temp(params.temperature));
            LlamaSampler::mirostat(n_vocab, params.seed, tau, eta, 100)
        }
        Mirostat::V2 { tau, eta } => {
            filters.push(LlamaSampler::temp(params.temperature));
            LlamaSampler::mirostat_v2(params.seed, tau, eta)
        }
    };
    Chain {
        filters: Some(LlamaSampler::chain_simple(filters)),
        pick,
        shortlist: false,
        argmax: false,
        counts_history,
    }
}
