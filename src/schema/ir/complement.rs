//! Complements the grammar can write (`not`): every value except some
//! literals, except some kinds, or lacking one of some keys.

use serde_json::Value;

use super::{any_of, intersect, ArrNode, Defs, Node, ObjNode, Prop, StrNode};
use crate::schema::decimal::Decimal;
use crate::schema::kinds::Kinds;
use crate::schema::range::{Bound, NumRange};

/// Every value except `values` (the meaning of `not: {enum: values}`), or a
/// subset of that when part of it cannot be written: arrays (or objects)
/// are left out when excluding many of them would take too many
/// alternatives.
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
        branches.push(Node::Num(NumRange::between(
            lower.take(),
            Some(Bound::Exclusive(n.clone())),
        )));
        lower = Some(Bound::Exclusive(n));
    }
    branches.push(Node::Num(NumRange::between(lower, None)));
    let strings: Vec<String> = values
        .iter()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect();
    branches.push(Node::Str(StrNode {
        not_in: strings,
        ..StrNode::default()
    }));
    for (kind, any) in [
        (
            Value::is_array as fn(&Value) -> bool,
            Node::Arr(ArrNode::any()),
        ),
        (Value::is_object, Node::Obj(ObjNode::any())),
    ] {
        let mut node = any;
        for v in values.iter().filter(|v| kind(v)) {
            let other = all_but_literal(v);
            let product = super::alternatives(&node).saturating_mul(super::alternatives(&other));
            node = if product > MAX_LITERAL_ALTERNATIVES {
                Node::Never
            } else {
                intersect(&node, &other, &Defs::default()).unwrap_or(Node::Never)
            };
            if node == Node::Never {
                break;
            }
        }
        branches.push(node);
    }
    any_of(branches)
}

/// Most alternatives the arrays (or objects) of a complement of literals
/// may take; past it they are left out (a subset of the complement).
const MAX_LITERAL_ALTERNATIVES: usize = 256;

/// Arrays (or objects) other than the literal array (or object) `v`,
/// exactly: those of another length (more members), or with a member
/// missing or of another value.
fn all_but_literal(v: &Value) -> Node {
    match v {
        Value::Object(members) => {
            let mut branches = vec![Node::Obj(ObjNode {
                min_props: members.len() as u64 + 1,
                ..ObjNode::any()
            })];
            for (key, value) in members {
                // Absent, or present with another value.
                branches.push(Node::Obj(ObjNode {
                    props: vec![Prop {
                        name: key.clone(),
                        node: all_except(std::slice::from_ref(value)),
                        required: false,
                        implicit: false,
                    }],
                    ..ObjNode::any()
                }));
            }
            any_of(branches)
        }
        Value::Array(items) => {
            let n = items.len() as u64;
            let mut branches = vec![Node::Arr(ArrNode {
                min_items: n + 1,
                ..ArrNode::any()
            })];
            if n > 0 {
                branches.push(Node::Arr(ArrNode {
                    max_items: Some(n - 1),
                    ..ArrNode::any()
                }));
            }
            for (i, item) in items.iter().enumerate() {
                let mut prefix = vec![Node::Any; i];
                prefix.push(all_except(std::slice::from_ref(item)));
                branches.push(Node::Arr(ArrNode {
                    prefix,
                    min_items: i as u64 + 1,
                    ..ArrNode::any()
                }));
            }
            any_of(branches)
        }
        _ => Node::Never,
    }
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

/// Objects that lack at least one of `keys` (`not: {required: keys}`;
/// `required` lets every non-object through, so its complement has none).
pub fn missing_one_of(keys: &[String]) -> Node {
    let mut branches = Vec::new();
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
