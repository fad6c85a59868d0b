//! The OpenAI-compatible wire format of vLLM and SGLang: `/v1/models`,
//! `/v1/chat/completions` and `/v1/completions` (streamed, with usage),
//! `/v1/embeddings` and vLLM's `/tokenize`. llama-server answers
//! `/v1/models` the same way.
//!
//! The grammar goes where each engine reads it: vLLM's
//! `structured_outputs.grammar` (its older `guided_grammar` is ignored by
//! current versions, silently, so it is never sent), SGLang's `ebnf`; both
//! in the dialect of their grammar backend (see `dialect`).

use serde_json::{json, Map, Value as Json};

use super::dialect;
use super::llama_server::{byte_list, served_token, EmbeddingItem};
use super::EngineKind;
use crate::backend::error::{InferenceError, InferenceResult};
use crate::backend::generation::{TokenLogprob, TopLogprob};
use crate::backend::params::{Constraint, GenerateParams};
use crate::backend::sampling::BiasTarget;
use crate::backend::FinishReason;
use crate::backend::RemoteError;
use crate::chat::{Message, Part};

/// A model a server lists.
#[derive(Debug, Clone, PartialEq)]
pub struct ServedModel {
    pub id: String,
    /// Other names it answers to (llama-server's `--alias`).
    pub aliases: Vec<String>,
    /// vLLM's and SGLang's `max_model_len`.
    pub max_model_len: Option<u32>,
    /// llama-server's `meta.n_ctx_train`.
    pub trained_ctx: Option<u32>,
    /// llama-server's `meta.n_vocab`: the token ids it may send.
    pub n_vocab: Option<u32>,
}

/// The models of a `/v1/models` answer.
pub fn served_models(answer: &Json) -> Result<Vec<ServedModel>, String> {
    let data = answer
        .get("data")
        .and_then(Json::as_array)
        .ok_or("a /v1/models answer without \"data\"")?;
    data.iter()
        .map(|m| {
            let id = m
                .get("id")
                .and_then(Json::as_str)
                .ok_or("a model without \"id\"")?
                .to_owned();
            let number =
                |v: Option<&Json>| v.and_then(Json::as_u64).and_then(|n| u32::try_from(n).ok());
            Ok(ServedModel {
                id,
                aliases: m
                    .get("aliases")
                    .and_then(Json::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(|x| x.as_str().map(str::to_owned))
                            .collect()
                    })
                    .unwrap_or_default(),
                max_model_len: number(m.get("max_model_len")),
                trained_ctx: number(m.pointer("/meta/n_ctx_train")),
                n_vocab: number(m.pointer("/meta/n_vocab")).filter(|n| *n > 0),
            })
        })
        .collect()
}

