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

use std::mem::ManuallyDrop;
use std::sync::Arc;

use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use llama_cpp_2::token::logit_bias::LlamaLogitBias;
use llama_cpp_2::token::LlamaToken;

use super::think::Phase;
use crate::backend::error::{InferenceError, InferenceResult};
use crate::backend::params::{Constraint, GenerateParams};
use crate::backend::sampling::{BiasTarget, Mirostat, Sampling};
use crate::engine::llama::runtime::logged;
use crate::grammar::forced::{ForcedRules, Recognizer};
use crate::grammar::CheckedGbnf;

/// How many parsed grammars a model keeps for reuse.
const CACHED_GRAMMARS: usize = 8;

/// A grammar sampler, which points into the vocabulary of the model it was
/// parsed for, together with a strong reference to that model: the sampler
/// is freed first (in `drop`, before any field), so the model always
/// outlives it.
pub struct GrammarSampler {
    sampler: ManuallyDrop<LlamaSampler>,
    model: Arc<LlamaModel>,
    /// The same grammar followed in Rust, byte by byte, to tell what it
    /// forces next (fast-forward); fed every token llama.cpp's accepts.
    follow: Option<Box<Recognizer>>,
    /// With `follow`: which tokens of the vocabulary a longer token begins
    /// with, so could still merge with what follows them.
    extendable: Option<Arc<Extendable>>,
    piece: Vec<u8>,
}

// SAFETY: a llama.cpp grammar sampler is plain data (the parsed rules, the
// parse stacks and a pointer to the vocabulary, which is read-only and kept
// alive by `model`); it may move to another thread. It is not `Sync`:
// applying and accepting mutate it, and take `&mut self`.
unsafe impl Send for GrammarSampler {}

impl GrammarSampler {
    /// Let llama.cpp parse `gbnf` (start rule `root`) for `model`.
    ///
    /// The checker has refused every grammar llama.cpp's parser would
    /// refuse but one kind, which needs the vocabulary: a `<text>` token
    /// item that is not exactly one token. That is checked here, the way
    /// llama.cpp checks it, so that its parser never fails: it would print
    /// its complaint to the process's stderr rather than to the log.
    pub fn parse(model: &Arc<LlamaModel>, gbnf: &CheckedGbnf) -> InferenceResult<Self> {
        for item in gbnf.token_texts() {
            let tokens = model.vocab().tokenize(item.text.as_bytes(), false, true);
            if tokens.len() != 1 {
                return Err(InferenceError::GrammarRejected {
                    detail: format!(
                        "line {}, column {}: invalid token '{}': it is {} tokens of this model's vocabulary, not one",
                        item.line,
                        item.column,
                        item.text,
                        tokens.len()
                    ),
                });
            }
        }
        let (parsed, log) = logged(|| LlamaSampler::grammar(model, gbnf.as_str(), "root"));
        let sampler = parsed.map_err(|e| InferenceError::GrammarRejected {
            detail: log.unwrap_or_else(|| e.to_string()),
        })?;
        Ok(Self {
            sampler: ManuallyDrop::new(sampler),
            model: Arc::clone(model),
            follow: None,
            extendable: None,
            piece: Vec::new(),
        })
    }

    /// Follow the grammar's text from here on with `rules` (the same
    /// grammar's), to tell what it forces.
    fn follow(&mut self, rules: Arc<ForcedRules>, extendable: Arc<Extendable>) {
        self.follow = Some(Box::new(Recognizer::new(rules)));
        self.extendable = Some(extendable);
    }

    /// Whether `token` could merge with text that follows it into a longer
    /// token (`true` when unknown).
    pub fn may_merge(&self, token: LlamaToken) -> bool {
        self.extendable.as_ref().is_none_or(|e| e.may_merge(token))
    }

    /// Whether the model writes `rest`'s start itself (see
    /// [`Extendable::model_spells`]; `true` when unknown).
    pub fn model_spells(&self, rest: &[u8]) -> bool {
        self.extendable
            .as_ref()
            .is_none_or(|e| e.model_spells(rest))
    }

    /// Back to the start of the grammar.
    pub fn reset(&mut self) {
        self.sampler.reset();
    }

    /// Whether the grammar, in its current state, allows `token` next.
    pub fn allows(&mut self, token: LlamaToken) -> bool {
        let mut one = LlamaTokenDataArray::new(vec![LlamaTokenData::new(token, 0.0, 0.0)], false);
        self.sampler.apply(&mut one);
        one.data.first().is_some_and(|t| t.logit().is_finite())
    }

    /// Advance past `token`; an error when the grammar does not allow it.
    pub fn accept(&mut self, token: LlamaToken) -> InferenceResult<()> {
        self.sampler
            .try_accept(token)
            .map_err(|_| InferenceError::GrammarDeadEnd)?;
        if let Some(follow) = &mut self.follow {
            // The token's text as llama.cpp's grammar reads it (control
            // tokens rendered); end-of-generation has none.
            let vocab = self.model.vocab();
            if !vocab.is_eog(token) {
                self.piece.clear();
                vocab.token_to_piece_into(token, &mut self.piece, true, None);
                if !follow.accept_bytes(&self.piece) {
                    // The two readings disagree (a token item the follower
                    // cannot read): stop following; nothing is forced from
                    // here on, and llama.cpp's grammar alone decides.
                    self.follow = None;
                }
            }
        }
        Ok(())
    }

