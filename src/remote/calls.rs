//! The calls made on a model served over HTTP: the [`Backend`] that
//! `Displace\\Infer\\Model::connect()` gives, and the refusals, worded
//! once, of what only a model loaded in this process can do.

use std::sync::Arc;

use serde_json::{json, Value};

use super::{llama_server, openai, EngineKind, Remote};
use crate::backend::error::List;
use crate::backend::{
    Backend, GenerateParams, InferenceError, InferenceResult, PieceStream, Prompt, Prompts,
    RemoteError, StopCheck,
};
use crate::chat::Message;

/// The refusal of an option only the engine in this process honours.
macro_rules! local_only {
    ($why:literal) => {
        concat!(
            "applies to models loaded in this process only, not to a connected model: ",
            $why
        )
    };
}

/// Which values of a local-only option a connected model refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refused {
    Always,
    /// Only `true`: `false` asks for what the server does anyway (for a
    /// switch that is on by default, so that a portable call may say so).
    WhenOn,
}

/// Why a connected model refuses the options only the engine in this
/// process honours.
const LOCAL_ONLY: &[(&str, Refused, &str)] = &[
    (
        "fast_forward",
        Refused::WhenOn,
        local_only!("the server samples every token; only the in-process engine appends forced text without sampling"),
    ),
    (
        "lookup",
        Refused::WhenOn,
        local_only!("the server decides its own speculation when it starts; only the in-process engine proposes tokens from the prompt per call"),
    ),
    (
        "max_reasoning_tokens",
        Refused::Always,
        local_only!("the server applies the grammar from the first token and cannot bound a thought"),
    ),
    (
        "tools",
        Refused::Always,
        local_only!("tool calls are parsed from the model's own call format by the in-process engine"),
    ),
    (
        "tool_choice",
        Refused::Always,
        local_only!("tool calls are parsed from the model's own call format by the in-process engine"),
    ),
];

/// The options (or, ending in `_`, the families of options) llama-server
/// takes and vLLM's and SGLang's OpenAI API does not.
const OPENAI_LACKS: &[&str] = &[
    "cache_prompt",
    "typical_p",
    "min_keep",
    "top_n_sigma",
    "xtc_",
    "dynatemp_",
    "repeat_last_n",
    "dry_",
    "mirostat",
    "post_sampling_probs",
    "lora",
    "ignore_eos",
    "samplers",
    "adaptive_",
];

const OPENAI_LACKS_WHY: &str = "is a llama-server parameter that this extension does not send to vLLM or SGLang (it sends them temperature, top_k, top_p, min_p, seed, the three penalties, logit_bias by token id, logprobs and top_logprobs)";

impl Backend for Remote {
    /// A server generates; it has no call that reads a given reply's
    /// probabilities.
    fn score(
        &self,
        _messages: &[Message],
        _answers: &[String],
        _params: &GenerateParams,
    ) -> InferenceResult<Vec<f64>> {
        Err(RemoteError::Unsupported {
            what: "scoring answers",
            engine: self.engine.name(),
            why: "its API generates replies and reports the probabilities of the tokens it writes, never of a reply it is given; score with a model loaded in this process",
        }
        .into())
    }

    /// Generate from `prompt`: one request, read to its end.
    fn generate(
        &self,
        prompt: Prompt<'_>,
        params: &GenerateParams,
    ) -> InferenceResult<crate::backend::Generation> {
        self.start(prompt, params.clone())?.into_generation()
    }

    fn stream(
        self: Arc<Self>,
        prompt: Prompt<'_>,
        params: GenerateParams,
    ) -> InferenceResult<Box<dyn PieceStream>> {
        Ok(Box::new(self.start(prompt, params)?))
    }

    /// Generate from many prompts as concurrent requests (at most
    /// `parallel` at a time): the server batches them.
    fn generate_many(
        &self,
        prompts: Prompts<'_>,
        params: &GenerateParams,
        parallel: u32,
    ) -> InferenceResult<Vec<crate::backend::Generation>> {
        self.many(prompts, parallel, params)
    }

