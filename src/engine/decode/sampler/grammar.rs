//! The grammar that keeps the output inside a constraint, as llama.cpp
//! parses and applies it, followed in Rust as well to tell what it forces
//! (fast-forward); and the grammars a model keeps parsed.

use std::mem::ManuallyDrop;
use std::sync::Arc;

use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use llama_cpp_2::token::LlamaToken;

use crate::backend::error::{InferenceError, InferenceResult};
use crate::backend::params::{Constraint, GenerateParams};
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

    /// Stop following the grammar's text: nothing is forced from here on
    /// (the follower and llama.cpp disagreed; llama.cpp's reading wins).
    pub fn stop_following(&mut self) {
        self.follow = None;
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
