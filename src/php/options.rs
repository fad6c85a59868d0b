//! The `options` arrays of `Model::load()`, `chat()` and `raw()`: every key is
//! known, every value has its type checked, and a mistake names the key.

use std::os::unix::ffi::OsStrExt;

use crate::remote::{ApiKey, ConnectParams, EngineKind};
use std::time::{Duration, Instant};

use ext_php_rs::types::{ArrayKey, Zval};

use super::convert::{self, describe, php_float, OptionsArg};
use super::errors::{CallError, LoadCallError};
use super::problem::Problem;
use super::sampling_options;
use super::schema_arg::schema_grammar;
use crate::backend::params::{seed_from, Constraint, LookupParams, Pooling, MAX_THREADS};
use crate::chat::tools::{ToolChoice, Tools};
use crate::engine::decode::batch::{DEFAULT_PARALLEL, MAX_PARALLEL};
use crate::engine::rerank::RerankParams;
use crate::engine::{GenerateParams, LoadParams};
use crate::grammar::CheckedGbnf;
use crate::loader::{LoadRequest, Source};
use crate::schema::ObjectDefaults;

/// The keys `Model::load()` accepts.
pub const LOAD_KEYS: &[&str] = &[
    "n_gpu_layers",
    "main_gpu",
    "use_mmap",
    "use_mlock",
    "n_threads",
    "persistent",
    "embedding",
    "pooling",
    "shared",
    "mmproj",
    "lora",
    "lora_contexts",
];

/// The keys `chatMany()` and `rawMany()` accept: those of `chat()` and
/// `raw()`, then how many prompts to decode at a time.
pub const MANY_KEYS: &[&str] = &[
    "schema",
    "schema_defaults",
    "grammar",
    "stop",
    "top_k",
    "top_p",
    "min_p",
    "repeat_penalty",
    "typical_p",
    "min_keep",
    "top_n_sigma",
    "xtc_probability",
    "xtc_threshold",
    "dynatemp_range",
    "dynatemp_exponent",
    "repeat_last_n",
    "presence_penalty",
    "frequency_penalty",
    "dry_multiplier",
    "dry_base",
    "dry_allowed_length",
    "dry_penalty_last_n",
    "dry_sequence_breakers",
    "mirostat",
    "mirostat_tau",
    "mirostat_eta",
    "logit_bias",
    "ignore_eos",
    "samplers",
    "adaptive_target",
    "adaptive_decay",
    "logprobs",
    "top_logprobs",
    "post_sampling_probs",
    "cache_prompt",
    "fast_forward",
    "lookup",
    "timeout",
    "max_reasoning_tokens",
    "template_vars",
    "special_tokens_in_messages",
    "tools",
    "tool_choice",
    "lora",
    "parallel",
];

/// The keys `score()` accepts: what renders the prompt, and how it is read.
pub const SCORE_KEYS: &[&str] = &[
    "lora",
    "cache_prompt",
    "timeout",
    "template_vars",
    "special_tokens_in_messages",
];

/// The keys `chat()` and `raw()` accept: all of `MANY_KEYS` but the last.
pub const GENERATE_KEYS: &[&str] = MANY_KEYS.split_at(MANY_KEYS.len() - 1).0;

