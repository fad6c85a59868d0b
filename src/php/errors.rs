//! The binding's errors: mistakes in PHP arguments and options (which the
//! engine never sees), and the engine's errors worded for PHP callers. Each
//! maps to one exception class.

use std::path::PathBuf;

use ext_php_rs::exception::PhpException;

use super::exceptions::{inference_exception, model_load_exception};
use crate::engine::{InferenceError, LoadError};

/// `Model::load()` failed: a `ModelLoadException`.
#[derive(Debug, thiserror::Error)]
pub enum LoadCallError {
    #[error("option \"{key}\" {expected}")]
    InvalidOption { key: String, expected: String },
    /// Worded as PHP's own warning for file functions.
    #[error("open_basedir restriction in effect. File({}) is not within the allowed path(s): ({allowed})", .path.display())]
    OpenBasedir { path: PathBuf, allowed: String },
    /// PHP forbids its scripts to read from URLs; connecting is one.
    #[error("Model::connect() reads from a URL, which this PHP forbids (allow_url_fopen is off); set allow_url_fopen=1 in php.ini to connect to a server")]
    UrlFopenOff,
    #[error(transparent)]
    Engine(#[from] LoadError),
}

/// A call on a model failed: an `InferenceException`.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    #[error("model has been closed")]
    Closed,
    #[error("{what} is not valid UTF-8 (invalid byte at offset {offset})")]
    NotUtf8 { what: &'static str, offset: usize },
    #[error("{name} must be {expected}, got {got}")]
    InvalidArgument {
        name: &'static str,
        expected: &'static str,
        got: String,
    },
    #[error("option \"{key}\" {expected}")]
    InvalidOption { key: String, expected: String },
    #[error("{0}")]
    InvalidConstraint(String),
    #[error("{what} must be a list (keys 0, 1, 2, ... in order), but entry {position} has key {key}; pass array_values() of it to drop the keys")]
    NotAList {
        what: &'static str,
        position: usize,
        key: String,
    },
    #[error("{what}[{index}] must be {expected}, got {found}")]
    WrongElement {
        what: &'static str,
        index: usize,
        expected: &'static str,
        found: String,
    },
    #[error("{what}[{index}] is not valid UTF-8 (invalid byte at offset {offset})")]
    ElementNotUtf8 {
        what: &'static str,
        index: usize,
        offset: usize,
    },
    #[error("cannot compare embeddings of {left} and {right} dimensions (they come from different models)")]
    DimensionMismatch { left: usize, right: usize },
    #[error("{what} is not valid UTF-8 (invalid byte at offset {offset})")]
    TextNotUtf8 { what: String, offset: usize },
    #[error(
        "packed embedding is {bytes} bytes, not a whole number of float32 values (4 bytes each)"
    )]
    PackedLength { bytes: usize },
    #[error("packed embedding holds a value that is not a finite number at index {index}")]
    PackedNotFinite { index: usize },
    #[error("internal error: {0}")]
    Internal(String),
    #[error("{what} contains a NUL byte at offset {offset}")]
    NulByte { what: String, offset: usize },
    #[error("a Stream is iterated once: this one is past its first piece already; its response() holds the whole result")]
    IteratedTwice,
    #[error("{}", engine_message(.0))]
    Engine(#[from] InferenceError),
}

/// The engine's message, with its parameters named as PHP callers know them.
fn engine_message(e: &InferenceError) -> String {
    match e {
        InferenceError::PromptTooLong { tokens, n_ctx } => format!(
            "prompt is {tokens} tokens, which does not fit in nCtx = {n_ctx}; raise nCtx or shorten the prompt"
        ),
        InferenceError::ContextTooLarge { n_ctx, max } => format!(
            "nCtx = {n_ctx} exceeds the context length the model was trained for ({max})"
        ),
        InferenceError::ContextFailed { n_ctx, detail } => {
            format!("could not create a context of nCtx = {n_ctx}: {detail}")
        }
        InferenceError::InPrompt { index, source } => match &**source {
            InferenceError::PromptTooLong { tokens, n_ctx } => format!(
                "prompt {index} is {tokens} tokens, which does not fit in nCtx = {n_ctx}; raise nCtx or shorten the prompt"
            ),
            InferenceError::EmptyPrompt => {
                format!("prompt {index} is empty: it encodes to no tokens")
            }
            other => format!("prompt {index}: {}", engine_message(other)),
        },
        InferenceError::NoVision => "the prompt has an image, but the model was loaded without an image projector: load it with Model::load($path, ['mmproj' => $projectorPath])".to_owned(),
        InferenceError::NotForEmbeddings => {
            "the model was not loaded for embeddings: load it with ['embedding' => true]".to_owned()
        }
        InferenceError::NoPooling => "the model was loaded with 'pooling' => 'none', which gives a vector per token: load it with 'mean', 'cls' or 'last' (or leave 'pooling' out to use the GGUF's)".to_owned(),
        InferenceError::TextTooLong { tokens, max } => format!(
            "text is {tokens} tokens, more than the model's context of {max} (contextLength()); shorten or split it"
        ),
        InferenceError::InList {
            list,
            index,
            source,
        } => format!("{}[{index}]: {}", list.name(), engine_message(source)),
        InferenceError::PairTooLong { tokens, n_ctx } => format!(
            "query and document are {tokens} tokens together, more than the context of {n_ctx} (option n_ctx, at most the model's trained context)"
        ),
        other => other.to_string(),
    }
}

impl From<LoadCallError> for PhpException {
    fn from(e: LoadCallError) -> Self {
        model_load_exception(e.to_string())
    }
}

impl From<LoadError> for PhpException {
    fn from(e: LoadError) -> Self {
        LoadCallError::from(e).into()
    }
}

impl From<CallError> for PhpException {
    fn from(e: CallError) -> Self {
        inference_exception(e.to_string())
    }
}

impl From<InferenceError> for PhpException {
    fn from(e: InferenceError) -> Self {
        CallError::from(e).into()
    }
}
