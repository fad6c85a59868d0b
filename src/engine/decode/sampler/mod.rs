//! Choosing each token: the sampler chain, and the grammar that keeps the
//! output inside a constraint.
//!
//! The chain is llama-server's (see [`chain`]), and so is the way the
//! grammar is checked: lazily. The chain picks a token from the
//! unconstrained logits; if the grammar allows it, it is taken, at the cost
//! of checking one token. Only when it is refused is the grammar run over the
//! whole vocabulary, and the chain picks again among the allowed tokens (for
//! greedy decoding, a shortlist finds the same token first). Every token
//! taken is allowed by the grammar, and with the same seed and settings the
//! token is the one llama-server's common sampler picks.

mod chain;
mod grammar;

use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use llama_cpp_2::token::LlamaToken;

pub use chain::{Biases, CallSampling};
pub use grammar::{Extendable, GrammarCache, GrammarSampler};

use super::think::Phase;
use crate::backend::error::{InferenceError, InferenceResult};
use crate::backend::params::GenerateParams;
use chain::chain;

/// How many of the best candidates the grammar checks when it refuses the
/// first pick, before it falls back to masking the whole vocabulary.
const SHORTLIST: usize = 64;

/// The second, wider shortlist of greedy decoding: the grammar checks these
/// many best candidates (about 2% of a 49k vocabulary, so about 2% of the
/// cost of a full mask) before it masks the whole vocabulary.
const WIDE_SHORTLIST: usize = 1024;

/// The grammar (if any) and the samplers of one call: `filters` shape the
/// candidates, `pick` chooses one (greedy, the seeded draw, or mirostat).
/// Together they are llama-server's chain (see [`chain`]).
pub struct Sampler {
    grammar: Option<GrammarSampler>,
    filters: Option<LlamaSampler>,
    pick: chain::Pick,
    /// Greedy, with nothing in the chain that reads the candidates as a
    /// set: the best allowed token is found from a shortlist.
    greedy: bool,
    /// The pick is the highest logit as the model computed it: taken
    /// without building the candidates.
    argmax: bool,
    candidates: Vec<LlamaTokenData>,
    /// How often the grammar refused the first pick, and how often the
    /// shortlist held no allowed token either (for profiling).
    pub refused: u32,
    pub full_masks: u32,
    /// How often greedy decoding went on to the wide shortlist.
    pub wide_shortlists: u32,
    /// Whether the last pick was taken without the grammar.
    took_free: bool,
}

impl Sampler {
    /// The sampler of a generation from `prompt`, whose tokens the
    /// penalties and DRY count as llama-server's do (image stand-ins, which
    /// are negative, left out), with the logit biases `biases` resolved
    /// for this model.
    pub fn new(
        model: &LlamaModel,
        params: &GenerateParams,
        grammar: Option<GrammarSampler>,
        biases: &Biases,
        prompt: &[LlamaToken],
    ) -> Self {
        let chain = chain(model, params, biases);
        let mut sampler = Self {
            grammar,
            filters: chain.filters,
            pick: chain.pick,
            greedy: chain.shortlist,
            argmax: chain.argmax,
            candidates: Vec::new(),
            refused: 0,
            full_masks: 0,
            wide_shortlists: 0,
            took_free: true,
        };
        if chain.counts_history {
            for &token in prompt.iter().filter(|t| t.0 >= 0) {
                sampler.accept_free(token);
            }
        }
        sampler
    }

    /// The candidates the chain left at the last pick, with the
    /// probabilities the draw used; `None` for a greedy pick (one
    /// candidate, certain).
    pub fn last_candidates(&self) -> Option<&[LlamaTokenData]> {
        (!self.greedy && !self.argmax).then_some(self.candidates.as_slice())
    }

    /// Whether the last token sampled was taken without the grammar (there
    /// is none, or it was free text: a thought).
    pub fn took_free(&self) -> bool {
        self.took_free
    }

