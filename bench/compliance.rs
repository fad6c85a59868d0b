//! Compliance with a real model: generate with SmolLM2 at temperature 1.0
//! under several seeds for a corpus of schemas (hand-written ones covering
//! every supported keyword, plus a deterministic sample of the accepted
//! schemas of maskbench-visible.jsonl), and validate every output that
//! finished with 'eos' with an independent JSON Schema validator (the
//! `jsonschema` crate, formats asserted).
//!
//! Run: `make bench-compliance` (or `cargo run --release --no-default-features --features engine
//! --example compliance -- [DATA] [MODEL] [--sample N] [--seeds N] [--fast-forward 0|1]`).
//! What the schema forces is appended without sampling as the extension does
//! by default (`--fast-forward 0`: every token sampled); the table gives the
//! share of forced tokens. With
//! `--differential 1` each schema is run greedily twice, fast-forward off
//! and on, and the two outputs compared: same text, both valid, same shape,
//! and where the two token sequences part (at a forced token: the model's
//! own split of a forced run differs from the tokenizer's; at a sampled
//! token after the same tokens: what a batch's last bits change, or a bug);
//! `--one-by-one 1` evaluates the forced tokens singly, as sampled ones.

#[path = "args.rs"]
mod args;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::time::Instant;

use infer::backend::params::Constraint;
use infer::backend::Backend;
use infer::engine::{FinishReason, GenerateParams, LoadParams, Message, Model, Role};
use infer::grammar::CheckedGbnf;
use infer::schema;
use serde_json::{json, Value};

use args::Args;

