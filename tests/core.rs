//! The integration tests, as one binary: each file beside this one is a
//! module of it. One binary links the crate and llama.cpp once (with
//! link-time optimisation, that is most of building a test binary); run
//! one file's tests with `cargo test --release --no-default-features
//! --features engine --test core soundness::`. `checker_vs_llama` has a
//! `main` of its own and stays a binary apart.

#[cfg(feature = "engine")]
mod common;

mod chat_templates;
mod fast_forward;
mod fuzz_regressions;
mod lookup;
mod prompt_cache;
mod sampler;
mod schema_errors;
mod schema_grammar;
mod schema_keywords;
mod soundness;
mod threads;
mod tool_calls;
mod xgrammar_dialect;
