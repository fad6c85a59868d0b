//! llama-server's wire format: `/props`, `/tokenize`, `/completion`
//! (prompt as token ids, streamed) and `/embeddings`.

use serde_json::{json, Map, Value as Json};

use crate::backend::generation::{TokenLogprob, TopLogprob};
use crate::backend::params::{Constraint, GenerateParams};
use crate::backend::sampling::{BiasTarget, Mirostat};
use crate::backend::FinishReason;

/// What `/props` says.
#[derive(Debug)]
pub struct Props {
    pub slot_ctx: u32,
    pub template: Option<String>,
    pub bos: String,
    pub eos: String,
    /// Whether it was started with an image projector (`--mmproj`).
    pub vision: bool,
    /// What stands for an image in its multimodal prompts: a marker drawn
    /// at random when it starts (`None`: a server that does not say, which
    /// reads llama.cpp's default `<__media__>`).
    pub media_marker: Option<String>,
}

impl Props {
    pub fn read(props: &Json) -> Result<Self, String> {
        let slot_ctx = props
            .pointer("/default_generation_settings/n_ctx")
            .and_then(Json::as_u64)
            .and_then(|n| u32::try_from(n).ok())
            .ok_or("/props has no default_generation_settings.n_ctx")?;
        let text = |key: &str| {
            props
                .get(key)
                .and_then(Json::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let template = Some(text("chat_template")).filter(|t| !t.is_empty());
        Ok(Self {
            slot_ctx,
            template,
            bos: text("bos_token"),
            eos: text("eos_token"),
            vision: props
                .pointer("/modalities/vision")
                .and_then(Json::as_bool)
                .unwrap_or(false),
            media_marker: Some(text("media_marker")).filter(|m| !m.is_empty()),
        })
    }
}

/// A LoRA adapter llama-server was started with (`--lora`), as
/// `GET /lora-adapters` lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerAdapter {
    pub id: i64,
    /// Its file's name without `.gguf`: what calls choose it by.
    pub name: String,
    pub path: String,
    /// The scale the server applies when a request does not say.
    pub scale: f64,
}

/// The adapters of a `GET /lora-adapters` answer (none when it is not a
/// list: a server without adapters, or older than the route).
pub fn adapters(answer: &Json) -> Vec<ServerAdapter> {
    let Some(list) = answer.as_array() else {
        return Vec::new();
    };
    list.iter()
        .filter_map(|a| {
            let path = a.get("path")?.as_str()?.to_owned();
            Some(ServerAdapter {
                id: a.get("id")?.as_i64()?,
                name: crate::backend::params::lora_default_name(std::path::Path::new(&path)),
                path,
                scale: a.get("scale").and_then(Json::as_f64).unwrap_or(0.0),
            })
        })
        .collect()
}

/// llama-server's per-request `lora` for a call's `choice` (name =>
/// scale): every adapter the server has, those not chosen at 0 (the
/// server reads an adapter left out, or an empty list, as "its own
/// scale"). `Err`: the detail of an unknown name.
pub fn lora_field(adapters: &[ServerAdapter], choice: &[(String, f32)]) -> Result<Json, String> {
    for (name, _) in choice {
        if !adapters.iter().any(|a| &a.name == name) {
            if adapters.is_empty() {
                return Err(format!(
                    "names the adapter '{name}', but the server was started with none (llama-server --lora FILE)"
                ));
            }
            let names: Vec<String> = adapters.iter().map(|a| format!("'{}'", a.name)).collect();
            return Err(format!(
                "names the adapter '{name}', which the server was not started with (its adapters: {})",
                names.join(", ")
            ));
        }
    }
    Ok(Json::Array(
        adapters
            .iter()
            .map(|a| {
                let scale = choice
                    .iter()
                    .find(|(name, _)| name == &a.name)
                    .map_or(0.0, |(_, s)| *s);
                json!({"id": a.id, "scale": scale})
            })
            .collect(),
    ))
}

/// A `/tokenize` answer, read straight into its list of ids.
#[derive(Debug, serde::Deserialize)]
pub struct Tokenized {
    tokens: Vec<i64>,
}

/// The tokens of a `/tokenize` answer for a text of `text_bytes` bytes:
/// no more than such a text can make, each a token id (≥ 0).
pub fn tokens(answer: Tokenized, text_bytes: usize) -> Result<Vec<i64>, String> {
    let most = crate::remote::limits::most_tokens(text_bytes);
    if answer.tokens.len() > most {
        return Err(format!(
            "a /tokenize answer of {} tokens for a text of {text_bytes} bytes (at most {most})",
            answer.tokens.len()
        ));
    }
    if let Some(id) = answer.tokens.iter().find(|id| **id < 0) {
        return Err(format!(
            "a /tokenize answer with token id {id}, which is negative"
        ));
    }
    Ok(answer.tokens)
}

/// The body of a streamed `/completion` of `prompt` (token ids), generating
/// at most `n_predict` tokens, with every sampler setting of `params` under
/// llama-server's own name: the server runs the chain the engine runs in
/// process (llama.cpp's common sampler), so the same values mean the same.
pub fn completion_request(prompt: &[i64], params: &GenerateParams, n_predict: u32) -> Json {
    let mut body = Map::new();
    body.insert("prompt".into(), json!(prompt));
    body.insert("n_predict".into(), json!(n_predict));
    body.insert("stream".into(), json!(true));
    body.insert("temperature".into(), json!(params.temperature));
    body.insert("seed".into(), json!(params.seed));
    sampler_fields(&mut body, params);
    body.insert("stop".into(), json!(params.stop));
    body.insert("cache_prompt".into(), json!(params.cache_prompt));
    if let Some(Constraint::Grammar(gbnf)) = &params.constraint {
        body.insert("grammar".into(), json!(gbnf.as_str()));
    }
    Json::Object(body)
}

/// llama-server's sampling fields, from `params.sampling`.
fn sampler_fields(body: &mut Map<String, Json>, params: &GenerateParams) {
    let s = &params.sampling;
    let (mirostat, tau, eta) = match s.mirostat {
        Mirostat::Off => (
            0,
            crate::backend::sampling::DEFAULT_MIROSTAT_TAU,
            crate::backend::sampling::DEFAULT_MIROSTAT_ETA,
        ),
        Mirostat::V1 { tau, eta } => (1, tau, eta),
        Mirostat::V2 { tau, eta } => (2, tau, eta),
    };
    for (name, value) in [
        ("top_k", json!(s.top_k)),
        ("top_p", json!(s.top_p)),
        ("min_p", json!(s.min_p)),
        ("typical_p", json!(s.typical_p)),
        ("min_keep", json!(s.min_keep)),
        ("top_n_sigma", json!(s.top_n_sigma)),
        ("xtc_probability", json!(s.xtc_probability)),
        ("xtc_threshold", json!(s.xtc_threshold)),
        ("dynatemp_range", json!(s.dynatemp_range)),
        ("dynatemp_exponent", json!(s.dynatemp_exponent)),
        ("repeat_penalty", json!(s.repeat_penalty)),
        ("repeat_last_n", json!(s.repeat_last_n)),
        ("presence_penalty", json!(s.presence_penalty)),
        ("frequency_penalty", json!(s.frequency_penalty)),
        ("dry_multiplier", json!(s.dry.multiplier)),
        ("dry_base", json!(s.dry.base)),
        ("dry_allowed_length", json!(s.dry.allowed_length)),
        ("dry_penalty_last_n", json!(s.dry.penalty_last_n)),
        ("dry_sequence_breakers", json!(s.dry.sequence_breakers)),
        ("mirostat", json!(mirostat)),
        ("mirostat_tau", json!(tau)),
        ("mirostat_eta", json!(eta)),
    ] {
        body.insert(name.into(), value);
    }
    // `[[id or text, bias or false], …]`; false (a ban) is how JSON says
    // -inf to llama-server.
    let biases: Vec<Json> = s
        .logit_bias
        .iter()
        .map(|b| {
            let bias = if b.bias == f32::NEG_INFINITY {
                json!(false)
            } else {
                json!(b.bias)
            };
            match &b.target {
                BiasTarget::Token(id) => json!([id, bias]),
                BiasTarget::Text(text) => json!([text, bias]),
            }
        })
        .collect();
    body.insert("logit_bias".into(), Json::Array(biases));
    body.insert("ignore_eos".into(), json!(s.ignore_eos));
    if let Some(stages) = &s.samplers {
        let names: Vec<&str> = stages.iter().map(|stage| stage.name()).collect();
        body.insert("samplers".into(), json!(names));
    }
    body.insert("adaptive_target".into(), json!(s.adaptive_target));
    body.insert("adaptive_decay".into(), json!(s.adaptive_decay));
    let probs = params.logprobs.map_or(0, |l| l.top.max(1));
    body.insert("n_probs".into(), json!(probs));
    body.insert(
        "post_sampling_probs".into(),
        json!(params.logprobs.is_some_and(|l| l.after_sampling)),
    );
}

/// One event of a streamed completion: its text, and the probabilities of
/// its tokens when they were asked for (`n_probs`).
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    Text(String, Vec<TokenLogprob>),
    Final(Final),
}

