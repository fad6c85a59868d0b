//! What a generation produces, whichever backend ran it: the result of a
//! call ([`Generation`], [`FinishReason`]) and the pieces of a stream
//! ([`Piece`]).

use crate::chat::reasoning::{Part, Parts};
use crate::chat::tools::ToolCall;

/// Why generation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinishReason {
    /// The model emitted an end-of-generation token.
    Eos,
    /// `max_tokens` or the end of the context was reached.
    Length,
    /// A stop string occurred.
    Stop,
    /// The caller's interrupt or deadline (`GenerateParams::stop_check`) came.
    Timeout,
    /// The caller cancelled a stream.
    Cancelled,
    /// The reply ended after calling tools.
    ToolCalls,
}

impl FinishReason {
    pub fn as_str(self) -> &'static str {
        match self {
            FinishReason::Eos => "eos",
            FinishReason::Length => "length",
            FinishReason::Stop => "stop",
            FinishReason::Timeout => "timeout",
            FinishReason::Cancelled => "cancelled",
            FinishReason::ToolCalls => "tool_calls",
        }
    }
}

/// What one call produced.
#[derive(Debug, Clone, PartialEq)]
pub struct Generation {
    pub text: String,
    pub finish: FinishReason,
    /// Tokens sampled, the end-of-generation token excluded.
    pub tokens_generated: u32,
    pub prompt_tokens: u32,
    /// Prompt tokens whose cached keys and values were reused, not evaluated.
    pub reused_tokens: u32,
    /// The tool calls of the reply (complete ones only).
    pub tool_calls: Vec<ToolCall>,
    /// The text without its tool calls, when it had any.
    pub without_calls: Option<String>,
    /// Where the time went, and where the reused prompt tokens came from.
    pub timings: Timings,
    /// The tokens generated, each with whether the constraint forced it
    /// (see `fast_forward`); empty from a server.
    pub trace: Vec<(i32, bool)>,
    /// Each generated token's probability and the most likely ones beside
    /// it, when asked for (`GenerateParams::logprobs`).
    pub logprobs: Option<Vec<TokenLogprob>>,
}

/// One generated token's log-probability, and the most likely tokens at
/// its place (OpenAI's `logprobs.content[i]`, with llama-server's `id`).
#[derive(Debug, Clone, PartialEq)]
pub struct TokenLogprob {
    /// The token's id; `None` from a server whose API names tokens by
    /// their text only (vLLM's and SGLang's OpenAI API).
    pub id: Option<i32>,
    /// The token's text as bytes (control tokens rendered).
    pub bytes: Vec<u8>,
    /// Natural log of its probability; 0.0 for a token the constraint
    /// forced or the engine wrote (probability 1 under the mask).
    pub logprob: f64,
    /// Whether the token was forced (fast-forward) or written by the
    /// engine (closing a thought), not sampled.
    pub forced: bool,
    /// The most likely tokens, most likely first (`top_logprobs` of them).
    pub top: Vec<TopLogprob>,
    /// Where the token's text ends in the generation's text (bytes): what
    /// a stream's piece holds the token.
    pub text_end: usize,
}

/// One of the most likely tokens at a place.
#[derive(Debug, Clone, PartialEq)]
pub struct TopLogprob {
    pub id: Option<i32>,
    pub bytes: Vec<u8>,
    pub logprob: f64,
}

impl Generation {
    /// Where `other`'s tokens first differ from this generation's (the
    /// shorter one's length when one continues the other), with whether
    /// `other`'s token there was forced; `None` when they are the same.
    pub fn parts_from(&self, other: &Generation) -> Option<(usize, bool)> {
        let at = self
            .trace
            .iter()
            .zip(&other.trace)
            .position(|(a, b)| a.0 != b.0)
            .or((self.trace.len() != other.trace.len())
                .then(|| self.trace.len().min(other.trace.len())))?;
        Some((at, other.trace.get(at).is_some_and(|t| t.1)))
    }
}

/// Where the reused prompt tokens of a generation came from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum CacheSource {
    /// Every prompt token was evaluated.
    #[default]
    None,
    /// From this process: the context's own cells or a saved prefix.
    Memory,
    /// From the store shared by the processes of the machine.
    Shared,
}

impl CacheSource {
    pub fn as_str(self) -> &'static str {
        match self {
            CacheSource::None => "none",
            CacheSource::Memory => "memory",
            CacheSource::Shared => "shared",
        }
    }
}

