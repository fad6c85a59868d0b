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
//! way in the same run. Each instance is serialised in the key order that
//! converter's grammar requires (`llama_order.rs`; compact JSON, which its
//! optional whitespace accepts), and every grammar it emits is run in
//! llama.cpp's grammar engine in a child process with a memory limit and a
//! per-schema time limit (`baseline.rs`), so that timeouts and memory
//! exhaustion are counted rather than ending the run.
//!
//! Conversion times are single runs (each schema converted once, no warm-up)
//! over the schemas the converter accepts; `convert_speed` gives best-of-3.
//!
//! With `--json-schema-defaults`, objects are read as a validator reads them
//! (the `schema_defaults => 'json-schema'` option): properties not listed in
//! `required` may be left out, other keys may appear where
//! `additionalProperties` is absent.
//!
//! Run: `make bench-schema` (both readings; or `cargo run --release --no-default-features
//! --features engine --example maskbench -- [DATA] [MODEL] [--limit N] [--json-schema-defaults]
//! [--baseline] [--baseline-timeout SECONDS]`). `MASKBENCH_LIST=text` lists every rejection
//! whose message contains `text`; `MASKBENCH_SLOW=ms` the slow conversions.

#[path = "args.rs"]
mod args;
#[path = "baseline.rs"]
mod baseline;
#[path = "llama_order.rs"]
mod llama_order;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

use infer::engine::decode::probe::GrammarProbe;
use infer::schema::{self, canonical, ErrorKind, SchemaError};
use serde_json::Value;

use args::Args;

struct Baseline {
    worker: baseline::Worker,
    limit: Duration,
    accepted: usize,
    /// Schemas whose conversion timed out, ran out of memory or crashed.
    converter_failed: BTreeMap<String, usize>,
    /// Grammars refused by llama.cpp, timed out, out of memory, crashed.
    grammar_failed: BTreeMap<String, usize>,
    /// Grammars our checker flags (as ones that could hang, abort or exhaust
    /// llama.cpp: hidden left recursion, parse-stack explosion), by what
    /// became of them when run anyway.
    checker_flagged: BTreeMap<String, usize>,
    /// Valid instances of schemas whose grammar was not run to the end
    /// (refused, timed out, out of memory, crashed).
    valid_unjudged: usize,
    invalid_unjudged: usize,
    valid: usize,
    valid_accepted: usize,
    invalid: usize,
    violations: usize,
    /// Instances whose serialisation differs from compact JSON in the
    /// original key order.
    reordered: usize,
    /// Instances serialised several ways (`anyOf` alternatives ordering keys
    /// differently); accepted if any is.
    several_orders: usize,
    /// Valid / invalid instances accepted in some order other than the
    /// first one tried.
    valid_only_other_order: usize,
    invalid_only_other_order: usize,
    /// Instances where more orders were possible than were tried.
    orders_capped: usize,
    /// Instances that kept their own key order somewhere because the schema
    /// could not be followed there.
    order_unknown: usize,
    /// Wall time spent judging the baseline's grammars.
    time: Duration,
    /// `MASKBENCH_BASELINE_ORIGINAL_ORDER`: instances as compact JSON in
    /// their own key order, as before (for comparison only).
    original_order: bool,
    /// `MASKBENCH_SHOW_BASELINE_INCOMPLETE`: print each valid instance the
    /// baseline rejects (first order tried) on stderr.
    show_incomplete: bool,
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
    let mut argv = std::env::args().skip(1);
    if argv.next().as_deref() == Some(baseline::WORKER_FLAG) {
        let model = argv
            .next()
            .ok_or("--baseline-worker needs the model path")?;
        baseline::worker_main(model);
    }
    args::on_large_stack(1 << 30, run)
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let (data, model_path) = (args.data.clone(), args.model.clone());
    let limit = args.number("--limit", usize::MAX);
    // `--json-schema-defaults`: objects read as a validator reads them
    // (`schema_defaults => 'json-schema'`) instead of the strict default.
    let convert_options = schema::ConvertOptions {
        object_defaults: if args.has("--json-schema-defaults") {
            schema::ObjectDefaults::JsonSchema
        } else {
            schema::ObjectDefaults::Strict
        },
        ..schema::ConvertOptions::default()
    };
    println!(
        "schema defaults: {}",
        if args.has("--json-schema-defaults") {
            "json-schema"
        } else {
            "strict"
        }
    );

    let probe = GrammarProbe::new(std::path::Path::new(&model_path))?;