/// Read `Model::load()` options.
pub fn load_request(options: OptionsArg<'_>) -> Result<LoadRequest, LoadCallError> {
    let mut params = LoadParams::default();
    let mut persistent = false;
    let mut shared = false;
    let mut others: Vec<String> = Vec::new();
    for (key, value) in options.entries(|i| Problem::integer_key(i, LOAD_KEYS))? {
        if key != "shared" {
            others.push(key.clone());
        }
        match key.as_str() {
            "shared" => shared = flag(&key, value)?,
            "persistent" => persistent = flag(&key, value)?,
            "embedding" => params.embedding = flag(&key, value)?,
            "pooling" => params.pooling = Some(pooling(&key, value)?),
            "mmproj" => {
                let path = convert::string_bytes(value)
                    .filter(|p| !p.is_empty() && !p.contains(&0))
                    .ok_or_else(|| {
                        Problem::wrong(&key, "the path of an image projector GGUF (a non-empty string without NUL bytes)", value)
                    })?;
                params.mmproj = Some(std::path::PathBuf::from(std::ffi::OsStr::from_bytes(path)));
            }
            "lora" => params.lora = super::lora_options::load_adapters(&key, value)?,
            "lora_contexts" => {
                let max = super::settings::max_lora_contexts();
                params.lora_contexts = convert::int(value)
                    .filter(|n| (1..=i64::from(max)).contains(n))
                    .and_then(|n| u32::try_from(n).ok())
                    .ok_or_else(|| {
                        Problem::wrong(
                            &key,
                            &format!("an int from 1 to {max} (php.ini infer.max_lora_contexts)"),
                            value,
                        )
                    })?;
            }
            _ => weights_option(&mut params, &key, value, LOAD_KEYS)?,
        }
    }
    if params.pooling.is_some() && !params.embedding {
        return Err(Problem::new(
            "pooling",
            "applies to embeddings only: add 'embedding' => true",
        )
        .into());
    }
    if params.lora_contexts > 1 && params.lora.is_empty() {
        return Err(Problem::new(
            "lora_contexts",
            "applies to a model loaded with LoRA adapters: add 'lora' => [['path' => …]]",
        )
        .into());
    }
    if params.embedding && params.mmproj.is_some() {
        return Err(Problem::new(
            "mmproj",
            "applies to generating models: a model loaded with 'embedding' => true takes no images",
        )
        .into());
    }
    if shared {
        if let Some(other) = others.first() {
            return Err(Problem::new(
                other,
                "applies to a model loaded in this process; a shared model is served with the server's settings (php.ini infer.server_*)",
            )
            .into());
        }
    }
    let source = match (shared, persistent) {
        (true, _) => Source::Shared,
        (false, true) => Source::Process,
        (false, false) => Source::Request,
    };
    Ok(LoadRequest { params, source })
}

/// The keys `RerankModel::load()` accepts.
pub const RERANK_KEYS: &[&str] = &[
    "n_gpu_layers",
    "main_gpu",
    "use_mmap",
    "use_mlock",
    "n_threads",
    "n_ctx",
    "instruction",
];

/// Tokens a query and a document may take together, unless the caller says.
pub const DEFAULT_RERANK_CTX: u32 = 4096;

/// Read `RerankModel::load()` options.
pub fn rerank_params(options: OptionsArg<'_>) -> Result<RerankParams, LoadCallError> {
    let mut params = RerankParams {
        load: LoadParams::default(),
        n_ctx: DEFAULT_RERANK_CTX,
        instruction: None,
    };
    for (key, value) in options.entries(|i| Problem::integer_key(i, RERANK_KEYS))? {
        match key.as_str() {
            "n_ctx" => params.n_ctx = int_in(&key, value, 1, "an int >= 1")?,
            "instruction" => {
                let text = convert::string(value)
                    .filter(|t| !t.contains('\0'))
                    .ok_or_else(|| {
                        Problem::wrong(&key, "a UTF-8 string without NUL bytes", value)
                    })?;
                params.instruction = Some(text);
            }
            _ => weights_option(&mut params.load, &key, value, RERANK_KEYS)?,
        }
    }
    Ok(params)
}

/// The options of how a model's weights are loaded and run, shared by
/// `Model::load()` and `RerankModel::load()`; any other key is unknown.
fn weights_option(
    params: &mut LoadParams,
    key: &str,
    value: &Zval,
    known: &[&str],
) -> Result<(), Problem> {
    match key {
        "n_gpu_layers" => params.n_gpu_layers = int_in(key, value, 0, "an int >= 0")?,
        "main_gpu" => params.main_gpu = Some(int_in(key, value, 0, "an int >= 0")?),
        "n_threads" => {
            let what = format!("an int between 1 and {MAX_THREADS}");
            params.n_threads = convert::int(value)
                .filter(|n| (1..=i64::from(MAX_THREADS)).contains(n))
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| Problem::wrong(key, &what, value))?;
            // The caller's count, always: no sharing with other processes.
            params.share_cores = false;
        }
        "use_mmap" => params.use_mmap = flag(key, value)?,
        "use_mlock" => params.use_mlock = flag(key, value)?,
        _ => return Err(Problem::unknown(key, known)),
    }
    Ok(())
}

