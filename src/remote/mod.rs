//! A model served by another process: llama.cpp's llama-server, vLLM or
//! SGLang, reached over HTTP. The same calls as a model loaded in this
//! process, with the same guarantees:
//!
//! - a `schema` or `grammar` is converted and checked here, by the same
//!   converter and checker, and the GBNF itself is what the engine enforces
//!   (llama-server's `grammar`, vLLM's `structured_outputs.grammar`,
//!   SGLang's `ebnf`); a grammar the engine's dialect cannot express is
//!   refused before any request;
//! - against llama-server the conversation is rendered here with the
//!   server's own template, and each piece is tokenized by the server as the
//!   local engine tokenizes it (the template's markup with special tokens
//!   parsed, message text as plain text), then sent as token ids: the server
//!   sees exactly the prompt the local engine would evaluate, and text typed
//!   by a user cannot become a control token;
//! - every generation is streamed from the server, so a deadline, PHP's
//!   time limit or a cancelled stream stops it between two tokens, and a
//!   reply cut off by the server is an error, never a short answer.

mod calls;
mod dialect;
pub mod events;
#[cfg(test)]
mod hostile_tests;
pub mod http;
pub mod limits;
mod llama_server;
mod openai;
pub mod shared;
pub mod stream;
#[cfg(test)]
mod tests;
mod unix;

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use serde_json::{json, Value as Json};

pub use crate::backend::RemoteError;
pub use http::ApiKey;
pub use stream::RemoteStream;

use self::http::{Http, HttpConfig};
use crate::backend::error::{InferenceError, InferenceResult};
use crate::backend::params::GenerateParams;
use crate::backend::FinishReason;
use crate::backend::{Prompt, Prompts};
use crate::chat::plain_text::{render_segments, Inputs, Markup, Piece, Segments, IMAGE_MARKER};
use crate::chat::reasoning::Parts;
use crate::chat::{ChatError, Message, Renderer};
use crate::private_dir::PrivateDir;
use infer_shared::state::InUse;

/// The serving engines a model can be connected to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineKind {
    LlamaServer,
    Vllm,
    Sglang,
}

impl EngineKind {
    pub const ALL: [(EngineKind, &'static str); 3] = [
        (EngineKind::LlamaServer, "llama-server"),
        (EngineKind::Vllm, "vllm"),
        (EngineKind::Sglang, "sglang"),
    ];

    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(e, _)| *e == self)
            .map_or("llama-server", |(_, name)| name)
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().find(|(_, n)| *n == name).map(|(e, _)| *e)
    }
}

/// The default of the `timeout` option: the most `connect()` takes, and a
/// request for a JSON answer (tokens, embeddings), whole; the most each
/// event of a streamed reply takes to arrive.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// The default of the `retries` option.
pub const DEFAULT_RETRIES: u32 = 2;

/// How to connect.
#[derive(Debug, Clone)]
pub struct ConnectParams {
    pub url: String,
    /// The served model's name; `None`: the server's only model.
    pub model: Option<String>,
    pub api_key: Option<ApiKey>,
    pub timeout: Duration,
    pub retries: u32,
    /// The most one JSON answer may weigh (`max_response_bytes`).
    pub max_response: u64,
    /// `None`: told from the server's answers.
    pub engine: Option<EngineKind>,
    pub verify_tls: bool,
    /// Reach the server through this Unix socket (the shared server).
    pub unix_socket: Option<std::path::PathBuf>,
    /// When the caller must have its answer whatever `timeout` says (PHP's
    /// time limit, where it is wall time).
    pub deadline: Option<Instant>,
}

impl ConnectParams {
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            model: None,
            api_key: None,
            timeout: DEFAULT_TIMEOUT,
            retries: DEFAULT_RETRIES,
            max_response: limits::DEFAULT_MAX_RESPONSE,
            engine: None,
            verify_tls: true,
            unix_socket: None,
            deadline: None,
        }
    }
}