fn hand_written() -> Vec<(String, Value)> {
    let list = vec![
        (
            "spec extraction",
            json!({"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}, "city": {"type": "string"}}}),
        ),
        ("enum", json!({"enum": ["red", "green", "blue"]})),
        ("const", json!({"const": {"version": 2}})),
        ("type list", json!({"type": ["integer", "null"]})),
        ("boolean schema", json!(true)),
        (
            "integer range",
            json!({"type": "integer", "minimum": 18, "maximum": 65}),
        ),
        (
            "exclusive number range",
            json!({"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1}),
        ),
        (
            "negative range",
            json!({"type": "number", "minimum": -90, "maximum": 90}),
        ),
        (
            "string lengths",
            json!({"type": "string", "minLength": 3, "maxLength": 8}),
        ),
        (
            "pattern",
            json!({"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"}),
        ),
        (
            "unanchored pattern",
            json!({"type": "string", "pattern": "@"}),
        ),
        ("date", json!({"type": "string", "format": "date"})),
        ("time", json!({"type": "string", "format": "time"})),
        (
            "date-time",
            json!({"type": "string", "format": "date-time"}),
        ),
        ("duration", json!({"type": "string", "format": "duration"})),
        ("uuid", json!({"type": "string", "format": "uuid"})),
        ("email", json!({"type": "string", "format": "email"})),
        ("hostname", json!({"type": "string", "format": "hostname"})),
        ("ipv4", json!({"type": "string", "format": "ipv4"})),
        ("ipv6", json!({"type": "string", "format": "ipv6"})),
        ("uri", json!({"type": "string", "format": "uri"})),
        (
            "optional properties",
            json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}, "c": {"type": "boolean"}}, "required": ["b"]}),
        ),
        (
            "additionalProperties",
            json!({"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"], "additionalProperties": {"type": "string", "maxLength": 5}}),
        ),
        (
            "property counts",
            json!({"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}, "z": {"type": "integer"}}, "required": [], "minProperties": 1, "maxProperties": 2}),
        ),
        (
            "array counts",
            json!({"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 9}, "minItems": 2, "maxItems": 4}),
        ),
        (
            "prefixItems",
            json!({"type": "array", "prefixItems": [{"type": "string"}, {"type": "number"}], "items": false, "minItems": 2}),
        ),
        (
            "anyOf",
            json!({"anyOf": [{"type": "string", "maxLength": 4}, {"type": "integer"}]}),
        ),
        (
            "oneOf",
            json!({"oneOf": [
                {"type": "object", "properties": {"kind": {"const": "circle"}, "r": {"type": "number", "minimum": 0}}},
                {"type": "object", "properties": {"kind": {"const": "square"}, "side": {"type": "number", "minimum": 0}}}
            ]}),
        ),
        (
            "allOf",
            json!({"allOf": [
                {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"], "additionalProperties": true},
                {"properties": {"a": {"maximum": 3}, "b": {"type": "string"}}, "required": ["b"], "additionalProperties": true}
            ]}),
        ),
        (
            "recursive $ref",
            json!({"$defs": {"tree": {"type": "object", "properties": {"value": {"type": "integer"}, "children": {"type": "array", "items": {"$ref": "#/$defs/tree"}, "maxItems": 2}}, "required": ["value"]}}, "$ref": "#/$defs/tree"}),
        ),
        (
            "definitions $ref",
            json!({"definitions": {"point": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}}}}, "type": "array", "items": {"$ref": "#/definitions/point"}, "maxItems": 3}),
        ),
        // String constraints combined, key constraints, `not`, conditions and dependencies.
        (
            "pattern with maxLength",
            json!({"type": "string", "pattern": "^[a-z]+$", "maxLength": 6}),
        ),
        (
            "format with lengths",
            json!({"type": "string", "format": "email", "maxLength": 20}),
        ),
        (
            "two patterns",
            json!({"allOf": [{"type": "string", "pattern": "^[a-z0-9]+$"}, {"pattern": "[0-9]"}]}),
        ),
        (
            "patternProperties",
            json!({"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"],
                   "patternProperties": {"^x-": {"type": "string"}}, "additionalProperties": {"type": "boolean"}}),
        ),
        (
            "propertyNames",
            json!({"type": "object", "propertyNames": {"pattern": "^[a-z]{1,8}$"}, "additionalProperties": {"type": "integer"}, "minProperties": 1}),
        ),
        (
            "not string constraints",
            json!({"type": "string", "maxLength": 8, "not": {"enum": ["admin", "root"]}}),
        ),
        (
            "not numeric range",
            json!({"type": "integer", "minimum": 1024, "maximum": 65535, "not": {"enum": [6379, 6380]}}),
        ),
        (
            "not type",
            json!({"not": {"type": ["object", "array", "string"]}}),
        ),
        (
            "if/then/else",
            json!({"type": "object", "properties": {"country": {"enum": ["US", "NL"]}, "zip": {"type": "string"}}, "required": ["country", "zip"],
                   "if": {"properties": {"country": {"const": "US"}}}, "then": {"properties": {"zip": {"pattern": "^[0-9]{5}$"}}},
                   "else": {"properties": {"zip": {"pattern": "^[0-9]{4} ?[A-Z]{2}$"}}}}),
        ),
        (
            "dependentRequired",
            json!({"type": "object", "properties": {"card": {"type": "string", "maxLength": 16}, "cvc": {"type": "string", "maxLength": 4}},
                   "required": [], "dependentRequired": {"card": ["cvc"]}}),
        ),
        (
            "dependentSchemas",
            json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": [],
                   "dependentSchemas": {"a": {"properties": {"b": {"minimum": 10}}}}}),
        ),
        (
            "draft-4 dependencies and additionalItems",
            json!({"$schema": "http://json-schema.org/draft-04/schema#", "type": "object",
                   "properties": {"p": {"type": "array", "items": [{"type": "string"}], "additionalItems": {"type": "integer"}, "maxItems": 4},
                                  "q": {"type": "boolean"}},
                   "required": ["p"], "dependencies": {"q": ["p"]}}),
        ),
        (
            "uniqueItems over an enum",
            json!({"type": "array", "items": {"enum": ["red", "green", "blue"]}, "uniqueItems": true, "minItems": 1}),
        ),
        (
            "multipleOf on prices and quantities",
            json!({"type": "object", "properties": {"price": {"type": "number", "multipleOf": 0.01, "minimum": 0},
                                                     "pack": {"type": "integer", "multipleOf": 6, "minimum": 6, "maximum": 96},
                                                     "step": {"type": "number", "multipleOf": 2.5},
                                                     "odd": {"type": "integer", "not": {"multipleOf": 2}}},
                   "required": ["price", "pack", "step", "odd"]}),
        ),
        (
            "contains with counts",
            json!({"type": "object", "properties": {"scores": {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 100},
                                                                "contains": {"minimum": 90}, "minContains": 1, "maxContains": 2, "maxItems": 6},
                                                     "tags": {"type": "array", "items": {"type": "string"}, "contains": {"const": "urgent"}}},
                   "required": ["scores", "tags"]}),
        ),
        (
            "lookaheads, anchors in groups and a long maxLength",
            json!({"type": "object", "properties": {"handle": {"type": "string", "pattern": "^(?!@@)[@a-z_]{2,12}$"},
                                                     "note": {"type": "string", "pattern": "^((?!TODO).)*$", "maxLength": 40},
                                                     "module": {"type": "string", "pattern": "(^Hpt_|^Int_)[a-z]{1,8}$"},
                                                     "site": {"type": "string", "format": "uri", "maxLength": 255}},
                   "required": ["handle", "note", "module", "site"]}),
        ),
        (
            "a recursive definition merged with its siblings",
            json!({"definitions": {"node": {"type": "object", "properties": {
                       "name": {"type": "string", "maxLength": 12},
                       "kids": {"type": "array", "maxItems": 2, "items": {"anyOf": [{"$ref": "#/definitions/node"}], "type": "object"}}},
                   "required": ["name"], "patternProperties": {"^k": {"type": "array", "maxItems": 1, "items": {"required": ["name"]}}}}},
                   "$ref": "#/definitions/node"}),
        ),
        (
            "overlapping oneOf",
            json!({"oneOf": [{"type": "integer", "minimum": 0}, {"type": "integer", "maximum": 10}]}),
        ),
        (
            "minProperties beyond the declared properties",
            json!({"type": "object", "minProperties": 2, "maxProperties": 3, "additionalProperties": {"type": "integer"}}),
        ),
        (
            "byte",
            json!({"type": "string", "format": "byte", "maxLength": 24}),
        ),
        (
            "uri-reference",
            json!({"type": "string", "format": "uri-reference"}),
        ),
        ("iri", json!({"type": "string", "format": "iri"})),
        (
            "json-pointer",
            json!({"type": "string", "format": "json-pointer"}),
        ),
        (
            "relative-json-pointer",
            json!({"type": "string", "format": "relative-json-pointer"}),
        ),
        (
            "nested object",
            json!({"type": "object", "properties": {"user": {"type": "object", "properties": {"email": {"type": "string", "format": "email"}, "tags": {"type": "array", "items": {"type": "string", "maxLength": 10}, "maxItems": 3}}}}}),
        ),
    ];
    list.into_iter().map(|(n, s)| (n.to_owned(), s)).collect()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let (data, model_path) = (args.data.clone(), args.model.clone());
    let flag = |name: &str, default: usize| args.number(name, default);
    let sample = flag("--sample", 20);
    let seeds = flag("--seeds", 2) as u32;
    let max_tokens = flag("--max-tokens", 160) as u32;
    let fast_forward = flag(
        "--fast-forward",
        usize::from(infer::backend::params::DEFAULT_FAST_FORWARD),
    ) == 1;
    if flag("--differential", 0) == 1 {
        // `--one-by-one 1`: forced tokens evaluated singly (the same kernels
        // as sampled ones), to tell fast-forward's decisions from the last
        // bits a batch changes.
        let one_by_one = flag("--one-by-one", 0) == 1;
        return differential(
            &data,
            &model_path,
            flag("--sample", 20),
            max_tokens,
            one_by_one,
        );
    }

    let corpus = corpus(&data, sample)?;
    let model = Model::load(Path::new(&model_path), &LoadParams::default())?;
    let started = Instant::now();
    let (mut runs, mut eos, mut valid, mut length) = (0, 0, 0, 0);
    let (mut generated, mut forced) = (0u64, 0u64);
    let mut invalid = Vec::new();
    for (name, schema_value) in &corpus {
        let (gbnf, validator, prompt) = prepare(name, schema_value)?;
        for seed in 1..=seeds {
            let params = GenerateParams {
                max_tokens,
                n_ctx: 2048,
                temperature: 1.0,
                seed,
                constraint: Some(Constraint::Grammar(gbnf.clone())),
                fast_forward,
                ..GenerateParams::default()
            };
            let run_started = Instant::now();
            let out = model.chat(&prompt, &params)?;
            runs += 1;
            generated += u64::from(out.tokens_generated);
            forced += u64::from(out.timings.forced_tokens);
            eprintln!(
                "{name} seed {seed}: {} tokens, {:?}, {:.1} s",
                out.tokens_generated,
                out.finish,
                run_started.elapsed().as_secs_f64()
            );
            match out.finish {
                FinishReason::Eos => {
                    eos += 1;
                    match serde_json::from_str::<Value>(&out.text) {
                        Ok(v) if validator.is_valid(&v) => valid += 1,
                        _ => invalid.push(format!("{name} (seed {seed}): {}", out.text)),
                    }
                }
                _ => length += 1,
            }
        }
    }
    println!("## Compliance with SmolLM2-135M at temperature 1.0\n");
    println!("| figure | value |\n|---|---|");
    println!(
        "| schemas | {} ({} hand-written, {} sampled from the data file) |",
        corpus.len(),
        hand_written().len(),
        corpus.len() - hand_written().len()
    );
    println!("| runs (schemas × seeds) | {runs} |");
    println!(
        "| fast-forward | {} ({forced} of {generated} generated tokens forced, {:.1}%) |",
        if fast_forward { "on" } else { "off" },
        100.0 * forced as f64 / generated.max(1) as f64
    );
    println!("| finished with 'eos' | {eos} |");
    println!("| cut by maxTokens {max_tokens} ('length') | {length} |");
    println!(
        "| 'eos' outputs valid per the `jsonschema` crate | {valid} of {eos} ({:.1}%) |",
        100.0 * valid as f64 / eos.max(1) as f64
    );
    println!("| wall time | {:.1} s |", started.elapsed().as_secs_f64());
    for i in &invalid {
        println!("- invalid: `{i}`");
    }
    Ok(())
}

