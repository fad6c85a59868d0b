//! A model loaded in this process as a [`Backend`]: what `Displace\Infer\Model`
//! calls, whichever backend it holds.

use std::sync::Arc;

use serde_json::{json, Value};

use super::model::{Model, ModelInfo};
use super::stream::Stream;
use crate::chat::Message;
use crate::common::{
    Backend, GenerateParams, Generation, InferenceResult, Piece, PieceStream, StopCheck,
};

impl Backend for Model {
    fn chat(&self, messages: &[Message], params: &GenerateParams) -> InferenceResult<Generation> {
        Model::chat(self, messages, params)
    }

    fn raw(
        &self,
        prompt: &str,
        add_bos: bool,
        params: &GenerateParams,
    ) -> InferenceResult<Generation> {
        Model::raw(self, prompt, add_bos, params)
    }

    fn stream_chat(
        self: Arc<Self>,
        messages: &[Message],
        params: GenerateParams,
    ) -> InferenceResult<Box<dyn PieceStream>> {
        Ok(Box::new(Model::stream_chat(&self, messages, params)?))
    }

    fn stream_raw(
        self: Arc<Self>,
        prompt: &str,
        add_bos: bool,
        params: GenerateParams,
    ) -> InferenceResult<Box<dyn PieceStream>> {
        Ok(Box::new(Model::stream_raw(&self, prompt, add_bos, params)?))
    }

    fn chat_many(
        &self,
        prompts: &[Vec<Message>],
        params: &GenerateParams,
        parallel: u32,
    ) -> InferenceResult<Vec<Generation>> {
        Model::chat_many(self, prompts, params, parallel)
    }

    fn raw_many(
        &self,
        prompts: &[String],
        add_bos: bool,
        params: &GenerateParams,
        parallel: u32,
    ) -> InferenceResult<Vec<Generation>> {
        Model::raw_many(self, prompts, add_bos, params, parallel)
    }

    fn embed_many(&self, texts: &[String], stop: StopCheck) -> InferenceResult<Vec<Vec<f32>>> {
        Model::embed_many(self, texts, stop)
    }

    fn count_tokens(&self, text: &str, parse_special: bool) -> InferenceResult<usize> {
        Ok(Model::count_tokens(self, text, parse_special))
    }

    fn render_prompt(
        &self,
        messages: &[Message],
        params: &GenerateParams,
    ) -> InferenceResult<String> {
        Model::render_prompt(self, messages, params)
    }

    fn info(&self) -> Value {
        info_json(&Model::info(self))
    }

    fn context_length(&self) -> u32 {
        Model::context_length(self)
    }

    fn chat_template(&self) -> Option<String> {
        Model::chat_template(self)
    }

    fn chat_template_kind(&self) -> &'static str {
        Model::chat_template_kind(self)
    }

    fn is_streaming(&self) -> bool {
        Model::is_streaming(self)
    }
}

impl PieceStream for Stream {
    fn next_piece(&mut self) -> InferenceResult<Option<Piece>> {
        Stream::next_piece(self)
    }

    fn finish(&mut self) -> InferenceResult<&Generation> {
        Stream::finish(self)
    }

    fn cancel(&mut self) {
        Stream::cancel(self);
    }
}

/// `Model::info()` of a model in this process.
fn info_json(info: &ModelInfo) -> Value {
    let devices: Vec<Value> = info
        .devices
        .iter()
        .map(|d| {
            json!({
                "name": d.name,
                "description": d.description,
                "backend": d.backend,
                "type": d.kind,
                "memory_total": d.memory_total,
                "memory_free": d.memory_free,
            })
        })
        .collect();
    json!({
        "backend": info.backend,
        "backends": info.backends,
        "devices": devices,
        "gpu_layers": info.gpu_layers,
        "layers": info.layers,
        "context_length": info.context_length,
        "context_size": info.context_size,
        "threads": info.threads,
        "file_size": info.file_size,
        "parameters": info.parameters,
        "quantization": info.quantization,
    })
}
