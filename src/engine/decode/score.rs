//! The probability the model gives a reply it is handed (`Model::score()`):
//! the prompt evaluated once, each answer's tokens evaluated after it in one
//! batch, each token's log-probability read from the row before it, and the
//! context rewound to the prompt for the next answer.

use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;

use super::input::Input;
use super::logprobs::log_softmax_at;
use super::session::Session;
use crate::backend::error::{InferenceError, InferenceResult};
use crate::backend::params::GenerateParams;
use crate::engine::llama::threads::Claim;

/// The log-probability of each of `answers` (tokens) after `prompt` in
/// `session`, in order. Each answer must fit in the context after the
/// prompt. On an error the session's cache may not match what it records.
pub fn score(
    session: &mut Session,
    prompt: &Input,
    answers: &[Vec<LlamaToken>],
    params: &GenerateParams,
    claim: Option<&Claim>,
) -> InferenceResult<Vec<f64>> {
    if let Some(claim) = claim {
        session.set_threads(claim.threads());
    }
    session.set_stop(params.stop_check);
    session.evaluate_prompt(prompt, params.cache_prompt)?;
    let first = session.logits()?.to_vec();
    let base = session.len();
    let batch = session.batch_capacity().max(1);
    let mut scores = Vec::with_capacity(answers.len());
    for answer in answers {
        let Some((&head, rest)) = answer.split_first() else {
            scores.push(0.0);
            continue;
        };
        let mut total = log_softmax_at(&first, head);
        // Each token but the last is evaluated; the row of the i-th gives
        // the probability of the one after it.
        let fed = &answer[..answer.len() - 1];
        let mut next = rest.iter();
        for chunk in fed.chunks(batch) {
            session.evaluate_rows(chunk, 0, false)?;
            for i in 0..chunk.len() {
                if let Some(&token) = next.next() {
                    total += log_softmax_at(session.row(i)?, token);
                }
            }
        }
        session.rewind(base)?;
        scores.push(total);
    }
    Ok(scores)
}

/// The tokens of each answer as the model's tokenizer splits a reply's
/// text (control markup read as text), each checked to be non-empty and
/// to fit in `n_ctx` after `prompt_len` tokens.
pub fn answer_tokens(
    model: &LlamaModel,
    answers: &[String],
    prompt_len: usize,
    n_ctx: u32,
) -> InferenceResult<Vec<Vec<LlamaToken>>> {
    answers
        .iter()
        .enumerate()
        .map(|(index, text)| {
            let tokens = model.vocab().tokenize(text.as_bytes(), false, false);
            if tokens.is_empty() {
                return Err(
                    InferenceError::EmptyText.in_list(crate::backend::error::List::Answers, index)
                );
            }
            if prompt_len + tokens.len() > n_ctx as usize {
                return Err(InferenceError::PromptTooLong {
                    tokens: prompt_len + tokens.len(),
                    n_ctx,
                }
                .in_list(crate::backend::error::List::Answers, index));
            }
            Ok(tokens)
        })
        .collect()
}
