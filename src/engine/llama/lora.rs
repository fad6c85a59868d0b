//! LoRA adapters: loaded with a model, checked to fit it, and applied to a
//! context at the scales a call chooses.
//!
//! llama.cpp applies adapters per context (every sequence of it), with the
//! scale as a constant of the graph: a change of set rebuilds the graph
//! (its memory is reserved again on the next evaluation), and the keys and
//! values computed under one set are not those of another. So a call sets
//! its context's adapters before it evaluates anything, and what a context
//! or a saved prefix holds is labelled with the set it was computed under
//! ([`ActiveSet::id`]).

use std::ffi::{CStr, CString};
use std::path::Path;
use std::ptr::NonNull;
use std::sync::Arc;

use llama_cpp_2::model::LlamaModel;
use llama_cpp_sys_2 as sys;

use super::context::{model_ptr, Context};
use super::runtime::logged;
use crate::backend::error::{InferenceError, InferenceResult, LoadError};
use crate::backend::params::{lora_scale_ok, LoraSpec, MAX_LORA_SCALE};

/// One adapter loaded for a model. The pointer is valid while the model
/// lives: llama.cpp frees the adapters it loaded for a model with it, and
/// [`Adapters`] keeps the model alive.
#[derive(Debug)]
struct Adapter {
    raw: NonNull<sys::llama_adapter_lora>,
    spec: LoraSpec,
    /// The file's identity when it was loaded (the caller's hash of it):
    /// what labels the states computed under it in the store shared by
    /// processes.
    file: u64,
}

/// The adapters loaded with a model, in the order given.
#[derive(Debug)]
pub struct Adapters {
    list: Vec<Adapter>,
    /// Keeps every adapter's memory alive (llama.cpp frees them with the
    /// model).
    _model: Arc<LlamaModel>,
}

// SAFETY: the adapters are written once, by `llama_adapter_lora_init`,
// before this value exists; afterwards llama.cpp only reads them (each
// evaluation of a context that applies them), from any thread. The model
// that owns their memory is `Send + Sync` and kept alive by `_model`.
unsafe impl Send for Adapters {}
// SAFETY: as above: nothing writes them after loading.
unsafe impl Sync for Adapters {}

/// The adapters one call applies and their scales (none at scale 0), and
/// the label of what is computed under them: 0 for none, else a hash of
/// the adapters' files and scales.
#[derive(Debug, Clone, PartialEq)]
pub struct ActiveSet<'a> {
    raw: Vec<NonNull<sys::llama_adapter_lora>>,
    scales: Vec<f32>,
    pub id: u64,
    /// Borrowed from the adapters, so that the pointers cannot outlive them.
    _adapters: std::marker::PhantomData<&'a Adapters>,
}

impl ActiveSet<'_> {
    /// No adapter: the base model.
    pub fn none() -> Self {
        Self {
            raw: Vec::new(),
            scales: Vec::new(),
            id: 0,
            _adapters: std::marker::PhantomData,
        }
    }
}

/// A GGUF file's header (metadata and tensor list), read without its data.
struct Header(NonNull<sys::gguf_context>);

impl Header {
    fn read(path: &Path) -> Option<Self> {
        let c_path = CString::new(path.to_str()?).ok()?;
        let params = sys::gguf_init_params {
            no_alloc: true,
            ctx: std::ptr::null_mut(),
        };
        // SAFETY: a NUL-terminated path; a file gguf cannot read gives NULL
        // (its reader checks every count and size against the file).
        let (raw, _log) = logged(|| unsafe { sys::gguf_init_from_file(c_path.as_ptr(), params) });
        NonNull::new(raw).map(Self)
    }

    /// The string value of `key`, if it has one.
    fn string(&self, key: &CStr) -> Option<String> {
        // SAFETY: a live header; the value is read only when it is a string
        // (gguf aborts on a read of the wrong type), and copied at once.
        unsafe {
            let id = sys::gguf_find_key(self.0.as_ptr(), key.as_ptr());
            if id < 0 || sys::gguf_get_kv_type(self.0.as_ptr(), id) != sys::GGUF_TYPE_STRING {
                return None;
            }
            let value = sys::gguf_get_val_str(self.0.as_ptr(), id);
            (!value.is_null()).then(|| CStr::from_ptr(value).to_string_lossy().into_owned())
        }
    }

