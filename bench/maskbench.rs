//! Coverage, soundness and completeness of the JSON Schema converter on
//! `maskbench-visible.jsonl`, judged by llama.cpp's own grammar engine (the
//! grammar sampler that constrains generation) with the default model's
//! vocabulary.
//!
//! For every schema the converter accepts, each test instance is re-serialised
//! in the key order and layout the grammar produces, tokenized, and fed to the
//! grammar sampler token by token; it is accepted when every token is allowed
//! and end-of-generation is allowed at the end.
//!
//! With `--baseline`, llama.cpp's own JSON-schema converter is judged the same
//! way in the same run (instances as compact JSON in their original key
//! order, which its grammars' flexible whitespace accepts).
//!
//! Run: `make bench-schema` (or `cargo run --release --no-default-features --features engine
//! --example maskbench -- [DATA] [MODEL] [--limit N] [--baseline]`).

#[path = "args.rs"]
mod args;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

use infer::engine::probe::GrammarProbe;
use infer::schema::{self, canonical, ErrorKind, SchemaError};
use serde_json::Value;

use args::Args;

#[derive(Default)]
struct Baseline {
    accepted: usize,
    /// Grammars our checker refuses because llama.cpp would hang, abort or
    /// exhaust memory on them (hidden left recursion, parse-stack explosion).
    unsafe_grammars: usize,
    grammar_load_failures: usize,
    valid: usize,
    valid_accepted: usize,
    invalid: usize,
    violations: usize,
}

#[derive(Default)]
struct Tally {
    baseline: Option<Baseline>,
    schemas: usize,
    accepted: usize,
    crashes: usize,
    grammar_load_failures: usize,
    checker_refused: usize,
    valid: usize,
    valid_accepted: usize,
    invalid: usize,
    invalid_rejected: usize,
    violations: Vec<String>,
    incomplete: Vec<String>,
    reasons: BTreeMap<String, usize>,
    examples: BTreeMap<String, Vec<String>>,
    times: Vec<Duration>,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    args::on_large_stack(1 << 30, run)
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let (data, model_path) = (args.data.clone(), args.model.clone());
    let limit = args.number("--limit", usize::MAX);

    let probe = GrammarProbe::new(std::path::Path::new(&model_path))?;

    let mut t = Tally::default();
    if args.has("--baseline") {
        t.baseline = Some(Baseline::default());
    }
    let started = Instant::now();
    for line in BufReader::new(std::fs::File::open(&data)?)
        .lines()
        .take(limit)
    {
        let entry: Value = serde_json::from_str(&line?)?;
        let Some(schema_value) = entry.get("schema") else {
            continue;
        };
        let tests = entry
            .get("tests")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        t.schemas += 1;
        if let Some(b) = &mut t.baseline {
            judge_baseline(&probe, b, schema_value, &tests);
        }
        let begin = Instant::now();
        let compiled = catch_unwind(AssertUnwindSafe(|| schema::compile(schema_value)));
        t.times.push(begin.elapsed());
        let compiled = match compiled {
            Err(_) => {
                t.crashes += 1;
                continue;
            }
            Ok(Err(e)) => {
                let key = reason(&e);
                *t.reasons.entry(key.clone()).or_default() += 1;
                let examples = t.examples.entry(key).or_default();
                if examples.len() < 3 {
                    let name = entry.get("name").and_then(Value::as_str).unwrap_or("?");
                    examples.push(format!("{name}: {e}"));
                }
                continue;
            }
            Ok(Ok(c)) => c,
        };
        t.accepted += 1;
        if infer::grammar::check::check(compiled.gbnf.as_str()).is_err() {
            t.checker_refused += 1;
        }
        let mut grammar = match probe.load(&compiled.gbnf) {
            Ok(g) => g,
            Err(e) => {
                t.grammar_load_failures += 1;
                if std::env::var_os("MASKBENCH_DEBUG").is_some() {
                    eprintln!(
                        "grammar refused for {}: {e}\n{}",
                        entry.get("name").and_then(Value::as_str).unwrap_or("?"),
                        compiled.gbnf
                    );
                }
                continue;
            }
        };
        for test in tests {
            let (Some(instance), Some(valid)) =
                (test.get("data"), test.get("valid").and_then(Value::as_bool))
            else {
                continue;
            };
            let text = canonical::instance_text(instance, &compiled.root, &compiled.defs);
            let ok = grammar.accepts(&text);
            let name = entry.get("name").and_then(Value::as_str).unwrap_or("?");
            if valid {
                t.valid += 1;
                if ok {
                    t.valid_accepted += 1;
                } else if t.incomplete.len() < 400 {
                    t.incomplete
                        .push(format!("{name}: {}", truncate(&text, 160)));
                }
            } else {
                t.invalid += 1;
                if ok {
                    t.violations
                        .push(format!("{name}: {}", truncate(&text, 300)));
                } else {
                    t.invalid_rejected += 1;
                }
            }
        }
    }
    report(&t, started.elapsed(), &data);
    Ok(())
}

