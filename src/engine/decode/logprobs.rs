//! The probabilities reported for each generated token (option
//! `logprobs`), computed as llama-server computes them: by default from the
//! model's own logits (a softmax over the whole vocabulary, before the
//! bias, the penalties, the temperature and the constraint's mask); with
//! `post_sampling_probs`, from the candidates the chain left and the
//! probabilities the draw used. A token the constraint forced or the engine
//! wrote has probability 1 under the mask (log-probability 0).

use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::LlamaToken;

use crate::backend::generation::{TokenLogprob, TopLogprob};
use crate::backend::params::LogprobParams;

/// What a generation's tokens were chosen from, recorded token by token.
#[derive(Debug)]
pub struct Recorder {
    settings: LogprobParams,
    entries: Vec<TokenLogprob>,
    /// The entry of the token just sampled, until it is taken.
    sampled: Option<TokenLogprob>,
}

impl Recorder {
    pub fn new(settings: LogprobParams) -> Self {
        Self {
            settings,
            entries: Vec::new(),
            sampled: None,
        }
    }

    /// `chosen` was sampled from `logits` (the model's, unmasked);
    /// `candidates` are what the chain left, with the probabilities the
    /// draw used (`None` for a greedy pick: one candidate, probability 1).
    pub fn sampled(
        &mut self,
        model: &LlamaModel,
        logits: &[f32],
        chosen: LlamaToken,
        candidates: Option<&[LlamaTokenData]>,
    ) {
        let n = self.settings.top as usize;
        let (logprob, top) = if self.settings.after_sampling {
            after_sampling(candidates, chosen, n)
        } else {
            before_sampling(logits, chosen, n)
        };
        self.sampled = Some(TokenLogprob {
            id: Some(chosen.0),
            bytes: piece(model, chosen),
            logprob,
            forced: false,
            top: top
                .into_iter()
                .map(|(id, logprob)| TopLogprob {
                    id: Some(id),
                    bytes: piece(model, LlamaToken(id)),
                    logprob,
                })
                .collect(),
            text_end: 0,
        });
    }

    /// `token` was taken, its text ending the output at `text_end`: the
    /// entry sampled for it, or (forced, or written in place of what was
    /// sampled) probability 1.
    pub fn taken(&mut self, model: &LlamaModel, token: LlamaToken, text_end: usize) {
        let mut entry = match self.sampled.take() {
            Some(entry) if entry.id == Some(token.0) => entry,
            _ => {
                let bytes = piece(model, token);
                let top = match self.settings.top {
                    0 => Vec::new(),
                    _ => vec![TopLogprob {
                        id: Some(token.0),
                        bytes: bytes.clone(),
                        logprob: 0.0,
                    }],
                };
                TokenLogprob {
                    id: Some(token.0),
                    bytes,
                    logprob: 0.0,
                    forced: true,
                    top,
                    text_end: 0,
                }
            }
        };
        entry.text_end = text_end;
        self.entries.push(entry);
    }

    /// The entries so far.
    pub fn entries(&self) -> &[TokenLogprob] {
        &self.entries
    }

    /// The entries of the tokens whose text is within the final text of
    /// `text_len` bytes (a stop string's tokens are left out, as
    /// llama-server leaves them).
    pub fn finish(mut self, text_len: usize) -> Vec<TokenLogprob> {
        let kept = self
            .entries
            .iter()
            .position(|e| e.text_end > text_len)
            .unwrap_or(self.entries.len());
        self.entries.truncate(kept);
        self.entries
    }
}

/// The exact natural logarithm of `token`'s probability in the softmax of
/// `logits` (double precision throughout).
pub fn log_softmax_at(logits: &[f32], token: LlamaToken) -> f64 {
    let max = f64::from(logits.iter().copied().fold(f32::NEG_INFINITY, f32::max));
    let sum: f64 = logits.iter().map(|&l| (f64::from(l) - max).exp()).sum();
    let logit = usize::try_from(token.0)
        .ok()
        .and_then(|i| logits.get(i))
        .map_or(f64::NEG_INFINITY, |&l| f64::from(l));
    logit - max - sum.ln()
}

/// The token's text, control tokens rendered (as llama-server shows them).
fn piece(model: &LlamaModel, token: LlamaToken) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(16);
    model
        .vocab()
        .token_to_piece_into(token, &mut bytes, true, None);
    bytes
}

