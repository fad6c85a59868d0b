//! Complements the grammar can write (`not`): every value except some
//! literals, except some kinds, or lacking one of some keys.

use serde_json::Value;

use super::{any_of, ArrNode, Node, ObjNode, Prop, StrNode};
use crate::schema::decimal::Decimal;
use crate::schema::kinds::Kinds;
use crate::schema::range::{Bound, NumRange};

/// Every value except `values` (the meaning of `not: {enum: values}`), or a
/// subset of that when part of it cannot be written: arrays and objects are
/// left out when one of them is excluded.
pub fn all_except(values: &[Value]) -> Node {
    let mut branches = Vec::new();
    if !values.contains(&Value::Null) {
        branches.push(Node::Null);
    }
    let bools: Vec<Value> = [true, false]
        .into_iter()
        .map(Value::Bool)
        .filter(|b| !values.contains(b))
        .collect();
    match bools.len() {
        2 => branches.push(Node::Bool),
        1 => branches.push(Node::Enum(bools)),
        _ => {}
    }
    let mut numbers: Vec<Decimal> = values
        .iter()
        .filter_map(|v| v.as_number().and_then(Decimal::from_json))
        .collect();
    numbers.sort();
    numbers.dedup();
    let mut lower: Option<Bound> = None;
    for n in numbers {
        branches.push(Node::Num(NumRange {
            min: lower.take(),
            max: Some(Bound::Exclusive(n.clone())),
        }));
        lower = Some(Bound::Exclusive(n));
    }
    branches.push(Node::Num(NumRange {
        min: lower,
        max: None,
    }));
    let strings: Vec<String> = values
        .iter()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect();
    branches.push(Node::Str(StrNode {
        not_in: strings,
        ..StrNode::default()
    }));
    if !values.iter().any(|v| v.is_array() || v.is_object()) {
        branches.push(Node::Arr(ArrNode::any()));
        branches.push(Node::Obj(ObjNode::any()));
    }
    any_of(branches)
}

/// Values of none of the kinds in `excluded` (`not: {type: …}`). Non-integer
/// numbers cannot be written apart from integers, so excluding integers
/// excludes every number (a subset of the true complement).
pub fn all_kinds_except(excluded: Kinds) -> Node {
    let mut branches = Vec::new();
    if !excluded.intersects(Kinds::NULL) {
        branches.push(Node::Null);
    }
    if !excluded.intersects(Kinds::BOOL) {
        branches.push(Node::Bool);
    }
    if !excluded.intersects(Kinds::NUMBER) {
        branches.push(Node::Num(NumRange::default()));
    }
    if !excluded.intersects(Kinds::STR) {
        branches.push(Node::Str(StrNode::default()));
    }
    if !excluded.intersects(Kinds::ARR) {
        branches.push(Node::Arr(ArrNode::any()));
    }
    if !excluded.intersects(Kinds::OBJ) {
        branches.push(Node::Obj(ObjNode::any()));
    }
    any_of(branches)
}

/// Values that lack at least one of `keys` (`not: {required: keys}`):
/// non-objects, or objects where one of the keys is absent.
pub fn missing_one_of(keys: &[String]) -> Node {
    let mut branches = match all_kinds_except(Kinds::OBJ) {
        Node::AnyOf(b) => b,
        other => vec![other],
    };
    for key in keys {
        branches.push(Node::Obj(ObjNode {
            props: vec![Prop {
                name: key.clone(),
                node: Node::Never,
                required: false,
                implicit: false,
            }],
            ..ObjNode::any()
        }));
    }
    any_of(branches)
}
