//! The keywords enforced through the regular-language layer (`pattern` with
//! lengths, several patterns or formats on one string, `patternProperties`,
//! `propertyNames`, `not` of string constraints, …). Every label of the
//! hand-written instances is first checked by an independent validator (the
//! `jsonschema` crate, formats on); then llama.cpp's grammar engine, loaded
//! with the converted grammar, must agree with it. Instances mutated at
//! random from the hand-written ones check soundness: whatever the grammar
//! accepts, the validator accepts.
#![cfg(feature = "engine")]

mod common;

use infer::schema::{self, canonical};
use serde_json::{json, Map, Value};

struct Case {
    name: &'static str,
    schema: Value,
    valid: Vec<Value>,
    invalid: Vec<Value>,
}

fn case(name: &'static str, schema: Value, valid: Vec<Value>, invalid: Vec<Value>) -> Case {
    Case {
        name,
        schema,
        valid,
        invalid,
    }
}

fn cases() -> Vec<Case> {
    vec![
        case(
            "pattern with maxLength",
            json!({"type": "string", "pattern": "^[a-z]+$", "maxLength": 5}),
            vec![json!("a"), json!("abcde")],
            vec![json!(""), json!("abcdef"), json!("abC")],
        ),
        case(
            "pattern with minLength over a long maximum",
            json!({"type": "string", "pattern": "^[a-z][a-z0-9-]*$", "minLength": 3, "maxLength": 2048}),
            vec![
                json!("abc"),
                json!("a-9"),
                json!(format!("a{}", "0".repeat(2047))),
            ],
            vec![
                json!("ab"),
                json!("9ab"),
                json!(format!("a{}", "0".repeat(2048))),
            ],
        ),
        case(
            "an unanchored pattern with lengths counts every character",
            json!({"type": "string", "pattern": "[0-9]{2}", "minLength": 2, "maxLength": 4}),
            vec![json!("12"), json!("a12b"), json!("\"12")],
            vec![json!("1a2"), json!("a12bc"), json!("1")],
        ),
        case(
            "two patterns on one string",
            json!({"allOf": [{"type": "string", "pattern": "^a"}, {"pattern": "b$"}]}),
            vec![json!("ab"), json!("a\nb"), json!("axxb")],
            vec![json!("a"), json!("b"), json!("ba"), json!("abc")],
        ),
        case(
            "a format with a maxLength it already keeps",
            json!({"type": "string", "format": "date", "maxLength": 255}),
            vec![json!("2024-02-29")],
            vec![json!("2023-02-29"), json!("x")],
        ),
        case(
            "a format with a binding maxLength",
            json!({"type": "string", "format": "email", "maxLength": 12}),
            vec![json!("ab@cd.ef.com"), json!("a@b.co")],
            vec![json!("abc@defgh.com"), json!("a@b@c")],
        ),
        case(
            "a pattern with a format",
            json!({"type": "string", "format": "date", "pattern": "^2024-"}),
            vec![json!("2024-01-31")],
            vec![json!("2023-01-31"), json!("2024-02-30")],
        ),
        case(
            "patternProperties with additionalProperties false",
            json!({"type": "object", "patternProperties": {"^x-": {"type": "integer"}}, "additionalProperties": false}),
            vec![json!({}), json!({"x-a": 1, "x-b": 2})],
            vec![json!({"x-a": "1"}), json!({"y": 1})],
        ),
        case(
            "patternProperties beside declared properties",
            json!({"type": "object", "properties": {"x-id": {"type": "string"}, "name": {"type": "string"}}, "required": ["name"], "patternProperties": {"^x-": {"maxLength": 3}}, "additionalProperties": false}),
            vec![
                json!({"name": "n"}),
                json!({"name": "n", "x-id": "abc", "x-q": "zz"}),
            ],
            vec![
                json!({"name": "n", "x-id": "abcd"}),
                json!({"name": "n", "other": "a"}),
                json!({"x-id": "a"}),
            ],
        ),
        case(
            "overlapping patterns merge their schemas",
            json!({"type": "object", "patternProperties": {"^a": {"type": "integer"}, "b$": {"minimum": 10}}, "additionalProperties": {"type": "string"}}),
            vec![json!({"a": 1, "b": 10, "ab": 10, "c": "s"})],
            vec![json!({"ab": 9}), json!({"c": 1}), json!({"a": "s"})],
        ),
        case(
            "patternProperties with a schema for the other keys",
            json!({"type": "object", "patternProperties": {"^[0-9]+$": {"type": "boolean"}}, "additionalProperties": {"type": "null"}, "minProperties": 1}),
            vec![json!({"1": true}), json!({"k": null, "22": false})],
            vec![json!({}), json!({"1": null}), json!({"k": true})],
        ),
        case(
            "propertyNames with a pattern",
            json!({"type": "object", "propertyNames": {"pattern": "^[a-z]+$"}, "minProperties": 1}),
            vec![json!({"ab": 1}), json!({"a": {}, "b": []})],
            vec![json!({"A": 1}), json!({"a1": 1}), json!({})],
        ),
        case(
            "propertyNames with a maxLength and declared properties",
            json!({"type": "object", "properties": {"ok": {"type": "integer"}, "toolong": {"type": "integer"}}, "propertyNames": {"maxLength": 3}, "additionalProperties": {"type": "integer"}}),
            vec![json!({"ok": 1}), json!({"ok": 1, "abc": 2})],
            vec![json!({"ok": 1, "toolong": 2}), json!({"ok": 1, "abcd": 2})],
        ),
        case(
            "propertyNames as an enum",
            json!({"type": "object", "propertyNames": {"enum": ["a", "b"]}, "additionalProperties": {"type": "integer"}, "minProperties": 1}),
            vec![json!({"a": 1}), json!({"b": 2, "a": 1})],
            vec![json!({"c": 1}), json!({"a": "x"})],
        ),
        case(
            "allOf of objects with patternProperties",
            json!({"allOf": [
                {"type": "object", "patternProperties": {"^a": {"type": "integer"}}, "additionalProperties": false},
                {"type": "object", "patternProperties": {"z$": {"minimum": 5}}, "additionalProperties": {"type": "integer"}}
            ]}),
            vec![json!({}), json!({"ab": 1}), json!({"az": 5})],
            vec![json!({"az": 4}), json!({"b": 1}), json!({"a": "s"})],
        ),
    ]
}

