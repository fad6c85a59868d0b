//! `infer`: a PHP extension that runs local GGUF models in-process through
//! llama.cpp. The engine and the converters are plain Rust; `php` is the
//! binding, compiled only with the `php` feature (on by default).

#[cfg(feature = "engine")]
pub mod engine;
pub mod grammar;
pub mod schema;

#[cfg(feature = "php")]
mod php;
