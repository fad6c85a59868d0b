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

use std::ffi::c_void;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_sys_2 as sys;

use super::runtime::logged;
use crate::backend::error::{InferenceError, InferenceResult};
use crate::backend::params::{Pooling, StopCheck};

/// Cells are allocated in steps of this many tokens (llama.cpp pads to it
/// anyway), so that calls of similar sizes share a shape and can reuse one
/// context.
const CELL_STEP: u64 = 256;

/// The cells `tokens` take, rounded up to whole steps of [`CELL_STEP`].
pub fn cells_for(tokens: u64) -> u64 {
    tokens.div_ceil(CELL_STEP).saturating_mul(CELL_STEP)
}

/// Most sequences one context holds: llama.cpp's `LLAMA_MAX_SEQ`, beyond
/// which it refuses to create the context.
pub const MAX_SEQUENCES: u32 = 256;

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
pub(super) fn model_ptr(model: &LlamaModel) -> NonNull<sys::llama_model> {
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

/// Whether the model's memory can drop the last positions of a sequence
/// (not a recurrent or hybrid model's, which keeps one state per sequence).
pub(in crate::engine) fn can_rewind(model: &LlamaModel) -> bool {
    let raw = model_ptr(model).as_ptr();
    // SAFETY: a live model, read only.
    unsafe { !sys::llama_model_is_recurrent(raw) && !sys::llama_model_is_hybrid(raw) }
}

/// The tokens of `model` that have any of the attributes `mask`
/// (`sys::LLAMA_TOKEN_ATTR_*`), with their texts as the vocabulary stores
/// them.
pub(in crate::engine) fn tokens_with_attr(
    model: &LlamaModel,
    mask: u32,
) -> Vec<(LlamaToken, String)> {
    // SAFETY: the model pointer is valid while `model` is borrowed and the
    // vocabulary lives in the model; every id is below the vocabulary's
    // size, so `llama_vocab_get_attr` / `_get_text` index inside it, and
    // the text pointer is read before the borrow ends.
    unsafe {
        let vocab = sys::llama_model_get_vocab(model_ptr(model).as_ptr());
        (0..sys::llama_vocab_n_tokens(vocab))
            .filter(|&id| sys::llama_vocab_get_attr(vocab, id) & mask != 0)
            .filter_map(|id| {
                let text = sys::llama_vocab_get_text(vocab, id);
                (!text.is_null()).then(|| {
                    (
                        LlamaToken(id),
                        std::ffi::CStr::from_ptr(text)
                            .to_string_lossy()
                            .into_owned(),
                    )
                })
            })
            .collect()
    }
}

/// The texts llama.cpp reads as a token only when special tokens are
/// parsed: those of the control tokens (`<|im_end|>`) and the unknown token.
pub(in crate::engine) fn control_texts(model: &LlamaModel) -> Vec<String> {
    tokens_with_attr(
        model,
        sys::LLAMA_TOKEN_ATTR_CONTROL | sys::LLAMA_TOKEN_ATTR_UNKNOWN,
    )
    .into_iter()
    .map(|(_, text)| text)
    .collect()
}

/// One sequence's keys and values as llama.cpp serialises them. Only
/// [`Context::save_sequence`] makes one, or (unsafe) the shared store from a
/// file it verified, so [`Context::restore_sequence`] never hands llama.cpp bytes
/// that a context of this build did not write.
pub struct SavedState {
    bytes: Box<[u8]>,
}

impl SavedState {
    /// Bytes held.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The bytes, to write them to the shared store.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// A state read back from a file.
    ///
    /// # Safety
    /// `bytes` must be what [`Context::save_sequence`] wrote for a context
    /// of this build, model and layout: llama.cpp trusts the lengths and
    /// shapes inside them. The prompt store checks that (header, checksum,
    /// key) before it calls this, and is its only caller.
    pub unsafe fn from_verified_bytes(bytes: Box<[u8]>) -> Self {
        Self { bytes }
    }

    /// `len` bytes that no context wrote, for tests of the bookkeeping
    /// around states (never restored).
    #[cfg(test)]
    pub fn filler(len: usize) -> Self {
        Self {
            bytes: vec![0; len].into_boxed_slice(),
        }
    }
}

impl std::fmt::Debug for SavedState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SavedState({} bytes)", self.bytes.len())
    }
}

