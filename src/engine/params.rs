//! Typed, validated parameters of loading and generation. The PHP layer reads
//! option arrays into these; every range check lives here.

use super::error::{InferenceError, InferenceResult};

/// How a model is loaded.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadParams {
    pub n_gpu_layers: u32,
    pub use_mmap: bool,
    pub use_mlock: bool,
    pub n_threads: u32,
}

impl Default for LoadParams {
    fn default() -> Self {
        Self {
            n_gpu_layers: 0,
            use_mmap: true,
            use_mlock: false,
            n_threads: default_threads(),
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
}

/// Sampling filters applied when temperature > 0 (llama.cpp's defaults).
pub const DEFAULT_TOP_K: i32 = 40;
pub const DEFAULT_TOP_P: f32 = 0.95;
pub const DEFAULT_MIN_P: f32 = 0.05;
/// How many recent tokens `repeat_penalty` looks at.
pub const REPEAT_LAST_N: i32 = 64;

/// What the sampler is allowed to emit.
#[derive(Debug, Clone, PartialEq)]
pub enum Constraint {
    /// A GBNF grammar whose start rule is `root`.
    Grammar(String),
}

/// Everything one `chat()` / `raw()` call needs besides the prompt.
#[derive(Debug, Clone, PartialEq)]
pub struct GenerateParams {
    pub max_tokens: u32,
    pub n_ctx: u32,
    pub temperature: f32,
    pub seed: u32,
    pub top_k: i32,
    pub top_p: f32,
    pub min_p: f32,
    pub repeat_penalty: f32,
    pub stop: Vec<String>,
    pub constraint: Option<Constraint>,
    /// Reuse the cached keys and values of the prefix this prompt shares with
    /// what the model's context holds from the previous call.
    pub cache_prompt: bool,
}

impl Default for GenerateParams {
    fn default() -> Self {
        Self {
            max_tokens: 128,
            n_ctx: 2048,
            temperature: 0.0,
            seed: seed_from(1234),
            top_k: DEFAULT_TOP_K,
            top_p: DEFAULT_TOP_P,
            min_p: DEFAULT_MIN_P,
            repeat_penalty: 1.0,
            stop: Vec::new(),
            constraint: None,
            cache_prompt: true,
        }
    }
}

impl GenerateParams {
    /// The positional arguments of `chat()` / `raw()`, checked.
    pub fn new(max_tokens: i64, n_ctx: i64, temperature: f64, seed: i64) -> InferenceResult<Self> {
        let max_tokens = positive_u32("maxTokens", max_tokens)?;
        let n_ctx = positive_u32("nCtx", n_ctx)?;
        if !temperature.is_finite() || temperature < 0.0 {
            return Err(InferenceError::InvalidArgument {
                name: "temperature",
                expected: "a finite number >= 0",
                got: php_float(temperature),
            });
        }
        Ok(Self {
            max_tokens,
            n_ctx,
            temperature: temperature as f32,
            seed: seed_from(seed),
            ..Self::default()
        })
    }

    pub fn is_greedy(&self) -> bool {
        self.temperature <= 0.0
    }
}

fn positive_u32(name: &'static str, value: i64) -> InferenceResult<u32> {
    if value < 1 {
        return Err(InferenceError::InvalidArgument {
            name,
            expected: "at least 1",
            got: value.to_string(),
        });
    }
    // Anything above u32 cannot fit any context llama.cpp can allocate; the
    // context check names the real limit, so saturate rather than fail here.
    Ok(u32::try_from(value).unwrap_or(u32::MAX))
}

/// A float written as PHP writes it: `NAN`, `INF`, `-INF`, else the shortest
/// decimal that reads back the same.
pub fn php_float(f: f64) -> String {
    if f.is_nan() {
        "NAN".to_owned()
    } else if f.is_infinite() {
        if f > 0.0 { "INF" } else { "-INF" }.to_owned()
    } else {
        f.to_string()
    }
}

/// Map any PHP integer to a sampler seed. llama.cpp treats 0xFFFFFFFF as "pick
/// a random seed", which would make a seeded call unrepeatable, so the map
/// never produces it.
pub fn seed_from(seed: i64) -> u32 {
    const RANDOM_SEED: u64 = 0xFFFF_FFFF;
    ((seed as u64) % RANDOM_SEED) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_non_positive_counts() {
        for (max, ctx, name) in [(0, 10, "maxTokens"), (-5, 10, "maxTokens"), (1, 0, "nCtx")] {
            match GenerateParams::new(max, ctx, 0.0, 1) {
                Err(InferenceError::InvalidArgument { name: got, .. }) => assert_eq!(got, name),
                other => panic!("({max}, {ctx}) gave {other:?}"),
            }
        }
    }

    #[test]
    fn rejects_negative_and_non_finite_temperature() {
        for t in [-0.1, f64::NAN, f64::INFINITY] {
            let err = GenerateParams::new(1, 1, t, 1).unwrap_err();
            assert!(
                err.to_string().starts_with("temperature must be"),
                "{t}: {err}"
            );
        }
    }

    #[test]
    fn huge_counts_saturate_instead_of_wrapping() {
        let p = GenerateParams::new(i64::MAX, i64::MAX, 0.0, 1).unwrap();
        assert_eq!((p.max_tokens, p.n_ctx), (u32::MAX, u32::MAX));
    }

    #[test]
    fn seeds_never_map_to_llama_random_seed() {
        for s in [0xFFFF_FFFF_i64, -1, i64::MAX, i64::MIN, 0, 1234] {
            assert_ne!(seed_from(s), 0xFFFF_FFFF, "seed {s}");
        }
        assert_eq!(seed_from(1234), 1234);
        assert_ne!(seed_from(1), seed_from(2));
    }
}
