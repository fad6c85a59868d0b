//! Shared by the integration tests: the model whose vocabulary drives
//! llama.cpp's grammar engine.
#![allow(dead_code)] // each test target uses part of it

use std::path::PathBuf;

use infer::engine::decode::probe::GrammarProbe;

mod paths {
    include!("paths.rs");
}

/// The default model (`make model` fetches it), or `INFER_MODEL`; fails when
/// the file is missing.
pub fn model_path() -> PathBuf {
    let path = paths::model_path();
    assert!(
        path.is_file(),
        "model not found at {}: run `make model` or set INFER_MODEL",
        path.display()
    );
    path
}

pub fn probe() -> GrammarProbe {
    GrammarProbe::new(&model_path()).expect("load the vocabulary")
}

/// Qwen2.5-Coder-0.5B-Instruct (`make qwen-model`), or `INFER_QWEN_MODEL`;
/// fails when the file is missing.
pub fn qwen_path() -> PathBuf {
    other_model(
        "Qwen2.5-Coder",
        "INFER_QWEN_MODEL",
        "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        "qwen-model",
    )
}

/// Gemma 3 270M (`make gemma-model`), or `INFER_GEMMA_MODEL`; fails when
/// the file is missing.
pub fn gemma_path() -> PathBuf {
    other_model(
        "Gemma 3",
        "INFER_GEMMA_MODEL",
        "gemma-3-270m-q4_k_m.gguf",
        "gemma-model",
    )
}

fn other_model(name: &str, variable: &str, file: &str, target: &str) -> PathBuf {
    let path = std::env::var_os(variable).map_or_else(
        || {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("models")
                .join(file)
        },
        PathBuf::from,
    );
    assert!(
        path.is_file(),
        "{name} not found at {}: run `make {target}` or set {variable}",
        path.display()
    );
    path
}
