//! `Displace\Infer\Response`: the result of `Model::chat()`.

use ext_php_rs::boxed::ZBox;
use ext_php_rs::flags::ClassFlags;
use ext_php_rs::prelude::*;
use ext_php_rs::types::{ZendHashTable, Zval};

use super::convert::json_to_zval;
use super::exceptions::{inference_exception, no_constructor};
use super::tool_call::ToolCall;
use crate::backend::generation::TokenLogprob;
use crate::backend::Timings;
use crate::chat::{reasoning, tools};
use crate::engine::Generation;

/// What `chat()` produced: the text, its answer and reasoning, and counts.
#[php_class]
#[php(name = "Displace\\Infer\\Response")]
#[php(flags = ClassFlags::Final.union(ClassFlags::NotSerializable))]
#[derive(Debug)]
pub struct Response {
    text: String,
    answer: String,
    reasoning: Option<String>,
    finish_reason: &'static str,
    tokens_generated: u32,
    prompt_tokens: u32,
    cached_tokens: u32,
    tool_calls: Vec<tools::ToolCall>,
    timings: Timings,
    logprobs: Option<Vec<TokenLogprob>>,
}

impl From<Generation> for Response {
    fn from(g: Generation) -> Self {
        let split = reasoning::split(g.without_calls.as_deref().unwrap_or(&g.text));
        Self::of(g, split.answer, split.reasoning)
    }
}

impl Response {
    /// The result of a plain-text completion: the answer is the whole text,
    /// with no reasoning split off.
    pub fn plain(g: Generation) -> Self {
        let answer = g.text.clone();
        Self::of(g, answer, None)
    }

    fn of(g: Generation, answer: String, reasoning: Option<String>) -> Self {
        Self {
            tool_calls: g.tool_calls,
            answer,
            reasoning,
            text: g.text,
            finish_reason: g.finish.as_str(),
            tokens_generated: g.tokens_generated,
            prompt_tokens: g.prompt_tokens,
            cached_tokens: g.reused_tokens,
            timings: g.timings,
            logprobs: g.logprobs,
        }
    }
}

#[php_impl]
impl Response {
    /// Responses come from `Model::chat()`.
    pub fn __construct() -> PhpResult<Self> {
        Err(no_constructor("Response", "Model::chat()"))
    }

    /// Everything generated, reasoning included.
    pub fn text(&self) -> String {
        self.text.clone()
    }

    /// The text without `<think>` blocks (nor tool calls), leading
    /// whitespace trimmed.
    pub fn answer(&self) -> String {
        self.answer.clone()
    }

    /// The contents of the `<think>` blocks, or null when there were none.
    pub fn reasoning(&self) -> Option<String> {
        self.reasoning.clone()
    }

    /// Whether the model produced non-empty reasoning.
    pub fn has_reasoning(&self) -> bool {
        self.reasoning.as_deref().is_some_and(|r| !r.is_empty())
    }

    /// The tools the reply calls, in order (complete calls only).
    pub fn tool_calls(&self) -> Vec<ToolCall> {
        self.tool_calls
            .iter()
            .map(|c| ToolCall { inner: c.clone() })
            .collect()
    }

    /// `'eos'`, `'length'`, `'stop'`, `'timeout'`, `'cancelled'` or
    /// `'tool_calls'`.
    pub fn finish_reason(&self) -> &'static str {
        self.finish_reason
    }

    /// Tokens generated, the end-of-generation token excluded.
    pub fn tokens_generated(&self) -> i64 {
        i64::from(self.tokens_generated)
    }

    /// Tokens of the rendered prompt.
    pub fn prompt_tokens(&self) -> i64 {
        i64::from(self.prompt_tokens)
    }

    /// Prompt tokens taken from a cache instead of evaluated: the prefix
    /// this prompt shares with the model's previous call or with a prefix
    /// the process (or the machine's shared store) keeps.
    pub fn cached_tokens(&self) -> i64 {
        i64::from(self.cached_tokens)
    }

    /// Where the time went: `prompt_ms` (restoring cached prefixes and
    /// evaluating the rest of the prompt), `generation_ms`, the rates of
    /// both (tokens evaluated per second of prompt time; tokens generated
    /// per second of generation time), `cached_tokens`, and `cache`:
    /// `'none'`, `'memory'` (this process) or `'shared'` (the machine's
    /// store). For a connected model the times are measured by this
    /// process: up to the first text, and the rest.
    pub fn timings(&self) -> PhpResult<ZBox<ZendHashTable>> {
        let t = self.timings;
        let evaluated = self.prompt_tokens.saturating_sub(self.cached_tokens);
        let rate = |n: u32, ms: f64| {
            if ms > 0.0 {
                f64::from(n) * 1000.0 / ms
            } else {
                0.0
            }
        };
        let mut out = ZendHashTable::new();
        out.insert("prompt_ms", t.prompt_ms)?;
        out.insert("generation_ms", t.generation_ms)?;
        out.insert("prompt_tokens_per_second", rate(evaluated, t.prompt_ms))?;
        out.insert(
            "tokens_per_second",
            rate(self.tokens_generated, t.generation_ms),
        )?;
        out.insert("cached_tokens", i64::from(self.cached_tokens))?;
        let forced = t.forced_tokens.min(self.tokens_generated);
        out.insert("forced_tokens", i64::from(forced))?;
        out.insert("sampled_tokens", i64::from(self.tokens_generated - forced))?;
        out.insert("lookup_proposed", i64::from(t.lookup_proposed))?;
        out.insert("lookup_accepted", i64::from(t.lookup_accepted))?;
        out.insert("generation_steps", i64::from(t.steps))?;
        out.insert("cache", t.cache.as_str())?;
        Ok(out)
    }

    /// Each generated token's log-probability and the most likely tokens
    /// at its place, when the call asked for them (`'logprobs' => true`):
    /// a list of `['id', 'token', 'bytes', 'logprob', 'forced',
    /// 'top_logprobs' => [['id', 'token', 'bytes', 'logprob'], …]]`,
    /// OpenAI's shape; null when the call did not ask.
    pub fn logprobs(&self) -> PhpResult<Option<ZBox<ZendHashTable>>> {
        self.logprobs
            .as_deref()
            .map(super::logprobs::to_php)
            .transpose()
    }

    /// An instance of `$class` built from the answer (a JSON object): nested
    /// objects, lists, enums by value and dates included, each checked
    /// against the class's types and constraints. Under
    /// `Schema::fromClass($class)` a run that finished `'eos'` always fits.
    #[php(name = "into")]
    pub fn build_object(&self, class: &str) -> PhpResult<Zval> {
        let truncated = match self.finish_reason {
            "eos" => None,
            other => Some(other),
        };
        let why = |detail: String| {
            let detail = match truncated {
                Some(reason) => format!(
                    "{detail} (the run finished '{reason}', not 'eos': the answer may be cut short)"
                ),
                None => detail,
            };
            inference_exception(format!("Response::into({class}): {detail}"))
        };
        let value: serde_json::Value = serde_json::from_str(&self.answer)
            .map_err(|e| why(format!("the answer is not complete JSON: {e}")))?;
        super::reflect::hydrate(class, &value).map_err(why)
    }

    /// The answer decoded as JSON (objects as PHP arrays).
    pub fn json(&self) -> PhpResult<Zval> {
        let value: serde_json::Value = serde_json::from_str(&self.answer)
            .map_err(|e| inference_exception(format!("answer is not valid JSON: {e}")))?;
        json_to_zval(&value)
            .map_err(|e| inference_exception(format!("answer is not valid JSON: {e}")))
    }
}
