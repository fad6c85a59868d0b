//! Servers that misbehave on purpose, from a loopback socket: they drip
//! bytes, keep a stream open with comments, send more than any answer
//! weighs, or report figures that do not fit the request. Each call must
//! end within its clock (deadline + 1 s at most) with an error that names
//! the limit, or the figure, that was not met.

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use super::*;
use crate::backend::params::{LogprobParams, StopCheck};
use crate::backend::{Backend, FinishReason};
use crate::chat::Role;

const MODELS: &str = r#"{"data":[{"id":"m.gguf","owned_by":"llamacpp","meta":{"n_ctx_train":2048,"n_vocab":1000}}]}"#;
const PROPS: &str = r#"{"default_generation_settings":{"n_ctx":2048},"chat_template":"{{ messages[0]['content'] }}","bos_token":"","eos_token":""}"#;

/// A server whose every request (its path) is answered by `answer`, on
/// its own thread; its base URL.
fn serve(answer: impl Fn(&str, &mut TcpStream) + Send + Sync + 'static) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let answer = std::sync::Arc::new(answer);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let answer = std::sync::Arc::clone(&answer);
            std::thread::spawn(move || {
                let (head, _) = super::tests::read_request(&stream);
                let path = head
                    .split_whitespace()
                    .nth(1)
                    .unwrap_or_default()
                    .to_owned();
                answer(&path, &mut stream);
            });
        }
    });
    url
}

