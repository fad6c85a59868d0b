//! Asking llama.cpp's grammar engine (the sampler that constrains generation)
//! whether it accepts a text. Used by the benchmarks and the tests that check
//! generated grammars against JSON instances.

use std::path::Path;

use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use llama_cpp_2::token::LlamaToken;

use super::backend::{backend, capture_stderr, clear_diagnostics, first_line, take_diagnostics};
use super::error::LoadError;

/// A model's vocabulary (weights not loaded), for driving grammar samplers.
#[derive(Debug)]
pub struct GrammarProbe {
    model: LlamaModel,
}

/// A grammar loaded into llama.cpp's sampler.
#[derive(Debug)]
pub struct LoadedGrammar<'p> {
    probe: &'p GrammarProbe,
    sampler: LlamaSampler,
}

impl GrammarProbe {
    /// Load only the vocabulary of the GGUF at `path`.
    pub fn new(path: &Path) -> Result<Self, LoadError> {
        let utf8 = path.to_str().ok_or_else(|| LoadError::PathNotUtf8 {
            path: path.to_path_buf(),
        })?;
        let params = LlamaModelParams::default().with_vocab_only(true);
        clear_diagnostics();
        let model = LlamaModel::load_from_file(backend()?, utf8, &params).map_err(|e| {
            LoadError::Rejected {
                path: path.to_path_buf(),
                detail: take_diagnostics().unwrap_or_else(|| e.to_string()),
            }
        })?;
        Ok(Self { model })
    }

    /// Load `gbnf` (start rule `root`); the error is llama.cpp's diagnostics.
    pub fn load(&self, gbnf: &str) -> Result<LoadedGrammar<'_>, String> {
        clear_diagnostics();
        let (sampler, printed) =
            capture_stderr(|| LlamaSampler::grammar(&self.model, gbnf, "root"));
        let sampler = sampler.map_err(|e| {
            first_line(&printed)
                .or_else(take_diagnostics)
                .unwrap_or_else(|| e.to_string())
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
            if !self.allowed(token) || self.sampler.try_accept(token).is_err() {
                return false;
            }
        }
        self.allowed(vocab.eos())
    }

    fn allowed(&mut self, token: LlamaToken) -> bool {
        let mut one = LlamaTokenDataArray::new(vec![LlamaTokenData::new(token, 0.0, 0.0)], false);
        self.sampler.apply(&mut one);
        one.data.first().is_some_and(|t| t.logit().is_finite())
    }
}
