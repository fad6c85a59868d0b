//! `infer`: a PHP extension that runs local GGUF models in-process through
//! llama.cpp. The engine and the converters are plain Rust; `php` is the
//! binding, compiled only with the `php` feature (on by default).

/// The backend contract: the `Backend` trait that a model in this process
/// and a model over HTTP implement, and what they share (parameters,
/// errors, results).
#[cfg(feature = "engine")]
pub mod backend;
/// Rendering conversations (templates, tool calls, reasoning): text only.
#[cfg(feature = "engine")]
pub mod chat;
#[cfg(feature = "engine")]
pub mod engine;
pub mod grammar;
mod hashing;
/// Where `Model::load()` gets its model: this request, the process
/// (persistent) or the shared server.
#[cfg(feature = "engine")]
pub mod loader;
/// Directories shared between processes, opened and proven to be this
/// user's (the shared server's state, the prompt store): in the crate the
/// supervisor links too.
#[cfg(feature = "engine")]
pub use infer_shared::private_dir;
/// The HTTP backend (`Model::connect()`): llama-server and OpenAI-compatible
/// servers.
#[cfg(feature = "engine")]
pub mod remote;
pub mod schema;

#[cfg(feature = "php")]
mod php;