/// The hand-written schemas and `sample` from the data file.
fn corpus(data: &str, sample: usize) -> Result<Vec<(String, Value)>, Box<dyn std::error::Error>> {
    let mut corpus = hand_written();
    corpus.extend(sample_from(data, sample)?);
    Ok(corpus)
}

/// What a run on the schema `name` needs: its grammar, its validator
/// (formats asserted) and the prompt asking for an example.
fn prepare(
    name: &str,
    schema_value: &Value,
) -> Result<(CheckedGbnf, jsonschema::Validator, [Message; 2]), Box<dyn std::error::Error>> {
    let gbnf = schema::compile(schema_value)?.gbnf;
    let validator = jsonschema::options()
        .should_validate_formats(true)
        .build(schema_value)?;
    let prompt = [
        Message::new(Role::System, "Output one JSON value only."),
        Message::new(Role::User, format!("Give an example of a {name}.")),
    ];
    Ok((gbnf, validator, prompt))
}

/// Every k-th schema the converter accepts, `n` in all.
fn sample_from(path: &str, n: usize) -> Result<Vec<(String, Value)>, Box<dyn std::error::Error>> {
    let mut accepted = Vec::new();
    for line in BufReader::new(std::fs::File::open(path)?).lines() {
        let entry: Value = serde_json::from_str(&line?)?;
        let Some(s) = entry.get("schema") else {
            continue;
        };
        if schema::to_gbnf(s).is_ok() && jsonschema::options().build(s).is_ok() {
            let name = entry
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("schema")
                .to_owned();
            accepted.push((name, s.clone()));
        }
    }
    let step = (accepted.len() / n.max(1)).max(1);
    Ok(accepted.into_iter().step_by(step).take(n).collect())
}

