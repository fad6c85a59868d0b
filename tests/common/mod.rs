//! Shared by the integration tests: the model whose vocabulary drives
//! llama.cpp's grammar engine.
#![allow(dead_code)] // each test target uses part of it

use std::path::PathBuf;

use infer::engine::probe::GrammarProbe;

/// The default model (`make model` fetches it), or `INFER_MODEL`.
pub fn model_path() -> PathBuf {
    let path = std::env::var_os("INFER_MODEL")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("models/SmolLM2-135M-Instruct.Q4_1.gguf")
        });
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
