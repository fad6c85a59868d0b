//! vLLM and SGLang, which cannot run here, through recorded answers
//! (tests/fixtures/remote, written after each engine's server source and
//! documentation) served from a loopback socket: what `Remote` sends (the
//! grammar in the field each engine reads, in the plain form xgrammar
//! reads, the sampling fields), and how it reads their streams, finish
//! reasons, usage figures and errors.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value as Json};

use super::*;
use crate::backend::params::{Constraint, StopCheck};
use crate::backend::{Backend, FinishReason};
use crate::chat::Role;
use crate::grammar::CheckedGbnf;

macro_rules! fixture {
    ($name:literal) => {
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/remote/",
            $name
        ))
    };
}

/// One canned answer: status, content type, body.
/// One HTTP request read from `stream`: its head (request line and
/// headers) and its body (of the length its Content-Length says).
pub(super) fn read_request(stream: &std::net::TcpStream) -> (String, Vec<u8>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut head = String::new();
    let mut length = 0;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().unwrap_or(0);
        }
        head.push_str(&line);
    }
    let mut body = vec![0; length];
    let _ = reader.read_exact(&mut body);
    (head, body)
}

type Answer = (u16, &'static str, &'static str);

/// A server answering each path with its canned answer (404 otherwise),
/// recording every request's method, path and body.
struct Canned {
    url: String,
    requests: Arc<Mutex<Vec<(String, String, String)>>>,
}

impl Canned {
    fn start(routes: Vec<(&'static str, Answer)>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&requests);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let (head, body) = read_request(&stream);
                let mut words = head.split_whitespace();
                let method = words.next().unwrap_or_default().to_owned();
                let path = words.next().unwrap_or_default().to_owned();
                let answer = routes
                    .iter()
                    .find(|(p, _)| *p == path)
                    .map(|(_, a)| *a)
                    .unwrap_or((404, "application/json", r#"{"detail":"Not Found"}"#));
                seen.lock().unwrap().push((
                    method,
                    path,
                    String::from_utf8_lossy(&body).into_owned(),
                ));
                let (status, kind, text) = answer;
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status} X\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
                    text.len()
                );
            }
        });
        Self { url, requests }
    }

    /// The JSON body of the last request to `path`.
    fn body(&self, path: &str) -> Json {
        let requests = self.requests.lock().unwrap();
        let (_, _, body) = requests
            .iter()
            .rev()
            .find(|(_, p, _)| p == path)
            .unwrap_or_else(|| panic!("no request to {path}"));
        serde_json::from_str(body).unwrap()
    }

    fn paths(&self) -> Vec<String> {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .map(|(m, p, _)| format!("{m} {p}"))
            .collect()
    }
}

const JSON: &str = "application/json";
const EVENTS: &str = "text/event-stream";

fn vllm(chat: &'static str) -> Canned {
    Canned::start(vec![
        ("/v1/models", (200, JSON, fixture!("vllm-models.json"))),
        ("/v1/chat/completions", (200, EVENTS, chat)),
        (
            "/v1/completions",
            (200, EVENTS, fixture!("vllm-completion-stream.txt")),
        ),
        ("/tokenize", (200, JSON, fixture!("vllm-tokenize.json"))),
        (
            "/v1/embeddings",
            (200, JSON, fixture!("vllm-embeddings.json")),
        ),
    ])
}

fn sglang(chat: &'static str) -> Canned {
    Canned::start(vec![
        ("/v1/models", (200, JSON, fixture!("sglang-models.json"))),
        ("/v1/chat/completions", (200, EVENTS, chat)),
    ])
}

fn person() -> GenerateParams {
    let schema = json!({"type": "object", "properties": {"name": {"type": "string"}}});
    GenerateParams {
        constraint: Some(Constraint::Grammar(
            crate::schema::compile(&schema).unwrap().gbnf,
        )),
        ..GenerateParams::default()
    }
}

