//! A prompt as the engine reads it: tokens, and images at their positions.
//!
//! An image takes `n` positions of the prompt. In the token list each of
//! them holds a stand-in: a negative number (never a vocabulary token)
//! derived from the image's pixel hash and the position's place in it, so
//! everything that compares prompts by their tokens (the sessions kept, the
//! prompt cache, the shared store) matches the same image and never
//! another, with no change. Only evaluation looks at what a position is:
//! text runs are decoded as tokens, an image through its projector.

use std::sync::Arc;

use llama_cpp_2::token::LlamaToken;

use crate::backend::error::{InferenceError, InferenceResult};
use crate::chat::image::Image;
use crate::engine::llama::context::Context;
use crate::engine::llama::vision::{self, ImageChunk, Projector, Tokenized};

/// A prompt's tokens and images.
#[derive(Debug, Clone, Default)]
pub struct Input {
    tokens: Vec<LlamaToken>,
    images: Vec<Placed>,
    projector: Option<Arc<Projector>>,
}

/// An image's tokens at their first position in the prompt.
#[derive(Debug, Clone)]
pub struct Placed {
    pub start: usize,
    pub chunk: Arc<ImageChunk>,
}

impl Placed {
    pub fn end(&self) -> usize {
        self.start + self.chunk.n_tokens()
    }
}

/// A stretch of the prompt: text tokens, or one image.
#[derive(Debug)]
pub enum Run<'a> {
    Text {
        start: usize,
        tokens: &'a [LlamaToken],
    },
    Image(&'a Placed),
}

impl From<Vec<LlamaToken>> for Input {
    fn from(tokens: Vec<LlamaToken>) -> Self {
        Self {
            tokens,
            ..Self::default()
        }
    }
}

/// Bits of the digest each stand-in carries.
const STAND_IN_BITS: usize = 30;

/// Positions that carry the whole 256-bit digest between them.
const DIGEST_POSITIONS: usize = 256_usize.div_ceil(STAND_IN_BITS);

/// A stand-in for position `index` of the `chunk`-th image chunk of the
/// image with `digest`: negative. Position `index` carries the 30 bits of
/// the digest at `index % 9` (the ninth the last 16), mixed by SplitMix64
/// of the chunk and the position so that neighbours differ: for a given
/// chunk and position the mix is a bijection, so the first nine positions
/// of an image hold all 256 bits and two images share them only if their
/// SHA-256 does. (An image of fewer than nine positions carries 30 bits a
/// position; real projectors make dozens to hundreds.)
fn stand_in(digest: &[u8; 32], chunk: usize, index: usize) -> LlamaToken {
    let first = (index % DIGEST_POSITIONS) * STAND_IN_BITS;
    let mut bits = 0u32;
    for k in 0..STAND_IN_BITS {
        let at = first + k;
        let bit = digest.get(at / 8).map_or(0, |byte| (byte >> (at % 8)) & 1);
        bits |= u32::from(bit) << k;
    }
    let mut z = ((chunk as u64) << 32) ^ index as u64;
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    let mask = (1u32 << STAND_IN_BITS) - 1;
    let value = (bits ^ z as u32) & mask;
    // value < 2^30, so the stand-in lies in -2^30 ..= -1.
    LlamaToken(-1 - value as i32)
}

impl Input {
    /// An empty prompt whose images `projector` reads.
    pub fn with_projector(projector: Option<Arc<Projector>>) -> Self {
        Self {
            projector,
            ..Self::default()
        }
    }

    pub fn push_tokens(&mut self, tokens: &[LlamaToken]) {
        self.tokens.extend_from_slice(tokens);
    }

    /// Append `image` as the projector makes it: its own text tokens, if
    /// any, and its image tokens.
    pub fn push_image(&mut self, image: &Image) -> InferenceResult<()> {
        let projector = self.projector.clone().ok_or(InferenceError::NoVision)?;
        for (i, part) in projector.tokenize(image)?.into_iter().enumerate() {
            match part {
                Tokenized::Text(tokens) => self.tokens.extend(tokens),
                Tokenized::Image(chunk) => {
                    let start = self.tokens.len();
                    let n = chunk.n_tokens();
                    self.tokens
                        .extend((0..n).map(|k| stand_in(image.digest(), i, k)));
                    self.images.push(Placed {
                        start,
                        chunk: Arc::new(chunk),
                    });
                }
            }
        }
        Ok(())
    }

    /// Every position's token; an image's positions hold stand-ins.
    pub fn tokens(&self) -> &[LlamaToken] {
        &self.tokens
    }

    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// The text tokens alone (the images left out): what is read back as
    /// text.
    pub fn text_tokens(&self) -> Vec<LlamaToken> {
        self.tokens.iter().copied().filter(|t| t.0 >= 0).collect()
    }

    /// How many of the first `shared` positions (held already) may be kept
    /// before the prompt is evaluated: never its last (evaluated for its
    /// logits), never part of an image.
    pub fn reusable(&self, shared: usize) -> usize {
        self.boundary(shared.min(self.len().saturating_sub(1)))
    }

    /// `n`, or the start of the image that position `n` falls inside: a
    /// prefix of the prompt that can be kept (an image is read whole).
    fn boundary(&self, n: usize) -> usize {
        self.images
            .iter()
            .find(|p| p.start < n && n < p.end())
            .map_or(n, |p| p.start)
    }

    /// The image that starts at position `at`, if one does.
    pub fn image_at(&self, at: usize) -> Option<&Placed> {
        self.images.iter().find(|p| p.start == at)
    }

