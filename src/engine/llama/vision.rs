//! Images in: llama.cpp's multimodal library (mtmd) with a projector GGUF
//! beside the model, through llama-cpp-sys-2 (llama-cpp-2's wrapper
//! evaluates into its own context type, and the engine owns a raw one).
//!
//! A [`Projector`] turns an [`Image`]'s pixels into what takes its place in
//! the prompt: the projector's own text tokens around it, if it has any
//! (`<start_of_image>`…), and an [`ImageChunk`] whose embeddings
//! [`Projector::encode`] computes and [`decode_image`] evaluates at the
//! image's positions. Only the pixels reach mtmd: the text of the prompt is
//! tokenized by the engine, so no marker typed by a user can become an
//! image.

use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::{Arc, Mutex, PoisonError};

use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_sys_2 as sys;

use super::context::{model_ptr, Context};
use super::runtime::logged;
use crate::backend::error::{InferenceError, InferenceResult, LoadError};
use crate::chat::image::Image;

/// A projector loaded for one model.
pub struct Projector {
    /// Encoding is not thread-safe in mtmd; tokenizing is, but is cheap
    /// beside it, so one lock serves both.
    ctx: Mutex<MtmdContext>,
    path: PathBuf,
    /// The width of one image token's embedding (the model's input width).
    n_embd: usize,
    _model: Arc<LlamaModel>,
}

/// The mtmd context, freed once.
struct MtmdContext(NonNull<sys::mtmd_context>);

// SAFETY: an mtmd context is used by one thread at a time (behind the
// projector's mutex) and holds no thread-local state.
unsafe impl Send for MtmdContext {}

impl Drop for MtmdContext {
    fn drop(&mut self) {
        // SAFETY: made by `mtmd_init_from_file`, freed once.
        unsafe { sys::mtmd_free(self.0.as_ptr()) }
    }
}

impl std::fmt::Debug for Projector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Projector({})", self.path.display())
    }
}

/// What an image becomes in the prompt, in order.
#[derive(Debug)]
pub enum Tokenized {
    /// Text tokens the projector puts around an image.
    Text(Vec<LlamaToken>),
    Image(ImageChunk),
}

/// An image's tokens, ready to encode: an owned copy of mtmd's chunk.
pub struct ImageChunk {
    raw: NonNull<sys::mtmd_input_chunk>,
    n_tokens: usize,
    non_causal: bool,
}

// SAFETY: a chunk is immutable once made; mtmd reads it from any thread.
unsafe impl Send for ImageChunk {}
// SAFETY: as above: only read.
unsafe impl Sync for ImageChunk {}

impl Drop for ImageChunk {
    fn drop(&mut self) {
        // SAFETY: an owned copy (`mtmd_input_chunk_copy`), freed once.
        unsafe { sys::mtmd_input_chunk_free(self.raw.as_ptr()) }
    }
}

impl std::fmt::Debug for ImageChunk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ImageChunk({} tokens)", self.n_tokens)
    }
}

impl ImageChunk {
    /// How many positions of the prompt the image takes.
    pub fn n_tokens(&self) -> usize {
        self.n_tokens
    }
}

/// The list of chunks mtmd writes, freed once.
struct Chunks(NonNull<sys::mtmd_input_chunks>);

impl Drop for Chunks {
    fn drop(&mut self) {
        // SAFETY: made by `mtmd_input_chunks_init`, freed once.
        unsafe { sys::mtmd_input_chunks_free(self.0.as_ptr()) }
    }
}

/// A bitmap of an image's pixels, freed once.
struct Bitmap(NonNull<sys::mtmd_bitmap>);

impl Drop for Bitmap {
    fn drop(&mut self) {
        // SAFETY: made by `mtmd_bitmap_init`, freed once.
        unsafe { sys::mtmd_bitmap_free(self.0.as_ptr()) }
    }
}

fn failed(detail: impl Into<String>) -> InferenceError {
    InferenceError::ImageFailed {
        detail: detail.into(),
    }
}

