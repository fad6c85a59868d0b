//! Every way a schema is refused: the message names the keyword and the JSON
//! pointer, and nothing panics.

use infer::schema;
use serde_json::{json, Value};

/// Value types for generated branches.
const TYPES: [&str; 3] = ["integer", "string", "boolean"];

fn error_of(schema: Value) -> String {
    match schema::to_gbnf(&schema) {
        Ok(g) => panic!("expected an error for {schema}, got a grammar:\n{g}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn each_bad_schema_gets_a_precise_message() {
    let cases: Vec<(Value, &str)> = vec![
        (json!({"type": "object", "properties": {"tags": {"unevaluatedItems": false}}}), "unsupported keyword \"unevaluatedItems\" at /properties/tags (supported: type, not, enum,"),
        (json!({"type": "array", "prefixItems": [{"type": "integer"}], "contains": {"type": "string"}}), "keyword \"contains\" cannot be enforced beside \"prefixItems\" (or an \"items\" array): the grammar counts matching items past the tuple only at the root (#)"),
        (json!({"type": "array", "contains": {"type": "string", "format": "date"}, "maxContains": 2}), "keyword \"maxContains\" needs the items \"contains\" refuses, and they cannot be written: keyword \"not\" cannot exclude a \"format\""),
        (json!({"type": "array", "contains": {}, "minContains": 3, "maxContains": 2}), "keyword \"minContains\" 3 is greater than \"maxContains\" 2"),
        (json!({"type": "array", "contains": {}, "maxContains": 0}), "keyword \"minContains\" 1 (its default beside \"contains\") is greater than \"maxContains\" 0"),
        (json!({"type": "array", "contains": {"type": "integer"}, "minContains": 40, "maxItems": 100}), "\"contains\" with these counts needs 4141 cases of (items, matching items), more than the 1024 a grammar is written with"),
        (json!({"allOf": [{"type": "array", "contains": {"type": "integer"}}, {"contains": {"type": "string"}}]}), "two different \"contains\" on one array cannot be written as one count"),
        (json!({"type": "object", "properties": {"tags": {"not": {"properties": {"a": {}}, "additionalProperties": false}}}}), "keyword \"not\" is only supported around schemas made of \"type\", \"enum\", \"const\", \"required\", numeric bounds, \"multipleOf\", \"minLength\"/\"maxLength\"/\"pattern\", \"minItems\"/\"maxItems\", \"minProperties\"/\"maxProperties\", \"contains\", \"properties\" (without \"additionalProperties\"/\"patternProperties\") and \"not\"/\"anyOf\"/\"allOf\" of such schemas at /properties/tags/not"),
        (json!({"type": "string", "not": {"format": "date"}}), "keyword \"not\" cannot exclude a \"format\": the converter writes a subset of each format, so its complement would let values of the format through at /not"),
        (json!({"type": "object", "properties": {"a": {}, "b": {}, "c": {}, "d": {}, "e": {}, "f": {}, "g": {}}, "required": [], "dependentRequired": {"a": ["h"], "b": ["h"], "c": ["h"], "d": ["h"], "e": ["h"], "f": ["h"], "g": ["h"]}}), "\"dependentRequired\" splitting the object into 128 cases exceeds the limit 64 that a grammar can enforce at the root (#)"),
        (json!({"type": "object", "dependentRequired": {"a": "b"}}), "keyword \"dependentRequired\" must be an object of arrays of strings at /dependentRequired/a"),
        (json!({"type": "object", "dependencies": {"a": 5}}), "schema must be an object or a boolean, got number at /dependencies/a"),
        (
            json!({"type": "string", "minLenght": 3}),
            "unknown keyword \"minLenght\" at the root (#) (did you mean \"minLength\"?)",
        ),
        (
            json!({"type": "array", "unevaluatedItems": {}}),
            "unsupported keyword \"unevaluatedItems\" at the root (#) (supported: ",
        ),
        (json!({"type": "number", "multipleOf": 0}), "keyword \"multipleOf\" 0 must be greater than 0 at the root (#)"),
        (json!({"type": "number", "multipleOf": -2}), "keyword \"multipleOf\" -2 must be greater than 0"),
        (json!({"type": "number", "multipleOf": "2"}), "keyword \"multipleOf\" must be a number"),
        (json!({"properties": {"n": {"multipleOf": 1e-20}}}), "keyword \"multipleOf\" 0.00000000000000000001 has more than 17 significant digits, or more than 17 digits after the point: a multiple of it cannot be written in the digits a number is limited to at /properties/n"),
        (json!({"type": "integer", "multipleOf": 99991}), "keyword \"multipleOf\" 99991 is 99991 steps of 1: the grammar tracks the remainder of the digits read by 99991, and remainders by more than 4000 are more states than it can write at the root (#)"),
        (json!({"type": "number", "multipleOf": 0.4373}), "keyword \"multipleOf\" 0.4373 is 4373 steps of 0.0001"),
        (json!({"allOf": [{"type": "integer", "multipleOf": 3989}, {"multipleOf": 3967}, {"not": {"multipleOf": 3943}}]}), "\"multipleOf\" cannot be enforced here: the integer multiples of 3989 and 3967 not of 3943 with no minimum and no maximum need an automaton of more than 12000 states"),
        (json!({"type": "string", "format": "url"}), "unknown format \"url\" at the root (#) (did you mean \"uri\"?)"),
        (json!({"type": "string", "format": "datetime"}), "unknown format \"datetime\" at the root (#) (did you mean \"date-time\"?)"),
        (json!({"type": "string", "format": "UUID"}), "unknown format \"UUID\" at the root (#) (did you mean \"uuid\"?)"),
        (json!({"type": "string", "format": "emial"}), "unknown format \"emial\" at the root (#) (did you mean \"email\"?)"),
        (json!({"type": "string", "format": "regex"}), "unsupported format \"regex\" at the root (#) (supported: date,"),
        (json!({"type": "string", "format": "idn-hostname"}), "unsupported format \"idn-hostname\""),
        // Satisfiable ([[132], [4]] meets the second branch only), but the
        // narrowing of the oneOf branches leaves part of a complement out:
        // what is left to write is empty, and no claim of a contradiction.
        (
            json!({"type": "array", "oneOf": [
                {"allOf": [{"items": {"$ref": "#/$defs/in1"}}, {"contains": {"$ref": "#/$defs/in2"}}]},
                {"allOf": [{"items": {"$ref": "#/$defs/in2"}}, {"contains": {"$ref": "#/$defs/in1"}}]}],
                "$defs": {"in1": {"type": "array", "contains": {"type": "number", "multipleOf": 11, "minimum": 100}},
                          "in2": {"type": "array", "items": {"type": "number", "multipleOf": 4}}}}),
            "the converter cannot write a grammar for this schema: no value is left: the complement of \"items\" at /oneOf/1/allOf/0 that narrows \"oneOf\" cannot be written in full",
        ),
        (json!({"type": "strin"}), "unknown type \"strin\""),
        (
            json!({"type": 5}),
            "keyword \"type\" must be a type name or an array of type names",
        ),
        (
            json!({"type": []}),
            "schema can never be satisfied: \"type\" is an empty list",
        ),
        (
            json!({"type": "string", "minLength": 5, "maxLength": 3}),
            "keyword \"minLength\" 5 is greater than \"maxLength\" 3 at the root (#)",
        ),
        (
            json!({"type": "array", "minItems": 4, "maxItems": 1}),
            "keyword \"minItems\" 4 is greater than \"maxItems\" 1",
        ),
        (
            json!({"type": "object", "minProperties": 3, "maxProperties": 2}),
            "keyword \"minProperties\" 3 is greater than \"maxProperties\" 2",
        ),
        (
            json!({"type": "string", "minLength": -1}),
            "keyword \"minLength\" must be a non-negative integer",
        ),
        (
            json!({"type": "string", "minLength": 1.5}),
            "keyword \"minLength\" must be a non-negative integer",
        ),
        (
            json!({"type": "string", "maxLength": "3"}),
            "keyword \"maxLength\" must be a non-negative integer",
        ),
        (
            json!({"type": "string", "minLength": 20000000}),
            "\"minLength\" 20000000 exceeds the limit 10000",
        ),
        (
            json!({"type": "array", "minItems": 1000000000}),
            "\"minItems\" 1000000000 exceeds the limit 10000",
        ),
        (json!({"enum": []}), "\"enum\" must not be empty"),
        (json!({"enum": "red"}), "keyword \"enum\" must be an array"),
        (
            json!({"type": "integer", "minimum": 10, "maximum": 1}),
            "keyword \"minimum\" 10 is above \"maximum\" 1",
        ),
        (
            json!({"type": "integer", "minimum": "0"}),
            "keyword \"minimum\" must be a number",
        ),
        (
            json!({"type": "string", "format": "uri-template"}),
            "unsupported format \"uri-template\" at the root (#) (supported: date, time, date-time, \
             duration, uuid, email, hostname, ipv4, ipv6, uri, uri-reference, iri, iri-reference, \
             json-pointer, relative-json-pointer, byte)",
        ),
        (
            json!({"type": "string", "pattern": "(?<=a)b"}),
            "pattern \"(?<=a)b\": unsupported regex feature lookbehind (?<= at offset 0 at the root (#)",
        ),
        (
            json!({"type": "string", "pattern": "^([^,]+(,|$)){3,}$"}),
            "pattern \"^([^,]+(,|$)){3,}$\": unsupported regex feature an assertion inside an unbounded repetition at offset 2 at the root (#)",
        ),
        (
            // Each property merges the definition being read with another
            // `required`: more merged copies than a schema may need.
            json!({"definitions": {"n": {"type": "object", "required": [], "properties":
                (0..300).map(|i| (format!("p{i}"), json!({"anyOf": [{"$ref": "#/definitions/n"}], "required": [format!("k{i}")]})))
                    .collect::<serde_json::Map<String, Value>>()}}, "$ref": "#/definitions/n"}),
            "the converter cannot write a grammar for this schema: recursive definitions merged with their siblings need more than 256 merged copies at the root (#)",
        ),
        (
            // Merged once the definition is read: two different `contains`.
            json!({"definitions": {"n": {"type": "array", "contains": {"type": "integer"}, "items": {"anyOf": [
                {"type": "integer"},
                {"anyOf": [{"$ref": "#/definitions/n"}], "contains": {"type": "string"}}]}}}, "$ref": "#/definitions/n"}),
            "the converter cannot write a grammar for this schema: #/definitions/n merged with its siblings: two different \"contains\" on one array cannot be written as one count at the root (#)",
        ),
        (
            json!({"type": "string", "pattern": "^(?=a)b"}),
            "schema can never be satisfied",
        ),
        (
            // A URI of at least 300 characters cannot be written by capping
            // its repetitions, and its automaton is too large to count.
            json!({"type": "string", "format": "uri", "minLength": 300, "maxLength": 400}),
            "keyword \"format\" cannot be enforced together with the other string constraints here: their automaton needs more than 4096 states at the root (#)",
        ),
        (json!({"type": "string", "pattern": "(a"}), "pattern \"(a\""),
        (
            json!({"type": "string", "pattern": 5}),
            "keyword \"pattern\" must be a string",
        ),
        (
            json!({"$ref": "http://example.com/schema.json"}),
            "remote $ref \"http://example.com/schema.json\" is not supported",
        ),
        (
            json!({"$ref": "#/$defs/missing"}),
            "$ref \"#/$defs/missing\" points to nothing in this schema",
        ),
        (json!({"$ref": "#anchor"}), "is not a JSON pointer"),
        (json!({"$ref": 7}), "keyword \"$ref\" must be a string"),
        (json!({"$ref": "#"}), "recurses with no base case"),
        (
            json!({"$defs": {"a": {"type": "object", "properties": {"x": {"$ref": "#/$defs/a"}}, "required": ["x"]}}, "$ref": "#/$defs/a"}),
            "recurses with no base case",
        ),
        (
            // Two keys both matching ^x: the grammar cannot tell them apart.
            json!({"type": "object", "patternProperties": {"^x": {}}, "minProperties": 2}),
            "the converter cannot write a grammar for this schema: an object needing 2 keys besides its declared properties",
        ),
        (
            // 20,000 optional properties: refused for its size, without
            // exhausting the stack on the way.
            json!({"type": "object", "required": [], "properties": (0..20_000)
                .map(|i| (format!("property_number_{i:05}"), json!({"type": "integer"})))
                .collect::<serde_json::Map<String, Value>>()}),
            "more than the limit of 1048576 bytes a grammar may have",
        ),
        (
            // 1.5 is valid, but "not integer" is written as no number at all.
            json!({"allOf": [{"type": "number", "minimum": 1.5, "maximum": 1.5}, {"not": {"type": "integer"}}]}),
            "the converter cannot write a grammar for this schema: no value is left: numbers that are not integers cannot be written apart from integers",
        ),
        (
            json!({"type": "array", "items": {"type": "string"}, "uniqueItems": true}),
            "keyword \"uniqueItems\" can only be enforced when every item comes from a finite set of at most 64 values",
        ),
        (
            json!({"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": 64}, "uniqueItems": true}),
            "\"uniqueItems\" more than 20000 arrays of distinct items exceeds the limit 20000",
        ),
        (
            json!({"type": "array", "uniqueItems": 1}),
            "uniqueItems",
        ),
        (
            // Complementing a branch of 2,100 subschemas is past the budget
            // for making branches exclusive; the $ref it began is dropped.
            json!({"$defs": {"s": {"type": "string"}}, "oneOf": [{"$ref": "#/$defs/s"}, {"anyOf": (0..2_100)
                .map(|i| json!({"const": format!("x{i}")})).chain([json!({"$ref": "#/$defs/s"})]).collect::<Vec<Value>>()}]}),
            "oneOf branches 0 and 1 are not provably exclusive",
        ),
        (
            json!({"oneOf": [{"type": "integer"}, {"type": "number"}]}),
            "oneOf branches 0 and 1 are not provably exclusive",
        ),
        (
            // Each branch would be split by the 6 ways each of the 4 others
            // can fail: past the bound on alternatives.
            json!({"type": "object", "maxProperties": 1, "oneOf": (0..5).map(|k| json!({"properties":
                (0..6).map(|i| (format!("p{k}{i}"), json!({"type": TYPES[i % 3]})))
                    .collect::<serde_json::Map<String, Value>>()})).collect::<Vec<Value>>()}),
            "oneOf branches 0 and 4 are not provably exclusive",
        ),
        (
            // The last 13 characters decide: 2^13 automaton states. (A
            // minLength within the pattern's own 13 would need none.)
            json!({"type": "string", "pattern": "a[ab]{12}$", "minLength": 20}),
            "keyword \"pattern\" cannot be enforced together with the other string constraints here: their automaton needs more than 4096 states at the root (#)",
        ),
        (
            json!({"allOf": [{"pattern": "a[ab]{12}$"}, {"pattern": "^b"}]}),
            "allOf cannot be merged into one schema: branch 1: cannot be enforced together with the other string constraints here: their automaton needs more than 4096 states at the root (#)",
        ),
        (
            // A counter of 5,000 characters over a 200-state pattern.
            json!({"type": "string", "pattern": "^(?:\\S+\\s+){0,99}\\S+$", "maxLength": 5000}),
            "keyword \"pattern\" cannot be enforced together with the other string constraints here: their automaton needs more than 4096 states at the root (#)",
        ),
        (
            json!({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["b"], "additionalProperties": false}),
            "schema can never be satisfied",
        ),
        (json!(false), "schema can never be satisfied"),
        (
            json!(42),
            "schema must be an object or a boolean, got number",
        ),
        (
            json!({"properties": 3}),
            "keyword \"properties\" must be an object of schemas",
        ),
        (
            json!({"required": "a"}),
            "keyword \"required\" must be an array of strings",
        ),
        (
            json!({"anyOf": []}),
            "keyword \"anyOf\" must be a non-empty array of schemas",
        ),
        (
            json!({"allOf": {}}),
            "keyword \"allOf\" must be a non-empty array of schemas",
        ),
        (
            json!({"$defs": 1}),
            "keyword \"$defs\" must be an object of schemas",
        ),
    ];
    let mut failures = Vec::new();
    for (schema, expected) in cases {
        let got = error_of(schema.clone());
        if !got.contains(expected) {
            failures.push(format!(
                "{schema}\n  expected: {expected}\n  got:      {got}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn pointers_locate_nested_errors() {
    let e = schema::to_gbnf(&json!({
        "type": "object",
        "properties": {"a~b/c": {"type": "array", "items": {"anyOf": [{"type": "string"}, {"unevaluatedItems": true}]}}}
    }))
    .unwrap_err();
    assert_eq!(e.pointer, "/properties/a~0b~1c/items/anyOf/1");
    assert_eq!(e.keyword(), Some("unevaluatedItems"));
}

#[test]
fn annotations_are_ignored() {
    // Ignored means no effect: the grammar is the one without them.
    let g = schema::to_gbnf(&json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "x", "title": "t", "description": "d",
        "default": 1, "examples": [1], "$comment": "c", "deprecated": false, "readOnly": true, "writeOnly": false,
        "type": "integer"
    }));
    assert_eq!(
        g.expect("annotations are accepted"),
        schema::to_gbnf(&json!({"type": "integer"})).unwrap()
    );
}

#[test]
fn hostile_schemas_are_refused_or_converted() {
    // 10,000 levels of nesting.
    let mut deep = json!({"type": "string"});
    for _ in 0..10_000 {
        // Built by moving, not with json!, which would copy the whole value each time.
        let mut level = serde_json::Map::new();
        level.insert("type".into(), json!("array"));
        level.insert("items".into(), deep);
        deep = Value::Object(level);
    }
    let e = schema::to_gbnf(&deep).unwrap_err().to_string();
    assert!(
        e.contains("nesting is deeper than the limit of 128 levels"),
        "{e}"
    );
    // Take the deep value apart level by level: a recursive drop would
    // overflow the test thread's stack.
    while let Value::Object(mut level) = deep {
        deep = level.remove("items").unwrap_or(Value::Null);
    }

    // A wide anyOf of consts intersected with allOf: converted, into a
    // grammar the checker accepts that lists every one of the 2000 values.
    let wide: Vec<Value> = (0..2000).map(|i| json!({"const": i})).collect();
    let gbnf = schema::to_gbnf(&json!({"anyOf": wide, "allOf": [{"type": "integer"}]}))
        .expect("the wide anyOf converts");
    infer::grammar::check::check(&gbnf).expect("the checker accepts the grammar");
    for i in [0, 1, 999, 1999] {
        assert!(
            gbnf.contains(&format!("\"{i}\"")),
            "{i} is missing:\n{gbnf}"
        );
    }
    assert!(!gbnf.contains("\"2000\""), "{gbnf}");
}