    /// The bytes the grammar forces next, at most `max`, when this sampler
    /// follows its grammar's text (`None`: it does not).
    pub fn forced_bytes(&self, max: usize) -> Option<Vec<u8>> {
        self.follow.as_ref().map(|f| f.forced(max))
    }

    /// Whether the grammar admits nothing but the end here, when this
    /// sampler follows its grammar's text (false: it does not).
    pub fn must_end(&self) -> bool {
        self.follow.as_ref().is_some_and(|f| f.must_end())
    }

    /// How many of `tokens`, from the first, the grammar allows one after
    /// the other from its current state (which does not move): read by the
    /// follower when there is one, else by a copy of llama.cpp's grammar.
    /// An end-of-generation token ends the run.
    pub fn allowed_run(&self, tokens: &[LlamaToken]) -> usize {
        let vocab = self.model.vocab();
        if let Some(follow) = &self.follow {
            let mut follow = follow.clone();
            let mut piece = Vec::with_capacity(16);
            return tokens
                .iter()
                .position(|&token| {
                    piece.clear();
                    vocab.token_to_piece_into(token, &mut piece, true, None);
                    vocab.is_eog(token) || !follow.accept_bytes(&piece)
                })
                .unwrap_or(tokens.len());
        }
        let mut copy = self.clone();
        tokens
            .iter()
            .position(|&token| {
                vocab.is_eog(token) || !copy.allows(token) || copy.accept(token).is_err()
            })
            .unwrap_or(tokens.len())
    }

    /// Set the logit of every token the grammar does not allow to -inf.
    pub fn apply(&mut self, array: &mut LlamaTokenDataArray) {
        self.sampler.apply(array);
    }
}

impl std::fmt::Debug for GrammarSampler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GrammarSampler").finish_non_exhaustive()
    }
}

impl Clone for GrammarSampler {
    /// A copy in the same state, tied to the same model.
    fn clone(&self) -> Self {
        Self {
            sampler: ManuallyDrop::new((*self.sampler).clone()),
            model: Arc::clone(&self.model),
            follow: self.follow.clone(),
            extendable: self.extendable.clone(),
            piece: Vec::new(),
        }
    }
}

impl Drop for GrammarSampler {
    fn drop(&mut self) {
        // SAFETY: dropped exactly once, here; `model` is still alive and is
        // released only after this function returns.
        unsafe { ManuallyDrop::drop(&mut self.sampler) }
    }
}

/// The tokens of a vocabulary that are a strict prefix of another token:
/// only such a token, written at the end of a forced text, could merge
/// with what follows into one token (`th` + `e` → `the`), so only such a
/// token is held back by fast-forward for the model to choose.
///
/// And the texts of its user-defined tokens (Qwen's `<tool_call>` and
/// `</tool_call>`, a reasoning model's `</think>`): llama.cpp's tokenizer
/// always reads such a text as the one token, but a model may write it
/// either way (Qwen2.5-Coder-0.5B, sampling, often writes `</` `tool`
/// `_call` `>`), and what follows depends on which: fed the one token
/// after a call it opened in text, it goes on to open another call. So
/// where a forced text reaches such a text, the model writes it.
pub struct Extendable {
    tokens: Vec<bool>,
    spelled_either_way: Vec<Vec<u8>>,
}

impl Extendable {
    pub fn of(model: &LlamaModel) -> Self {
        let vocab = model.vocab();
        let n = usize::try_from(model.n_vocab()).unwrap_or(0);
        let mut piece = Vec::new();
        let pieces: Vec<Vec<u8>> = (0..n)
            .map(|id| {
                piece.clear();
                let token = LlamaToken(i32::try_from(id).unwrap_or(i32::MAX));
                vocab.token_to_piece_into(token, &mut piece, false, None);
                piece.clone()
            })
            .collect();
        let mut prefixes: crate::hashing::Set<&[u8]> = crate::hashing::Set::default();
        for p in &pieces {
            for end in 1..p.len() {
                prefixes.insert(&p[..end]);
            }
        }
        let spelled_either_way = crate::engine::llama::context::tokens_with_attr(
            model,
            llama_cpp_sys_2::LLAMA_TOKEN_ATTR_USER_DEFINED,
        )
        .into_iter()
        .filter_map(|(token, _)| pieces.get(usize::try_from(token.0).ok()?).cloned())
        .filter(|p| !p.is_empty())
        .collect();
        Self {
            tokens: pieces
                .iter()
                .map(|p| p.is_empty() || prefixes.contains(p.as_slice()))
                .collect(),
            spelled_either_way,
        }
    }

