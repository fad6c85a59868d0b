//! The differential test of the converter's soundness: random schemas and
//! instances near them, judged by two engines independent of the converter.
//!
//! - validity: the `jsonschema` crate, reading the `$schema` the generator
//!   writes (draft 7 or 2020-12), formats checked;
//! - what the grammar accepts: llama.cpp's grammar engine (llama-cpp-2's
//!   grammar sampler over the default model's vocabulary), token by token,
//!   then end-of-generation.
//!
//! An instance the grammar accepts and the validator refuses is a soundness
//! violation: it is minimised (schema and instance) and reported. An
//! instance the validator accepts and the grammar refuses is counted as
//! incompleteness. Both object readings are judged: the strict defaults and
//! JSON Schema's own (`ObjectDefaults::JsonSchema`).
//!
//! Used by `tests/soundness.rs` (a fixed seed, in `make test`) and by the
//! cargo-fuzz target `fuzz/fuzz_targets/differential.rs` (long runs).
#![allow(dead_code)] // each user takes part of it

pub mod gen;

use std::panic::{catch_unwind, AssertUnwindSafe};

use infer::engine::decode::probe::GrammarProbe;
use infer::schema::{self, canonical, Compiled, ConvertOptions, ObjectDefaults};
use serde_json::Value;

use gen::{at_mut, paths, Gen, Source, Step};

/// The two readings of an object schema.
pub const READINGS: [ObjectDefaults; 2] = [ObjectDefaults::Strict, ObjectDefaults::JsonSchema];

pub fn options(reading: ObjectDefaults) -> ConvertOptions {
    ConvertOptions {
        object_defaults: reading,
        ..ConvertOptions::default()
    }
}

/// A schema with its instances.
pub struct Case {
    pub schema: Value,
    pub instances: Vec<Value>,
}

/// A schema and `per_schema` instances: values built to meet it, the same
/// changed in one or two places, and arbitrary values.
pub fn case<S: Source>(g: &mut Gen<S>, per_schema: usize) -> Case {
    let schema = g.schema();
    let mut instances: Vec<Value> = Vec::with_capacity(per_schema);
    let mut tries = 0;
    while instances.len() < per_schema && tries < per_schema * 3 {
        tries += 1;
        let v = match tries % 4 {
            0 => g.random_value(0),
            1 | 2 => g.instance(&schema, 0),
            _ => {
                let base = g.instance(&schema, 0);
                g.mutate(&base)
            }
        };
        if !instances.contains(&v) {
            instances.push(v);
        }
    }
    Case { schema, instances }
}

/// What a run found.
#[derive(Debug, Default)]
pub struct Tally {
    pub schemas: usize,
    /// Schemas the validator itself cannot read (skipped).
    pub unreadable: usize,
    /// Per reading: schemas converted, and schemas the converter refused.
    pub converted: [usize; 2],
    pub refused: [usize; 2],
    /// Schema/instance pairs generated (of schemas the validator reads).
    pub pairs: usize,
    /// Judgements made: a pair in a reading whose conversion succeeded.
    pub judged: usize,
    pub valid: usize,
    pub valid_accepted: usize,
    pub invalid: usize,
    pub violations: Vec<Violation>,
    /// Why the converter refused schemas (the error's first words).
    pub refusals: std::collections::BTreeMap<String, usize>,
}

impl Tally {
    pub fn summary(&self) -> String {
        let pct = |a: usize, b: usize| {
            if b == 0 {
                0.0
            } else {
                100.0 * a as f64 / b as f64
            }
        };
        format!(
            "{} schemas ({} unreadable by the validator); converted strict {} / json-schema {} \
             (refused {} / {}); {} schema/instance pairs, {} judgements: {} valid ({} accepted, \
             completeness {:.1}%), {} invalid; {} soundness violations",
            self.schemas,
            self.unreadable,
            self.converted[0],
            self.converted[1],
            self.refused[0],
            self.refused[1],
            self.pairs,
            self.judged,
            self.valid,
            self.valid_accepted,
            pct(self.valid_accepted, self.valid),
            self.invalid,
            self.violations.len()
        )
    }
}

/// A failure: what the converter did wrong, minimised.
#[derive(Debug, Clone)]
pub struct Violation {
    pub kind: &'static str,
    pub reading: ObjectDefaults,
    pub schema: Value,
    pub instance: Value,
    pub detail: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({:?} reading): {}\n  schema:   {}\n  instance: {}",
            self.kind, self.reading, self.detail, self.schema, self.instance
        )
    }
}

fn validator(schema: &Value) -> Option<jsonschema::Validator> {
    jsonschema::options()
        .should_validate_formats(true)
        .build(schema)
        .ok()
}

/// The texts an instance is tried as: in the grammar's key order and
/// layout, and in its own key order.
fn texts(v: &Value, compiled: &Compiled, o: &ConvertOptions) -> Vec<String> {
    let mut out = vec![canonical::instance_text_in(
        v,
        &compiled.root,
        &compiled.defs,
        &o.layout,
    )];
    let own = canonical::value_text_in(v, &o.layout);
    if own != out[0] {
        out.push(own);
    }
    out
}

/// The conversion, a panic turned into an error.
fn convert(schema: &Value, o: &ConvertOptions) -> Result<Result<Compiled, String>, String> {
    catch_unwind(AssertUnwindSafe(|| schema::compile_with(schema, o)))
        .map(|r| r.map_err(|e| e.to_string()))
        .map_err(|p| {
            p.downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_else(|| "a panic".to_owned())
        })
}

