//! How relevant documents are to a query, in one of two ways, chosen by the
//! model:
//!
//! - A cross-encoder (a GGUF that declares rank pooling, as llama.cpp's
//!   conversion of bge-reranker does) reads query and document together; the
//!   score is the sigmoid of its classification head's output. The pair is
//!   laid out as llama.cpp's embedding tool and server lay it out: query,
//!   end-of-sequence, separator, document, end-of-sequence, each special
//!   token where the vocabulary adds it.
//! - Any other instruct model is asked, in Qwen3-Reranker's words, whether
//!   the document meets the query; the score is P(yes) / (P(yes) + P(no))
//!   from the logits of its next token. The documents of one call share the
//!   evaluation of everything before them (system prompt, instruction,
//!   query), and are evaluated together, several sequences per batch.

use std::path::Path;

use llama_cpp_2::token::LlamaToken;

use super::embed::{self, BATCH_TOKENS};
use super::model::Model;
use crate::backend::error::{InferenceError, InferenceResult, List, LoadError};
use crate::backend::params::{GenerateParams, LoadParams, Pooling, StopCheck};
use crate::backend::Backend;
use crate::chat::{Message, Role};
use crate::engine::cache::prefix_cache::common_prefix;
use crate::engine::llama::context::{cells_for, BatchToken, Context, Shape};
use crate::engine::llama::shelf::{Fit, Shelf};

/// The instruction of the yes/no judgement when the caller gives none
/// (Qwen3-Reranker's default).
pub const DEFAULT_INSTRUCTION: &str =
    "Given a web search query, retrieve relevant passages that answer the query";

/// The system prompt of the yes/no judgement (Qwen3-Reranker's).
const JUDGE_SYSTEM: &str = "Judge whether the Document meets the requirements based on the Query and the Instruct provided. Note that the answer can only be \"yes\" or \"no\".";

/// Appended after the opening of the assistant's turn for templates that
/// know reasoning blocks: an empty one, so the next token is the answer.
const EMPTY_THOUGHT: &str = "<think>\n\n</think>\n\n";

/// Documents judged in one batch, each in a KV stream of its own.
const JUDGE_SEQUENCES: u32 = 8;

/// How a reranker was asked to load.
#[derive(Debug, Clone)]
pub struct RerankParams {
    pub load: LoadParams,
    /// Tokens one query and document may take together (at most the model's
    /// trained context).
    pub n_ctx: u32,
    /// What relevance means, for the yes/no judgement.
    pub instruction: Option<String>,
}

/// How the model scores.
#[derive(Debug, Clone, Copy)]
enum Judge {
    /// The classification head of a cross-encoder.
    Head,
    /// The next-token odds of "yes" against "no" (each with its
    /// capitalised form when that is a single token too).
    YesNo {
        yes: [Option<LlamaToken>; 2],
        no: [Option<LlamaToken>; 2],
        /// The template knows `<think>` blocks.
        think: bool,
    },
}

/// The context of the yes/no judgement and what its sequence 0 holds: the
/// start that the prompts of the last call shared.
struct Judging {
    ctx: Context,
    prefix: Vec<LlamaToken>,
}

impl crate::engine::llama::shelf::Idle for Judging {
    fn rest(&mut self) {
        self.ctx.rest();
    }
}

/// A model that scores documents against queries.
pub struct Reranker {
    model: Model,
    judge: Judge,
    n_ctx: u32,
    instruction: String,
    /// Lent to one call at a time (see [`Shelf`]).
    judging: Shelf<Judging>,
}

impl std::fmt::Debug for Reranker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reranker")
            .field("path", &self.model.path())
            .field("judge", &self.judge)
            .finish()
    }
}