/// What a llama-server tells of itself.
#[derive(Debug)]
struct LlamaServerInfo {
    renderer: Renderer,
    template: Option<String>,
    bos: String,
    eos: String,
    vision: bool,
    media_marker: Option<String>,
    /// The LoRA adapters it was started with, asked the first time a call
    /// chooses adapters or `info()` lists them (not on every connect).
    adapters: OnceLock<Vec<llama_server::ServerAdapter>>,
}

/// A connected model.
#[derive(Debug)]
pub struct Remote {
    http: Http,
    engine: EngineKind,
    model: String,
    /// The context of one of the server's slots: the most `nCtx` can be.
    slot_ctx: u32,
    /// The context the model was trained for (`contextLength()`).
    trained_ctx: u32,
    /// The vocabulary's size, when the server says (llama-server).
    n_vocab: Option<u32>,
    llama: Option<LlamaServerInfo>,
    /// Set for the installation's shared server (`shared::ensure`).
    shared: Option<shared::Endpoint>,
    /// The shared server's state directory, where each call marks the
    /// server in use.
    shared_state: Option<Arc<PrivateDir>>,
}

impl Remote {
    /// Connect to the server at `params.url`: find out which engine it is
    /// and which model it serves, and read what the calls need; all of it
    /// within `params.timeout`.
    pub fn connect(params: ConnectParams) -> Result<Self, RemoteError> {
        let base = http::base_url(&params.url)?;
        let http = Http::new(HttpConfig {
            base,
            api_key: params.api_key.clone(),
            timeout: params.timeout,
            max_response: params.max_response,
            retries: params.retries,
            verify_tls: params.verify_tls,
            unix_socket: params.unix_socket.clone(),
        });
        // All of connect() ends within its timeout (or the caller's deadline).
        let deadline = http.until(params.deadline);
        let engine = match params.engine {
            Some(engine) => engine,
            None => detect(&http, deadline)?,
        };
        let models = http.get_json("/v1/models", engine.name(), deadline)?;
        let served = openai::served_models(&models).map_err(|detail| RemoteError::BadBody {
            url: http.shown().to_owned(),
            engine: engine.name(),
            detail,
        })?;
        let chosen = choose_model(&http, &served, params.model.as_deref())?;
        let (slot_ctx, trained_ctx, llama) = match engine {
            EngineKind::LlamaServer => {
                let props = http.get_json("/props", engine.name(), deadline)?;
                let info =
                    llama_server::Props::read(&props).map_err(|detail| RemoteError::BadBody {
                        url: http.shown().to_owned(),
                        engine: engine.name(),
                        detail,
                    })?;
                let renderer = match &info.template {
                    Some(source) => Renderer::jinja(source),
                    None => Renderer::Missing,
                };
                let trained = chosen.trained_ctx.unwrap_or(info.slot_ctx);
                (
                    info.slot_ctx,
                    trained,
                    Some(LlamaServerInfo {
                        renderer,
                        template: info.template,
                        bos: info.bos,
                        eos: info.eos,
                        vision: info.vision,
                        media_marker: info.media_marker,
                        adapters: OnceLock::new(),
                    }),
                )
            }
            EngineKind::Vllm | EngineKind::Sglang => {
                let ctx = chosen.max_model_len.unwrap_or(0);
                (ctx, ctx, None)
            }
        };
        Ok(Self {
            http,
            engine,
            model: chosen.id,
            slot_ctx,
            trained_ctx,
            n_vocab: chosen.n_vocab,
            llama,
            shared: None,
            shared_state: None,
        })
    }

