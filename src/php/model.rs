//! `Displace\Infer\Model`: a loaded GGUF model.

#![allow(non_snake_case)] // PHP parameter names are camelCase: `maxTokens: 64`.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::Arc;

use ext_php_rs::binary::Binary;
use ext_php_rs::boxed::ZBox;
use ext_php_rs::convert::FromZval;

use ext_php_rs::flags::ClassFlags;
use ext_php_rs::prelude::*;
use ext_php_rs::types::{ZendHashTable, Zval};

use super::convert::{self, OptionsArg};
use super::embedding::Embedding;
use super::errors::CallError;
use super::exceptions::no_constructor;
use super::options::{connect_params, generation_params, load_request, CallKind, GenerationArgs};
use super::paths::allowed_path;
use super::prompt::Prompt;
use super::response::Response;
use super::stream::Stream;
use super::timeout::stop_check;
use crate::backend::{Backend, GenerateParams, InferenceError};
use crate::engine;
use crate::loader;
use crate::remote::Remote;

const CHAT: CallKind = CallKind {
    chat: true,
    many: false,
    strings: false,
    scores: false,
};
const RAW: CallKind = CallKind {
    chat: false,
    many: false,
    strings: true,
    scores: false,
};
const RAW_STREAM: CallKind = CallKind {
    chat: false,
    many: false,
    strings: false,
    scores: false,
};
const CHAT_MANY: CallKind = CallKind {
    chat: true,
    many: true,
    strings: false,
    scores: false,
};
const RAW_MANY: CallKind = CallKind {
    chat: false,
    many: true,
    strings: true,
    scores: false,
};
const SCORE: CallKind = CallKind {
    chat: true,
    many: false,
    strings: false,
    scores: true,
};

/// A GGUF model loaded in this process.
#[php_class]
#[php(name = "Displace\\Infer\\Model")]
#[php(flags = ClassFlags::Final.union(ClassFlags::NotSerializable))]
#[derive(Debug)]
pub struct Model {
    /// What runs the model: loaded in this process (shared with the
    /// process's table when persistent) or served over HTTP.
    inner: Option<Arc<dyn Backend>>,
    persistent: bool,
}

impl Model {
    fn backend(&self) -> Result<&Arc<dyn Backend>, CallError> {
        self.inner.as_ref().ok_or(CallError::Closed)
    }

    /// The backend of a generation of `kind` and its parameters (see
    /// [`generation_params`]): the one parameter path of every generation
    /// method.
    fn generation(
        &self,
        kind: CallKind,
        (max_tokens, n_ctx, temperature, seed): (i64, i64, f64, i64),
        options: OptionsArg<'_>,
    ) -> Result<(&Arc<dyn Backend>, GenerateParams, u32), CallError> {
        let backend = self.backend()?;
        let args = GenerationArgs {
            max_tokens,
            n_ctx,
            temperature,
            seed,
            options,
        };
        let (params, parallel) =
            generation_params(args, kind, |key, off| backend.refuses_option(key, off))?;
        Ok((backend, params, parallel))
    }
}

/// The items of the `prompts` list of `chatMany()` / `rawMany()`, each read
/// by `read` (None: not what the method takes, `expected`).
pub(super) fn prompt_list<'a, T>(
    prompts: &'a ZendHashTable,
    what: &'static str,
    expected: &'static str,
    read: impl Fn(usize, &'a Zval) -> Option<Result<T, CallError>>,
) -> Result<Vec<T>, CallError> {
    let items = convert::list_items(prompts).map_err(|(position, key)| CallError::NotAList {
        what,
        position,
        key,
    })?;
    items
        .into_iter()
        .enumerate()
        .map(|(index, item)| {
            read(index, item).unwrap_or_else(|| {
                Err(CallError::WrongElement {
                    what,
                    index,
                    expected,
                    found: convert::describe_kind(item),
                })
            })
        })
        .collect()
}

/// A list of UTF-8 strings (`rawMany()`'s prompts, `score()`'s answers),
/// named `what` in its errors.
fn text_list(list: &ZendHashTable, what: &'static str) -> Result<Vec<String>, CallError> {
    prompt_list(list, what, "a string", |index, item| {
        convert::string_bytes(item).map(|bytes| {
            convert::utf8(bytes.to_vec()).map_err(|offset| CallError::ElementNotUtf8 {
                what,
                index,
                offset,
            })
        })
    })
}