impl Reranker {
    /// Load the GGUF at `path` and find how it scores: a declared rank
    /// pooling makes it a cross-encoder; otherwise it must have a chat
    /// template and single tokens for "yes" and "no".
    pub fn load(path: &Path, params: &RerankParams) -> Result<Self, LoadError> {
        let load = LoadParams {
            embedding: true,
            pooling: None,
            ..params.load.clone()
        };
        let model = Model::load(path, &load)?;
        let judge = if model.declared_pooling() == Some(Pooling::Rank) {
            Judge::Head
        } else {
            let template = model.chat_template().ok_or_else(|| LoadError::CannotRerank {
                path: path.to_path_buf(),
                reason: "it declares no rank pooling (not a cross-encoder) and has no chat template to ask it with".to_owned(),
            })?;
            let single = |word: &str| {
                let tokens = model.tokenize(word, false);
                match tokens[..] {
                    [token] => Ok(token),
                    _ => Err(LoadError::CannotRerank {
                        path: path.to_path_buf(),
                        reason: format!(
                            "its vocabulary has no single token for \"{word}\" ({} tokens), which the yes/no judgement reads",
                            tokens.len()
                        ),
                    }),
                }
            };
            let capital = |word: &str| match model.tokenize(word, false)[..] {
                [token] => Some(token),
                _ => None,
            };
            Judge::YesNo {
                yes: [Some(single("yes")?), capital("Yes")],
                no: [Some(single("no")?), capital("No")],
                think: template.contains("<think>"),
            }
        };
        let trained = model.context_length();
        let n_ctx = if trained > 0 {
            params.n_ctx.min(trained)
        } else {
            params.n_ctx
        };
        Ok(Self {
            model,
            judge,
            n_ctx,
            instruction: params
                .instruction
                .clone()
                .unwrap_or_else(|| DEFAULT_INSTRUCTION.to_owned()),
            judging: Shelf::default(),
        })
    }

    /// The relevance of each of `documents` to `query`, in (0, 1), in order.
    pub fn scores(
        &self,
        query: &str,
        documents: &[String],
        stop: StopCheck,
    ) -> InferenceResult<Vec<f64>> {
        if documents.is_empty() {
            return Ok(Vec::new());
        }
        match self.judge {
            Judge::Head => {
                let pairs = documents
                    .iter()
                    .enumerate()
                    .map(|(i, d)| {
                        self.checked(self.pair(query, d))
                            .map_err(|e| e.in_list(List::Documents, i))
                    })
                    .collect::<InferenceResult<Vec<_>>>()?;
                let outputs = self.model.embed_tokens(&pairs, stop)?;
                Ok(outputs
                    .iter()
                    .map(|o| sigmoid(f64::from(o.first().copied().unwrap_or(0.0))))
                    .collect())
            }
            Judge::YesNo { yes, no, think } => {
                let prompts = documents
                    .iter()
                    .enumerate()
                    .map(|(i, d)| {
                        self.judgement(query, d, think)
                            .and_then(|p| self.checked(p))
                            .map_err(|e| e.in_list(List::Documents, i))
                    })
                    .collect::<InferenceResult<Vec<_>>>()?;
                // What comes before the document: where two judgements of
                // documents that differ from their first character part.
                let probe = |d: &str| self.judgement(query, d, think);
                let (a, b) = (probe("a")?, probe("b")?);
                let prefix = &a[..common_prefix(&a, &b)];
                let targets = [yes[0], yes[1], no[0], no[1]];
                let logits = self.judge_all(prefix, &prompts, targets, stop)?;
                Ok(logits
                    .iter()
                    .map(|l| sigmoid(log_sum_exp(&l[..2]) - log_sum_exp(&l[2..])))
                    .collect())
            }
        }
    }

    /// `tokens`, when they fit in the context.
    fn checked(&self, tokens: Vec<LlamaToken>) -> InferenceResult<Vec<LlamaToken>> {
        if tokens.len() > self.n_ctx as usize {
            return Err(InferenceError::PairTooLong {
                tokens: tokens.len(),
                n_ctx: self.n_ctx,
            });
        }
        Ok(tokens)
    }

    /// Query and document as a cross-encoder reads them.
    fn pair(&self, query: &str, document: &str) -> Vec<LlamaToken> {
        let vocab = self.model.model().vocab();
        let mut tokens = Vec::new();
        if vocab.should_add_bos() {
            tokens.push(vocab.bos());
        }
        tokens.extend(self.model.tokenize(query, false));
        if vocab.should_add_eos() {
            tokens.push(vocab.eos());
        }
        if vocab.should_add_sep() {
            tokens.push(vocab.sep());
        }
        tokens.extend(self.model.tokenize(document, false));
        if vocab.should_add_eos() {
            tokens.push(vocab.eos());
        }
        tokens
    }

