//! How a token is chosen: every sampling parameter of llama-server's
//! `/completion` that changes the distribution, with its names, defaults and
//! ranges, and the order of llama.cpp's common sampler chain that llama-server
//! runs (`engine::decode::sampler` builds the same chain in process;
//! `remote` sends the same values to a server).

/// The samplers' settings of one call. Defaults are llama-server's, except
/// `temperature` (a positional argument of every method, 0.0 by default) and
/// `seed`, which live in `GenerateParams`.
#[derive(Debug, Clone, PartialEq)]
pub struct Sampling {
    /// Keep the `top_k` most likely tokens (0: all).
    pub top_k: i32,
    /// Keep the most likely tokens whose probabilities add up to `top_p`
    /// (1.0: all).
    pub top_p: f32,
    /// Drop tokens less likely than `min_p` times the most likely (0.0: none).
    pub min_p: f32,
    /// Locally typical sampling (1.0: off).
    pub typical_p: f32,
    /// The fewest tokens top-p, min-p, typical-p and XTC leave (0: one).
    pub min_keep: u32,
    /// Keep the tokens whose logits are within `top_n_sigma` standard
    /// deviations of the highest (<= 0: off).
    pub top_n_sigma: f32,
    /// XTC: with this probability, remove every token above `xtc_threshold`
    /// but the least likely of them (0.0: off; a threshold above 0.5: off).
    pub xtc_probability: f32,
    pub xtc_threshold: f32,
    /// Dynamic temperature: the temperature varies by ± `dynatemp_range`
    /// with the entropy, mapped through `dynatemp_exponent` (0.0: off).
    pub dynatemp_range: f32,
    pub dynatemp_exponent: f32,
    /// Penalties on the last `repeat_last_n` tokens, the prompt's included
    /// (0: none): divide a repeated token's logit by `repeat_penalty` (1.0:
    /// off), subtract `frequency_penalty` times its count and
    /// `presence_penalty` once (0.0: off).
    pub repeat_penalty: f32,
    pub repeat_last_n: u32,
    pub presence_penalty: f32,
    pub frequency_penalty: f32,
    /// DRY ("don't repeat yourself").
    pub dry: Dry,
    /// Mirostat replaces every sampler above but `logit_bias` and the
    /// temperature.
    pub mirostat: Mirostat,
    /// Added to the logits of the tokens named, before any other sampler;
    /// `f32::NEG_INFINITY` bans a token. The constraint's mask is applied
    /// apart: a bias never makes a token the constraint refuses possible.
    pub logit_bias: Vec<LogitBias>,
    /// Ban the end-of-generation tokens (llama-server's `ignore_eos`: each
    /// at -inf, after the caller's biases): the text runs to `max_tokens`
    /// or a stop string.
    pub ignore_eos: bool,
    /// The chain's stages in the caller's order (llama-server's `samplers`);
    /// `None`: [`Stage::DEFAULT_ORDER`]. A stage left out is not applied,
    /// whatever its setting. Mirostat ignores it (as llama-server does).
    pub samplers: Option<Vec<Stage>>,
    /// Adaptive-p (stage [`Stage::AdaptiveP`], which then draws instead of
    /// the plain seeded draw): the probability it steers the picks towards
    /// (negative: off) and how fast it adapts.
    pub adaptive_target: f32,
    pub adaptive_decay: f32,
}

/// One stage of llama-server's sampler chain, as its `samplers` option
/// names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    Penalties,
    Dry,
    TopNSigma,
    TopK,
    TypicalP,
    TopP,
    MinP,
    Xtc,
    Temperature,
    AdaptiveP,
}

/// Each stage with llama-server's canonical name and its letter (the
/// string form of `samplers`).
const STAGES: [(Stage, &str, char); 10] = [
    (Stage::Penalties, "penalties", 'e'),
    (Stage::Dry, "dry", 'd'),
    (Stage::TopNSigma, "top_n_sigma", 's'),
    (Stage::TopK, "top_k", 'k'),
    (Stage::TypicalP, "typ_p", 'y'),
    (Stage::TopP, "top_p", 'p'),
    (Stage::MinP, "min_p", 'm'),
    (Stage::Xtc, "xtc", 'x'),
    (Stage::Temperature, "temperature", 't'),
    (Stage::AdaptiveP, "adaptive_p", 'a'),
];

impl Stage {
    /// llama.cpp's default order (common/common.h), without adaptive-p.
    pub const DEFAULT_ORDER: [Stage; 9] = [
        Stage::Penalties,
        Stage::Dry,
        Stage::TopNSigma,
        Stage::TopK,
        Stage::TypicalP,
        Stage::TopP,
        Stage::MinP,
        Stage::Xtc,
        Stage::Temperature,
    ];

