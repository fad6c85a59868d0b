//! A loaded GGUF model and the calls made on it.

use std::path::{Path, PathBuf};

use std::borrow::Cow;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::thread::ThreadId;

use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;
use serde_json::{Map, Value as Json};

use super::backend::{backend, logged};
use super::batch;
use super::context::{self, Context, Shape};
use super::devices::{self, Device};
use super::embed;
use super::generate;
use super::persistent::FileId;
use super::prefix_cache;
use super::prefix_store::ModelIdentity;

mod file;
use super::sampler::{GrammarCache, GrammarSampler, Sampler};
use super::session::Session;
use super::shelf::{Fit, Shelf};
use super::stream::Stream;
use super::threads::Claim;
use crate::chat::plain_text::{render_segments, ControlTexts, Inputs, Markup, Segments};
use crate::chat::reasoning::Parts;
use crate::chat::tools::{ToolPlan, Tools};
use crate::chat::{self, Message};
use crate::common::error::{InferenceError, InferenceResult, List, LoadError};
use crate::common::params::{Constraint, GenerateParams, LoadParams, Pooling, StopCheck};
use crate::common::Generation;
pub(crate) use file::check_file;
use file::state_bound;

/// ggml's default polling level, kept for a pool of fixed size.
const FIXED_POLL: u32 = 50;

/// What a model keeps between calls: the contexts of the last calls (with
/// their KV caches) and the grammars parsed so far. They point into the
/// model and hold a strong reference to it, so it outlives them. Contexts
/// are lent to one call at a time ([`Shelf`]): calls on several threads at
/// once each evaluate in a context of their own.
#[derive(Debug, Default)]
struct Reusable {
    sessions: Shelf<Session>,
    /// The multi-sequence contexts of `chat_many` / `raw_many`, kept for the
    /// next call of the same shape (creating one costs a graph reservation
    /// and the KV allocation).
    many: Shelf<Context>,
    /// The embeddings contexts of `embed_many`, kept for the next call of
    /// the same shape.
    embedder: Shelf<Context>,
    /// Held while a grammar is looked up or parsed, not while it is used
    /// (each call samples with its own copy).
    grammars: Mutex<GrammarCache>,
}

/// What `Model::info()` reports.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelInfo {
    /// Where the layers run: `cpu`, or the main GPU's backend when layers
    /// are offloaded.
    pub backend: String,
    /// The backends compiled into this build.
    pub backends: Vec<&'static str>,
    pub devices: Vec<Device>,
    /// Layers on the GPU, out of `layers` (the repeating layers and the
    /// output layer, as llama.cpp counts them).
    pub gpu_layers: u32,
    pub layers: u32,
    /// The context the model was trained for.
    pub context_length: u32,
    /// The context of the model's last call (`None` before the first).
    pub context_size: Option<u32>,
    pub threads: u32,
    pub file_size: Option<u64>,
    pub parameters: u64,
    /// `general.file_type` by name (`Q4_1`, `Q4_K_M`, …).
    pub quantization: Option<String>,
}

/// A model loaded into memory (memory-mapped by default).
///
/// The llama.cpp model is shared (`Arc`) with everything that points into it
/// (the context, parsed grammars), so it is freed after the last of them,
/// whatever order the fields below are declared or dropped in.
///
/// A `Model` is `Send + Sync`: threads may share one (`Arc<Model>`) and call
/// it at once. The weights are read-only; each call evaluates in a context
/// of its own, taken from those the model keeps or made for it.
#[derive(Debug)]
pub struct Model {
    model: Arc<LlamaModel>,
    reusable: Reusable,
    /// Whose its saved prefixes are (see [`prefix_cache`]).
    cache_owner: prefix_cache::Owner,
    /// The threads on which a [`Stream`] of this model is open: their other
    /// calls are refused until it ends (calls of other threads are not).
    streams: Mutex<Vec<ThreadId>>,
    /// The context size of the last generating call (0 before the first).
    last_n_ctx: AtomicU32,
    n_threads: u32,
    n_gpu_layers: u32,
    main_gpu: Option<u32>,
    share_cores: bool,
    /// Loaded for embeddings, with this pooling (`None`: the GGUF's).
    embedding: Option<Option<Pooling>>,
    path: PathBuf,
    /// The chat template, read on first use.
    renderer: OnceLock<chat::Renderer>,
    /// The texts of the control tokens, gathered on first use.
    control: OnceLock<ControlTexts>,
}

