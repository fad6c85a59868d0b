//! `dependentRequired`, `dependentSchemas` and draft 4's `dependencies`:
//! when a key is present, other keys must be too, or the whole object must
//! match another schema.
//!
//! Each dependency on key `a` splits the object in two exact cases: `a`
//! absent (the object unchanged but for `a`), or `a` present and the
//! dependency met. Where the object already requires `a` only the second
//! case remains, where it forbids `a` only the first; a property that is
//! required only by the strict defaults is written with its dependency
//! (the converter writes every property it can).

use serde_json::{Map, Value};

use super::{err, escape_pointer, wrong, Ctx};
use crate::schema::error::{ErrorKind, SchemaError};
use crate::schema::ir::{any_of, ArrNode, Node, ObjNode, Prop, StrNode};
use crate::schema::range::NumRange;

/// The most alternatives the dependencies of one object may split it into.
pub const MAX_DEPENDENCY_CASES: usize = 64;

/// A key's dependency, with where it was written.
struct Dependency {
    key: String,
    node: Node,
    keyword: &'static str,
}

impl<'a> Ctx<'a> {
    /// `node` (an object schema) with the dependencies of `map` applied.
    pub(super) fn dependencies(
        &mut self,
        map: &'a Map<String, Value>,
        node: Node,
        ptr: &str,
        depth: usize,
    ) -> Result<Node, SchemaError> {
        let mut deps = Vec::new();
        for keyword in ["dependentRequired", "dependentSchemas", "dependencies"] {
            let Some(v) = map.get(keyword) else {
                continue;
            };
            if self.is_empty_map(v) {
                continue;
            }
            let Value::Object(entries) = v else {
                return Err(wrong(ptr, keyword, dependency_shape(keyword)));
            };
            for (key, value) in entries {
                let at = format!("{ptr}/{keyword}/{}", escape_pointer(key));
                let node = match (keyword, value) {
                    ("dependentRequired" | "dependencies", Value::Array(names)) => {
                        required_keys(names)
                            .ok_or_else(|| wrong(&at, keyword, "an object of arrays of strings"))?
                    }
                    ("dependentSchemas" | "dependencies", schema) if !value.is_array() => {
                        self.schema(schema, &at, depth + 1)?
                    }
                    _ => return Err(wrong(&at, keyword, dependency_shape(keyword))),
                };
                deps.push(Dependency {
                    key: key.clone(),
                    node,
                    keyword,
                });
            }
        }
        let mut node = node;
        for dep in deps {
            node = self.apply(&node, &dep, ptr)?;
            let cases = match &node {
                Node::AnyOf(branches) => branches.len(),
                _ => 1,
            };
            if cases > MAX_DEPENDENCY_CASES {
                return Err(err(
                    ptr,
                    ErrorKind::TooLarge {
                        keyword: dep.keyword.to_owned(),
                        value: format!("splitting the object into {cases} cases"),
                        limit: MAX_DEPENDENCY_CASES as u64,
                    },
                ));
            }
        }
        Ok(node)
    }