/// The log-probability of `chosen` and the `n` most likely tokens from a
/// softmax over `logits`, computed as llama-server's
/// `get_token_probabilities` computes it: in single precision,
/// `expf(l - max)` summed from the `n` most likely (in order) and then the
/// rest (in id order), each divided by the sum, the logarithm of that; a
/// probability that is 0 in single precision gets its exact logarithm
/// instead (finite, where llama-server writes -FLT_MAX).
fn before_sampling(logits: &[f32], chosen: LlamaToken, n: usize) -> (f64, Vec<(i32, f64)>) {
    let top = top_n(logits.iter().copied().enumerate(), n);
    let max = match top.first() {
        Some(&(_, l)) => l,
        None => logits.iter().copied().fold(f32::NEG_INFINITY, f32::max),
    };
    let mut sum = 0.0f32;
    for &(_, l) in &top {
        sum += (l - max).exp();
    }
    let mut in_top: Vec<usize> = top.iter().map(|&(i, _)| i).collect();
    in_top.sort_unstable();
    let mut next_top = in_top.iter().peekable();
    for (i, &l) in logits.iter().enumerate() {
        if next_top.peek() == Some(&&i) {
            next_top.next();
            continue;
        }
        sum += (l - max).exp();
    }
    let exact_log_sum = f64::from(sum).ln();
    let logprob_of = |l: f32| {
        let p = (l - max).exp() / sum;
        if p > 0.0 {
            f64::from(p.ln())
        } else {
            f64::from(l) - f64::from(max) - exact_log_sum
        }
    };
    let chosen_logit = usize::try_from(chosen.0)
        .ok()
        .and_then(|i| logits.get(i))
        .copied()
        .unwrap_or(f32::NEG_INFINITY);
    let top = top
        .into_iter()
        .map(|(i, l)| (i as i32, logprob_of(l)))
        .collect();
    (logprob_of(chosen_logit), top)
}

/// The log-probability of `chosen` among `candidates` (by the
/// probabilities the draw normalised; 1 when the chain left it alone, or
/// for a greedy pick), and the `n` most probable of them, those of
/// probability 0 left out (as llama-server's `post_sampling_probs`).
fn after_sampling(
    candidates: Option<&[LlamaTokenData]>,
    chosen: LlamaToken,
    n: usize,
) -> (f64, Vec<(i32, f64)>) {
    let Some(candidates) = candidates else {
        let top = if n == 0 {
            Vec::new()
        } else {
            vec![(chosen.0, 0.0)]
        };
        return (0.0, top);
    };
    let p = candidates
        .iter()
        .find(|t| t.id() == chosen)
        .map_or(1.0, |t| t.p());
    let top = top_n(
        candidates
            .iter()
            .filter(|t| t.p() > 0.0)
            .map(|t| (t.id().0 as usize, t.p())),
        n,
    )
    .into_iter()
    .map(|(id, p)| (id as i32, f64::from(p).ln()))
    .collect();
    (f64::from(p).ln(), top)
}

/// The `n` items with the highest value, highest first (ties: the first
/// seen first), in one pass.
fn top_n(items: impl Iterator<Item = (usize, f32)>, n: usize) -> Vec<(usize, f32)> {
    let mut top: Vec<(usize, f32)> = Vec::with_capacity(n + 1);
    if n == 0 {
        return top;
    }
    for (i, v) in items {
        if top.len() == n && top.last().is_some_and(|&(_, low)| v <= low) {
            continue;
        }
        let at = top.partition_point(|&(_, t)| t >= v);
        top.insert(at, (i, v));
        top.truncate(n);
    }
    top
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The top list against a full sort, ties in first-seen order.
    #[test]
    fn top_n_is_a_stable_partial_sort() {
        let values = [0.5f32, 2.0, -1.0, 2.0, 7.5, 0.0, 7.5, 3.25];
        for n in 0..=values.len() + 1 {
            let mut sorted: Vec<(usize, f32)> = values.iter().copied().enumerate().collect();
            sorted.sort_by(|a, b| b.1.total_cmp(&a.1));
            sorted.truncate(n);
            assert_eq!(
                top_n(values.iter().copied().enumerate(), n),
                sorted,
                "n = {n}"
            );
        }
    }

    /// Log-probabilities against a direct softmax, summing to 1 over the
    /// vocabulary; an unlikely token keeps a finite value.
    #[test]
    fn before_sampling_is_a_log_softmax() {
        let logits = [1.0f32, 3.0, -2.0, 3.0, -200.0];
        let total: f64 = logits.iter().map(|&l| f64::from(l).exp()).sum();
        for (i, &l) in logits.iter().enumerate() {
            let (lp, _) = before_sampling(&logits, LlamaToken(i as i32), 0);
            let direct = (f64::from(l).exp() / total).ln();
            assert!(
                (lp - direct).abs() < 1e-6,
                "token {i}: {lp} against {direct}"
            );
            assert!(lp.is_finite());
        }
        let (_, top) = before_sampling(&logits, LlamaToken(0), 3);
        assert_eq!(top.iter().map(|t| t.0).collect::<Vec<_>>(), vec![1, 3, 0]);
        let sum: f64 = (0..logits.len())
            .map(|i| before_sampling(&logits, LlamaToken(i as i32), 0).0.exp())
            .sum();
        assert!((sum - 1.0).abs() < 1e-6);
    }

    /// After sampling: the draw's probabilities, zero ones left out; a
    /// greedy pick is certain.
    #[test]
    fn after_sampling_reads_the_candidates() {
        let candidates = [
            LlamaTokenData::new(LlamaToken(7), 2.0, 0.25),
            LlamaTokenData::new(LlamaToken(3), 3.0, 0.75),
            LlamaTokenData::new(LlamaToken(9), -1.0, 0.0),
        ];
        let (lp, top) = after_sampling(Some(&candidates), LlamaToken(7), 5);
        assert!((lp - 0.25f64.ln()).abs() < 1e-9);
        assert_eq!(top.iter().map(|t| t.0).collect::<Vec<_>>(), vec![3, 7]);
        assert_eq!(
            after_sampling(None, LlamaToken(4), 2),
            (0.0, vec![(4, 0.0)])
        );
    }
}