/// How long the two halves of a generation took.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Timings {
    /// Reading the prompt: restoring cached prefixes and evaluating the rest.
    pub prompt_ms: f64,
    /// Sampling and evaluating the generated tokens.
    pub generation_ms: f64,
    pub cache: CacheSource,
    /// Generated tokens the constraint forced, appended without sampling
    /// (`fast_forward`); the others were sampled.
    pub forced_tokens: u32,
    /// The constraint admitted nothing but the end, so the end was not
    /// sampled: the last tokens were never evaluated (`fast_forward`).
    pub forced_end: bool,
    /// Tokens proposed by prompt lookup (`lookup`), and of those, the ones
    /// kept (the sampler picked them, or the constraint forced them).
    pub lookup_proposed: u32,
    pub lookup_accepted: u32,
    /// Evaluations of generated tokens (llama.cpp decode calls after the
    /// prompt's): tokens generated per step tells what batching saved.
    pub steps: u32,
}

/// What a piece of a stream is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PieceKind {
    /// Inside a `<think>` block of a chat reply, tags included.
    Reasoning,
    /// The rest of a chat reply.
    Answer,
    /// Plain-text completion: no parts.
    Text,
}

impl PieceKind {
    pub fn as_str(self) -> &'static str {
        match self {
            PieceKind::Reasoning => "reasoning",
            PieceKind::Answer => "answer",
            PieceKind::Text => "text",
        }
    }
}

/// One piece of a stream.
#[derive(Debug, Clone, PartialEq)]
pub struct Piece {
    pub kind: PieceKind,
    pub text: String,
    /// The log-probabilities of the tokens whose text ends in this piece
    /// (when asked for).
    pub logprobs: Option<Vec<TokenLogprob>>,
}

/// What a stream has handed out of its text, and how the rest is cut into
/// pieces: the one release rule of every backend's stream.
#[derive(Debug)]
pub struct Release {
    /// How a chat reply is cut into reasoning and answer; `None` for plain
    /// text.
    parts: Option<Parts>,
    /// How many bytes of the text have been handed out as pieces.
    released: usize,
    /// How many log-probability entries have been handed out (`None`: the
    /// pieces carry none).
    entries: Option<usize>,
}

impl Release {
    /// `logprobs`: whether each piece carries the log-probabilities of the
    /// tokens whose text ends in it.
    pub fn new(parts: Option<Parts>, logprobs: bool) -> Self {
        Self {
            parts,
            released: 0,
            entries: logprobs.then_some(0),
        }
    }

    /// The next piece of `text` (see [`Release::next`]), with the entries of
    /// `logprobs` (the tokens so far) whose text ends in it.
    pub fn next_with(
        &mut self,
        text: &str,
        complete: bool,
        logprobs: &[TokenLogprob],
    ) -> Option<Piece> {
        let mut piece = self.next(text, complete)?;
        if let Some(given) = &mut self.entries {
            let end = self.released;
            let rest = logprobs.get(*given..).unwrap_or_default();
            let n = rest.iter().take_while(|e| e.text_end <= end).count();
            piece.logprobs = Some(rest[..n].to_vec());
            *given += n;
        }
        Some(piece)
    }

    /// How many bytes of the text have been handed out.
    pub fn released(&self) -> usize {
        self.released
    }

    /// The next piece of `text` past what was handed out, if one is final
    /// (`complete`: the text will not grow).
    fn next(&mut self, text: &str, complete: bool) -> Option<Piece> {
        let piece = cut(&mut self.parts, text, self.released, complete)?;
        self.released += piece.text.len();
        Some(piece)
    }
}

/// The next piece of `text[from..]` (see [`Parts::next`]); plain text is one
/// piece of everything there is.
fn cut(parts: &mut Option<Parts>, text: &str, from: usize, complete: bool) -> Option<Piece> {
    if from >= text.len() {
        return None;
    }
    let (kind, end) = match parts {
        None => (PieceKind::Text, text.len()),
        Some(parts) => match parts.next(text, from, complete)? {
            (Part::Reasoning, end) => (PieceKind::Reasoning, end),
            (Part::Answer, end) => (PieceKind::Answer, end),
        },
    };
    (end > from).then(|| Piece {
        kind,
        text: text[from..end].to_owned(),
        logprobs: None,
    })
}
