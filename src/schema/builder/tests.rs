use serde_json::{json, Value};

use super::{BuildError, Kind, SchemaNode};

fn s(name: &str) -> SchemaNode {
    SchemaNode::scalar(Kind::String, Some(name.to_owned()))
}

fn int(name: &str) -> SchemaNode {
    SchemaNode::scalar(Kind::Integer, Some(name.to_owned()))
}

/// `jsonschema`'s verdict on each instance: the judge independent of the
/// builder and of the converter.
fn verdicts(node: &SchemaNode, instances: &[Value]) -> Vec<bool> {
    let validator = jsonschema::options()
        .should_validate_formats(true)
        .build(&node.to_value())
        .expect("jsonschema reads the built schema");
    instances.iter().map(|v| validator.is_valid(v)).collect()
}

fn address() -> SchemaNode {
    SchemaNode::object(
        vec![
            (None, s("city").required(true)),
            (
                None,
                s("zip").constrain("pattern", json!("^[0-9]{4}$")).unwrap(),
            ),
        ],
        Some("address".to_owned()),
    )
    .unwrap()
}

#[test]
fn required_properties_are_required_and_no_other_key_is_allowed() {
    let node = address();
    assert_eq!(
        verdicts(
            &node,
            &[
                json!({"city": "Lisbon"}),
                json!({"city": "Lisbon", "zip": "1000"}),
                json!({"zip": "1000"}),
                json!({"city": "Lisbon", "zip": "10"}),
                json!({"city": "Lisbon", "country": "PT"}),
            ]
        ),
        [true, true, false, false, false]
    );
}

#[test]
fn nullable_admits_null_for_every_kind() {
    let nodes = [
        s("a").nullable(true),
        SchemaNode::enumeration(vec![json!("x"), json!("y")], None)
            .unwrap()
            .nullable(true),
        SchemaNode::any_of(vec![s("a"), int("b")], None)
            .unwrap()
            .nullable(true),
        address().nullable(true),
        SchemaNode::array(int("n"), None).unwrap().nullable(true),
    ];
    for node in &nodes {
        assert_eq!(
            verdicts(node, &[Value::Null]),
            [true],
            "{}",
            node.to_value()
        );
    }
    // And without it, null is refused.
    for node in nodes.iter().map(|n| n.clone().nullable(false)) {
        assert_eq!(
            verdicts(&node, &[Value::Null]),
            [false],
            "{}",
            node.to_value()
        );
    }
}

#[test]
fn a_nested_object_keeps_its_constraints() {
    let person = SchemaNode::object(
        vec![
            (
                None,
                int("age")
                    .constrain("minimum", json!(0))
                    .unwrap()
                    .constrain("maximum", json!(130))
                    .unwrap()
                    .required(true),
            ),
            (None, address().required(true)),
            (
                Some("tags".to_owned()),
                SchemaNode::array(s("tag"), None)
                    .unwrap()
                    .constrain("maxItems", json!(2))
                    .unwrap()
                    .required(true),
            ),
        ],
        None,
    )
    .unwrap();
    assert_eq!(
        verdicts(
            &person,
            &[
                json!({"age": 31, "address": {"city": "Lisbon"}, "tags": []}),
                json!({"age": 131, "address": {"city": "Lisbon"}, "tags": []}),
                json!({"age": 31, "address": {}, "tags": []}),
                json!({"age": 31, "address": {"city": "Lisbon"}, "tags": ["a", "b", "c"]}),
            ]
        ),
        [true, false, false, false]
    );
}

#[test]
fn a_recursive_reference_is_resolved_through_lifted_definitions() {
    // node = {value: integer, next: node|null}, nested as a property.
    let reference = SchemaNode::reference(Kind::Object, "Node", Some("next".to_owned()))
        .nullable(true)
        .required(true);
    let definition = SchemaNode::object(
        vec![(None, int("value").required(true)), (None, reference)],
        None,
    )
    .expect("a pending reference is not checked yet");
    let node = SchemaNode::reference(Kind::Object, "Node", Some("head".to_owned()))
        .with_definition("Node", definition)
        .unwrap()
        .required(true);
    let list = SchemaNode::object(vec![(None, node)], None).unwrap();
    let value = list.to_value();
    assert!(value["$defs"]["Node"].is_object(), "{value}");
    assert!(
        value["properties"]["head"].get("$defs").is_none(),
        "{value}"
    );
    assert_eq!(
        verdicts(
            &list,
            &[
                json!({"head": {"value": 1, "next": {"value": 2, "next": null}}}),
                json!({"head": {"value": 1, "next": {"value": "x", "next": null}}}),
            ]
        ),
        [true, false]
    );
}

