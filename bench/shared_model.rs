//! Several threads sharing one model (as thread-safe PHP would run
//! requests) against one thread making the same calls in turn: aggregate
//! generated tokens per second, and the same threads each with a model of
//! its own as a second reference.
//!
//! Every configuration makes the same `CALLS` chat calls (greedy, a fixed
//! number of tokens each, prompt caches off so that every call evaluates its
//! prompt), and the configurations are interleaved over `ROUNDS` rounds;
//! the median round is reported. The thread budget (`engine::threads`)
//! divides the cores among the calls running at once, as it does between
//! PHP-FPM workers.
//!
//! Run: `cargo run --release --no-default-features --features engine
//! --example shared_model -- [MODEL] [THREADS...]`.

use std::sync::Arc;
use std::time::Instant;

use infer::backend::Backend;
use infer::engine::{GenerateParams, LoadParams, Message, Model, Role};

const CALLS: usize = 8;
const TOKENS: u32 = 48;
const ROUNDS: usize = 3;

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn prompts() -> Vec<Vec<Message>> {
    [
        "Describe a lighthouse at night.",
        "Explain how bread rises.",
        "Write a short note to a neighbour about a parcel.",
        "List the planets of the solar system.",
        "Tell me about the history of the bicycle.",
        "Why is the sky blue?",
        "Give three tips for learning a language.",
        "Describe a market on a Saturday morning.",
    ]
    .iter()
    .map(|text| vec![Message::new(Role::User, *text)])
    .collect()
}

fn params() -> GenerateParams {
    GenerateParams {
        max_tokens: TOKENS,
        n_ctx: 512,
        cache_prompt: false,
        stop: vec!["\u{0}never".to_owned()],
        ..GenerateParams::default()
    }
}

/// Make the calls on `threads` threads, call `i` on thread `i % threads`,
/// each thread using `models[thread % models.len()]`. Returns generated
/// tokens per second, all threads together.
fn run(models: &[Arc<Model>], threads: usize) -> f64 {
    let prompts = Arc::new(prompts());
    let started = Instant::now();
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let model = Arc::clone(&models[t % models.len()]);
            let prompts = Arc::clone(&prompts);
            std::thread::spawn(move || {
                let mut tokens = 0u64;
                for i in (t..CALLS).step_by(threads) {
                    match model.chat(&prompts[i], &params()) {
                        Ok(g) => tokens += u64::from(g.tokens_generated),
                        Err(e) => panic!("call {i}: {e}"),
                    }
                }
                tokens
            })
        })
        .collect();
    let tokens: u64 = handles
        .into_iter()
        .map(|h| h.join().unwrap_or_else(|_| panic!("a thread panicked")))
        .sum();
    tokens as f64 / started.elapsed().as_secs_f64()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = args
        .get(1)
        .map_or("models/SmolLM2-135M-Instruct.Q4_1.gguf", String::as_str);
    let counts: Vec<usize> = args.iter().skip(2).filter_map(|a| a.parse().ok()).collect();
    let counts = if counts.is_empty() {
        vec![2, 4]
    } else {
        counts
    };
    let load = || {
        Arc::new(
            Model::load(std::path::Path::new(path), &LoadParams::default())
                .unwrap_or_else(|e| panic!("{e}")),
        )
    };
    let shared = load();
    let max = counts.iter().copied().max().unwrap_or(1);
    let own: Vec<Arc<Model>> = (0..max).map(|_| load()).collect();
    // Warm every model once (contexts made, pages touched).
    for m in std::iter::once(&shared).chain(own.iter()) {
        run(std::slice::from_ref(m), 1);
    }
    let mut one = Vec::new();
    let mut sharing: Vec<Vec<f64>> = vec![Vec::new(); counts.len()];
    let mut separate: Vec<Vec<f64>> = vec![Vec::new(); counts.len()];
    for _ in 0..ROUNDS {
        one.push(run(std::slice::from_ref(&shared), 1));
        for (k, &n) in counts.iter().enumerate() {
            sharing[k].push(run(std::slice::from_ref(&shared), n));
            separate[k].push(run(&own[..n], n));
        }
    }
    let one = median(one);
    println!("{CALLS} calls of {TOKENS} tokens, median of {ROUNDS} rounds; {path}");
    println!("1 thread: {one:.1} tokens/s");
    for (k, &n) in counts.iter().enumerate() {
        let s = median(sharing[k].clone());
        let o = median(separate[k].clone());
        println!(
            "{n} threads, one shared model: {s:.1} tokens/s ({:.3}x one thread); \
             {n} threads, a model each: {o:.1} tokens/s ({:.3}x); kept contexts {}",
            s / one,
            o / one,
            shared.kept_sessions()
        );
    }
}