    /// The embeddings of `texts`, in order; the server's answer is bounded
    /// by the connection's `timeout` and `stop`'s deadline (which ends the
    /// call with `InferenceError::Aborted`, as in process), and weighs at
    /// most `max_response_bytes`.
    fn embed_many(&self, texts: &[String], stop: StopCheck) -> InferenceResult<Vec<Vec<f32>>> {
        if let Some(index) = texts.iter().position(String::is_empty) {
            return Err(InferenceError::EmptyText.in_list(List::Texts, index));
        }
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        if self.shared.is_some() {
            // Its llama-server runs a model for generation, and llama-server
            // embeds only when started for an embedding model alone; its own
            // answer would tell the caller to restart it with `--embeddings`.
            return Err(RemoteError::Unsupported {
                what: "an embedding",
                engine: self.engine.name(),
                why: "the installation's shared server runs its model for generation; embed with an embedding model loaded in this process",
            }
            .into());
        }
        let (path, body) = match self.engine {
            EngineKind::LlamaServer => ("/embeddings", llama_server::embedding_request(texts)),
            EngineKind::Vllm | EngineKind::Sglang => (
                "/v1/embeddings",
                openai::embedding_request(&self.model, texts),
            ),
        };
        let limit = self.http.limit("an embeddings answer", None);
        let aborted = |e: RemoteError| match e {
            RemoteError::TimedOut { .. } if stop.due() => InferenceError::Aborted,
            e => e.into(),
        };
        let name = self.engine.name();
        let vectors = match self.engine {
            EngineKind::LlamaServer => {
                let answer = self
                    .http
                    .post_json(path, &body, name, stop.deadline, limit)
                    .map_err(aborted)?;
                llama_server::embeddings(answer, texts.len())
            }
            EngineKind::Vllm | EngineKind::Sglang => {
                let answer = self
                    .http
                    .post_json(path, &body, name, stop.deadline, limit)
                    .map_err(aborted)?;
                openai::embeddings(answer, texts.len())
            }
        };
        vectors.map_err(|d| self.bad_body(d).into())
    }

    /// How many tokens `text` is, without BOS.
    fn count_tokens(&self, text: &str, parse_special: bool) -> InferenceResult<usize> {
        match self.engine {
            EngineKind::LlamaServer => Ok(self.tokenize(text, false, parse_special, None)?.len()),
            EngineKind::Vllm | EngineKind::Sglang => {
                if !parse_special {
                    return Err(RemoteError::Unsupported {
                        what: "counting tokens with control-token markup read as text",
                        engine: self.engine.name(),
                        why: "its /tokenize endpoint always reads the markup as control tokens",
                    }
                    .into());
                }
                let answer: openai::Tokenized = self.http.post_json(
                    "/tokenize",
                    &openai::tokenize_request(&self.model, text),
                    self.engine.name(),
                    None,
                    self.http.limit(
                        "a /tokenize answer",
                        Some(super::limits::tokenize_bytes(text.len())),
                    ),
                )?;
                openai::token_count(&answer, text.len()).map_err(|d| self.bad_body(d).into())
            }
        }
    }

    /// The text `chat()` gives the model (llama-server only: the others
    /// render on their side).
    fn render_prompt(
        &self,
        messages: &[Message],
        params: &GenerateParams,
    ) -> InferenceResult<String> {
        Ok(self.chat_segments(messages, params)?.text())
    }

    fn info(&self) -> Value {
        let mut info = json!({
            "backend": "remote",
            "engine": self.engine().name(),
            "url": self.url(),
            "model": self.model_name(),
            "context_length": self.trained_ctx,
            "shared": self.shared_server_pid().is_some(),
            // llama-server says whether it has an image projector; the
            // others do not (null).
            "vision": self.vision(),
            "lora": self.adapters(),
        });
        if let (Some(pid), Some(map)) = (self.shared_server_pid(), info.as_object_mut()) {
            map.insert("server_pid".to_owned(), json!(pid));
        }
        info
    }

    /// The context length the model was trained for (0: the server does
    /// not say).
    fn context_length(&self) -> u32 {
        self.trained_ctx
    }

    /// The chat template the server renders with (llama-server); vLLM and
    /// SGLang do not publish theirs.
    fn chat_template(&self) -> Option<String> {
        self.llama.as_ref().and_then(|l| l.template.clone())
    }

    /// `'jinja'` or, for vLLM and SGLang, which render on their side,
    /// `'server'`.
    fn chat_template_kind(&self) -> &'static str {
        match &self.llama {
            Some(l) => l.renderer.kind(),
            None => "server",
        }
    }

    fn refuses_option(&self, key: &str, off: bool) -> Option<&'static str> {
        let local = LOCAL_ONLY
            .iter()
            .find(|(name, refused, _)| *name == key && !(off && *refused == Refused::WhenOn))
            .map(|(_, _, why)| *why);
        match &self.llama {
            Some(_) => local,
            None => local.or_else(|| {
                OPENAI_LACKS
                    .iter()
                    .any(|name| key.starts_with(name))
                    .then_some(OPENAI_LACKS_WHY)
            }),
        }
    }
}