impl Model {
    /// Load the GGUF file at `path`. The file is checked before llama.cpp sees
    /// it, so that the common mistakes get a precise message.
    pub fn load(path: &Path, params: &LoadParams) -> Result<Self, LoadError> {
        params.check()?;
        check_file(path)?;
        let utf8 = path.to_str().ok_or_else(|| LoadError::PathNotUtf8 {
            path: path.to_path_buf(),
        })?;
        let backend = backend()?;
        let main_gpu = devices::check(params)?;
        let mut model_params = LlamaModelParams::default();
        if let Some(device) = main_gpu {
            model_params =
                model_params
                    .with_devices(&[device])
                    .map_err(|e| LoadError::Backend {
                        reason: e.to_string(),
                    })?;
        }
        let model_params = model_params
            .with_n_gpu_layers(params.n_gpu_layers)
            .with_use_mmap(params.use_mmap)
            .with_use_mlock(params.use_mlock);
        let (loaded, log) = logged(|| LlamaModel::load_from_file(backend, utf8, &model_params));
        let model = loaded.map_err(|e| LoadError::Rejected {
            path: path.to_path_buf(),
            detail: log.unwrap_or_else(|| e.to_string()),
        })?;
        // Generating models share their prefixes with the machine's other
        // processes when the file can be identified.
        let shared = FileId::of(path)
            .ok()
            .filter(|_| !params.embedding)
            .map(|file| ModelIdentity {
                file,
                n_gpu_layers: params.n_gpu_layers,
                main_gpu: params.main_gpu,
                n_vocab: model.n_vocab(),
                n_layer: model.n_layer(),
                n_embd: model.n_embd(),
                bound: state_bound(&model),
            });
        let loaded = Self {
            model: Arc::new(model),
            reusable: Reusable::default(),
            cache_owner: prefix_cache::Owner {
                model: prefix_cache::new_owner(),
                shared,
            },
            streams: Mutex::new(Vec::new()),
            last_n_ctx: AtomicU32::new(0),
            n_threads: params.n_threads,
            n_gpu_layers: params.n_gpu_layers,
            main_gpu: params.main_gpu,
            share_cores: params.share_cores,
            embedding: params.embedding.then_some(params.pooling),
            path: path.to_path_buf(),
            renderer: OnceLock::new(),
            control: OnceLock::new(),
        };
        // Rank pooling reads a classification head, which only a
        // cross-encoder has; without one llama.cpp would return a number
        // from the hidden state instead of a score.
        if params.embedding
            && params.pooling == Some(Pooling::Rank)
            && loaded.declared_pooling() != Some(Pooling::Rank)
        {
            return Err(LoadError::NoRankHead {
                path: path.to_path_buf(),
            });
        }
        Ok(loaded)
    }

    /// The llama.cpp model.
    pub(super) fn model(&self) -> &LlamaModel {
        &self.model
    }

    /// The llama.cpp model, for tests that judge this crate's results with
    /// llama.cpp's own functions.
    #[doc(hidden)]
    pub fn llama_model(&self) -> &LlamaModel {
        &self.model
    }

    /// How many generating contexts the model keeps for its next calls
    /// (at most as many as calls ran at once).
    #[doc(hidden)]
    pub fn kept_sessions(&self) -> usize {
        self.reusable.sessions.inspect(<[_]>::len)
    }

    /// Whether a stream of this model is open on the calling thread.
    pub fn is_streaming(&self) -> bool {
        let me = std::thread::current().id();
        self.streams().contains(&me)
    }

    fn streams(&self) -> std::sync::MutexGuard<'_, Vec<ThreadId>> {
        // Pushes and removals of ids only: a poisoned list is still whole.
        self.streams.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The context length the model was trained for.
    pub fn context_length(&self) -> u32 {
        self.model().n_ctx_train()
    }