    pub fn name(self) -> &'static str {
        STAGES
            .iter()
            .find(|(s, _, _)| *s == self)
            .map_or("", |(_, name, _)| name)
    }

    /// The stage `name` names, as llama-server reads it: any case, its
    /// canonical name, with `-` for `_` or without `_`, and `nucleus`,
    /// `temp`, `typ`.
    pub fn from_name(name: &str) -> Option<Stage> {
        let lower = name.to_ascii_lowercase();
        match lower.as_str() {
            "nucleus" => return Some(Stage::TopP),
            "temp" => return Some(Stage::Temperature),
            "typ" => return Some(Stage::TypicalP),
            _ => {}
        }
        STAGES.iter().find_map(|(stage, canonical, _)| {
            let forms = [
                canonical.to_string(),
                canonical.replace('_', "-"),
                canonical.replace('_', ""),
            ];
            forms.contains(&lower).then_some(*stage)
        })
    }

    pub fn from_char(c: char) -> Option<Stage> {
        STAGES
            .iter()
            .find(|(_, _, letter)| *letter == c)
            .map(|(stage, _, _)| *stage)
    }

    /// Every name, for messages.
    pub fn names() -> Vec<&'static str> {
        STAGES.iter().map(|(_, name, _)| *name).collect()
    }
}

/// DRY: a token that would extend a repetition longer than
/// `allowed_length` tokens, within the last `penalty_last_n`, loses
/// `multiplier * base ^ (length - allowed_length)`; the sequence breakers
/// end a repetition.
#[derive(Debug, Clone, PartialEq)]
pub struct Dry {
    /// 0.0: off.
    pub multiplier: f32,
    pub base: f32,
    pub allowed_length: u32,
    /// 0: off.
    pub penalty_last_n: u32,
    pub sequence_breakers: Vec<String>,
}

/// Mirostat's version, with its target entropy (`tau`) and learning rate
/// (`eta`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Mirostat {
    Off,
    V1 { tau: f32, eta: f32 },
    V2 { tau: f32, eta: f32 },
}

/// One entry of `logit_bias`.
#[derive(Debug, Clone, PartialEq)]
pub struct LogitBias {
    pub target: BiasTarget,
    pub bias: f32,
}

/// What a bias applies to: a token id, or every token of a text as the
/// model tokenizes it (llama-server's meaning of a string key).
#[derive(Debug, Clone, PartialEq)]
pub enum BiasTarget {
    Token(i32),
    Text(String),
}

/// llama-server's defaults (llama.cpp's `common_params_sampling`).
pub const DEFAULT_TOP_K: i32 = 40;
pub const DEFAULT_TOP_P: f32 = 0.95;
pub const DEFAULT_MIN_P: f32 = 0.05;
pub const DEFAULT_XTC_THRESHOLD: f32 = 0.1;
pub const DEFAULT_REPEAT_LAST_N: u32 = 64;
pub const DEFAULT_DRY_BASE: f32 = 1.75;
pub const DEFAULT_DRY_ALLOWED_LENGTH: u32 = 2;
pub const DEFAULT_DRY_PENALTY_LAST_N: u32 = 64;
pub const DEFAULT_DRY_BREAKERS: [&str; 4] = ["\n", ":", "\"", "*"];
pub const DEFAULT_MIROSTAT_TAU: f32 = 5.0;
pub const DEFAULT_MIROSTAT_ETA: f32 = 0.1;

impl Default for Dry {
    fn default() -> Self {
        Self {
            multiplier: 0.0,
            base: DEFAULT_DRY_BASE,
            allowed_length: DEFAULT_DRY_ALLOWED_LENGTH,
            penalty_last_n: DEFAULT_DRY_PENALTY_LAST_N,
            sequence_breakers: DEFAULT_DRY_BREAKERS.map(str::to_owned).to_vec(),
        }
    }
}

impl Dry {
    /// Whether DRY changes anything (llama.cpp's own test).
    pub fn is_on(&self) -> bool {
        self.multiplier != 0.0 && self.base >= 1.0 && self.penalty_last_n != 0
    }
}

impl Default for Sampling {
    fn default() -> Self {
        Self {
            top_k: DEFAULT_TOP_K,
            top_p: DEFAULT_TOP_P,
            min_p: DEFAULT_MIN_P,
            typical_p: 1.0,
            min_keep: 0,
            top_n_sigma: -1.0,
            xtc_probability: 0.0,
            xtc_threshold: DEFAULT_XTC_THRESHOLD,
            dynatemp_range: 0.0,
            dynatemp_exponent: 1.0,
            repeat_penalty: 1.0,
            repeat_last_n: DEFAULT_REPEAT_LAST_N,
            presence_penalty: 0.0,
            frequency_penalty: 0.0,
            dry: Dry::default(),
            mirostat: Mirostat::Off,
            logit_bias: Vec::new(),
            ignore_eos: false,
            samplers: None,
            adaptive_target: -1.0,
            adaptive_decay: 0.9,
        }
    }
}