    /// Connect to the installation's shared server, started if none runs.
    /// The connection is kept for the process's next loads while the same
    /// server runs (its address, key and pid unchanged), so that a request
    /// after the first asks the server nothing before its call.
    pub fn connect_shared(
        settings: &shared::Settings,
    ) -> Result<std::sync::Arc<Self>, crate::backend::error::LoadError> {
        static KEPT: std::sync::Mutex<Option<std::sync::Arc<Remote>>> = std::sync::Mutex::new(None);
        let (endpoint, state_dir) = shared::ensure(settings)?;
        let mut kept = KEPT
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(remote) = kept
            .as_ref()
            .filter(|r| r.shared.as_ref() == Some(&endpoint))
        {
            return Ok(std::sync::Arc::clone(remote));
        }
        let mut params = ConnectParams::new(endpoint.url.clone());
        params.api_key = Some(http::ApiKey::new(endpoint.api_key.clone()));
        params.unix_socket = endpoint.socket.clone();
        params.engine = Some(EngineKind::LlamaServer);
        let mut remote = Remote::connect(params)?;
        remote.shared = Some(endpoint);
        remote.shared_state = Some(Arc::new(state_dir));
        let remote = std::sync::Arc::new(remote);
        *kept = Some(std::sync::Arc::clone(&remote));
        Ok(remote)
    }

    /// The shared server's pid, for a model connected to it.
    pub fn shared_server_pid(&self) -> Option<u32> {
        self.shared.as_ref().map(|e| e.server_pid)
    }

    pub fn engine(&self) -> EngineKind {
        self.engine
    }

    /// The served model's name.
    pub fn model_name(&self) -> &str {
        &self.model
    }

    /// The server's address, without credentials.
    pub fn url(&self) -> &str {
        self.http.shown()
    }

    /// A stream of what `prompt` makes.
    fn start(&self, prompt: Prompt<'_>, params: GenerateParams) -> InferenceResult<RemoteStream> {
        // In use from before the request until the generation ends.
        let in_use = self.shared_state.clone().map(InUse::start);
        let stop = params.stop_check;
        let top = params.logprobs.map(|l| l.top);
        let started = match prompt {
            Prompt::Chat(messages) => self.start_chat(messages, params),
            Prompt::Text { text, add_bos } => self.start_raw(text, add_bos, params),
        };
        let mut stream = match started {
            // The call's deadline came before the reply began (in the
            // prompt's tokenization, or while the server read it): the call
            // ends as a local one does, with nothing generated.
            Err(InferenceError::Remote(RemoteError::TimedOut { .. })) if stop.due() => {
                RemoteStream::ended(FinishReason::Timeout, 0, None, top)
            }
            other => other?,
        };
        stream.hold(in_use);
        Ok(stream)
    }

    /// A stream of the reply to `messages`.
    fn start_chat(
        &self,
        messages: &[Message],
        params: GenerateParams,
    ) -> InferenceResult<RemoteStream> {
        match self.engine {
            EngineKind::LlamaServer => {
                let segments = self.chat_segments(messages, &params)?;
                let parts = Parts::after_prompt(&segments.text());
                if segments.images().next().is_some() {
                    return self.complete_with_images(&segments, params, Some(parts));
                }
                let tokens = self.segment_tokens(&segments, params.stop_check.deadline)?;
                self.complete_tokens(tokens, params, Some(parts))
            }
            EngineKind::Vllm | EngineKind::Sglang => {
                if messages.is_empty() {
                    return Err(ChatError::NoMessages.into());
                }
                let body = openai::chat_request(self.engine, &self.model, messages, &params)?;
                self.start_openai(
                    "/v1/chat/completions",
                    body,
                    params,
                    Some(Parts::after_prompt("")),
                    true,
                )
            }
        }
    }

    /// A stream of the plain-text completion of `prompt`.
    fn start_raw(
        &self,
        prompt: &str,
        add_bos: bool,
        params: GenerateParams,
    ) -> InferenceResult<RemoteStream> {
        match self.engine {
            EngineKind::LlamaServer => {
                let tokens = self.tokenize(prompt, add_bos, true, params.stop_check.deadline)?;
                self.complete_tokens(tokens, params, None)
            }
            EngineKind::Vllm | EngineKind::Sglang => {
                let body =
                    openai::completion_request(self.engine, &self.model, prompt, add_bos, &params)?;
                self.start_openai("/v1/completions", body, params, None, false)
            }
        }
    }