    /// Pick the next token given the model's `logits`, and let every sampler
    /// see it.
    ///
    /// With a grammar, as llama-server's common sampler does: the chain picks
    /// from all candidates; if the grammar allows the pick, it is taken;
    /// else the grammar masks the whole vocabulary and the chain picks again
    /// (a second draw). Greedy decoding, where nothing in the chain reads the
    /// candidates as a set, first looks for the best allowed token among the
    /// best [`SHORTLIST`], then [`WIDE_SHORTLIST`], candidates: the same
    /// token the full mask gives, at a fraction of its cost.
    ///
    /// `phase` says whether the grammar applies: not inside a thought; and
    /// before the answer starts, a pick that opens a thought and that the
    /// grammar refuses is taken without it.
    pub fn sample(&mut self, logits: &[f32], phase: Phase<'_>) -> InferenceResult<LlamaToken> {
        let mut array = None;
        let mut token = if self.argmax {
            // Plain greedy: the first highest logit, without building the
            // candidate array (what llama.cpp's greedy sampler picks).
            argmax(logits)
        } else {
            let mut all = candidates_from(std::mem::take(&mut self.candidates), logits);
            self.shape_and_pick(&mut all);
            let picked = all.selected_token();
            array = Some(all);
            picked
        };
        let mut constrained = !matches!(phase, Phase::Free);
        if let (Phase::MayThink(opens), Some(picked), Some(grammar)) =
            (phase, token, self.grammar.as_mut())
        {
            // A pick that opens a thought and that the grammar refuses starts
            // the thought, free; one the grammar allows is the grammar's.
            if !grammar.allows(picked) && opens(picked) {
                constrained = false;
            }
        }
        if let Some(grammar) = self.grammar.as_mut().filter(|_| constrained) {
            if !token.is_some_and(|t| grammar.allows(t)) {
                self.refused += 1;
                let mut all = array.take().unwrap_or_else(|| {
                    candidates_from(std::mem::take(&mut self.candidates), logits)
                });
                token = self.pick_from_shortlist(&mut all);
                if token.is_none() {
                    self.full_masks += 1;
                    token = self.pick_from_all(&mut all, logits)?;
                }
                array = Some(all);
            }
        }
        if let Some(all) = array {
            self.candidates = all.data;
        }
        let token = token.ok_or(InferenceError::GrammarDeadEnd)?;
        self.took_free = !constrained || self.grammar.is_none();
        if constrained {
            if let Some(grammar) = &mut self.grammar {
                // The samplers after the mask may leave nothing (a bias that
                // bans every token the grammar allows): llama.cpp's chain
                // then picks a token the grammar refuses, which its grammar
                // would abort the process on.
                if !grammar.allows(token) {
                    return Err(InferenceError::NothingAllowedLeft);
                }
                grammar.accept(token)?;
            }
        }
        self.accept_free(token);
        Ok(token)
    }

    /// Let the grammar read `text` (a trigger the model wrote as free
    /// text, which starts the grammar's own text).
    pub fn feed(&mut self, model: &LlamaModel, text: &str) -> InferenceResult<()> {
        if let Some(grammar) = &mut self.grammar {
            for token in model.vocab().tokenize(text.as_bytes(), false, true) {
                grammar.accept(token)?;
            }
        }
        Ok(())
    }

    /// The bytes the grammar forces next (see `grammar::forced`), at most
    /// `max`; `None` when nothing can tell (no grammar, or one made
    /// without fast-forward).
    pub fn forced_bytes(&self, max: usize) -> Option<Vec<u8>> {
        self.grammar.as_ref()?.forced_bytes(max)
    }

    /// Whether the grammar admits nothing but the end (see
    /// `grammar::forced`); false when nothing can tell.
    pub fn must_end(&self) -> bool {
        self.grammar.as_ref().is_some_and(|g| g.must_end())
    }

    /// Whether `token`, ending a forced text, could merge with what follows
    /// (see [`Extendable`]).
    pub fn may_merge(&self, token: LlamaToken) -> bool {
        self.grammar.as_ref().is_none_or(|g| g.may_merge(token))
    }

    /// How many of `tokens`, from the first, the grammar allows one after
    /// the other (see [`GrammarSampler::allowed_run`]); all without one.
    pub fn allowed_run(&self, tokens: &[LlamaToken]) -> usize {
        self.grammar
            .as_ref()
            .map_or(tokens.len(), |g| g.allowed_run(tokens))
    }

    /// Whether the model writes the start of `rest`, the rest of a forced
    /// text (see [`Extendable::model_spells`]).
    pub fn model_spells(&self, rest: &[u8]) -> bool {
        self.grammar.as_ref().is_none_or(|g| g.model_spells(rest))
    }