/// A llama.cpp context, its thread pool and its batch buffer. It holds a
/// strong reference to the model it evaluates, so the model outlives it
/// whoever else drops their reference first.
pub struct Context {
    ctx: NonNull<sys::llama_context>,
    threadpool: NonNull<sys::ggml_threadpool>,
    batch: TokenBatch,
    /// How many tokens the last evaluated batch had (the rows of logits
    /// llama.cpp may hold).
    last_batch: i32,
    n_vocab: usize,
    /// Cells of each sequence.
    n_ctx: u32,
    n_seq: u32,
    /// As asked for in `new`, to compare with the shape a later call wants.
    shape: Shape,
    /// The label of the LoRA adapter set applied (`ActiveSet::id`; 0: none).
    adapters: u64,
    /// Threads the next evaluation runs (at most the pool's size).
    threads: u32,
    max_threads: u32,
    pid: u32,
    /// What llama.cpp's abort callback asks during an evaluation. Boxed: the
    /// callback holds its address for the context's life.
    abort: Box<Abort>,
    /// Dropped after `Drop::drop` has freed the context (fields always drop
    /// after the struct's own `drop`), whatever the field order.
    _model: Arc<LlamaModel>,
}

// SAFETY: a llama.cpp context, its thread pool and the batch buffer have no
// affinity to the thread that made them: llama.cpp only requires that one
// context is not used by two threads at once, and every method here that
// reaches them takes `&mut self` (evaluations, cache edits) or reads what
// no evaluation changes (sizes). `Context` is not `Sync`, so sharing one
// takes a lock. The model it points into is `Send + Sync` and kept alive
// by `_model`. The abort data is a `Mutex` and an atomic.
unsafe impl Send for Context {}

/// The stop check of the evaluation in progress, read by llama.cpp's abort
/// callback (on whichever thread computes the graph: hence the lock).
#[derive(Default)]
struct Abort {
    check: Mutex<StopCheck>,
    /// Calls since the last real check: the callback runs once per graph
    /// node, and the clock is asked every `ABORT_EVERY` of them.
    calls: AtomicU32,
}

/// How many graph nodes pass between two stop checks during an evaluation
/// (a token's graph has several hundred).
const ABORT_EVERY: u32 = 16;

/// llama.cpp's abort callback: true stops the evaluation.
extern "C" fn abort_requested(data: *mut c_void) -> bool {
    // SAFETY: `data` is the `Abort` boxed in the context that registered
    // this callback, which outlives every evaluation of that context.
    let abort = unsafe { &*data.cast::<Abort>() };
    if abort.calls.fetch_add(1, Ordering::Relaxed) % ABORT_EVERY != 0 {
        return false;
    }
    abort.check.lock().map(|c| c.due()).unwrap_or(false)
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("n_ctx", &self.n_ctx)
            .field("pid", &self.pid)
            .finish()
    }
}