/// The last event: the rest of the text, and the figures.
#[derive(Debug, Clone, PartialEq)]
pub struct Final {
    pub text: String,
    pub logprobs: Vec<TokenLogprob>,
    pub finish: FinishReason,
    pub tokens_generated: u32,
    pub prompt_tokens: u32,
    pub reused_tokens: u32,
}

/// Read one `data:` payload of a streamed completion.
pub fn event(data: &str) -> Result<Event, String> {
    let json: Json =
        serde_json::from_str(data).map_err(|e| format!("an event that is not JSON ({e})"))?;
    let content = json
        .get("content")
        .and_then(Json::as_str)
        .ok_or("an event without \"content\"")?
        .to_owned();
    let logprobs = probabilities(&json)?;
    if json.get("stop").and_then(Json::as_bool) != Some(true) {
        return Ok(Event::Text(content, logprobs));
    }
    let number = |key: &str| {
        json.get(key)
            .and_then(Json::as_u64)
            .and_then(|n| u32::try_from(n).ok())
    };
    let stop_type = json
        .get("stop_type")
        .and_then(Json::as_str)
        .ok_or("a final event without \"stop_type\"")?;
    let finish = match stop_type {
        "eos" => FinishReason::Eos,
        "word" => FinishReason::Stop,
        "limit" => FinishReason::Length,
        other => return Err(format!("a final event with stop_type \"{other}\"")),
    };
    let predicted = number("tokens_predicted").ok_or("a final event without tokens_predicted")?;
    // llama-server counts the end-of-generation token it sampled; the
    // local engine does not.
    let tokens_generated = if finish == FinishReason::Eos {
        predicted.saturating_sub(1)
    } else {
        predicted
    };
    Ok(Event::Final(Final {
        text: content,
        logprobs,
        finish,
        tokens_generated,
        prompt_tokens: number("tokens_evaluated")
            .ok_or("a final event without tokens_evaluated")?,
        reused_tokens: json
            .pointer("/timings/cache_n")
            .and_then(Json::as_u64)
            .and_then(|n| u32::try_from(n).ok())
            .unwrap_or(0),
    }))
}

