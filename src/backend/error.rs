//! Errors of the generation engine: [`LoadError`] when a model cannot be
//! loaded, [`InferenceError`] when a call on a loaded model fails.

use std::path::PathBuf;

/// `Model::load()` could not produce a model.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum LoadError {
    #[error("model file not found: {}", .path.display())]
    NotFound { path: PathBuf },
    #[error("model path is a directory, not a GGUF file: {}", .path.display())]
    IsDirectory { path: PathBuf },
    #[error("model path is not a regular file: {}", .path.display())]
    NotAFile { path: PathBuf },
    #[error("model file is empty: {}", .path.display())]
    Empty { path: PathBuf },
    #[error("cannot read model file {}: {reason}", .path.display())]
    Unreadable { path: PathBuf, reason: String },
    #[error("not a GGUF file (the first 4 bytes are {found:?}, expected \"GGUF\"): {}", .path.display())]
    NotGguf { path: PathBuf, found: String },
    #[error("model path contains a NUL byte")]
    NulInPath,
    #[error("model path is not valid UTF-8: {}", .path.display())]
    PathNotUtf8 { path: PathBuf },
    #[error("llama.cpp could not load {}: {detail}", .path.display())]
    Rejected { path: PathBuf, detail: String },
    #[error("n_threads = {n_threads} is outside the range llama.cpp supports (1 to {max})")]
    ThreadCount { n_threads: u32, max: u32 },
    #[error("pooling 'rank' needs a cross-encoder, and {} declares no rank pooling (it has no classification head)", .path.display())]
    NoRankHead { path: PathBuf },
    #[error("{} cannot rerank: {reason}", .path.display())]
    CannotRerank { path: PathBuf, reason: String },
    #[error("{asked} asks for a GPU, but this build of infer has no GPU backend (compiled backends: {backends}); build the extension with one: `make build GPU=cuda` (or vulkan, metal), see docs/getting-started.md, \"GPU builds\"")]
    NoGpuBackend { asked: String, backends: String },
    #[error("{asked} asks for a GPU, but no GPU device was found (compiled backends: {backends}; devices: {found}); check the driver, or leave n_gpu_layers at 0 to run on the CPU")]
    NoGpuDevice {
        asked: String,
        backends: String,
        found: String,
    },
    #[error("main_gpu = {index} is not a GPU device: {count} found ({names})")]
    NoSuchGpu {
        index: u32,
        count: usize,
        names: String,
    },
    #[error("llama.cpp backend could not be initialised: {reason}")]
    Backend { reason: String },
    /// The projector (`mmproj`) could not be loaded, or does not fit the
    /// model.
    #[error("the image projector {} could not be used with this model: {detail}", .path.display())]
    ProjectorRejected { path: PathBuf, detail: String },
    /// A LoRA adapter could not be loaded, or does not fit the model.
    #[error("the LoRA adapter '{name}' ({}) cannot be used with this model: {detail}", .path.display())]
    LoraRejected {
        name: String,
        path: PathBuf,
        detail: String,
    },
    /// Two adapters of one load with the same name, or an empty one.
    #[error("option \"lora\": every adapter needs a name of its own, and '{name}' is empty or given twice (name them with 'name' => …)")]
    LoraName { name: String },
    /// `['shared' => true]`: the shared server is not configured for this
    /// model, or cannot be started or reached.
    #[error("{detail}")]
    Shared { detail: String },
    /// `Model::connect()` could not reach the server or use its model.
    #[error(transparent)]
    Remote(#[from] super::RemoteError),
}

