//! Asking llama.cpp's grammar engine (the sampler that constrains generation)
//! whether it accepts a text. Used by the benchmarks and the tests that check
//! generated grammars against JSON instances.

use std::path::Path;
use std::sync::Arc;

use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::LlamaModel;

use super::sampler::GrammarSampler;
use crate::backend::error::InferenceError;
use crate::backend::error::LoadError;
use crate::engine::llama::runtime::{backend, logged};
use crate::grammar::CheckedGbnf;

/// A model's vocabulary (weights not loaded), for driving grammar samplers.
#[derive(Debug)]
pub struct GrammarProbe {
    model: Arc<LlamaModel>,
}

/// A grammar loaded into llama.cpp's sampler.
#[derive(Debug)]
pub struct LoadedGrammar<'p> {
    probe: &'p GrammarProbe,
    sampler: GrammarSampler,
}

impl GrammarProbe {
    /// Load only the vocabulary of the GGUF at `path`.
    pub fn new(path: &Path) -> Result<Self, LoadError> {
        let utf8 = path.to_str().ok_or_else(|| LoadError::PathNotUtf8 {
            path: path.to_path_buf(),
        })?;
        let params = LlamaModelParams::default().with_vocab_only(true);
        let backend = backend()?;
        let (loaded, log) = logged(|| LlamaModel::load_from_file(backend, utf8, &params));
        let model = loaded.map_err(|e| LoadError::Rejected {
            path: path.to_path_buf(),
            detail: log.unwrap_or_else(|| e.to_string()),
        })?;
        Ok(Self {
            model: Arc::new(model),
        })
    }

    /// The vocabulary-only model.
    pub fn model(&self) -> &Arc<LlamaModel> {
        &self.model
    }

    /// Load `gbnf` (start rule `root`); the error is llama.cpp's diagnostics.
    pub fn load(&self, gbnf: &CheckedGbnf) -> Result<LoadedGrammar<'_>, String> {
        let sampler = GrammarSampler::parse(&self.model, gbnf).map_err(|e| match e {
            InferenceError::GrammarRejected { detail } => detail,
            other => other.to_string(),
        })?;
        Ok(LoadedGrammar {
            probe: self,
            sampler,
        })
    }
}

impl LoadedGrammar<'_> {
    /// Whether the grammar accepts exactly `text`: every token of it is
    /// allowed in turn, and end-of-generation is allowed after the last.
    pub fn accepts(&mut self, text: &str) -> bool {
        self.sampler.reset();
        let vocab = self.probe.model.vocab();
        for token in vocab.tokenize(text.as_bytes(), false, false) {
            if !self.sampler.allows(token) || self.sampler.accept(token).is_err() {
                return false;
            }
        }
        self.sampler.allows(vocab.eos())
    }
}
