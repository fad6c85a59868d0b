//! Schema → GBNF conversion time over the maskbench file (goal: p50 < 0.2 ms,
//! p99 < 5 ms). Each schema is converted `--rounds` times (default 3). Two
//! figures are given over the schemas the converter accepts: the first
//! conversion of each schema alone (a single run, no warm-up beyond what the
//! process has from the schemas before it), and the fastest of the rounds
//! (best-of-N, so that a scheduler hiccup does not count as converter time);
//! the best-of-N figure over all schemas, rejected ones included, follows.
//! The slowest schemas (best-of-N) are listed by line number on stderr.
//!
//!   cargo run --release --no-default-features --example convert_speed -- [DATA] [--rounds N] [--slowest N] [--only LINE]
//!     [--json-schema-defaults]

use std::io::{BufRead, BufReader, Write as _};
use std::time::{Duration, Instant};

use infer::schema;
use serde_json::Value;

#[path = "args.rs"]
mod args;
use args::Args;

/// One schema's times.
struct Timing {
    first: Duration,
    best: Duration,
    line: usize,
    accepted: bool,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    args::on_large_stack(256 << 20, run)
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let rounds = args.number("--rounds", 3).max(1);
    let slowest = args.number("--slowest", 10);
    // `--only LINE`: convert just that schema, `--rounds` times (for profiling);
    // with `--show`, the grammar's size (`--text`: the grammar) or the refusal.
    let only = args.number("--only", 0);
    // `--lines FILE`: convert only the schemas whose line numbers FILE lists
    // (one per line; for profiling the slow tail).
    let lines: Option<std::collections::HashSet<usize>> = args
        .value("--lines")
        .map(|path| -> std::io::Result<_> {
            Ok(std::fs::read_to_string(path)?
                .split_whitespace()
                .filter_map(|n| n.parse().ok())
                .collect())
        })
        .transpose()?;
    // `--json-schema-defaults`: objects read as a validator reads them.
    let options = schema::ConvertOptions {
        object_defaults: if args.has("--json-schema-defaults") {
            schema::ObjectDefaults::JsonSchema
        } else {
            schema::ObjectDefaults::Strict
        },
        ..schema::ConvertOptions::default()
    };
    // `--dump FILE`: every grammar (or refusal) written to FILE, to compare
    // the output of two builds.
    let mut dump = args
        .value("--dump")
        .map(std::fs::File::create)
        .transpose()?
        .map(std::io::BufWriter::new);
    let mut times: Vec<Timing> = Vec::new();
    for (line_no, line) in BufReader::new(std::fs::File::open(&args.data)?)
        .lines()
        .enumerate()
    {
        let line = line?;
        if only != 0 && line_no + 1 != only {
            continue;
        }
        if lines.as_ref().is_some_and(|l| !l.contains(&(line_no + 1))) {
            continue;
        }
        let entry: Value = serde_json::from_str(&line)?;
        let Some(schema_value) = entry.get("schema") else {
            continue;
        };
        let mut first = None;
        let mut best = Duration::MAX;
        let mut accepted = false;
        for round in 0..rounds {
            let begin = Instant::now();
            let result = schema::compile_with(schema_value, &options);
            let took = begin.elapsed();
            if round == 0 {
                if let Some(out) = dump.as_mut() {
                    match &result {
                        Ok(c) => writeln!(out, "{} {}", line_no + 1, c.gbnf.as_str().len())?,
                        Err(e) => writeln!(out, "{} refused: {e}", line_no + 1)?,
                    }
                    if let Ok(c) = &result {
                        writeln!(out, "{}", c.gbnf.as_str())?;
                    }
                }
            }
            first.get_or_insert(took);
            best = best.min(took);
            accepted = result.is_ok();
            if only != 0 && args.has("--show") {
                match &result {
                    Ok(c) if args.has("--text") => println!("{}", c.gbnf.as_str()),
                    Ok(c) => eprintln!("grammar: {} bytes", c.gbnf.as_str().len()),
                    Err(e) => eprintln!("refused: {e}"),
                }
            }
        }
        times.push(Timing {
            first: first.unwrap_or(best),
            best,
            line: line_no + 1,
            accepted,
        });
    }
    let accepted: Vec<&Timing> = times.iter().filter(|t| t.accepted).collect();
    println!("| figure | value |\n|---|---|");
    println!(
        "| schemas | {} ({} accepted) |",
        times.len(),
        accepted.len()
    );
    println!(
        "| conversion time, single run, accepted schemas: p50 / p90 / p99 / max | {} |",
        quantiles(accepted.iter().map(|t| t.first))
    );
    println!(
        "| conversion time, best of {rounds}, accepted schemas: p50 / p90 / p99 / max | {} |",
        quantiles(accepted.iter().map(|t| t.best))
    );
    println!(
        "| conversion time, best of {rounds}, all schemas: p50 / p90 / p99 / max | {} |",
        quantiles(times.iter().map(|t| t.best))
    );
    times.sort_by_key(|t| std::cmp::Reverse(t.best));
    for t in times.iter().take(slowest) {
        eprintln!(
            "line {}: {:.3} ms best, {:.3} ms first ({})",
            t.line,
            t.best.as_secs_f64() * 1000.0,
            t.first.as_secs_f64() * 1000.0,
            if t.accepted { "accepted" } else { "rejected" }
        );
    }
    Ok(())
}

/// "p50 / p90 / p99 / max ms" of `times`.
fn quantiles(times: impl Iterator<Item = Duration>) -> String {
    let mut sorted: Vec<Duration> = times.collect();
    sorted.sort();
    let at = |p: f64| {
        let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
        sorted.get(i).map_or(0.0, |d| d.as_secs_f64() * 1000.0)
    };
    format!(
        "{:.3} / {:.3} / {:.3} / {:.3} ms",
        at(0.5),
        at(0.9),
        at(0.99),
        at(1.0)
    )
}
