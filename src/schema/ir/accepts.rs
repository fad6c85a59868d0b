//! Exact membership of literal values: in the grammar's language
//! ([`accepts`]) or under JSON Schema's own semantics ([`validates`]).

use serde_json::Value;

use super::{json_eq, Defs, Node, Prop, Semantics, MAX_REASONING_DEPTH};
use crate::schema::decimal::Decimal;

/// Whether `value` is in the grammar language of `node`: `Some(verdict)`, or
/// `None` when the node holds a constraint this function cannot check exactly.
pub fn accepts(node: &Node, value: &Value, defs: &Defs) -> Option<bool> {
    accepts_at(node, value, defs, 0, Semantics::Grammar)
}

/// Whether a JSON Schema validator accepts `value` against `node`.
pub fn validates(node: &Node, value: &Value, defs: &Defs) -> Option<bool> {
    accepts_at(node, value, defs, 0, Semantics::Validator)
}

fn accepts_at(
    node: &Node,
    value: &Value,
    defs: &Defs,
    depth: usize,
    sem: Semantics,
) -> Option<bool> {
    if depth > MAX_REASONING_DEPTH {
        return None;
    }
    let next = depth + 1;
    Some(match (node, value) {
        (Node::Any, _) => true,
        (Node::Never, _) => false,
        (Node::Null, Value::Null) | (Node::Bool, Value::Bool(_)) => true,
        (Node::Int(range), Value::Number(n)) => {
            let d = Decimal::from_json(n)?;
            d.is_integer() && range.contains(&d)
        }
        (Node::Num(range), Value::Number(n)) => range.contains(&Decimal::from_json(n)?),
        (Node::Str(s), Value::String(text)) => {
            let verdict = s.accepts(text).ok()?;
            // A format's grammar is a subset of what validators accept: a
            // value outside it may still be valid.
            if sem == Semantics::Validator && !verdict && !s.formats.is_empty() {
                return None;
            }
            verdict
        }
        (Node::Arr(a), Value::Array(items)) => {
            let n = items.len() as u64;
            if n < a.min_items || a.max_items.is_some_and(|m| n > m) {
                return Some(false);
            }
            for (i, item) in items.iter().enumerate() {
                let schema = a.prefix.get(i).unwrap_or(&a.items);
                if !accepts_at(schema, item, defs, next, sem)? {
                    return Some(false);
                }
            }
            match &a.contains {
                None => true,
                Some(c) => {
                    let mut counted = 0u64;
                    for item in items {
                        let inside = accepts_at(&c.node, item, defs, next, sem)?;
                        // With a maximum, an item that does not count must
                        // be one the grammar writes as not counting.
                        if !inside && c.max.is_some() && sem == Semantics::Grammar {
                            let outside = c.outside.as_ref()?;
                            if !accepts_at(outside, item, defs, next, sem)? {
                                return Some(false);
                            }
                        }
                        counted += u64::from(inside);
                    }
                    counted >= c.min && c.max.is_none_or(|m| counted <= m)
                }
            }
        }
        (Node::Obj(o), Value::Object(map)) => {
            let n = map.len() as u64;
            if n < o.min_props || o.max_props.is_some_and(|m| n > m) {
                return Some(false);
            }
            let required = |p: &&Prop| p.required && (sem == Semantics::Grammar || !p.implicit);
            if o.props
                .iter()
                .filter(required)
                .any(|p| !map.contains_key(&p.name))
            {
                return Some(false);
            }
            for (key, item) in map {
                let schema = match sem {
                    Semantics::Grammar => o.schema_of(key),
                    Semantics::Validator => o.real_schema_of(key),
                };
                if !accepts_at(schema, item, defs, next, sem)? {
                    return Some(false);
                }
            }
            true
        }
        (Node::Enum(values), v) => values.iter().any(|w| json_eq(v, w)),
        (Node::AnyOf(branches), v) => {
            let mut unknown = false;
            for b in branches {
                match accepts_at(b, v, defs, next, sem) {
                    Some(true) => return Some(true),
                    Some(false) => {}
                    None => unknown = true,
                }
            }
            if unknown {
                return None;
            }
            false
        }
        (Node::OneOf(branches), v) => {
            let mut matches = 0;
            for b in branches {
                if accepts_at(b, v, defs, next, sem)? {
                    matches += 1;
                }
            }
            matches == 1
        }
        (Node::Ref(id), v) => accepts_at(defs.get(*id)?, v, defs, next, sem)?,
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::ir::testing::{int, obj};
    use crate::schema::ir::StrNode;
    use serde_json::json;

    #[test]
    fn accepts_checks_every_constraint() {
        let defs = Defs::default();
        let n = obj(
            vec![("a", int(Some(0), Some(9)), true), ("b", Node::Bool, false)],
            Node::Never,
        );
        assert_eq!(accepts(&n, &json!({"a": 3}), &defs), Some(true));
        assert_eq!(accepts(&n, &json!({"a": 3, "b": true}), &defs), Some(true));
        assert_eq!(accepts(&n, &json!({"a": 10}), &defs), Some(false));
        assert_eq!(accepts(&n, &json!({"b": true}), &defs), Some(false));
        assert_eq!(accepts(&n, &json!({"a": 1, "c": 1}), &defs), Some(false));
        assert_eq!(accepts(&n, &json!({"a": 1.5}), &defs), Some(false));
        assert_eq!(accepts(&n, &json!({"a": 2.0}), &defs), Some(true));
        let patterned = Node::Str(StrNode {
            patterns: vec!["^a".into()],
            ..StrNode::default()
        });
        assert_eq!(accepts(&patterned, &json!("abc"), &defs), Some(true));
        assert_eq!(accepts(&patterned, &json!("bac"), &defs), Some(false));
        let dated = Node::Str(StrNode {
            formats: vec![crate::schema::formats::Format::Date],
            ..StrNode::default()
        });
        assert_eq!(accepts(&dated, &json!("2024-02-29"), &defs), Some(true));
        assert_eq!(accepts(&dated, &json!("2023-02-29"), &defs), Some(false));
        // Validators may accept dates the grammar never writes.
        assert_eq!(validates(&dated, &json!("2023-02-29"), &defs), None);
        assert_eq!(accepts(&patterned, &json!(1), &defs), Some(false));
    }
}