/// Flash attention is off in every context this crate creates.
///
/// Why, first: a greedy output must not depend on the number of threads,
/// which changes with the load on the machine when processes share the
/// cores (`engine::threads`). With flash attention on, the CPU kernel's
/// reduction order depends on the thread count once the context is long: a
/// ~900-token prompt gave different greedy outputs on 1 and 2 threads
/// (tests-php/ThreadSharingTest.php, which passes with it off).
///
/// Second: `chatMany()` must return, for each prompt, exactly what `chat()`
/// returns for it alone at temperature 0. With llama.cpp's default (AUTO,
/// which turns it on for the CPU), the CPU flash-attention kernel reduces
/// differently depending on how many query rows and cached cells one
/// evaluation carries, so a prompt decoded next to others drifted from its
/// sequential result once its cache grew past a few hundred tokens (see
/// tests-php/ChatManyTest.php). Measured on SmolLM2-135M Q4_1, 8 chat
/// prompts of 43 to 991 tokens: with AUTO, 3 of 8 chatMany() results
/// differed from chat() (from a 67-token prompt on); with flash attention off
/// all 8 were identical. Without it, every row of the attention is computed
/// on its own (masked cells add exact zeros), so both paths agree bit for
/// bit. Both the single-sequence context of `chat()` and the multi-sequence
/// one of `chatMany()` must use the same setting. The price: `chat()` ran
/// 4-7% fewer tokens/s (prompt + 128 generated, 3 interleaved rounds on a
/// quiet 2-core machine: short prompt 116.5 vs 125.2 tok/s, 400-token prompt
/// 196.8 vs 204.6).
const FLASH_ATTN: sys::llama_flash_attn_type = sys::LLAMA_FLASH_ATTN_TYPE_DISABLED;

/// Flash attention in an embeddings context: llama.cpp's default (on for the
/// CPU). An encoder such as BERT attends over every token of a batch, and
/// without flash attention it materialises the whole attention matrix of
/// every head: on all-MiniLM-L6-v2, batches of 512 tokens took 1.9x as long
/// (1,000 sentences: 5.18 s against 2.71 s). Generation's reason to turn it
/// off (greedy outputs must not depend on the thread count) does not apply
/// to a vector that is compared by cosine: embedding a text alone or among
/// others agrees to cosine 0.99999 either way (tests-php/EmbeddingTest.php).
const EMBEDDINGS_FLASH_ATTN: sys::llama_flash_attn_type = sys::LLAMA_FLASH_ATTN_TYPE_AUTO;

/// The layout of a context: `n_seq` sequences of `n_ctx` cells each,
/// evaluated in batches of at most `n_batch` tokens, and what it computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    pub n_ctx: u32,
    pub n_seq: u32,
    pub n_batch: u32,
    /// Every sequence in one pool of `n_ctx * n_seq` cells that any of them
    /// may fill, instead of a KV stream of its own: for batches of
    /// sequences of any lengths that are cleared after each batch.
    /// `n_ctx` is then the size of the pool.
    pub shared_cells: bool,
    pub output: Computes,
}

/// What a context computes for the tokens that ask for output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Computes {
    /// Next-token logits.
    Logits,
    /// Embeddings, pooled as given (`None`: as the GGUF declares).
    Embeddings(Option<Pooling>),
}

impl Shape {
    /// A context for generation: `n_seq` sequences of `n_ctx` cells, each in
    /// a KV stream of its own.
    pub fn logits(n_ctx: u32, n_seq: u32, n_batch: u32) -> Self {
        Self {
            n_ctx,
            n_seq,
            n_batch,
            shared_cells: false,
            output: Computes::Logits,
        }
    }
}

fn pooling_type(pooling: Option<Pooling>) -> sys::llama_pooling_type {
    match pooling {
        None => sys::LLAMA_POOLING_TYPE_UNSPECIFIED,
        Some(Pooling::None) => sys::LLAMA_POOLING_TYPE_NONE,
        Some(Pooling::Mean) => sys::LLAMA_POOLING_TYPE_MEAN,
        Some(Pooling::Cls) => sys::LLAMA_POOLING_TYPE_CLS,
        Some(Pooling::Last) => sys::LLAMA_POOLING_TYPE_LAST,
        Some(Pooling::Rank) => sys::LLAMA_POOLING_TYPE_RANK,
    }
}

/// One token of a batch: which sequence, at which position, and whether its
/// logits are wanted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchToken {
    pub token: LlamaToken,
    pub seq: u32,
    pub pos: usize,
    pub logits: bool,
}

