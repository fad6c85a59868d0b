//! Prompt-lookup decoding: what to propose. Extraction copies: names,
//! amounts and dates of the prompt come back in the answer. Where the last
//! few tokens written also appear earlier (in the prompt or the answer),
//! the tokens that followed them there are a good guess of what follows
//! now. The generation loop evaluates such a proposal in one batch with the
//! token before it and keeps the longest prefix the sampler itself picks
//! (see `generate`), so a proposal never changes what is written, only how
//! many decode steps it takes.

use llama_cpp_2::token::LlamaToken;

use crate::backend::error::InferenceError;
use crate::backend::params::LookupParams;
use crate::hashing::hash_of;

/// What n-grams are matched on: a token's text less one leading space, so
/// that a word written without its space (`"Acme` in a JSON value) matches
/// the same word with it (` Acme` in the prompt), whose continuation there
/// is then proposed. A token with no text but spaces (a control token, a
/// space) is itself. The lowest bit says whether the text is punctuation
/// (see [`LookupOdds`]).
pub fn core_of(token: LlamaToken, piece: &[u8]) -> u64 {
    let core = piece.strip_prefix(b" ").unwrap_or(piece);
    let hash = match core {
        [] => hash_of(&(u64::MAX, token.0)),
        core => hash_of(core),
    };
    (hash & !1) | u64::from(is_punctuation(core))
}

/// Whether a token's text (less its space) is ASCII punctuation only: where
/// a copied value ends, the model writes its own (a quote) where the
/// source goes on with its own (a comma, a full stop).
fn is_punctuation(core: &[u8]) -> bool {
    !core.is_empty() && core.iter().all(u8::is_ascii_punctuation)
}

/// The error when a context cannot drop the proposed tokens the sampler
/// did not keep: its cache then no longer matches what it records.
pub(super) fn not_dropped() -> InferenceError {
    InferenceError::DecodeFailed {
        detail: "the model's memory cannot drop the tokens of a proposal".to_owned(),
    }
}

/// What evaluating generated tokens costs on this machine and model,
/// measured step by step: a step of one token, and each token more in the
/// same step. Where one more token costs little of a step (a GPU, a large
/// model: memory-bound), long proposals pay even when few of their tokens
/// are kept; where it costs half a step (a small model on a few cores:
/// compute-bound), only likely tokens do.
#[derive(Debug, Clone, Copy)]
pub struct StepCost {
    single_ms: Option<f64>,
    extra_ms: Option<f64>,
}

/// The weight of a new measurement in the running averages.
const COST_WEIGHT: f64 = 0.2;

/// One more token's share of a step before anything is measured: that of
/// the small models on the 2 cores of the machine this was written on.
const PRIOR_EXTRA_SHARE: f64 = 0.5;

impl Default for StepCost {
    fn default() -> Self {
        Self::new()
    }
}

impl StepCost {
    pub const fn new() -> Self {
        Self {
            single_ms: None,
            extra_ms: None,
        }
    }

    /// A step of `tokens` tokens of `sequences` sequences, `rows` of them
    /// with logits, took `ms`. Each sequence's share of it is what a step
    /// costs that sequence (a step of one token each is a single step; a
    /// token more costs the whole step more, borne by that one sequence).
    /// Only steps whose every token has logits count: a proposed token
    /// has them, a forced one (fast-forward) does not and costs less.
    pub fn record(&mut self, (tokens, rows, sequences): (usize, usize, usize), ms: f64) {
        if sequences == 0 || tokens < sequences || rows != tokens {
            return;
        }
        let mix = |old: Option<f64>, new: f64| {
            Some(old.map_or(new, |old| old + COST_WEIGHT * (new - old)))
        };
        let share = ms / sequences as f64;
        if tokens == sequences {
            self.single_ms = mix(self.single_ms, share);
        } else if let Some(single) = self.single_ms {
            let extra = ((ms - single * sequences as f64) / (tokens - sequences) as f64).max(0.0);
            self.extra_ms = mix(self.extra_ms, extra);
        }
    }

