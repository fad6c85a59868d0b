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
//! process (a pre-forking server's master, say) is never used or freed by the
//! child: [`Context::is_usable`] says so, and dropping it there leaks it
//! instead of joining threads that do not exist.

use std::ptr::NonNull;
use std::sync::Arc;

use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_sys_2 as sys;

use super::backend::{clear_diagnostics, take_diagnostics};
use super::error::{InferenceError, InferenceResult};

/// The raw `llama_model` behind llama-cpp-2's wrapper, which does not expose
/// it (and offers no way to attach a thread pool to a context).
///
/// In llama-cpp-2 0.1.160, pinned with `=` in Cargo.toml for this reason,
/// `LlamaModel` is `#[repr(transparent)]` over `Ptr<llama_model>`, which is
/// `#[repr(transparent)]` over `NonNull<llama_model>`: a `&LlamaModel` points
/// at exactly that pointer. Size and alignment are asserted here, and
/// `tests::raw_pointer_is_the_wrappers_model` checks at run time that the
/// pointer answers every query exactly as the wrapper does, so a change of
/// layout fails the build or the tests before it can reach users.
fn model_ptr(model: &LlamaModel) -> NonNull<sys::llama_model> {
    type Raw = NonNull<sys::llama_model>;
    const _: () = assert!(
        std::mem::size_of::<LlamaModel>() == std::mem::size_of::<Raw>()
            && std::mem::align_of::<LlamaModel>() == std::mem::align_of::<Raw>()
    );
    // SAFETY: `LlamaModel` is transparent over a `NonNull<llama_model>` (see
    // above), so reading a `Raw` at its address reads that field; the
    // reference keeps it initialised for the read.
    unsafe { *std::ptr::from_ref(model).cast::<Raw>() }
}

/// A llama.cpp context, its thread pool and its batch buffer. It holds a
/// strong reference to the model it evaluates, so the model outlives it
/// whoever else drops their reference first.
pub struct Context {
    ctx: NonNull<sys::llama_context>,
    threadpool: NonNull<sys::ggml_threadpool>,
    batch: sys::llama_batch,
    batch_capacity: usize,
    n_vocab: usize,
    n_ctx: u32,
    /// Threads the next evaluation runs (at most the pool's size).
    threads: u32,
    max_threads: u32,
    pid: u32,
    /// Dropped after `Drop::drop` has freed the context (fields always drop
    /// after the struct's own `drop`), whatever the field order.
    _model: Arc<LlamaModel>,
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
    /// A context of `n_ctx` tokens evaluating batches of up to `n_batch`
    /// with a pool of `n_threads` threads. It keeps `model` alive for as long
    /// as it lives.
    ///
    /// `poll` is how long idle workers spin before they sleep (ggml's 0 to
    /// 100; 0 sleeps at once). A pool whose thread count changes between
    /// evaluations wants 0: workers left out of an evaluation are woken by it
    /// all the same, and would spin on cores another process needs.
    pub fn new(
        model: &Arc<LlamaModel>,
        n_threads: u32,
        n_ctx: u32,
        n_batch: u32,
        poll: u32,
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
            let ctx = NonNull::new(sys::llama_init_from_model(
                model_ptr(model).as_ptr(),
                params,
            ))
            .ok_or_else(|| {
                failed(
                    take_diagnostics()
                        .unwrap_or_else(|| "llama.cpp returned no context".to_owned()),
                )
            })?;
            let mut tp_params = sys::ggml_threadpool_params_default(threads);
            tp_params.poll = poll.min(100);
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
                threads: n_threads,
                max_threads: n_threads,
                pid: std::process::id(),
                _model: Arc::clone(model),
            })
        }
    }

    pub fn n_ctx(&self) -> u32 {
        self.n_ctx
    }

    /// Run the next evaluations on `n` threads of the pool (1 to its size).
    pub fn set_threads(&mut self, n: u32) {
        let n = n.clamp(1, self.max_threads);
        if n != self.threads {
            let t = i32::try_from(n).unwrap_or(1);
            // SAFETY: a live context; llama.cpp applies the count at the next
            // graph computation, and the pool has at least `n` threads.
            unsafe { sys::llama_set_n_threads(self.ctx.as_ptr(), t, t) };
            self.threads = n;
        }
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

#[cfg(test)]
mod tests {
    use llama_cpp_2::model::params::LlamaModelParams;

    use super::*;
    use crate::engine::backend::backend;

    include!("../../tests/common/paths.rs");

    /// Fails loudly if llama-cpp-2's `LlamaModel` ever stops being the bare
    /// pointer `model_ptr` reads: every query through the raw pointer must
    /// answer as the wrapper does, and the vocabulary must be the same object.
    #[test]
    fn raw_pointer_is_the_wrappers_model() {
        let path = model_path();
        let Some(utf8) = path.to_str() else {
            panic!("model path {} is not UTF-8", path.display());
        };
        let model = LlamaModel::load_from_file(
            backend().expect("backend"),
            utf8,
            &LlamaModelParams::default(),
        )
        .unwrap_or_else(|e| panic!("load {}: {e} (run `make model`)", path.display()));
        let raw = model_ptr(&model).as_ptr();
        // SAFETY: if the layout assumption holds, `raw` is the live model.
        let (n_ctx_train, n_params, size, n_embd, n_vocab) = unsafe {
            (
                sys::llama_model_n_ctx_train(raw),
                sys::llama_model_n_params(raw),
                sys::llama_model_size(raw),
                sys::llama_model_n_embd(raw),
                sys::llama_vocab_n_tokens(sys::llama_model_get_vocab(raw)),
            )
        };
        assert_eq!(n_ctx_train, model.n_ctx_train() as i32);
        assert_eq!(n_params, model.n_params());
        assert_eq!(size, model.size());
        assert_eq!(n_embd, model.n_embd());
        assert_eq!(n_vocab, model.n_vocab());
        assert!(
            n_params > 0 && n_vocab > 0,
            "{n_params} params, {n_vocab} tokens"
        );
    }
}
