//! Typed parameters of loading and generation, and the limits the engine
//! enforces on them. The binding reads its callers' arguments into these.

use crate::chat::tools::{ToolPlan, Tools};
use std::path::PathBuf;
use std::time::Instant;

use super::error::LoadError;
use super::sampling::Sampling;
use crate::grammar::CheckedGbnf;

/// How a model is loaded.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LoadParams {
    pub n_gpu_layers: u32,
    /// The GPU (an index among the GPU devices) that holds the model when
    /// it is not split; `None`: llama.cpp's default, the first.
    pub main_gpu: Option<u32>,
    pub use_mmap: bool,
    pub use_mlock: bool,
    /// Threads of the model's pool: the most a call runs.
    pub n_threads: u32,
    /// Share the cores with the other processes that generate at the same
    /// time (see `engine::threads`), instead of always running `n_threads`.
    /// On by default; a caller that fixes `n_threads` turns it off.
    pub share_cores: bool,
    /// Make the model able to compute embeddings (`Model::embed_many`).
    pub embedding: bool,
    /// How token embeddings become one vector per text; `None`: what the
    /// GGUF declares.
    pub pooling: Option<Pooling>,
    /// The image projector GGUF to load beside the model (images in).
    pub mmproj: Option<PathBuf>,
    /// LoRA adapters loaded with the model, each applied at its scale to
    /// the calls that do not choose their own ([`GenerateParams::lora`]).
    pub lora: Vec<LoraSpec>,
    /// How many adapter sets keep a context (a KV cache) of their own
    /// between calls; 1: one context, switched to each call's set.
    pub lora_contexts: u32,
}

/// A LoRA adapter to load with a model: its file, the name calls choose
/// it by, and the scale it applies at when a call does not say.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LoraSpec {
    pub path: PathBuf,
    pub name: String,
    /// The scale's bits: `LoadParams` is a key of the persistent table, so
    /// it holds no float ([`LoraSpec::scale`]).
    scale_bits: u32,
}

/// The largest scale an adapter may be applied at, either sign: far past
/// any use (llama.cpp's own examples go to 2), small enough that no
/// activation overflows for it.
pub const MAX_LORA_SCALE: f32 = 100.0;

impl LoraSpec {
    /// `None` when `scale` is not a number within [`MAX_LORA_SCALE`].
    pub fn new(path: PathBuf, name: String, scale: f32) -> Option<Self> {
        lora_scale_ok(scale).then(|| Self {
            path,
            name,
            scale_bits: scale.to_bits(),
        })
    }

    pub fn scale(&self) -> f32 {
        f32::from_bits(self.scale_bits)
    }
}

/// Most contexts a model keeps under different adapter sets
/// (`lora_contexts`): each holds a KV cache of its own.
pub const MAX_LORA_CONTEXTS: u32 = 64;

/// Whether an adapter may be applied at `scale`.
pub fn lora_scale_ok(scale: f32) -> bool {
    scale.is_finite() && scale.abs() <= MAX_LORA_SCALE
}

/// The name an adapter gets when its caller gives none: its file's name
/// without `.gguf` (what llama-server's `/lora-adapters` lets a client
/// recognise it by).
pub fn lora_default_name(path: &std::path::Path) -> String {
    let file = path.file_name().map_or_else(
        || path.to_string_lossy().into_owned(),
        |f| f.to_string_lossy().into_owned(),
    );
    match file.strip_suffix(".gguf") {
        Some(stem) if !stem.is_empty() => stem.to_owned(),
        _ => file,
    }
}

/// How the embeddings of a text's tokens become one vector (llama.cpp's
/// pooling types).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Pooling {
    /// No pooling: one vector per token.
    None,
    Mean,
    /// The first token's vector.
    Cls,
    /// The last token's vector.
    Last,
    /// A cross-encoder's classification head: scores instead of a vector.
    Rank,
}

impl Pooling {
    /// Every pooling, with its name.
    pub const ALL: [(Pooling, &'static str); 5] = [
        (Pooling::None, "none"),
        (Pooling::Mean, "mean"),
        (Pooling::Cls, "cls"),
        (Pooling::Last, "last"),
        (Pooling::Rank, "rank"),
    ];

    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(p, _)| *p == self)
            .map_or("none", |(_, name)| name)
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().find(|(_, n)| *n == name).map(|(p, _)| *p)
    }
}

/// Most threads one context may use: ggml's `GGML_MAX_N_THREADS`. ggml
/// aborts the whole process when it cannot start the threads it is asked
/// for, so larger values are refused before they reach it.
pub const MAX_THREADS: u32 = 512;