/// The `completion_probabilities` of an event (none when absent): per
/// token `id`, `bytes` and `logprob` with its `top_logprobs`, or with
/// `post_sampling_probs`, `prob` and `top_probs` (read as logarithms).
/// `text_end` is left at 0: the stream sets it.
fn probabilities(json: &Json) -> Result<Vec<TokenLogprob>, String> {
    let Some(list) = json.get("completion_probabilities") else {
        return Ok(Vec::new());
    };
    let bad = || {
        "completion_probabilities that are not a list of tokens with id, bytes and logprob or prob"
            .to_owned()
    };
    let one = |item: &Json| -> Option<(i32, Vec<u8>, f64)> {
        let id = i32::try_from(item.get("id")?.as_i64()?).ok()?;
        let bytes = byte_list(item.get("bytes")?)?;
        let logprob = match item.get("logprob") {
            Some(l) => l.as_f64()?,
            None => item.get("prob")?.as_f64()?.ln(),
        };
        Some((id, bytes, logprob))
    };
    list.as_array()
        .ok_or_else(bad)?
        .iter()
        .map(|item| {
            let (id, bytes, logprob) = one(item).ok_or_else(bad)?;
            let top = item
                .get("top_logprobs")
                .or_else(|| item.get("top_probs"))
                .and_then(Json::as_array)
                .map(|alts| {
                    alts.iter()
                        .map(|alt| {
                            one(alt).map(|(id, bytes, logprob)| TopLogprob {
                                id: Some(id),
                                bytes,
                                logprob,
                            })
                        })
                        .collect::<Option<Vec<_>>>()
                })
                .unwrap_or(Some(Vec::new()))
                .ok_or_else(bad)?;
            Ok(served_token(Some(id), bytes, logprob, top))
        })
        .collect()
}

