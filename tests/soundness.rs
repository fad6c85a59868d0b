//! The converter's soundness, found by a differential test rather than
//! table cases: random schemas that combine the keywords it accepts, and
//! instances near them, judged by the `jsonschema` crate (validity) and by
//! llama.cpp's grammar engine (what the grammar accepts). See
//! `tests/differential/mod.rs`.
//!
//! A fixed seed here, bounded to run in about a minute; the cargo-fuzz
//! target `differential` runs the same generator for hours.
#![cfg(feature = "engine")]

use crate::common;
#[path = "differential/mod.rs"]
mod differential;

use differential::gen::{Gen, Seeded};
use differential::{judge, Tally};

/// Schemas of the fixed run, and instances per schema.
const SCHEMAS: usize = 2_500;
const PER_SCHEMA: usize = 10;

#[test]
fn no_generated_instance_is_accepted_by_the_grammar_and_refused_by_the_validator() {
    let probe = common::probe();
    // Another seed or a longer run: SOUNDNESS_SEED, SOUNDNESS_SCHEMAS.
    let env = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u64>().ok());
    let seed = env("SOUNDNESS_SEED").unwrap_or(0x5eed_0031);
    let schemas = env("SOUNDNESS_SCHEMAS").map_or(SCHEMAS, |n| n as usize);
    let mut g = Gen::new(Seeded::new(seed));
    let mut tally = Tally::default();
    for _ in 0..schemas {
        let case = differential::case(&mut g, PER_SCHEMA);
        judge(&probe, &case, &mut tally);
    }
    println!("{}", tally.summary());
    if std::env::var_os("SOUNDNESS_REFUSALS").is_some() {
        let mut by_count: Vec<_> = tally.refusals.iter().collect();
        by_count.sort_by(|a, b| b.1.cmp(a.1));
        for (reason, n) in by_count.into_iter().take(25) {
            println!("{n:6}  {reason}");
        }
    }
    assert!(
        tally.pairs >= 20_000,
        "the run must judge at least 20,000 schema/instance pairs: {}",
        tally.summary()
    );
    let failures: Vec<String> = tally.violations.iter().map(|v| v.to_string()).collect();
    assert!(
        failures.is_empty(),
        "{}\n\n{}",
        tally.summary(),
        failures.join("\n\n")
    );
}

