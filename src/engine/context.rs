//! A llama.cpp context with a persistent thread pool, owned directly through
//! llama-cpp-sys-2.
//!
//! Why not llama-cpp-2's `LlamaContext`: it gives no way to attach a thread
//! pool. Without one (and without OpenMP, which this build leaves out because
//! libgomp's pool does not survive `fork()`), ggml creates and joins its
//! worker threads for every evaluated batch, which costs several percent of
//! every generated token. With a pool attached, the workers live as long as
//! the context and wait for work by polling briefly, as in llama.cpp's tools.
//!
//! Fork safety: threads do not survive `fork()`. A context created in another
//! process (a PHP-FPM master, `pcntl_fork`) is never used or freed by the
//! child: [`Context::is_usable`] says so, and dropping it there leaks it
//! instead of joining threads that do not exist.

use std::ptr::NonNull;

use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_sys_2 as sys;

use super::backend::{clear_diagnostics, take_diagnostics};
use super::error::{InferenceError, InferenceResult};

/// The raw model pointer inside a `LlamaModel`, which is a single pointer
/// (checked at compile time, so a change of that wrapper breaks the build
/// rather than this read).
fn model_ptr(model: &LlamaModel) -> *mut sys::llama_model {
    const _: () =
        assert!(std::mem::size_of::<LlamaModel>() == std::mem::size_of::<*mut sys::llama_model>());
    // SAFETY: `LlamaModel` holds exactly one field, a non-null
    // `#[repr(transparent)]` pointer to the llama_model; the sizes match.
    unsafe { std::mem::transmute_copy::<LlamaModel, *mut sys::llama_model>(model) }
}

/// A llama.cpp context, its thread pool and its batch buffer.
pub struct Context {
    ctx: NonNull<sys::llama_context>,
    threadpool: NonNull<sys::ggml_threadpool>,
    batch: sys::llama_batch,
    batch_capacity: usize,
    n_vocab: usize,
    n_ctx: u32,
    pid: u32,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("n_ctx", &self.n_ctx)
            .field("pid", &self.pid)
            .finish()
    }
}

impl Context {
    /// A context of `n_ctx` tokens evaluating batches of up to `n_batch`.
    /// The model must outlive it.
    pub fn new(
        model: &LlamaModel,
        n_threads: u32,
        n_ctx: u32,
        n_batch: u32,
    ) -> InferenceResult<Self> {
        let threads = i32::try_from(n_threads).unwrap_or(i32::MAX);
        let failed = |detail: String| InferenceError::ContextFailed { n_ctx, detail };
        // SAFETY: plain constructors; every pointer is checked before use and
        // freed on each error path below.
        unsafe {
            let mut params = sys::llama_context_default_params();
            params.n_ctx = n_ctx;
            params.n_batch = n_batch;
            params.n_ubatch = n_batch;
            params.n_seq_max = 1;
            params.n_threads = threads;
            params.n_threads_batch = threads;
            params.no_perf = true;
            clear_diagnostics();
            let ctx = NonNull::new(sys::llama_init_from_model(model_ptr(model), params))
                .ok_or_else(|| {
                    failed(
                        take_diagnostics()
                            .unwrap_or_else(|| "llama.cpp returned no context".to_owned()),
                    )
                })?;
            let mut tp_params = sys::ggml_threadpool_params_default(threads);
            let Some(threadpool) = NonNull::new(sys::ggml_threadpool_new(&mut tp_params)) else {
                sys::llama_free(ctx.as_ptr());
                return Err(failed("could not start the thread pool".to_owned()));
            };
            sys::llama_attach_threadpool(ctx.as_ptr(), threadpool.as_ptr(), threadpool.as_ptr());
            let capacity = n_batch.max(1);
            let batch = sys::llama_batch_init(capacity as i32, 0, 1);
            Ok(Self {
                ctx,
                threadpool,
                batch,
                batch_capacity: capacity as usize,
                n_vocab: model.n_vocab().max(0) as usize,
                n_ctx,
                pid: std::process::id(),
            })
        }
    }

