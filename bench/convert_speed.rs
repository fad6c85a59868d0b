//! Schema → GBNF conversion time over the maskbench file (issue 4: p50 < 0.2 ms,
//! p99 < 5 ms). Each schema is converted `--rounds` times (default 3) and its
//! fastest time kept, so that a scheduler hiccup does not count as converter
//! time; the slowest schemas are listed by line number.
//!
//!   cargo run --release --no-default-features --example convert_speed -- [DATA] [--rounds N] [--slowest N] [--only LINE]

use std::io::{BufRead, BufReader};
use std::time::{Duration, Instant};

use infer::schema;
use serde_json::Value;

#[path = "args.rs"]
mod args;
use args::Args;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    args::on_large_stack(256 << 20, run)
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let rounds = args.number("--rounds", 3).max(1);
    let slowest = args.number("--slowest", 10);
    // `--only LINE`: convert just that schema, `--rounds` times (for profiling).
    let only = args.number("--only", 0);
    let mut times: Vec<(Duration, usize, bool)> = Vec::new();
    for (line_no, line) in BufReader::new(std::fs::File::open(&args.data)?)
        .lines()
        .enumerate()
    {
        let line = line?;
        if only != 0 && line_no + 1 != only {
            continue;
        }
        let entry: Value = serde_json::from_str(&line)?;
        let Some(schema_value) = entry.get("schema") else {
            continue;
        };
        let mut best = Duration::MAX;
        let mut accepted = false;
        for _ in 0..rounds {
            let begin = Instant::now();
            let result = schema::compile(schema_value);
            best = best.min(begin.elapsed());
            accepted = result.is_ok();
        }
        times.push((best, line_no + 1, accepted));
    }
    let mut sorted: Vec<Duration> = times.iter().map(|t| t.0).collect();
    sorted.sort();
    let at = |p: f64| {
        let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
        sorted.get(i).map_or(0.0, |d| d.as_secs_f64() * 1000.0)
    };
    println!("| schemas | {} |", sorted.len());
    println!(
        "| conversion time p50 / p90 / p99 / max | {:.3} / {:.3} / {:.3} / {:.3} ms |",
        at(0.5),
        at(0.9),
        at(0.99),
        at(1.0)
    );
    times.sort_by_key(|t| std::cmp::Reverse(t.0));
    for (d, line, accepted) in times.iter().take(slowest) {
        eprintln!(
            "line {line}: {:.3} ms ({})",
            d.as_secs_f64() * 1000.0,
            if *accepted { "accepted" } else { "rejected" }
        );
    }
    Ok(())
}
