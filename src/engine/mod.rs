//! The generation engine: llama.cpp through llama-cpp-2. No PHP types here.

pub mod backend;
pub mod batch;
pub mod context;
pub mod devices;
pub mod embed;
pub mod error;
pub mod generate;
pub mod model;
pub mod output;
pub mod params;
pub mod persistent;
pub mod probe;
pub mod rerank;
pub mod sampler;
pub mod session;
pub mod stream;
pub mod think;
pub mod threads;

pub use crate::chat::{Message, Role};
pub use error::{InferenceError, InferenceResult, LoadError};
pub use generate::{FinishReason, Generation};
pub use model::{Model, ModelInfo};
pub use params::{GenerateParams, LoadParams, Pooling};
pub use stream::{Piece, PieceKind, Stream};