    /// What one more token in a step costs, as a share of a step of one.
    pub fn extra_share(&self) -> f64 {
        match (self.single_ms, self.extra_ms) {
            (Some(single), Some(extra)) if single > 0.0 => (extra / single).clamp(0.0, 1.0),
            _ => PRIOR_EXTRA_SHARE,
        }
    }
}

/// How often proposed tokens turn out to be what is written, with recent
/// outcomes weighing most (extraction goes from copying a name to writing
/// a key and back).
#[derive(Debug, Clone, Copy)]
pub struct Odds {
    kept: f64,
    tried: f64,
}

/// How fast old outcomes fade: about the last twenty count.
const ODDS_MEMORY: f64 = 0.95;

impl Odds {
    const fn prior(rate: f64) -> Self {
        Self {
            kept: 2.0 * rate,
            tried: 2.0,
        }
    }

    fn record(&mut self, kept: bool) {
        self.kept = self.kept * ODDS_MEMORY + f64::from(u8::from(kept));
        self.tried = self.tried * ODDS_MEMORY + 1.0;
    }

    fn rate(&self) -> f64 {
        self.kept / self.tried
    }
}

/// How often proposals were right: their first token, and each later one
/// once those before it were, each apart for punctuation and other text
/// (a copied name goes on; the comma after it in the source often is
/// where the answer closes the value instead). A context keeps them from
/// one generation to the next (what it is asked to do tends to repeat),
/// recent outcomes weighing most.
#[derive(Debug, Clone, Copy)]
pub struct LookupOdds {
    /// By [`LookupOdds::slot`].
    odds: [Odds; 4],
}

impl Default for LookupOdds {
    /// Before any outcome: a first token right about a third of the time
    /// (so the first proposals are evaluated only where one more token in
    /// a step is cheap), a later one mostly.
    fn default() -> Self {
        Self {
            odds: [
                Odds::prior(0.35),
                Odds::prior(0.35),
                Odds::prior(0.8),
                Odds::prior(0.8),
            ],
        }
    }
}

impl LookupOdds {
    /// Which odds a proposed token's outcome counts in: whether it is the
    /// proposal's first, and whether its text is punctuation (the lowest
    /// bit of its [`core_of`]).
    fn slot(position: usize, core: u64) -> usize {
        usize::from(position > 0) * 2 + (core & 1) as usize
    }

    fn rate(&self, position: usize, core: u64) -> f64 {
        self.odds[Self::slot(position, core)].rate()
    }

    fn record(&mut self, position: usize, core: u64, kept: bool) {
        self.odds[Self::slot(position, core)].record(kept);
    }
}

/// The tokens of one sequence so far (its prompt, then every token
/// generated and kept), the settings proposals are made with, and how the
/// proposals fared.
///
/// Every proposal is followed against what is then written, evaluated or
/// not: the first token of a proposal, and each later one once those before
/// it were right, is kept or not. From those odds and what one more token
/// costs in a step ([`StepCost`]), a proposal is evaluated as far as it is
/// expected to pay: its `i`-th token when the chance that it and all before
/// it are kept exceeds its cost as a share of a step (a kept token saves a
/// step; every evaluated token costs its share).
#[derive(Debug, Clone)]
pub struct Proposer {
    settings: LookupParams,
    history: Vec<LlamaToken>,
    /// Each token's [`core_of`], matched instead of the token.
    cores: Vec<u64>,
    /// The last proposal (its tokens, from `shadow_from` of the history),
    /// and how many of its tokens were written since.
    shadow: Vec<LlamaToken>,
    shadow_from: usize,
    followed: usize,
    odds: LookupOdds,
}

impl Proposer {
    /// A proposer for a sequence that begins with `prompt`, whose tokens'
    /// [`core_of`] are `cores`.
    pub fn new(settings: LookupParams, prompt: &[LlamaToken], cores: Vec<u64>) -> Self {
        let mut history = Vec::with_capacity(prompt.len() + 256);
        history.extend_from_slice(prompt);
        Self {
            settings,
            history,
            cores,
            shadow: Vec::new(),
            shadow_from: 0,
            followed: 0,
            odds: LookupOdds::default(),
        }
    }

