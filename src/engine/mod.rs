//! The generation engine: llama.cpp through llama-cpp-2. No PHP types here.

pub mod api;
pub mod backend;
pub mod batch;
pub mod context;
pub mod devices;
pub mod embed;
pub mod generate;
pub mod lookup;
pub mod model;
pub mod output;
pub mod persistent;
pub mod prefix_cache;
pub mod prefix_store;
pub mod probe;
pub mod progress;
pub mod rerank;
pub mod sampler;
pub mod session;
pub mod shelf;
pub mod stream;
pub mod think;
pub mod threads;

pub use crate::chat::{Message, Role};
pub use crate::common::{
    FinishReason, GenerateParams, Generation, InferenceError, InferenceResult, LoadError,
    LoadParams, Piece, PieceKind, Pooling,
};
pub use model::{Model, ModelInfo};
pub use stream::Stream;
