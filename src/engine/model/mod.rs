//! A loaded GGUF model and the calls made on it.

use std::path::{Path, PathBuf};

use std::sync::atomic::AtomicU32;
use std::sync::{Arc, Mutex, OnceLock};

use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::LlamaModel;

use crate::engine::cache::persistent::FileId;
use crate::engine::cache::prefix_cache;
use crate::engine::cache::prefix_store::ModelIdentity;
use crate::engine::llama::context::{Context, Shape};
use crate::engine::llama::devices::{self};
use crate::engine::llama::runtime::{backend, logged};

use crate::backend::error::{InferenceResult, LoadError};
use crate::backend::params::{LoadParams, Pooling};
use crate::chat::plain_text::ControlTexts;
use crate::chat::{self};
use crate::engine::decode::sampler::GrammarCache;
use crate::engine::decode::session::Sessions;
use crate::engine::llama::lora::Adapters;
use crate::engine::llama::shelf::Shelf;
use crate::engine::llama::threads::Claim;
use crate::engine::llama::vision::Projector;
use file::state_bound;

mod calls;
mod file;
mod prompt;

/// ggml's default polling level, kept for a pool of fixed size.
const FIXED_POLL: u32 = 50;

/// What a model keeps between calls: the contexts of the last calls (with
/// their KV caches) and the grammars parsed so far. They point into the
/// model and hold a strong reference to it, so it outlives them. Contexts
/// are lent to one call at a time ([`Shelf`]): calls on several threads at
/// once each evaluate in a context of their own.
#[derive(Debug, Default)]
struct Reusable {
    sessions: Arc<Sessions>,
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
    /// The image projector loaded beside the model (`mmproj`).
    projector: Option<Arc<Projector>>,
    /// The LoRA adapters loaded with it, which calls choose among.
    adapters: Adapters,
    /// How many contexts of each shelf may be kept under different adapter
    /// sets before a call switches one to its set (`lora_contexts`).
    set_contexts: usize,
}

impl Model {
    /// Load the GGUF file at `path`. The file is checked before llama.cpp sees
    /// it, so that the common mistakes get a precise message.
    pub fn load(path: &Path, params: &LoadParams) -> Result<Self, LoadError> {
        params.check()?;
        crate::backend::model_file::check_file(path)?;
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
        let model = Arc::new(loaded.map_err(|e| LoadError::Rejected {
            path: path.to_path_buf(),
            detail: log.unwrap_or_else(|| e.to_string()),
        })?);
        let projector = match &params.mmproj {
            Some(mmproj) => {
                crate::backend::model_file::check_file(mmproj)?;
                let use_gpu = params.n_gpu_layers > 0;
                Some(Arc::new(Projector::load(
                    &model,
                    mmproj,
                    use_gpu,
                    params.n_threads,
                )?))
            }
            None => None,
        };
        // Before any context: llama.cpp sizes a context's graphs by the
        // adapters its model has.
        let adapters = Adapters::load(&model, path, &params.lora, |p| {
            FileId::of(p).map_or(0, |f| crate::hashing::hash_of(&f))
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
                projector: params.mmproj.as_deref().and_then(|p| FileId::of(p).ok()),
                bound: state_bound(&model),
            });
        let loaded = Self {
            model,
            reusable: Reusable::default(),
            cache_owner: prefix_cache::Owner {
                model: prefix_cache::new_owner(),
                shared,
                adapters: 0,
            },
            last_n_ctx: AtomicU32::new(0),
            n_threads: params.n_threads,
            n_gpu_layers: params.n_gpu_layers,
            main_gpu: params.main_gpu,
            share_cores: params.share_cores,
            embedding: params.embedding.then_some(params.pooling),
            path: path.to_path_buf(),
            renderer: OnceLock::new(),
            control: OnceLock::new(),
            projector,
            adapters,
            set_contexts: params.lora_contexts as usize,
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
    /// (at most as many as calls ran at once, or as `lora_contexts`).
    #[doc(hidden)]
    pub fn kept_sessions(&self) -> usize {
        self.reusable.sessions.kept()
    }

    pub fn path(&self) -> &Path {
        &self.path
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
    pub(crate) fn claim(&self) -> Option<Claim> {
        self.cores().map(Claim::take)
    }

    /// The threads whose share of the cores a call claims (`None`: the
    /// model runs a fixed number of threads).
    fn cores(&self) -> Option<u32> {
        self.share_cores.then_some(self.n_threads)
    }
}

impl Drop for Model {
    /// Its saved prefixes can serve no other model.
    fn drop(&mut self) {
        prefix_cache::forget_owner(self.cache_owner.model);
    }
}