fn reply(stream: &mut TcpStream, status: u16, body: &str) {
    let _ = write!(
        stream,
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

/// A llama-server for everything but `/completion`, which `completion`
/// answers.
fn llama(completion: impl Fn(&mut TcpStream) + Send + Sync + 'static) -> String {
    serve(move |path, stream| match path {
        "/props" => reply(stream, 200, PROPS),
        "/v1/models" => reply(stream, 200, MODELS),
        "/tokenize" => reply(stream, 200, r#"{"tokens":[5,6]}"#),
        "/completion" => completion(stream),
        _ => reply(stream, 404, r#"{"error":{"message":"not found"}}"#),
    })
}

/// A stream of `events`, left open afterwards (the caller decides).
fn events(stream: &mut TcpStream, events: &str) {
    let _ = write!(
        stream,
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n{events}"
    );
}

fn connect(url: &str, timeout: Duration) -> Remote {
    let mut params = ConnectParams::new(url);
    params.timeout = timeout;
    params.retries = 0;
    Remote::connect(params).unwrap()
}

fn user() -> Vec<Message> {
    vec![Message::new(Role::User, "Hi")]
}

fn within(seconds: f64) -> GenerateParams {
    GenerateParams {
        stop_check: StopCheck {
            interrupt: None,
            deadline: Some(Instant::now() + Duration::from_secs_f64(seconds)),
        },
        ..GenerateParams::default()
    }
}

/// One token, then a `: keep-alive` comment every 100 ms for a minute.
fn keep_alive(stream: &mut TcpStream) {
    events(stream, "data: {\"content\":\"Hel\",\"stop\":false}\n\n");
    for _ in 0..600 {
        std::thread::sleep(Duration::from_millis(100));
        if stream.write_all(b": keep-alive\n\n").is_err() {
            return;
        }
    }
}

#[test]
fn keep_alive_comments_end_at_the_calls_deadline_with_what_came() {
    let url = llama(keep_alive);
    let remote = connect(&url, Duration::from_secs(60));
    let start = Instant::now();
    let reply = remote.chat(&user(), &within(1.0)).unwrap();
    let took = start.elapsed();
    assert!(took < Duration::from_secs(2), "{took:?}");
    assert_eq!(
        (reply.finish, reply.text.as_str()),
        (FinishReason::Timeout, "Hel")
    );
}

#[test]
fn keep_alive_comments_do_not_reset_the_connections_timeout() {
    let url = llama(keep_alive);
    let remote = connect(&url, Duration::from_millis(800));
    let start = Instant::now();
    let e = remote
        .chat(&user(), &GenerateParams::default())
        .unwrap_err();
    let took = start.elapsed();
    assert!(took < Duration::from_millis(1800), "{took:?}");
    assert_eq!(
        e.to_string(),
        format!("{url} did not answer within 0.8 s (option \"timeout\")")
    );
}

/// `body` as an answer a byte every 100 ms.
fn drip(stream: &mut TcpStream, body: &str) {
    let _ = write!(
        stream,
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    for byte in body.bytes() {
        std::thread::sleep(Duration::from_millis(100));
        if stream.write_all(&[byte]).is_err() {
            return;
        }
    }
}

#[test]
fn a_dripped_description_ends_within_the_connections_timeout() {
    let url = serve(|path, stream| match path {
        "/props" => drip(stream, PROPS),
        "/v1/models" => reply(stream, 200, MODELS),
        _ => reply(stream, 404, "{}"),
    });
    let mut params = ConnectParams::new(&url);
    params.timeout = Duration::from_secs(1);
    let start = Instant::now();
    let e = Remote::connect(params).unwrap_err();
    let took = start.elapsed();
    assert!(took < Duration::from_secs(2), "{took:?}");
    assert_eq!(
        e.to_string(),
        format!("{url} did not answer within 1 s (option \"timeout\")")
    );
}

#[test]
fn a_dripped_token_list_ends_at_the_calls_deadline() {
    let url = serve(|path, stream| match path {
        "/props" => reply(stream, 200, PROPS),
        "/v1/models" => reply(stream, 200, MODELS),
        "/tokenize" => drip(stream, &format!("{{\"tokens\":[{}1]}}", "1,".repeat(200))),
        _ => reply(stream, 404, "{}"),
    });
    let remote = connect(&url, Duration::from_secs(60));
    let start = Instant::now();
    let reply = remote.chat(&user(), &within(1.0)).unwrap();
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(
        (reply.finish, reply.text.as_str()),
        (FinishReason::Timeout, "")
    );
}

#[test]
fn dripped_embeddings_end_at_the_calls_deadline_as_in_process() {
    let url = serve(|path, stream| match path {
        "/props" => reply(stream, 200, PROPS),
        "/v1/models" => reply(stream, 200, MODELS),
        "/embeddings" => drip(stream, r#"[{"index":0,"embedding":[[0.5,0.25,0.125]]}]"#),
        _ => reply(stream, 404, "{}"),
    });
    let remote = connect(&url, Duration::from_secs(60));
    let start = Instant::now();
    let stop = within(1.0).stop_check;
    let e = remote.embed_many(&["a".to_owned()], stop).unwrap_err();
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
    assert!(matches!(e, InferenceError::Aborted), "{e:?}");
    assert_eq!(
        e.to_string(),
        "the evaluation was stopped by the time limit"
    );
}

/// A 200 answer of `size` bytes: a JSON list of ones, sent as fast as the
/// client reads.
fn huge(stream: &mut TcpStream, prefix: &str, size: usize) {
    let _ = write!(
        stream,
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {size}\r\n\r\n{prefix}"
    );
    let chunk = "1,".repeat(1 << 15);
    let mut sent = prefix.len();
    while sent < size {
        if stream.write_all(chunk.as_bytes()).is_err() {
            return;
        }
        sent += chunk.len();
    }
}

#[test]
fn a_token_list_larger_than_its_text_can_make_is_refused_as_it_arrives() {
    let url = serve(|path, stream| match path {
        "/props" => reply(stream, 200, PROPS),
        "/v1/models" => reply(stream, 200, MODELS),
        "/tokenize" => huge(stream, "{\"tokens\":[", 64 << 20),
        _ => reply(stream, 404, "{}"),
    });
    let remote = connect(&url, Duration::from_secs(60));
    let e = remote.count_tokens("Hi", true).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("{url} sent a /tokenize answer of more than {} bytes (the most the request's text can make); nothing more was read", limits::tokenize_bytes(2))
    );
    // Small enough to be read, but more tokens than two bytes make.
    let url = serve(|path, stream| match path {
        "/props" => reply(stream, 200, PROPS),
        "/v1/models" => reply(stream, 200, MODELS),
        "/tokenize" => reply(stream, 200, r#"{"tokens":[1,1,1,1,1,1,1,1,1,1,1]}"#),
        _ => reply(stream, 404, "{}"),
    });
    let e = connect(&url, Duration::from_secs(60))
        .count_tokens("Hi", true)
        .unwrap_err();
    assert!(
        e.to_string()
            .ends_with("a /tokenize answer of 11 tokens for a text of 2 bytes (at most 10)"),
        "{e}"
    );
}

#[test]
fn an_answer_past_max_response_bytes_is_refused_and_names_the_option() {
    let url = serve(|path, stream| match path {
        "/props" => reply(stream, 200, PROPS),
        "/v1/models" => reply(stream, 200, MODELS),
        "/embeddings" => huge(stream, "[{\"index\":0,\"embedding\":[", 400 << 20),
        _ => reply(stream, 404, "{}"),
    });
    let mut params = ConnectParams::new(&url);
    params.max_response = 1 << 20;
    let remote = Remote::connect(params).unwrap();
    let e = remote
        .embed_many(&["a".to_owned()], StopCheck::default())
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("{url} sent an embeddings answer of more than 1048576 bytes (option \"max_response_bytes\"); nothing more was read")
    );
    // A description is bounded whatever the option.
    let url = serve(|path, stream| match path {
        "/props" => huge(stream, "{\"chat_template\":[", 64 << 20),
        _ => reply(stream, 404, "{}"),
    });
    let e = Remote::connect(ConnectParams::new(&url)).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("{url} sent a description of itself of more than 4194304 bytes (the limit on a server's description); nothing more was read")
    );
}

/// The message of the error a llama-server whose `/completion` streams
/// `stream` gives, for `params`.
fn refusal(stream: &'static str, params: &GenerateParams) -> String {
    let url = llama(move |s| events(s, stream));
    let e = connect(&url, Duration::from_secs(10))
        .chat(&user(), params)
        .unwrap_err();
    let message = e.to_string();
    let prefix = format!("{url} sent ");
    assert!(message.starts_with(&prefix), "{message}");
    assert!(
        message.ends_with(", which does not fit the request; the answer was refused"),
        "{message}"
    );
    message[prefix.len()..message.len() - 56].to_owned()
}

#[test]
fn figures_a_server_reports_must_fit_the_request() {
    let one = GenerateParams {
        max_tokens: 1,
        ..GenerateParams::default()
    };
    assert_eq!(
        refusal("data: {\"content\":\"a\",\"stop\":true,\"stop_type\":\"limit\",\"tokens_predicted\":4294967295,\"tokens_evaluated\":2}\n\n", &one),
        "tokens_predicted = 4294967295, more than the 2 tokens asked for (maxTokens 1, plus 1)"
    );
    assert_eq!(
        refusal("data: {\"content\":\"a\",\"stop\":false}\n\ndata: {\"content\":\"b\",\"stop\":false}\n\ndata: {\"content\":\"c\",\"stop\":false}\n\n", &one),
        "tokens streamed = 3, more than the 2 tokens asked for (maxTokens 1, plus 1)"
    );
    assert_eq!(
        refusal("data: {\"content\":\"a\",\"stop\":true,\"stop_type\":\"limit\",\"tokens_predicted\":1,\"tokens_evaluated\":2,\"timings\":{\"cache_n\":50}}\n\n", &one),
        "cached tokens = 50, more than the prompt's 2 tokens"
    );
    let probs = GenerateParams {
        max_tokens: 4,
        logprobs: Some(LogprobParams {
            top: 1,
            after_sampling: true,
        }),
        ..GenerateParams::default()
    };
    assert_eq!(
        refusal("data: {\"content\":\"a\",\"stop\":false,\"completion_probabilities\":[{\"id\":1,\"bytes\":[97],\"prob\":-0.5,\"top_probs\":[]}]}\n\n", &probs),
        "a log-probability of NaN, not a number ≤ 0"
    );
    assert_eq!(
        refusal("data: {\"content\":\"a\",\"stop\":false,\"completion_probabilities\":[{\"id\":-3,\"bytes\":[97],\"logprob\":-0.5}]}\n\n", &probs),
        "token id -3, outside the vocabulary (0 to 999)"
    );
    assert_eq!(
        refusal("data: {\"content\":\"a\",\"stop\":false,\"completion_probabilities\":[{\"id\":1000,\"bytes\":[97],\"logprob\":-0.5}]}\n\n", &probs),
        "token id 1000, outside the vocabulary (0 to 999)"
    );
    assert_eq!(
        refusal("data: {\"content\":\"a\",\"stop\":false,\"completion_probabilities\":[{\"id\":1,\"bytes\":[97],\"logprob\":-0.5,\"top_logprobs\":[{\"id\":1,\"bytes\":[],\"logprob\":-1},{\"id\":2,\"bytes\":[],\"logprob\":-1},{\"id\":3,\"bytes\":[],\"logprob\":-1}]}]}\n\n", &probs),
        "a token with 3 alternatives in its top log-probabilities, more than the 1 asked for"
    );
    assert_eq!(
        refusal("data: {\"content\":\"ab\",\"stop\":false,\"completion_probabilities\":[{\"id\":1,\"bytes\":[],\"logprob\":-1},{\"id\":1,\"bytes\":[],\"logprob\":-1},{\"id\":1,\"bytes\":[],\"logprob\":-1},{\"id\":1,\"bytes\":[],\"logprob\":-1},{\"id\":1,\"bytes\":[],\"logprob\":-1},{\"id\":1,\"bytes\":[],\"logprob\":-1}]}\n\n", &probs),
        "tokens with log-probabilities = 6, more than the 5 tokens asked for (maxTokens 4, plus 1)"
    );
}

/// The message of the error a vLLM server whose chat streams `stream`
/// gives for a reply of at most one token.
fn vllm_refusal(stream: String) -> String {
    let url = serve(move |path, s| match path {
        "/v1/models" => reply(
            s,
            200,
            r#"{"data":[{"id":"q","owned_by":"vllm","max_model_len":4096}]}"#,
        ),
        "/v1/chat/completions" => events(s, &stream),
        _ => reply(s, 404, "{}"),
    });
    let params = GenerateParams {
        max_tokens: 1,
        ..GenerateParams::default()
    };
    let e = connect(&url, Duration::from_secs(10))
        .chat(&user(), &params)
        .unwrap_err();
    e.to_string().replace(&url, "URL")
}

#[test]
fn an_openai_servers_usage_and_events_must_fit_the_request() {
    let usage = |completion: u64, cached: u64| {
        format!("data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"a\"}},\"finish_reason\":\"length\",\"stop_reason\":null}}]}}\n\ndata: {{\"choices\":[],\"usage\":{{\"prompt_tokens\":3,\"completion_tokens\":{completion},\"prompt_tokens_details\":{{\"cached_tokens\":{cached}}}}}}}\n\ndata: [DONE]\n\n")
    };
    assert_eq!(
        vllm_refusal(usage(4_294_967_295, 2)),
        "URL sent completion_tokens = 4294967295, more than the 2 tokens asked for (maxTokens 1, plus 1), which does not fit the request; the answer was refused"
    );
    assert_eq!(
        vllm_refusal(usage(1, 4)),
        "URL sent cached tokens = 4, more than the prompt's 3 tokens, which does not fit the request; the answer was refused"
    );
    // Chunks without text are no tokens, but they are counted too.
    let empty = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\"},\"finish_reason\":null}]}\n\n";
    assert_eq!(
        vllm_refusal(empty.repeat(100)),
        "URL sent 69 events, more than a reply of 1 tokens sends, which does not fit the request; the answer was refused"
    );
}

#[test]
fn an_error_page_is_quoted_short_on_one_line() {
    let page = format!(
        "<html><head><title>403 Forbidden</title></head>\n<body><h1>Forbidden</h1>\x07{}</body></html>",
        "secret detail ".repeat(100)
    );
    let url = serve(move |_, stream| reply(stream, 403, &page));
    let e = Remote::connect(ConnectParams::new(&url)).unwrap_err();
    let message = e.to_string();
    let quoted = message
        .strip_prefix(&format!("{url} answered HTTP 403: "))
        .and_then(|m| m.strip_suffix(" (check option \"api_key\")"))
        .unwrap_or_else(|| panic!("{message}"));
    assert!(
        quoted.starts_with("403 Forbidden Forbidden secret detail"),
        "{quoted}"
    );
    assert!(
        quoted.ends_with('…') && quoted.chars().count() <= limits::MAX_QUOTED_CHARS + 1,
        "{quoted}"
    );
    assert!(!quoted.contains(['<', '\n', '\x07']), "{quoted}");
}