fn validator(schema: &Value) -> jsonschema::Validator {
    jsonschema::options()
        .should_validate_formats(true)
        .build(schema)
        .expect("the validator reads the schema")
}

#[test]
fn labels_agree_with_the_validator_and_the_grammar_with_both() {
    let probe = common::probe();
    let mut failures = Vec::new();
    for c in cases() {
        let judge = validator(&c.schema);
        for (instances, expected) in [(&c.valid, true), (&c.invalid, false)] {
            for v in instances {
                if judge.is_valid(v) != expected {
                    failures.push(format!(
                        "{}: the validator disagrees with the label of {v}",
                        c.name
                    ));
                }
            }
        }
        let compiled = match schema::compile(&c.schema) {
            Ok(x) => x,
            Err(e) => {
                failures.push(format!("{}: conversion failed: {e}", c.name));
                continue;
            }
        };
        let mut grammar = match probe.load(&compiled.gbnf) {
            Ok(g) => g,
            Err(e) => {
                failures.push(format!(
                    "{}: llama.cpp refused the grammar ({e}):\n{}",
                    c.name, compiled.gbnf
                ));
                continue;
            }
        };
        for (instances, expected) in [(&c.valid, true), (&c.invalid, false)] {
            for v in instances {
                let text = canonical::instance_text(v, &compiled.root, &compiled.defs);
                if grammar.accepts(&text) != expected {
                    failures.push(format!(
                        "{}: {} {text}\n{}",
                        c.name,
                        if expected {
                            "rejected valid"
                        } else {
                            "accepted invalid"
                        },
                        compiled.gbnf
                    ));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// A deterministic pseudo-random sequence (xorshift64*).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n.max(1) as u64) as usize
    }
}

const CHARS: &[char] = &[
    'a', 'b', 'z', 'A', 'x', '-', '0', '9', '@', '.', '"', '\n', 'é',
];

fn mutate_str(s: &str, rng: &mut Rng) -> String {
    let mut chars: Vec<char> = s.chars().collect();
    match rng.below(4) {
        0 if !chars.is_empty() => {
            let i = rng.below(chars.len());
            chars.remove(i);
        }
        1 => {
            let i = rng.below(chars.len() + 1);
            chars.insert(i, CHARS[rng.below(CHARS.len())]);
        }
        2 if !chars.is_empty() => {
            let i = rng.below(chars.len());
            chars[i] = CHARS[rng.below(CHARS.len())];
        }
        _ => chars.truncate(rng.below(chars.len() + 1)),
    }
    chars.into_iter().collect()
}

/// A random variation of `v`, drawing on `pool` for replacement values.
fn mutate(v: &Value, pool: &[Value], rng: &mut Rng) -> Value {
    match v {
        Value::String(s) => Value::String(mutate_str(s, rng)),
        Value::Number(n) => {
            let x = n.as_i64().unwrap_or(0);
            json!([x - 1, x + 1, x * 2, -x, 0][rng.below(5)])
        }
        Value::Object(map) => {
            let mut out: Map<String, Value> = map.clone();
            match rng.below(4) {
                0 if !out.is_empty() => {
                    let k = out
                        .keys()
                        .nth(rng.below(out.len()))
                        .cloned()
                        .unwrap_or_default();
                    let value = out.remove(&k).unwrap_or(Value::Null);
                    out.insert(mutate_str(&k, rng), value);
                }
                1 if !out.is_empty() => {
                    let k = out
                        .keys()
                        .nth(rng.below(out.len()))
                        .cloned()
                        .unwrap_or_default();
                    let value = out.get(&k).cloned().unwrap_or(Value::Null);
                    out.insert(k, mutate(&value, pool, rng));
                }
                2 if !out.is_empty() => {
                    let k = out
                        .keys()
                        .nth(rng.below(out.len()))
                        .cloned()
                        .unwrap_or_default();
                    out.remove(&k);
                }
                _ => {
                    let key = mutate_str(["x-a", "ab", "1", "k", "name"][rng.below(5)], rng);
                    out.insert(key, pool[rng.below(pool.len())].clone());
                }
            }
            Value::Object(out)
        }
        _ => pool[rng.below(pool.len())].clone(),
    }
}

#[test]
fn whatever_the_grammar_accepts_the_validator_accepts() {
    let probe = common::probe();
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let mut failures = Vec::new();
    let mut accepted = 0;
    for c in cases() {
        let judge = validator(&c.schema);
        let Ok(compiled) = schema::compile(&c.schema) else {
            continue;
        };
        let Ok(mut grammar) = probe.load(&compiled.gbnf) else {
            continue;
        };
        let seeds: Vec<Value> = c.valid.iter().chain(&c.invalid).cloned().collect();
        let mut pool = seeds.clone();
        pool.extend([
            json!(null),
            json!(1),
            json!(12),
            json!("s"),
            json!(true),
            json!([]),
        ]);
        for i in 0..300 {
            let mut v = seeds[i % seeds.len()].clone();
            for _ in 0..=rng.below(3) {
                v = mutate(&v, &pool, &mut rng);
            }
            let text = canonical::instance_text(&v, &compiled.root, &compiled.defs);
            if grammar.accepts(&text) {
                accepted += 1;
                if !judge.is_valid(&v) {
                    failures.push(format!("{}: accepted invalid {text}", c.name));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The mutations must reach the accepting side too, or the check is empty.
    assert!(accepted > 300, "only {accepted} mutated instances accepted");
}
