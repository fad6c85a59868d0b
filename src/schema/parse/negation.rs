//! `not`: the complement of a subschema, for the forms whose complement
//! can be written exactly (or as a subset).

use serde_json::Value;

use super::types::type_kinds;
use super::{err, invalid, json_type, wrong, Ctx};
use crate::schema::error::{ErrorKind, SchemaError};
use crate::schema::ir::{self, any_of, Node};
use crate::schema::keywords::{self, Class};
use crate::schema::kinds::Kinds;
use crate::schema::range::NumRange;

impl<'a> Ctx<'a> {
    /// The complement of a `not` subschema (see [`negation_leaf`] for the forms).
    pub(super) fn negation(
        &mut self,
        inner: &'a Value,
        ptr: &str,
        depth: usize,
    ) -> Result<Node, SchemaError> {
        self.step(ptr, depth)?;
        if let Some(node) = negation_leaf(inner, ptr, self.is_empty_map(inner))? {
            return Ok(node);
        }
        let unsupported = || {
            invalid(
                ptr,
                "not",
                "is only supported around {}, true, false, a schema with only \"type\", only \"enum\"/\"const\", only \"required\" or only numeric bounds, and \"not\"/\"anyOf\"/\"allOf\" of those".to_owned(),
            )
        };
        let Value::Object(map) = inner else {
            return Err(unsupported());
        };
        let keys: Vec<&str> = map
            .keys()
            .map(String::as_str)
            .filter(|k| matches!(keywords::classify(k), Class::Supported | Class::Unsupported))
            .collect();
        let numeric = !keys.is_empty() && keys.iter().all(|k| keywords::NUMBER.contains(k));
        match keys.as_slice() {
            // not not X = X; X as the grammar writes it is a subset of X.
            ["not"] => self.schema(&map["not"], &format!("{ptr}/not"), depth + 1),
            // not (A or B) = not A and not B.
            ["anyOf"] => {
                let Value::Array(items) = &map["anyOf"] else {
                    return Err(unsupported());
                };
                let mut node = Node::Any;
                for (i, item) in items.iter().enumerate() {
                    let n = self.negation(item, &format!("{ptr}/anyOf/{i}"), depth + 1)?;
                    node = self.merge(&node, &n, ptr, "not")?;
                }
                Ok(node)
            }
            // not (A and B) = not A or not B.
            ["allOf"] => {
                let Value::Array(items) = &map["allOf"] else {
                    return Err(unsupported());
                };
                let mut branches = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    branches.push(self.negation(item, &format!("{ptr}/allOf/{i}"), depth + 1)?);
                }
                Ok(any_of(branches))
            }
            _ if numeric => {
                // Numbers outside the range, or anything that is not a number.
                let range = self.range(map, ptr)?;
                let mut branches = match ir::all_kinds_except(Kinds::NUMBER) {
                    Node::AnyOf(b) => b,
                    other => vec![other],
                };
                if let Some(b) = &range.min {
                    branches.push(Node::Num(NumRange {
                        min: None,
                        max: Some(b.flipped()),
                    }));
                }
                if let Some(b) = &range.max {
                    branches.push(Node::Num(NumRange {
                        min: Some(b.flipped()),
                        max: None,
                    }));
                }
                Ok(any_of(branches))
            }
            _ => Err(unsupported()),
        }
    }
}

/// The complement of a `not` subschema, for the forms whose meaning does not
/// depend on the converter's defaults: `{}`/`true`, `false`, only `type`,
/// only `enum`/`const`, only `required`, only numeric bounds, and `not`,
/// `anyOf`, `allOf` of such forms. Annotations may accompany them.
fn negation_leaf(
    inner: &Value,
    ptr: &str,
    is_empty_map: bool,
) -> Result<Option<Node>, SchemaError> {
    let map = match inner {
        Value::Bool(b) => return Ok(Some(if *b { Node::Never } else { Node::Any })),
        Value::Array(_) if is_empty_map => return Ok(Some(Node::Never)),
        Value::Object(map) => map,
        other => {
            return Err(err(
                ptr,
                ErrorKind::NotASchema {
                    got: json_type(other),
                },
            ))
        }
    };
    let keys: Vec<&str> = map
        .keys()
        .map(String::as_str)
        .filter(|k| {
            keywords::classify(k) == Class::Supported || keywords::classify(k) == Class::Unsupported
        })
        .collect();
    match keys.as_slice() {
        [] => Ok(Some(Node::Never)),
        ["type"] => {
            let names: Vec<&str> = match map.get("type") {
                Some(Value::String(s)) => vec![s.as_str()],
                Some(Value::Array(list)) => list.iter().filter_map(Value::as_str).collect(),
                _ => return Err(wrong(ptr, "type", "a type name or an array of type names")),
            };
            let mut excluded = Kinds::NONE;
            for name in names {
                excluded |= type_kinds(name, ptr)?;
            }
            Ok(Some(ir::all_kinds_except(excluded)))
        }
        ["enum"] | ["const"] => {
            let values = match (map.get("enum"), map.get("const")) {
                (Some(Value::Array(vs)), _) => vs.clone(),
                (None, Some(v)) => vec![v.clone()],
                _ => return Err(wrong(ptr, "enum", "an array")),
            };
            Ok(Some(ir::all_except(&values)))
        }
        ["required"] => {
            let Some(Value::Array(names)) = map.get("required") else {
                return Err(wrong(ptr, "required", "an array of strings"));
            };
            let keys: Option<Vec<String>> = names
                .iter()
                .map(|n| n.as_str().map(str::to_owned))
                .collect();
            let keys = keys.ok_or_else(|| wrong(ptr, "required", "an array of strings"))?;
            if keys.is_empty() {
                return Ok(Some(Node::Never));
            }
            Ok(Some(ir::missing_one_of(&keys)))
        }
        _ => Ok(None),
    }
}
