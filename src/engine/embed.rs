//! Embeddings: texts packed into as few llama.cpp batches as fit, each text
//! a sequence of its own, every batch decoded once and its pooled vectors
//! read per sequence.

use std::ops::Range;

use llama_cpp_2::token::LlamaToken;

use crate::backend::error::{InferenceError, InferenceResult};
use crate::backend::params::Pooling;
use crate::engine::llama::context::{
    cells_for, BatchToken, Computes, Context, Shape, MAX_SEQUENCES,
};

/// Most texts one batch carries.
pub const BATCH_SEQUENCES: u32 = 64;

/// The tokens one batch aims at (more when one text is longer). Sequences of
/// one batch are masked from each other, not skipped, so attention grows
/// with the square of the batch. On all-MiniLM-L6-v2, 1,000 sentences of 16
/// tokens took 2.47 s in batches of 128 or 256 tokens, 2.71 s in batches of
/// 512 and 2.69 s in batches of 32 (2 cores, flash attention on).
pub const BATCH_TOKENS: u32 = 256;

/// The context for embedding texts whose longest is `longest` tokens: one
/// pool of cells shared by the texts of a batch (cleared after each).
pub fn shape_for(longest: usize, pooling: Option<Pooling>) -> Shape {
    let cells = u32::try_from(cells_for(longest as u64)).unwrap_or(u32::MAX);
    let n_ctx = BATCH_TOKENS.max(cells);
    Shape {
        n_ctx,
        n_seq: BATCH_SEQUENCES.min(MAX_SEQUENCES),
        n_batch: n_ctx,
        shared_cells: true,
        output: Computes::Embeddings(pooling),
    }
}

/// Split texts of `lengths` tokens, in order, into batches of at most
/// `budget` tokens and `max_seqs` texts (a text longer than `budget` gets a
/// batch of its own).
pub fn pack(lengths: &[usize], budget: usize, max_seqs: usize) -> Vec<Range<usize>> {
    let mut batches = Vec::new();
    let (mut start, mut tokens) = (0, 0);
    for (i, &len) in lengths.iter().enumerate() {
        let full = i > start && (tokens + len > budget || i - start >= max_seqs);
        if full {
            batches.push(start..i);
            (start, tokens) = (i, 0);
        }
        tokens += len;
    }
    if start < lengths.len() {
        batches.push(start..lengths.len());
    }
    batches
}

/// The pooled vector of each of `texts` (tokenized), in order, computed in
/// `ctx` (an embeddings context of [`shape_for`] the longest text).
pub fn embed(ctx: &mut Context, texts: &[Vec<LlamaToken>]) -> InferenceResult<Vec<Vec<f32>>> {
    if ctx.pooling() == Some(Pooling::None) {
        return Err(InferenceError::NoPooling);
    }
    let lengths: Vec<usize> = texts.iter().map(Vec::len).collect();
    let mut out = Vec::with_capacity(texts.len());
    let mut batch = Vec::new();
    for range in pack(&lengths, ctx.batch_capacity(), ctx.n_seq() as usize) {
        batch.clear();
        for (seq, text) in texts[range.clone()].iter().enumerate() {
            batch.extend(text.iter().enumerate().map(|(pos, &token)| BatchToken {
                token,
                seq: seq as u32,
                pos,
                logits: true,
            }));
        }
        // The cells of the previous batch would be attended to otherwise
        // (a model without a KV cache has none to clear).
        ctx.clear();
        ctx.decode_batch(batch.iter().copied())?;
        for seq in 0..range.len() {
            out.push(ctx.sequence_embedding(seq as u32)?.to_vec());
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_are_packed_in_order_within_both_limits() {
        assert_eq!(pack(&[3, 3, 3, 3], 6, 10), vec![0..2, 2..4]);
        assert_eq!(pack(&[3, 3, 3, 3], 100, 3), vec![0..3, 3..4]);
        assert_eq!(pack(&[5, 1, 1, 5], 6, 10), vec![0..2, 2..4]);
        // A text over the budget goes alone.
        assert_eq!(pack(&[2, 9, 2], 6, 10), vec![0..1, 1..2, 2..3]);
        assert_eq!(pack(&[], 6, 10), Vec::<Range<usize>>::new());
    }

    #[test]
    fn the_context_holds_the_longest_text_in_steps() {
        assert_eq!(shape_for(10, None).n_ctx, BATCH_TOKENS);
        assert_eq!(shape_for(300, None).n_ctx, 512);
        assert_eq!(shape_for(600, None).n_ctx, 768);
        assert_eq!(shape_for(600, None).n_batch, 768);
        assert!(shape_for(1, None).shared_cells);
    }
}