/// llama.cpp's converter on one schema, judged like ours.
fn judge_baseline(probe: &GrammarProbe, b: &mut Baseline, schema: &Value, tests: &[Value]) {
    let converted = catch_unwind(AssertUnwindSafe(|| {
        llama_cpp_2::json_schema_to_grammar(&schema.to_string())
    }));
    let Ok(Ok(gbnf)) = converted else { return };
    b.accepted += 1;
    let Ok(gbnf) = infer::grammar::CheckedGbnf::new(gbnf) else {
        b.unsafe_grammars += 1;
        return;
    };
    let Ok(mut grammar) = probe.load(&gbnf) else {
        b.grammar_load_failures += 1;
        return;
    };
    for test in tests {
        let (Some(instance), Some(valid)) =
            (test.get("data"), test.get("valid").and_then(Value::as_bool))
        else {
            continue;
        };
        let ok = grammar.accepts(&instance.to_string());
        if valid {
            b.valid += 1;
            b.valid_accepted += usize::from(ok);
        } else {
            b.invalid += 1;
            b.violations += usize::from(ok);
        }
    }
}

/// The row of the rejection table an error counts in.
fn reason(e: &SchemaError) -> String {
    match &e.kind {
        ErrorKind::UnsupportedKeyword { keyword } => format!("unsupported keyword `{keyword}`"),
        ErrorKind::UnsupportedFormat { format, .. } => format!("unsupported format `{format}`"),
        ErrorKind::Pattern { reason, .. } => {
            let short = reason.split(" at offset").next().unwrap_or(reason);
            format!("pattern: {short}")
        }
        ErrorKind::OneOfNotExclusive { .. } => "`oneOf` not provably exclusive".to_owned(),
        ErrorKind::AllOfNotMergeable { .. } => "`allOf` not mergeable".to_owned(),
        ErrorKind::Invalid { keyword, reason } => {
            let short: String = reason.chars().take(60).collect();
            format!("`{keyword}` {short}")
        }
        other => {
            let text = other.to_string();
            text.split(':')
                .next()
                .unwrap_or(&text)
                .chars()
                .take(70)
                .collect()
        }
    }
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_owned()
    } else {
        format!("{}…", s.chars().take(n).collect::<String>())
    }
}

fn pct(a: usize, b: usize) -> f64 {
    if b == 0 {
        0.0
    } else {
        100.0 * a as f64 / b as f64
    }
}

fn report(t: &Tally, elapsed: Duration, data: &str) {
    let mut times = t.times.clone();
    times.sort();
    let q = |p: f64| {
        times
            .get(((times.len() as f64 - 1.0) * p) as usize)
            .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
    };
    println!("## Schema converter on {data}\n");
    println!("| figure | value |\n|---|---|");
    println!("| schemas | {} |", t.schemas);
    println!(
        "| coverage (schemas accepted) | {} ({:.1}%) |",
        t.accepted,
        pct(t.accepted, t.schemas)
    );
    println!("| converter crashes (panics) | {} |", t.crashes);
    println!(
        "| emitted grammars llama.cpp refused to load | {} |",
        t.grammar_load_failures
    );
    println!(
        "| emitted grammars our GBNF checker refuses | {} |",
        t.checker_refused
    );
    println!(
        "| soundness violations (invalid instances accepted) | {} of {} |",
        t.violations.len(),
        t.invalid
    );
    println!(
        "| invalid instances rejected | {} ({:.1}%) |",
        t.invalid_rejected,
        pct(t.invalid_rejected, t.invalid)
    );
    println!(
        "| completeness (valid instances accepted) | {} of {} ({:.1}%) |",
        t.valid_accepted,
        t.valid,
        pct(t.valid_accepted, t.valid)
    );
    println!(
        "| conversion time p50 / p99 / max | {:.3} / {:.3} / {:.3} ms |",
        q(0.5),
        q(0.99),
        q(1.0)
    );
    println!("| wall time | {:.1} s |", elapsed.as_secs_f64());
    if let Some(b) = &t.baseline {
        println!("\n### Baseline: llama.cpp's own converter, same run\n");
        println!("| figure | infer | llama.cpp |\n|---|---|---|");
        println!(
            "| coverage | {:.1}% | {:.1}% ({}) |",
            pct(t.accepted, t.schemas),
            pct(b.accepted, t.schemas),
            b.accepted
        );
        println!(
            "| grammars llama.cpp refused to load | {} | {} |",
            t.grammar_load_failures, b.grammar_load_failures
        );
        println!("| grammars that would hang or exhaust llama.cpp (refused by our checker, not run) | {} | {} |", t.checker_refused, b.unsafe_grammars);
        println!(
            "| soundness violations | {} of {} | {} of {} |",
            t.violations.len(),
            t.invalid,
            b.violations,
            b.invalid
        );
        println!(
            "| completeness | {:.1}% | {:.1}% |",
            pct(t.valid_accepted, t.valid),
            pct(b.valid_accepted, b.valid)
        );
    }
    println!("\n### Why schemas were rejected\n\n| reason | schemas |\n|---|---|");
    let mut reasons: Vec<(&String, &usize)> = t.reasons.iter().collect();
    reasons.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    for (r, n) in reasons {
        println!("| {} | {} |", r.replace('|', "\\|"), n);
    }
    if !t.violations.is_empty() {
        println!("\n### Soundness violations\n");
        for v in &t.violations {
            println!("- `{}`", v.replace('`', "'"));
        }
    }
    if std::env::var_os("MASKBENCH_DEBUG").is_some() {
        println!("\n### Examples of rejections\n");
        for (r, ex) in &t.examples {
            for e in ex {
                println!("- {r}: {}", truncate(e, 300));
            }
        }
    }
    if std::env::var_os("MASKBENCH_SHOW_INCOMPLETE").is_some() {
        println!(
            "\n### Valid instances rejected (first {})\n",
            t.incomplete.len()
        );
        for v in &t.incomplete {
            println!("- `{}`", v.replace('`', "'"));
        }
    }
}