/// What a generation method was called with besides its prompt: the
/// positional arguments every one of them takes, and its options.
pub struct GenerationArgs<'a> {
    pub max_tokens: i64,
    pub n_ctx: i64,
    pub temperature: f64,
    pub seed: i64,
    pub options: OptionsArg<'a>,
}

/// Which generation method: a chat (rendered with the template) or a raw
/// completion, of one prompt or many (`chatMany()` / `rawMany()` take
/// `parallel` too).
#[derive(Debug, Clone, Copy)]
pub struct CallKind {
    pub chat: bool,
    pub many: bool,
    /// The method returns strings (`raw()`, `rawMany()`), not responses:
    /// nothing to carry log-probabilities.
    pub strings: bool,
    /// `score()`: nothing is generated, only the prompt's options apply.
    pub scores: bool,
}

/// The parameters of a generation and how many prompts to decode at a time,
/// its options read once: first refused where the backend cannot honour one
/// (`refuses` gives why, asked before anything else so that such an option
/// is refused rather than ignored), then the positional arguments checked,
/// then each option.
pub fn generation_params(
    args: GenerationArgs<'_>,
    kind: CallKind,
    refuses: impl Fn(&str, bool) -> Option<&'static str>,
) -> Result<(GenerateParams, u32), CallError> {
    let keys = if kind.scores {
        SCORE_KEYS
    } else if kind.many {
        MANY_KEYS
    } else {
        GENERATE_KEYS
    };
    let mut entries = args.options.entries(|i| Problem::integer_key(i, keys))?;
    if let Some((key, _)) = entries.iter().find(|(k, _)| !keys.contains(&k.as_str())) {
        return Err(Problem::unknown(key, keys).into());
    }
    if let Some((key, why)) = entries
        .iter()
        .find_map(|(key, value)| refuses(key, value.is_false()).map(|why| (key, why)))
    {
        return Err(Problem::new(key, why.to_owned()).into());
    }
    if !args.temperature.is_finite() || args.temperature < 0.0 {
        return Err(CallError::InvalidArgument {
            name: "temperature",
            expected: "a finite number >= 0",
            got: php_float(args.temperature),
        });
    }
    let mut params = GenerateParams {
        max_tokens: positive_u32("maxTokens", args.max_tokens)?,
        n_ctx: positive_u32("nCtx", args.n_ctx)?,
        temperature: args.temperature as f32,
        seed: seed_from(args.seed),
        ..GenerateParams::default()
    };
    let mut parallel = DEFAULT_PARALLEL;
    if let Some(at) = entries
        .iter()
        .position(|(k, _)| kind.many && k == "parallel")
    {
        let (key, value) = entries.remove(at);
        let what = format!("an int between 1 and {MAX_PARALLEL}");
        parallel = convert::int(value)
            .filter(|n| (1..=i64::from(MAX_PARALLEL)).contains(n))
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| Problem::wrong(&key, &what, value))?;
    }
    apply_generate_options(entries, keys, &mut params)?;
    if !kind.chat {
        chat_only_options(&params)?;
    }
    if params.sampling.ignore_eos && params.constraint.is_some() {
        return Err(Problem::new(
            "ignore_eos",
            "applies to free text: under a schema or a grammar the output ends where they end (the end of generation is the only token they allow there)",
        )
        .into());
    }
    if kind.strings && params.logprobs.is_some() {
        return Err(Problem::new(
            "logprobs",
            "applies to calls that return a Response (chat(), stream(), rawStream(), chatMany()); raw() and rawMany() return strings: use rawStream($prompt, ...)->response()->logprobs()",
        )
        .into());
    }
    // What only PHP knows: whether the request's time limit has run out
    // (then the generation stops, and PHP reports the timeout on return).
    params.stop_check.interrupt = Some(super::timeout::interrupt());
    // A thread-safe PHP's limit is wall time: a deadline too.
    params.stop_check.deadline = super::timeout::within_limit(params.stop_check.deadline);
    Ok((params, parallel))
}

