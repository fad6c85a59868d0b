//! The sampler and log-probability options of the generation methods, under
//! llama-server's names, with its meanings (`backend::sampling`); a value
//! outside its range is refused, naming the key and the range.

use ext_php_rs::types::{ArrayKey, Zval};

use super::convert::{self, describe};
use super::problem::Problem;
use crate::backend::params::{GenerateParams, LogprobParams};
use crate::backend::sampling::{
    BiasTarget, LogitBias, Mirostat, Stage, DEFAULT_MIROSTAT_ETA, DEFAULT_MIROSTAT_TAU, INT_RANGES,
    MAX_BIAS, MAX_DRY_BREAKERS, MAX_TOP_LOGPROBS, RANGES,
};

/// What the options that only mean something together said, read in any
/// order and settled by [`Pending::finish`].
#[derive(Default)]
pub struct Pending {
    mirostat: Option<i64>,
    tau: Option<f32>,
    eta: Option<f32>,
    logprobs: Option<bool>,
    top_logprobs: Option<u32>,
    post_sampling: Option<bool>,
}

/// Read the sampler option `key` into `params` (or `pending`); `false`
/// when `key` is not one of them (the others of `options::MANY_KEYS`).
pub fn read(
    key: &str,
    value: &Zval,
    params: &mut GenerateParams,
    pending: &mut Pending,
) -> Result<bool, Problem> {
    let s = &mut params.sampling;
    match key {
        "mirostat" => pending.mirostat = Some(int(key, value)?),
        "mirostat_tau" => pending.tau = Some(float(key, value)?),
        "mirostat_eta" => pending.eta = Some(float(key, value)?),
        "logprobs" => pending.logprobs = Some(flag(key, value)?),
        "top_logprobs" => {
            let what = format!("an int from 0 to {MAX_TOP_LOGPROBS}");
            pending.top_logprobs = Some(
                convert::int(value)
                    .filter(|n| (0..=i64::from(MAX_TOP_LOGPROBS)).contains(n))
                    .and_then(|n| u32::try_from(n).ok())
                    .ok_or_else(|| Problem::wrong(key, &what, value))?,
            );
        }
        "post_sampling_probs" => pending.post_sampling = Some(flag(key, value)?),
        "typical_p" => s.typical_p = float(key, value)?,
        "top_n_sigma" => s.top_n_sigma = float(key, value)?,
        "xtc_probability" => s.xtc_probability = float(key, value)?,
        "xtc_threshold" => s.xtc_threshold = float(key, value)?,
        "dynatemp_range" => s.dynatemp_range = float(key, value)?,
        "dynatemp_exponent" => s.dynatemp_exponent = float(key, value)?,
        "presence_penalty" => s.presence_penalty = float(key, value)?,
        "frequency_penalty" => s.frequency_penalty = float(key, value)?,
        "dry_multiplier" => s.dry.multiplier = float(key, value)?,
        "dry_base" => s.dry.base = float(key, value)?,
        "min_keep" => s.min_keep = count(key, value)?,
        "repeat_last_n" => s.repeat_last_n = count(key, value)?,
        "dry_allowed_length" => s.dry.allowed_length = count(key, value)?,
        "dry_penalty_last_n" => s.dry.penalty_last_n = count(key, value)?,
        "dry_sequence_breakers" => s.dry.sequence_breakers = breakers(key, value)?,
        "logit_bias" => s.logit_bias = logit_bias(key, value)?,
        "ignore_eos" => s.ignore_eos = flag(key, value)?,
        "samplers" => s.samplers = Some(stages(key, value)?),
        "adaptive_target" => s.adaptive_target = float(key, value)?,
        "adaptive_decay" => s.adaptive_decay = float(key, value)?,
        _ => return Ok(false),
    }
    Ok(true)
}