fn error(result: Result<SchemaNode, BuildError>) -> String {
    result.expect_err("the step is refused").to_string()
}

#[test]
fn a_keyword_for_another_type_is_refused_naming_the_property() {
    assert_eq!(
        error(s("city").constrain("minimum", json!(3))),
        "property \"city\": minimum applies to integer and number schemas, not to string ones"
    );
    assert_eq!(
        error(int("age").constrain("pattern", json!("x"))),
        "property \"age\": pattern applies to string schemas, not to integer ones"
    );
    assert_eq!(
        error(SchemaNode::scalar(Kind::Boolean, None).constrain("minItems", json!(1))),
        "the boolean schema: minItems applies to array schemas, not to boolean ones"
    );
}

#[test]
fn bad_values_and_crossed_bounds_are_refused() {
    assert_eq!(
        error(s("code").constrain("minLength", json!(-1))),
        "property \"code\": minLength must be a non-negative integer, got -1"
    );
    assert_eq!(
        error(int("n").constrain("multipleOf", json!(0))),
        "property \"n\": multipleOf must be a number greater than 0, got 0"
    );
    let short = s("code").constrain("minLength", json!(5)).unwrap();
    assert_eq!(
        error(short.constrain("maxLength", json!(2))),
        "property \"code\": minLength 5 is greater than maxLength 2"
    );
    let low = int("n").constrain("maximum", json!(1.5)).unwrap();
    assert_eq!(
        error(low.constrain("minimum", json!(2))),
        "property \"n\": minimum 2 is greater than maximum 1.5"
    );
}

#[test]
fn the_converter_checks_each_step() {
    let message = error(s("code").constrain("pattern", json!("(")));
    assert!(
        message.starts_with("property \"code\": pattern \"(\": "),
        "{message}"
    );
    assert_eq!(
        error(s("mail").constrain("format", json!("emial"))),
        "property \"mail\": unknown format \"emial\" (did you mean \"email\"?)"
    );
    let message = error(
        int("n")
            .constrain("exclusiveMinimum", json!(5))
            .unwrap()
            .constrain("exclusiveMaximum", json!(6)),
    );
    assert!(
        message.starts_with("property \"n\": schema can never be satisfied"),
        "{message}"
    );
}

#[test]
fn object_properties_need_one_name_each() {
    let unnamed = SchemaNode::scalar(Kind::String, None);
    assert_eq!(
        error(SchemaNode::object(vec![(None, s("a")), (None, unnamed)], None)),
        "the object schema: property 1 has no name (give it one, as in Schema::string('city'), or use a string key)"
    );
    assert_eq!(
        error(SchemaNode::object(
            vec![(None, s("a")), (Some("a".into()), int("a"))],
            Some("person".into())
        )),
        "property \"person\": property \"a\" is given twice"
    );
    assert_eq!(
        error(SchemaNode::object(vec![(Some("b".into()), s("a"))], None)),
        "the object schema: the key \"b\" and the name \"a\" of its schema differ"
    );
}

#[test]
fn enums_and_any_of_need_members() {
    assert_eq!(
        error(SchemaNode::enumeration(vec![], Some("currency".into()))),
        "property \"currency\": enum needs at least one value"
    );
    assert_eq!(
        error(SchemaNode::enumeration(vec![json!(1), json!(1.0)], None)),
        "the enum schema: enum lists 1.0 twice"
    );
    assert_eq!(
        error(SchemaNode::any_of(vec![], None)),
        "the anyOf schema: anyOf needs at least one schema"
    );
}
