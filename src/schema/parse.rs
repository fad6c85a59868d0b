//! JSON Schema (a `serde_json::Value`) → [`Node`], every keyword checked on
//! the way in. Work is budgeted: nesting depth and the number of schema objects
//! visited are bounded, so hostile input fails fast with an error.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::decimal::Decimal;
use super::error::{ErrorKind, SchemaError};
use super::formats::{self, Format};
use super::ir::{self, any_of, ArrNode, Defs, Node, ObjNode, Prop, StrNode};
use super::keywords::{self, Class};
use super::kinds::Kinds;
use super::range::{Bound, NumRange};
use super::regex;

/// Deepest nesting of schema objects accepted.
pub const MAX_DEPTH: usize = 128;
/// Most schema objects visited (refs included) for one conversion.
pub const MAX_STEPS: usize = 200_000;
/// Largest `minLength` / `minItems` / `minProperties` a grammar enforces, and
/// the cap applied to the matching maxima (a smaller maximum keeps every
/// output valid).
pub const MAX_COUNT: u64 = 10_000;
/// Longest property name, in characters.
pub const MAX_NAME_CHARS: usize = 1_000;

/// The parsed schema: the root node and the `$ref` targets it uses.
#[derive(Debug, Clone)]
pub struct Parsed {
    pub root: Node,
    pub defs: Defs,
}

/// Parse a schema document.
pub fn parse(schema: &Value) -> Result<Parsed, SchemaError> {
    let mut ctx = Ctx {
        root: schema,
        defs: Defs::default(),
        steps: 0,
    };
    let root = ctx.schema(schema, "", 0)?;
    if root == Node::Never {
        return Err(SchemaError::new(
            "",
            ErrorKind::Unsatisfiable {
                reason: "no value is valid".to_owned(),
            },
        ));
    }
    Ok(Parsed {
        root,
        defs: ctx.defs,
    })
}

struct Ctx<'a> {
    root: &'a Value,
    defs: Defs,
    steps: usize,
}

fn err(ptr: &str, kind: ErrorKind) -> SchemaError {
    SchemaError::new(ptr, kind)
}

fn wrong(ptr: &str, keyword: &str, expected: &'static str) -> SchemaError {
    err(
        ptr,
        ErrorKind::WrongType {
            keyword: keyword.to_owned(),
            expected,
        },
    )
}

fn invalid(ptr: &str, keyword: &str, reason: String) -> SchemaError {
    err(
        ptr,
        ErrorKind::Invalid {
            keyword: keyword.to_owned(),
            reason,
        },
    )
}