    let mut t = Tally::default();
    if args.has("--baseline") {
        let mut worker = baseline::Worker::start(&model_path)?;
        self_check(&mut worker)?;
        t.baseline = Some(Baseline {
            worker,
            limit: Duration::from_secs(args.number("--baseline-timeout", 10) as u64),
            accepted: 0,
            converter_failed: BTreeMap::new(),
            grammar_failed: BTreeMap::new(),
            checker_flagged: BTreeMap::new(),
            valid_unjudged: 0,
            invalid_unjudged: 0,
            valid: 0,
            valid_accepted: 0,
            invalid: 0,
            violations: 0,
            reordered: 0,
            several_orders: 0,
            valid_only_other_order: 0,
            invalid_only_other_order: 0,
            orders_capped: 0,
            order_unknown: 0,
            time: Duration::ZERO,
            original_order: std::env::var_os("MASKBENCH_BASELINE_ORIGINAL_ORDER").is_some(),
            show_incomplete: std::env::var_os("MASKBENCH_SHOW_BASELINE_INCOMPLETE").is_some(),
        });
    }
    let started = Instant::now();
    let tracing = std::env::var_os("MASKBENCH_TRACE").is_some();
    // MASKBENCH_LIST=text lists every rejection whose message contains it.
    let list_rejections: Option<String> = std::env::var("MASKBENCH_LIST").ok();
    // MASKBENCH_SLOW=ms lists the schemas whose conversion took longer.
    let slow_ms: Option<f64> = std::env::var("MASKBENCH_SLOW")
        .ok()
        .and_then(|v| v.parse().ok());
    for (line_no, line) in BufReader::new(std::fs::File::open(&data)?)
        .lines()
        .take(limit)
        .enumerate()
    {
        let line_no = line_no + 1;
        if line_no % 500 == 0 {
            eprintln!(
                "maskbench: line {line_no}, {:.0} s",
                started.elapsed().as_secs_f64()
            );
        }
        let trace = |stage: &str| {
            if tracing {
                eprintln!(
                    "maskbench: {:.3} s line {line_no}: {stage}",
                    started.elapsed().as_secs_f64()
                );
            }
        };
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
        trace("infer converts");
        let begin = Instant::now();
        let compiled = catch_unwind(AssertUnwindSafe(|| {
            schema::compile_with(schema_value, &convert_options)
        }));
        let conversion_time = begin.elapsed();
        if let Some(slow) = slow_ms {
            if conversion_time.as_secs_f64() * 1000.0 > slow {
                eprintln!(
                    "maskbench: slow conversion, {:.1} ms: {}",
                    conversion_time.as_secs_f64() * 1000.0,
                    entry.get("name").and_then(Value::as_str).unwrap_or("?")
                );
            }
        }
        if let Some(b) = &mut t.baseline {
            judge_baseline(b, schema_value, &tests, &trace)?;
        }
        let compiled = match compiled {
            Err(_) => {
                t.crashes += 1;
                continue;
            }
            Ok(Err(e)) => {
                if let Some(wanted) = &list_rejections {
                    let message = e.to_string();
                    if message.contains(wanted.as_str()) {
                        let valid = tests
                            .iter()
                            .filter(|t| t.get("valid").and_then(Value::as_bool) == Some(true))
                            .count();
                        eprintln!(
                            "maskbench: rejected line {line_no} {} ({valid} valid instances): {message}",
                            entry.get("name").and_then(Value::as_str).unwrap_or("?")
                        );
                    }
                }
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
        t.times.push(conversion_time);
        trace("infer's grammar is checked, loaded and run");
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

/// llama.cpp's converter on one schema, its grammar judged like ours (in
/// the worker process), each instance serialised as that grammar orders it.
fn judge_baseline(
    b: &mut Baseline,
    schema: &Value,
    tests: &[Value],
    trace: &dyn Fn(&str),
) -> Result<(), Box<dyn std::error::Error>> {
    trace("llama.cpp converts (worker)");
    let begin = Instant::now();
    let converted = b.worker.convert(&schema.to_string(), b.limit)?;
    b.time += begin.elapsed();
    let gbnf = match converted {
        baseline::Conversion::Grammar(gbnf) => gbnf,
        baseline::Conversion::Rejected => return Ok(()),
        baseline::Conversion::Failed(failure) => {
            *b.converter_failed.entry(failure_name(failure)).or_default() += 1;
            return Ok(());
        }
    };
    b.accepted += 1;
    trace("our checker reads llama.cpp's grammar");
    let flagged = infer::grammar::check::check(&gbnf).is_err();
    trace("instances are ordered for llama.cpp's grammar");
    // Every serialisation of every instance, in one request.
    let mut instances: Vec<(bool, std::ops::Range<usize>)> = Vec::new();
    let mut texts: Vec<String> = Vec::new();
    for test in tests {
        let (Some(instance), Some(valid)) =
            (test.get("data"), test.get("valid").and_then(Value::as_bool))
        else {
            continue;
        };
        let ordered = if b.original_order {
            llama_order::Ordered {
                texts: vec![instance.to_string()],
                fallback: false,
                capped: false,
            }
        } else {
            llama_order::order(schema, instance)
        };
        b.reordered += usize::from(ordered.texts.first() != Some(&instance.to_string()));
        b.several_orders += usize::from(ordered.texts.len() > 1);
        b.orders_capped += usize::from(ordered.capped);
        b.order_unknown += usize::from(ordered.fallback);
        let from = texts.len();
        texts.extend(ordered.texts);
        instances.push((valid, from..texts.len()));
    }
    trace("llama.cpp runs its grammar (worker)");
    let begin = Instant::now();
    let outcome = b.worker.judge(&gbnf, &texts, b.limit)?;
    b.time += begin.elapsed();
    let what = match outcome {
        baseline::Outcome::Judged(accepted) => {
            for (valid, range) in instances {
                let first = accepted.get(range.start).copied().unwrap_or(false);
                let ok = accepted[range.clone()].iter().any(|a| *a);
                if ok && !first {
                    if valid {
                        b.valid_only_other_order += 1;
                    } else {
                        b.invalid_only_other_order += 1;
                    }
                }
                if valid && !ok && b.show_incomplete {
                    eprintln!(
                        "baseline rejects valid: {}",
                        truncate(&texts[range.start], 300)
                    );
                }
                if valid {
                    b.valid += 1;
                    b.valid_accepted += usize::from(ok);
                } else {
                    b.invalid += 1;
                    b.violations += usize::from(ok);
                }
            }
            "run to the end".to_owned()
        }
        unjudged => {
            for (valid, _) in instances {
                if valid {
                    b.valid_unjudged += 1;
                } else {
                    b.invalid_unjudged += 1;
                }
            }
            let what = match unjudged {
                baseline::Outcome::Failed(failure) => failure_name(failure),
                _ => "refused by llama.cpp".to_owned(),
            };
            *b.grammar_failed.entry(what.clone()).or_default() += 1;
            what
        }
    };
    if flagged {
        *b.checker_flagged.entry(what).or_default() += 1;
    }
    Ok(())
}

fn failure_name(failure: baseline::Failure) -> String {
    match failure {
        baseline::Failure::TimedOut => "timed out".to_owned(),
        baseline::Failure::OutOfMemory => "out of memory".to_owned(),
        baseline::Failure::Crashed(how) => format!("crashed ({how})"),
    }
}

/// Before the run: llama.cpp's grammar for a schema with required, optional
/// and additional keys, nested and under `allOf`, must accept an instance
/// given in another key order once serialised by `llama_order`, and reject
/// it as given.
fn self_check(worker: &mut baseline::Worker) -> Result<(), Box<dyn std::error::Error>> {
    let schema = serde_json::json!({
        "type": "object",
        "properties": {
            "a": {"type": "integer"},
            "b": {"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "string"}}, "required": ["y"]},
            "c": {"allOf": [
                {"type": "object", "properties": {"p": {"type": "integer"}}},
                {"anyOf": [{"type": "object", "properties": {"q": {"type": "integer"}}}]}
            ]},
            "d": {"type": "string"}
        },
        "required": ["d", "b"],
        "additionalProperties": {"type": "integer"}
    });
    let instance = serde_json::json!({"z": 5, "c": {"q": 2, "p": 1}, "b": {"x": 1, "y": "s"}, "a": 3, "d": "t"});
    let baseline::Conversion::Grammar(gbnf) =
        worker.convert(&schema.to_string(), Duration::from_secs(60))?
    else {
        return Err("self-check: llama.cpp's converter failed on a small schema".into());
    };
    let ordered = llama_order::order(&schema, &instance);
    let expected = r#"{"b":{"y":"s","x":1},"d":"t","a":3,"c":{"p":1,"q":2},"z":5}"#;
    if ordered.texts != [expected] {
        return Err(format!("llama_order self-check: got {:?}", ordered.texts).into());
    }
    let texts = [expected.to_owned(), instance.to_string()];
    match worker.judge(&gbnf, &texts, Duration::from_secs(60))? {
        baseline::Outcome::Judged(a) if a == [true, false] => Ok(()),
        baseline::Outcome::Judged(a) => Err(format!(
            "self-check: llama.cpp's grammar judged {texts:?} as {a:?}, expected [true, false]\n{gbnf}"
        )
        .into()),
        _ => Err("self-check: the baseline worker could not run a small grammar".into()),
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

fn report_baseline(t: &Tally, b: &Baseline) {
    let count = |m: &BTreeMap<String, usize>, key: &str| m.get(key).copied().unwrap_or(0);
    let crashes = |m: &BTreeMap<String, usize>| -> (usize, String) {
        let kinds: Vec<String> = m
            .iter()
            .filter_map(|(k, n)| k.strip_prefix("crashed ").map(|how| format!("{n} {how}")))
            .collect();
        let total = m
            .iter()
            .filter(|(k, _)| k.starts_with("crashed"))
            .map(|(_, n)| n)
            .sum();
        let detail = if kinds.is_empty() {
            String::new()
        } else {
            format!(" {}", kinds.join(", "))
        };
        (total, detail)
    };
    let unrun: usize = b.grammar_failed.values().sum();
    let limit = b.limit.as_secs();
    let memory = baseline::MEMORY_LIMIT >> 30;
    println!("\n### Baseline: llama.cpp's own converter, same run\n");
    println!(
        "llama.cpp's converter and grammar engine run in a worker process limited to {memory} GiB \
         of address space and {limit} s per request; instances are serialised in the key order its \
         grammar requires.\n"
    );
    println!("| figure | infer | llama.cpp |\n|---|---|---|");
    println!(
        "| coverage (schemas accepted by the converter) | {} ({:.1}%) | {} ({:.1}%) |",
        t.accepted,
        pct(t.accepted, t.schemas),
        b.accepted,
        pct(b.accepted, t.schemas)
    );
    let (converter_crashes, converter_crash_kinds) = crashes(&b.converter_failed);
    println!(
        "| conversions that timed out / ran out of memory / crashed | 0 / 0 / {} | {} / {} / {}{} |",
        t.crashes,
        count(&b.converter_failed, "timed out"),
        count(&b.converter_failed, "out of memory"),
        converter_crashes,
        converter_crash_kinds
    );
    println!(
        "| grammars llama.cpp refused to load | {} | {} |",
        t.grammar_load_failures,
        count(&b.grammar_failed, "refused by llama.cpp")
    );
    let (grammar_crashes, grammar_crash_kinds) = crashes(&b.grammar_failed);
    println!(
        "| grammars that timed out (> {limit} s) / ran out of memory (> {memory} GiB) / crashed | 0 / 0 / 0 | {} / {} / {}{} |",
        count(&b.grammar_failed, "timed out"),
        count(&b.grammar_failed, "out of memory"),
        grammar_crashes,
        grammar_crash_kinds
    );
    let flagged: usize = b.checker_flagged.values().sum();
    let outcomes: Vec<String> = b
        .checker_flagged
        .iter()
        .map(|(k, n)| format!("{n} {k}"))
        .collect();
    println!(
        "| grammars our GBNF checker flags (still run) | {} | {}{} |",
        t.checker_refused,
        flagged,
        if outcomes.is_empty() {
            String::new()
        } else {
            format!(": {}", outcomes.join(", "))
        }
    );
    println!(
        "| soundness violations (invalid instances accepted) | {} of {} | {} of {} |",
        t.violations.len(),
        t.invalid,
        b.violations,
        b.invalid
    );
    println!(
        "| completeness (valid instances accepted) | {} of {} ({:.1}%) | {} of {} ({:.1}%) |",
        t.valid_accepted,
        t.valid,
        pct(t.valid_accepted, t.valid),
        b.valid_accepted,
        b.valid,
        pct(b.valid_accepted, b.valid)
    );
    println!(
        "| instances of accepted schemas not judged (grammar refused, timed out, out of memory, crashed) | 0 | {} valid, {} invalid ({} grammars) |",
        b.valid_unjudged, b.invalid_unjudged, unrun
    );
    if b.original_order {
        println!("\nMASKBENCH_BASELINE_ORIGINAL_ORDER: baseline instances were NOT reordered.");
    }
    println!(
        "\nBaseline instance serialisation: {} reordered from their original key order, {} tried in \
         several orders (`anyOf`; accepted if any is: {} valid and {} invalid were accepted only in \
         an order other than the first), {} with more orders than the {} tried, {} kept \
         their own order somewhere (schema not followable there). Time in the baseline worker \
         (conversion and grammar runs): {:.1} s.",
        b.reordered,
        b.several_orders,
        b.valid_only_other_order,
        b.invalid_only_other_order,
        b.orders_capped,
        llama_order::MAX_CANDIDATES,
        b.order_unknown,
        b.time.as_secs_f64()
    );
}

fn report(t: &Tally, elapsed: Duration, data: &str) {
    let mut times = t.times.clone();
    times.sort();
    let q = |p: f64| {
        times
            .get(((times.len() as f64 - 1.0) * p).round() as usize)
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
        "| conversion time, single run, accepted schemas: p50 / p99 / max | {:.3} / {:.3} / {:.3} ms |",
        q(0.5),
        q(0.99),
        q(1.0)
    );
    println!("| wall time | {:.1} s |", elapsed.as_secs_f64());
    if let Some(b) = &t.baseline {
        report_baseline(t, b);
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