/// Who owns the listed models (`"vllm"`, `"sglang"`, `"llamacpp"`).
pub fn owners(answer: &Json) -> Vec<String> {
    answer
        .get("data")
        .and_then(Json::as_array)
        .map(|data| {
            data.iter()
                .filter_map(|m| m.get("owned_by").and_then(Json::as_str))
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// vLLM's `/tokenize` request: the count of `text` without BOS.
pub fn tokenize_request(model: &str, text: &str) -> Json {
    json!({"model": model, "prompt": text, "add_special_tokens": false})
}

/// vLLM's `/tokenize` answer: the count, and the ids (read as a list of
/// numbers, not a JSON tree).
#[derive(Debug, serde::Deserialize)]
pub struct Tokenized {
    count: Option<u64>,
    tokens: Option<Vec<i64>>,
}

/// How many tokens a `/tokenize` answer for a text of `text_bytes` bytes
/// says: no more than such a text can make.
pub fn token_count(answer: &Tokenized, text_bytes: usize) -> Result<usize, String> {
    let count = answer
        .count
        .or_else(|| answer.tokens.as_ref().map(|t| t.len() as u64))
        .ok_or("a /tokenize answer without \"count\" or \"tokens\"")?;
    let most = super::limits::most_tokens(text_bytes);
    match usize::try_from(count) {
        Ok(count) if count <= most => Ok(count),
        _ => Err(format!(
            "a /tokenize answer of {count} tokens for a text of {text_bytes} bytes (at most {most})"
        )),
    }
}

/// The sampling fields shared by both endpoints. At temperature 0 the
/// engines decode greedily and the filters play no part (as locally), so
/// they are left out.
fn sampling(
    engine: EngineKind,
    model: &str,
    params: &GenerateParams,
) -> InferenceResult<Map<String, Json>> {
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert("max_tokens".into(), json!(params.max_tokens));
    body.insert("temperature".into(), json!(params.temperature));
    body.insert("seed".into(), json!(params.seed));
    if !params.is_greedy() {
        // Both engines disable top-k with -1; 0 is "off" here.
        let s = &params.sampling;
        let top_k = if s.top_k <= 0 { -1 } else { s.top_k };
        body.insert("top_k".into(), json!(top_k));
        body.insert("top_p".into(), json!(s.top_p));
        body.insert("min_p".into(), json!(s.min_p));
    }
    let s = &params.sampling;
    body.insert("repetition_penalty".into(), json!(s.repeat_penalty));
    body.insert("presence_penalty".into(), json!(s.presence_penalty));
    body.insert("frequency_penalty".into(), json!(s.frequency_penalty));
    if !s.logit_bias.is_empty() {
        // OpenAI's map of token id to a bias in [-100, 100]; a ban is -100.
        let mut biases = Map::new();
        for b in &s.logit_bias {
            match &b.target {
                BiasTarget::Token(id) => {
                    biases.insert(id.to_string(), json!(b.bias.max(-100.0)));
                }
                BiasTarget::Text(text) => {
                    return Err(InferenceError::InvalidOption {
                        key: "logit_bias",
                        detail: format!("names the text {text:?}; {} takes token ids only (its OpenAI API has no text bias): pass the ids its tokenizer gives", engine.name()),
                    })
                }
            }
        }
        body.insert("logit_bias".into(), Json::Object(biases));
    }
    if !params.stop.is_empty() {
        body.insert("stop".into(), json!(params.stop));
    }
    body.insert("stream".into(), json!(true));
    body.insert("stream_options".into(), json!({"include_usage": true}));
    if let Some(Constraint::Grammar(gbnf)) = &params.constraint {
        let grammar = dialect::xgrammar(gbnf.as_str()).map_err(|detail| RemoteError::Dialect {
            engine: engine.name(),
            detail,
        })?;
        match engine {
            EngineKind::Vllm => {
                body.insert("structured_outputs".into(), json!({"grammar": grammar}));
            }
            EngineKind::Sglang | EngineKind::LlamaServer => {
                body.insert("ebnf".into(), json!(grammar));
            }
        }
    }
    Ok(body)
}

/// A `/v1/chat/completions` request; the engine renders the messages with
/// its own template.
pub fn chat_request(
    engine: EngineKind,
    model: &str,
    messages: &[Message],
    params: &GenerateParams,
) -> InferenceResult<Json> {
    let mut body = sampling(engine, model, params)?;
    let messages = messages
        .iter()
        .map(|m| Ok(json!({"role": m.role.as_str(), "content": content(m)?})))
        .collect::<InferenceResult<Vec<Json>>>()?;
    body.insert("messages".into(), Json::Array(messages));
    if let Some(logprobs) = params.logprobs {
        // OpenAI's chat API: a switch, and how many of the most likely.
        body.insert("logprobs".into(), json!(true));
        body.insert("top_logprobs".into(), json!(logprobs.top));
    }
    if !params.template_vars.is_empty() {
        body.insert(
            "chat_template_kwargs".into(),
            Json::Object(params.template_vars.clone()),
        );
    }
    Ok(Json::Object(body))
}

/// A message's content: its text, or for a message with images the list of
/// its parts, each image a PNG `data:` URL.
fn content(message: &Message) -> InferenceResult<Json> {
    if message.images.is_empty() {
        return Ok(json!(message.content));
    }
    message
        .parts()
        .into_iter()
        .map(|part| match part {
            Part::Text(text) => Ok(json!({"type": "text", "text": text})),
            Part::Image(image) => {
                let url = image.data_url().map_err(|e| InferenceError::ImageFailed {
                    detail: e.to_string(),
                })?;
                Ok(json!({"type": "image_url", "image_url": {"url": url}}))
            }
        })
        .collect::<InferenceResult<Vec<Json>>>()
        .map(Json::Array)
}

/// A `/v1/completions` request.
pub fn completion_request(
    engine: EngineKind,
    model: &str,
    prompt: &str,
    add_bos: bool,
    params: &GenerateParams,
) -> InferenceResult<Json> {
    let mut body = sampling(engine, model, params)?;
    body.insert("prompt".into(), json!(prompt));
    if let Some(logprobs) = params.logprobs {
        // The completions API: how many of the most likely; the chosen
        // token's own comes with any number, 0 included.
        body.insert("logprobs".into(), json!(logprobs.top));
    }
    if !add_bos {
        match engine {
            EngineKind::Vllm => {
                body.insert("add_special_tokens".into(), json!(false));
            }
            EngineKind::Sglang | EngineKind::LlamaServer => {
                return Err(RemoteError::Unsupported {
                    what: "raw() with addBos: false",
                    engine: engine.name(),
                    why: "its completions endpoint always adds the tokenizer's special tokens",
                }
                .into())
            }
        }
    }
    Ok(Json::Object(body))
}

pub fn embedding_request(model: &str, texts: &[String]) -> Json {
    json!({"model": model, "input": texts, "encoding_format": "float"})
}

/// A `/v1/embeddings` answer, its vectors read straight into floats.
#[derive(Debug, serde::Deserialize)]
pub struct Embeddings {
    data: Vec<EmbeddingItem>,
}

/// The vectors of a `/v1/embeddings` answer, in the order of the texts.
pub fn embeddings(answer: Embeddings, count: usize) -> Result<Vec<Vec<f32>>, String> {
    super::llama_server::embeddings(answer.data, count)
}

/// How a choice ended: the reason and what stopped it.
#[derive(Debug, Clone, PartialEq)]
pub struct Ending {
    pub reason: String,
    /// vLLM's `stop_reason` / SGLang's `matched_stop`: a stop string, a
    /// token id, or null (end of generation).
    pub matched: Json,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Usage {
    pub prompt_tokens: u32,
    pub completion_tokens: u32,
    pub cached_tokens: u32,
}

/// One chunk of a stream.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Chunk {
    pub text: String,
    /// The log-probabilities of the chunk's tokens, when they were asked.
    pub logprobs: Vec<TokenLogprob>,
    pub ending: Option<Ending>,
    pub usage: Option<Usage>,
    pub error: Option<String>,
}

/// Read one `data:` chunk of a streamed chat (`delta.content`) or
/// completion (`text`).
pub fn chunk(data: &str, chat: bool) -> Result<Chunk, String> {
    let json: Json =
        serde_json::from_str(data).map_err(|e| format!("a chunk that is not JSON ({e})"))?;
    if let Some(error) = json.get("error") {
        let message = error
            .get("message")
            .and_then(Json::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| error.to_string());
        return Ok(Chunk {
            error: Some(message),
            ..Chunk::default()
        });
    }
    let mut out = Chunk::default();
    let choices = json
        .get("choices")
        .and_then(Json::as_array)
        .ok_or("a chunk without \"choices\"")?;
    if let Some(choice) = choices.first() {
        let text = if chat {
            choice.pointer("/delta/content")
        } else {
            choice.get("text")
        };
        if let Some(text) = text.and_then(Json::as_str) {
            out.text = text.to_owned();
        }
        if let Some(logprobs) = choice.get("logprobs").filter(|l| !l.is_null()) {
            out.logprobs = chunk_logprobs(logprobs)?;
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Json::as_str) {
            let matched = choice
                .get("stop_reason")
                .or_else(|| choice.get("matched_stop"))
                .cloned()
                .unwrap_or(Json::Null);
            out.ending = Some(Ending {
                reason: reason.to_owned(),
                matched,
            });
        }
    }
    if let Some(usage) = json.get("usage").filter(|u| !u.is_null()) {
        let number = |pointer: &str| {
            usage
                .pointer(pointer)
                .and_then(Json::as_u64)
                .and_then(|n| u32::try_from(n).ok())
        };
        out.usage = Some(Usage {
            prompt_tokens: number("/prompt_tokens").ok_or("usage without prompt_tokens")?,
            completion_tokens: number("/completion_tokens")
                .ok_or("usage without completion_tokens")?,
            cached_tokens: number("/prompt_tokens_details/cached_tokens").unwrap_or(0),
        });
    }
    Ok(out)
}

/// The log-probabilities of a chunk's tokens, in either of OpenAI's shapes:
/// the chat API's `content` list (each token's `token`, `bytes`, `logprob`
/// and `top_logprobs`; vLLM and SGLang on `/v1/chat/completions`,
/// llama-server on both endpoints, with its `id`s), or the completions
/// API's older lists (`tokens`, `token_logprobs`, and `top_logprobs` as
/// maps of a token's text to its log-probability; vLLM and SGLang on
/// `/v1/completions`). Neither names tokens by id (llama-server aside), and
/// a missing `bytes` is the text's UTF-8. The most likely come first,
/// whatever order the server listed them in (vLLM puts the chosen token
/// first).
fn chunk_logprobs(logprobs: &Json) -> Result<Vec<TokenLogprob>, String> {
    let bad = |what: &str| format!("log-probabilities with {what}");
    let by_likelihood = |mut top: Vec<TopLogprob>| {
        top.sort_by(|a, b| b.logprob.total_cmp(&a.logprob));
        top
    };
    if let Some(content) = logprobs.get("content") {
        let Some(items) = content.as_array() else {
            return Ok(Vec::new());
        };
        let one = |item: &Json| -> Result<(Option<i32>, Vec<u8>, f64), String> {
            let text = item
                .get("token")
                .and_then(Json::as_str)
                .ok_or_else(|| bad("a token that is not a string"))?;
            let bytes = match item.get("bytes").filter(|b| !b.is_null()) {
                Some(list) => {
                    byte_list(list).ok_or_else(|| bad("bytes that are not a list of bytes"))?
                }
                None => text.as_bytes().to_vec(),
            };
            let logprob = item
                .get("logprob")
                .and_then(Json::as_f64)
                .ok_or_else(|| bad("a token without a numeric logprob"))?;
            let id = item
                .get("id")
                .and_then(Json::as_i64)
                .and_then(|id| i32::try_from(id).ok());
            Ok((id, bytes, logprob))
        };
        return items
            .iter()
            .map(|item| {
                let (id, bytes, logprob) = one(item)?;
                let top = match item.get("top_logprobs").and_then(Json::as_array) {
                    Some(alts) => alts
                        .iter()
                        .map(|alt| {
                            one(alt).map(|(id, bytes, logprob)| TopLogprob { id, bytes, logprob })
                        })
                        .collect::<Result<Vec<_>, String>>()?,
                    None => Vec::new(),
                };
                Ok(served_token(id, bytes, logprob, by_likelihood(top)))
            })
            .collect();
    }
    let tokens = logprobs
        .get("tokens")
        .and_then(Json::as_array)
        .ok_or_else(|| bad("neither \"content\" nor \"tokens\""))?;
    let values = logprobs
        .get("token_logprobs")
        .and_then(Json::as_array)
        .filter(|v| v.len() == tokens.len())
        .ok_or_else(|| bad("token_logprobs that do not match its tokens"))?;
    let tops = logprobs.get("top_logprobs").and_then(Json::as_array);
    tokens
        .iter()
        .zip(values)
        .enumerate()
        .map(|(i, (token, value))| {
            let text = token
                .as_str()
                .ok_or_else(|| bad("a token that is not a string"))?;
            let logprob = value
                .as_f64()
                .ok_or_else(|| bad("a token without a numeric logprob"))?;
            let top = match tops.and_then(|t| t.get(i)).and_then(Json::as_object) {
                Some(map) => map
                    .iter()
                    .map(|(text, logprob)| {
                        Ok(TopLogprob {
                            id: None,
                            bytes: text.as_bytes().to_vec(),
                            logprob: logprob
                                .as_f64()
                                .ok_or_else(|| bad("a top token without a numeric logprob"))?,
                        })
                    })
                    .collect::<Result<Vec<_>, String>>()?,
                None => Vec::new(),
            };
            Ok(served_token(
                None,
                text.as_bytes().to_vec(),
                logprob,
                by_likelihood(top),
            ))
        })
        .collect()
}

/// Why an ending is not a finish reason.
#[derive(Debug, Clone, PartialEq)]
pub enum EndError {
    /// The engine gave up on the request.
    Aborted(String),
    Unknown(String),
}

/// Our finish reason for an engine's ending: `"stop"` is a stop string
/// when one matched, else the end of generation (a matched stop token id
/// is the end-of-generation token).
pub fn finish_reason(ending: &Ending) -> Result<FinishReason, EndError> {
    match ending.reason.as_str() {
        "stop" | "eos" => Ok(if ending.matched.is_string() {
            FinishReason::Stop
        } else {
            FinishReason::Eos
        }),
        "length" => Ok(FinishReason::Length),
        "abort" | "error" => Err(EndError::Aborted(format!(
            "the server ended the request with finish_reason \"{}\"",
            ending.reason
        ))),
        other => Err(EndError::Unknown(format!("a finish_reason of \"{other}\""))),
    }
}