/// A count that must be at least 1. Anything above u32 cannot fit any
/// context llama.cpp can allocate; the context check names the real limit,
/// so it saturates rather than failing here.
fn positive_u32(name: &'static str, value: i64) -> Result<u32, CallError> {
    if value < 1 {
        return Err(CallError::InvalidArgument {
            name,
            expected: "at least 1",
            got: value.to_string(),
        });
    }
    Ok(u32::try_from(value).unwrap_or(u32::MAX))
}

/// Read `chat()` / `raw()` options into `params`; `known` lists the keys of
/// the method, for the error on an unknown one.
fn apply_generate_options(
    entries: Vec<(String, &Zval)>,
    known: &[&str],
    params: &mut GenerateParams,
) -> Result<(), CallError> {
    let has = |name: &str| entries.iter().any(|(k, _)| k == name);
    if has("schema") && has("grammar") {
        return Err(CallError::InvalidConstraint(
            "options \"schema\" and \"grammar\" are mutually exclusive: pass one of them"
                .to_owned(),
        ));
    }
    if has("tools") && (has("schema") || has("grammar")) {
        let other = if has("schema") { "schema" } else { "grammar" };
        return Err(CallError::InvalidConstraint(format!(
            "options \"tools\" and \"{other}\" are mutually exclusive: the tools' parameters shape the calls; pass one of them"
        )));
    }
    if has("tool_choice") && !has("tools") {
        return Err(Problem::new("tool_choice", "needs \"tools\" to choose from").into());
    }
    if has("schema_defaults") && has("grammar") {
        return Err(CallError::InvalidConstraint(
            "option \"schema_defaults\" applies to \"schema\" and has no meaning with \"grammar\": leave it out"
                .to_owned(),
        ));
    }
    // Read before `schema`, whatever the order of the keys: it says how the
    // schema is to be read.
    let mut defaults = ObjectDefaults::default();
    for (key, value) in &entries {
        if key == "schema_defaults" {
            defaults = schema_defaults(key, value)?;
        }
    }
    let mut choice = None;
    let mut pending = sampling_options::Pending::default();
    for (key, value) in entries {
        if sampling_options::read(&key, value, params, &mut pending)? {
            continue;
        }
        match key.as_str() {
            "tools" => {
                let specs =
                    super::tools::tools(value, defaults).map_err(|e| Problem::new(&key, e))?;
                params.tools = Some(Tools {
                    specs,
                    choice: ToolChoice::Auto,
                });
            }
            "tool_choice" => choice = Some((key, value)),
            "schema" => {
                let gbnf = schema_grammar(value, defaults).map_err(CallError::InvalidConstraint)?;
                params.constraint = Some(Constraint::Grammar(gbnf));
            }
            "schema_defaults" => {}
            "grammar" => {
                if convert::is_non_utf8_string(value) {
                    return Err(CallError::InvalidConstraint(
                        "invalid grammar: the grammar string is not valid UTF-8".to_owned(),
                    ));
                }
                let text = convert::string(value)
                    .ok_or_else(|| Problem::wrong(&key, "a GBNF string", value))?;
                let checked = CheckedGbnf::new(text)
                    .map_err(|e| CallError::InvalidConstraint(format!("invalid grammar: {e}")))?;
                params.constraint = Some(Constraint::Grammar(checked));
            }
            "stop" => params.stop = stop_strings(&key, value)?,
            "top_k" => {
                params.sampling.top_k = int_in(&key, value, 0, "an int >= 0 (0 disables it)")?;
            }
            "top_p" => params.sampling.top_p = fraction(&key, value, false)?,
            "min_p" => params.sampling.min_p = fraction(&key, value, true)?,
            "repeat_penalty" => {
                let what = "a finite float > 0 (1.0 disables it)";
                let v = convert::finite_float(value)
                    .filter(|v| *v > 0.0)
                    .ok_or_else(|| Problem::wrong(&key, what, value))?;
                params.sampling.repeat_penalty = v as f32;
            }
            "cache_prompt" => params.cache_prompt = flag(&key, value)?,
            "lora" => params.lora = Some(super::lora_options::call_adapters(&key, value)?),
            "fast_forward" => params.fast_forward = flag(&key, value)?,
            "lookup" => params.lookup = lookup(&key, value)?,
            "timeout" => params.stop_check.deadline = deadline(&key, value)?,
            "max_reasoning_tokens" => {
                let n: i64 = int_in(&key, value, 0, "an int >= 0 (0: no thinking)")?;
                params.max_reasoning_tokens = Some(u32::try_from(n).unwrap_or(u32::MAX));
            }
            "template_vars" => params.template_vars = template_vars(&key, value)?,
            "special_tokens_in_messages" => {
                params.special_tokens_in_messages = Some(flag(&key, value)?);
            }
            _ => return Err(Problem::unknown(&key, known).into()),
        }
    }
    pending.finish(params)?;
    if let (Some((key, value)), Some(tools)) = (choice, params.tools.as_mut()) {
        let names: Vec<&str> = tools.specs.iter().map(|t| t.name.as_str()).collect();
        tools.choice =
            super::tools::tool_choice(value, &names).map_err(|e| Problem::new(&key, e))?;
    }
    Ok(())
}