fn messages() -> Vec<Message> {
    vec![
        Message::new(Role::System, "Extract the data."),
        Message::new(Role::User, "Maria is 31."),
    ]
}

#[test]
fn vllm_is_detected_and_gets_the_grammar_in_structured_outputs() {
    let server = vllm(fixture!("vllm-chat-stream.txt"));
    let remote = Remote::connect(ConnectParams::new(&server.url)).unwrap();
    assert_eq!(remote.engine(), EngineKind::Vllm);
    assert_eq!(remote.model_name(), "Qwen/Qwen2.5-7B-Instruct");
    assert_eq!(remote.context_length(), 32768);
    assert_eq!(remote.chat_template(), None);
    let params = person();
    let generation = remote.chat(&messages(), &params).unwrap();
    assert_eq!(generation.text, r#"{"name": "Maria"}"#);
    assert_eq!(generation.finish, FinishReason::Eos);
    assert_eq!(
        (generation.tokens_generated, generation.prompt_tokens),
        (7, 31)
    );

    let body = server.body("/v1/chat/completions");
    let Some(Constraint::Grammar(gbnf)) = &params.constraint else {
        unreachable!()
    };
    let plain = crate::grammar::check::plain_bnf(gbnf.as_str()).unwrap();
    assert_eq!(body["structured_outputs"], json!({"grammar": plain}));
    assert!(body.get("guided_grammar").is_none() && body.get("ebnf").is_none());
    assert_eq!(body["model"], json!("Qwen/Qwen2.5-7B-Instruct"));
    assert_eq!(
        body["messages"],
        json!([{"role": "system", "content": "Extract the data."}, {"role": "user", "content": "Maria is 31."}])
    );
    assert_eq!(body["stream"], json!(true));
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(
        (body["max_tokens"].clone(), body["temperature"].clone()),
        (json!(128), json!(0.0))
    );
    // Greedy: the filters play no part, so none is sent.
    assert!(body.get("top_k").is_none() && body.get("top_p").is_none());
    assert_eq!(
        server.paths()[..3],
        ["GET /props", "GET /v1/models", "GET /v1/models"].map(String::from)
    );
}

#[test]
fn images_go_to_an_openai_server_as_png_data_urls_in_their_places() {
    use crate::chat::image::Image;
    use crate::chat::Part;
    use base64::Engine;
    let server = vllm(fixture!("vllm-chat-stream.txt"));
    let remote = Remote::connect(ConnectParams::new(&server.url)).unwrap();
    let rgb: Vec<u8> = (0..4 * 3 * 3).map(|i| (i * 11) as u8).collect();
    let image = Image::from_rgb(4, 3, rgb.clone(), crate::chat::image::Bounds::DEFAULT).unwrap();
    let message = Message::from_parts(
        Role::User,
        vec![
            Part::Text("What is this? ".into()),
            Part::Image(image),
            Part::Text(" Be brief.".into()),
        ],
    );
    remote.chat(&[message], &GenerateParams::default()).unwrap();
    let body = server.body("/v1/chat/completions");
    let content = &body["messages"][0]["content"];
    assert_eq!(
        content[0],
        json!({"type": "text", "text": "What is this? "})
    );
    assert_eq!(content[2], json!({"type": "text", "text": " Be brief."}));
    assert_eq!(content[1]["type"], json!("image_url"));
    let url = content[1]["image_url"]["url"].as_str().unwrap();
    let png = base64::engine::general_purpose::STANDARD
        .decode(url.strip_prefix("data:image/png;base64,").unwrap())
        .unwrap();
    // What the server gets decodes to the pixels given (read by the image
    // crate's decoder, not by this crate).
    let decoded = ::image::load_from_memory_with_format(&png, ::image::ImageFormat::Png)
        .unwrap()
        .into_rgb8();
    assert_eq!((decoded.width(), decoded.height()), (4, 3));
    assert_eq!(decoded.into_raw(), rgb);
}

#[test]
fn sglang_gets_ebnf_and_its_matched_stop_is_read() {
    let server = sglang(fixture!("sglang-chat-stream.txt"));
    let remote = Remote::connect(ConnectParams::new(&server.url)).unwrap();
    assert_eq!(remote.engine(), EngineKind::Sglang);
    assert_eq!(remote.context_length(), 131072);
    let params = GenerateParams {
        stop: vec![" four".into()],
        temperature: 0.7,
        sampling: crate::backend::sampling::Sampling {
            top_k: 0,
            ..Default::default()
        },
        constraint: Some(Constraint::Grammar(
            CheckedGbnf::new("root ::= [a-z ,]+").unwrap(),
        )),
        ..GenerateParams::default()
    };
    let generation = remote.chat(&messages(), &params).unwrap();
    assert_eq!(generation.text, "one, two, three,");
    assert_eq!(generation.finish, FinishReason::Stop);
    assert_eq!(
        (generation.tokens_generated, generation.prompt_tokens),
        (5, 42)
    );
    let body = server.body("/v1/chat/completions");
    let plain = crate::grammar::check::plain_bnf("root ::= [a-z ,]+").unwrap();
    assert_eq!(body["ebnf"], json!(plain));
    assert!(body.get("structured_outputs").is_none());
    assert_eq!(body["stop"], json!([" four"]));
    // SGLang refuses top_k 0; -1 is its "off".
    assert_eq!(body["top_k"], json!(-1));

    let eos = sglang(fixture!("sglang-chat-eos-stream.txt"));
    let remote = Remote::connect(ConnectParams::new(&eos.url)).unwrap();
    let generation = remote
        .chat(&messages(), &GenerateParams::default())
        .unwrap();
    // matched_stop holds the EOS token's id: the end of generation.
    assert_eq!(
        (generation.text.as_str(), generation.finish),
        ("yes", FinishReason::Eos)
    );
}

#[test]
fn completions_tokens_and_embeddings_of_vllm() {
    let server = vllm(fixture!("vllm-chat-stream.txt"));
    let remote = Remote::connect(ConnectParams::new(&server.url)).unwrap();
    let generation = remote
        .raw(
            "Once",
            false,
            &GenerateParams {
                max_tokens: 2,
                ..GenerateParams::default()
            },
        )
        .unwrap();
    assert_eq!(
        (generation.text.as_str(), generation.finish),
        (" upon a", FinishReason::Length)
    );
    let body = server.body("/v1/completions");
    assert_eq!(
        (body["prompt"].clone(), body["add_special_tokens"].clone()),
        (json!("Once"), json!(false))
    );
    assert_eq!(remote.count_tokens("Hello world!", true).unwrap(), 3);
    assert_eq!(
        server.body("/tokenize"),
        json!({"model": "Qwen/Qwen2.5-7B-Instruct", "prompt": "Hello world!", "add_special_tokens": false})
    );
    assert!(matches!(
        remote.count_tokens("x", false),
        Err(InferenceError::Remote(RemoteError::Unsupported { .. }))
    ));
    let vectors = remote
        .embed_many(&["a".into(), "b".into()], StopCheck::default())
        .unwrap();
    assert_eq!(vectors, vec![vec![1.0, 0.0], vec![0.25, -0.5]]);
}

#[test]
fn what_an_engine_cannot_do_is_refused_before_any_request() {
    let server = sglang(fixture!("sglang-chat-stream.txt"));
    let remote = Remote::connect(ConnectParams::new(&server.url)).unwrap();
    let before = server.paths().len();
    assert!(matches!(
        remote.start_raw("x", false, GenerateParams::default()),
        Err(InferenceError::Remote(RemoteError::Unsupported { .. }))
    ));
    let tokens = GenerateParams {
        constraint: Some(Constraint::Grammar(
            CheckedGbnf::new("root ::= <[12]>").unwrap(),
        )),
        ..GenerateParams::default()
    };
    let Err(InferenceError::Remote(RemoteError::Dialect { engine, detail })) =
        remote.chat(&messages(), &tokens)
    else {
        panic!("a token item was sent")
    };
    assert_eq!(engine, "sglang");
    assert!(detail.contains("token items"), "{detail}");
    assert!(matches!(
        remote.chat(
            &messages(),
            &GenerateParams {
                n_ctx: 200_000,
                ..GenerateParams::default()
            }
        ),
        Err(InferenceError::Remote(RemoteError::ContextTooLarge {
            n_ctx: 200_000,
            server: 131072
        }))
    ));
    assert!(matches!(
        remote.render_prompt(&messages(), &GenerateParams::default()),
        Err(InferenceError::Remote(RemoteError::Unsupported { .. }))
    ));
    assert_eq!(server.paths().len(), before);
}

#[test]
fn error_bodies_of_both_engines_give_their_message() {
    for (models, error, message) in [
        (
            fixture!("vllm-models.json"),
            fixture!("vllm-error.json"),
            "maximum context length is 32768",
        ),
        (
            fixture!("sglang-models.json"),
            fixture!("sglang-error.json"),
            "Only one of regex, json_schema, or ebnf",
        ),
    ] {
        let server = Canned::start(vec![
            ("/v1/models", (200, JSON, models)),
            ("/v1/chat/completions", (400, JSON, error)),
        ]);
        let remote = Remote::connect(ConnectParams::new(&server.url)).unwrap();
        let Err(InferenceError::Remote(RemoteError::Status {
            status,
            message: got,
            ..
        })) = remote.chat(&messages(), &GenerateParams::default())
        else {
            panic!("no status error")
        };
        assert_eq!(status, 400);
        assert!(got.contains(message), "{got}");
    }
}

#[test]
fn a_stream_without_its_ending_is_truncated() {
    let server = vllm("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"},\"finish_reason\":null}]}\n\n");
    let remote = Remote::connect(ConnectParams::new(&server.url)).unwrap();
    assert!(matches!(
        remote.chat(&messages(), &GenerateParams::default()),
        Err(InferenceError::Remote(RemoteError::Truncated { .. }))
    ));
    let done_early = vllm("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"},\"finish_reason\":null}]}\n\ndata: [DONE]\n\n");
    let remote = Remote::connect(ConnectParams::new(&done_early.url)).unwrap();
    assert!(matches!(
        remote.chat(&messages(), &GenerateParams::default()),
        Err(InferenceError::Remote(RemoteError::Truncated { .. }))
    ));
}