    /// Generate from each of `prompts`, `parallel` threads each taking the
    /// next one. The threads check the deadline and the caller's
    /// interrupt (PHP's time limit, whose flag the interrupt names) between
    /// events.
    fn many(
        &self,
        prompts: Prompts<'_>,
        parallel: u32,
        params: &GenerateParams,
    ) -> InferenceResult<Vec<crate::backend::Generation>> {
        let count = prompts.len();
        if count == 0 {
            return Err(InferenceError::NoPrompts);
        }
        let shared = params.clone();
        let next = std::sync::atomic::AtomicUsize::new(0);
        let results: Vec<std::sync::Mutex<Option<InferenceResult<crate::backend::Generation>>>> =
            (0..count).map(|_| std::sync::Mutex::new(None)).collect();
        let workers = (parallel.max(1) as usize).min(count);
        std::thread::scope(|scope| {
            for _ in 0..workers {
                scope.spawn(|| loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if i >= count {
                        break;
                    }
                    let result = prompts
                        .get(i)
                        .ok_or(InferenceError::NoPrompts)
                        .and_then(|prompt| self.start(prompt, shared.clone()))
                        .and_then(RemoteStream::into_generation)
                        .map_err(|e| e.in_prompt(i));
                    let failed = result.is_err();
                    if let Ok(mut slot) = results[i].lock() {
                        *slot = Some(result);
                    }
                    if failed {
                        // The others need not start.
                        next.store(count, std::sync::atomic::Ordering::Relaxed);
                    }
                });
            }
        });
        let mut generations = Vec::with_capacity(count);
        let mut first_error = None;
        for (i, slot) in results.into_iter().enumerate() {
            match slot.into_inner().ok().flatten() {
                Some(Ok(g)) => generations.push(g),
                Some(Err(e)) => {
                    first_error.get_or_insert(e);
                }
                None => {
                    first_error.get_or_insert(
                        InferenceError::DecodeFailed {
                            detail: "not started after an earlier prompt failed".to_owned(),
                        }
                        .in_prompt(i),
                    );
                }
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(generations),
        }
    }

    fn bad_body(&self, detail: String) -> RemoteError {
        RemoteError::BadBody {
            url: self.http.shown().to_owned(),
            engine: self.engine.name(),
            detail,
        }
    }

    /// Whether the server takes images (llama-server started with
    /// `--mmproj`); `None` for a server that does not say.
    pub fn vision(&self) -> Option<bool> {
        self.llama.as_ref().map(|info| info.vision)
    }

    /// The adapters llama-server was started with (`GET /lora-adapters`,
    /// asked once; a server older than the route has none); none for vLLM
    /// and SGLang.
    fn server_adapters(&self) -> &[llama_server::ServerAdapter] {
        self.llama.as_ref().map_or(&[][..], |l| {
            l.adapters.get_or_init(|| {
                self.http
                    .get_json("/lora-adapters", self.engine.name(), None)
                    .map(|a| llama_server::adapters(&a))
                    .unwrap_or_default()
            })
        })
    }

    /// The LoRA adapters llama-server was started with (none for vLLM and
    /// SGLang), as `info()` lists them.
    pub fn adapters(&self) -> Json {
        let list = self.server_adapters();
        Json::Array(
            list.iter()
                .map(|a| json!({"name": a.name, "path": a.path, "scale": a.scale}))
                .collect(),
        )
    }

    fn llama(&self) -> InferenceResult<&LlamaServerInfo> {
        self.llama.as_ref().ok_or_else(|| {
            RemoteError::Unsupported {
                what: "rendering a prompt here",
                engine: self.engine.name(),
                why: "it renders conversations with its own template, which it does not publish",
            }
            .into()
        })
    }