impl LoadParams {
    /// Refuse what would abort the process inside llama.cpp.
    pub fn check(&self) -> Result<(), LoadError> {
        if self.n_threads == 0 || self.n_threads > MAX_THREADS {
            return Err(LoadError::ThreadCount {
                n_threads: self.n_threads,
                max: MAX_THREADS,
            });
        }
        for (i, spec) in self.lora.iter().enumerate() {
            if spec.name.is_empty() || self.lora[..i].iter().any(|s| s.name == spec.name) {
                return Err(LoadError::LoraName {
                    name: spec.name.clone(),
                });
            }
        }
        Ok(())
    }
}

impl Default for LoadParams {
    fn default() -> Self {
        Self {
            n_gpu_layers: 0,
            main_gpu: None,
            use_mmap: true,
            use_mlock: false,
            n_threads: default_threads(),
            share_cores: true,
            embedding: false,
            pooling: None,
            mmproj: None,
            lora: Vec::new(),
            lora_contexts: 1,
        }
    }
}

/// One thread per core the process may run on: more than that oversubscribes
/// the machine and slows token generation down.
pub fn default_threads() -> u32 {
    std::thread::available_parallelism()
        .ok()
        .and_then(|n| u32::try_from(n.get()).ok())
        .unwrap_or(1)
        .min(MAX_THREADS)
}

/// Prompt-lookup decoding's settings: the n-grams matched (the last
/// `ngram_max` tokens down to the last `ngram_min`, longest first), the
/// most tokens proposed at once, and whether a proposal is evaluated only
/// as far as it is expected to pay (`adaptive`, see `engine::lookup`) or
/// always whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LookupParams {
    pub ngram_min: u32,
    pub ngram_max: u32,
    pub tokens: u32,
    pub adaptive: bool,
}

impl LookupParams {
    pub const DEFAULT: Self = Self {
        ngram_min: 1,
        ngram_max: 4,
        tokens: 8,
        adaptive: true,
    };
    /// The longest n-gram matched, and the most tokens proposed at once.
    pub const MAX_NGRAM: u32 = 16;
    pub const MAX_TOKENS: u32 = 64;
}

/// Which probabilities a generation reports for each token it writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogprobParams {
    /// How many of the most likely tokens to list beside the one written
    /// (0 to `MAX_TOP_LOGPROBS`).
    pub top: u32,
    /// `false`: the model's own distribution, before any sampler and the
    /// constraint's mask (llama-server's default); `true`: the distribution
    /// the token was drawn from, after the samplers (and the mask, where it
    /// applied), llama-server's `post_sampling_probs`.
    pub after_sampling: bool,
}

/// What the sampler is allowed to emit.
#[derive(Debug, Clone, PartialEq)]
pub enum Constraint {
    /// A checked GBNF grammar whose start rule is `root`.
    Grammar(CheckedGbnf),
}

/// Everything one generation call needs besides the prompt.
#[derive(Debug, Clone)]
pub struct GenerateParams {
    pub max_tokens: u32,
    pub n_ctx: u32,
    pub temperature: f32,
    pub seed: u32,
    /// Every other sampler (llama-server's set and chain).
    pub sampling: Sampling,
    /// The probabilities to report for each generated token (`None`: none).
    pub logprobs: Option<LogprobParams>,
    pub stop: Vec<String>,
    pub constraint: Option<Constraint>,
    /// Reuse the cached keys and values of the prefix this prompt shares with
    /// what the model's context holds from the previous call.
    pub cache_prompt: bool,
    /// Append what the constraint forces without sampling it, evaluated in
    /// one batch (see `engine::generate`).
    pub fast_forward: bool,
    /// With `fast_forward`: evaluate the forced tokens one at a time instead
    /// of in one batch (slower; never set by the binding). A batch is
    /// computed with other kernels than single tokens, so its logits differ
    /// in the last bits; this isolates fast-forward's own decisions from that
    /// in the differential tests.
    pub forced_one_by_one: bool,
    /// Prompt-lookup decoding: propose the tokens that followed the same
    /// n-gram earlier in the prompt or the output, and keep those the
    /// sampler itself picks (see `engine::lookup`); `None`: off.
    pub lookup: Option<LookupParams>,
    /// When to stop early (finish reason `Timeout`).
    pub stop_check: StopCheck,
    /// Variables passed to the chat template (`enable_thinking`, …).
    pub template_vars: serde_json::Map<String, serde_json::Value>,
    /// Whether the control tokens' markup in chat messages is read as
    /// control tokens (trusted content) rather than text; `None` when the
    /// caller did not say (text).
    pub special_tokens_in_messages: Option<bool>,
    /// The most tokens a `<think>` block may take before the engine closes
    /// it (`None`: no bound).
    pub max_reasoning_tokens: Option<u32>,
    /// The tools a chat may call.
    pub tools: Option<Tools>,
    /// The LoRA adapters this call applies, by name, at their scales (those
    /// not listed: none); `None`: each at the scale it was loaded with.
    pub lora: Option<Vec<(String, f32)>>,
    /// What the model made of `tools` for this generation (set by the
    /// model; the caller leaves it `None`).
    pub tool_plan: Option<ToolPlan>,
}