    /// The yes/no question about `document`, rendered with the model's
    /// template and tokenized.
    fn judgement(
        &self,
        query: &str,
        document: &str,
        think: bool,
    ) -> InferenceResult<Vec<LlamaToken>> {
        let messages = [
            Message::new(Role::System, JUDGE_SYSTEM),
            Message::new(
                Role::User,
                format!(
                    "<Instruct>: {}\n<Query>: {query}\n<Document>: {document}",
                    self.instruction
                ),
            ),
        ];
        let mut prompt = self
            .model
            .chat_prompt(&messages, &GenerateParams::default())?;
        if think {
            prompt.push_template(EMPTY_THOUGHT);
        }
        Ok(self.model.chat_input(&prompt)?.tokens().to_vec())
    }

    /// The logits of `targets` after each of `prompts`, which all start
    /// with `prefix` up to the document. The prefix is evaluated once (or
    /// kept from the last call) in sequence 0; each prompt's sequence starts
    /// as a copy of it, in a KV stream of its own, and the rest of the
    /// prompts go in batches of several sequences. Every prompt is thereby
    /// computed with the same layout, whatever the other documents of the
    /// call: its score does not depend on them (llama.cpp's results change
    /// with where a token's neighbours sit in the cache).
    fn judge_all(
        &self,
        prefix: &[LlamaToken],
        prompts: &[Vec<LlamaToken>],
        targets: [Option<LlamaToken>; 4],
        stop: StopCheck,
    ) -> InferenceResult<Vec<[f64; 4]>> {
        let longest = prompts.iter().map(Vec::len).max().unwrap_or(1);
        // Every prompt fits in `n_ctx` (checked): so do the cells.
        let cells = u32::try_from(cells_for(longest as u64)).unwrap_or(u32::MAX);
        let shape = Shape::logits(cells, JUDGE_SEQUENCES + 1, BATCH_TOKENS);
        let kept = self.judging.take(|j| {
            if j.ctx.shape() == shape && j.ctx.is_usable() {
                Fit::Fits(0)
            } else {
                Fit::Misfit
            }
        });
        let mut state = match kept {
            Some(j) => j,
            None => Judging {
                ctx: self.model.new_context(shape)?,
                prefix: Vec::new(),
            },
        };
        let claim = self.model.claim();
        if let Some(claim) = &claim {
            state.ctx.set_threads(claim.threads());
        }
        state.ctx.set_stop(stop);
        let result = judge_in(&mut state, prefix, prompts, targets);
        if result.is_ok() {
            self.judging.put(state);
        }
        result
    }
}

/// [`Reranker::judge_all`] in `state`.
fn judge_in(
    state: &mut Judging,
    prefix: &[LlamaToken],
    prompts: &[Vec<LlamaToken>],
    targets: [Option<LlamaToken>; 4],
) -> InferenceResult<Vec<[f64; 4]>> {
    let ctx = &mut state.ctx;
    // Sequence 0 holds the prefix, evaluated in one piece: a prefix
    // evaluated in other pieces would differ in its last digits.
    if state.prefix != prefix {
        ctx.clear();
        state.prefix.clear();
        for chunk in prefix.chunks(ctx.batch_capacity()) {
            let start = state.prefix.len();
            ctx.decode_batch(chunk.iter().enumerate().map(|(i, &token)| BatchToken {
                token,
                seq: 0,
                pos: start + i,
                logits: false,
            }))?;
            state.prefix.extend_from_slice(chunk);
        }
    }

    // Where each prompt leaves the prefix (a document whose first token
    // merges with the text before it leaves it earlier), at least one token
    // from its end.
    let starts: Vec<usize> = prompts
        .iter()
        .map(|p| common_prefix(p, prefix).min(p.len() - 1))
        .collect();
    let lengths: Vec<usize> = prompts
        .iter()
        .zip(&starts)
        .map(|(p, &k)| p.len() - k)
        .collect();
    let mut out = Vec::with_capacity(prompts.len());
    let mut batch: Vec<BatchToken> = Vec::new();
    let budget = ctx.batch_capacity();
    for range in embed::pack(&lengths, budget, ctx.n_seq() as usize - 1) {
        let mut rows = Vec::with_capacity(range.len());
        for (i, doc) in range.clone().enumerate() {
            let seq = i as u32 + 1;
            ctx.share_sequence(0, seq);
            if starts[doc] < prefix.len() && !ctx.forget_sequence_from(seq, starts[doc]) {
                return Err(InferenceError::DecodeFailed {
                    detail: "could not drop the end of a copied prefix".to_owned(),
                });
            }
        }
        if let [doc] = range.clone().collect::<Vec<_>>()[..] {
            // Alone: its rest may be longer than a batch.
            let tail = &prompts[doc][starts[doc]..];
            let chunks = tail.len().div_ceil(budget);
            for (c, chunk) in tail.chunks(budget).enumerate() {
                let start = starts[doc] + c * budget;
                let last = c + 1 == chunks;
                ctx.decode_batch(chunk.iter().enumerate().map(|(j, &token)| BatchToken {
                    token,
                    seq: 1,
                    pos: start + j,
                    logits: last && j + 1 == chunk.len(),
                }))?;
                if last {
                    rows.push(chunk.len() - 1);
                }
            }
        } else {
            batch.clear();
            for (i, doc) in range.clone().enumerate() {
                let tail = &prompts[doc][starts[doc]..];
                batch.extend(tail.iter().enumerate().map(|(j, &token)| BatchToken {
                    token,
                    seq: i as u32 + 1,
                    pos: starts[doc] + j,
                    logits: j + 1 == tail.len(),
                }));
                rows.push(batch.len() - 1);
            }
            ctx.decode_batch(batch.iter().copied())?;
        }
        for row in rows {
            let logits = ctx.logits(row)?;
            out.push(targets.map(|t| {
                t.and_then(|t| logits.get(t.0 as usize))
                    .map_or(f64::NEG_INFINITY, |&l| f64::from(l))
            }));
        }
    }
    Ok(out)
}