/// The `schema_defaults` option: the name of an [`ObjectDefaults`] policy.
/// `template_vars`: an array of name => value, each value as JSON.
fn template_vars(
    key: &str,
    value: &Zval,
) -> Result<serde_json::Map<String, serde_json::Value>, Problem> {
    let what = "an array of name => value (e.g. ['enable_thinking' => false])";
    let table = value
        .array()
        .ok_or_else(|| Problem::wrong(key, what, value))?;
    let mut vars = serde_json::Map::new();
    for (name, item) in table.iter() {
        let name = match name {
            ArrayKey::String(s) => s,
            ArrayKey::Str(s) => s.to_owned(),
            other => {
                return Err(Problem::new(
                    key,
                    format!("must be {what}; key {other} is not a name"),
                ))
            }
        };
        let json = convert::json_value(item, &format!("{key}[{name:?}]"))
            .map_err(|e| Problem::new(key, format!("cannot be passed to the template: {e}")))?;
        vars.insert(name, json);
    }
    Ok(vars)
}

/// `raw()` and its variants complete the text as given: no template to
/// pass variables to, no messages (the prompt's special tokens are always
/// parsed: it is the caller's own template).
fn chat_only_options(params: &GenerateParams) -> Result<(), CallError> {
    if !params.template_vars.is_empty() {
        return Err(Problem::new(
            "template_vars",
            "applies to the chat template, and raw() completes the text as given: leave it out",
        )
        .into());
    }
    if params.tools.is_some() {
        return Err(Problem::new(
            "tools",
            "applies to a chat, whose template renders the tools; raw() completes the text as given: leave it out",
        )
        .into());
    }
    if params.special_tokens_in_messages.is_some() {
        return Err(Problem::new(
            "special_tokens_in_messages",
            "applies to the messages of a chat, and raw() always reads special tokens in its prompt: leave it out",
        )
        .into());
    }
    Ok(())
}

fn schema_defaults(key: &str, value: &Zval) -> Result<ObjectDefaults, Problem> {
    let names: Vec<String> = ObjectDefaults::ALL
        .iter()
        .map(|(_, name)| format!("'{name}'"))
        .collect();
    let what = format!("one of {}", names.join(", "));
    let name = convert::string(value).ok_or_else(|| Problem::wrong(key, &what, value))?;
    ObjectDefaults::from_name(&name)
        .ok_or_else(|| Problem::new(key, format!("must be {what}, got '{name}'")))
}

/// The options of `Grammar::fromSchema()`: how the schema is read.
pub fn from_schema_defaults(options: OptionsArg<'_>) -> Result<ObjectDefaults, CallError> {
    const KEYS: &[&str] = &["schema_defaults"];
    let mut defaults = ObjectDefaults::default();
    for (key, value) in options.entries(|i| Problem::integer_key(i, KEYS))? {
        match key.as_str() {
            "schema_defaults" => defaults = schema_defaults(&key, value)?,
            _ => return Err(Problem::unknown(&key, KEYS).into()),
        }
    }
    Ok(defaults)
}

