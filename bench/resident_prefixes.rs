//! How to keep many prompt prefixes: resident in the context as sequences
//! of their own, or saved copies restored when needed (what the prefix
//! cache does)? Eight prefixes of about 460 tokens; for each, a question of
//! 12 tokens is read after the prefix and 32 tokens are decoded.
//!
//! - resident: one context whose cells are a shared pool, the prefixes in
//!   sequences 1..=8; a call shares prefix k's cells with sequence 0
//!   (`llama_memory_seq_cp`, no copy) and decodes there, attending (masked)
//!   over every used cell of the pool;
//! - saved: a context of one sequence; a call restores prefix k's saved
//!   state (a copy) and decodes over its own cells only.
//!
//! Prints the time to start from a prefix and the time per decoded token
//! (medians over the eight prefixes, two rounds), and the KV memory each
//! holds. Run: `cargo run --release --no-default-features --features engine
//! --example resident_prefixes -- MODEL [THREADS]`.

use std::sync::Arc;
use std::time::Instant;

use infer::engine::llama::context::{BatchToken, Context, Shape};
use infer::engine::llama::runtime::backend;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;

const PREFIXES: usize = 8;
const GENERATED: usize = 32;
const N_BATCH: u32 = 512;

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// Decode `tokens` into `seq` from position `start`, in batches.
fn read(ctx: &mut Context, seq: u32, tokens: &[LlamaToken], start: usize) {
    for (c, chunk) in tokens.chunks(N_BATCH as usize).enumerate() {
        let at = start + c * N_BATCH as usize;
        let last = chunk.len() - 1;
        let batch = chunk.iter().enumerate().map(|(i, &token)| BatchToken {
            token,
            seq,
            pos: at + i,
            logits: i == last,
        });
        if let Err(e) = ctx.decode_batch(batch) {
            panic!("decode failed: {e}");
        }
    }
}

/// Read the question after the prefix in `seq`, then decode `GENERATED`
/// tokens one by one; returns the milliseconds per decoded token.
fn answer(ctx: &mut Context, seq: u32, question: &[LlamaToken], prefix_len: usize) -> f64 {
    read(ctx, seq, question, prefix_len);
    let start = prefix_len + question.len();
    let t = Instant::now();
    for pos in start..start + GENERATED {
        read(ctx, seq, &question[..1], pos);
    }
    t.elapsed().as_secs_f64() * 1000.0 / GENERATED as f64
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = args
        .get(1)
        .map_or("models/SmolLM2-135M-Instruct.Q4_1.gguf", String::as_str);
    let threads: u32 = args.get(2).and_then(|t| t.parse().ok()).unwrap_or(2);
    let backend = backend().unwrap_or_else(|e| panic!("{e}"));
    let model = LlamaModel::load_from_file(backend, path, &LlamaModelParams::default())
        .unwrap_or_else(|e| panic!("{e}"));
    let model = Arc::new(model);
    let tokenize = |text: &str, bos: bool| model.vocab().tokenize(text.as_bytes(), bos, false);
    let prefixes: Vec<Vec<LlamaToken>> = (0..PREFIXES)
        .map(|n| {
            let text = format!("Desk {n}. You are assistant number {n} of the shop. ")
                + &format!(
                    "Rule {n}: follow the house rules of desk {n} carefully and answer briefly. "
                )
                .repeat(25);
            tokenize(&text, true)
        })
        .collect();
    let question = tokenize(" Question: how are you today, and where is it?", false);
    let longest = prefixes.iter().map(Vec::len).max().unwrap_or(0);
    let per_call = (longest + question.len() + GENERATED + 16) as u32;

    // Resident: a pool for every prefix and the working sequence.
    let pool = per_call * (PREFIXES as u32 + 1);
    let shape = Shape {
        n_ctx: pool,
        n_seq: PREFIXES as u32 + 1,
        n_batch: N_BATCH,
        shared_cells: true,
        output: infer::engine::llama::context::Computes::Logits,
    };
    let mut resident = Context::new(&model, threads, shape, 0).unwrap_or_else(|e| panic!("{e}"));
    for (k, p) in prefixes.iter().enumerate() {
        read(&mut resident, k as u32 + 1, p, 0);
    }
    let (mut start_resident, mut step_resident) = (Vec::new(), Vec::new());
    for _round in 0..2 {
        for (k, p) in prefixes.iter().enumerate() {
            let t = Instant::now();
            resident.forget_sequence(0);
            resident.share_sequence(k as u32 + 1, 0);
            start_resident.push(t.elapsed().as_secs_f64() * 1000.0);
            step_resident.push(answer(&mut resident, 0, &question, p.len()));
        }
    }

    // Saved: each prefix evaluated once and its state saved.
    let mut saved_ctx = Context::new(&model, threads, Shape::logits(per_call, 1, N_BATCH), 0)
        .unwrap_or_else(|e| panic!("{e}"));
    let mut states = Vec::new();
    for p in &prefixes {
        saved_ctx.clear();
        read(&mut saved_ctx, 0, p, 0);
        states.push(
            saved_ctx
                .save_sequence(0)
                .unwrap_or_else(|| panic!("no state")),
        );
    }
    let (mut start_saved, mut step_saved) = (Vec::new(), Vec::new());
    for _round in 0..2 {
        for (k, p) in prefixes.iter().enumerate() {
            let t = Instant::now();
            saved_ctx.clear();
            assert!(saved_ctx.restore_sequence(0, &states[k]), "restore refused");
            start_saved.push(t.elapsed().as_secs_f64() * 1000.0);
            step_saved.push(answer(&mut saved_ctx, 0, &question, p.len()));
        }
    }
    let per_token: usize = states[0].len() / prefixes[0].len();
    let mib = |cells: usize| (cells * per_token) as f64 / f64::from(1 << 20);
    println!(
        "| {PREFIXES} prefixes of ~{} tokens, {threads} threads | start from a prefix | per decoded token | KV cells held |",
        prefixes[0].len()
    );
    println!("|---|--:|--:|--:|");
    println!(
        "| resident sequences (one pool, seq_cp) | {:.2} ms | {:.2} ms | {} ({:.0} MiB) |",
        median(start_resident),
        median(step_resident),
        pool,
        mib(pool as usize)
    );
    println!(
        "| saved copies (restore) | {:.2} ms | {:.2} ms | {} ({:.0} MiB, + {:.0} MiB of saved states) |",
        median(start_saved),
        median(step_saved),
        per_call,
        mib(per_call as usize),
        states.iter().map(|s| s.len()).sum::<usize>() as f64 / f64::from(1 << 20)
    );
}