/// `ln(sum(exp(x)))` without overflow; `-inf` for no finite term.
fn log_sum_exp(xs: &[f64]) -> f64 {
    let max = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if max == f64::NEG_INFINITY {
        return max;
    }
    max + xs.iter().map(|x| (x - max).exp()).sum::<f64>().ln()
}

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// The order of `scores`, best first, ties in input order; at most `top_k`.
pub fn ranking(scores: &[f64], top_k: Option<usize>) -> Vec<(usize, f64)> {
    let mut order: Vec<(usize, f64)> = scores.iter().copied().enumerate().collect();
    // Stable: equal scores keep their input order.
    order.sort_by(|a, b| b.1.total_cmp(&a.1));
    order.truncate(top_k.unwrap_or(order.len()));
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranking_is_best_first_with_ties_in_input_order() {
        let scores = [0.2, 0.9, 0.5, 0.9, 0.1];
        assert_eq!(
            ranking(&scores, None),
            vec![(1, 0.9), (3, 0.9), (2, 0.5), (0, 0.2), (4, 0.1)]
        );
        assert_eq!(ranking(&scores, Some(2)), vec![(1, 0.9), (3, 0.9)]);
        assert_eq!(ranking(&scores, Some(10)).len(), 5);
    }

    #[test]
    fn the_score_is_the_probability_of_yes_among_yes_and_no() {
        // Logits of yes, Yes, no, No: P(yes or Yes) / P(any of the four).
        let l = [1.0_f64, 2.0, 0.5, f64::NEG_INFINITY];
        let e: Vec<f64> = l.iter().map(|x| x.exp()).collect();
        let direct = (e[0] + e[1]) / (e[0] + e[1] + e[2] + e[3]);
        let score = sigmoid(log_sum_exp(&l[..2]) - log_sum_exp(&l[2..]));
        assert!((score - direct).abs() < 1e-12, "{score} vs {direct}");
        assert_eq!(log_sum_exp(&[f64::NEG_INFINITY]), f64::NEG_INFINITY);
        assert!((log_sum_exp(&[1000.0, 1000.0]) - (1000.0 + 2f64.ln())).abs() < 1e-9);
    }

    #[test]
    fn sigmoid_maps_the_logit_difference_to_the_yes_probability() {
        // P(yes) / (P(yes) + P(no)) = e^y / (e^y + e^n) = sigmoid(y - n).
        let (y, n) = (2.5_f64, 1.0_f64);
        let direct = y.exp() / (y.exp() + n.exp());
        assert!((sigmoid(y - n) - direct).abs() < 1e-12);
        assert_eq!(sigmoid(0.0), 0.5);
    }
}