    pub fn n_ctx(&self) -> u32 {
        self.n_ctx
    }

    /// Largest number of tokens one [`Context::decode`] takes.
    pub fn batch_capacity(&self) -> usize {
        self.batch_capacity
    }

    /// False in a process forked after the context was created: its threads
    /// are gone there.
    pub fn is_usable(&self) -> bool {
        self.pid == std::process::id()
    }

    /// Evaluate `tokens` at positions `start..` of sequence 0, keeping logits
    /// for the last one when `logits_for_last`.
    pub fn decode(
        &mut self,
        tokens: &[LlamaToken],
        start: usize,
        logits_for_last: bool,
    ) -> InferenceResult<()> {
        let out_of_range = || InferenceError::DecodeFailed {
            detail: format!(
                "{} tokens at position {start} do not fit a batch of {} in a context of {}",
                tokens.len(),
                self.batch_capacity,
                self.n_ctx
            ),
        };
        if tokens.is_empty()
            || tokens.len() > self.batch_capacity
            || start + tokens.len() > self.n_ctx as usize
        {
            return Err(out_of_range());
        }
        // SAFETY: the batch was allocated for `batch_capacity` tokens with one
        // sequence id each, and `tokens.len()` is within it.
        let code = unsafe {
            let b = &mut self.batch;
            for (i, token) in tokens.iter().enumerate() {
                *b.token.add(i) = token.0;
                *b.pos.add(i) = (start + i) as i32;
                *b.n_seq_id.add(i) = 1;
                **b.seq_id.add(i) = 0;
                *b.logits.add(i) = i8::from(logits_for_last && i + 1 == tokens.len());
            }
            b.n_tokens = tokens.len() as i32;
            clear_diagnostics();
            sys::llama_decode(self.ctx.as_ptr(), *b)
        };
        if code != 0 {
            return Err(InferenceError::DecodeFailed {
                detail: take_diagnostics()
                    .unwrap_or_else(|| format!("llama_decode returned {code}")),
            });
        }
        Ok(())
    }

    /// The logits of the last token of the last batch (which must have asked
    /// for them).
    pub fn last_logits(&self) -> InferenceResult<&[f32]> {
        let last = self.batch.n_tokens - 1;
        // SAFETY: llama.cpp returns null for an index without logits, else a
        // row of n_vocab floats that lives until the next decode, which needs
        // `&mut self`.
        unsafe {
            let row = sys::llama_get_logits_ith(self.ctx.as_ptr(), last);
            if row.is_null() {
                return Err(InferenceError::DecodeFailed {
                    detail: "no logits for the last token".to_owned(),
                });
            }
            Ok(std::slice::from_raw_parts(row, self.n_vocab))
        }
    }

    /// Drop positions `from..` of the cache; false when the memory cannot.
    pub fn forget_from(&mut self, from: usize) -> bool {
        let Ok(p0) = i32::try_from(from) else {
            return false;
        };
        // SAFETY: a live context; -1 means "to the end".
        unsafe {
            let mem = sys::llama_get_memory(self.ctx.as_ptr());
            sys::llama_memory_seq_rm(mem, 0, p0, -1)
        }
    }

    /// Empty the cache.
    pub fn clear(&mut self) {
        // SAFETY: a live context.
        unsafe { sys::llama_memory_clear(sys::llama_get_memory(self.ctx.as_ptr()), true) }
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        if !self.is_usable() {
            // Forked: the pool's threads belong to the parent. Joining them
            // would hang, so this process leaks its copy instead.
            return;
        }
        // SAFETY: created in `new`, freed once, the context before its pool.
        unsafe {
            sys::llama_free(self.ctx.as_ptr());
            sys::ggml_threadpool_free(self.threadpool.as_ptr());
            sys::llama_batch_free(self.batch);
        }
    }
}