fn int_in<T: TryFrom<i64>>(key: &str, value: &Zval, min: i64, what: &str) -> Result<T, Problem> {
    convert::int(value)
        .filter(|v| *v >= min)
        .and_then(|v| T::try_from(v).ok())
        .ok_or_else(|| Problem::wrong(key, what, value))
}

/// The deadline `timeout` seconds from now (a finite number > 0). One too
/// far away for the clock to represent is no deadline at all.
fn deadline(key: &str, value: &Zval) -> Result<Option<Instant>, Problem> {
    let seconds = convert::finite_float(value)
        .filter(|s| *s > 0.0)
        .ok_or_else(|| Problem::wrong(key, "a finite number of seconds > 0", value))?;
    Ok(Duration::try_from_secs_f64(seconds)
        .ok()
        .and_then(|d| Instant::now().checked_add(d)))
}

/// One of the pooling names.
fn pooling(key: &str, value: &Zval) -> Result<Pooling, Problem> {
    convert::string(value)
        .and_then(|name| Pooling::from_name(&name))
        .ok_or_else(|| {
            let names: Vec<String> = Pooling::ALL.iter().map(|(_, n)| format!("'{n}'")).collect();
            Problem::wrong(key, &format!("one of {}", names.join(", ")), value)
        })
}

/// `lookup`: a bool (the default settings, or off), or an array of
/// settings (`ngram_min`, `ngram_max`, `tokens`), each an int in its
/// range, the others defaulted.
fn lookup(key: &str, value: &Zval) -> Result<Option<LookupParams>, Problem> {
    const WHAT: &str = "a bool, or an array of 'ngram_min', 'ngram_max', 'tokens' and 'adaptive'";
    if let Some(on) = convert::bool(value) {
        return Ok(on.then_some(LookupParams::DEFAULT));
    }
    let table = value
        .array()
        .ok_or_else(|| Problem::wrong(key, WHAT, value))?;
    let mut settings = LookupParams::DEFAULT;
    for (name, item) in table.iter() {
        let name = convert::key_name(&name).unwrap_or_else(|| name.to_string());
        if name == "adaptive" {
            settings.adaptive = convert::bool(item).ok_or_else(|| {
                Problem::new(
                    key,
                    format!("['adaptive'] must be a bool, got {}", describe(item)),
                )
            })?;
            continue;
        }
        let (field, max) = match name.as_str() {
            "ngram_min" => (&mut settings.ngram_min, LookupParams::MAX_NGRAM),
            "ngram_max" => (&mut settings.ngram_max, LookupParams::MAX_NGRAM),
            "tokens" => (&mut settings.tokens, LookupParams::MAX_TOKENS),
            _ => {
                return Err(Problem::new(
                    key,
                    format!("has an unknown setting '{name}' (known: ngram_min, ngram_max, tokens, adaptive)"),
                ))
            }
        };
        let what = format!("an int from 1 to {max}");
        *field = convert::int(item)
            .filter(|v| (1..=i64::from(max)).contains(v))
            .and_then(|v| u32::try_from(v).ok())
            .ok_or_else(|| {
                Problem::new(
                    key,
                    format!("['{name}'] must be {what}, got {}", describe(item)),
                )
            })?;
    }
    if settings.ngram_min > settings.ngram_max {
        return Err(Problem::new(
            key,
            format!(
                "['ngram_min'] ({}) must not exceed ['ngram_max'] ({})",
                settings.ngram_min, settings.ngram_max
            ),
        ));
    }
    Ok(Some(settings))
}

fn flag(key: &str, value: &Zval) -> Result<bool, Problem> {
    convert::bool(value).ok_or_else(|| Problem::wrong(key, "a bool", value))
}

/// A probability: (0, 1], or [0, 1] when zero is allowed.
fn fraction(key: &str, value: &Zval, zero_ok: bool) -> Result<f32, Problem> {
    let what = if zero_ok {
        "a float between 0.0 and 1.0"
    } else {
        "a float greater than 0.0 and at most 1.0"
    };
    convert::finite_float(value)
        .filter(|v| *v <= 1.0 && (*v > 0.0 || (zero_ok && *v == 0.0)))
        .map(|v| v as f32)
        .ok_or_else(|| Problem::wrong(key, what, value))
}

