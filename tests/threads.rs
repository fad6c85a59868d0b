//! One model shared by several threads calling it at once, as thread-safe
//! PHP runs requests: every call writes what it writes alone, stops at its
//! own deadline, and a stream blocks only its own thread's other calls.
//! The judge is the same call made alone, on one thread, before the others
//! start. The calls bypass the prompt caches (`cache_prompt: false`): a
//! prompt continued from a cached prefix may, rarely, pick another greedy
//! token than the prompt evaluated whole (docs/performance.md), and which
//! thread finds which prefix depends on the timing.
#![cfg(feature = "engine")]

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use crate::common;

use infer::backend::params::{Constraint, StopCheck};
use infer::backend::Backend;
use infer::backend::FinishReason;
use infer::engine::{GenerateParams, InferenceError, LoadParams, Message, Model, Role};
use infer::grammar::CheckedGbnf;

const THREADS: usize = 4;

fn load() -> Arc<Model> {
    Arc::new(Model::load(&common::model_path(), &LoadParams::default()).expect("load the model"))
}

fn ask(text: &str) -> Vec<Message> {
    vec![Message::new(Role::User, text)]
}

/// The calls the threads make: free text and constrained, different
/// lengths, so that the threads' evaluations interleave.
fn calls() -> Vec<(Vec<Message>, GenerateParams)> {
    let free = |max_tokens| GenerateParams {
        max_tokens,
        n_ctx: 512,
        cache_prompt: false,
        ..GenerateParams::default()
    };
    let json = CheckedGbnf::new(
        "root ::= \"{\\\"city\\\": \\\"\" [A-Za-z ]{1,20} \"\\\", \\\"country\\\": \\\"\" [A-Za-z ]{1,20} \"\\\"}\"",
    )
    .expect("a valid grammar");
    vec![
        (ask("Name three colours."), free(24)),
        (
            ask("Where is the Eiffel Tower? Answer in JSON."),
            GenerateParams {
                constraint: Some(Constraint::Grammar(json)),
                ..free(40)
            },
        ),
        (ask("Write a haiku about rain."), free(32)),
        (ask("What is 2 + 2?"), free(16)),
    ]
}

/// Run `f(i)` on `THREADS` threads that start together; their results in
/// order.
fn together<T: Send + 'static>(f: impl Fn(usize) -> T + Send + Sync + 'static) -> Vec<T> {
    let f = Arc::new(f);
    let start = Arc::new(Barrier::new(THREADS));
    let handles: Vec<_> = (0..THREADS)
        .map(|i| {
            let f = Arc::clone(&f);
            let start = Arc::clone(&start);
            std::thread::spawn(move || {
                start.wait();
                f(i)
            })
        })
        .collect();
    handles
        .into_iter()
        .map(|h| h.join().expect("a thread panicked"))
        .collect()
}

#[test]
fn threads_sharing_one_model_write_what_one_thread_writes() {
    let model = load();
    let calls = calls();
    // The reference: each call alone, one after another, on a model of its
    // own (no cache shared with the threads' runs).
    let alone = load();
    let expected: Vec<String> = calls
        .iter()
        .map(|(messages, params)| alone.chat(messages, params).expect("generate").text)
        .collect();
    assert_eq!(alone.kept_sessions(), 1);
    drop(alone);
    let shared = Arc::clone(&model);
    let calls = Arc::new(calls);
    let got = together(move |i| {
        let (messages, params) = &calls[i];
        // Twice: the second call finds a kept context, perhaps another
        // thread's.
        let first = shared.chat(messages, params).map(|g| g.text);
        let second = shared.chat(messages, params).map(|g| g.text);
        (first, second)
    });
    for (i, (first, second)) in got.into_iter().enumerate() {
        assert_eq!(
            first.as_deref(),
            Ok(expected[i].as_str()),
            "call {i}, first"
        );
        assert_eq!(
            second.as_deref(),
            Ok(expected[i].as_str()),
            "call {i}, second"
        );
    }
    // Up to four calls ran at once, each in a context of its own, all kept;
    // the model used by one thread kept one.
    let kept = model.kept_sessions();
    assert!((2..=THREADS).contains(&kept), "{kept} contexts kept");
    assert_eq!(model.info()["context_size"], 512);
}

