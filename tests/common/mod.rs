//! Shared by the integration tests: the model whose vocabulary drives
//! llama.cpp's grammar engine.
#![allow(dead_code)] // each test target uses part of it

use std::path::PathBuf;

use infer::engine::probe::GrammarProbe;

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