    /// Start from `odds` (an earlier generation's in the same context).
    pub fn set_odds(&mut self, odds: LookupOdds) {
        self.odds = odds;
    }

    /// How its proposals fared, for the next generation in the context.
    pub fn odds(&self) -> LookupOdds {
        self.odds
    }

    /// The [`core_of`] of the `i`-th token of the last proposal.
    fn shadow_core(&self, i: usize) -> u64 {
        self.cores.get(self.shadow_from + i).copied().unwrap_or(0)
    }

    /// `token`, whose [`core_of`] is `core`, joins the sequence.
    pub fn push(&mut self, token: LlamaToken, core: u64) {
        if let Some(&proposed) = self.shadow.get(self.followed) {
            let kept = proposed == token;
            let core = self.shadow_core(self.followed);
            self.odds.record(self.followed, core, kept);
            self.followed += 1;
            if !kept {
                self.shadow.clear();
            }
        }
        self.history.push(token);
        self.cores.push(core);
    }

    /// Into `out` (cleared first), at most `max` tokens worth evaluating
    /// when one more token costs `extra_share` of a step (see [`Proposer`];
    /// all of them when the settings are not adaptive), of the proposal
    /// [`Proposer::propose_all`] makes. Returns the n-gram length matched.
    pub fn propose(&mut self, max: usize, extra_share: f64, out: &mut Vec<LlamaToken>) -> usize {
        let mut shadow = std::mem::take(&mut self.shadow);
        let (n, from) = self.find(self.settings.tokens as usize, &mut shadow);
        self.shadow = shadow;
        self.shadow_from = from;
        self.followed = 0;
        let worth = if self.settings.adaptive {
            let mut chance = 1.0;
            (0..self.shadow.len())
                .take_while(|&i| {
                    chance *= self.odds.rate(i, self.shadow_core(i));
                    chance > extra_share
                })
                .count()
        } else {
            self.shadow.len()
        };
        out.clear();
        out.extend_from_slice(&self.shadow[..worth.min(max)]);
        n
    }

    /// Into `out` (cleared first), at most `max` tokens: those that followed
    /// the most recent earlier occurrence of the sequence's last n tokens,
    /// for the longest n from `ngram_max` down to `ngram_min` that occurs.
    /// Empty when none does. Returns that n (0: none).
    pub fn propose_all(&self, max: usize, out: &mut Vec<LlamaToken>) -> usize {
        self.find(max, out).0
    }