    /// `node` where `dep` holds: each object case split on its key.
    fn apply(&mut self, node: &Node, dep: &Dependency, ptr: &str) -> Result<Node, SchemaError> {
        let object = match node {
            Node::AnyOf(branches) => {
                let mut out = Vec::with_capacity(branches.len() * 2);
                for b in branches {
                    match self.apply(b, dep, ptr)? {
                        Node::AnyOf(parts) => out.extend(parts),
                        Node::Never => {}
                        other => out.push(other),
                    }
                }
                return Ok(any_of(out));
            }
            // Exclusive cases (an earlier dependency met through `oneOf`):
            // each narrowed on its own stays apart from the others.
            Node::OneOf(branches) => {
                let mut out = Vec::with_capacity(branches.len());
                for b in branches {
                    match self.apply(b, dep, ptr)? {
                        Node::Never => {}
                        other => out.push(other),
                    }
                }
                return Ok(match out.len() {
                    0 => Node::Never,
                    1 => out.pop().unwrap_or(Node::Never),
                    _ => Node::OneOf(out),
                });
            }
            Node::Obj(o) => o,
            // Values that are surely not objects: dependencies do not apply.
            Node::Null | Node::Bool | Node::Int(_) | Node::Num(_) | Node::Str(_) | Node::Arr(_) => {
                return Ok(node.clone())
            }
            Node::Never => return Ok(Node::Never),
            // Anything else (a `$ref`, an enum, any value): intersected with
            // the dependency as a schema of its own.
            Node::Any | Node::Enum(_) | Node::Ref(_) => {
                let dependency = self.as_schema(dep, ptr)?;
                return self.merge(node, &dependency, ptr, dep.keyword);
            }
        };
        let k = dep.keyword;
        let required = object
            .props
            .iter()
            .find(|p| p.name == dep.key)
            .map(|p| (p.required, p.implicit));
        match required {
            // Always there: the dependency always applies.
            Some((true, false)) => self.merge(node, &dep.node, ptr, k),
            // Written every time by the strict defaults (and left out only
            // where it would recurse without end, when the dependency met
            // anyway does no harm): written with its dependency, or left
            // out when the dependency cannot be met.
            Some((true, true)) => match self.merge(node, &dep.node, ptr, k)? {
                Node::Never => self.merge(node, &key_absent(&dep.key), ptr, k),
                met => Ok(met),
            },
            // Optional: absent, or present with the dependency met.
            _ => {
                let absent = self.merge(node, &key_absent(&dep.key), ptr, k)?;
                let with_key = self.merge(node, &key_present(&dep.key), ptr, k)?;
                let present = self.merge(&with_key, &dep.node, ptr, k)?;
                Ok(any_of(
                    [absent, present]
                        .into_iter()
                        .filter(|n| *n != Node::Never)
                        .collect(),
                ))
            }
        }
    }
}

impl Ctx<'_> {
    /// The dependency as a schema of any value: not an object, an object
    /// without its key, or one with its key that meets it.
    fn as_schema(&mut self, dep: &Dependency, ptr: &str) -> Result<Node, SchemaError> {
        let with_key = self.merge(&key_present(&dep.key), &dep.node, ptr, dep.keyword)?;
        Ok(any_of(vec![
            Node::Null,
            Node::Bool,
            Node::Num(NumRange::default()),
            Node::Str(StrNode::default()),
            Node::Arr(ArrNode::any()),
            key_absent(&dep.key),
            with_key,
        ]))
    }
}

fn dependency_shape(keyword: &str) -> &'static str {
    match keyword {
        "dependentRequired" => "an object of arrays of strings",
        "dependentSchemas" => "an object of schemas",
        _ => "an object of schemas or arrays of strings",
    }
}

/// Objects that have every key of `names`, or `None` when one is not a string.
fn required_keys(names: &[Value]) -> Option<Node> {
    let mut props: Vec<Prop> = Vec::with_capacity(names.len());
    for n in names {
        let name = n.as_str()?;
        if props.iter().all(|p| p.name != name) {
            props.push(required(name, Node::Any));
        }
    }
    Some(Node::Obj(ObjNode {
        props,
        ..ObjNode::any()
    }))
}

fn required(name: &str, node: Node) -> Prop {
    Prop {
        name: name.to_owned(),
        node,
        required: true,
        implicit: false,
    }
}

/// Objects with `key`.
fn key_present(key: &str) -> Node {
    Node::Obj(ObjNode {
        props: vec![required(key, Node::Any)],
        ..ObjNode::any()
    })
}

/// Objects without `key`.
fn key_absent(key: &str) -> Node {
    Node::Obj(ObjNode {
        props: vec![Prop {
            name: key.to_owned(),
            node: Node::Never,
            required: false,
            implicit: false,
        }],
        ..ObjNode::any()
    })
}