impl Context {
    /// A context of `shape` with a pool of `n_threads` threads. It keeps
    /// `model` alive for as long as it lives.
    ///
    /// `poll` is how long idle workers spin before they sleep (ggml's 0 to
    /// 100; 0 sleeps at once). A pool whose thread count changes between
    /// evaluations wants 0: workers left out of an evaluation are woken by it
    /// all the same, and would spin on cores another process needs.
    pub fn new(
        model: &Arc<LlamaModel>,
        n_threads: u32,
        shape: Shape,
        poll: u32,
    ) -> InferenceResult<Self> {
        let Shape { n_ctx, n_seq, .. } = shape;
        // Shared cells: `n_ctx` is the whole pool.
        let total = if shape.shared_cells {
            n_ctx
        } else {
            n_ctx.saturating_mul(n_seq)
        };
        let failed = |detail: String| InferenceError::ContextFailed { n_ctx, detail };
        if n_seq == 0 || n_seq > MAX_SEQUENCES || total == u32::MAX {
            return Err(failed(format!(
                "{n_seq} sequences of {n_ctx} tokens (1 to {MAX_SEQUENCES} sequences, {} tokens in all)",
                u32::MAX - 1
            )));
        }
        // llama.cpp aborts the process when a batch cannot hold one token of
        // every sequence: never ask for fewer.
        let n_batch = shape.n_batch.max(n_seq).min(total.max(n_seq));
        let threads = i32::try_from(n_threads).unwrap_or(i32::MAX);
        // SAFETY: plain constructors; every pointer is checked before use and
        // freed on each error path below.
        unsafe {
            let mut params = sys::llama_context_default_params();
            params.n_ctx = total;
            params.n_batch = n_batch;
            params.n_ubatch = n_batch;
            params.n_seq_max = n_seq;
            // By default one KV stream per sequence: a sequence attends to
            // its own cells only, exactly as it would alone in a context of
            // `n_ctx`.
            params.kv_unified = shape.shared_cells;
            if let Computes::Embeddings(pooling) = shape.output {
                params.embeddings = true;
                params.pooling_type = pooling_type(pooling);
            }
            params.flash_attn_type = match shape.output {
                Computes::Logits => FLASH_ATTN,
                Computes::Embeddings(_) => EMBEDDINGS_FLASH_ATTN,
            };
            params.n_threads = threads;
            params.n_threads_batch = threads;
            params.no_perf = true;
            let (made, log) =
                logged(|| sys::llama_init_from_model(model_ptr(model).as_ptr(), params));
            let ctx = NonNull::new(made).ok_or_else(|| {
                failed(log.unwrap_or_else(|| "llama.cpp returned no context".to_owned()))
            })?;
            let mut tp_params = sys::ggml_threadpool_params_default(threads);
            tp_params.poll = poll.min(100);
            let Some(threadpool) = NonNull::new(sys::ggml_threadpool_new(&mut tp_params)) else {
                sys::llama_free(ctx.as_ptr());
                return Err(failed("could not start the thread pool".to_owned()));
            };
            sys::llama_attach_threadpool(ctx.as_ptr(), threadpool.as_ptr(), threadpool.as_ptr());
            let abort = Box::<Abort>::default();
            sys::llama_set_abort_callback(
                ctx.as_ptr(),
                Some(abort_requested),
                std::ptr::from_ref::<Abort>(&abort).cast_mut().cast(),
            );
            let Some(batch) = TokenBatch::new(n_batch as usize) else {
                sys::llama_free(ctx.as_ptr());
                sys::ggml_threadpool_free(threadpool.as_ptr());
                return Err(failed(format!(
                    "could not allocate a batch of {n_batch} tokens"
                )));
            };
            Ok(Self {
                ctx,
                threadpool,
                batch,
                last_batch: 0,
                n_vocab: model.n_vocab().max(0) as usize,
                n_ctx,
                n_seq,
                shape,
                adapters: 0,
                threads: n_threads,
                max_threads: n_threads,
                pid: std::process::id(),
                abort,
                _model: Arc::clone(model),
            })
        }
    }