/// The shape of a JSON value: its type, and for an object its keys in order
/// (and their values' shapes), for an array its items' shapes.
fn shape(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(m.iter().map(|(k, v)| (k.clone(), shape(v))).collect()),
        Value::Array(a) => Value::Array(a.iter().map(shape).collect()),
        Value::String(_) => json!("string"),
        Value::Number(_) => json!("number"),
        Value::Bool(_) => json!("bool"),
        Value::Null => json!("null"),
    }
}

/// Fast-forward off against on, greedy, on every schema of the corpus.
fn differential(
    data: &str,
    model_path: &str,
    sample: usize,
    max_tokens: u32,
    forced_one_by_one: bool,
) -> Result<(), Box<dyn std::error::Error>> {
    let corpus = corpus(data, sample)?;
    let model = Model::load(Path::new(model_path), &LoadParams::default())?;
    let (mut runs, mut same_text, mut both_eos, mut both_valid, mut same_shape) = (0, 0, 0, 0, 0);
    let (mut forced, mut generated) = (0u64, 0u64);
    let (mut followed, mut parted_at_forced) = (0, 0);
    let mut parted_at_sampled = Vec::new();
    let mut differing = Vec::new();
    for (name, schema_value) in &corpus {
        let (gbnf, validator, prompt) = prepare(name, schema_value)?;
        let run = |fast_forward| {
            model.chat(
                &prompt,
                &GenerateParams {
                    max_tokens,
                    n_ctx: 2048,
                    constraint: Some(Constraint::Grammar(gbnf.clone())),
                    fast_forward,
                    forced_one_by_one,
                    cache_prompt: false,
                    ..GenerateParams::default()
                },
            )
        };
        let (off, on) = (run(false)?, run(true)?);
        runs += 1;
        // Where the two token sequences first part, and whether fast-forward
        // forced the token there: the model's own greedy choice did not
        // follow the forced text's canonical split. Parting at a sampled
        // token after an identical prefix is what fast-forward must never
        // cause (the same tokens in the context, the same logits).
        match off.parts_from(&on) {
            None => followed += 1,
            Some((_, true)) => parted_at_forced += 1,
            Some((at, false)) => {
                followed += 1;
                parted_at_sampled.push(format!(
                    "{name}: token {at} of off `{}` / on `{}`",
                    off.text, on.text
                ));
            }
        }
        generated += u64::from(on.tokens_generated);
        forced += u64::from(on.timings.forced_tokens);
        if off.text == on.text {
            same_text += 1;
        } else {
            differing.push(format!("{name}: off `{}` / on `{}`", off.text, on.text));
        }
        if off.finish == FinishReason::Eos && on.finish == FinishReason::Eos {
            both_eos += 1;
            let parsed = (
                serde_json::from_str::<Value>(&off.text),
                serde_json::from_str::<Value>(&on.text),
            );
            if let (Ok(a), Ok(b)) = parsed {
                if validator.is_valid(&a) && validator.is_valid(&b) {
                    both_valid += 1;
                }
                if shape(&a) == shape(&b) {
                    same_shape += 1;
                }
            }
        }
    }
    println!("## Fast-forward off against on, greedy\n");
    println!("| figure | value |\n|---|---|");
    println!("| schemas | {runs} |");
    println!(
        "| tokens forced with it on | {forced} of {generated} ({:.1}%) |",
        100.0 * forced as f64 / generated.max(1) as f64
    );
    println!("| same text | {same_text} of {runs} |");
    println!(
        "| the greedy run without it took the canonical split of every forced run | {followed} of {runs} (the others part at a forced token: {parted_at_forced}) |"
    );
    println!(
        "| … of those, same text | {} of {followed} (parted at a sampled token after the same tokens: {}) |",
        followed - parted_at_sampled.len(),
        parted_at_sampled.len()
    );
    println!("| both ended 'eos' | {both_eos} |");
    println!("| … both valid per the `jsonschema` crate | {both_valid} of {both_eos} |");
    println!("| … same shape (types, keys in order, items) | {same_shape} of {both_eos} |");
    for d in &differing {
        println!("- differs: {d}");
    }
    for d in &parted_at_sampled {
        println!("- parted at a sampled token: {d}");
    }
    Ok(())
}