fn stop_strings(key: &str, value: &Zval) -> Result<Vec<String>, Problem> {
    let what = "a list of non-empty strings";
    let list = convert::string_list(value).ok_or_else(|| Problem::wrong(key, what, value))?;
    if list.iter().any(String::is_empty) {
        return Err(Problem::new(
            key,
            format!("must be {what}, got an empty string"),
        ));
    }
    Ok(list)
}

/// The keys `Model::connect()` accepts.
pub const CONNECT_KEYS: &[&str] = &[
    "model",
    "api_key",
    "timeout",
    "retries",
    "engine",
    "verify_tls",
    "max_response_bytes",
];

/// The least `max_response_bytes` may be: a server's description and an
/// error's excerpt fit in it.
pub const MIN_RESPONSE_BYTES: i64 = 64 * 1024;

/// The most `retries` may be: each waits twice as long as the one before.
pub const MAX_RETRIES: i64 = 10;

/// Read `Model::connect()` options for the server at `url`.
pub fn connect_params(
    url: String,
    options: OptionsArg<'_>,
) -> Result<ConnectParams, LoadCallError> {
    let mut params = ConnectParams::new(url);
    for (key, value) in options.entries(|i| Problem::integer_key(i, CONNECT_KEYS))? {
        match key.as_str() {
            "model" => {
                params.model = Some(
                    convert::string(value)
                        .filter(|m| !m.is_empty())
                        .ok_or_else(|| Problem::wrong(&key, "a non-empty string", value))?,
                );
            }
            "api_key" => {
                // The value is never echoed: not in errors, not in var_dump().
                let key_text = convert::string(value).filter(|k| {
                    !k.is_empty() && k.bytes().all(|b| b.is_ascii_graphic())
                });
                params.api_key = Some(ApiKey::new(key_text.ok_or_else(|| {
                    Problem::new(
                        &key,
                        "must be a non-empty string of printable ASCII characters without spaces",
                    )
                })?));
            }
            "timeout" => {
                let seconds = convert::finite_float(value)
                    .filter(|s| *s > 0.0)
                    .ok_or_else(|| Problem::wrong(&key, "a finite number of seconds > 0", value))?;
                params.timeout = Duration::try_from_secs_f64(seconds)
                    .map_err(|_| Problem::wrong(&key, "a finite number of seconds > 0", value))?;
            }
            "retries" => {
                params.retries = convert::int(value)
                    .filter(|n| (0..=MAX_RETRIES).contains(n))
                    .and_then(|n| u32::try_from(n).ok())
                    .ok_or_else(|| {
                        Problem::wrong(&key, &format!("an int from 0 to {MAX_RETRIES}"), value)
                    })?;
            }
            "engine" => {
                let names: Vec<&str> = EngineKind::ALL.iter().map(|(_, n)| *n).collect();
                params.engine = Some(
                    convert::string(value)
                        .and_then(|name| EngineKind::from_name(&name))
                        .ok_or_else(|| {
                            Problem::wrong(&key, &format!("one of '{}'", names.join("', '")), value)
                        })?,
                );
            }
            "verify_tls" => params.verify_tls = flag(&key, value)?,
            "max_response_bytes" => {
                params.max_response = convert::int(value)
                    .filter(|n| *n >= MIN_RESPONSE_BYTES)
                    .and_then(|n| u64::try_from(n).ok())
                    .ok_or_else(|| {
                        Problem::wrong(
                            &key,
                            &format!("an int of bytes ≥ {MIN_RESPONSE_BYTES}"),
                            value,
                        )
                    })?;
            }
            other if LOAD_KEYS.contains(&other) => {
                return Err(Problem::new(
                    other,
                    "applies to Model::load(): a connected model is loaded and run by the server, with the server's own settings",
                )
                .into())
            }
            _ => return Err(Problem::unknown(&key, CONNECT_KEYS).into()),
        }
    }
    Ok(params)
}