    /// [`Proposer::propose_all`], and where in the history its tokens are.
    fn find(&self, max: usize, out: &mut Vec<LlamaToken>) -> (usize, usize) {
        out.clear();
        let len = self.history.len();
        if max == 0 {
            return (0, len);
        }
        let (low, high) = (self.settings.ngram_min.max(1), self.settings.ngram_max);
        for n in (low..=high).rev().map(|n| n as usize) {
            // The key, and an earlier occurrence with a token after it.
            if len < n + 1 {
                continue;
            }
            let key = &self.cores[len - n..];
            let found = (0..len - n)
                .rev()
                .find(|&start| self.cores.get(start..start + n) == Some(key));
            if let Some(start) = found {
                let from = start + n;
                let to = (from + max).min(len);
                out.extend_from_slice(&self.history[from..to]);
                return (n, from);
            }
        }
        (0, len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(ids: &[i32]) -> Vec<LlamaToken> {
        ids.iter().map(|&i| LlamaToken(i)).collect()
    }

    /// Tests match tokens on their ids (none punctuation: the lowest bit
    /// clear).
    fn core(token: LlamaToken) -> u64 {
        (token.0 as u64) << 1
    }

    fn proposer(min: u32, max: u32, n: u32, prompt: &[i32]) -> Proposer {
        let prompt = tokens(prompt);
        Proposer::new(
            LookupParams {
                ngram_min: min,
                ngram_max: max,
                tokens: n,
                adaptive: false,
            },
            &prompt,
            prompt.iter().copied().map(core).collect(),
        )
    }

    fn proposal(p: &Proposer, max: usize) -> Vec<i32> {
        let mut out = Vec::new();
        p.propose_all(max, &mut out);
        out.iter().map(|t| t.0).collect()
    }

    #[test]
    fn the_tokens_after_the_last_n_gram_seen_before_are_proposed() {
        // "Maria lives in Lisbon . { name : Maria lives" → "in Lisbon ."
        let mut p = proposer(1, 3, 8, &[10, 11, 12, 13, 14, 90, 91, 92]);
        for token in tokens(&[10, 11]) {
            p.push(token, core(token));
        }
        assert_eq!(proposal(&p, 8), [12, 13, 14, 90, 91, 92, 10, 11]);
        assert_eq!(proposal(&p, 3), [12, 13, 14]);
        assert_eq!(proposal(&p, 0), Vec::<i32>::new());
    }

    #[test]
    fn the_longest_n_gram_wins_then_the_most_recent_occurrence() {
        // 7 follows "2 3" once and 8 follows "9 3": the 2-gram "2 3" wins
        // over the more recent 1-gram "3".
        let p = proposer(1, 2, 4, &[2, 3, 7, 9, 3, 8, 2, 3]);
        assert_eq!(proposal(&p, 1), [7]);
        // With only 1-grams, the most recent "3" (followed by 8).
        let p = proposer(1, 1, 4, &[2, 3, 7, 9, 3, 8, 2, 3]);
        assert_eq!(proposal(&p, 1), [8]);
    }

    #[test]
    fn nothing_is_proposed_below_the_shortest_n_gram() {
        // Only the 1-gram "5" recurs; with n-grams of 2 or more, nothing.
        let p = proposer(2, 4, 4, &[5, 1, 2, 5]);
        assert_eq!(proposal(&p, 4), Vec::<i32>::new());
        let p = proposer(1, 4, 4, &[5, 1, 2, 5]);
        assert_eq!(proposal(&p, 4), [1, 2, 5]);
        // A history no longer than the n-gram has no earlier occurrence.
        assert_eq!(proposal(&proposer(1, 4, 4, &[5]), 4), Vec::<i32>::new());
        assert_eq!(proposal(&proposer(1, 4, 4, &[]), 4), Vec::<i32>::new());
    }

    #[test]
    fn a_repeating_run_proposes_its_own_continuation() {
        // "a b a b a b": the occurrence overlaps the key.
        let p = proposer(2, 2, 5, &[1, 2, 1, 2, 1, 2]);
        assert_eq!(proposal(&p, 5), [1, 2]);
    }

    #[test]
    fn a_step_cost_is_learned_as_the_share_of_one_more_token() {
        let mut cost = StepCost::new();
        assert_eq!(cost.extra_share(), PRIOR_EXTRA_SHARE);
        // Forced tokens (no logits) do not count.
        cost.record((5, 1, 1), 20.0);
        assert_eq!(cost.extra_share(), PRIOR_EXTRA_SHARE);
        // Nothing to compare a longer step with yet.
        cost.record((5, 5, 1), 30.0);
        assert_eq!(cost.extra_share(), PRIOR_EXTRA_SHARE);
        cost.record((1, 1, 1), 10.0);
        cost.record((5, 5, 1), 30.0);
        assert!((cost.extra_share() - 0.5).abs() < 1e-9);
        // A GPU: four more tokens cost almost nothing.
        let mut gpu = StepCost::new();
        gpu.record((1, 1, 1), 10.0);
        gpu.record((5, 5, 1), 10.4);
        assert!((gpu.extra_share() - 0.01).abs() < 1e-9);
        // Four sequences: a step of one token each is 40 ms, 10 ms each; a
        // token more costs 5 ms, half a sequence's step.
        let mut many = StepCost::new();
        many.record((4, 4, 4), 40.0);
        many.record((6, 6, 4), 50.0);
        assert!((many.extra_share() - 0.5).abs() < 1e-9);
        // A saturated step (a token more costs what a sequence's step
        // does): proposals never pay.
        for _ in 0..10 {
            many.record((8, 8, 4), 80.0);
        }
        assert!(many.extra_share() > 0.9);
    }

    /// An adaptive proposal is evaluated as far as its tokens are likely
    /// enough to pay for their share of a step; a proposal that keeps being
    /// wrong shrinks to nothing, and grows back when right again (its
    /// outcomes are followed even when it is not evaluated).
    #[test]
    fn an_adaptive_proposal_is_as_long_as_it_is_expected_to_pay() {
        let settings = LookupParams {
            ngram_min: 1,
            ngram_max: 1,
            tokens: 8,
            adaptive: true,
        };
        // "1 2 3 4 5 6 7 8 9" then "1": the proposal is "2 3 4 5 6 7 8 9".
        let prompt = tokens(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 1]);
        let mut p = Proposer::new(
            settings,
            &prompt,
            prompt.iter().copied().map(core).collect(),
        );
        let push = |p: &mut Proposer, id: i32| p.push(LlamaToken(id), core(LlamaToken(id)));
        let mut out = Vec::new();
        // Priors 0.35 then 0.8: 0.35, 0.28, 0.22 … above a share of 0.2.
        p.propose(8, 0.2, &mut out);
        assert_eq!(out.len(), 3);
        // Where one more token costs nothing, the whole proposal.
        p.propose(8, 0.0, &mut out);
        assert_eq!(out.len(), 8);
        // Wrong, again and again: after each "1" comes a new token, never
        // the one proposed (the one after the "1" before).
        for i in 0..30 {
            p.propose(8, 0.3, &mut out);
            push(&mut p, 100 + i);
            push(&mut p, 1);
        }
        p.propose(8, 0.3, &mut out);
        assert!(out.is_empty(), "{out:?}");
        // Right, again and again: "7 1 7 1 …" proposed, and written.
        for _ in 0..30 {
            p.propose(8, 0.3, &mut out);
            push(&mut p, 7);
            push(&mut p, 1);
        }
        // The whole proposal: the "7 1" that followed the last "1".
        p.propose(8, 0.3, &mut out);
        assert_eq!(out, tokens(&[7, 1]));
        // A cap from the caller still holds.
        p.propose(1, 0.0, &mut out);
        assert_eq!(out, tokens(&[7]));
    }

    #[test]
    fn a_word_written_without_its_space_matches_the_word_with_it() {
        assert_eq!(
            core_of(LlamaToken(1), b" Acme"),
            core_of(LlamaToken(2), b"Acme")
        );
        assert_ne!(
            core_of(LlamaToken(1), b"Acme"),
            core_of(LlamaToken(2), b"acme")
        );
        // Only one space goes; a token of no text but a space is itself.
        assert_ne!(core_of(LlamaToken(1), b"  x"), core_of(LlamaToken(2), b"x"));
        assert_ne!(core_of(LlamaToken(1), b" "), core_of(LlamaToken(2), b""));
        assert_ne!(core_of(LlamaToken(1), b""), core_of(LlamaToken(2), b""));
        assert_eq!(core_of(LlamaToken(1), b",") & 1, 1);
        assert_eq!(core_of(LlamaToken(1), b" .\"") & 1, 1);
        assert_eq!(core_of(LlamaToken(1), b" 12") & 1, 0);
        // "lives in Lisbon , Portugal" then `"Lisbon`: ", Portugal" proposed.
        let words: [&[u8]; 5] = [b" lives", b" in", b" Lisbon", b",", b" Portugal"];
        let prompt = tokens(&[1, 2, 3, 4, 5]);
        let cores = prompt
            .iter()
            .zip(words)
            .map(|(&t, w)| core_of(t, w))
            .collect();
        let mut p = proposer(1, 1, 4, &[]);
        p = Proposer::new(p.settings, &prompt, cores);
        p.push(LlamaToken(9), core_of(LlamaToken(9), b"Lisbon"));
        assert_eq!(proposal(&p, 2), [4, 5]);
    }
}