    /// Whether the text `rest`, at a token boundary of a forced text, begins
    /// with a user-defined token's text, or is cut short inside one: the
    /// model chooses how to write it (see [`Extendable`]).
    pub fn model_spells(&self, rest: &[u8]) -> bool {
        !rest.is_empty()
            && self
                .spelled_either_way
                .iter()
                .any(|u| rest.starts_with(u) || u.starts_with(rest))
    }

    pub fn may_merge(&self, token: LlamaToken) -> bool {
        usize::try_from(token.0)
            .ok()
            .and_then(|i| self.tokens.get(i))
            .is_none_or(|&e| e)
    }
}

/// Grammars parsed by llama.cpp, most recently used last. A call with the
/// same grammar gets a copy of the parsed one instead of parsing again.
#[derive(Default)]
pub struct GrammarCache {
    entries: Vec<(CheckedGbnf, GrammarSampler)>,
    /// The rules fast-forward follows, built the first time a call asks.
    followed: Vec<(CheckedGbnf, Arc<ForcedRules>)>,
    /// The model's extendable tokens, found the first time a call asks.
    extendable: Option<Arc<Extendable>>,
}

impl std::fmt::Debug for GrammarCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GrammarCache")
            .field("entries", &self.entries.len())
            .finish()
    }
}

impl GrammarCache {
    /// A fresh grammar sampler for the constraint of `params`, if it has one.
    pub fn for_params(
        &mut self,
        model: &Arc<LlamaModel>,
        params: &GenerateParams,
    ) -> InferenceResult<Option<GrammarSampler>> {
        match &params.constraint {
            None => Ok(None),
            Some(Constraint::Grammar(gbnf)) => {
                let mut fresh = self.get(model, gbnf)?;
                if params.fast_forward {
                    let extendable = Arc::clone(
                        self.extendable
                            .get_or_insert_with(|| Arc::new(Extendable::of(model))),
                    );
                    fresh.follow(self.rules(gbnf), extendable);
                }
                Ok(Some(fresh))
            }
        }
    }

    /// The rules of `gbnf` for fast-forward, built once.
    fn rules(&mut self, gbnf: &CheckedGbnf) -> Arc<ForcedRules> {
        if let Some((_, rules)) = self.followed.iter().find(|(text, _)| text == gbnf) {
            return Arc::clone(rules);
        }
        let rules = Arc::new(ForcedRules::new(gbnf));
        if self.followed.len() == CACHED_GRAMMARS {
            self.followed.remove(0);
        }
        self.followed.push((gbnf.clone(), Arc::clone(&rules)));
        rules
    }

    /// A fresh grammar sampler (at the start of the grammar) for `gbnf`.
    pub fn get(
        &mut self,
        model: &Arc<LlamaModel>,
        gbnf: &CheckedGbnf,
    ) -> InferenceResult<GrammarSampler> {
        if let Some(i) = self.entries.iter().position(|(text, _)| text == gbnf) {
            let entry = self.entries.remove(i);
            let fresh = entry.1.clone();
            self.entries.push(entry);
            return Ok(fresh);
        }
        let parsed = GrammarSampler::parse(model, gbnf)?;
        let fresh = parsed.clone();
        if self.entries.len() == CACHED_GRAMMARS {
            self.entries.remove(0);
        }
        self.entries.push((gbnf.clone(), parsed));
        Ok(fresh)
    }
}

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
    pick: LlamaSampler,
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
                grammar.follow = None;
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
    pick: &mut LlamaSampler,
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
struct Chain {
    filters: Option<LlamaSampler>,
    pick: LlamaSampler,
    /// Greedy with only samplers that move logits token by token: a
    /// refused pick is replaced from a shortlist (see [`Sampler::sample`]).
    shortlist: bool,
    /// Greedy with nothing that moves a logit.
    argmax: bool,
    /// The penalties or DRY read the tokens before (the prompt's too).
    counts_history: bool,
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
fn chain(model: &LlamaModel, params: &GenerateParams, biases: &Biases) -> Chain {
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

#[cfg(test)]
mod tests {
    use super::Extendable;

    /// A forced run stops where a user-defined token's text begins, or
    /// where the forced text ends inside one; nowhere else.
    #[test]
    fn the_model_spells_user_defined_texts() {
        let e = Extendable {
            tokens: Vec::new(),
            spelled_either_way: vec![b"</tool_call>".to_vec(), b"<tool_call>".to_vec()],
        };
        for rest in [
            &b"</tool_call>"[..],
            b"</tool_call>\n<tool_call>",
            b"</tool",
            b"<",
            b"<tool_call>\n{",
        ] {
            assert!(e.model_spells(rest), "{}", String::from_utf8_lossy(rest));
        }
        for rest in [
            &b"\"}}\n</tool_call>"[..],
            b"tool_call>",
            b"x<tool_call>",
            b"",
        ] {
            assert!(!e.model_spells(rest), "{}", String::from_utf8_lossy(rest));
        }
    }
}