    fn has_tensor(&self, name: &CStr) -> bool {
        // SAFETY: a live header and a NUL-terminated name.
        unsafe { sys::gguf_find_tensor(self.0.as_ptr(), name.as_ptr()) >= 0 }
    }

    fn has_key(&self, key: &CStr) -> bool {
        // SAFETY: a live header and a NUL-terminated key.
        unsafe { sys::gguf_find_key(self.0.as_ptr(), key.as_ptr()) >= 0 }
    }
}

impl Drop for Header {
    fn drop(&mut self) {
        // SAFETY: made by `gguf_init_from_file`, freed once.
        unsafe { sys::gguf_free(self.0.as_ptr()) }
    }
}

impl Adapters {
    /// Load the adapters `specs` for `model` (read from `model_path`);
    /// `identity` labels an adapter's file (its device, inode, size and
    /// time, hashed), for the caches.
    /// Refused with the adapter's name and why: a file that is not an
    /// adapter, one made for another architecture or shape of model, and
    /// one that changes the token embeddings of a model whose output head
    /// is those same embeddings (llama.cpp would apply it to the head too,
    /// where its shape cannot multiply, and abort the process).
    pub fn load(
        model: &Arc<LlamaModel>,
        model_path: &Path,
        specs: &[LoraSpec],
        identity: impl Fn(&Path) -> u64,
    ) -> Result<Self, LoadError> {
        let mut list = Vec::with_capacity(specs.len());
        let tied = !specs.is_empty() && tied_head(model_path);
        for spec in specs {
            let rejected = |detail: String| LoadError::LoraRejected {
                name: spec.name.clone(),
                path: spec.path.clone(),
                detail,
            };
            crate::backend::model_file::check_file(&spec.path)
                .map_err(|e| rejected(file_problem(&e)))?;
            let header = Header::read(&spec.path)
                .ok_or_else(|| rejected("it is not a readable GGUF file".into()))?;
            check_header(model, &header, tied).map_err(rejected)?;
            let c_path = spec
                .path
                .to_str()
                .and_then(|p| CString::new(p).ok())
                .ok_or_else(|| rejected("the path is not valid UTF-8".into()))?;
            let raw_model = model_ptr(model);
            // SAFETY: a live model that no context uses yet (adapters are
            // loaded before the model is handed out) and a NUL-terminated
            // path; a failure returns NULL and says why in the log.
            let (raw, log) = logged(|| unsafe {
                sys::llama_adapter_lora_init(raw_model.as_ptr(), c_path.as_ptr())
            });
            let raw = NonNull::new(raw).ok_or_else(|| {
                rejected(log.map_or_else(
                    || "llama.cpp could not load it".to_owned(),
                    |l| clean_log(&l),
                ))
            })?;
            list.push(Adapter {
                raw,
                spec: spec.clone(),
                file: identity(&spec.path),
            });
        }
        Ok(Self {
            list,
            _model: Arc::clone(model),
        })
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Each adapter's name, path and load-time scale, in load order.
    pub fn specs(&self) -> impl Iterator<Item = &LoraSpec> {
        self.list.iter().map(|a| &a.spec)
    }

    /// The set a call applies: `choice` by name with its scales (adapters
    /// not named: none), or with `None` every adapter at its load-time
    /// scale. A name the model was not loaded with is refused.
    pub fn resolve(&self, choice: Option<&[(String, f32)]>) -> InferenceResult<ActiveSet<'_>> {
        let mut scales: Vec<f32> = match choice {
            None => self.list.iter().map(|a| a.spec.scale()).collect(),
            Some(_) => vec![0.0; self.list.len()],
        };
        for (name, scale) in choice.unwrap_or_default() {
            let Some(i) = self.list.iter().position(|a| &a.spec.name == name) else {
                return Err(InferenceError::InvalidOption {
                    key: "lora",
                    detail: self.unknown(name),
                });
            };
            if !lora_scale_ok(*scale) {
                return Err(InferenceError::InvalidOption {
                    key: "lora",
                    detail: format!(
                        "gives '{name}' the scale {scale}: a number from -{MAX_LORA_SCALE} to {MAX_LORA_SCALE} is expected"
                    ),
                });
            }
            scales[i] = *scale;
        }
        let mut set = ActiveSet::none();
        let mut label = Vec::new();
        for (adapter, scale) in self.list.iter().zip(scales) {
            // llama.cpp leaves out an adapter at scale 0: so does the label.
            if scale == 0.0 {
                continue;
            }
            set.raw.push(adapter.raw);
            set.scales.push(scale);
            label.push((adapter.file, adapter.spec.path.as_os_str(), scale.to_bits()));
        }
        if !label.is_empty() {
            set.id = crate::hashing::hash_of(&label).max(1);
        }
        Ok(set)
    }