/// A token's `bytes` as OpenAI's `logprobs.content` lists them (and
/// llama-server's `completion_probabilities`): numbers from 0 to 255.
pub fn byte_list(list: &Json) -> Option<Vec<u8>> {
    list.as_array()?
        .iter()
        .map(|b| b.as_u64().and_then(|b| u8::try_from(b).ok()))
        .collect()
}

/// A token a server generated, with its log-probability and alternatives:
/// never forced (a server does not say), `text_end` left for the stream.
pub fn served_token(
    id: Option<i32>,
    bytes: Vec<u8>,
    logprob: f64,
    top: Vec<TopLogprob>,
) -> TokenLogprob {
    TokenLogprob {
        id,
        bytes,
        logprob,
        forced: false,
        top,
        text_end: 0,
    }
}

/// The body of an `/embeddings` request: the pooled vectors as the model
/// computes them (not normalised, as the local engine returns them).
pub fn embedding_request(texts: &[String]) -> Json {
    json!({"content": texts, "embd_normalize": -1})
}

/// One item of an embeddings answer (llama-server's list, or OpenAI's
/// `data`), read straight into floats: no JSON tree of the numbers.
#[derive(Debug, serde::Deserialize)]
pub struct EmbeddingItem {
    index: Option<u64>,
    embedding: Option<Vector>,
}

/// An embedding as a server writes it: `[…]`, or llama-server's pooled
/// `[[…]]` (one row), or one row per token (pooling none).
#[derive(Debug, Clone, PartialEq)]
pub enum Vector {
    Flat(Vec<f32>),
    Rows(Vec<Vec<f32>>),
}

impl<'de> serde::Deserialize<'de> for Vector {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        /// The first element tells which shape the list has.
        enum First {
            Number(f32),
            Row(Vec<f32>),
        }
        impl<'de> serde::Deserialize<'de> for First {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct Visit;
                impl<'de> serde::de::Visitor<'de> for Visit {
                    type Value = First;
                    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                        f.write_str("a number or a list of numbers")
                    }
                    fn visit_f64<E>(self, v: f64) -> Result<First, E> {
                        Ok(First::Number(v as f32))
                    }
                    fn visit_i64<E>(self, v: i64) -> Result<First, E> {
                        Ok(First::Number(v as f32))
                    }
                    fn visit_u64<E>(self, v: u64) -> Result<First, E> {
                        Ok(First::Number(v as f32))
                    }
                    fn visit_seq<A: serde::de::SeqAccess<'de>>(
                        self,
                        mut seq: A,
                    ) -> Result<First, A::Error> {
                        let mut row = Vec::new();
                        while let Some(x) = seq.next_element::<f32>()? {
                            row.push(x);
                        }
                        Ok(First::Row(row))
                    }
                }
                d.deserialize_any(Visit)
            }
        }
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Vector;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an embedding: a list of numbers")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Vector, A::Error> {
                match seq.next_element::<First>()? {
                    None => Ok(Vector::Flat(Vec::new())),
                    Some(First::Number(x)) => {
                        let mut flat = vec![x];
                        while let Some(x) = seq.next_element::<f32>()? {
                            flat.push(x);
                        }
                        Ok(Vector::Flat(flat))
                    }
                    Some(First::Row(row)) => {
                        let mut rows = vec![row];
                        while let Some(row) = seq.next_element::<Vec<f32>>()? {
                            rows.push(row);
                        }
                        Ok(Vector::Rows(rows))
                    }
                }
            }
        }
        deserializer.deserialize_seq(Visit)
    }
}