impl Pending {
    /// Settle what the options said together: mirostat with its settings,
    /// the log-probabilities with theirs.
    pub fn finish(self, params: &mut GenerateParams) -> Result<(), Problem> {
        let tau = self.tau.unwrap_or(DEFAULT_MIROSTAT_TAU);
        let eta = self.eta.unwrap_or(DEFAULT_MIROSTAT_ETA);
        params.sampling.mirostat = match self.mirostat.unwrap_or(0) {
            1 => Mirostat::V1 { tau, eta },
            2 => Mirostat::V2 { tau, eta },
            _ => {
                for (key, given) in [
                    ("mirostat_tau", self.tau.is_some()),
                    ("mirostat_eta", self.eta.is_some()),
                ] {
                    if given {
                        return Err(Problem::new(
                            key,
                            "applies to mirostat: add 'mirostat' => 1 or 2, or leave it out",
                        ));
                    }
                }
                Mirostat::Off
            }
        };
        let on = self.logprobs.unwrap_or(false);
        for (key, given) in [
            ("top_logprobs", self.top_logprobs.is_some()),
            ("post_sampling_probs", self.post_sampling.is_some()),
        ] {
            if given && !on {
                return Err(Problem::new(
                    key,
                    "applies to log-probabilities: add 'logprobs' => true",
                ));
            }
        }
        params.logprobs = on.then(|| LogprobParams {
            top: self.top_logprobs.unwrap_or(0),
            after_sampling: self.post_sampling.unwrap_or(false),
        });
        Ok(())
    }
}

/// A float in the range [`RANGES`] gives `key`.
fn float(key: &str, value: &Zval) -> Result<f32, Problem> {
    let Some((_, range)) = RANGES.iter().find(|(name, _)| *name == key) else {
        return Err(Problem::new(key, "has no range (an internal error)"));
    };
    convert::finite_float(value)
        .filter(|v| (range.min..=range.max).contains(v))
        .map(|v| v as f32)
        .ok_or_else(|| Problem::wrong(key, range.what, value))
}

/// An int in the range [`INT_RANGES`] gives `key`.
fn int(key: &str, value: &Zval) -> Result<i64, Problem> {
    let Some((_, min, max, what)) = INT_RANGES.iter().find(|(name, ..)| *name == key) else {
        return Err(Problem::new(key, "has no range (an internal error)"));
    };
    convert::int(value)
        .filter(|v| (*min..=*max).contains(v))
        .ok_or_else(|| Problem::wrong(key, what, value))
}

fn count(key: &str, value: &Zval) -> Result<u32, Problem> {
    int(key, value).map(|n| u32::try_from(n).unwrap_or(u32::MAX))
}

fn flag(key: &str, value: &Zval) -> Result<bool, Problem> {
    convert::bool(value).ok_or_else(|| Problem::wrong(key, "a bool", value))
}

/// `dry_sequence_breakers`: a non-empty list of at most
/// [`MAX_DRY_BREAKERS`] non-empty strings without NUL bytes (llama.cpp
/// reads them as C strings, and scans the whole vocabulary for each one
/// before the first token: 15 ms a breaker on a 49k vocabulary, so 300 of
/// them held a call 4.5 s before its deadline was first asked).
fn breakers(key: &str, value: &Zval) -> Result<Vec<String>, Problem> {
    let what = format!(
        "a non-empty list of at most {MAX_DRY_BREAKERS} non-empty strings without NUL bytes"
    );
    convert::string_list(value)
        .filter(|list| {
            (1..=MAX_DRY_BREAKERS).contains(&list.len())
                && list.iter().all(|s| !s.is_empty() && !s.contains('\0'))
        })
        .ok_or_else(|| Problem::wrong(key, &what, value))
}