/// A call on a loaded model failed.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum InferenceError {
    #[error("the model is busy with another call")]
    Busy,
    #[error("a stream is in progress on this model: iterate it to the end, cancel() it or let it go first")]
    StreamInProgress,
    #[error("prompt is {tokens} tokens, which does not fit in a context of {n_ctx} tokens")]
    PromptTooLong { tokens: usize, n_ctx: u32 },
    #[error("prompt is empty: it encodes to no tokens")]
    EmptyPrompt,
    #[error("prompts must not be empty")]
    NoPrompts,
    #[error("answers must not be empty")]
    NoAnswers,
    #[error("prompt {index}: {source}")]
    InPrompt {
        index: usize,
        source: Box<InferenceError>,
    },
    /// The conversation could not be rendered.
    #[error(transparent)]
    Chat(#[from] crate::chat::ChatError),
    /// The tools' grammar was refused (never for tools whose arguments
    /// converted).
    #[error("the grammar of the tool calls could not be built: {detail}")]
    ToolGrammar { detail: String },
    #[error(
        "a context of {n_ctx} tokens exceeds the context length the model was trained for ({max})"
    )]
    ContextTooLarge { n_ctx: u32, max: u32 },
    #[error("could not create a context of {n_ctx} tokens: {detail}")]
    ContextFailed { n_ctx: u32, detail: String },
    #[error("decoding failed: {detail}")]
    DecodeFailed { detail: String },
    /// The stop check (`GenerateParams::stop_check`) aborted an evaluation; what
    /// it had evaluated before is dropped from the cache again.
    #[error("the evaluation was stopped by the time limit")]
    Aborted,
    #[error("the model was not loaded for embeddings")]
    NotForEmbeddings,
    #[error("the model's pooling is none, which gives a vector per token, not one per text")]
    NoPooling,
    #[error("text is empty")]
    EmptyText,
    #[error("text is {tokens} tokens, more than the model's context of {max}")]
    TextTooLong { tokens: usize, max: u32 },
    #[error("query and document are {tokens} tokens together, more than the context of {n_ctx}")]
    PairTooLong { tokens: usize, n_ctx: u32 },
    #[error("{} {index}: {source}", .list.item())]
    InList {
        list: List,
        index: usize,
        source: Box<InferenceError>,
    },
    #[error("llama.cpp rejected the grammar: {detail}")]
    GrammarRejected { detail: String },
    /// An option whose value only the model can judge (a token id, a text
    /// to tokenize).
    #[error("option \"{key}\" {detail}")]
    InvalidOption { key: &'static str, detail: String },
    /// An image given to a model loaded without a projector.
    #[error(
        "the prompt has an image, but the model was loaded without an image projector (mmproj)"
    )]
    NoVision,
    /// The projector could not turn an image into the model's input.
    #[error("the image could not be read by the model's projector: {detail}")]
    ImageFailed { detail: String },
    #[error(
        "the grammar allows no token at this point of the output (a rule that can never complete)"
    )]
    GrammarDeadEnd,
    /// The model's logits hold NaN or +inf: its computation overflowed.
    #[error("the model computed logits that are not numbers (NaN or infinite): its computation overflowed (a LoRA adapter at too large a scale, or damaged weights), so no token can be chosen or scored")]
    LogitsNotNumbers,
    /// The samplers left no token the grammar allows.
    #[error("the samplers leave no token the grammar allows at this point of the output (a logit_bias bans every one of them)")]
    NothingAllowedLeft,
    /// A call on a connected model failed on the way to the server or there.
    #[error(transparent)]
    Remote(#[from] super::RemoteError),
}

impl From<crate::chat::template::TemplateError> for InferenceError {
    fn from(e: crate::chat::template::TemplateError) -> Self {
        InferenceError::Chat(e.into())
    }
}

impl From<crate::chat::tools::ToolFormatError> for InferenceError {
    fn from(e: crate::chat::tools::ToolFormatError) -> Self {
        InferenceError::Chat(e.into())
    }
}

impl InferenceError {
    /// This error, as the error of the `index`-th item of `list`.
    pub fn in_list(self, list: List, index: usize) -> Self {
        match self {
            already @ InferenceError::InList { .. } => already,
            other => InferenceError::InList {
                list,
                index,
                source: Box::new(other),
            },
        }
    }

    /// This error without the position in a list (for a call on one item).
    pub fn outside_list(self) -> Self {
        match self {
            InferenceError::InList { source, .. } => *source,
            other => other,
        }
    }

    /// This error, as the error of the `index`-th prompt of a call with many.
    pub fn in_prompt(self, index: usize) -> Self {
        match self {
            already @ InferenceError::InPrompt { .. } => already,
            other => InferenceError::InPrompt {
                index,
                source: Box::new(other),
            },
        }
    }
}

/// The lists of a call whose items an error can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum List {
    /// The texts to embed.
    Texts,
    /// The documents to rank.
    Documents,
    /// The answers to score.
    Answers,
}

impl List {
    pub fn name(self) -> &'static str {
        match self {
            List::Texts => "texts",
            List::Documents => "documents",
            List::Answers => "answers",
        }
    }

    /// What one item is called.
    pub fn item(self) -> &'static str {
        match self {
            List::Texts => "text",
            List::Documents => "document",
            List::Answers => "answer",
        }
    }
}

pub type InferenceResult<T> = Result<T, InferenceError>;