#[test]
fn each_call_stops_at_its_own_deadline() {
    let model = load();
    let long = GenerateParams {
        max_tokens: 2000,
        n_ctx: 2048,
        cache_prompt: false,
        ..GenerateParams::default()
    };
    let short = GenerateParams {
        max_tokens: 20,
        n_ctx: 512,
        cache_prompt: false,
        ..GenerateParams::default()
    };
    let story = ask("Tell a very long story about a dragon.");
    let colours = ask("Name three colours.");
    let expected = model.chat(&colours, &short).expect("generate").text;
    let shared = Arc::clone(&model);
    let got = together(move |i| {
        let started = Instant::now();
        let result = if i % 2 == 0 {
            let params = GenerateParams {
                stop_check: StopCheck {
                    interrupt: None,
                    deadline: Some(Instant::now() + Duration::from_millis(300)),
                },
                ..long.clone()
            };
            shared.chat(&story, &params)
        } else {
            shared.chat(&colours, &short)
        };
        (result, started.elapsed())
    });
    for (i, (result, took)) in got.into_iter().enumerate() {
        let generation = result.expect("generate");
        if i % 2 == 0 {
            assert_eq!(generation.finish, FinishReason::Timeout, "thread {i}");
            assert!(
                generation.tokens_generated < 2000,
                "thread {i} ran to its limit"
            );
            // The deadline is checked within a token (or a graph node of
            // the prompt), far below the call's natural length.
            assert!(took < Duration::from_secs(10), "thread {i} took {took:?}");
        } else {
            assert_eq!(generation.finish, FinishReason::Length, "thread {i}");
            assert_eq!(generation.text, expected, "thread {i}");
        }
    }
}

#[test]
fn a_stream_blocks_only_its_own_threads_calls() {
    let model = load();
    let params = GenerateParams {
        max_tokens: 16,
        n_ctx: 512,
        cache_prompt: false,
        ..GenerateParams::default()
    };
    let messages = ask("Name three colours.");
    let expected = model.chat(&messages, &params).expect("generate").text;

    let mut stream = Arc::clone(&model)
        .stream_chat(&messages, params.clone())
        .expect("open a stream");
    let first = stream.next_piece().expect("a piece");
    assert!(first.is_some(), "the stream yields");
    // This thread has a stream open: its other calls are refused...
    let refused = model.chat(&messages, &params);
    assert!(
        matches!(refused, Err(InferenceError::StreamInProgress)),
        "{refused:?}"
    );
    // ...another thread's are not, and write the same text.
    let other = Arc::clone(&model);
    let (m, p) = (messages.clone(), params.clone());
    let elsewhere = std::thread::spawn(move || other.chat(&m, &p).map(|g| g.text))
        .join()
        .expect("the other thread");
    assert_eq!(elsewhere.as_deref(), Ok(expected.as_str()));
    // The stream itself is untouched by the other thread's call.
    let streamed = stream.finish().expect("finish").text.clone();
    assert_eq!(streamed, expected);
    drop(stream);
    assert_eq!(
        model.chat(&messages, &params).map(|g| g.text).as_deref(),
        Ok(expected.as_str()),
        "the thread may call again once its stream ended"
    );
}

#[test]
fn batches_on_several_threads_match_their_sequential_results() {
    let model = load();
    let params = GenerateParams {
        max_tokens: 12,
        n_ctx: 512,
        cache_prompt: false,
        ..GenerateParams::default()
    };
    let prompts: Vec<String> = (0..3)
        .map(|i| {
            format!(
                "Question {i}: name a fruit that starts with the letter {}.",
                ["a", "b", "c"][i]
            )
        })
        .collect();
    let expected = model
        .raw_many(&prompts, true, &params, 3)
        .expect("generate")
        .into_iter()
        .map(|g| g.text)
        .collect::<Vec<_>>();
    let shared = Arc::clone(&model);
    let (p, ps) = (params.clone(), prompts.clone());
    let got = together(move |_| {
        shared
            .raw_many(&ps, true, &p, 3)
            .map(|gs| gs.into_iter().map(|g| g.text).collect::<Vec<_>>())
    });
    for (i, texts) in got.into_iter().enumerate() {
        assert_eq!(texts.as_ref(), Ok(&expected), "thread {i}");
    }
}