    /// What the model runs on and what it is: see [`ModelInfo`].
    pub fn info(&self) -> ModelInfo {
        let model = self.model();
        let layers = model.n_layer() + 1;
        let all = devices::devices();
        let gpus: Vec<&Device> = all.iter().filter(|d| d.is_gpu()).collect();
        let main = gpus.get(self.main_gpu.unwrap_or(0) as usize).copied();
        let gpu_layers = match main {
            Some(_) => self.n_gpu_layers.min(layers),
            None => 0,
        };
        let backend = match main {
            Some(d) if gpu_layers > 0 => d.backend.clone(),
            _ => "cpu".to_owned(),
        };
        let file_type = model
            .meta_val_str("general.file_type")
            .ok()
            .and_then(|t| t.trim().parse::<u32>().ok());
        ModelInfo {
            backend,
            backends: devices::compiled_backends(),
            devices: all,
            gpu_layers,
            layers,
            context_length: model.n_ctx_train(),
            context_size: Some(self.last_n_ctx.load(Ordering::Relaxed)).filter(|&n| n > 0),
            threads: self.n_threads,
            file_size: std::fs::metadata(&self.path).map(|m| m.len()).ok(),
            parameters: model.n_params(),
            quantization: file_type.map(devices::file_type_name),
        }
    }

    /// The chat template stored in the GGUF, if any.
    pub fn chat_template(&self) -> Option<String> {
        self.model().chat_template(None).ok()?.to_string().ok()
    }