#[test]
fn errors_reported_mid_stream_and_aborted_requests_are_errors() {
    // The message of the error a vLLM stream of `body` ends in.
    let in_stream = |body: &'static str| {
        let server = vllm(body);
        let remote = Remote::connect(ConnectParams::new(&server.url)).unwrap();
        let Err(InferenceError::Remote(RemoteError::InStream { message, .. })) =
            remote.chat(&messages(), &GenerateParams::default())
        else {
            panic!("no error")
        };
        message
    };
    let message = in_stream("data: {\"error\":{\"message\":\"CUDA out of memory\",\"type\":\"InternalServerError\",\"code\":500}}\n\ndata: [DONE]\n\n");
    assert_eq!(message, "CUDA out of memory");
    let message = in_stream("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"},\"finish_reason\":\"abort\",\"stop_reason\":null}]}\n\ndata: [DONE]\n\n");
    assert!(message.contains("finish_reason \"abort\""), "{message}");
    // llama-server writes its errors as `error:` events.
    let llama = Canned::start(vec![
        ("/v1/models", (200, JSON, r#"{"data":[{"id":"m.gguf","owned_by":"llamacpp","meta":{"n_ctx_train":2048}}]}"#)),
        ("/props", (200, JSON, r#"{"default_generation_settings":{"n_ctx":2048},"chat_template":"{{ messages[0]['content'] }}","bos_token":"","eos_token":""}"#)),
        ("/tokenize", (200, JSON, r#"{"tokens":[5,6]}"#)),
        ("/completion", (200, EVENTS, "data: {\"content\":\"x\",\"stop\":false}\n\nerror: {\"code\":500,\"message\":\"failed to decode the batch\",\"type\":\"server_error\"}\n\n")),
    ]);
    let remote = Remote::connect(ConnectParams::new(&llama.url)).unwrap();
    assert_eq!(remote.engine(), EngineKind::LlamaServer);
    let Err(InferenceError::Remote(RemoteError::InStream { message, .. })) =
        remote.raw("hi", true, &GenerateParams::default())
    else {
        panic!("no error")
    };
    assert_eq!(message, "failed to decode the batch");
}

#[test]
fn the_model_is_chosen_by_name_or_must_be_the_only_one() {
    let two = r#"{"object":"list","data":[{"id":"a","owned_by":"vllm","max_model_len":4096},{"id":"b","owned_by":"vllm","max_model_len":8192}]}"#;
    let server = Canned::start(vec![("/v1/models", (200, JSON, two))]);
    let Err(RemoteError::WhichModel { available, .. }) =
        Remote::connect(ConnectParams::new(&server.url))
    else {
        panic!("a model was chosen")
    };
    assert_eq!(available, "\"a\", \"b\"");
    let chosen = Remote::connect(ConnectParams {
        model: Some("b".into()),
        ..ConnectParams::new(&server.url)
    })
    .unwrap();
    assert_eq!(chosen.context_length(), 8192);
    let none = Canned::start(vec![(
        "/v1/models",
        (200, JSON, r#"{"object":"list","data":[]}"#),
    )]);
    assert!(matches!(
        Remote::connect(ConnectParams {
            engine: Some(EngineKind::Vllm),
            ..ConnectParams::new(&none.url)
        }),
        Err(RemoteError::NoModel { .. })
    ));
}

/// vLLM and SGLang get the samplers their OpenAI API has, under its names
/// (a ban as -100, the bias of a token id); the llama-server-only options,
/// a text bias, post-sampling probabilities and `cache_prompt` are refused
/// before any request, by name.
#[test]
fn openai_servers_get_their_samplers_and_refuse_the_rest_by_name() {
    use crate::backend::sampling::{BiasTarget, LogitBias, Sampling};
    let server = vllm(fixture!("vllm-chat-stream.txt"));
    let remote = Remote::connect(ConnectParams::new(&server.url)).unwrap();
    let params = GenerateParams {
        sampling: Sampling {
            presence_penalty: 0.5,
            frequency_penalty: -0.25,
            logit_bias: vec![
                LogitBias {
                    target: BiasTarget::Token(42),
                    bias: 3.0,
                },
                LogitBias {
                    target: BiasTarget::Token(7),
                    bias: f32::NEG_INFINITY,
                },
            ],
            ..Sampling::default()
        },
        ..person()
    };
    remote.chat(&messages(), &params).unwrap();
    let body = server.body("/v1/chat/completions");
    assert_eq!(body["presence_penalty"], json!(0.5));
    assert_eq!(body["frequency_penalty"], json!(-0.25));
    assert_eq!(body["logit_bias"], json!({"42": 3.0, "7": -100.0}));
    for key in [
        "typical_p",
        "min_keep",
        "top_n_sigma",
        "xtc_probability",
        "xtc_threshold",
        "dynatemp_range",
        "repeat_last_n",
        "dry_multiplier",
        "dry_sequence_breakers",
        "mirostat",
        "mirostat_tau",
        "post_sampling_probs",
        "cache_prompt",
        "lora",
        "ignore_eos",
        "samplers",
        "adaptive_target",
    ] {
        let why = remote.refuses_option(key, false).unwrap_or_default();
        assert!(why.contains("vLLM or SGLang"), "{key}: {why}");
    }
    for key in [
        "top_k",
        "logprobs",
        "top_logprobs",
        "presence_penalty",
        "frequency_penalty",
        "logit_bias",
        "repeat_penalty",
        "seed",
    ] {
        assert_eq!(remote.refuses_option(key, false), None, "{key}");
    }
    let before = server.paths().len();
    let text = GenerateParams {
        sampling: Sampling {
            logit_bias: vec![LogitBias {
                target: BiasTarget::Text(" no".into()),
                bias: 1.0,
            }],
            ..Sampling::default()
        },
        ..person()
    };
    let Err(InferenceError::InvalidOption { key, detail }) = remote.chat(&messages(), &text) else {
        panic!("a text bias was sent")
    };
    assert_eq!(key, "logit_bias");
    assert!(detail.contains("token ids only"), "{detail}");
    assert_eq!(server.paths().len(), before);
}

#[test]
fn a_calls_lora_choice_lists_every_server_adapter() {
    let answer = json!([
        {"id": 0, "path": "/models/support.gguf", "scale": 1.0},
        {"id": 1, "path": "/models/legal-v2.gguf", "scale": 0.5, "task_name": "x"},
        {"id": "bad", "path": "/models/skipped.gguf"},
    ]);
    let adapters = llama_server::adapters(&answer);
    let names: Vec<&str> = adapters.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["support", "legal-v2"]);
    assert_eq!(
        llama_server::adapters(&json!({"error": "no route"})),
        vec![]
    );
    // Those not chosen go at 0: llama-server reads one left out as its own scale.
    let field = llama_server::lora_field(&adapters, &[("legal-v2".into(), 0.25)]);
    assert_eq!(
        field,
        Ok(json!([{"id": 0, "scale": 0.0}, {"id": 1, "scale": 0.25}]))
    );
    // [] is "none": every adapter at 0, not the empty list (the server's own scales).
    assert_eq!(
        llama_server::lora_field(&adapters, &[]),
        Ok(json!([{"id": 0, "scale": 0.0}, {"id": 1, "scale": 0.0}]))
    );
    let unknown = llama_server::lora_field(&adapters, &[("other".into(), 1.0)]);
    assert_eq!(
        unknown,
        Err("names the adapter 'other', which the server was not started with (its adapters: 'support', 'legal-v2')".into())
    );
    let none = llama_server::lora_field(&[], &[("other".into(), 1.0)]);
    assert!(none.is_err_and(|e| e.contains("started with none")));
}

/// Log-probabilities from vLLM: asked for in each API's own terms, and read
/// from the chat API's `content` list and the completions API's older
/// lists, the most likely first (vLLM lists the chosen token first, and
/// the completions API up to one more than asked); tokens carry no id.
#[test]
fn vllm_log_probabilities_are_asked_for_and_read_in_both_shapes() {
    use crate::backend::params::LogprobParams;
    let server = Canned::start(vec![
        ("/v1/models", (200, JSON, fixture!("vllm-models.json"))),
        (
            "/v1/chat/completions",
            (200, EVENTS, fixture!("vllm-chat-logprobs-stream.txt")),
        ),
        (
            "/v1/completions",
            (200, EVENTS, fixture!("vllm-completion-logprobs-stream.txt")),
        ),
    ]);
    let remote = Remote::connect(ConnectParams::new(&server.url)).unwrap();
    let params = GenerateParams {
        logprobs: Some(LogprobParams {
            top: 2,
            after_sampling: false,
        }),
        ..person()
    };
    let chat = remote.chat(&messages(), &params).unwrap();
    let body = server.body("/v1/chat/completions");
    assert_eq!(
        (body["logprobs"].clone(), body["top_logprobs"].clone()),
        (json!(true), json!(2))
    );
    assert_eq!(chat.text, "Yes é");
    let listed = |g: &crate::backend::Generation| {
        g.logprobs
            .as_ref()
            .unwrap()
            .iter()
            .map(|e| {
                let top: Vec<(String, f64)> = e
                    .top
                    .iter()
                    .map(|t| (String::from_utf8(t.bytes.clone()).unwrap(), t.logprob))
                    .collect();
                (
                    e.id,
                    String::from_utf8(e.bytes.clone()).unwrap(),
                    e.logprob,
                    e.text_end,
                    top,
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(
        listed(&chat),
        vec![
            (
                None,
                "Yes".to_owned(),
                -0.105360515,
                3,
                vec![("Yes".to_owned(), -0.105360515), ("No".to_owned(), -2.3125)]
            ),
            (
                None,
                " é".to_owned(),
                -1.609438,
                6,
                vec![(".".to_owned(), -0.356675), (" é".to_owned(), -1.609438)]
            ),
        ]
    );
    let raw = remote.raw("Once", true, &params).unwrap();
    assert_eq!(server.body("/v1/completions")["logprobs"], json!(2));
    assert_eq!(
        listed(&raw),
        vec![
            (
                None,
                " upon".to_owned(),
                -0.02,
                5,
                vec![(" upon".to_owned(), -0.02), (" a".to_owned(), -4.1)]
            ),
            (
                None,
                " a".to_owned(),
                -3.5,
                7,
                vec![(" the".to_owned(), -0.05), (" a".to_owned(), -3.5)]
            ),
        ]
    );
    let without = remote.chat(&messages(), &person()).unwrap();
    assert_eq!(without.logprobs, None);
    assert!(server
        .body("/v1/chat/completions")
        .get("logprobs")
        .is_none());
}

/// Log-probabilities an OpenAI-style server sends in a shape this reader
/// cannot take are an error that says what was wrong, not missing numbers.
#[test]
fn malformed_log_probabilities_of_an_openai_server_are_errors_that_say_what() {
    let chat = |logprobs: &str| {
        format!(r#"{{"choices":[{{"delta":{{"content":"a"}},"logprobs":{logprobs}}}]}}"#)
    };
    let completion =
        |logprobs: &str| format!(r#"{{"choices":[{{"text":"a","logprobs":{logprobs}}}]}}"#);
    let cases = [
        (
            chat(r#"{"content":[{"token":7,"logprob":-1.0}]}"#),
            true,
            "a token that is not a string",
        ),
        (
            chat(r#"{"content":[{"token":"a","bytes":[300],"logprob":-1.0}]}"#),
            true,
            "bytes that are not a list of bytes",
        ),
        (
            chat(r#"{"content":[{"token":"a","logprob":"low"}]}"#),
            true,
            "a token without a numeric logprob",
        ),
        (
            chat(r#"{"content":[{"token":"a","logprob":-1.0,"top_logprobs":[{"token":"b"}]}]}"#),
            true,
            "a token without a numeric logprob",
        ),
        (
            completion(r#"{"text_offset":[0]}"#),
            false,
            "neither \"content\" nor \"tokens\"",
        ),
        (
            completion(r#"{"tokens":["a"],"token_logprobs":[]}"#),
            false,
            "token_logprobs that do not match its tokens",
        ),
        (
            completion(r#"{"tokens":[7],"token_logprobs":[-1.0]}"#),
            false,
            "a token that is not a string",
        ),
        (
            completion(r#"{"tokens":["a"],"token_logprobs":[null]}"#),
            false,
            "a token without a numeric logprob",
        ),
        (
            completion(r#"{"tokens":["a"],"token_logprobs":[-1.0],"top_logprobs":[{"b":"x"}]}"#),
            false,
            "a top token without a numeric logprob",
        ),
    ];
    for (data, is_chat, what) in cases {
        assert_eq!(
            openai::chunk(&data, is_chat).map(|c| c.logprobs),
            Err(format!("log-probabilities with {what}")),
            "{data}"
        );
    }
}