/// A text to embed: UTF-8 without NUL bytes; `what` names it in the error.
pub(super) fn embed_text(bytes: Vec<u8>, what: &str) -> Result<String, CallError> {
    if let Some(offset) = bytes.iter().position(|&b| b == 0) {
        return Err(CallError::NulByte {
            what: what.to_owned(),
            offset,
        });
    }
    convert::utf8(bytes).map_err(|offset| CallError::TextNotUtf8 {
        what: what.to_owned(),
        offset,
    })
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
    /// (int from 1 to 512, default: the machine's cores), `persistent`
    /// (bool, false: keep the model in this process for later requests),
    /// `shared` (bool, false: use the llama-server every process of the
    /// installation shares, php.ini `infer.server_*`), `mmproj` (the path of
    /// an image projector GGUF for the model: images in), `lora` (adapters:
    /// a list of `['path' => …, 'scale' => 1.0, 'name' => …]`, which calls
    /// choose with their option `lora`). The paths obey `open_basedir`.
    #[php(defaults(options = OptionsArg::none()))]
    pub fn load(path: Binary<u8>, options: OptionsArg<'_>) -> PhpResult<Self> {
        let request = load_request(options)?;
        // Bytes, not text: a path that is not UTF-8 gets its own error.
        let path: Vec<u8> = path.into();
        let path = allowed_path(Path::new(OsStr::from_bytes(&path)))?;
        let mut request = request;
        if let Some(mmproj) = &mut request.params.mmproj {
            *mmproj = allowed_path(mmproj)?;
        }
        for adapter in &mut request.params.lora {
            adapter.path = allowed_path(&adapter.path)?;
        }
        let loaded = loader::load(&path, &request, &super::settings::Ini)?;
        Ok(Self {
            inner: Some(loaded.model),
            persistent: loaded.persistent,
        })
    }

    /// Connect to a model served by llama-server, vLLM or SGLang at
    /// `baseUrl` (`http://host:port`): the same calls as a loaded model,
    /// run by the server, with schemas and grammars enforced exactly as in
    /// this process. Options: `model` (the served model's name; default:
    /// the server's only one), `api_key` (sent as a bearer token), `timeout`
    /// (seconds: the most connecting, and each request for a JSON answer,
    /// take whole, and each event of a reply takes to arrive; default 120), `retries` (of requests refused unserved, default 2), `engine`
    /// (`'llama-server'`, `'vllm'` or `'sglang'`; default: asked of the
    /// server), `verify_tls` (bool, true), `max_response_bytes` (the most
    /// one JSON answer may weigh, default 32 MiB). Refused where
    /// `allow_url_fopen` is off.
    #[php(defaults(options = OptionsArg::none()))]
    pub fn connect(baseUrl: Binary<u8>, options: OptionsArg<'_>) -> PhpResult<Self> {
        if !super::settings::url_fopen_allowed() {
            return Err(super::errors::LoadCallError::UrlFopenOff.into());
        }
        let url = convert::utf8(baseUrl.into()).map_err(|offset| {
            super::errors::LoadCallError::InvalidOption {
                key: "baseUrl".to_owned(),
                expected: format!("is not valid UTF-8 (invalid byte at offset {offset})"),
            }
        })?;
        let mut params = connect_params(url, options)?;
        params.deadline = super::timeout::wall_deadline();
        let remote = Remote::connect(params).map_err(engine::LoadError::from)?;
        Ok(Self {
            inner: Some(Arc::new(remote)),
            persistent: false,
        })
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
        let (backend, params, _) =
            self.generation(CHAT, (maxTokens, nCtx, temperature, seed), options)?;
        Ok(backend.chat(&prompt.messages, &params)?.into())
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
        let (backend, params, _) =
            self.generation(RAW, (maxTokens, nCtx, temperature, seed), options)?;
        let prompt = text(prompt, "prompt")?;
        Ok(backend.raw(&prompt, addBos, &params)?.text)
    }

    /// Stream the reply to `prompt`: the arguments of `chat()`, and a
    /// `Stream` that yields the reply piece by piece as it is generated.
    #[php(defaults(maxTokens = 128, nCtx = 2048, temperature = 0.0, seed = 1234, options = OptionsArg::none()))]
    pub fn stream(
        &self,
        prompt: &Prompt,
        maxTokens: i64,
        nCtx: i64,
        temperature: f64,
        seed: i64,
        options: OptionsArg<'_>,
    ) -> PhpResult<Stream> {
        let (backend, params, _) =
            self.generation(CHAT, (maxTokens, nCtx, temperature, seed), options)?;
        Ok(Stream::new(
            Arc::clone(backend).stream_chat(&prompt.messages, params)?,
            true,
        ))
    }

    /// Stream the plain-text completion of `prompt` (the arguments of
    /// `raw()`).
    #[php(defaults(maxTokens = 128, nCtx = 2048, temperature = 0.0, seed = 1234, addBos = true, options = OptionsArg::none()))]
    #[allow(clippy::too_many_arguments)]
    pub fn raw_stream(
        &self,
        prompt: Binary<u8>,
        maxTokens: i64,
        nCtx: i64,
        temperature: f64,
        seed: i64,
        addBos: bool,
        options: OptionsArg<'_>,
    ) -> PhpResult<Stream> {
        let (backend, params, _) =
            self.generation(RAW_STREAM, (maxTokens, nCtx, temperature, seed), options)?;
        let prompt = text(prompt, "prompt")?;
        Ok(Stream::new(
            Arc::clone(backend).stream_raw(&prompt, addBos, params)?,
            false,
        ))
    }

    /// Generate replies to many prompts together, as parallel sequences of
    /// one context; the results are in the order of `prompts` (a list).
    #[php(defaults(maxTokens = 128, nCtx = 2048, temperature = 0.0, seed = 1234, options = OptionsArg::none()))]
    pub fn chat_many(
        &self,
        prompts: &ZendHashTable,
        maxTokens: i64,
        nCtx: i64,
        temperature: f64,
        seed: i64,
        options: OptionsArg<'_>,
    ) -> PhpResult<Vec<Response>> {
        let (backend, params, parallel) =
            self.generation(CHAT_MANY, (maxTokens, nCtx, temperature, seed), options)?;
        let transcripts = prompt_list(
            prompts,
            "prompts",
            "a Displace\\Infer\\Prompt",
            |_, item| <&Prompt>::from_zval(item.dereference()).map(|p| Ok(p.messages.clone())),
        )?;
        let generations = backend.chat_many(&transcripts, &params, parallel)?;
        Ok(generations.into_iter().map(Response::from).collect())
    }

    /// Complete many plain-text prompts together (see `chatMany()`).
    #[php(defaults(maxTokens = 128, nCtx = 2048, temperature = 0.0, seed = 1234, addBos = true, options = OptionsArg::none()))]
    #[allow(clippy::too_many_arguments)]
    pub fn raw_many(
        &self,
        prompts: &ZendHashTable,
        maxTokens: i64,
        nCtx: i64,
        temperature: f64,
        seed: i64,
        addBos: bool,
        options: OptionsArg<'_>,
    ) -> PhpResult<Vec<String>> {
        let (backend, params, parallel) =
            self.generation(RAW_MANY, (maxTokens, nCtx, temperature, seed), options)?;
        let texts = text_list(prompts, "prompts")?;
        let generations = backend.raw_many(&texts, addBos, &params, parallel)?;
        Ok(generations.into_iter().map(|g| g.text).collect())
    }

    /// The log-probability of the model replying exactly each of
    /// `answers` to `prompt`: the sum, over the answer's tokens, of each
    /// token's log-probability in the model's own distribution (nothing
    /// generated). A list of floats in the order of `answers`; softmax
    /// them to compare the answers (a classifier's labels).
    #[php(defaults(nCtx = 2048, options = OptionsArg::none()))]
    pub fn score(
        &self,
        prompt: &Prompt,
        answers: &ZendHashTable,
        nCtx: i64,
        options: OptionsArg<'_>,
    ) -> PhpResult<Vec<f64>> {
        let (backend, params, _) = self.generation(SCORE, (1, nCtx, 0.0, 0), options)?;
        let answers = text_list(answers, "answers")?;
        if answers.is_empty() {
            return Err(CallError::Engine(crate::backend::InferenceError::NoAnswers).into());
        }
        Ok(backend.score(&prompt.messages, &answers, &params)?)
    }

    /// The embedding of `text` (a model loaded with `embedding`).
    pub fn embed(&self, text: Binary<u8>) -> PhpResult<Embedding> {
        let backend = self.backend()?;
        let texts = [embed_text(text.into(), "text")?];
        let vectors = backend.embed_many(&texts, stop_check());
        let mut vectors = vectors.map_err(|e| e.outside_list())?;
        Ok(Embedding::from(vectors.pop().unwrap_or_default()))
    }

    /// The embeddings of `texts` (a list of strings), in order, computed in
    /// as few batches as the context allows.
    pub fn embed_many(&self, texts: &ZendHashTable) -> PhpResult<Vec<Embedding>> {
        let backend = self.backend()?;
        let texts = prompt_list(texts, "texts", "a string", |index, item| {
            convert::string_bytes(item)
                .map(|bytes| embed_text(bytes.to_vec(), &format!("texts[{index}]")))
        })?;
        let vectors = backend.embed_many(&texts, stop_check())?;
        Ok(vectors.into_iter().map(Embedding::from).collect())
    }

    /// Free the weights. Idempotent; later calls throw. A persistent model
    /// is no longer kept by the process either; another object of this
    /// request that loaded the same model keeps working until it goes.
    pub fn close(&mut self) -> PhpResult<()> {
        if self
            .inner
            .as_ref()
            .is_some_and(|model| model.is_streaming())
        {
            return Err(CallError::from(InferenceError::StreamInProgress).into());
        }
        if let Some(model) = self.inner.take() {
            if self.persistent {
                loader::persistent::forget(&model);
            }
        }
        Ok(())
    }

    /// Whether the model was loaded with `persistent` (and not closed since).
    pub fn is_persistent(&self) -> bool {
        self.persistent && self.inner.is_some()
    }

    /// How many tokens `text` encodes to (no BOS added). With
    /// `parseSpecial` (the default, as `raw()` reads its prompt) control
    /// tokens' markup such as `<|im_end|>` counts as one token each; without
    /// it, as text — the way `chat()` reads the text of messages.
    #[php(defaults(parseSpecial = true))]
    pub fn count_tokens(&self, text: Binary<u8>, parseSpecial: bool) -> PhpResult<i64> {
        let backend = self.backend()?;
        let text = self::text(text, "text")?;
        Ok(backend.count_tokens(&text, parseSpecial)? as i64)
    }

    /// What the model runs on and what it is: backend in use, compiled
    /// backends, devices, layers offloaded out of the total, contexts,
    /// threads, file size, parameters, quantisation. For a connected model:
    /// the engine, its URL and the served model.
    pub fn info(&self) -> PhpResult<ZBox<ZendHashTable>> {
        let info = self.backend()?.info();
        let zval = convert::json_to_zval(&info)
            .map_err(|e| super::exceptions::infer_exception(e.to_string()))?;
        zval.array()
            .map(ToOwned::to_owned)
            .ok_or_else(|| super::exceptions::infer_exception("info is not an array"))
    }

    /// The context length the model was trained for.
    pub fn context_length(&self) -> PhpResult<i64> {
        Ok(i64::from(self.backend()?.context_length()))
    }

    /// The chat template stored in the GGUF, or null.
    pub fn chat_template(&self) -> PhpResult<Option<String>> {
        Ok(self.backend()?.chat_template())
    }

    /// How `chat()` renders prompts: `'jinja'` (the GGUF's template, as
    /// Hugging Face renders it) or `'chatml'` (llama.cpp's built-in format,
    /// for a GGUF without a template).
    pub fn chat_template_kind(&self) -> PhpResult<String> {
        Ok(self.backend()?.chat_template_kind().to_owned())
    }

    /// The text `chat()` gives the model for `prompt` with these options
    /// (those of `chat()`; `template_vars` is the one that changes it, and
    /// `special_tokens_in_messages` for a message holding control-token
    /// markup, which templates then see whole).
    #[php(defaults(options = OptionsArg::none()))]
    pub fn render_prompt(&self, prompt: &Prompt, options: OptionsArg<'_>) -> PhpResult<String> {
        // A connected model refuses what it cannot render (`tools`) as
        // `chat()` does, rather than rendering without it.
        let (backend, params, _) = self.generation(CHAT, (1, 1, 0.0, 0), options)?;
        Ok(backend.render_prompt(&prompt.messages, &params)?)
    }
}