/// Judge one case in both readings, adding to `tally`.
pub fn judge(probe: &GrammarProbe, case: &Case, tally: &mut Tally) {
    tally.schemas += 1;
    let Some(valid_by) = validator(&case.schema) else {
        tally.unreadable += 1;
        return;
    };
    let labels: Vec<bool> = case
        .instances
        .iter()
        .map(|v| valid_by.is_valid(v))
        .collect();
    tally.pairs += case.instances.len();
    for (r, reading) in READINGS.into_iter().enumerate() {
        let o = options(reading);
        let compiled = match convert(&case.schema, &o) {
            Ok(Ok(c)) => c,
            Ok(Err(reason)) => {
                tally.refused[r] += 1;
                let words: String = reason
                    .split(" at ")
                    .next()
                    .unwrap_or("")
                    .chars()
                    .take(70)
                    .collect();
                *tally.refusals.entry(words).or_default() += 1;
                continue;
            }
            Err(panic) => {
                tally.violations.push(Violation {
                    kind: "the converter panicked",
                    reading,
                    schema: case.schema.clone(),
                    instance: Value::Null,
                    detail: panic,
                });
                continue;
            }
        };
        tally.converted[r] += 1;
        let mut grammar = match probe.load(&compiled.gbnf) {
            Ok(g) => g,
            Err(e) => {
                tally.violations.push(Violation {
                    kind: "llama.cpp refused the grammar",
                    reading,
                    schema: case.schema.clone(),
                    instance: Value::Null,
                    detail: e,
                });
                continue;
            }
        };
        for (v, &valid) in case.instances.iter().zip(&labels) {
            tally.judged += 1;
            let accepted = texts(v, &compiled, &o)
                .iter()
                .find(|t| grammar.accepts(t))
                .cloned();
            if valid {
                tally.valid += 1;
                tally.valid_accepted += usize::from(accepted.is_some());
            } else {
                tally.invalid += 1;
                if accepted.is_some() {
                    let (schema, instance) = minimise(probe, &case.schema, v, reading);
                    let detail = accepted_text(probe, &schema, &instance, reading)
                        .map_or_else(String::new, |t| format!("the grammar accepts {t}"));
                    tally.violations.push(Violation {
                        kind: "accepted but invalid",
                        reading,
                        schema,
                        instance,
                        detail,
                    });
                }
            }
        }
    }
}

/// The text of `instance` the grammar of `schema` accepts, if one is.
pub fn accepted_text(
    probe: &GrammarProbe,
    schema: &Value,
    instance: &Value,
    reading: ObjectDefaults,
) -> Option<String> {
    let o = options(reading);
    let compiled = convert(schema, &o).ok()?.ok()?;
    let mut grammar = probe.load(&compiled.gbnf).ok()?;
    texts(instance, &compiled, &o)
        .into_iter()
        .find(|t| grammar.accepts(t))
}

/// Whether `instance` is a soundness violation of `schema`.
pub fn violates(
    probe: &GrammarProbe,
    schema: &Value,
    instance: &Value,
    reading: ObjectDefaults,
) -> bool {
    match validator(schema) {
        Some(v) if !v.is_valid(instance) => {
            accepted_text(probe, schema, instance, reading).is_some()
        }
        _ => false,
    }
}

/// Most checks one minimisation makes.
const SHRINK_BUDGET: usize = 4000;

/// A smaller schema and instance that still violate: members, items and
/// subschemas removed or simplified one at a time while the violation stays.
pub fn minimise(
    probe: &GrammarProbe,
    schema: &Value,
    instance: &Value,
    reading: ObjectDefaults,
) -> (Value, Value) {
    let (mut s, mut i) = (schema.clone(), instance.clone());
    let mut budget = SHRINK_BUDGET;
    loop {
        if let Some(c) = first_smaller(&s, true, &mut budget, |c| violates(probe, c, &i, reading)) {
            s = c;
        } else if let Some(c) =
            first_smaller(&i, false, &mut budget, |c| violates(probe, &s, c, reading))
        {
            i = c;
        } else {
            break;
        }
    }
    (s, i)
}

/// The first value one step smaller than `v` that still fails, within what
/// is left of `budget` (each check spends one).
fn first_smaller(
    v: &Value,
    is_schema: bool,
    budget: &mut usize,
    mut fails: impl FnMut(&Value) -> bool,
) -> Option<Value> {
    smaller(v, is_schema).into_iter().find(|c| {
        if *budget == 0 {
            return false;
        }
        *budget -= 1;
        fails(c)
    })
}

/// Every value one step smaller than `v`: one member or item removed, or
/// one part replaced by a simpler one (`true` or `{}` in a schema, `null`
/// in an instance).
fn smaller(v: &Value, is_schema: bool) -> Vec<Value> {
    let mut out = Vec::new();
    for path in paths(v) {
        let Some((last, parent)) = path.split_last() else {
            continue;
        };
        if is_schema && parent.is_empty() && *last == Step::Key("$schema".into()) {
            continue;
        }
        let mut removed = v.clone();
        if let Some(container) = at_mut(&mut removed, parent) {
            match (container, last) {
                (Value::Object(o), Step::Key(k)) => {
                    o.shift_remove(k);
                }
                (Value::Array(a), Step::Index(i)) => {
                    a.remove(*i);
                }
                _ => {}
            }
            out.push(removed);
        }
        let simpler: &[Value] = if is_schema {
            &[Value::Bool(true), Value::Object(serde_json::Map::new())]
        } else {
            &[Value::Null]
        };
        for s in simpler {
            let mut replaced = v.clone();
            if let Some(target) = at_mut(&mut replaced, &path) {
                if target != s && (target.is_object() || target.is_array() || !is_schema) {
                    *target = s.clone();
                    out.push(replaced);
                }
            }
        }
    }
    out
}
