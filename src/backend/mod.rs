//! What every backend shares: the parameters of a call, its errors, what a
//! generation produces, and the [`Backend`] trait that a model loaded in
//! this process (`engine`) and a model served over HTTP (`remote`) both
//! implement. The PHP binding holds a `Backend` and never asks which one it
//! is.

pub mod error;
pub mod generation;
pub mod model_file;
pub mod params;
pub mod remote_error;
pub mod sampling;

use std::fmt::Debug;

use crate::chat::Message;

pub use error::{InferenceError, InferenceResult, LoadError};
pub use generation::{CacheSource, FinishReason, Generation, Piece, PieceKind, Timings};
pub use params::{GenerateParams, LoadParams, Pooling, StopCheck};
pub use remote_error::RemoteError;

/// What a generation starts from.
#[derive(Debug, Clone, Copy)]
pub enum Prompt<'a> {
    /// A transcript, rendered with the model's chat template; the reply may
    /// hold reasoning and tool calls.
    Chat(&'a [Message]),
    /// Text completed as it is: no template, no reasoning split.
    Text { text: &'a str, add_bos: bool },
}

/// Many prompts of one kind (`chatMany()`, `rawMany()`).
#[derive(Debug, Clone, Copy)]
pub enum Prompts<'a> {
    Chat(&'a [Vec<Message>]),
    Text { texts: &'a [String], add_bos: bool },
}

impl<'a> Prompts<'a> {
    pub fn len(&self) -> usize {
        match self {
            Prompts::Chat(prompts) => prompts.len(),
            Prompts::Text { texts, .. } => texts.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The prompts, in order.
    pub fn iter(&self) -> impl Iterator<Item = Prompt<'a>> + '_ {
        (0..self.len()).filter_map(|i| self.get(i))
    }

    /// The prompt at `index`.
    pub fn get(&self, index: usize) -> Option<Prompt<'a>> {
        match *self {
            Prompts::Chat(prompts) => prompts.get(index).map(|m| Prompt::Chat(m)),
            Prompts::Text { texts, add_bos } => {
                texts.get(index).map(|t| Prompt::Text { text: t, add_bos })
            }
        }
    }
}

/// A model that generates, embeds and tokenizes: loaded in this process or
/// reached over HTTP. A call the backend cannot honour as asked is an error
/// it returns, never a weaker answer. Threads may share one and call it at
/// once (thread-safe PHP runs requests as threads of one process).
pub trait Backend: Debug + Send + Sync {
    /// Generate from `prompt`: the reply to a transcript, or the
    /// completion of a text.
    fn generate(&self, prompt: Prompt<'_>, params: &GenerateParams) -> InferenceResult<Generation>;

    /// What [`Backend::generate`] makes, piece by piece.
    fn stream(
        self: std::sync::Arc<Self>,
        prompt: Prompt<'_>,
        params: GenerateParams,
    ) -> InferenceResult<Box<dyn PieceStream>>;

    /// Generate from many prompts, at most `parallel` at a time; the
    /// results are in the order of `prompts`, and the first failure is the
    /// call's, naming its prompt.
    fn generate_many(
        &self,
        prompts: Prompts<'_>,
        params: &GenerateParams,
        parallel: u32,
    ) -> InferenceResult<Vec<Generation>>;

    /// Render `messages` with the chat template and generate the reply.
    fn chat(&self, messages: &[Message], params: &GenerateParams) -> InferenceResult<Generation> {
        self.generate(Prompt::Chat(messages), params)
    }

    /// Complete `text` as plain text (no template, no reasoning split).
    fn raw(
        &self,
        text: &str,
        add_bos: bool,
        params: &GenerateParams,
    ) -> InferenceResult<Generation> {
        self.generate(Prompt::Text { text, add_bos }, params)
    }

    /// The reply to `messages`, piece by piece.
    fn stream_chat(
        self: std::sync::Arc<Self>,
        messages: &[Message],
        params: GenerateParams,
    ) -> InferenceResult<Box<dyn PieceStream>> {
        self.stream(Prompt::Chat(messages), params)
    }

    /// The plain-text completion of `text`, piece by piece.
    fn stream_raw(
        self: std::sync::Arc<Self>,
        text: &str,
        add_bos: bool,
        params: GenerateParams,
    ) -> InferenceResult<Box<dyn PieceStream>> {
        self.stream(Prompt::Text { text, add_bos }, params)
    }

    /// The replies to many conversations (see [`Backend::generate_many`]).
    fn chat_many(
        &self,
        prompts: &[Vec<Message>],
        params: &GenerateParams,
        parallel: u32,
    ) -> InferenceResult<Vec<Generation>> {
        self.generate_many(Prompts::Chat(prompts), params, parallel)
    }

    /// The completions of many plain-text prompts (see
    /// [`Backend::generate_many`]).
    fn raw_many(
        &self,
        texts: &[String],
        add_bos: bool,
        params: &GenerateParams,
        parallel: u32,
    ) -> InferenceResult<Vec<Generation>> {
        self.generate_many(Prompts::Text { texts, add_bos }, params, parallel)
    }

    /// The embeddings of `texts`, in order. `stop` is the caller's
    /// interrupt and deadline (a server's answers are bounded by its own
    /// `timeout`).
    fn embed_many(&self, texts: &[String], stop: StopCheck) -> InferenceResult<Vec<Vec<f32>>>;

    /// How many tokens `text` is, without BOS; with `parse_special`,
    /// control-token markup counts as one token each.
    fn count_tokens(&self, text: &str, parse_special: bool) -> InferenceResult<usize>;

    /// The log-probability of the model replying exactly each of `answers`
    /// to `messages` (the sum over the answer's tokens of their
    /// log-probability in the model's own distribution), in order.
    fn score(
        &self,
        messages: &[Message],
        answers: &[String],
        params: &GenerateParams,
    ) -> InferenceResult<Vec<f64>>;

    /// The text `chat()` gives the model for `messages` with `params`.
    fn render_prompt(
        &self,
        messages: &[Message],
        params: &GenerateParams,
    ) -> InferenceResult<String>;

    /// What the model is and where it runs, as `Model::info()` shows it.
    fn info(&self) -> serde_json::Value;

    /// The context length the model was trained for (0: unknown).
    fn context_length(&self) -> u32;

    /// The chat template the backend renders with, when it has one.
    fn chat_template(&self) -> Option<String>;

    /// How conversations are rendered: `'jinja'`, `'chatml'` or `'server'`.
    fn chat_template_kind(&self) -> &'static str;

    /// Why the option `key` of a generation cannot be honoured here (None:
    /// it can). Asked before anything else, so that such an option is
    /// refused rather than ignored. `off`: its value is `false`, which for
    /// a switch that is on by default asks only to do without it.
    fn refuses_option(&self, _key: &str, _off: bool) -> Option<&'static str> {
        None
    }

    /// Whether a stream holds the model, so that closing it now would cut
    /// the stream off.
    fn is_streaming(&self) -> bool {
        false
    }
}

/// A generation read piece by piece.
pub trait PieceStream: Debug {
    /// The next piece, or None once the generation has ended.
    fn next_piece(&mut self) -> InferenceResult<Option<Piece>>;

    /// The whole generation: the rest is generated first.
    fn finish(&mut self) -> InferenceResult<&Generation>;

    /// Stop generating; the pieces so far stay the result.
    fn cancel(&mut self);
}
