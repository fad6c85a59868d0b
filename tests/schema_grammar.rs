//! Table tests of the converter: for each schema, llama.cpp's grammar engine
//! must accept every valid instance (written in the grammar's layout) and
//! reject every invalid one.
#![cfg(feature = "engine")]

use crate::common;

use infer::schema::{self, canonical};
use serde_json::{json, Value};

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
            "true accepts anything",
            json!(true),
            vec![
                json!(null),
                json!(1),
                json!("x"),
                json!([1, {"a": [true]}]),
                json!({}),
            ],
            vec![],
        ),
        case(
            "empty schema is true",
            json!({}),
            vec![json!(false), json!({"k": "v"})],
            vec![],
        ),
        case(
            "not enum of neighbouring integers drops the empty gap between them",
            json!({"type": "integer", "minimum": 1024, "maximum": 65535, "not": {"enum": [6379, 6380, 43215]}}),
            vec![
                json!(1024),
                json!(6378),
                json!(6381),
                json!(43214),
                json!(43216),
                json!(65535),
            ],
            vec![
                json!(6379),
                json!(6380),
                json!(43215),
                json!(1023),
                json!(65536),
                json!(6379.5),
            ],
        ),
        case(
            "an object that declares no property takes any keys",
            json!({"type": "object", "minProperties": 1}),
            vec![json!({"a": 1}), json!({"x": [true], "y": {"z": null}})],
            vec![json!({}), json!([]), json!("{}")],
        ),
        case(
            "a large enum is a prefix tree with the same language",
            json!({"enum": (1..=300).map(|n| json!(n)).chain(["a", "ab", "abc"].map(|s| json!(s))).chain([json!(null), json!(1.5)]).collect::<Vec<_>>()}),
            vec![
                json!(1),
                json!(10),
                json!(100),
                json!(300),
                json!(299),
                json!("ab"),
                json!("a"),
                json!(null),
                json!(1.5),
            ],
            vec![
                json!(0),
                json!(301),
                json!(3000),
                json!(1000),
                json!("1"),
                json!("abcd"),
                json!(""),
                json!(1.55),
                json!(1.4),
            ],
        ),
        case(
            "null",
            json!({"type": "null"}),
            vec![json!(null)],
            vec![json!(0), json!("null")],
        ),
        case(
            "boolean",
            json!({"type": "boolean"}),
            vec![json!(true), json!(false)],
            vec![json!(1), json!("true")],
        ),
        case(
            "integer",
            json!({"type": "integer"}),
            vec![json!(0), json!(-7), json!(123456789)],
            vec![json!(1.5), json!("1")],
        ),
        case(
            "integer range",
            json!({"type": "integer", "minimum": -3, "maximum": 120}),
            vec![json!(-3), json!(0), json!(120), json!(99)],
            vec![json!(-4), json!(121), json!(1000)],
        ),
        case(
            "exclusive range",
            json!({"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 10}),
            vec![json!(1), json!(9)],
            vec![json!(0), json!(10)],
        ),
        case(
            "draft-4 exclusive flags",
            json!({"type": "integer", "minimum": 0, "exclusiveMinimum": true}),
            vec![json!(1)],
            vec![json!(0)],
        ),
        case(
            "number",
            json!({"type": "number"}),
            vec![json!(0), json!(-1.25), json!(3e10), json!(12)],
            vec![json!("1")],
        ),
        case(
            "number range",
            json!({"type": "number", "minimum": 0.5, "maximum": 2.25}),
            vec![json!(0.5), json!(1), json!(2.25), json!(1.999)],
            vec![json!(0.49), json!(2.26), json!(3)],
        ),
        case(
            "string",
            json!({"type": "string"}),
            vec![json!(""), json!("héllo \"q\" \\ \n\t\u{1}")],
            vec![json!(1), json!(null)],
        ),
        case(
            "string lengths",
            json!({"type": "string", "minLength": 2, "maxLength": 4}),
            vec![json!("ab"), json!("abcd"), json!("é€😀")],
            vec![json!("a"), json!("abcde")],
        ),
        case(
            "pattern",
            json!({"type": "string", "pattern": "^[a-z]+-[0-9]{2}$"}),
            vec![json!("ab-12")],
            vec![json!("ab-1"), json!("AB-12"), json!("ab-123")],
        ),
        case(
            "unanchored pattern",
            json!({"type": "string", "pattern": "cat"}),
            vec![json!("cat"), json!("a cat!")],
            vec![json!("dog")],
        ),
        case(
            "format date",
            json!({"type": "string", "format": "date"}),
            vec![json!("2024-02-29")],
            vec![json!("2023-02-29"), json!("2024-1-1")],
        ),
        case(
            "format email",
            json!({"type": "string", "format": "email"}),
            vec![json!("a.b@example.com")],
            vec![json!("nope")],
        ),
        case(
            "format email within a maxLength it never reaches",
            json!({"type": "string", "format": "email", "maxLength": 1024}),
            vec![json!("a.b@example.com")],
            vec![json!("nope")],
        ),
        case(
            "format email under a maxLength it can pass",
            json!({"type": "string", "format": "email", "maxLength": 8}),
            vec![json!("a@bc.de")],
            vec![json!("abc@example.com"), json!("nope")],
        ),
        case(
            "bounded pattern within a maxLength it never reaches",
            json!({"type": "string", "pattern": "^[a-z]{1,5}$", "maxLength": 100}),
            vec![json!("abc"), json!("abcde")],
            vec![json!("abcdef"), json!("ABC")],
        ),
        case(
            "bounded pattern under a maxLength it can pass",
            json!({"type": "string", "pattern": "^[a-z]{1,5}$", "maxLength": 3}),
            vec![json!("abc")],
            vec![json!("abcd"), json!("")],
        ),
        case(
            "enum",
            json!({"enum": ["red", 2, null, {"a": 1}, [1, "x"]]}),
            vec![
                json!("red"),
                json!(2),
                json!(null),
                json!({"a": 1}),
                json!([1, "x"]),
            ],
            vec![json!("blue"), json!(3), json!({"a": 2})],
        ),
        case(
            "const",
            json!({"const": "fixed"}),
            vec![json!("fixed")],
            vec![json!("other")],
        ),
        case(
            "enum filtered by type",
            json!({"type": "string", "enum": ["a", 1]}),
            vec![json!("a")],
            vec![json!(1)],
        ),
        case(
            "type list",
            json!({"type": ["string", "null"]}),
            vec![json!("x"), json!(null)],
            vec![json!(1)],
        ),
        case(
            "object without required: every property is emitted",
            json!({"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}}),
            vec![json!({"name": "Ann", "age": 7})],
            vec![
                json!({"name": "Ann"}),
                json!({"age": 7, "name": "Ann", "x": 1}),
                json!({"name": 1, "age": 7}),
            ],
        ),
        case(
            "required makes the others optional",
            json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}, "c": {"type": "integer"}}, "required": ["b"]}),
            vec![
                json!({"b": 1}),
                json!({"a": 1, "b": 2}),
                json!({"b": 2, "c": 3}),
                json!({"a": 1, "b": 2, "c": 3}),
            ],
            vec![
                json!({}),
                json!({"a": 1}),
                json!({"a": 1, "c": 3}),
                json!({"b": 1, "d": 1}),
            ],
        ),
        case(
            "additionalProperties schema",
            json!({"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"], "additionalProperties": {"type": "string"}}),
            vec![json!({"id": 1}), json!({"id": 1, "x": "y", "z": "w"})],
            vec![json!({"id": 1, "x": 2}), json!({"x": "y"})],
        ),
        case(
            "additional keys never repeat a declared one",
            json!({"type": "object", "properties": {"id": {"type": "integer"}}, "required": [], "additionalProperties": true}),
            vec![json!({}), json!({"id": 1, "other": "x"})],
            vec![],
        ),
        case(
            "min and max properties",
            json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}, "c": {"type": "integer"}}, "required": [], "minProperties": 1, "maxProperties": 2}),
            vec![
                json!({"a": 1}),
                json!({"b": 1, "c": 2}),
                json!({"a": 1, "c": 2}),
            ],
            vec![json!({}), json!({"a": 1, "b": 2, "c": 3})],
        ),
        case(
            "array items and counts",
            json!({"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3}),
            vec![json!([1]), json!([1, 2, 3])],
            vec![json!([]), json!([1, 2, 3, 4]), json!(["a"])],
        ),
        case(
            "prefixItems",
            json!({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": false}),
            vec![json!([]), json!(["a"]), json!(["a", 1])],
            vec![json!([1]), json!(["a", 1, 2])],
        ),
        case(
            "anyOf",
            json!({"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 2}]}),
            vec![json!(5), json!("ab")],
            vec![json!("abc"), json!(null)],
        ),
        case(
            "oneOf with a discriminator",
            json!({"oneOf": [
                {"type": "object", "properties": {"kind": {"const": "cat"}, "lives": {"type": "integer"}}},
                {"type": "object", "properties": {"kind": {"const": "dog"}, "good": {"type": "boolean"}}}
            ]}),
            vec![
                json!({"kind": "cat", "lives": 9}),
                json!({"kind": "dog", "good": true}),
            ],
            vec![
                json!({"kind": "cat", "good": true}),
                json!({"kind": "cow", "lives": 1}),
            ],
        ),
        case(
            "allOf merged",
            json!({"allOf": [
                {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"], "additionalProperties": true},
                {"properties": {"a": {"minimum": 5}, "b": {"type": "string"}}, "required": ["b"], "additionalProperties": true}
            ]}),
            vec![json!({"a": 5, "b": "x"})],
            vec![json!({"a": 4, "b": "x"}), json!({"a": 5})],
        ),
        case(
            "recursive $ref",
            json!({"$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer"}, "next": {"$ref": "#/$defs/node"}}, "required": ["v"]}}, "$ref": "#/$defs/node"}),
            vec![
                json!({"v": 1}),
                json!({"v": 1, "next": {"v": 2, "next": {"v": 3}}}),
            ],
            vec![json!({"v": 1, "next": {}}), json!({"next": {"v": 1}})],
        ),
        case(
            "$ref with escapes",
            json!({"definitions": {"a/b": {"type": "integer"}, "m~n": {"type": "string"}}, "type": "array", "prefixItems": [{"$ref": "#/definitions/a~1b"}, {"$ref": "#/definitions/m~0n"}], "items": false}),
            vec![json!([1, "x"])],
            vec![json!(["x", 1])],
        ),
        case(
            "false property forbids the key",
            json!({"type": "object", "properties": {"a": false, "b": {"type": "integer"}}, "required": ["b"]}),
            vec![json!({"b": 1})],
            vec![json!({"a": 1, "b": 1})],
        ),
    ]
}

#[test]
fn every_case_accepts_its_valid_and_rejects_its_invalid_instances() {
    let probe = common::probe();
    let mut failures = Vec::new();
    for c in cases() {
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

#[test]
fn whitespace_is_bounded() {
    let probe = common::probe();
    let c = schema::compile(&json!({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "integer"}}}})).unwrap();
    let mut g = probe.load(&c.gbnf).unwrap();
    assert!(g.accepts(r#"{"a": [1, 2]}"#));
    for loose in [
        r#"{ "a": [1, 2]}"#,
        "{\"a\":\n[1, 2]}",
        r#"{"a":  [1, 2]}"#,
        r#"{"a": [1,2]}"#,
        "{\"a\": [1, 2]}\n",
    ] {
        assert!(!g.accepts(loose), "{loose:?}");
    }
}

#[test]
fn optional_properties_do_not_blow_up_the_grammar() {
    let props: serde_json::Map<String, Value> = (0..60)
        .map(|i| (format!("p{i}"), json!({"type": "integer"})))
        .collect();
    let c =
        schema::compile(&json!({"type": "object", "properties": props, "required": []})).unwrap();
    let bytes = c.gbnf.as_str().len();
    assert!(bytes < 40_000, "grammar is {bytes} bytes");
    let probe = common::probe();
    let mut g = probe.load(&c.gbnf).unwrap();
    assert!(g.accepts(r#"{"p3": 1, "p59": 2}"#));
    assert!(!g.accepts(r#"{"p59": 2, "p3": 1}"#), "declaration order");
}

/// A `maxLength` longer than every string of the format is not counted out
/// state by state (`format: email` with `maxLength: 1024` was a 95 KB
/// grammar and 8 ms of conversion).
#[test]
fn a_length_bound_the_format_never_reaches_costs_nothing() {
    let plain = schema::compile(&json!({"type": "string", "format": "email"})).unwrap();
    let bounded =
        schema::compile(&json!({"type": "string", "format": "email", "maxLength": 1024})).unwrap();
    let (plain, bounded) = (plain.gbnf.as_str().len(), bounded.gbnf.as_str().len());
    assert!(
        bounded <= plain + 64,
        "email alone: {plain} bytes, with maxLength 1024: {bounded} bytes"
    );
}

#[test]
fn additional_keys_cannot_repeat_a_declared_key() {
    let probe = common::probe();
    let c = schema::compile(&json!({"type": "object", "properties": {"id": {"type": "integer"}}, "required": [], "additionalProperties": true})).unwrap();
    let mut g = probe.load(&c.gbnf).unwrap();
    assert!(g.accepts(r#"{"other": "x"}"#));
    assert!(!g.accepts(r#"{"other": "x", "id": "not an int"}"#));
    assert!(!g.accepts(r#"{"id": 1, "id": 2}"#));
}