    fn unknown(&self, name: &str) -> String {
        if self.list.is_empty() {
            return format!(
                "names the adapter '{name}', but the model was loaded with none (load adapters with Model::load($path, ['lora' => [['path' => …, 'name' => …]]]))"
            );
        }
        let names: Vec<String> = self
            .list
            .iter()
            .map(|a| format!("'{}'", a.spec.name))
            .collect();
        format!(
            "names the adapter '{name}', which the model was not loaded with (its adapters: {})",
            names.join(", ")
        )
    }
}

impl Context {
    /// Apply `set` to every later evaluation of this context (nothing
    /// happens when it is the set applied already).
    pub fn set_adapters(&mut self, set: &ActiveSet<'_>) -> InferenceResult<()> {
        let mut raw: Vec<*mut sys::llama_adapter_lora> =
            set.raw.iter().map(|p| p.as_ptr()).collect();
        let mut scales = set.scales.clone();
        let ctx = self.raw();
        // SAFETY: a live context used by this thread alone (`&mut self`),
        // and adapters of its model, alive while `set` borrows them; the
        // arrays hold `raw.len()` entries each, read during the call only.
        let code = unsafe {
            sys::llama_set_adapters_lora(
                ctx.as_ptr(),
                raw.as_mut_ptr(),
                raw.len(),
                scales.as_mut_ptr(),
            )
        };
        if code != 0 {
            return Err(InferenceError::InvalidOption {
                key: "lora",
                detail: format!("could not be applied (llama.cpp returned {code})"),
            });
        }
        self.applied_adapters(set.id);
        Ok(())
    }
}

/// Whether the model at `path` computes its output with its token
/// embeddings (it has no `output.weight`). A model split in several files
/// may hold the head in another: not counted as tied.
fn tied_head(path: &Path) -> bool {
    Header::read(path)
        .is_some_and(|h| !h.has_tensor(c"output.weight") && !h.has_key(c"split.count"))
}

/// What the adapter's header says against `model`: its type and
/// architecture, and an embeddings change on a tied head.
fn check_header(model: &LlamaModel, header: &Header, tied: bool) -> Result<(), String> {
    let kind = header.string(c"general.type").unwrap_or_default();
    if kind != "adapter" || header.string(c"adapter.type").as_deref() != Some("lora") {
        return Err(format!(
            "it is not a LoRA adapter (its general.type is '{kind}'; a model file given as an adapter?)"
        ));
    }
    let theirs = header.string(c"general.architecture").unwrap_or_default();
    let ours = model
        .meta_val_str("general.architecture")
        .unwrap_or_default();
    if theirs != ours {
        return Err(format!(
            "it was made for a '{theirs}' model, and this model is '{ours}' (an adapter only fits the model it was trained on)"
        ));
    }
    if tied && header.has_tensor(c"token_embd.weight.lora_a") {
        return Err("it changes token_embd.weight, which this model also uses as its output head (it has no output.weight); llama.cpp cannot apply such an adapter to a tied head".into());
    }
    Ok(())
}

/// A file check's error, said of an adapter rather than a model.
fn file_problem(error: &LoadError) -> String {
    match error {
        LoadError::NotFound { .. } => "no such file".into(),
        LoadError::IsDirectory { .. } => "it is a directory, not a GGUF file".into(),
        LoadError::NotAFile { .. } => "it is not a regular file".into(),
        LoadError::Empty { .. } => "the file is empty".into(),
        LoadError::NotGguf { found, .. } => {
            format!("it is not a GGUF file (it starts with {found:?})")
        }
        LoadError::Unreadable { reason, .. } => format!("it cannot be read: {reason}"),
        other => other.to_string(),
    }
}

/// llama.cpp's log of a refused adapter: the reason it gives, without the
/// function name and the "failed to apply" it starts with.
fn clean_log(log: &str) -> String {
    const FAILED: &str = "failed to apply lora adapter: ";
    let why: Vec<&str> = log
        .split("; ")
        .filter_map(|line| line.split_once(FAILED).map(|(_, why)| why.trim()))
        .collect();
    if why.is_empty() {
        format!("llama.cpp: {}", log.trim())
    } else {
        format!("llama.cpp: {}", why.join("; "))
    }
}
