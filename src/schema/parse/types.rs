//! `type` (or the type implied by type-specific keywords), and the node
//! with one branch per allowed type.

use serde_json::{Map, Value};

use super::{err, wrong, Ctx};
use crate::schema::error::{ErrorKind, SchemaError};
use crate::schema::ir::{any_of, Node};
use crate::schema::keywords;
use crate::schema::kinds::Kinds;

/// Keywords that decide the kinds of a value themselves.
const DECIDING: &[&str] = &["$ref", "allOf", "anyOf", "oneOf", "enum", "const"];

impl<'a> Ctx<'a> {
    /// The kinds `type` allows (inferred from the type-specific keywords when
    /// it is absent), and whether it leaves every value allowed by being
    /// absent or by naming all seven type names: only then does a schema
    /// without type-specific keywords stand for any value. (Naming `number`
    /// but not `integer` allows the same kinds yet keeps the per-type
    /// defaults.)
    pub(super) fn types(
        &self,
        map: &Map<String, Value>,
        ptr: &str,
    ) -> Result<(Kinds, bool), SchemaError> {
        match map.get("type") {
            Some(Value::String(name)) => Ok((type_kinds(name, ptr)?, false)),
            Some(Value::Array(names)) => {
                let mut kinds = Kinds::NONE;
                let mut integer_named = false;
                for n in names {
                    let Value::String(name) = n else {
                        return Err(wrong(ptr, "type", "a type name or an array of type names"));
                    };
                    kinds |= type_kinds(name, ptr)?;
                    integer_named |= name == "integer";
                }
                if kinds.is_empty() {
                    return Err(err(
                        ptr,
                        ErrorKind::Unsatisfiable {
                            reason: "\"type\" is an empty list".to_owned(),
                        },
                    ));
                }
                Ok((kinds, kinds == Kinds::ALL && integer_named))
            }
            Some(_) => Err(wrong(ptr, "type", "a type name or an array of type names")),
            // Read as a test, a keyword constrains its own kind and lets
            // every other kind through.
            None if !self.infer_types => Ok((Kinds::ALL, true)),
            // Where a sibling decides the kinds (`{"minLength": 1, "$ref":
            // …}` pointing to an object schema), a keyword constrains its
            // own kind only, as JSON Schema says: implying a kind from it
            // could contradict the sibling.
            None if DECIDING.iter().any(|k| map.contains_key(*k)) => Ok((Kinds::ALL, true)),
            None => {
                let has = |list: &[&str]| list.iter().any(|k| map.contains_key(*k));
                let mut kinds = Kinds::NONE;
                if has(keywords::OBJECT) {
                    kinds |= Kinds::OBJ;
                }
                if has(keywords::ARRAY) {
                    kinds |= Kinds::ARR;
                }
                if has(keywords::STRING) {
                    kinds |= Kinds::STR;
                }
                if has(keywords::NUMBER) {
                    kinds |= Kinds::NUMBER;
                }
                Ok(if kinds.is_empty() {
                    (Kinds::ALL, true)
                } else {
                    (kinds, false)
                })
            }
        }
    }

    /// The node for the type-specific keywords, one branch per allowed type.
    pub(super) fn typed(
        &mut self,
        map: &'a Map<String, Value>,
        (types, every_type): (Kinds, bool),
        ptr: &str,
        depth: usize,
    ) -> Result<Node, SchemaError> {
        let unconstrained = every_type
            && ![
                keywords::OBJECT,
                keywords::ARRAY,
                keywords::STRING,
                keywords::NUMBER,
            ]
            .iter()
            .any(|l| l.iter().any(|k| map.contains_key(*k)));
        if unconstrained {
            return Ok(Node::Any);
        }
        let mut branches = Vec::new();
        if types.intersects(Kinds::NULL) {
            branches.push(Node::Null);
        }
        if types.intersects(Kinds::BOOL) {
            branches.push(Node::Bool);
        }
        if types.intersects(Kinds::NUMBER) {
            let range = self.range(map, ptr)?;
            // Non-integers allowed: `number` was named.
            if types.intersects(Kinds::FRAC) {
                branches.push(Node::Num(range));
            } else {
                branches.push(Node::Int(range));
            }
        }
        if types.intersects(Kinds::STR) {
            branches.push(self.string(map, ptr)?);
        }
        if types.intersects(Kinds::ARR) {
            branches.push(self.array_node(map, ptr, depth)?);
        }
        if types.intersects(Kinds::OBJ) {
            branches.push(self.object(map, ptr, depth)?);
        }
        Ok(any_of(branches))
    }
}

/// The kinds a type name allows, or an error naming the unknown type.
pub(super) fn type_kinds(name: &str, ptr: &str) -> Result<Kinds, SchemaError> {
    Kinds::from_type_name(name).ok_or_else(|| {
        err(
            ptr,
            ErrorKind::UnknownType {
                name: name.to_owned(),
            },
        )
    })
}

#[cfg(test)]
mod tests {
    use super::super::parse;
    use crate::schema::ir::Node;
    use serde_json::json;

    #[test]
    fn naming_every_type_is_any_value_but_number_without_integer_keeps_defaults() {
        let all =
            json!({"type": ["null", "boolean", "integer", "number", "string", "array", "object"]});
        assert_eq!(parse(&all).unwrap().root, Node::Any);
        let six = json!({"type": ["null", "boolean", "number", "string", "array", "object"]});
        let Node::AnyOf(branches) = parse(&six).unwrap().root else {
            panic!("expected one branch per type")
        };
        assert_eq!(branches.len(), 6);
        assert!(matches!(branches[2], Node::Num(_)));
        assert_eq!(parse(&json!({})).unwrap().root, Node::Any);
        assert!(matches!(
            parse(&json!({"minimum": 1})).unwrap().root,
            Node::Num(_)
        ));
    }
}
