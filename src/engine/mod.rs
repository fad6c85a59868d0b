//! The generation engine: llama.cpp through llama-cpp-2. No PHP types here.
//!
//! In rooms, imports pointing one way (`model` → `decode` → `cache` →
//! `llama`):
//! - [`llama`]: llama.cpp itself — the process-wide runtime and its log,
//!   contexts with their thread pools, devices, the share of the cores, and
//!   the shelf that lends contexts to one call at a time;
//! - [`cache`]: what is kept between calls — the prompt prefix cache, the
//!   prefix store shared by processes, the table of persistent models;
//! - [`decode`]: where a token is chosen — the sampler, the generation loop
//!   (single, streamed, many sequences at once), fast-forward, prompt
//!   lookup, reasoning and output;
//! - [`model`]: a loaded model, the [`Backend`](crate::backend::Backend)
//!   that ties the rooms together, with [`embed`] (its embeddings) and
//!   [`rerank`] (a model that scores documents against a query).

pub mod cache;
pub mod decode;
pub mod embed;
pub mod llama;
pub mod model;
pub mod rerank;

pub use crate::backend::{
    FinishReason, GenerateParams, Generation, InferenceError, InferenceResult, LoadError,
    LoadParams, Piece, PieceKind, Pooling,
};
pub use crate::chat::{Message, Role};
pub use decode::stream::Stream;
pub use model::Model;