/// `logit_bias`: an array of token id (int key) or text (string key) =>
/// bias (a number from -MAX_BIAS to MAX_BIAS, or `false` to ban).
fn logit_bias(key: &str, value: &Zval) -> Result<Vec<LogitBias>, Problem> {
    let what = "an array of token id or text => bias (e.g. [15043 => -5.0, ' banana' => false])";
    let table = value
        .array()
        .ok_or_else(|| Problem::wrong(key, what, value))?;
    let mut biases = Vec::with_capacity(table.len());
    for (name, item) in table.iter() {
        let target = match name {
            ArrayKey::Long(id) => BiasTarget::Token(i32::try_from(id).map_err(|_| {
                Problem::new(
                    key,
                    format!("names token {id}, which is no token id (ids are 0 to 2147483647)"),
                )
            })?),
            other => BiasTarget::Text(
                convert::key_name(&other)
                    .ok_or_else(|| Problem::new(key, "names a text that is not valid UTF-8"))?,
            ),
        };
        let shown = match &target {
            BiasTarget::Token(id) => id.to_string(),
            BiasTarget::Text(text) => format!("{text:?}"),
        };
        if let BiasTarget::Text(text) = &target {
            if text.is_empty() {
                return Err(Problem::new(
                    key,
                    "names an empty text: a bias applies to a token id or a non-empty text",
                ));
            }
        }
        let bias = if item.is_false() {
            f32::NEG_INFINITY
        } else {
            convert::finite_float(item)
                .filter(|b| (-f64::from(MAX_BIAS)..=f64::from(MAX_BIAS)).contains(b))
                .map(|b| b as f32)
                .ok_or_else(|| {
                    Problem::new(
                        key,
                        format!(
                            "[{shown}] must be a number from -{MAX_BIAS} to {MAX_BIAS}, or false to ban it, got {}",
                            describe(item)
                        ),
                    )
                })?
        };
        biases.push(LogitBias { target, bias });
    }
    Ok(biases)
}

/// `samplers`: the chain's stages in order, as llama-server takes them: a
/// list of names, or a string of their letters. An unknown one is refused
/// (llama-server skips it with a warning in its log).
fn stages(key: &str, value: &Zval) -> Result<Vec<Stage>, Problem> {
    let known = || {
        format!(
            "(known: {}; or a string of their letters, e.g. \"edskypmxt\")",
            Stage::names().join(", ")
        )
    };
    let refuse = |what: String| {
        if what.eq_ignore_ascii_case("infill") || what == "i" {
            Problem::new(
                key,
                "names 'infill', llama-server's fill-in-the-middle stage, which this extension does not offer",
            )
        } else {
            Problem::new(
                key,
                format!(
                    "names the sampler '{what}', which llama-server does not have {}",
                    known()
                ),
            )
        }
    };
    if let Some(text) = convert::string(value) {
        let stages = text
            .chars()
            .map(|c| Stage::from_char(c).ok_or_else(|| refuse(c.to_string())))
            .collect::<Result<Vec<_>, _>>()?;
        return once_each(key, stages);
    }
    let list = value
        .array()
        .filter(|a| a.has_sequential_keys())
        .ok_or_else(|| {
            Problem::wrong(
                key,
                &format!(
                    "a list of sampler names or a string of their letters {}",
                    known()
                ),
                value,
            )
        })?;
    let stages = list
        .values()
        .map(|item| {
            let name = convert::string(item)
                .ok_or_else(|| Problem::wrong(key, "a list of sampler names (strings)", item))?;
            Stage::from_name(&name).ok_or_else(|| refuse(name))
        })
        .collect::<Result<Vec<_>, _>>()?;
    once_each(key, stages)
}

/// The stages, when none is named twice. llama-server would build a stage
/// as often as it is named; each DRY stage scans the vocabulary, so
/// `str_repeat('d', 300)` held a call 3 s before its first token, and a
/// 100 KB string would have held it for twenty minutes. Applying a stage
/// twice means nothing a single stage with other settings cannot say.
fn once_each(key: &str, stages: Vec<Stage>) -> Result<Vec<Stage>, Problem> {
    for (at, stage) in stages.iter().enumerate() {
        if stages[..at].contains(stage) {
            return Err(Problem::new(
                key,
                format!(
                    "names the sampler '{}' twice: each stage of the chain applies once",
                    stage.name()
                ),
            ));
        }
    }
    Ok(stages)
}