    /// Take `token`, which the grammar forced: the grammar advances past it,
    /// and the filters and the pick see it as they see a sampled token.
    /// Returns false, taking nothing and forcing nothing from then on, when
    /// llama.cpp's grammar does not allow it: the follower and llama.cpp
    /// disagree (which no test has shown), and llama.cpp's reading wins.
    pub fn accept_forced(&mut self, token: LlamaToken) -> InferenceResult<bool> {
        if let Some(grammar) = &mut self.grammar {
            if !grammar.allows(token) {
                grammar.stop_following();
                return Ok(false);
            }
            grammar.accept(token)?;
        }
        self.took_free = false;
        self.accept_free(token);
        Ok(true)
    }

    /// Let the filters and the pick see `token`, which the engine wrote
    /// itself (outside the grammar: the close of a thought).
    pub fn accept_free(&mut self, token: LlamaToken) {
        if let Some(filters) = &mut self.filters {
            filters.accept(token);
        }
        self.pick.accept(token);
    }

    fn shape_and_pick(&mut self, array: &mut LlamaTokenDataArray) {
        if let Some(filters) = &mut self.filters {
            filters.apply(array);
        }
        self.pick.apply(array);
    }

    /// Step 2: the pick among the allowed tokens of a shortlist, if any.
    /// Greedy decoding tries the best [`SHORTLIST`] candidates, then the best
    /// [`WIDE_SHORTLIST`]: the best allowed token overall is the first allowed
    /// one in logit order, so when either list holds an allowed token its
    /// best one is exactly what the full mask would pick, at a fraction of
    /// its cost.
    fn pick_from_shortlist(&mut self, array: &mut LlamaTokenDataArray) -> Option<LlamaToken> {
        if !self.greedy {
            // The chain reads the candidates as a set (and draws): only the
            // whole masked vocabulary gives llama-server's pick.
            return None;
        }
        let grammar = self.grammar.as_mut()?;
        let data = &mut array.data;
        for size in [SHORTLIST, WIDE_SHORTLIST] {
            if size == WIDE_SHORTLIST {
                self.wide_shortlists += 1;
            }
            if data.len() > size {
                data.select_nth_unstable_by(size - 1, |a, b| b.logit().total_cmp(&a.logit()));
            }
            let picked = pick_allowed(grammar, &mut self.pick, &data[..size.min(data.len())]);
            if picked.is_some() || data.len() <= size {
                return picked;
            }
        }
        None
    }

    /// Step 3: mask the whole vocabulary, then filter and pick.
    fn pick_from_all(
        &mut self,
        array: &mut LlamaTokenDataArray,
        logits: &[f32],
    ) -> InferenceResult<Option<LlamaToken>> {
        *array = candidates_from(std::mem::take(&mut array.data), logits);
        if let Some(grammar) = &mut self.grammar {
            grammar.apply(array);
        }
        if !array.data.iter().any(|t| t.logit().is_finite()) {
            return Err(InferenceError::GrammarDeadEnd);
        }
        self.shape_and_pick(array);
        Ok(array.selected_token())
    }
}

/// `pick`'s choice among the tokens of `candidates` that `grammar` allows.
fn pick_allowed(
    grammar: &mut GrammarSampler,
    pick: &mut chain::Pick,
    candidates: &[LlamaTokenData],
) -> Option<LlamaToken> {
    let mut short = LlamaTokenDataArray::new(candidates.to_vec(), false);
    grammar.apply(&mut short);
    short.data.retain(|t| t.logit().is_finite());
    if short.data.is_empty() {
        return None;
    }
    pick.apply(&mut short);
    short.selected_token()
}

/// The first token with the highest logit.
fn argmax(logits: &[f32]) -> Option<LlamaToken> {
    let mut best: Option<(usize, f32)> = None;
    for (i, &l) in logits.iter().enumerate() {
        if best.is_none_or(|(_, b)| l > b) {
            best = Some((i, l));
        }
    }
    best.map(|(i, _)| LlamaToken(i as i32))
}

/// Every token with its logit, in the reused buffer `data`.
fn candidates_from(mut data: Vec<LlamaTokenData>, logits: &[f32]) -> LlamaTokenDataArray {
    data.clear();
    data.extend(
        logits
            .iter()
            .enumerate()
            .map(|(i, &logit)| LlamaTokenData::new(LlamaToken(i as i32), logit, 0.0)),
    );
    LlamaTokenDataArray::new(data, false)
}