    /// The stop check the next evaluations ask between graph nodes.
    pub fn set_stop(&mut self, check: StopCheck) {
        if let Ok(mut current) = self.abort.check.lock() {
            *current = check;
        }
    }

    /// Cells of each sequence.
    pub fn n_ctx(&self) -> u32 {
        self.n_ctx
    }

    /// How many sequences the context holds.
    pub fn n_seq(&self) -> u32 {
        self.n_seq
    }

    /// The shape it was created with (its batch as llama.cpp took it).
    pub fn shape(&self) -> Shape {
        self.shape
    }

    /// The label of the LoRA adapter set the evaluations apply (0: none).
    pub fn adapters(&self) -> u64 {
        self.adapters
    }

    /// Record the set [`Context::set_adapters`] applied.
    pub(super) fn applied_adapters(&mut self, id: u64) {
        self.adapters = id;
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

    /// The width of a row of logits.
    pub fn n_vocab(&self) -> usize {
        self.n_vocab
    }

    /// Largest number of tokens one [`Context::decode`] takes.
    pub fn batch_capacity(&self) -> usize {
        self.batch.capacity
    }

    /// False in a process forked after the context was created: its threads
    /// are gone there.
    pub fn is_usable(&self) -> bool {
        self.pid == std::process::id()
    }

    /// Evaluate `tokens` at positions `start..` of sequence 0, keeping logits
    /// for the `i`-th of them where `i >= logits_from`.
    pub fn decode(
        &mut self,
        tokens: &[LlamaToken],
        start: usize,
        logits_from: usize,
    ) -> InferenceResult<()> {
        self.decode_batch(tokens.iter().enumerate().map(|(i, &token)| BatchToken {
            token,
            seq: 0,
            pos: start + i,
            logits: i >= logits_from,
        }))
    }

    /// Evaluate one batch of tokens, each in its own sequence and position.
    /// The logits of the `i`-th token (if it asked for them) are then
    /// [`Context::logits`]`(i)`.
    pub fn decode_batch(
        &mut self,
        tokens: impl ExactSizeIterator<Item = BatchToken>,
    ) -> InferenceResult<()> {
        let n = tokens.len();
        if n == 0 || n > self.batch.capacity {
            return Err(InferenceError::DecodeFailed {
                detail: format!("{n} tokens do not fit a batch of {}", self.batch.capacity),
            });
        }
        let b = &mut self.batch.raw;
        for (i, t) in tokens.enumerate().take(n) {
            if t.seq >= self.n_seq || t.pos >= self.n_ctx as usize {
                return Err(InferenceError::DecodeFailed {
                    detail: format!(
                        "position {} of sequence {} is outside a context of {} sequences of {} tokens",
                        t.pos, t.seq, self.n_seq, self.n_ctx
                    ),
                });
            }
            // SAFETY: a `TokenBatch` holds every array for `capacity`
            // tokens with one sequence id each, and `i < n <= capacity`.
            unsafe {
                *b.token.add(i) = t.token.0;
                *b.pos.add(i) = t.pos as i32;
                *b.n_seq_id.add(i) = 1;
                **b.seq_id.add(i) = t.seq as i32;
                *b.logits.add(i) = i8::from(t.logits);
            }
        }
        b.n_tokens = n as i32;
        let raw = *b;
        // SAFETY: a batch filled above, its arrays owned by `self.batch`.
        unsafe { self.decode_raw(raw) }
    }

    /// The raw context, for what this module's siblings apply to it (LoRA
    /// adapters); `&mut`: one thread at a time.
    pub(super) fn raw(&mut self) -> NonNull<sys::llama_context> {
        self.ctx
    }

    /// Whether the next evaluations attend causally (off for the image
    /// embeddings of a projector that attends both ways).
    pub(super) fn set_causal(&mut self, causal: bool) {
        // SAFETY: a live context.
        unsafe { sys::llama_set_causal_attn(self.ctx.as_ptr(), causal) }
    }

    /// Evaluate `batch` (tokens or embeddings), whose logits are then
    /// [`Context::logits`].
    ///
    /// # Safety
    /// Every array of `batch` holds `batch.n_tokens` valid entries for the
    /// length of the call.
    pub(super) unsafe fn decode_raw(&mut self, batch: sys::llama_batch) -> InferenceResult<()> {
        self.last_batch = batch.n_tokens;
        // SAFETY: a live context; the batch as the caller promises.
        let (code, log) = logged(|| unsafe { sys::llama_decode(self.ctx.as_ptr(), batch) });
        if code == 2 {
            // Aborted by the stop check; the micro-batches computed before
            // stay in the memory, so the caller drops them.
            return Err(InferenceError::Aborted);
        }
        if code != 0 {
            return Err(InferenceError::DecodeFailed {
                detail: log.unwrap_or_else(|| format!("llama_decode returned {code}")),
            });
        }
        Ok(())
    }

    /// The logits of the last token of the last batch (which must have asked
    /// for them).
    pub fn last_logits(&self) -> InferenceResult<&[f32]> {
        self.logits(self.last_batch.max(1) as usize - 1)
    }

    /// The logits of the `index`-th token of the last batch (which must have
    /// asked for them). A row holding NaN or +inf (the model's computation
    /// overflowed) is an error: every comparison with NaN is false, so a
    /// pick, a probability or a score read from it would mean nothing.
    pub fn logits(&self, index: usize) -> InferenceResult<&[f32]> {
        let missing = || InferenceError::DecodeFailed {
            detail: format!("no logits for token {index} of the batch"),
        };
        let i = i32::try_from(index).map_err(|_| missing())?;
        if i >= self.last_batch {
            return Err(missing());
        }
        // SAFETY: llama.cpp returns null for an index without logits, else a
        // row of n_vocab floats that lives until the next decode, which needs
        // `&mut self`.
        unsafe {
            let row = sys::llama_get_logits_ith(self.ctx.as_ptr(), i);
            if row.is_null() {
                return Err(missing());
            }
            let row = std::slice::from_raw_parts(row, self.n_vocab);
            if row.iter().any(|v| v.is_nan() || *v == f32::INFINITY) {
                return Err(InferenceError::LogitsNotNumbers);
            }
            Ok(row)
        }
    }

    /// The pooling the context applies (an embeddings context only).
    pub fn pooling(&self) -> Option<Pooling> {
        if !matches!(self.shape.output, Computes::Embeddings(_)) {
            return None;
        }
        // SAFETY: a live context.
        let p = unsafe { sys::llama_pooling_type(self.ctx.as_ptr()) };
        Some(match p {
            sys::LLAMA_POOLING_TYPE_MEAN => Pooling::Mean,
            sys::LLAMA_POOLING_TYPE_CLS => Pooling::Cls,
            sys::LLAMA_POOLING_TYPE_LAST => Pooling::Last,
            sys::LLAMA_POOLING_TYPE_RANK => Pooling::Rank,
            _ => Pooling::None,
        })
    }

    /// How many floats one embedding read gives: the classifier's outputs
    /// with rank pooling, else the model's output embedding width.
    fn embedding_width(&self) -> usize {
        let model = self._model.as_ref();
        if self.pooling() == Some(Pooling::Rank) {
            model.n_cls_out() as usize
        } else {
            model.n_embd_out().max(0) as usize
        }
    }

    /// The pooled embedding of sequence `seq` in the last batch (an
    /// embeddings context with pooling other than `None`).
    pub fn sequence_embedding(&self, seq: u32) -> InferenceResult<&[f32]> {
        let missing = || InferenceError::DecodeFailed {
            detail: format!("no embedding for sequence {seq} of the batch"),
        };
        let s = i32::try_from(seq).map_err(|_| missing())?;
        // SAFETY: llama.cpp returns null for a sequence without one, else
        // `embedding_width()` floats that live until the next decode, which
        // needs `&mut self`.
        unsafe {
            let row = sys::llama_get_embeddings_seq(self.ctx.as_ptr(), s);
            if row.is_null() {
                return Err(missing());
            }
            Ok(std::slice::from_raw_parts(row, self.embedding_width()))
        }
    }

    /// The KV streams of the context: one per sequence, or one shared.
    pub fn streams(&self) -> u32 {
        if self.shape.shared_cells {
            1
        } else {
            self.n_seq
        }
    }

    /// Empty the cells of sequence `seq`, for a new prompt.
    pub fn forget_sequence(&mut self, seq: u32) -> bool {
        let Ok(seq) = i32::try_from(seq) else {
            return false;
        };
        // SAFETY: a live context; -1, -1 means every position.
        unsafe {
            let mem = sys::llama_get_memory(self.ctx.as_ptr());
            sys::llama_memory_seq_rm(mem, seq, -1, -1)
        }
    }

    /// Drop positions `from..` of sequence `seq`; false when the memory
    /// cannot.
    pub fn forget_sequence_from(&mut self, seq: u32, from: usize) -> bool {
        let (Ok(seq), Ok(p0)) = (i32::try_from(seq), i32::try_from(from)) else {
            return false;
        };
        // SAFETY: a live context; -1 means "to the end".
        unsafe {
            let mem = sys::llama_get_memory(self.ctx.as_ptr());
            sys::llama_memory_seq_rm(mem, seq, p0, -1)
        }
    }

    /// Make sequence `dst` share the cells of sequence `src` (a shared pool
    /// of cells: `dst`'s tokens then attend to them as to their own).
    pub fn share_sequence(&mut self, src: u32, dst: u32) {
        let (Ok(src), Ok(dst)) = (i32::try_from(src), i32::try_from(dst)) else {
            return;
        };
        // SAFETY: a live context; -1, -1 means every position.
        unsafe {
            let mem = sys::llama_get_memory(self.ctx.as_ptr());
            sys::llama_memory_seq_cp(mem, src, dst, -1, -1);
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

    /// The keys and values of sequence `seq` as llama.cpp serialises them
    /// (`None` when it writes fewer bytes than it said it would).
    pub fn save_sequence(&self, seq: u32) -> Option<SavedState> {
        let seq = i32::try_from(seq).ok()?;
        // SAFETY: a live context; the buffer holds the size llama.cpp asked
        // for, and is given with that size, which llama.cpp checks.
        unsafe {
            let size = sys::llama_state_seq_get_size_ext(self.ctx.as_ptr(), seq, 0);
            let mut bytes = vec![0u8; size];
            let written = sys::llama_state_seq_get_data_ext(
                self.ctx.as_ptr(),
                bytes.as_mut_ptr(),
                size,
                seq,
                0,
            );
            (written == size && size > 0).then(|| SavedState {
                bytes: bytes.into_boxed_slice(),
            })
        }
    }

    /// Load `state` into sequence `seq`, which should be empty; false (and
    /// the sequence emptied) when llama.cpp refuses it (too few free cells,
    /// another layout).
    pub fn restore_sequence(&mut self, seq: u32, state: &SavedState) -> bool {
        let Ok(seq_id) = i32::try_from(seq) else {
            return false;
        };
        // SAFETY: a live context; the bytes are what `save_sequence` took
        // from a context of this build (in this process, or in another and
        // verified by the shared store), given with their length, which
        // llama.cpp's reader bounds every read by.
        let read = unsafe {
            sys::llama_state_seq_set_data_ext(
                self.ctx.as_ptr(),
                state.bytes.as_ptr(),
                state.bytes.len(),
                seq_id,
                0,
            )
        };
        if read == state.bytes.len() {
            return true;
        }
        self.forget_sequence(seq);
        false
    }

    /// Empty the cache.
    pub fn clear(&mut self) {
        // SAFETY: a live context.
        unsafe { sys::llama_memory_clear(sys::llama_get_memory(self.ctx.as_ptr()), true) }
    }
}

impl super::shelf::Idle for Context {
    /// Put the pool's threads to sleep until the next evaluation wakes them.
    /// A pool that polls (a model of fixed threads) otherwise spins for
    /// about a tenth of a second after its last evaluation, on the cores
    /// that the caller's PHP code, another model's call or another process
    /// need next.
    fn rest(&mut self) {
        if !self.is_usable() {
            // Forked: the pool (and its lock) belong to the parent.
            return;
        }
        // SAFETY: the pool made in `new` and alive with the context; the next
        // graph computation resumes a paused pool (ggml's kickoff).
        unsafe { sys::ggml_threadpool_pause(self.threadpool.as_ptr()) }
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
        }
    }
}

/// llama.cpp's batch buffer for `capacity` tokens of one sequence id each,
/// every array of which was allocated (checked when it is made: llama.cpp
/// does not check its allocations), freed once when dropped.
struct TokenBatch {
    raw: sys::llama_batch,
    capacity: usize,
}

impl TokenBatch {
    /// A batch for `capacity` tokens; `None` when an allocation failed.
    fn new(capacity: usize) -> Option<Self> {
        let n = i32::try_from(capacity).ok().filter(|n| *n > 0)?;
        // SAFETY: a plain allocation, checked by `checked`.
        Self::checked(unsafe { sys::llama_batch_init(n, 0, 1) }, capacity)
    }

    /// `raw` (from `llama_batch_init` for `capacity` tokens, one sequence
    /// id each) when every array it needs is there; freed otherwise.
    fn checked(raw: sys::llama_batch, capacity: usize) -> Option<Self> {
        let batch = Self { raw, capacity };
        let b = &batch.raw;
        let arrays = !(b.token.is_null()
            || b.pos.is_null()
            || b.n_seq_id.is_null()
            || b.seq_id.is_null()
            || b.logits.is_null());
        // SAFETY: `seq_id`, when allocated, holds `capacity` entries and a
        // null after them.
        let complete = arrays && (0..capacity).all(|i| unsafe { !(*b.seq_id.add(i)).is_null() });
        // Dropped when incomplete: `llama_batch_free` frees what was
        // allocated and skips the null pointers.
        complete.then_some(batch)
    }
}

impl Drop for TokenBatch {
    fn drop(&mut self) {
        // SAFETY: made by `llama_batch_init`, freed once.
        unsafe { sys::llama_batch_free(self.raw) }
    }
}

#[cfg(test)]
mod tests {
    use llama_cpp_2::model::params::LlamaModelParams;

    use super::*;
    use crate::engine::llama::runtime::backend;

    include!("../../../tests/common/paths.rs");

    #[test]
    fn a_batch_with_an_array_missing_is_refused() {
        let batch = TokenBatch::new(8).expect("a batch of 8 tokens");
        assert_eq!(batch.capacity, 8);
        assert!(TokenBatch::new(0).is_none());
        assert!(TokenBatch::new(usize::MAX).is_none());
        // As if `malloc` had failed for one array: the batch is refused and
        // what was allocated is freed.
        // SAFETY: a plain allocation; the array is freed once, by hand, and
        // its pointer nulled so that `llama_batch_free` skips it.
        let mut raw = unsafe { sys::llama_batch_init(8, 0, 1) };
        unsafe { libc::free(raw.logits.cast()) };
        raw.logits = std::ptr::null_mut();
        assert!(TokenBatch::checked(raw, 8).is_none());
        let raw = unsafe { sys::llama_batch_init(8, 0, 1) };
        unsafe { libc::free((*raw.seq_id.add(3)).cast()) };
        // The entries after it leak in this test: `llama_batch_free` stops
        // at the first null.
        unsafe { *raw.seq_id.add(3) = std::ptr::null_mut() };
        assert!(TokenBatch::checked(raw, 8).is_none());
    }

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