impl Sampling {
    /// The chain's stages, in order.
    pub fn stages(&self) -> &[Stage] {
        self.samplers.as_deref().unwrap_or(&Stage::DEFAULT_ORDER)
    }

    /// Whether the chain has `stage`.
    pub fn has(&self, stage: Stage) -> bool {
        self.stages().contains(&stage)
    }

    /// Whether the temperature is applied: mirostat always applies it; the
    /// plain chain only with its stage (llama-server draws at the model's
    /// own distribution when `samplers` leaves it out).
    pub fn applies_temperature(&self) -> bool {
        self.mirostat != Mirostat::Off || self.has(Stage::Temperature)
    }

    /// Whether the penalties change anything.
    pub fn penalizes(&self) -> bool {
        self.has(Stage::Penalties)
            && self.repeat_last_n != 0
            && (self.repeat_penalty != 1.0
                || self.frequency_penalty != 0.0
                || self.presence_penalty != 0.0)
    }

    /// Whether XTC can remove a token.
    pub fn xtc_is_on(&self) -> bool {
        self.has(Stage::Xtc) && self.xtc_probability > 0.0 && self.xtc_threshold <= 0.5
    }

    /// Whether DRY changes anything.
    pub fn dry_is_on(&self) -> bool {
        self.has(Stage::Dry) && self.dry.is_on()
    }

    /// Whether a sampler that reads the whole set of candidates (so gives
    /// another result once the constraint has masked some) is on, at
    /// temperature 0: there, top-k, top-p, min-p and top-n-sigma always keep
    /// the most likely token, and the pick is the most likely; typical-p,
    /// XTC and mirostat may drop it.
    pub fn greedy_reads_the_set(&self) -> bool {
        (self.has(Stage::TypicalP) && self.typical_p < 1.0)
            || self.xtc_is_on()
            || self.mirostat != Mirostat::Off
            || self.has(Stage::AdaptiveP)
    }

    /// Whether, at temperature 0, the pick is the token with the highest
    /// logit as the model computed it: nothing moves a logit.
    pub fn greedy_is_argmax(&self) -> bool {
        !self.greedy_reads_the_set()
            && !self.penalizes()
            && !self.dry_is_on()
            && self.logit_bias.is_empty()
            && !self.ignore_eos
    }
}

/// One range of a numeric setting, for its checks and their messages.
#[derive(Debug, Clone, Copy)]
pub struct Range {
    pub min: f64,
    pub max: f64,
    pub what: &'static str,
}

/// Every numeric sampling setting a generation method takes in `options`,
/// with its range and what it means at its edge, as the binding checks and
/// words them. llama-server clamps some silently; the extension refuses a
/// value outside, naming the key and the range.
pub const RANGES: &[(&str, Range)] = &[
    (
        "typical_p",
        Range {
            min: 0.0,
            max: 1.0,
            what: "a float between 0.0 and 1.0 (1.0 disables it)",
        },
    ),
    (
        "top_n_sigma",
        Range {
            min: -1.0,
            max: 1.0e6,
            what: "a float, <= 0 disables it (-1.0 is llama-server's off)",
        },
    ),
    (
        "xtc_probability",
        Range {
            min: 0.0,
            max: 1.0,
            what: "a float between 0.0 and 1.0 (0.0 disables it)",
        },
    ),
    (
        "xtc_threshold",
        Range {
            min: 0.0,
            max: 1.0,
            what: "a float between 0.0 and 1.0 (above 0.5 disables it)",
        },
    ),
    (
        "dynatemp_range",
        Range {
            min: 0.0,
            max: 1.0e6,
            what: "a float >= 0.0 (0.0 disables it)",
        },
    ),
    (
        "dynatemp_exponent",
        Range {
            min: 0.0,
            max: 1.0e6,
            what: "a float >= 0.0",
        },
    ),
    (
        "presence_penalty",
        Range {
            min: -2.0,
            max: 2.0,
            what: "a float between -2.0 and 2.0 (0.0 disables it)",
        },
    ),
    (
        "frequency_penalty",
        Range {
            min: -2.0,
            max: 2.0,
            what: "a float between -2.0 and 2.0 (0.0 disables it)",
        },
    ),
    (
        "dry_multiplier",
        Range {
            min: 0.0,
            max: 1.0e6,
            what: "a float >= 0.0 (0.0 disables it)",
        },
    ),
    (
        "dry_base",
        Range {
            min: 1.0,
            max: 1.0e6,
            what: "a float >= 1.0",
        },
    ),
    (
        "mirostat_tau",
        Range {
            min: 0.0,
            max: 1.0e6,
            what: "a float >= 0.0",
        },
    ),
    (
        "mirostat_eta",
        Range {
            min: 0.0,
            max: 1.0,
            what: "a float between 0.0 and 1.0",
        },
    ),
    (
        "adaptive_target",
        Range {
            min: -1.0,
            max: 1.0,
            what: "a float from -1.0 to 1.0 (negative disables it)",
        },
    ),
    (
        "adaptive_decay",
        Range {
            min: 0.0,
            max: 0.99,
            what: "a float between 0.0 and 0.99",
        },
    ),
];