/// When a generation stops before its natural end: the caller's interrupt
/// (PHP's time limit, say) or a deadline. Asked before every token, and
/// between the graph computations of an evaluation (llama.cpp's abort
/// callback), so a long prompt stops too.
#[derive(Debug, Clone, Copy, Default)]
pub struct StopCheck {
    /// Raised when the generation must stop.
    pub interrupt: Option<Interrupt>,
    pub deadline: Option<Instant>,
}

/// The earlier of two deadlines, either of which may be absent.
pub fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

impl StopCheck {
    /// Whether the generation must stop now.
    pub fn due(&self) -> bool {
        self.interrupt.is_some_and(|i| i.raised())
            || self.deadline.is_some_and(|d| Instant::now() >= d)
    }
}

/// A flag that another party raises to stop a call (PHP's time-limit flag
/// of the request's thread), and the function that reads it. It is taken on
/// the thread that makes the call and may be read from any thread that
/// computes for it (llama.cpp's workers, a remote call's threads): it names
/// that one flag, not "the current thread's".
#[derive(Debug, Clone, Copy)]
pub struct Interrupt {
    read: unsafe extern "C" fn(*const std::ffi::c_void) -> bool,
    flag: *const std::ffi::c_void,
}

// SAFETY: `read` reads `flag` atomically (see `Interrupt::new`), so the pair
// may be used from any thread while the flag lives.
unsafe impl Send for Interrupt {}
// SAFETY: as above; reading is the only operation.
unsafe impl Sync for Interrupt {}

impl Interrupt {
    /// # Safety
    /// `read(flag)` must be an atomic read, callable from any thread, and
    /// `flag` must stay valid as long as any copy of this value is used
    /// (PHP's executor globals: the life of the request's thread).
    pub unsafe fn new(
        read: unsafe extern "C" fn(*const std::ffi::c_void) -> bool,
        flag: *const std::ffi::c_void,
    ) -> Self {
        Self { read, flag }
    }

    /// Whether the flag is raised.
    pub fn raised(&self) -> bool {
        // SAFETY: the contract of `new`.
        unsafe { (self.read)(self.flag) }
    }
}

/// The defaults of a generation's arguments. `Displace\Infer\Model`'s
/// methods spell them as literals in their signatures (they become the PHP
/// defaults that Reflection shows); a unit test checks they agree.
pub const DEFAULT_MAX_TOKENS: u32 = 128;
pub const DEFAULT_N_CTX: u32 = 2048;
pub const DEFAULT_TEMPERATURE: f32 = 0.0;
pub const DEFAULT_SEED: i64 = 1234;
/// On: the answers it writes are as valid and, measured against known
/// answers, as right or more (docs/benchmarks/decoding.md, "Fast-forward decoding").
pub const DEFAULT_FAST_FORWARD: bool = true;
/// Off until measured as good (docs/benchmarks/decoding.md, "Prompt lookup").
pub const DEFAULT_LOOKUP: bool = false;

impl Default for GenerateParams {
    fn default() -> Self {
        Self {
            max_tokens: DEFAULT_MAX_TOKENS,
            n_ctx: DEFAULT_N_CTX,
            temperature: DEFAULT_TEMPERATURE,
            seed: seed_from(DEFAULT_SEED),
            sampling: Sampling::default(),
            logprobs: None,
            stop: Vec::new(),
            constraint: None,
            cache_prompt: true,
            fast_forward: DEFAULT_FAST_FORWARD,
            forced_one_by_one: false,
            lookup: DEFAULT_LOOKUP.then_some(LookupParams::DEFAULT),
            stop_check: StopCheck::default(),
            template_vars: serde_json::Map::new(),
            special_tokens_in_messages: None,
            max_reasoning_tokens: None,
            tools: None,
            lora: None,
            tool_plan: None,
        }
    }
}

impl GenerateParams {
    /// Temperature 0, applied: `samplers` without `temperature` draws from
    /// the model's own distribution, as llama-server does.
    pub fn is_greedy(&self) -> bool {
        self.temperature <= 0.0 && self.sampling.applies_temperature()
    }
}

