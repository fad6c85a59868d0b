//! The keywords enforced through the regular-language layer (`pattern` with
//! lengths, several patterns or formats on one string, `patternProperties`,
//! `propertyNames`, `not` of string constraints, …). Every label of the
//! hand-written instances is first checked by an independent validator (the
//! `jsonschema` crate, formats on); then llama.cpp's grammar engine, loaded
//! with the converted grammar, must agree with it. Instances mutated at
//! random from the hand-written ones check soundness: whatever the grammar
//! accepts, the validator accepts.
#![cfg(feature = "engine")]

use crate::common;

use infer::schema::{self, canonical, ConvertOptions, ObjectDefaults};
use serde_json::{json, Map, Value};

struct Case {
    name: &'static str,
    schema: Value,
    valid: Vec<Value>,
    invalid: Vec<Value>,
    options: ConvertOptions,
}

fn case(name: &'static str, schema: Value, valid: Vec<Value>, invalid: Vec<Value>) -> Case {
    Case {
        name,
        schema,
        valid,
        invalid,
        options: ConvertOptions::default(),
    }
}

/// A case converted with JSON Schema's own object defaults.
fn json_schema_case(
    name: &'static str,
    schema: Value,
    valid: Vec<Value>,
    invalid: Vec<Value>,
) -> Case {
    Case {
        options: ConvertOptions {
            object_defaults: ObjectDefaults::JsonSchema,
            ..ConvertOptions::default()
        },
        ..case(name, schema, valid, invalid)
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
        case(
            "additionalItems after a draft 4 tuple",
            json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "array", "items": [{"type": "string"}, {"type": "integer"}], "additionalItems": {"type": "boolean"}}),
            vec![
                json!([]),
                json!(["a"]),
                json!(["a", 1]),
                json!(["a", 1, true, false]),
            ],
            vec![json!([1]), json!(["a", 1, 2]), json!(["a", "b"])],
        ),
        case(
            "additionalItems false closes the tuple",
            json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "array", "items": [{"type": "null"}], "additionalItems": false, "minItems": 1}),
            vec![json!([null])],
            vec![json!([]), json!([null, null]), json!([1])],
        ),
        case(
            "additionalItems beside a single items schema does nothing",
            json!({"type": "array", "items": {"type": "integer"}, "additionalItems": false}),
            vec![json!([]), json!([1, 2, 3])],
            vec![json!(["a"])],
        ),
        case(
            "dependentRequired on an optional property",
            json!({"type": "object", "properties": {"card": {"type": "integer"}, "address": {"type": "string"}, "name": {"type": "string"}}, "required": ["name"], "dependentRequired": {"card": ["address"]}, "additionalProperties": false}),
            vec![
                json!({"name": "n"}),
                json!({"name": "n", "address": "a"}),
                json!({"name": "n", "card": 1, "address": "a"}),
            ],
            vec![
                json!({"name": "n", "card": 1}),
                json!({"card": 1, "address": "a"}),
            ],
        ),
        case(
            "draft 4 dependencies with a list and a schema",
            json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}, "c": {"type": "string"}}, "required": [],
                   "dependencies": {"a": ["b"], "c": {"properties": {"b": {"minimum": 10}}, "required": ["b"]}}, "additionalProperties": false}),
            vec![
                json!({}),
                json!({"b": 1}),
                json!({"a": 1, "b": 2}),
                json!({"c": "x", "b": 10}),
                json!({"a": 0, "b": 11, "c": ""}),
            ],
            vec![
                json!({"a": 1}),
                json!({"c": "x"}),
                json!({"c": "x", "b": 9}),
                json!({"a": 1, "b": 9, "c": "x"}),
            ],
        ),
        case(
            "dependentSchemas with oneOf on a required property",
            json!({"type": "object", "properties": {"kind": {"enum": ["a", "b"]}, "x": {}}, "required": ["kind"],
                   "dependentSchemas": {"kind": {"oneOf": [
                       {"properties": {"kind": {"const": "a"}, "x": {"type": "integer"}}, "required": ["x"]},
                       {"properties": {"kind": {"const": "b"}, "x": {"type": "string"}}, "required": ["x"]}
                   ]}}, "additionalProperties": false}),
            vec![json!({"kind": "a", "x": 1}), json!({"kind": "b", "x": "s"})],
            vec![
                json!({"kind": "a", "x": "s"}),
                json!({"kind": "b"}),
                json!({"kind": "c", "x": 1}),
            ],
        ),
        case(
            "not of a pattern on a string",
            json!({"type": "string", "not": {"pattern": "^a"}}),
            vec![json!("b"), json!(""), json!("ba")],
            vec![json!("a"), json!("abc")],
        ),
        case(
            "not of an enum and of lengths",
            json!({"type": "string", "maxLength": 3, "not": {"anyOf": [{"enum": ["x", "yy"]}, {"maxLength": 1}]}}),
            vec![json!("ab"), json!("xyz"), json!("yyy")],
            vec![
                json!("x"),
                json!("yy"),
                json!(""),
                json!("b"),
                json!("abcd"),
            ],
        ),
        case(
            "not of a bound alone matches numbers only",
            json!({"not": {"minimum": 5}}),
            vec![json!(4), json!(-1)],
            vec![json!(5), json!(6), json!("abc"), json!(null)],
        ),
        case(
            "not of required alone matches objects only",
            json!({"not": {"required": ["a"]}}),
            vec![json!({}), json!({"b": 1})],
            vec![json!({"a": 1}), json!(5), json!("s")],
        ),
        case(
            "not of a property's value",
            json!({"type": "object", "properties": {"kind": {"type": "string"}}, "required": ["kind"], "not": {"properties": {"kind": {"const": "x"}}}}),
            vec![json!({"kind": "y"}), json!({"kind": "xx"})],
            vec![json!({"kind": "x"}), json!({})],
        ),
        case(
            "not of array and object counts",
            json!({"type": "object", "properties": {"l": {"type": "array", "not": {"minItems": 2}}, "o": {"not": {"minProperties": 1}, "type": "object"}}}),
            vec![json!({"l": [], "o": {}}), json!({"l": [1], "o": {}})],
            vec![
                json!({"l": [1, 2], "o": {}}),
                json!({"l": [], "o": {"a": 1}}),
            ],
        ),
        case(
            "if/then/else on a property's value",
            json!({"type": "object", "properties": {"country": {"enum": ["US", "CA"]}, "postal": {"type": "string"}}, "required": ["country", "postal"],
                   "if": {"properties": {"country": {"const": "US"}}},
                   "then": {"properties": {"postal": {"pattern": "^[0-9]{5}$"}}},
                   "else": {"properties": {"postal": {"pattern": "^[A-Z][0-9][A-Z] [0-9][A-Z][0-9]$"}}},
                   "additionalProperties": false}),
            vec![
                json!({"country": "US", "postal": "12345"}),
                json!({"country": "CA", "postal": "K1A 0B1"}),
            ],
            vec![
                json!({"country": "US", "postal": "K1A 0B1"}),
                json!({"country": "CA", "postal": "12345"}),
                json!({"country": "US"}),
            ],
        ),
        case(
            "if required then required",
            json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": [],
                   "if": {"required": ["a"]}, "then": {"required": ["b"]}, "additionalProperties": false}),
            vec![json!({}), json!({"b": 1}), json!({"a": 1, "b": 2})],
            vec![json!({"a": 1}), json!({"c": 1})],
        ),
        case(
            "if on the type",
            json!({"if": {"type": "integer"}, "then": {"minimum": 0}, "else": {"type": "string"}}),
            vec![json!(0), json!(5), json!("s")],
            vec![json!(-1), json!(null), json!(true), json!(1.5)],
        ),
        case(
            "then without if does nothing",
            json!({"type": "integer", "then": {"minimum": 5}}),
            vec![json!(0), json!(5)],
            vec![json!("s")],
        ),
        case(
            "oneOf of overlapping strings: each branch without the other's values",
            json!({"oneOf": [{"type": "string"}, {"type": "string", "maxLength": 3}]}),
            vec![json!("abcd"), json!("hello")],
            vec![json!("abc"), json!(""), json!(1)],
        ),
        case(
            "oneOf of objects told apart by their required keys",
            json!({"oneOf": [{"properties": {"a": {"type": "integer"}}, "required": ["a"]},
                             {"properties": {"b": {"type": "string"}}, "required": ["b"]}]}),
            vec![json!({"a": 1}), json!({"b": "x"})],
            vec![json!({"a": 1, "b": "x"}), json!({})],
        ),
        json_schema_case(
            "oneOf of open objects: a value matching both is left out",
            json!({"oneOf": [{"properties": {"a": {"type": "integer"}}, "required": ["a"]},
                             {"properties": {"b": {"type": "string"}}, "required": ["b"]}]}),
            vec![
                json!({"a": 1}),
                json!({"a": 1, "b": 2}),
                json!({"b": "x", "c": true}),
            ],
            vec![json!({"a": 1, "b": "x"}), json!({"c": 1})],
        ),
        case(
            "oneOf of $ref branches that overlap",
            json!({"$defs": {"n": {"type": "integer"}, "p": {"type": "integer", "minimum": 0}},
                   "oneOf": [{"$ref": "#/$defs/n"}, {"$ref": "#/$defs/p"}]}),
            vec![json!(-1), json!(-5)],
            vec![json!(0), json!(3), json!("x")],
        ),
        case(
            "not of an object literal",
            json!({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"],
                   "not": {"const": {"a": 1}}}),
            vec![json!({"a": 2}), json!({"a": 0})],
            vec![json!({"a": 1}), json!({})],
        ),
        case(
            "not of array literals",
            json!({"type": "array", "items": {"type": "integer"}, "not": {"enum": [[1, 2], []]}}),
            vec![json!([1]), json!([2, 1]), json!([1, 2, 3])],
            vec![json!([1, 2]), json!([]), json!(["x"])],
        ),
        case(
            "an enum member valid as a validator reads its sibling keywords",
            json!({"enum": [{"a": 1, "b": 2}, {"a": "x"}], "properties": {"a": {"type": "integer"}}}),
            vec![json!({"a": 1, "b": 2})],
            vec![json!({"a": "x"}), json!({"a": 1})],
        ),
        case(
            "not oneOf: values matching none of the branches or two at once",
            json!({"allOf": [{"enum": [{"bar": 2, "foo": "baz"}, {"bar": 2}, {"q": 1}]},
                             {"not": {"oneOf": [{"properties": {"bar": {"type": "integer"}}, "required": ["bar"]},
                                                {"properties": {"foo": {"type": "string"}}, "required": ["foo"]}]}}]}),
            vec![json!({"bar": 2, "foo": "baz"}), json!({"q": 1})],
            vec![json!({"bar": 2})],
        ),
        case(
            "a pattern's schema is a test of a declared property's value",
            json!({"type": "object", "properties": {"version": {"type": "number"}}, "required": ["version"],
                   "additionalProperties": false,
                   "patternProperties": {"^.+$": {"properties": {"init": {"type": "object"}}}}}),
            vec![
                json!({"version": 0.1}),
                json!({"version": 1, "dev": {"init": {}}}),
            ],
            vec![
                json!({"version": "x"}),
                json!({"dev": {}}),
                json!({"version": 1, "dev": {"init": 1}}),
            ],
        ),
        case(
            "maxProperties below the properties the strict reading would write",
            json!({"type": "object", "minProperties": 2, "maxProperties": 2, "additionalProperties": false,
                   "properties": {"a": {"type": "integer"}, "b": {"type": "string"}, "c": {"type": "boolean"}}}),
            vec![
                json!({"a": 1, "b": "x"}),
                json!({"a": 1, "c": true}),
                json!({"b": "x", "c": false}),
            ],
            vec![
                json!({"a": 1}),
                json!({"a": 1, "b": "x", "c": true}),
                json!({"a": 1, "d": 2}),
            ],
        ),
        case(
            "uniqueItems over an enum",
            json!({"type": "array", "items": {"enum": ["a", "b", "c"]}, "uniqueItems": true}),
            vec![
                json!([]),
                json!(["a"]),
                json!(["c", "a"]),
                json!(["a", "b", "c"]),
            ],
            vec![json!(["a", "a"]), json!(["a", "b", "a"]), json!(["d"])],
        ),
        case(
            "uniqueItems over booleans with minItems",
            json!({"type": "array", "items": {"type": "boolean"}, "uniqueItems": true, "minItems": 2}),
            vec![json!([true, false]), json!([false, true])],
            vec![
                json!([true, true]),
                json!([true]),
                json!([false, true, false]),
            ],
        ),
        case(
            "uniqueItems over a tuple and a small integer range",
            json!({"type": "array", "prefixItems": [{"const": 1}],
                   "items": {"type": "integer", "minimum": 1, "maximum": 3}, "uniqueItems": true}),
            vec![json!([1]), json!([1, 2]), json!([1, 3, 2])],
            vec![json!([1, 1]), json!([2]), json!([1, 2, 2])],
        ),
        case(
            "a keyword beside a $ref constrains its own kind only",
            json!({"$defs": {"cmd": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}},
                   "minLength": 1, "oneOf": [{"$ref": "#/$defs/cmd"}]}),
            vec![json!({"path": "make"})],
            vec![json!(""), json!({})],
        ),
        case(
            "not not: the inner schema read as a validator reads it",
            json!({"allOf": [{"enum": [{"bar": 2, "foo": "baz"}, {"foo": "baz"}]},
                             {"not": {"not": {"properties": {"bar": {"type": "integer"}}, "required": ["bar"]}}}]}),
            vec![json!({"bar": 2, "foo": "baz"})],
            vec![json!({"foo": "baz"}), json!({"bar": 2})],
        ),
        case(
            "minProperties beyond the declared properties: keys told apart",
            json!({"type": "object", "minProperties": 2, "maxProperties": 3}),
            vec![
                json!({"a": 1, "bb": 2}),
                json!({"x": null, "yy": [], "zzz": {}}),
            ],
            vec![
                json!({}),
                json!({"a": 1}),
                json!({"a": 1, "bb": 2, "c": 3, "d": 4}),
            ],
        ),
        case(
            "negative lookahead: a prefix excluded",
            json!({"type": "string", "pattern": "^(?!@@)[@a-z_]+$"}),
            vec![json!("@a"), json!("ab"), json!("a@@"), json!("_")],
            vec![json!("@@x"), json!("@@"), json!(""), json!("A")],
        ),
        case(
            "tempered token: no occurrence anywhere",
            json!({"type": "string", "pattern": "^((?!clyde).)*$"}),
            vec![json!("bonnie"), json!("clyd e"), json!("")],
            vec![json!("clyde"), json!("xclydex"), json!("a\nb")],
        ),
        case(
            "lookaheads on the whole value, with a length",
            json!({"type": "string", "pattern": "^(?=[^=]+$)(?!\\s+$)", "maxLength": 6}),
            vec![json!("a"), json!(" a "), json!("x y")],
            vec![json!("   "), json!("a=b"), json!(""), json!("abcdefg")],
        ),
        case(
            "anchors inside groups",
            json!({"type": "string", "pattern": "(^Hpt_|^Int_|_Armour_)|^([^,]|$)$"}),
            vec![
                json!("Hpt_1"),
                json!("a_Armour_"),
                json!("Int_"),
                json!(""),
                json!("x"),
            ],
            vec![json!("xHpt_"), json!("Int"), json!(",,")],
        ),
        case(
            "format uri under a maxLength too long to count",
            json!({"type": "string", "format": "uri", "maxLength": 255}),
            vec![json!("https://example.com/a/b?q=1"), json!("urn://x")],
            vec![
                json!("no uri"),
                json!(format!("https://example.com/{}", "a".repeat(240))),
            ],
        ),
        case(
            "format email under a maxLength too long to count",
            json!({"type": "string", "format": "email", "maxLength": 100}),
            vec![json!("ana.lima@example.co.uk"), json!("x@y.io")],
            vec![
                json!("no at sign"),
                json!(format!("{}@example.com", "x".repeat(90))),
            ],
        ),
        case(
            "a minLength the pattern implies (its automaton would be too large)",
            json!({"type": "string", "pattern": "a[ab]{12}$", "minLength": 13}),
            vec![json!("abababababababa"), json!("xaaaaaaaaaaaaa")],
            vec![json!("aaaaaaaaaaaa"), json!("ab"), json!("aaaaaaaaaaaaac")],
        ),
        case(
            "a minLength the format implies",
            // The shortest URI written is `a://b`.
            json!({"type": "string", "format": "uri", "minLength": 5}),
            vec![json!("a://b"), json!("https://example.com/x")],
            vec![json!(""), json!("a"), json!("no scheme")],
        ),
        case(
            "pattern under a maxLength too long to count",
            json!({"type": "string", "pattern": "^[a-z]+(-[a-z]+)*$", "maxLength": 3000}),
            vec![
                json!("one-two-three"),
                json!("x"),
                json!("a-".repeat(40) + "b"),
            ],
            vec![
                json!(""),
                json!("-lead"),
                json!("trail-"),
                json!("a".repeat(3001)),
            ],
        ),
        case(
            "a recursive definition merged with a pattern's schema while it is read",
            json!({"definitions": {"node": {"type": "object", "properties": {
                "name": {"type": "string", "maxLength": 3},
                "kids": {"type": "array", "maxItems": 2, "items": {"anyOf": [
                    {"$ref": "#/definitions/node"},
                    {"type": "object", "properties": {"leaf": {"type": "integer"}}, "required": ["leaf"]}
                ], "type": "object"}}},
                "required": ["name"],
                "patternProperties": {"^k": {"type": "array", "maxItems": 1, "items": {"type": "object", "required": ["name"]}}}}},
                "$ref": "#/definitions/node"}),
            vec![
                json!({"name": "a"}),
                json!({"name": "a", "kids": [{"name": "b"}]}),
                json!({"name": "a", "kids": [{"name": "b", "kids": [{"name": "c"}]}]}),
            ],
            vec![
                json!({"name": "a", "kids": [{"leaf": 1}]}),
                json!({"kids": []}),
                json!({"name": "a", "kids": [{"name": "b"}, {"name": "c"}]}),
                json!({"name": "a", "kids": [{"name": "b", "kids": [{"name": 5}]}]}),
            ],
        ),
        case(
            "a recursive definition under type alone keeps to it",
            json!({"definitions": {"t": {"type": "object", "properties": {"sub": {"anyOf": [{"$ref": "#/definitions/t"}, {"type": "null"}], "type": ["object", "null"]}}}}, "$ref": "#/definitions/t"}),
            vec![json!({"sub": null}), json!({"sub": {"sub": null}})],
            vec![json!({"sub": 1}), json!({"sub": {"sub": []}}), json!([])],
        ),
        case(
            "a recursive definition narrowed by a type inside itself",
            json!({"definitions": {"a": {"anyOf": [{"type": "string"}, {"type": "array", "maxItems": 2, "items": {"anyOf": [{"$ref": "#/definitions/a"}], "type": "array"}}]}}, "$ref": "#/definitions/a"}),
            vec![json!("x"), json!([]), json!([[]]), json!([[[]], []])],
            vec![json!(["x"]), json!([1]), json!(5), json!([[], [], []])],
        ),
        case(
            "multipleOf on integers in a range",
            json!({"type": "integer", "multipleOf": 7, "minimum": 1, "maximum": 100}),
            vec![json!(7), json!(14), json!(98)],
            vec![json!(0), json!(8), json!(105), json!(99), json!(7.5)],
        ),
        case(
            "multipleOf a hundredth on non-negative numbers",
            json!({"type": "number", "multipleOf": 0.01, "minimum": 0}),
            vec![
                json!(0),
                json!(12.34),
                json!(5),
                json!(0.5),
                json!(1000000.01),
            ],
            vec![json!(0.001), json!(-0.01), json!(1.005), json!(-3)],
        ),
        case(
            "multipleOf a hundredth between bounds finer than it",
            json!({"type": "number", "multipleOf": 0.01, "exclusiveMinimum": 0.005, "maximum": 0.105}),
            vec![json!(0.01), json!(0.1), json!(0.05)],
            vec![json!(0), json!(0.005), json!(0.11), json!(0.015)],
        ),
        case(
            "multipleOf a finite decimal, unbounded",
            json!({"type": "number", "multipleOf": 2.5}),
            vec![json!(-5), json!(2.5), json!(7.5), json!(0), json!(-12.5)],
            vec![json!(2.4), json!(1), json!(3.75), json!(-0.5)],
        ),
        case(
            "multipleOf 6.75 needs the digits past the point",
            json!({"type": "number", "multipleOf": 6.75, "maximum": 1000}),
            vec![
                json!(6.75),
                json!(13.5),
                json!(27),
                json!(-6.75),
                json!(999),
            ],
            vec![json!(6.7), json!(1), json!(1006.25), json!(13.25)],
        ),
        case(
            "a fractional multipleOf on integers",
            json!({"type": "integer", "multipleOf": 2.5}),
            vec![json!(5), json!(10), json!(-15), json!(0)],
            vec![json!(2.5), json!(7), json!(12)],
        ),
        case(
            "multipleOf implies a number when the type is absent",
            json!({"multipleOf": 11, "exclusiveMinimum": 0}),
            vec![json!(11), json!(22), json!(1100)],
            vec![json!(0), json!(12), json!(5.5), json!(-11)],
        ),
        case(
            "multipleOf in a bounded decimal range",
            json!({"type": "number", "minimum": 0, "maximum": 1, "multipleOf": 0.25}),
            vec![json!(0), json!(0.25), json!(0.5), json!(1)],
            vec![json!(0.3), json!(1.25), json!(-0.25)],
        ),
        case(
            "two multipleOf constraints meet",
            json!({"allOf": [{"type": "integer", "multipleOf": 4}, {"multipleOf": 6}]}),
            vec![json!(0), json!(12), json!(24), json!(-36)],
            vec![json!(4), json!(6), json!(18), json!(30)],
        ),
        case(
            "not multipleOf",
            json!({"type": "integer", "minimum": 0, "maximum": 20, "not": {"multipleOf": 3}}),
            vec![json!(1), json!(2), json!(4), json!(20)],
            vec![json!(0), json!(3), json!(18), json!(21)],
        ),
        case(
            "oneOf told apart by multipleOf and its complement",
            json!({"oneOf": [{"type": "integer", "multipleOf": 3, "maximum": 30}, {"type": "integer", "not": {"multipleOf": 3}, "minimum": 0}]}),
            vec![json!(3), json!(4), json!(-6), json!(31)],
            vec![json!(33), json!(-1), json!("x")],
        ),
        case(
            "if multipleOf then else",
            json!({"type": "integer", "minimum": 0, "maximum": 50, "if": {"multipleOf": 5}, "then": {"minimum": 10}, "else": {"maximum": 30}}),
            vec![json!(10), json!(15), json!(29), json!(50), json!(1)],
            vec![json!(5), json!(0), json!(31), json!(49)],
        ),
        case(
            "allOf of branches implying different types reads each keyword for its own type",
            json!({"type": "object", "properties": {"n": {"allOf": [{"minProperties": 1}, {"multipleOf": 2}]}}, "required": ["n"]}),
            vec![
                json!({"n": 4}),
                json!({"n": {"a": 1}}),
                json!({"n": "x"}),
                json!({"n": null}),
            ],
            vec![json!({"n": 3}), json!({"n": {}}), json!({})],
        ),
        case(
            "contains: at least one matching item, anywhere",
            json!({"type": "array", "contains": {"type": "number", "multipleOf": 3}}),
            vec![
                json!([3]),
                json!(["a", 6]),
                json!([1, 2, 9, "x"]),
                json!([3, 3]),
            ],
            vec![json!([]), json!(["a"]), json!([1, 2, 4]), json!({})],
        ),
        case(
            "contains with minContains and maxContains",
            json!({"type": "array", "items": {"type": "integer"}, "contains": {"minimum": 10}, "minContains": 2, "maxContains": 3}),
            vec![
                json!([10, 11]),
                json!([1, 10, 2, 20, 30]),
                json!([12, 10, 11]),
            ],
            vec![
                json!([10]),
                json!([10, 11, 12, 13]),
                json!([1, 2, 3]),
                json!([10, "x", 11]),
            ],
        ),
        case(
            "contains with minItems and maxItems",
            json!({"type": "array", "items": {"enum": ["a", "b", "c"]}, "contains": {"const": "c"}, "minItems": 2, "maxItems": 3}),
            vec![
                json!(["a", "c"]),
                json!(["c", "c"]),
                json!(["a", "b", "c"]),
                json!(["c", "a", "a"]),
            ],
            vec![
                json!(["c"]),
                json!(["a", "b"]),
                json!(["a", "b", "a", "c"]),
                json!(["a", "d", "c"]),
            ],
        ),
        case(
            "maxContains 0 forbids matching items",
            json!({"type": "array", "contains": {"type": "string"}, "minContains": 0, "maxContains": 0}),
            vec![json!([]), json!([1, null, true])],
            vec![json!(["s"]), json!([1, "s"])],
        ),
        case(
            "contains with uniqueItems",
            json!({"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": 4}, "uniqueItems": true, "contains": {"const": 4}}),
            vec![json!([4]), json!([1, 4]), json!([4, 3, 2, 1])],
            vec![json!([1, 2]), json!([4, 4]), json!([])],
        ),
        case(
            "contains over objects read as a validator reads them",
            json!({"type": "array", "items": {"type": "object", "properties": {"kind": {"type": "string"}, "n": {"type": "integer"}}, "required": ["kind"]},
                   "contains": {"properties": {"kind": {"const": "total"}}}}),
            vec![
                json!([{"kind": "total", "n": 1}]),
                json!([{"kind": "a", "n": 2}, {"kind": "total", "n": 3}]),
            ],
            vec![json!([{"kind": "a", "n": 2}]), json!([])],
        ),
        case(
            "not contains: no item matches",
            json!({"type": "array", "items": {"type": "integer"}, "not": {"contains": {"minimum": 5}}}),
            vec![json!([]), json!([1, 4, -3])],
            vec![json!([5]), json!([1, 7])],
        ),
        case(
            "not contains with counts: too few or too many",
            json!({"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 4, "not": {"contains": {"const": "a"}, "minContains": 2, "maxContains": 3}}),
            vec![json!([]), json!(["a", "b"]), json!(["a", "a", "a", "a"])],
            vec![json!(["a", "a"]), json!(["b", "a", "a", "a"])],
        ),
        case(
            "oneOf told apart by contains and its complement",
            json!({"type": "array", "items": {"type": "integer"}, "oneOf": [{"contains": {"const": 0}}, {"contains": {"const": 1}}]}),
            vec![json!([0]), json!([1, 2]), json!([2, 0, 0])],
            vec![json!([0, 1]), json!([2]), json!([])],
        ),
        case(
            "a format no vocabulary defines is an annotation",
            json!({"type": "object", "properties": {"notes": {"type": "string", "format": "textarea", "maxLength": 5}}, "required": ["notes"]}),
            vec![json!({"notes": "abc"}), json!({"notes": ""})],
            vec![json!({"notes": "abcdef"}), json!({})],
        ),
        case(
            "allOf of literals and a complement that cannot be written: each literal checked",
            json!({"allOf": [{"enum": [{"a": "bar"}, {"a": "bar", "abc": 1}, {"a": 30}, {"b": 1}]},
                             {"not": {"patternProperties": {"a*": {"type": "integer"}}}}]}),
            vec![json!({"a": "bar"}), json!({"a": "bar", "abc": 1})],
            vec![json!({"a": 30}), json!({"b": 1})],
        ),
        case(
            "a literal that is not an integer passes not integer",
            json!({"allOf": [{"enum": [1.5, 2, "x"]}, {"not": {"type": "integer"}}]}),
            vec![json!(1.5), json!("x")],
            vec![json!(2)],
        ),
        case(
            "allOf of literals and an overlapping oneOf: exactly one branch per literal",
            json!({"allOf": [{"enum": [1, 5, 10, "a"]}, {"oneOf": [{"type": "integer", "minimum": 2}, {"type": "integer", "maximum": 8}]}]}),
            vec![json!(1), json!(10)],
            vec![json!(5), json!("a")],
        ),
        case(
            "an enum filtered by multipleOf",
            json!({"enum": [1, 2, 3, 4, 6.5, 8], "multipleOf": 2}),
            vec![json!(2), json!(4), json!(8)],
            vec![json!(1), json!(3), json!(6.5), json!(6)],
        ),
        json_schema_case(
            "minProperties with declared properties, other keys open",
            json!({"type": "object", "properties": {"a": {"type": "integer"}}, "minProperties": 3}),
            vec![
                json!({"a": 1, "b": 2, "cc": 3}),
                json!({"b": "x", "cc": 2, "ddd": 3}),
            ],
            vec![json!({"a": 1, "b": 2}), json!({"a": "1", "b": 2, "cc": 3})],
        ),
        json_schema_case(
            "JSON Schema defaults: properties optional, other keys open",
            json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}}),
            vec![
                json!({}),
                json!({"a": 1}),
                json!({"b": "s", "zz": [1, {"q": null}]}),
                json!({"name": "n"}),
            ],
            vec![json!({"a": "1"}), json!({"b": 2}), json!([])],
        ),
        json_schema_case(
            "JSON Schema defaults: required still required, tuples open",
            json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "properties": {"t": {"type": "array", "items": [{"type": "integer"}]}}, "required": ["t"]}),
            vec![
                json!({"t": []}),
                json!({"t": [1, "x", null]}),
                json!({"t": [1], "k": 2}),
            ],
            vec![json!({}), json!({"t": ["x"]})],
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
        let compiled = match schema::compile_with(&c.schema, &c.options) {
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
        Value::Number(n) if n.as_i64().is_some() => {
            let x = n.as_i64().unwrap_or(0);
            json!([x - 1, x + 1, x * 2, -x, 0][rng.below(5)])
        }
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or(0.0);
            json!([x - 0.25, x + 0.01, x * 2.0, -x, x / 2.0, x * 10.0][rng.below(6)])
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
        Value::Array(items) if rng.below(4) != 0 => {
            let mut out = items.clone();
            match rng.below(3) {
                0 if !out.is_empty() => {
                    let i = rng.below(out.len());
                    out.remove(i);
                }
                1 if !out.is_empty() => {
                    let i = rng.below(out.len());
                    out[i] = mutate(&out[i], pool, rng);
                }
                _ => {
                    let i = rng.below(out.len() + 1);
                    out.insert(i, pool[rng.below(pool.len())].clone());
                }
            }
            Value::Array(out)
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
        let Ok(compiled) = schema::compile_with(&c.schema, &c.options) else {
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