/// The integer settings: the most a count may be (llama-server's limit is
/// `INT32_MAX`).
pub const INT_RANGES: &[(&str, i64, i64, &str)] = &[
    ("min_keep", 0, i32::MAX as i64, "an int >= 0"),
    (
        "repeat_last_n",
        0,
        i32::MAX as i64,
        "an int >= 0 (0 disables the penalties; a window longer than the context is the context)",
    ),
    ("dry_allowed_length", 0, i32::MAX as i64, "an int >= 0"),
    (
        "dry_penalty_last_n",
        0,
        i32::MAX as i64,
        "an int >= 0 (0 disables DRY; a window longer than the context is the context)",
    ),
    ("mirostat", 0, 2, "0, 1 or 2 (0 disables it)"),
];

/// The most `dry_sequence_breakers` a call may give (llama-server's default
/// has 4): llama.cpp scans the vocabulary for each before the first token.
pub const MAX_DRY_BREAKERS: usize = 32;

/// The largest bias a finite value may have, either way (OpenAI's range;
/// `false` bans a token).
pub const MAX_BIAS: f32 = 100.0;

/// The range of `top_logprobs` (llama-server's `n_probs` with the OpenAI
/// API's limit).
pub const MAX_TOP_LOGPROBS: u32 = 20;

#[cfg(test)]
mod tests {
    use super::*;

    /// `samplers` names as llama-server reads them (common/sampling.cpp's
    /// names, aliases and letters), and the default order.
    #[test]
    fn stages_are_named_as_llama_server_names_them() {
        for (name, stage) in [
            ("top_k", Stage::TopK),
            ("Top-K", Stage::TopK),
            ("topk", Stage::TopK),
            ("nucleus", Stage::TopP),
            ("temp", Stage::Temperature),
            ("typ", Stage::TypicalP),
            ("typ_p", Stage::TypicalP),
            ("top-n-sigma", Stage::TopNSigma),
            ("ADAPTIVE_P", Stage::AdaptiveP),
            ("penalties", Stage::Penalties),
        ] {
            assert_eq!(Stage::from_name(name), Some(stage), "{name}");
        }
        assert_eq!(Stage::from_name("infill"), None);
        assert_eq!(Stage::from_name("top_q"), None);
        let letters: Vec<Option<Stage>> = "edskypmxta".chars().map(Stage::from_char).collect();
        assert_eq!(letters.iter().flatten().count(), 10);
        assert_eq!(
            Stage::DEFAULT_ORDER.map(Stage::name).join(","),
            "penalties,dry,top_n_sigma,top_k,typ_p,top_p,min_p,xtc,temperature"
        );
        // A stage left out is not applied, and without the temperature the
        // draw is not greedy.
        let mut s = Sampling {
            samplers: Some(vec![Stage::TopK]),
            repeat_penalty: 1.5,
            ..Sampling::default()
        };
        assert!(!s.penalizes() && !s.applies_temperature());
        s.samplers = None;
        assert!(s.penalizes() && s.applies_temperature());
    }

    /// The defaults are llama-server's (common/common.h of the llama.cpp
    /// the extension links), and at them nothing moves a logit.
    #[test]
    fn defaults_are_llama_cpps() {
        let s = Sampling::default();
        assert_eq!((s.top_k, s.top_p, s.min_p), (40, 0.95, 0.05));
        assert_eq!((s.typical_p, s.min_keep, s.top_n_sigma), (1.0, 0, -1.0));
        assert_eq!((s.xtc_probability, s.xtc_threshold), (0.0, 0.1));
        assert_eq!((s.repeat_penalty, s.repeat_last_n), (1.0, 64));
        assert_eq!(
            (
                s.dry.multiplier,
                s.dry.base,
                s.dry.allowed_length,
                s.dry.penalty_last_n
            ),
            (0.0, 1.75, 2, 64)
        );
        assert!(!s.penalizes() && !s.dry.is_on() && !s.xtc_is_on());
        assert!(s.greedy_is_argmax());
    }
}