/// Map any 64-bit integer to a sampler seed. llama.cpp treats 0xFFFFFFFF as "pick
/// a random seed", which would make a seeded call unrepeatable, so the map
/// never produces it.
pub fn seed_from(seed: i64) -> u32 {
    const RANDOM_SEED: u64 = 0xFFFF_FFFF;
    ((seed as u64) % RANDOM_SEED) as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[test]
    fn an_adapter_is_named_after_its_file_and_names_are_unique() {
        assert_eq!(
            lora_default_name(Path::new("/m/support-v2.gguf")),
            "support-v2"
        );
        assert_eq!(lora_default_name(Path::new("adapter.bin")), "adapter.bin");
        assert_eq!(lora_default_name(Path::new("/m/.gguf")), ".gguf");
        let spec = |name: &str| LoraSpec::new("/a.gguf".into(), name.into(), 1.0);
        assert_eq!(spec("a").map(|s| s.scale()), Some(1.0));
        assert_eq!(LoraSpec::new("/a.gguf".into(), "a".into(), f32::NAN), None);
        assert_eq!(LoraSpec::new("/a.gguf".into(), "a".into(), 100.5), None);
        let mut params = LoadParams {
            lora: [spec("a"), spec("b")].into_iter().flatten().collect(),
            ..LoadParams::default()
        };
        assert_eq!(params.check(), Ok(()));
        params.lora.extend(spec("a"));
        assert_eq!(
            params.check(),
            Err(LoadError::LoraName { name: "a".into() })
        );
    }

    unsafe extern "C" fn read_flag(flag: *const std::ffi::c_void) -> bool {
        // SAFETY: the tests pass a pointer to a static AtomicBool.
        unsafe { &*flag.cast::<AtomicBool>() }.load(Ordering::SeqCst)
    }

    /// The interrupt names one flag: raised by the thread that owns it, it
    /// stops the checks that other threads make (as PHP's timer raises the
    /// request thread's flag while llama.cpp's workers compute).
    #[test]
    fn an_interrupt_is_seen_from_every_thread() {
        static FLAG: AtomicBool = AtomicBool::new(false);
        // SAFETY: an atomic read of a static.
        let interrupt = unsafe { Interrupt::new(read_flag, (&raw const FLAG).cast()) };
        let check = StopCheck {
            interrupt: Some(interrupt),
            deadline: None,
        };
        let before = std::thread::spawn(move || check.due()).join();
        FLAG.store(true, Ordering::SeqCst);
        let after = std::thread::spawn(move || check.due()).join();
        assert_eq!((before.ok(), after.ok()), (Some(false), Some(true)));
        FLAG.store(false, Ordering::SeqCst);
    }

    #[test]
    fn thread_counts_outside_ggml_limits_are_refused() {
        for n in [0, MAX_THREADS + 1, u32::MAX] {
            let params = LoadParams {
                n_threads: n,
                ..LoadParams::default()
            };
            assert_eq!(
                params.check(),
                Err(LoadError::ThreadCount {
                    n_threads: n,
                    max: MAX_THREADS
                })
            );
        }
        for n in [1, MAX_THREADS] {
            let params = LoadParams {
                n_threads: n,
                ..LoadParams::default()
            };
            assert_eq!(params.check(), Ok(()), "{n} threads");
        }
        assert_eq!(LoadParams::default().check(), Ok(()));
    }

    #[test]
    fn seeds_never_map_to_llama_random_seed() {
        for s in [0xFFFF_FFFF_i64, -1, i64::MAX, i64::MIN, 0, 1234] {
            assert_ne!(seed_from(s), 0xFFFF_FFFF, "seed {s}");
        }
        assert_eq!(seed_from(1234), 1234);
        assert_ne!(seed_from(1), seed_from(2));
    }

    /// Every PHP signature with generation arguments spells the defaults
    /// of `GenerateParams::default()`.
    #[test]
    fn php_signatures_spell_the_generation_defaults() {
        let source = include_str!("../php/model.rs");
        let expected = format!(
            "maxTokens = {DEFAULT_MAX_TOKENS}, nCtx = {DEFAULT_N_CTX}, temperature = {DEFAULT_TEMPERATURE:.1}, seed = {DEFAULT_SEED}"
        );
        let signatures: Vec<&str> = source
            .lines()
            .filter(|line| line.contains("defaults(maxTokens"))
            .collect();
        assert_eq!(signatures.len(), 6, "the six generating methods");
        for line in signatures {
            assert!(line.contains(&expected), "{line} does not spell {expected}");
        }
    }
}