    /// Where the text that goes on from `from` ends: the next image's start,
    /// or the prompt's end.
    pub fn text_until(&self, from: usize) -> usize {
        self.images
            .iter()
            .map(|p| p.start)
            .find(|&s| s >= from)
            .unwrap_or(self.tokens.len())
    }

    /// The prompt from position `from` (a [`Input::boundary`]) on, as runs
    /// of text and images.
    pub fn runs(&self, from: usize) -> Vec<Run<'_>> {
        let mut runs = Vec::new();
        let mut at = from;
        while at < self.tokens.len() {
            if let Some(image) = self.image_at(at) {
                runs.push(Run::Image(image));
                at = image.end();
            } else {
                let end = self.text_until(at);
                runs.push(Run::Text {
                    start: at,
                    tokens: &self.tokens[at..end],
                });
                at = end;
            }
        }
        runs
    }

    /// The prompt must end with text: the logits of its last token are
    /// where generation starts.
    pub fn check_ends_with_text(&self) -> InferenceResult<()> {
        match self.images.last() {
            Some(last) if last.end() >= self.tokens.len() => Err(InferenceError::ImageFailed {
                detail: "the prompt ends with an image; a prompt must end with text".into(),
            }),
            _ => Ok(()),
        }
    }

    /// Encode the image `placed` and evaluate it in sequence `seq` of `ctx`
    /// at its positions.
    pub fn decode_image(
        &self,
        ctx: &mut Context,
        placed: &Placed,
        seq: u32,
        start: usize,
    ) -> InferenceResult<()> {
        let projector = self.projector.as_ref().ok_or(InferenceError::NoVision)?;
        let embd = projector.encode(&placed.chunk)?;
        vision::decode_image(ctx, &placed.chunk, &embd, projector.n_embd(), seq, start)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stand_ins_are_negative_distinct_and_stable() {
        let a = [7u8; 32];
        let mut b = a;
        b[0] = 8;
        let first: Vec<LlamaToken> = (0..64).map(|i| stand_in(&a, 0, i)).collect();
        assert!(first.iter().all(|t| t.0 < 0));
        let mut sorted = first.clone();
        sorted.sort_by_key(|t| t.0);
        sorted.dedup();
        assert_eq!(sorted.len(), 64);
        assert_eq!(first[3], stand_in(&a, 0, 3));
        assert_ne!(stand_in(&a, 0, 0), stand_in(&b, 0, 0));
        assert_ne!(stand_in(&a, 0, 0), stand_in(&a, 1, 0));
    }

    #[test]
    fn an_input_of_text_alone_is_one_run() {
        let input = Input::from(vec![LlamaToken(1), LlamaToken(2), LlamaToken(3)]);
        assert_eq!(input.boundary(2), 2);
        assert_eq!(
            (input.reusable(2), input.reusable(3), input.reusable(9)),
            (2, 2, 2)
        );
        assert_eq!(input.text_until(1), 3);
        let runs = input.runs(1);
        assert!(matches!(runs.as_slice(), [Run::Text { start: 1, tokens }] if tokens.len() == 2));
        assert!(input.check_ends_with_text().is_ok());
        assert_eq!(input.text_tokens().len(), 3);
    }

    /// The digest read back from the first nine stand-ins of a chunk.
    fn digest_from(chunk: usize, tokens: &[LlamaToken]) -> [u8; 32] {
        let mut digest = [0u8; 32];
        for (index, token) in tokens.iter().enumerate().take(DIGEST_POSITIONS) {
            let mine = stand_in(&[0; 32], chunk, index);
            let bits = (-1 - token.0) ^ (-1 - mine.0);
            for k in 0..STAND_IN_BITS {
                let at = index * STAND_IN_BITS + k;
                if at < 256 && (bits >> k) & 1 == 1 {
                    digest[at / 8] |= 1 << (at % 8);
                }
            }
        }
        digest
    }

    #[test]
    fn stand_ins_carry_the_whole_digest() {
        let mut a = [0u8; 32];
        for (i, b) in a.iter_mut().enumerate() {
            *b = (i as u8).wrapping_mul(37) ^ 0x5a;
        }
        for chunk in [0, 1, 7] {
            let tokens: Vec<LlamaToken> = (0..12).map(|k| stand_in(&a, chunk, k)).collect();
            assert!(tokens.iter().all(|t| t.0 < 0), "{tokens:?}");
            assert_eq!(digest_from(chunk, &tokens), a);
            // Every bit counts, the last byte's included: a digest that
            // differs in one bit anywhere gives other stand-ins.
            for bit in [0, 63, 64, 200, 255] {
                let mut b = a;
                b[bit / 8] ^= 1 << (bit % 8);
                let other: Vec<LlamaToken> = (0..12).map(|k| stand_in(&b, chunk, k)).collect();
                assert_ne!(
                    tokens, other,
                    "bit {bit} of the digest is not in the stand-ins"
                );
            }
        }
        // Neighbouring positions and chunks differ for the same digest.
        assert_ne!(stand_in(&a, 0, 0), stand_in(&a, 0, 9));
        assert_ne!(stand_in(&a, 0, 3), stand_in(&a, 1, 3));
    }

    #[test]
    fn an_image_needs_a_projector() {
        let image =
            Image::from_rgb(1, 1, vec![0, 0, 0], crate::chat::image::Bounds::DEFAULT).unwrap();
        let mut input = Input::default();
        assert_eq!(input.push_image(&image), Err(InferenceError::NoVision));
    }
}