    /// llama-server's tokens of `text`, by `deadline` at the latest; the
    /// answer is bounded by what the text can make.
    fn tokenize(
        &self,
        text: &str,
        add_special: bool,
        parse_special: bool,
        deadline: Option<Instant>,
    ) -> InferenceResult<Vec<i64>> {
        let answer = self.http.post_json(
            "/tokenize",
            &json!({"content": text, "add_special": add_special, "parse_special": parse_special}),
            self.engine.name(),
            deadline,
            self.http.limit(
                "a /tokenize answer",
                Some(limits::tokenize_bytes(text.len())),
            ),
        )?;
        llama_server::tokens(answer, text.len()).map_err(|d| self.bad_body(d).into())
    }

    /// A conversation rendered as the local engine renders it: strings from
    /// outside the template holding control-token markup go through it as
    /// placeholders and come back as plain pieces. Whether a string holds
    /// markup is the server's tokenizer's call: its tokens differ with
    /// special tokens parsed and without.
    fn chat_segments(
        &self,
        messages: &[Message],
        params: &GenerateParams,
    ) -> InferenceResult<Segments> {
        let info = self.llama()?;
        let render =
            |messages: &[Message], vars: &serde_json::Map<String, Json>, tools: Option<&Json>| {
                Ok::<_, InferenceError>(info.renderer.render(
                    messages,
                    (&info.bos, &info.eos),
                    vars,
                    tools,
                )?)
            };
        let trusted = params.special_tokens_in_messages.unwrap_or(false);
        if !trusted {
            // The template's own errors come before any request to the
            // server's tokenizer.
            render(messages, &params.template_vars, None)?;
        }
        render_segments(
            Inputs {
                messages,
                tools: None,
                vars: &params.template_vars,
            },
            trusted,
            render,
            Markup::Asked(Box::new(|strings| {
                self.markup_flags(strings, params.stop_check.deadline)
            })),
        )
    }

    /// Whether each of `strings` holds control-token markup. All of them
    /// are asked at once first (two requests); only when that finds markup
    /// is each asked on its own.
    fn markup_flags(
        &self,
        strings: &[String],
        deadline: Option<Instant>,
    ) -> InferenceResult<Vec<bool>> {
        if strings.is_empty() {
            return Ok(Vec::new());
        }
        if !self.holds_markup(&strings.join("\n"), deadline)? {
            return Ok(vec![false; strings.len()]);
        }
        strings
            .iter()
            .map(|s| self.holds_markup(s, deadline))
            .collect()
    }

    fn holds_markup(&self, text: &str, deadline: Option<Instant>) -> InferenceResult<bool> {
        if text.is_empty() {
            return Ok(false);
        }
        Ok(self.tokenize(text, false, true, deadline)?
            != self.tokenize(text, false, false, deadline)?)
    }

    /// The tokens of a rendered conversation, as `Model::chat_input`
    /// makes them.
    fn segment_tokens(
        &self,
        segments: &Segments,
        deadline: Option<Instant>,
    ) -> InferenceResult<Vec<i64>> {
        let info = self.llama()?;
        segments.tokens(
            info.renderer.writes_bos(),
            |text, add_bos, special| self.tokenize(text, add_bos, special, deadline),
            || InferenceError::ImageFailed {
                detail: "internal: images reached the token path".into(),
            },
        )
    }