/// The vectors of an embeddings answer's `items`, in the order of the
/// `count` texts (an item without its index is in its place).
pub fn embeddings(items: Vec<EmbeddingItem>, count: usize) -> Result<Vec<Vec<f32>>, String> {
    if items.len() > count {
        return Err(format!("{} embeddings for {count} texts", items.len()));
    }
    let mut vectors: Vec<Option<Vec<f32>>> = vec![None; count];
    for (position, item) in items.into_iter().enumerate() {
        let index = item
            .index
            .map_or(Some(position), |i| usize::try_from(i).ok())
            .filter(|i| *i < count)
            .ok_or("an embedding without a valid index")?;
        // Pooled: [[…]] (one vector); a bare […] is read the same.
        let vector = match item.embedding.ok_or("an item without \"embedding\"")? {
            Vector::Flat(v) => v,
            Vector::Rows(mut rows) if rows.len() == 1 => rows.swap_remove(0),
            Vector::Rows(_) => return Err("one vector per token: the server's pooling is none; start it with --pooling mean (or cls, last)".to_owned()),
        };
        vectors[index] = Some(vector);
    }
    vectors
        .into_iter()
        .enumerate()
        .map(|(i, v)| v.ok_or_else(|| format!("no embedding for text {i}")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grammar::CheckedGbnf;

    #[test]
    fn a_request_carries_the_grammar_and_greedy_sampling() {
        let params = GenerateParams {
            constraint: Some(Constraint::Grammar(
                CheckedGbnf::new("root ::= \"yes\" | \"no\"").unwrap(),
            )),
            stop: vec!["\n".into()],
            ..GenerateParams::default()
        };
        let body = completion_request(&[1, 2, 3], &params, 7);
        assert_eq!(body["prompt"], json!([1, 2, 3]));
        assert_eq!(body["n_predict"], json!(7));
        assert_eq!(body["grammar"], json!("root ::= \"yes\" | \"no\""));
        assert_eq!(body["stop"], json!(["\n"]));
        assert_eq!(body["temperature"], json!(0.0));
        assert_eq!(body["top_k"], json!(40));
        assert_eq!(body["repeat_last_n"], json!(64));
        assert_eq!(body["logit_bias"], json!([]));
        assert_eq!(body["stream"], json!(true));
    }

    #[test]
    fn final_events_map_stop_types_and_figures() {
        let Event::Final(f) = event(
            r#"{"content":"","stop":true,"stop_type":"eos","tokens_predicted":5,"tokens_evaluated":12,"timings":{"cache_n":10}}"#,
        )
        .unwrap() else {
            panic!("not final")
        };
        assert_eq!(
            (
                f.finish,
                f.tokens_generated,
                f.prompt_tokens,
                f.reused_tokens
            ),
            (FinishReason::Eos, 4, 12, 10)
        );
        for (stop_type, finish) in [
            ("word", FinishReason::Stop),
            ("limit", FinishReason::Length),
        ] {
            let text = format!(
                r#"{{"content":"x","stop":true,"stop_type":"{stop_type}","tokens_predicted":3,"tokens_evaluated":1}}"#
            );
            let Event::Final(f) = event(&text).unwrap() else {
                panic!("not final")
            };
            assert_eq!(
                (f.finish, f.tokens_generated, f.text.as_str()),
                (finish, 3, "x")
            );
        }
        assert_eq!(
            event(r#"{"content":"ab","stop":false}"#).unwrap(),
            Event::Text("ab".into(), Vec::new())
        );
        assert!(event("{\"stop\":true}").is_err());
        assert!(event("not json").is_err());
        assert!(event(r#"{"content":"","stop":true,"stop_type":"none","tokens_predicted":0,"tokens_evaluated":1}"#).is_err());
    }

    fn items(answer: Json) -> Vec<EmbeddingItem> {
        serde_json::from_value(answer).unwrap()
    }

    #[test]
    fn embeddings_are_put_in_order_and_per_token_vectors_refused() {
        let answer = json!([
            {"index": 1, "embedding": [[0.5, 1]]},
            {"index": 0, "embedding": [2.0, 3.0]},
        ]);
        assert_eq!(
            embeddings(items(answer), 2).unwrap(),
            vec![vec![2.0, 3.0], vec![0.5, 1.0]]
        );
        assert!(
            embeddings(items(json!([{"index": 0, "embedding": [[1.0], [2.0]]}])), 1)
                .unwrap_err()
                .contains("pooling")
        );
        assert!(embeddings(items(json!([{"index": 0, "embedding": [[1.0]]}])), 2).is_err());
        assert_eq!(
            embeddings(items(json!([{"embedding": [1]}, {"embedding": [2]}])), 1).unwrap_err(),
            "2 embeddings for 1 texts"
        );
        assert!(serde_json::from_str::<Vec<EmbeddingItem>>(r#"[{"embedding": ["x"]}]"#).is_err());
    }

    #[test]
    fn a_token_list_must_fit_its_text() {
        let answer = |ids: Vec<i64>| Tokenized { tokens: ids };
        assert_eq!(tokens(answer(vec![1, 2]), 2).unwrap(), vec![1, 2]);
        assert_eq!(
            tokens(answer(vec![1; 11]), 2).unwrap_err(),
            "a /tokenize answer of 11 tokens for a text of 2 bytes (at most 10)"
        );
        assert_eq!(
            tokens(answer(vec![3, -2]), 2).unwrap_err(),
            "a /tokenize answer with token id -2, which is negative"
        );
    }
}
