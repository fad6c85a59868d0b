//! `Displace\Infer\Model`: a loaded GGUF model.

#![allow(non_snake_case)] // PHP parameter names are camelCase: `maxTokens: 64`.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use ext_php_rs::binary::Binary;

use ext_php_rs::flags::ClassFlags;
use ext_php_rs::prelude::*;

use super::convert::{self, OptionsArg};
use super::errors::CallError;
use super::exceptions::no_constructor;
use super::options::{generate_params, load_params};
use super::paths::allowed_path;
use super::prompt::Prompt;
use super::response::Response;
use crate::engine;

/// A GGUF model loaded in this process.
#[php_class]
#[php(name = "Displace\\Infer\\Model")]
#[php(flags = ClassFlags::Final.union(ClassFlags::NotSerializable))]
#[derive(Debug)]
pub struct Model {
    inner: Option<engine::Model>,
}

impl Model {
    fn open(&self) -> Result<&engine::Model, CallError> {
        self.inner.as_ref().ok_or(CallError::Closed)
    }
}

/// A string argument as text; `what` names it in the error.
fn text(bytes: Binary<u8>, what: &'static str) -> Result<String, CallError> {
    convert::utf8(bytes.into()).map_err(|offset| CallError::NotUtf8 { what, offset })
}

#[php_impl]
impl Model {
    /// Models come from `Model::load()`.
    pub fn __construct() -> PhpResult<Self> {
        Err(no_constructor("Model", "Model::load()"))
    }

    /// Load a GGUF model. Options: `n_gpu_layers` (int >= 0, default 0),
    /// `use_mmap` (bool, true), `use_mlock` (bool, false), `n_threads`
    /// (int from 1 to 512, default: the machine's cores). The path obeys
    /// `open_basedir`.
    #[php(defaults(options = OptionsArg::none()))]
    pub fn load(path: Binary<u8>, options: OptionsArg<'_>) -> PhpResult<Self> {
        let params = load_params(options)?;
        // Bytes, not text: a path that is not UTF-8 gets its own error.
        let path: Vec<u8> = path.into();
        let path = allowed_path(Path::new(OsStr::from_bytes(&path)))?;
        let model = engine::Model::load(path, &params)?;
        Ok(Self { inner: Some(model) })
    }

    /// Render `prompt` with the model's chat template and generate a reply.
    #[php(defaults(maxTokens = 128, nCtx = 2048, temperature = 0.0, seed = 1234, options = OptionsArg::none()))]
    pub fn chat(
        &self,
        prompt: &Prompt,
        maxTokens: i64,
        nCtx: i64,
        temperature: f64,
        seed: i64,
        options: OptionsArg<'_>,
    ) -> PhpResult<Response> {
        let model = self.open()?;
        let params = generate_params(maxTokens, nCtx, temperature, seed, options)?;
        Ok(model.chat(&prompt.messages, &params)?.into())
    }

    /// Complete `prompt` as plain text: no template, no reasoning split.
    #[php(defaults(maxTokens = 128, nCtx = 2048, temperature = 0.0, seed = 1234, addBos = true, options = OptionsArg::none()))]
    #[allow(clippy::too_many_arguments)]
    pub fn raw(
        &self,
        prompt: Binary<u8>,
        maxTokens: i64,
        nCtx: i64,
        temperature: f64,
        seed: i64,
        addBos: bool,
        options: OptionsArg<'_>,
    ) -> PhpResult<String> {
        let model = self.open()?;
        let prompt = text(prompt, "prompt")?;
        let params = generate_params(maxTokens, nCtx, temperature, seed, options)?;
        Ok(model.raw(&prompt, addBos, &params)?.text)
    }

    /// Free the weights. Idempotent; later calls throw.
    pub fn close(&mut self) {
        self.inner = None;
    }

    /// How many tokens `text` encodes to (no BOS added).
    pub fn count_tokens(&self, text: Binary<u8>) -> PhpResult<i64> {
        let model = self.open()?;
        Ok(model.count_tokens(&self::text(text, "text")?) as i64)
    }

    /// The context length the model was trained for.
    pub fn context_length(&self) -> PhpResult<i64> {
        Ok(i64::from(self.open()?.context_length()))
    }

    /// The chat template stored in the GGUF, or null.
    pub fn chat_template(&self) -> PhpResult<Option<String>> {
        Ok(self.open()?.chat_template())
    }
}