    /// Start llama-server's completion of a prompt with images: its
    /// multimodal prompt, one string in which the server's media marker
    /// stands for each image (sent as PNG). The server reads that string with
    /// special tokens parsed, so a prompt whose text holds control-token
    /// markup (or the marker) is refused here rather than read as what it is
    /// not.
    fn complete_with_images(
        &self,
        segments: &Segments,
        params: GenerateParams,
        parts: Option<Parts>,
    ) -> InferenceResult<RemoteStream> {
        let info = self.llama()?;
        if !info.vision {
            return Err(InferenceError::ImageFailed {
                detail: format!(
                    "{} has no image projector: start llama-server with --mmproj (the shared server: infer.server_mmproj)",
                    self.http.shown()
                ),
            });
        }
        let marker = info.media_marker.as_deref().unwrap_or(IMAGE_MARKER);
        let refused = |why: &str| {
            InferenceError::ImageFailed {
            detail: format!("llama-server reads a prompt with images as one text with special tokens parsed and {marker} as an image's place, so {why} cannot be sent with images; send the text without the images, or load the model in this process"),
        }
        };
        let mut text = String::new();
        for piece in segments.pieces() {
            match piece {
                Piece::Plain(_) => return Err(refused("text holding control-token markup")),
                Piece::Template(t) if t.contains(marker) => {
                    return Err(refused(&format!("text holding {marker}")))
                }
                Piece::Template(t) => text.push_str(t),
                Piece::Image(_) => text.push_str(marker),
            }
        }
        // The server adds the BOS its tokenizer asks for: a template that
        // writes it itself must not give it twice.
        if info.renderer.writes_bos() && !info.bos.is_empty() {
            if let Some(rest) = text.strip_prefix(info.bos.as_str()) {
                text = rest.to_owned();
            }
        }
        // The images' tokens are the server's to count: the context is
        // checked with the text's, and the server refuses the rest.
        let mut counted = segments.images().count();
        for (piece, _) in segments.parts() {
            counted += self
                .tokenize(piece, false, true, params.stop_check.deadline)?
                .len();
        }
        let n_predict = self.budget(counted, &params)?;
        if n_predict == 0 {
            return Ok(RemoteStream::ended(
                FinishReason::Length,
                counted as u32,
                parts,
                params.logprobs.map(|l| l.top),
            ));
        }
        let files = segments
            .images()
            .map(|image| {
                image.png_base64().map_err(|e| InferenceError::ImageFailed {
                    detail: e.to_string(),
                })
            })
            .collect::<InferenceResult<Vec<String>>>()?;
        let mut body = llama_server::completion_request(&[], &params, n_predict);
        body["prompt"] = json!({"prompt_string": text, "multimodal_data": files});
        self.stream_completion(body, &params, n_predict, counted as u32, parts)
    }

    /// Post `body` to llama-server's `/completion` and read its events.
    fn stream_completion(
        &self,
        mut body: Json,
        params: &GenerateParams,
        n_predict: u32,
        prompt_tokens: u32,
        parts: Option<Parts>,
    ) -> InferenceResult<RemoteStream> {
        if let Some(choice) = &params.lora {
            let adapters = self.server_adapters();
            body["lora"] = llama_server::lora_field(adapters, choice).map_err(|detail| {
                InferenceError::InvalidOption {
                    key: "lora",
                    detail,
                }
            })?;
        }
        let events = self
            .http
            .post_events("/completion", &body, params.stop_check)?;
        Ok(RemoteStream::new(
            events,
            stream::Wire::LlamaServer,
            self.http.shown().to_owned(),
            params.stop_check,
            prompt_tokens,
            parts,
            self.asked(n_predict, params),
        ))
    }

    /// Check the context, then start llama-server's completion of `tokens`.
    fn complete_tokens(
        &self,
        tokens: Vec<i64>,
        params: GenerateParams,
        parts: Option<Parts>,
    ) -> InferenceResult<RemoteStream> {
        let n_predict = self.budget(tokens.len(), &params)?;
        let prompt_tokens = tokens.len() as u32;
        if n_predict == 0 {
            return Ok(RemoteStream::ended(
                FinishReason::Length,
                prompt_tokens,
                parts,
                params.logprobs.map(|l| l.top),
            ));
        }
        let body = llama_server::completion_request(&tokens, &params, n_predict);
        self.stream_completion(body, &params, n_predict, prompt_tokens, parts)
    }