    /// How conversations are rendered: `"jinja"` (the GGUF's template) or
    /// `"chatml"` (llama.cpp's built-in format, for a GGUF without one).
    pub fn chat_template_kind(&self) -> &'static str {
        self.renderer().kind()
    }

    fn renderer(&self) -> &chat::Renderer {
        self.renderer
            .get_or_init(|| chat::Renderer::of(self.chat_template().as_deref()))
    }

    /// Render a conversation with the model's chat template and `vars`,
    /// ending with the opening of the assistant's turn.
    pub fn render_chat(
        &self,
        messages: &[Message],
        vars: &Map<String, Json>,
    ) -> InferenceResult<String> {
        self.render(messages, vars, None)
    }

    fn render(
        &self,
        messages: &[Message],
        vars: &Map<String, Json>,
        tools: Option<&Json>,
    ) -> InferenceResult<String> {
        let vocab = self.model().vocab();
        let bos = self.special_text(vocab.bos());
        let eos = self.special_text(vocab.eos());
        Ok(self
            .renderer()
            .render(messages, (&bos, &eos), vars, tools)?)
    }

    /// Render a conversation for tokenizing, with the template variables
    /// and tools of `params`: the text of the messages is plain text, and
    /// only the template's own markup may become control tokens — unless
    /// `special_tokens_in_messages` trusts the messages to write control
    /// tokens too.
    pub fn chat_prompt(
        &self,
        messages: &[Message],
        params: &GenerateParams,
    ) -> InferenceResult<Segments> {
        let tools = params.tools.as_ref().map(Tools::template_value);
        let control = self
            .control
            .get_or_init(|| ControlTexts::new(context::control_texts(self.model())));
        render_segments(
            Inputs {
                messages,
                tools: tools.as_ref(),
                vars: &params.template_vars,
            },
            params.special_tokens_in_messages.unwrap_or(false),
            |messages, vars, tools| self.render(messages, vars, tools),
            Markup::Found(control),
        )
    }

    /// The text [`Model::chat`] gives the model for `messages` with
    /// `params` (its tools checked against the template as a chat checks
    /// them).
    pub fn render_prompt(
        &self,
        messages: &[Message],
        params: &GenerateParams,
    ) -> InferenceResult<String> {
        let params = self.plan_tools(params)?;
        Ok(self.chat_prompt(messages, &params)?.text())
    }

    /// `params` with the plan for its tools (their grammar, and when it
    /// starts), from the call format of the model's template.
    fn plan_tools<'p>(
        &self,
        params: &'p GenerateParams,
    ) -> InferenceResult<Cow<'p, GenerateParams>> {
        let Some(tools) = &params.tools else {
            return Ok(Cow::Borrowed(params));
        };
        let format = self.renderer().tool_format()?;
        let grammar = format
            .grammar(tools)
            .map_err(|e| InferenceError::ToolGrammar {
                detail: e.to_string(),
            })?;
        let mut planned = params.clone();
        planned.constraint = grammar.map(Constraint::Grammar);
        planned.tool_plan = Some(ToolPlan::new(format, tools));
        Ok(Cow::Owned(planned))
    }

    /// The tokens of a rendered conversation: its template text with special
    /// tokens parsed, its plain pieces without. The BOS the model's
    /// tokenizer asks for is added unless the template writes it itself.
    pub fn chat_tokens(&self, prompt: &Segments) -> Vec<LlamaToken> {
        let vocab = self.model().vocab();
        let tokens = prompt.tokens(self.renderer().writes_bos(), |text, add_bos, special| {
            Ok::<_, std::convert::Infallible>(vocab.tokenize(text.as_bytes(), add_bos, special))
        });
        match tokens {
            Ok(tokens) => tokens,
            Err(never) => match never {},
        }
    }

    /// A special token's text (empty for none).
    fn special_text(&self, token: LlamaToken) -> String {
        if token.0 < 0 || token.0 >= self.model().vocab().n_tokens() {
            return String::new();
        }
        String::from_utf8_lossy(&self.model().vocab().token_to_piece(token, true, None))
            .into_owned()
    }

    /// How many tokens `text` is, without BOS; `parse_special` reads
    /// control tokens' markup as those tokens rather than as text.
    pub fn count_tokens(&self, text: &str, parse_special: bool) -> usize {
        self.model()
            .vocab()
            .tokenize(text.as_bytes(), false, parse_special)
            .len()
    }

    /// Tokenize a prompt. `add_bos` adds the special tokens the model's
    /// tokenizer asks for at the start of a sequence (BOS for most models).
    pub fn tokenize(&self, text: &str, add_bos: bool) -> Vec<LlamaToken> {
        self.model()
            .vocab()
            .tokenize(text.as_bytes(), add_bos, true)
    }

    /// Render a transcript with the model's chat template and generate the
    /// assistant's reply.
    pub fn chat(
        &self,
        messages: &[Message],
        params: &GenerateParams,
    ) -> InferenceResult<Generation> {
        let params = self.plan_tools(params)?;
        let tokens = self.chat_tokens(&self.chat_prompt(messages, &params)?);
        self.generate(&tokens, &params)
    }

    /// Complete `prompt` as plain text.
    pub fn raw(
        &self,
        prompt: &str,
        add_bos: bool,
        params: &GenerateParams,
    ) -> InferenceResult<Generation> {
        let tokens = self.tokenize(prompt, add_bos);
        self.generate(&tokens, params)
    }

    /// Render each transcript of `prompts` with the model's chat template and
    /// generate their replies together, at most `parallel` at a time; the
    /// results are in the order of `prompts`.
    pub fn chat_many(
        &self,
        prompts: &[Vec<Message>],
        params: &GenerateParams,
        parallel: u32,
    ) -> InferenceResult<Vec<Generation>> {
        let params = self.plan_tools(params)?;
        let tokens = prompts
            .iter()
            .enumerate()
            .map(|(i, messages)| {
                self.chat_prompt(messages, &params)
                    .map(|prompt| self.chat_tokens(&prompt))
                    .map_err(|e| e.in_prompt(i))
            })
            .collect::<InferenceResult<Vec<_>>>()?;
        self.generate_many(&tokens, &params, parallel)
    }

    /// Complete each of `prompts` as plain text, together (see
    /// [`Model::chat_many`]).
    pub fn raw_many(
        &self,
        prompts: &[String],
        add_bos: bool,
        params: &GenerateParams,
        parallel: u32,
    ) -> InferenceResult<Vec<Generation>> {
        let tokens: Vec<_> = prompts.iter().map(|p| self.tokenize(p, add_bos)).collect();
        self.generate_many(&tokens, params, parallel)
    }

    fn generate_many(
        &self,
        prompts: &[Vec<LlamaToken>],
        params: &GenerateParams,
        parallel: u32,
    ) -> InferenceResult<Vec<Generation>> {
        let model = &self.model;
        if prompts.is_empty() {
            return Err(InferenceError::NoPrompts);
        }
        for (i, prompt) in prompts.iter().enumerate() {
            generate::check_fits(model, prompt, params.n_ctx).map_err(|e| e.in_prompt(i))?;
        }
        self.refuse_during_stream()?;
        let grammar = self.grammar(params)?;
        let shape = batch::shape_for(prompts, params, parallel);
        let kept = self.reusable.many.take(|c| fit_shape(c, shape));
        let mut ctx = match kept {
            Some(c) => c,
            None => self.new_context(shape)?,
        };
        let claim = self.claim();
        if let Some(claim) = &claim {
            ctx.set_threads(claim.threads());
        }
        ctx.set_stop(params.stop_check);
        let result = batch::run(
            &mut ctx,
            params.cache_prompt.then_some(self.cache_owner),
            model,
            prompts,
            params,
            grammar.as_ref(),
            claim.as_ref(),
        );
        // After an error the cache may not match what the context records.
        if result.is_ok() {
            self.reusable.many.put(ctx);
        }
        result
    }

    /// A pool whose thread count follows the other processes sleeps when
    /// idle (see `Context::new`); a fixed one polls as llama.cpp's tools do.
    fn poll(&self) -> u32 {
        if self.share_cores {
            0
        } else {
            FIXED_POLL
        }
    }

    /// The pooled embedding of each of `texts`, in order (see
    /// [`embed::embed`]). Each text gets the special tokens the model's
    /// tokenizer adds to a sequence (BERT's `[CLS]` and `[SEP]`), and must
    /// fit in the context the model was trained for. `stop` ends the call
    /// with `InferenceError::Aborted` when it comes.
    pub fn embed_many(&self, texts: &[String], stop: StopCheck) -> InferenceResult<Vec<Vec<f32>>> {
        if self.embedding.is_none() {
            return Err(InferenceError::NotForEmbeddings);
        }
        let max = self.context_length();
        let tokens = texts
            .iter()
            .enumerate()
            .map(|(i, text)| {
                let tokens = self.tokenize(text, true);
                if text.is_empty() {
                    Err(InferenceError::EmptyText.in_list(List::Texts, i))
                } else if max > 0 && tokens.len() > max as usize {
                    Err(InferenceError::TextTooLong {
                        tokens: tokens.len(),
                        max,
                    }
                    .in_list(List::Texts, i))
                } else {
                    Ok(tokens)
                }
            })
            .collect::<InferenceResult<Vec<_>>>()?;
        self.embed_tokens(&tokens, stop)
    }

    /// The pooled output of each of `texts` (already tokenized and checked
    /// against the context), in order.
    pub(super) fn embed_tokens(
        &self,
        texts: &[Vec<LlamaToken>],
        stop: StopCheck,
    ) -> InferenceResult<Vec<Vec<f32>>> {
        let Some(pooling) = self.embedding else {
            return Err(InferenceError::NotForEmbeddings);
        };
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let longest = texts.iter().map(Vec::len).max().unwrap_or(1);
        let shape = embed::shape_for(longest, pooling);
        let kept = self.reusable.embedder.take(|c| fit_shape(c, shape));
        let mut ctx = match kept {
            Some(c) => c,
            None => self.new_context(shape)?,
        };
        let claim = self.claim();
        if let Some(claim) = &claim {
            ctx.set_threads(claim.threads());
        }
        ctx.set_stop(stop);
        let result = embed::embed(&mut ctx, texts);
        if result.is_ok() {
            self.reusable.embedder.put(ctx);
        }
        result
    }

    /// A new context of `shape` for this model, with its threads.
    pub(super) fn new_context(&self, shape: Shape) -> InferenceResult<Context> {
        Context::new(&self.model, self.n_threads, shape, self.poll())
    }

    /// The pooling the GGUF declares (`{arch}.pooling_type`), if any.
    pub fn declared_pooling(&self) -> Option<Pooling> {
        let arch = self.model().meta_val_str("general.architecture").ok()?;
        let value = self
            .model()
            .meta_val_str(&format!("{arch}.pooling_type"))
            .ok()?;
        match value.trim().parse::<i32>().ok()? {
            0 => Some(Pooling::None),
            1 => Some(Pooling::Mean),
            2 => Some(Pooling::Cls),
            3 => Some(Pooling::Last),
            4 => Some(Pooling::Rank),
            _ => None,
        }
    }

    /// The share of the cores a call takes, when they are shared.
    pub(super) fn claim(&self) -> Option<Claim> {
        self.share_cores.then(|| Claim::take(self.n_threads))
    }

    /// Refuse a call made on a thread that has a stream of this model open.
    fn refuse_during_stream(&self) -> InferenceResult<()> {
        if self.is_streaming() {
            return Err(InferenceError::StreamInProgress);
        }
        Ok(())
    }

    /// A fresh grammar sampler for the constraint of `params`, parsed once
    /// per model.
    fn grammar(&self, params: &GenerateParams) -> InferenceResult<Option<GrammarSampler>> {
        // A parse that panicked added nothing: the cache is still whole.
        let mut grammars = self
            .reusable
            .grammars
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        grammars.for_params(&self.model, params)
    }

    /// The checks, the sampler and the session of a generation from
    /// `prompt`: the kept session of that size that shares most of the
    /// prompt, else a new one.
    fn prepare(
        &self,
        prompt: &[LlamaToken],
        params: &GenerateParams,
    ) -> InferenceResult<(Session, Sampler)> {
        self.refuse_during_stream()?;
        let model = &self.model;
        generate::check_fits(model, prompt, params.n_ctx)?;
        let sampler = Sampler::new(model, params, self.grammar(params)?);
        let kept = self.reusable.sessions.take(|s| {
            if s.n_ctx() == params.n_ctx && s.is_usable() {
                Fit::Fits(s.shared_with(prompt))
            } else {
                Fit::Misfit
            }
        });
        let session = match kept {
            Some(s) => s,
            None => Session::new(
                model,
                self.cache_owner,
                self.n_threads,
                params.n_ctx,
                self.poll(),
            )?,
        };
        self.last_n_ctx.store(params.n_ctx, Ordering::Relaxed);
        Ok((session, sampler))
    }

    fn generate(
        &self,
        prompt: &[LlamaToken],
        params: &GenerateParams,
    ) -> InferenceResult<Generation> {
        let (mut session, sampler) = self.prepare(prompt, params)?;
        let claim = self.claim();
        let result = generate::run(
            &mut session,
            self.model(),
            sampler,
            prompt,
            params,
            claim.as_ref(),
        );
        // After an error the cache may not match what the session records.
        if result.is_ok() {
            self.reusable.sessions.put(session);
        }
        result
    }

    /// Stream the reply to a transcript (see [`Model::chat`] and [`Stream`]).
    pub fn stream_chat(
        self: &Arc<Self>,
        messages: &[Message],
        params: GenerateParams,
    ) -> InferenceResult<Stream> {
        let params = self.plan_tools(&params)?.into_owned();
        let prompt = self.chat_prompt(messages, &params)?;
        let tokens = self.chat_tokens(&prompt);
        self.stream(tokens, params, Some(Parts::after_prompt(&prompt.text())))
    }

    /// Stream the completion of `prompt` as plain text (see [`Model::raw`]).
    pub fn stream_raw(
        self: &Arc<Self>,
        prompt: &str,
        add_bos: bool,
        params: GenerateParams,
    ) -> InferenceResult<Stream> {
        let tokens = self.tokenize(prompt, add_bos);
        self.stream(tokens, params, None)
    }

    fn stream(
        self: &Arc<Self>,
        prompt: Vec<LlamaToken>,
        params: GenerateParams,
        parts: Option<Parts>,
    ) -> InferenceResult<Stream> {
        let (session, sampler) = self.prepare(&prompt, &params)?;
        let thread = std::thread::current().id();
        self.streams().push(thread);
        Ok(Stream::new(
            Arc::clone(self),
            thread,
            session,
            sampler,
            prompt,
            params,
            parts,
        ))
    }

    /// A stream opened on `thread` ends: the model takes back its session
    /// (`None` when the stream failed and its cache cannot be trusted), and
    /// that thread may call it again.
    pub(super) fn return_session(&self, thread: ThreadId, session: Option<Session>) {
        {
            let mut streams = self.streams();
            if let Some(i) = streams.iter().position(|t| *t == thread) {
                streams.swap_remove(i);
            }
        }
        if let Some(session) = session {
            self.reusable.sessions.put(session);
        }
    }
}

impl Drop for Model {
    /// Its saved prefixes can serve no other model.
    fn drop(&mut self) {
        prefix_cache::forget_owner(self.cache_owner.model);
    }
}

/// How a kept context suits a call that needs `shape`.
fn fit_shape(ctx: &Context, shape: Shape) -> Fit {
    if ctx.shape() == shape && ctx.is_usable() {
        Fit::Fits(0)
    } else {
        Fit::Misfit
    }
}
