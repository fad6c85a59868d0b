//! A call's sampler chain, as llama-server builds it (llama.cpp's common
//! sampler), and the logit biases it starts with.

use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use llama_cpp_2::token::logit_bias::LlamaLogitBias;
use llama_cpp_2::token::LlamaToken;

use super::{GrammarSampler, Sampler};
use crate::backend::error::{InferenceError, InferenceResult};
use crate::backend::params::GenerateParams;
use crate::backend::sampling::{BiasTarget, Mirostat, Sampling, Stage};

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
        if sampling.ignore_eos {
            biases.extend(
                (0..n_vocab)
                    .map(LlamaToken)
                    .filter(|&t| model.vocab().is_eog(t))
                    .map(|t| LlamaLogitBias::new(t, f32::NEG_INFINITY)),
            );
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
    pub(super) pick: Pick,
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
/// in the chain reads the candidates as a set (typical-p, XTC, mirostat,
/// adaptive-p),
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
    // A window reads the tokens of the context, so one longer than the
    // context is the context: llama.cpp sizes its ring buffer by the
    // window asked (`repeat_last_n => 2147483647` was 8.5 GB, outside PHP's
    // memory_limit, and an abort when the allocation failed).
    let window = |n: u32| last_n(n.min(params.n_ctx));
    let min_keep = s.min_keep as usize;
    let penalties = || {
        LlamaSampler::penalties(
            n_vocab,
            window(s.repeat_last_n),
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
            window(s.dry.penalty_last_n),
            s.dry.sequence_breakers.iter().map(String::as_bytes),
        )
    };
    let counts_history = s.mirostat == Mirostat::Off && (s.penalizes() || s.dry_is_on());
    if params.is_greedy() && !s.greedy_reads_the_set() {
        // The samplers that move logits one by one, in the chain's order,
        // up to the temperature: at 0 it leaves the best token alone, so
        // what comes after it changes nothing.
        for stage in s
            .stages()
            .iter()
            .take_while(|&&st| st != Stage::Temperature)
        {
            match stage {
                Stage::Penalties if s.penalizes() => filters.push(penalties()),
                Stage::Dry if s.dry_is_on() => filters.push(dry()),
                _ => {}
            }
        }
        let argmax = filters.is_empty();
        return Chain {
            filters: (!argmax).then(|| LlamaSampler::chain_simple(filters)),
            pick: Pick::Llama(LlamaSampler::greedy()),
            shortlist: true,
            argmax,
            counts_history,
        };
    }
    let pick = match s.mirostat {
        Mirostat::Off => {
            // llama-server's order, or the caller's (`samplers`): a stage
            // left out is not applied.
            let mut adaptive = false;
            for stage in s.stages() {
                match stage {
                    Stage::Penalties => filters.push(penalties()),
                    Stage::Dry => filters.push(dry()),
                    Stage::TopNSigma => filters.push(LlamaSampler::top_n_sigma(s.top_n_sigma)),
                    Stage::TopK => filters.push(LlamaSampler::top_k(s.top_k)),
                    Stage::TypicalP => filters.push(LlamaSampler::typical(s.typical_p, min_keep)),
                    Stage::TopP => filters.push(LlamaSampler::top_p(s.top_p, min_keep)),
                    Stage::MinP => filters.push(LlamaSampler::min_p(s.min_p, min_keep)),
                    Stage::Xtc => filters.push(LlamaSampler::xtc(
                        s.xtc_probability,
                        s.xtc_threshold,
                        min_keep,
                        params.seed,
                    )),
                    Stage::Temperature => filters.push(LlamaSampler::temp_ext(
                        params.temperature,
                        s.dynatemp_range,
                        s.dynatemp_exponent,
                    )),
                    // It draws: it goes last, in place of the plain draw.
                    Stage::AdaptiveP => adaptive = true,
                }
            }
            if adaptive {
                Pick::adaptive(s.adaptive_target, s.adaptive_decay, params.seed)
            } else {
                Pick::Llama(LlamaSampler::dist(params.seed))
            }
        }
        Mirostat::V1 { tau, eta } => {
            filters.push(LlamaSampler::temp(params.temperature));
            Pick::Llama(LlamaSampler::mirostat(n_vocab, params.seed, tau, eta, 100))
        }
        Mirostat::V2 { tau, eta } => {
            filters.push(LlamaSampler::temp(params.temperature));
            Pick::Llama(LlamaSampler::mirostat_v2(params.seed, tau, eta))
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

/// What picks the token at the end of the chain: a sampler llama-cpp-2
/// wraps, or adaptive-p, which it does not (made and freed here).
pub(super) enum Pick {
    Llama(LlamaSampler),
    AdaptiveP(RawSampler),
}

impl Pick {
    fn adaptive(target: f32, decay: f32, seed: u32) -> Self {
        // SAFETY: plain values; llama.cpp allocates the sampler.
        let raw = unsafe { llama_cpp_sys_2::llama_sampler_init_adaptive_p(target, decay, seed) };
        match std::ptr::NonNull::new(raw) {
            Some(raw) => Pick::AdaptiveP(RawSampler(raw)),
            // Out of memory: llama.cpp's own draw rather than nothing.
            None => Pick::Llama(LlamaSampler::dist(seed)),
        }
    }

    pub(super) fn apply(&mut self, array: &mut LlamaTokenDataArray) {
        match self {
            Pick::Llama(sampler) => sampler.apply(array),
            Pick::AdaptiveP(raw) => raw.apply(array),
        }
    }

    pub(super) fn accept(&mut self, token: LlamaToken) {
        match self {
            Pick::Llama(sampler) => sampler.accept(token),
            // SAFETY: a live sampler used by one thread at a time (`&mut`).
            Pick::AdaptiveP(raw) => unsafe {
                llama_cpp_sys_2::llama_sampler_accept(raw.0.as_ptr(), token.0);
            },
        }
    }
}

/// A llama.cpp sampler this crate made, freed once.
pub(super) struct RawSampler(std::ptr::NonNull<llama_cpp_sys_2::llama_sampler>);

// SAFETY: a llama.cpp sampler has no affinity to the thread that made it;
// every use takes `&mut self` (one thread at a time), as llama-cpp-2's own
// samplers are `Send`.
unsafe impl Send for RawSampler {}

impl RawSampler {
    /// Apply it to `array`, as llama-cpp-2 applies its samplers: the array's
    /// own buffer handed to llama.cpp, its length, order flag and selection
    /// read back.
    fn apply(&mut self, array: &mut LlamaTokenDataArray) {
        const _: () = assert!(
            std::mem::size_of::<llama_cpp_2::token::data::LlamaTokenData>()
                == std::mem::size_of::<llama_cpp_sys_2::llama_token_data>()
        );
        let mut c = llama_cpp_sys_2::llama_token_data_array {
            data: array.data.as_mut_ptr().cast(),
            size: array.data.len(),
            selected: array
                .selected
                .and_then(|s| i64::try_from(s).ok())
                .unwrap_or(-1),
            sorted: array.sorted,
        };
        let data = c.data;
        // SAFETY: `LlamaTokenData` is `repr(transparent)` over
        // `llama_token_data` (pinned llama-cpp-2; sizes asserted above), so
        // the buffer is `size` initialised entries; adaptive-p reorders and
        // rescores them in place and never grows the array.
        unsafe { llama_cpp_sys_2::llama_sampler_apply(self.0.as_ptr(), &mut c) };
        let size = c.size.min(array.data.len());
        if !std::ptr::eq(c.data, data) && !c.data.is_null() {
            // SAFETY: llama.cpp points at `c.size` entries of its own, alive
            // until its next call on the sampler; copied before that.
            let theirs = unsafe { std::slice::from_raw_parts(c.data.cast(), size) };
            array.data[..size].copy_from_slice(theirs);
        }
        array.data.truncate(size);
        array.sorted = c.sorted;
        array.selected = usize::try_from(c.selected)
            .ok()
            .filter(|&s| s < array.data.len());
    }
}

impl Drop for RawSampler {
    fn drop(&mut self) {
        // SAFETY: made by `llama_sampler_init_*`, freed once.
        unsafe { llama_cpp_sys_2::llama_sampler_free(self.0.as_ptr()) }
    }
}