/// Escape a key for a JSON pointer (RFC 6901).
pub fn escape_pointer(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

impl<'a> Ctx<'a> {
    fn step(&mut self, ptr: &str, depth: usize) -> Result<(), SchemaError> {
        if depth > MAX_DEPTH {
            return Err(err(ptr, ErrorKind::TooDeep { limit: MAX_DEPTH }));
        }
        self.steps += 1;
        if self.steps > MAX_STEPS {
            return Err(err(ptr, ErrorKind::TooComplex { limit: MAX_STEPS }));
        }
        Ok(())
    }

    fn schema(&mut self, value: &'a Value, ptr: &str, depth: usize) -> Result<Node, SchemaError> {
        self.step(ptr, depth)?;
        let map = match value {
            Value::Bool(true) => return Ok(Node::Any),
            Value::Bool(false) => return Ok(Node::Never),
            // An empty PHP array (`[]`) is how PHP code writes `{}`.
            Value::Array(a) if a.is_empty() => return Ok(Node::Any),
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
        for key in map.keys() {
            match keywords::classify(key) {
                Class::Supported | Class::Annotation | Class::Unknown => {}
                Class::Unsupported => {
                    return Err(err(
                        ptr,
                        ErrorKind::UnsupportedKeyword {
                            keyword: key.clone(),
                        },
                    ));
                }
                Class::Misspelled(meant) => {
                    return Err(err(
                        ptr,
                        ErrorKind::Misspelled {
                            keyword: key.clone(),
                            meant,
                        },
                    ));
                }
            }
        }
        for &defs_key in keywords::DEFINITIONS {
            if let Some(v) = map.get(defs_key) {
                if !v.is_object() && !is_empty_array(v) {
                    return Err(wrong(ptr, defs_key, "an object of schemas"));
                }
            }
        }

        let types = self.types(map, ptr)?;
        let mut node = self.typed(map, types, ptr, depth)?;

        if let Some(v) = map.get("enum") {
            let Value::Array(values) = v else {
                return Err(wrong(ptr, "enum", "an array"));
            };
            if values.is_empty() {
                return Err(err(ptr, ErrorKind::EmptyEnum));
            }
            node = self.merge(&node, &Node::Enum(dedup(values)), ptr, "enum")?;
        }
        if let Some(v) = map.get("const") {
            node = self.merge(&node, &Node::Enum(vec![v.clone()]), ptr, "const")?;
        }
        if let Some(v) = map.get("$ref") {
            let Value::String(reference) = v else {
                return Err(wrong(ptr, "$ref", "a string"));
            };
            let target = self.reference(reference, ptr, depth)?;
            node = if node == Node::Any {
                target
            } else {
                self.merge(&node, &target, ptr, "$ref")?
            };
        }
        if let Some(v) = map.get("allOf") {
            for (i, branch) in self
                .branches(v, ptr, "allOf", depth)?
                .into_iter()
                .enumerate()
            {
                node = ir::intersect(&node, &branch, &self.defs).map_err(|reason| {
                    err(
                        ptr,
                        ErrorKind::AllOfNotMergeable {
                            reason: format!("branch {i}: {reason}"),
                        },
                    )
                })?;
            }
        }
        if let Some(v) = map.get("anyOf") {
            let branches = self.branches(v, ptr, "anyOf", depth)?;
            node = self.merge(&node, &any_of(branches), ptr, "anyOf")?;
        }
        if let Some(v) = map.get("oneOf") {
            let branches = self.branches(v, ptr, "oneOf", depth)?;
            node = self.one_of(&node, branches, ptr)?;
        }
        if let Some(v) = map.get("not") {
            let complement = self.negation(v, &format!("{ptr}/not"), depth + 1)?;
            node = self.merge(&node, &complement, ptr, "not")?;
        }
        Ok(node)
    }

    /// The complement of a `not` subschema (see [`negation_leaf`] for the forms).
    fn negation(&mut self, inner: &'a Value, ptr: &str, depth: usize) -> Result<Node, SchemaError> {
        self.step(ptr, depth)?;
        if let Some(node) = negation_leaf(inner, ptr)? {
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

    fn merge(&self, a: &Node, b: &Node, ptr: &str, keyword: &str) -> Result<Node, SchemaError> {
        ir::intersect(a, b, &self.defs).map_err(|reason| {
            invalid(
                ptr,
                keyword,
                format!("cannot be combined with its sibling keywords: {reason}"),
            )
        })
    }

    fn branches(
        &mut self,
        v: &'a Value,
        ptr: &str,
        keyword: &str,
        depth: usize,
    ) -> Result<Vec<Node>, SchemaError> {
        let Value::Array(items) = v else {
            return Err(wrong(ptr, keyword, "a non-empty array of schemas"));
        };
        if items.is_empty() {
            return Err(wrong(ptr, keyword, "a non-empty array of schemas"));
        }
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            out.push(self.schema(item, &format!("{ptr}/{keyword}/{i}"), depth + 1)?);
        }
        Ok(out)
    }

    fn one_of(&self, base: &Node, branches: Vec<Node>, ptr: &str) -> Result<Node, SchemaError> {
        let mut kept: Vec<(usize, Node)> = Vec::new();
        for (i, b) in branches.into_iter().enumerate() {
            let m = self.merge(base, &b, &format!("{ptr}/oneOf/{i}"), "oneOf")?;
            if m != Node::Never {
                kept.push((i, m));
            }
        }
        for (x, (i, a)) in kept.iter().enumerate() {
            for (j, b) in kept.iter().skip(x + 1) {
                if !(ir::excludes(a, b, &self.defs) && ir::excludes(b, a, &self.defs)) {
                    return Err(err(
                        ptr,
                        ErrorKind::OneOfNotExclusive {
                            first: *i,
                            second: *j,
                            hint: "give them different types, or a required property whose const/enum values differ",
                        },
                    ));
                }
            }
        }
        let mut nodes: Vec<Node> = kept.into_iter().map(|(_, n)| n).collect();
        Ok(match nodes.len() {
            0 => Node::Never,
            1 => nodes.pop().unwrap_or(Node::Never),
            _ => Node::OneOf(nodes),
        })
    }

    /// Resolve a local `$ref` to a [`Node::Ref`], parsing its target once.
    fn reference(&mut self, reference: &str, ptr: &str, depth: usize) -> Result<Node, SchemaError> {
        let Some(fragment) = reference.strip_prefix('#') else {
            return Err(err(
                ptr,
                ErrorKind::RemoteRef {
                    reference: reference.to_owned(),
                },
            ));
        };
        let pointer = percent_decode(fragment).ok_or_else(|| {
            err(
                ptr,
                ErrorKind::BadRef {
                    reference: reference.to_owned(),
                    reason: "has an invalid percent-encoding".to_owned(),
                },
            )
        })?;
        if let Some(id) = self.defs.find(&pointer) {
            return Ok(Node::Ref(id));
        }
        if !pointer.is_empty() && !pointer.starts_with('/') {
            return Err(err(
                ptr,
                ErrorKind::BadRef {
                    reference: reference.to_owned(),
                    reason: "is not a JSON pointer (anchors are not supported)".to_owned(),
                },
            ));
        }
        let target = self.root.pointer(&pointer).ok_or_else(|| {
            err(
                ptr,
                ErrorKind::BadRef {
                    reference: reference.to_owned(),
                    reason: "points to nothing in this schema".to_owned(),
                },
            )
        })?;
        let id = self.defs.pointers.len();
        self.defs.pointers.push(pointer.clone());
        self.defs.nodes.push(None);
        let node = self.schema(target, &pointer, depth + 1)?;
        if let Some(slot) = self.defs.nodes.get_mut(id) {
            *slot = Some(node);
        }
        Ok(Node::Ref(id))
    }

    /// The kinds `type` allows (inferred from the type-specific keywords when
    /// it is absent), and whether it leaves every value allowed by being
    /// absent or by naming all seven type names: only then does a schema
    /// without type-specific keywords stand for any value. (Naming `number`
    /// but not `integer` allows the same kinds yet keeps the per-type
    /// defaults.)
    fn types(&self, map: &Map<String, Value>, ptr: &str) -> Result<(Kinds, bool), SchemaError> {
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
    fn typed(
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
            branches.push(Node::Str(self.string(map, ptr)?));
        }
        if types.intersects(Kinds::ARR) {
            branches.push(Node::Arr(self.array(map, ptr, depth)?));
        }
        if types.intersects(Kinds::OBJ) {
            branches.push(self.object(map, ptr, depth)?);
        }
        Ok(any_of(branches))
    }

    fn range(&self, map: &Map<String, Value>, ptr: &str) -> Result<NumRange, SchemaError> {
        let number = |key: &str| -> Result<Option<Decimal>, SchemaError> {
            match map.get(key) {
                None => Ok(None),
                Some(Value::Number(n)) => Decimal::from_json(n)
                    .map(Some)
                    .ok_or_else(|| wrong(ptr, key, "a number")),
                Some(Value::Bool(_)) if key.starts_with("exclusive") => Ok(None),
                Some(_) => Err(wrong(ptr, key, "a number")),
            }
        };
        // Draft 4 writes exclusiveMinimum/Maximum as booleans modifying minimum/maximum.
        let flag = |key: &str| matches!(map.get(key), Some(Value::Bool(true)));
        let bound =
            |inclusive: Option<Decimal>, exclusive: Option<Decimal>, draft4: bool| -> Vec<Bound> {
                let mut out = Vec::new();
                if let Some(d) = inclusive {
                    out.push(if draft4 {
                        Bound::Exclusive(d)
                    } else {
                        Bound::Inclusive(d)
                    });
                }
                if let Some(d) = exclusive {
                    out.push(Bound::Exclusive(d));
                }
                out
            };
        let mins = bound(
            number("minimum")?,
            number("exclusiveMinimum")?,
            flag("exclusiveMinimum"),
        );
        let maxs = bound(
            number("maximum")?,
            number("exclusiveMaximum")?,
            flag("exclusiveMaximum"),
        );
        let mut range = NumRange::default();
        for b in mins {
            range = range.intersect(&NumRange {
                min: Some(b),
                max: None,
            });
        }
        for b in maxs {
            range = range.intersect(&NumRange {
                min: None,
                max: Some(b),
            });
        }
        if let (true, Some(lo), Some(hi)) = (range.is_empty(), &range.min, &range.max) {
            return Err(invalid(
                ptr,
                "minimum",
                format!(
                    "{} is above \"maximum\" {}: no number is valid",
                    lo.value(),
                    hi.value()
                ),
            ));
        }
        Ok(range)
    }

    fn string(&self, map: &Map<String, Value>, ptr: &str) -> Result<StrNode, SchemaError> {
        let (min_len, max_len) = counts(map, ptr, "minLength", "maxLength")?;
        let pattern = match map.get("pattern") {
            None => None,
            Some(Value::String(p)) => {
                regex::pattern_to_expr(p).map_err(|e| {
                    err(
                        ptr,
                        ErrorKind::Pattern {
                            pattern: p.clone(),
                            reason: e.to_string(),
                        },
                    )
                })?;
                Some(p.clone())
            }
            Some(_) => return Err(wrong(ptr, "pattern", "a string")),
        };
        let format = match map.get("format") {
            None => None,
            Some(Value::String(name)) => Some(Format::from_name(name).ok_or_else(|| {
                err(
                    ptr,
                    ErrorKind::UnsupportedFormat {
                        format: name.clone(),
                        supported: formats::SUPPORTED,
                    },
                )
            })?),
            Some(_) => return Err(wrong(ptr, "format", "a string")),
        };
        let node = StrNode {
            min_len,
            max_len,
            pattern,
            format,
            not_in: Vec::new(),
        };
        if let Some(reason) = ir::str_conflict(&node) {
            return Err(invalid(
                ptr,
                if node.pattern.is_some() {
                    "pattern"
                } else {
                    "format"
                },
                reason,
            ));
        }
        Ok(node)
    }

    fn array(
        &mut self,
        map: &'a Map<String, Value>,
        ptr: &str,
        depth: usize,
    ) -> Result<ArrNode, SchemaError> {
        let (min_items, max_items) = counts(map, ptr, "minItems", "maxItems")?;
        let mut prefix = Vec::new();
        let mut items = Node::Any;
        if let Some(v) = map.get("prefixItems") {
            let Value::Array(list) = v else {
                return Err(wrong(ptr, "prefixItems", "an array of schemas"));
            };
            for (i, s) in list.iter().enumerate() {
                prefix.push(self.schema(s, &format!("{ptr}/prefixItems/{i}"), depth + 1)?);
            }
        }
        match map.get("items") {
            None => {}
            Some(v) if is_empty_array(v) => {}
            Some(Value::Array(list)) => {
                // Draft 4 tuple form: no further items (a subset of its "any further items").
                if !prefix.is_empty() {
                    return Err(invalid(
                        ptr,
                        "items",
                        "is an array while prefixItems is also given".to_owned(),
                    ));
                }
                for (i, s) in list.iter().enumerate() {
                    prefix.push(self.schema(s, &format!("{ptr}/items/{i}"), depth + 1)?);
                }
                items = Node::Never;
            }
            Some(s) => items = self.schema(s, &format!("{ptr}/items"), depth + 1)?,
        }
        Ok(ArrNode {
            prefix,
            items: Box::new(items),
            min_items,
            max_items,
        })
    }

    fn object(
        &mut self,
        map: &'a Map<String, Value>,
        ptr: &str,
        depth: usize,
    ) -> Result<Node, SchemaError> {
        let (min_props, max_props) = counts(map, ptr, "minProperties", "maxProperties")?;
        let additional = match map.get("additionalProperties") {
            None | Some(Value::Bool(false)) => Node::Never,
            Some(v) => self.schema(v, &format!("{ptr}/additionalProperties"), depth + 1)?,
        };
        // A key that is required but not declared: JSON Schema lets it take
        // any value unless additionalProperties says otherwise.
        let undeclared = if map.contains_key("additionalProperties") {
            additional.clone()
        } else {
            Node::Any
        };
        let required: Option<Vec<String>> = match map.get("required") {
            None => None,
            Some(Value::Array(names)) => {
                let mut out: Vec<String> = Vec::with_capacity(names.len());
                for n in names {
                    let Value::String(name) = n else {
                        return Err(wrong(ptr, "required", "an array of strings"));
                    };
                    if !out.contains(name) {
                        out.push(name.clone());
                    }
                }
                Some(out)
            }
            Some(_) => return Err(wrong(ptr, "required", "an array of strings")),
        };
        let mut props = Vec::new();
        if let Some(v) = map.get("properties").filter(|v| !is_empty_array(v)) {
            let Value::Object(declared) = v else {
                return Err(wrong(ptr, "properties", "an object of schemas"));
            };
            for (name, s) in declared {
                if name.chars().count() > MAX_NAME_CHARS {
                    return Err(err(
                        ptr,
                        ErrorKind::TooLarge {
                            keyword: "properties".to_owned(),
                            value: format!(
                                "a property name of {} characters",
                                name.chars().count()
                            ),
                            limit: MAX_NAME_CHARS as u64,
                        },
                    ));
                }
                let node = self.schema(
                    s,
                    &format!("{ptr}/properties/{}", escape_pointer(name)),
                    depth + 1,
                )?;
                let is_required = required.as_ref().is_none_or(|r| r.contains(name));
                props.push(Prop {
                    name: name.clone(),
                    node,
                    required: is_required,
                    implicit: required.is_none(),
                });
            }
        }
        for name in required.iter().flatten() {
            if !props.iter().any(|p| &p.name == name) {
                props.push(Prop {
                    name: name.clone(),
                    node: undeclared.clone(),
                    required: true,
                    implicit: false,
                });
            }
        }
        // A property no value can satisfy is forbidden; the object is
        // unsatisfiable only if `required` asks for it explicitly.
        for p in &mut props {
            if p.required && p.node == Node::Never {
                if !p.implicit {
                    return Ok(Node::Never);
                }
                p.required = false;
            }
        }
        Ok(Node::Obj(ObjNode {
            props,
            additional: Box::new(additional),
            min_props,
            max_props,
            open_by_default: !map.contains_key("additionalProperties"),
        }))
    }
}

/// The kinds a type name allows, or an error naming the unknown type.
fn type_kinds(name: &str, ptr: &str) -> Result<Kinds, SchemaError> {
    Kinds::from_type_name(name).ok_or_else(|| {
        err(
            ptr,
            ErrorKind::UnknownType {
                name: name.to_owned(),
            },
        )
    })
}

/// A `min*` / `max*` pair of counts, checked.
fn counts(
    map: &Map<String, Value>,
    ptr: &str,
    min_key: &str,
    max_key: &str,
) -> Result<(u64, Option<u64>), SchemaError> {
    let min = count(map, ptr, min_key)?.unwrap_or(0);
    let max = count(map, ptr, max_key)?;
    if let Some(max) = max {
        if min > max {
            return Err(invalid(
                ptr,
                min_key,
                format!("{min} is greater than \"{max_key}\" {max}"),
            ));
        }
    }
    if min > MAX_COUNT {
        return Err(err(
            ptr,
            ErrorKind::TooLarge {
                keyword: min_key.to_owned(),
                value: min.to_string(),
                limit: MAX_COUNT,
            },
        ));
    }
    Ok((min, max.map(|m| m.min(MAX_COUNT))))
}

fn count(map: &Map<String, Value>, ptr: &str, key: &str) -> Result<Option<u64>, SchemaError> {
    match map.get(key) {
        None => Ok(None),
        Some(Value::Number(n)) => {
            if let Some(u) = n.as_u64() {
                return Ok(Some(u));
            }
            match n.as_f64() {
                Some(f) if f >= 0.0 && f.fract() == 0.0 => Ok(Some(if f >= u64::MAX as f64 {
                    u64::MAX
                } else {
                    f as u64
                })),
                _ => Err(wrong(ptr, key, "a non-negative integer")),
            }
        }
        Some(_) => Err(wrong(ptr, key, "a non-negative integer")),
    }
}

/// The complement of a `not` subschema, for the forms whose meaning does not
/// depend on the converter's defaults: `{}`/`true`, `false`, only `type`,
/// only `enum`/`const`, only `required`, only numeric bounds, and `not`,
/// `anyOf`, `allOf` of such forms. Annotations may accompany them.
fn negation_leaf(inner: &Value, ptr: &str) -> Result<Option<Node>, SchemaError> {
    let map = match inner {
        Value::Bool(b) => return Ok(Some(if *b { Node::Never } else { Node::Any })),
        Value::Array(a) if a.is_empty() => return Ok(Some(Node::Never)),
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

/// `[]`: an empty PHP array, standing for `{}`.
fn is_empty_array(v: &Value) -> bool {
    matches!(v, Value::Array(a) if a.is_empty())
}

fn dedup(values: &[Value]) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::with_capacity(values.len());
    // Values bucketed by a key that equal values share, so that large enums
    // are deduplicated in linear time.
    let mut seen: HashMap<u64, Vec<usize>> = HashMap::new();
    for v in values {
        let same = seen.entry(ir::json_hash(v)).or_default();
        if !same.iter().any(|&i| ir::json_eq(v, &out[i])) {
            same.push(out.len());
            out.push(v.clone());
        }
    }
    out
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Decode `%xx` escapes of a URI fragment.
fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
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