    fn start_openai(
        &self,
        path: &str,
        body: Json,
        params: GenerateParams,
        parts: Option<Parts>,
        chat: bool,
    ) -> InferenceResult<RemoteStream> {
        self.check_context(params.n_ctx)?;
        let events = self.http.post_events(path, &body, params.stop_check)?;
        Ok(RemoteStream::new(
            events,
            stream::Wire::OpenAi {
                engine: self.engine,
                chat,
            },
            self.http.shown().to_owned(),
            params.stop_check,
            0,
            parts,
            self.asked(params.max_tokens, &params),
        ))
    }

    /// What a reply of at most `max_tokens` tokens may claim.
    fn asked(&self, max_tokens: u32, params: &GenerateParams) -> limits::Asked {
        limits::Asked {
            max_tokens,
            top: params.logprobs.map(|l| l.top),
            n_vocab: self.n_vocab,
        }
    }

    /// `nCtx` must fit one of the server's slots (when it says how large).
    fn check_context(&self, n_ctx: u32) -> Result<(), RemoteError> {
        if self.slot_ctx > 0 && n_ctx > self.slot_ctx {
            return Err(RemoteError::ContextTooLarge {
                n_ctx,
                server: self.slot_ctx,
            });
        }
        Ok(())
    }

    /// How many tokens may be generated after a prompt of `prompt` tokens:
    /// `maxTokens`, cut at the end of `nCtx`, which must fit a slot.
    fn budget(&self, prompt: usize, params: &GenerateParams) -> InferenceResult<u32> {
        self.check_context(params.n_ctx)?;
        if prompt == 0 {
            return Err(InferenceError::EmptyPrompt);
        }
        if prompt > params.n_ctx as usize {
            return Err(InferenceError::PromptTooLong {
                tokens: prompt,
                n_ctx: params.n_ctx,
            });
        }
        Ok(params.max_tokens.min(params.n_ctx - prompt as u32))
    }
}

/// Which engine answers: llama-server publishes `/props` with its
/// generation settings; vLLM and SGLang name themselves as the owner of
/// their models.
fn detect(http: &Http, deadline: Option<Instant>) -> Result<EngineKind, RemoteError> {
    match http.get_json("/props", "llama-server", deadline) {
        Ok(props) if props.get("default_generation_settings").is_some() => {
            return Ok(EngineKind::LlamaServer)
        }
        Ok(_) => {}
        Err(RemoteError::Status { status, .. }) if status == 404 || status == 405 => {}
        Err(RemoteError::BadBody { .. }) => {}
        Err(e) => return Err(e),
    }
    let models = http.get_json("/v1/models", "an OpenAI-compatible server", deadline)?;
    let owners = openai::owners(&models);
    if owners.iter().any(|o| o == "vllm") {
        Ok(EngineKind::Vllm)
    } else if owners.iter().any(|o| o == "sglang") {
        Ok(EngineKind::Sglang)
    } else {
        Err(RemoteError::UnknownEngine {
            url: http.shown().to_owned(),
            detail: format!(
                "no /props, and its models are owned by {}",
                if owners.is_empty() {
                    "nobody".to_owned()
                } else {
                    owners.join(", ")
                }
            ),
        })
    }
}

fn choose_model(
    http: &Http,
    served: &[openai::ServedModel],
    wanted: Option<&str>,
) -> Result<openai::ServedModel, RemoteError> {
    let available = || {
        served
            .iter()
            .map(|m| format!("\"{}\"", m.id))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match wanted {
        Some(name) => served
            .iter()
            .find(|m| m.id == name || m.aliases.iter().any(|a| a == name))
            .cloned()
            .ok_or_else(|| RemoteError::NoSuchModel {
                url: http.shown().to_owned(),
                model: name.to_owned(),
                available: available(),
            }),
        None => match served {
            [] => Err(RemoteError::NoModel {
                url: http.shown().to_owned(),
            }),
            [only] => Ok(only.clone()),
            _ => Err(RemoteError::WhichModel {
                url: http.shown().to_owned(),
                available: available(),
            }),
        },
    }
}
