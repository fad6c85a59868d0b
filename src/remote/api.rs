//! A model served over HTTP as a [`Backend`]: the calls of a model loaded in
//! this process, and the refusals worded once for what only that one can do.

use std::sync::Arc;

use serde_json::{json, Value};

use super::{Remote, RemoteStream};
use crate::chat::Message;
use crate::common::{
    Backend, GenerateParams, Generation, InferenceResult, Piece, PieceStream, StopCheck,
};

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
        "cache_prompt",
        Refused::Always,
        local_only!("the server keeps its own prompt cache (llama-server reuses the common prefix of each slot)"),
    ),
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

impl Backend for Remote {
    fn chat(&self, messages: &[Message], params: &GenerateParams) -> InferenceResult<Generation> {
        Remote::chat(self, messages, params)
    }

    fn raw(
        &self,
        prompt: &str,
        add_bos: bool,
        params: &GenerateParams,
    ) -> InferenceResult<Generation> {
        Remote::raw(self, prompt, add_bos, params)
    }

    fn stream_chat(
        self: Arc<Self>,
        messages: &[Message],
        params: GenerateParams,
    ) -> InferenceResult<Box<dyn PieceStream>> {
        Ok(Box::new(Remote::stream_chat(&self, messages, params)?))
    }

    fn stream_raw(
        self: Arc<Self>,
        prompt: &str,
        add_bos: bool,
        params: GenerateParams,
    ) -> InferenceResult<Box<dyn PieceStream>> {
        Ok(Box::new(Remote::stream_raw(
            &self, prompt, add_bos, params,
        )?))
    }

    fn chat_many(
        &self,
        prompts: &[Vec<Message>],
        params: &GenerateParams,
        parallel: u32,
    ) -> InferenceResult<Vec<Generation>> {
        Remote::chat_many(self, prompts, params, parallel)
    }

    fn raw_many(
        &self,
        prompts: &[String],
        add_bos: bool,
        params: &GenerateParams,
        parallel: u32,
    ) -> InferenceResult<Vec<Generation>> {
        Remote::raw_many(self, prompts, add_bos, params, parallel)
    }

    /// The server's answer is bounded by the connection's `timeout`.
    fn embed_many(&self, texts: &[String], _stop: StopCheck) -> InferenceResult<Vec<Vec<f32>>> {
        Remote::embed_many(self, texts)
    }

    fn count_tokens(&self, text: &str, parse_special: bool) -> InferenceResult<usize> {
        Remote::count_tokens(self, text, parse_special)
    }

    fn render_prompt(
        &self,
        messages: &[Message],
        params: &GenerateParams,
    ) -> InferenceResult<String> {
        Remote::render_prompt(self, messages, params)
    }

    fn info(&self) -> Value {
        let mut info = json!({
            "backend": "remote",
            "engine": self.engine().name(),
            "url": self.url(),
            "model": self.model_name(),
            "context_length": Remote::context_length(self),
            "shared": self.shared_server_pid().is_some(),
        });
        if let (Some(pid), Some(map)) = (self.shared_server_pid(), info.as_object_mut()) {
            map.insert("server_pid".to_owned(), json!(pid));
        }
        info
    }

    fn context_length(&self) -> u32 {
        Remote::context_length(self)
    }

    fn chat_template(&self) -> Option<String> {
        Remote::chat_template(self)
    }

    fn chat_template_kind(&self) -> &'static str {
        Remote::chat_template_kind(self)
    }

    fn refuses_option(&self, key: &str, off: bool) -> Option<&'static str> {
        LOCAL_ONLY
            .iter()
            .find(|(name, refused, _)| *name == key && !(off && *refused == Refused::WhenOn))
            .map(|(_, _, why)| *why)
    }
}

impl PieceStream for RemoteStream {
    fn next_piece(&mut self) -> InferenceResult<Option<Piece>> {
        RemoteStream::next_piece(self)
    }

    fn finish(&mut self) -> InferenceResult<&Generation> {
        RemoteStream::finish(self)
    }

    fn cancel(&mut self) {
        RemoteStream::cancel(self);
    }
}