/// GGUF files that llama.cpp refuses, each for its own reason, and a word of
/// the reason it logs.
fn broken_files(dir: &std::path::Path) -> Vec<(std::path::PathBuf, &'static str)> {
    let mut v1 = b"GGUF".to_vec();
    v1.extend_from_slice(&1u32.to_le_bytes());
    v1.extend_from_slice(&[0; 32]);
    let mut v99 = b"GGUF".to_vec();
    v99.extend_from_slice(&99u32.to_le_bytes());
    v99.extend_from_slice(&[0; 32]);
    let mut tensors = b"GGUF".to_vec();
    tensors.extend_from_slice(&3u32.to_le_bytes());
    tensors.extend_from_slice(&u64::MAX.to_le_bytes());
    tensors.extend_from_slice(&0u64.to_le_bytes());
    let mut key = b"GGUF".to_vec();
    key.extend_from_slice(&3u32.to_le_bytes());
    key.extend_from_slice(&0u64.to_le_bytes());
    key.extend_from_slice(&1u64.to_le_bytes());
    key.extend_from_slice(&u64::MAX.to_le_bytes());
    [
        ("v1", v1, "GGUFv1"),
        ("v99", v99, "version 99"),
        ("tensors", tensors, "number of tensors"),
        ("key", key, "string length"),
    ]
    .into_iter()
    .map(|(name, bytes, word)| {
        let path = dir.join(format!("{name}.gguf"));
        std::fs::write(&path, bytes).expect("write a test file");
        (path, word)
    })
    .collect()
}

#[test]
fn each_failing_call_reports_its_own_diagnostics() {
    let dir = std::env::temp_dir().join(format!("infer-threads-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a directory for the test files");
    let files = Arc::new(broken_files(&dir));
    let model = load();
    let all_words: Vec<&str> = files.iter().map(|(_, w)| *w).collect();
    let shared = Arc::clone(&model);
    let files_in = Arc::clone(&files);
    let got = together(move |i| {
        let mut messages = Vec::new();
        for _ in 0..5 {
            let (path, _) = &files_in[i];
            let load = Model::load(path, &LoadParams::default());
            messages.push(load.map(|_| ()).map_err(|e| e.to_string()));
            // A grammar whose token item the vocabulary lacks, its own per
            // thread, between the loads of the others.
            let gbnf =
                CheckedGbnf::new(format!("root ::= \"x\" <notatoken{i}>")).expect("valid syntax");
            let params = GenerateParams {
                max_tokens: 4,
                n_ctx: 256,
                constraint: Some(Constraint::Grammar(gbnf)),
                ..GenerateParams::default()
            };
            let refused = shared.raw("Say x.", true, &params);
            messages.push(refused.map(|_| ()).map_err(|e| e.to_string()));
        }
        messages
    });
    for (i, messages) in got.into_iter().enumerate() {
        let (path, word) = &files[i];
        for (round, message) in messages.iter().enumerate() {
            let message = message.as_ref().expect_err("the call fails");
            if round % 2 == 0 {
                assert!(
                    message.contains(word) && message.contains(&*path.to_string_lossy()),
                    "thread {i}: {message}"
                );
                for (other, w) in all_words.iter().enumerate() {
                    assert!(
                        other == i || !message.contains(w),
                        "thread {i} got thread {other}'s line: {message}"
                    );
                }
            } else {
                assert_eq!(
                    message,
                    &format!(
                        "llama.cpp rejected the grammar: line 1, column 14: invalid token \
                         '<notatoken{i}>': it is {} tokens of this model's vocabulary, not one",
                        model
                            .count_tokens(&format!("<notatoken{i}>"), true)
                            .expect("count")
                    ),
                    "thread {i}"
                );
            }
        }
    }
    let removed = std::fs::remove_dir_all(&dir);
    assert!(removed.is_ok(), "{removed:?}");
}