impl Projector {
    /// Load the projector at `path` for `model`. Refused: a file mtmd cannot
    /// read, one for another model (its output width is not the model's
    /// input width), one without vision, and one whose model places image
    /// tokens in several dimensions (M-RoPE: Qwen2-VL and later), which the
    /// engine does not position yet.
    pub fn load(
        model: &Arc<LlamaModel>,
        path: &Path,
        use_gpu: bool,
        n_threads: u32,
    ) -> Result<Self, LoadError> {
        let rejected = |detail: String| LoadError::ProjectorRejected {
            path: path.to_owned(),
            detail,
        };
        let c_path = path
            .to_str()
            .and_then(|p| CString::new(p).ok())
            .ok_or_else(|| rejected("the path is not valid UTF-8 or holds a NUL byte".into()))?;
        // SAFETY: plain defaults.
        let mut params = unsafe { sys::mtmd_context_params_default() };
        params.use_gpu = use_gpu;
        params.print_timings = false;
        params.n_threads = i32::try_from(n_threads.max(1)).unwrap_or(1);
        params.warmup = false;
        let raw_model = model_ptr(model);
        // SAFETY: a NUL-terminated path and a live model, which `_model`
        // keeps alive as long as the context.
        let (ctx, log) = logged(|| unsafe {
            sys::mtmd_init_from_file(c_path.as_ptr(), raw_model.as_ptr(), params)
        });
        let ctx = NonNull::new(ctx).map(MtmdContext).ok_or_else(|| {
            rejected(
                log.unwrap_or_else(|| "llama.cpp's multimodal library could not load it".into()),
            )
        })?;
        // SAFETY: a live context.
        let (vision, mrope) = unsafe {
            (
                sys::mtmd_support_vision(ctx.0.as_ptr()),
                sys::mtmd_decode_use_mrope(ctx.0.as_ptr()),
            )
        };
        if !vision {
            return Err(rejected(
                "it has no vision encoder (an audio-only projector?)".into(),
            ));
        }
        if mrope {
            return Err(rejected(
                "its model places image tokens with M-RoPE (Qwen2-VL and later), which infer does not support yet".into(),
            ));
        }
        // SAFETY: a live model.
        let n_embd = unsafe { sys::llama_model_n_embd_inp(raw_model.as_ptr()) };
        Ok(Self {
            ctx: Mutex::new(ctx),
            path: path.to_owned(),
            n_embd: usize::try_from(n_embd).unwrap_or(0),
            _model: Arc::clone(model),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, MtmdContext> {
        self.ctx.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What `image` becomes in the prompt: the projector's text tokens
    /// around it, if any, and its image tokens.
    pub fn tokenize(&self, image: &Image) -> InferenceResult<Vec<Tokenized>> {
        // SAFETY: `rgb` holds width * height * 3 bytes (checked when the
        // image was made), which mtmd copies.
        let bitmap =
            unsafe { sys::mtmd_bitmap_init(image.width(), image.height(), image.rgb().as_ptr()) };
        let bitmap = NonNull::new(bitmap)
            .map(Bitmap)
            .ok_or_else(|| failed("could not allocate the bitmap"))?;
        // SAFETY: a plain allocation.
        let chunks = NonNull::new(unsafe { sys::mtmd_input_chunks_init() })
            .map(Chunks)
            .ok_or_else(|| failed("could not allocate the chunks"))?;
        let part = sys::mtmd_input_part {
            text: std::ptr::null(),
            bitmap: bitmap.0.as_ptr(),
        };
        let parts = [std::ptr::from_ref(&part)];
        let ctx = self.lock();
        // SAFETY: a live context, one part with a live bitmap, an output
        // list; mtmd copies what it keeps.
        let (code, log) = logged(|| unsafe {
            sys::mtmd_tokenize_from_parts(
                ctx.0.as_ptr(),
                chunks.0.as_ptr(),
                parts.as_ptr(),
                1,
                false,
            )
        });
        if code != 0 {
            return Err(failed(
                log.unwrap_or_else(|| format!("mtmd_tokenize returned {code}")),
            ));
        }
        // SAFETY: the list mtmd filled, read while it lives.
        let n = unsafe { sys::mtmd_input_chunks_size(chunks.0.as_ptr()) };
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            // SAFETY: `i` is within the list.
            let chunk = unsafe { sys::mtmd_input_chunks_get(chunks.0.as_ptr(), i) };
            if chunk.is_null() {
                return Err(failed("mtmd returned no chunk"));
            }
            // SAFETY: a live chunk of the list.
            let kind = unsafe { sys::mtmd_input_chunk_get_type(chunk) };
            match kind {
                sys::MTMD_INPUT_CHUNK_TYPE_TEXT => {
                    let mut len = 0usize;
                    // SAFETY: a text chunk: `len` tokens at the pointer.
                    let tokens = unsafe { sys::mtmd_input_chunk_get_tokens_text(chunk, &mut len) };
                    let tokens = if tokens.is_null() || len == 0 {
                        Vec::new()
                    } else {
                        // SAFETY: as above.
                        unsafe { std::slice::from_raw_parts(tokens, len) }
                            .iter()
                            .map(|&t| LlamaToken(t))
                            .collect()
                    };
                    out.push(Tokenized::Text(tokens));
                }
                sys::MTMD_INPUT_CHUNK_TYPE_IMAGE => {
                    // SAFETY: a live image chunk; the copy is ours.
                    let (copy, n_tokens, n_pos, non_causal) = unsafe {
                        (
                            sys::mtmd_input_chunk_copy(chunk),
                            sys::mtmd_input_chunk_get_n_tokens(chunk),
                            sys::mtmd_input_chunk_get_n_pos(chunk),
                            sys::mtmd_decode_use_non_causal(ctx.0.as_ptr(), chunk),
                        )
                    };
                    let raw = NonNull::new(copy)
                        .ok_or_else(|| failed("could not copy the image's chunk"))?;
                    let chunk = ImageChunk {
                        raw,
                        n_tokens,
                        non_causal,
                    };
                    if usize::try_from(n_pos).ok() != Some(n_tokens) || n_tokens == 0 {
                        return Err(failed(format!(
                            "the image takes {n_tokens} tokens at {n_pos} positions, which infer does not place yet"
                        )));
                    }
                    out.push(Tokenized::Image(chunk));
                }
                other => {
                    return Err(failed(format!(
                        "mtmd returned a chunk of type {other}, not an image"
                    )))
                }
            }
        }
        Ok(out)
    }

    /// The embeddings of an image's tokens: `n_tokens` rows of the model's
    /// input width.
    pub fn encode(&self, chunk: &ImageChunk) -> InferenceResult<Vec<f32>> {
        let ctx = self.lock();
        // SAFETY: a live context and chunk.
        let (code, log) =
            logged(|| unsafe { sys::mtmd_encode_chunk(ctx.0.as_ptr(), chunk.raw.as_ptr()) });
        if code != 0 {
            return Err(failed(log.unwrap_or_else(|| {
                format!("the projector's encoder returned {code}")
            })));
        }
        let len = chunk.n_tokens * self.n_embd;
        // SAFETY: after a successful encode the context's output holds
        // `n_embd * n_tokens` floats (mtmd.h), until the next encode, which
        // the lock held here keeps out.
        let embd = unsafe { sys::mtmd_get_output_embd(ctx.0.as_ptr()) };
        if embd.is_null() || len == 0 {
            return Err(failed("the projector gave no embeddings"));
        }
        // SAFETY: as above.
        Ok(unsafe { std::slice::from_raw_parts(embd, len) }.to_vec())
    }

    pub fn n_embd(&self) -> usize {
        self.n_embd
    }
}

/// Evaluate an image's embeddings `embd` (rows of `n_embd`) at positions
/// `start..` of sequence `seq`, in batches of at most the context's batch
/// capacity, without logits (a prompt ends with text).
pub fn decode_image(
    ctx: &mut Context,
    chunk: &ImageChunk,
    embd: &[f32],
    n_embd: usize,
    seq: u32,
    start: usize,
) -> InferenceResult<()> {
    let n = chunk.n_tokens;
    if n_embd == 0 || embd.len() != n * n_embd {
        return Err(failed(format!(
            "{} floats of embeddings for {n} tokens of width {n_embd}",
            embd.len()
        )));
    }
    if start + n > ctx.n_ctx() as usize || seq >= ctx.n_seq() {
        return Err(InferenceError::DecodeFailed {
            detail: format!(
                "an image of {n} tokens at position {start} of sequence {seq} is outside a context of {} sequences of {} tokens",
                ctx.n_seq(),
                ctx.n_ctx()
            ),
        });
    }
    if chunk.non_causal {
        ctx.set_causal(false);
    }
    let step = ctx.batch_capacity().max(1);
    let mut result = Ok(());
    let mut from = 0;
    while from < n && result.is_ok() {
        let count = step.min(n - from);
        let mut pos: Vec<i32> = (start + from..start + from + count)
            .map(|p| p as i32)
            .collect();
        let mut n_seq_id = vec![1i32; count];
        let mut seq_ids = vec![seq as i32; count];
        let mut seq_ptrs: Vec<*mut i32> = seq_ids.iter_mut().map(std::ptr::from_mut).collect();
        let mut logits = vec![0i8; count];
        let rows = &embd[from * n_embd..(from + count) * n_embd];
        let batch = sys::llama_batch {
            n_tokens: count as i32,
            token: std::ptr::null_mut(),
            // llama_decode reads a batch and never writes it: the rows are
            // lent, not copied.
            embd: rows.as_ptr().cast_mut(),
            pos: pos.as_mut_ptr(),
            n_seq_id: n_seq_id.as_mut_ptr(),
            seq_id: seq_ptrs.as_mut_ptr(),
            logits: logits.as_mut_ptr(),
        };
        // SAFETY: every array holds `count` entries (the embeddings
        // `count * n_embd`, the model's input width) and lives to the end of
        // the call; llama.cpp only reads the embeddings, borrowed here.
        result = unsafe { ctx.decode_raw(batch) };
        from += count;
    }
    if chunk.non_causal {
        ctx.set_causal(true);
    }
    result
}