/// Every violation the differential test (or a person) found, minimised:
/// the instance is invalid (the validator says so here too), and the
/// grammar of either reading must refuse it.
fn regressions() -> Vec<(&'static str, serde_json::Value, serde_json::Value)> {
    use serde_json::json;
    vec![
        (
            "two schema dependencies on one property, one through oneOf, both hold",
            json!({"$schema": "http://json-schema.org/draft-04/schema#",
                "type": "object", "additionalProperties": false,
                "properties": {"type": {"enum": ["integer", "string"]}, "format": {"type": "string"}, "minimum": {"type": "string"}},
                "dependencies": {
                    "format": {"oneOf": [
                        {"properties": {"type": {"enum": ["integer"]}, "format": {"enum": ["int32"]}}},
                        {"properties": {"type": {"enum": ["string"]}, "format": {"enum": ["date"]}}}]},
                    "minimum": {"properties": {"type": {"enum": ["integer"]}}}}}),
            json!({"type": "string", "format": "date", "minimum": "10"}),
        ),
        (
            "a oneOf branch typed by its keywords still accepts the other kinds",
            json!({"$schema": "http://json-schema.org/draft-07/schema#",
                "oneOf": [{"type": "object"}, {"multipleOf": 3.0}]}),
            json!({}),
        ),
        (
            "a oneOf branch whose grammar writes nothing here still accepts values",
            json!({"$schema": "http://json-schema.org/draft-07/schema#",
                "type": "object", "oneOf": [true, {"multipleOf": 3.0}]}),
            json!({}),
        ),
        (
            "an untyped branch with required accepts every non-object",
            json!({"$schema": "https://json-schema.org/draft/2020-12/schema",
                "oneOf": [{"required": ["d"], "dependentSchemas": {"d": {"pattern": "^.$"}}}, true]}),
            json!(-1),
        ),
        (
            "an untyped closed object branch accepts null",
            json!({"$schema": "http://json-schema.org/draft-07/schema#",
                "properties": {"b": {"oneOf": [{"required": ["c"], "additionalProperties": false}, true]}}}),
            json!({"b": null}),
        ),
        (
            "a nested oneOf of one untyped branch",
            json!({"$schema": "https://json-schema.org/draft/2020-12/schema",
                "oneOf": [true, {"oneOf": [{"required": ["b"], "additionalProperties": false}]}]}),
            json!(true),
        ),
        (
            "minItems does not make a branch an array",
            json!({"$schema": "http://json-schema.org/draft-07/schema#",
                "oneOf": [{"oneOf": [{"minItems": 2}]}, {"maxLength": 2}]}),
            json!("ab"),
        ),
        (
            "contains does not make a branch an array",
            json!({"$schema": "http://json-schema.org/draft-07/schema#",
                "oneOf": [{"contains": true}, {"type": "number"}]}),
            json!(1),
        ),
        (
            "minProperties does not make a branch an object",
            json!({"$schema": "http://json-schema.org/draft-07/schema#",
                "oneOf": [{"minProperties": 1}, {"enum": [0]}]}),
            json!(0),
        ),
        (
            "exclusiveMaximum does not make a branch a number",
            json!({"$schema": "http://json-schema.org/draft-07/schema#",
                "oneOf": [{"exclusiveMaximum": 0.5}, {"anyOf": [{"allOf": [{"type": "object"}]}]}]}),
            json!({}),
        ),
        (
            "a tuple at the root keeps its items apart from a nested array's",
            json!({"$schema": "http://json-schema.org/draft-07/schema#",
                "items": [true, {"type": "array"}]}),
            json!([null, null]),
        ),
        (
            "a dependency inside a tuple item holds",
            json!({"$schema": "http://json-schema.org/draft-07/schema#",
                "items": [{"dependencies": {"a": {"required": ["c"]}}}, {"type": "array"}]}),
            json!([{"a": null}]),
        ),
        (
            "a oneOf branch the strict defaults close is open to a key a merge adds",
            json!({"$schema": "https://json-schema.org/draft/2020-12/schema",
                "dependentRequired": {"c": ["d", "b"]},
                "dependentSchemas": {"a": {"oneOf": [{"properties": {"c": {"type": "null"}}}, {"required": ["a"]}]}}}),
            json!({"a": null, "c": null, "d": null, "b": null}),
        ),
        (
            "a dependency's oneOf meets the key the dependency is on",
            json!({"$schema": "http://json-schema.org/draft-07/schema#",
                "dependencies": {"d": {"oneOf": [{"properties": {"c": {"type": "string"}}}, {"required": ["d"]}]}}}),
            json!({"d": null}),
        ),
        (
            "a property only the strict defaults require does not keep branches apart",
            json!({"$schema": "https://json-schema.org/draft/2020-12/schema",
                "oneOf": [{"properties": {"b": {"const": null}}}, {"properties": {"b": {"const": "c"}}}, {"required": ["b"]}]}),
            json!({}),
        ),
        (
            "a closed branch, a required key and a pinned key",
            json!({"$schema": "https://json-schema.org/draft/2020-12/schema",
                "oneOf": [{"additionalProperties": false}, {"required": ["a"]}, {"properties": {"a": {"const": "b"}}}]}),
            json!({}),
        ),
        (
            "a dependency's pinned branches lose their pins to additionalProperties",
            json!({"$schema": "https://json-schema.org/draft/2020-12/schema",
                "properties": {"b": true, "c": true}, "additionalProperties": false,
                "dependentSchemas": {"b": {"oneOf": [
                    {"properties": {"d": {"enum": ["string"]}}},
                    {"properties": {"d": {"enum": ["bb"]}}}]}}}),
            json!({"b": null, "c": null}),
        ),
        (
            "empty dependencies accept everything",
            json!({"$schema": "http://json-schema.org/draft-07/schema#",
                "oneOf": [{"dependencies": {}}, {"const": true}]}),
            json!(true),
        ),
    ]
}

#[test]
fn every_violation_found_so_far_stays_refused() {
    let probe = common::probe();
    let mut failures = Vec::new();
    for (name, schema, instance) in regressions() {
        let validator = jsonschema::options()
            .should_validate_formats(true)
            .build(&schema)
            .expect("the validator reads the schema");
        assert!(
            !validator.is_valid(&instance),
            "{name}: the instance must be invalid"
        );
        for reading in differential::READINGS {
            if let Some(text) = differential::accepted_text(&probe, &schema, &instance, reading) {
                failures.push(format!("{name} ({reading:?}): the grammar accepts {text}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
