//! `not`: the complement of a subschema, written exactly or as a subset.
//!
//! A schema is the conjunction of its keywords, so its complement is the
//! union of the complements of its keywords (or of groups of keywords that
//! only act together, such as the numeric bounds). Each keyword constrains
//! one kind of value and lets every other kind through, so its complement
//! holds values of that kind only: `not: {minimum: 5}` matches numbers
//! below 5, not strings. A keyword whose complement cannot be written is
//! an error; none is ever dropped.

use serde_json::{Map, Value};

use super::types::type_kinds;
use super::{counts, escape_pointer, invalid, wrong, Ctx, SchemaValue};
use crate::schema::error::SchemaError;
use crate::schema::ir::{self, any_of, ArrNode, Contains, Node, ObjNode, Prop, StrNode};
use crate::schema::keywords::{self, Class};
use crate::schema::kinds::Kinds;
use crate::schema::range::NumRange;

/// Most `oneOf` branches whose pairwise meets a complement lists.
const MAX_PAIRED_BRANCHES: usize = 8;

/// What `not` can be written around, for the error message.
const FORMS: &str = "is only supported around schemas made of \"type\", \"enum\", \"const\", \
     \"required\", numeric bounds, \"multipleOf\", \"minLength\"/\"maxLength\"/\"pattern\", \"minItems\"/\"maxItems\", \
     \"minProperties\"/\"maxProperties\", \"contains\", \"properties\" (without \"additionalProperties\"/\"patternProperties\") \
     and \"not\"/\"anyOf\"/\"allOf\" of such schemas";

impl<'a> Ctx<'a> {
    /// Values the subschema `inner` does not match (a subset of them where
    /// the exact complement cannot be written).
    /// Record that part of a complement was left out (a subset of it is
    /// written): a schema left with no value must not be called
    /// unsatisfiable then.
    fn left_out(&mut self, keyword: &str, ptr: &str) {
        self.approximated.get_or_insert_with(|| {
            format!(
                "the complement of \"{keyword}\" at {} that narrows \"oneOf\" cannot be written in full",
                if ptr.is_empty() { "the root" } else { ptr }
            )
        });
    }

    /// The arrays `contains` (with its counts) refuses: too few matching
    /// items (none at all: every item refused by `contains`), or too many.
    fn negated_contains(
        &mut self,
        map: &'a Map<String, Value>,
        ptr: &str,
        depth: usize,
    ) -> Result<Vec<Node>, SchemaError> {
        let inner = &map["contains"];
        let at = format!("{ptr}/contains");
        let Some(c) = self.contains(map, ptr, depth, true)? else {
            // No count asked: nothing is refused.
            return Ok(Vec::new());
        };
        let mut branches = Vec::new();
        if c.min >= 1 {
            let outside = self.negation(inner, &at, depth + 1)?;
            branches.push(Node::Arr(if c.min == 1 {
                ArrNode {
                    items: Box::new(outside),
                    ..ArrNode::any()
                }
            } else {
                ArrNode {
                    contains: Some(Box::new(Contains {
                        node: c.node.clone(),
                        outside: Some(outside),
                        min: 0,
                        max: Some(c.min - 1),
                    })),
                    ..ArrNode::any()
                }
            }));
        }
        if let Some(m) = c.max {
            branches.push(Node::Arr(ArrNode {
                contains: Some(Box::new(Contains {
                    node: c.node,
                    outside: None,
                    min: m + 1,
                    max: None,
                })),
                ..ArrNode::any()
            }));
        }
        Ok(branches)
    }

    pub(super) fn negation(
        &mut self,
        inner: &'a Value,
        ptr: &str,
        depth: usize,
    ) -> Result<Node, SchemaError> {
        self.step(ptr, depth)?;
        let map = match self.read_schema(inner, ptr)? {
            SchemaValue::Bool(b) => return Ok(if b { Node::Never } else { Node::Any }),
            SchemaValue::Object(map) => map,
        };
        let keys: Vec<&str> = map
            .keys()
            .map(String::as_str)
            .filter(|k| matches!(keywords::classify(k), Class::Supported | Class::Unsupported))
            .collect();
        let has = |k: &str| keys.contains(&k);
        let mut branches = Vec::new();
        let mut numeric = false;
        let mut string = false;
        for &key in &keys {
            match key {
                "type" => {
                    let (node, excluded) = negate_type(map, ptr)?;
                    if excluded.intersects(Kinds::INT) && !excluded.intersects(Kinds::FRAC) {
                        self.approximated.get_or_insert_with(|| {
                            format!("numbers that are not integers cannot be written apart from integers, so \"not\" of \"integer\" at {} leaves every number out", if ptr.is_empty() { "the root" } else { ptr })
                        });
                    }
                    branches.push(node);
                }
                "enum" => {
                    let Some(Value::Array(values)) = map.get("enum") else {
                        return Err(wrong(ptr, "enum", "an array"));
                    };
                    branches.push(ir::all_except(values));
                }
                "const" => branches.push(ir::all_except(std::slice::from_ref(&map["const"]))),
                "required" => branches.push(negate_required(map, ptr)?),
                k if keywords::NUMBER.contains(&k) => numeric = true,
                "minLength" | "maxLength" | "pattern" => string = true,
                "minItems" | "maxItems" => {
                    if key == "minItems" || !has("minItems") {
                        branches.extend(negate_counts(map, ptr, Counted::Items)?);
                    }
                }
                "minProperties" | "maxProperties" => {
                    if key == "minProperties" || !has("minProperties") {
                        branches.extend(negate_counts(map, ptr, Counted::Properties)?);
                    }
                }
                "properties" if !has("additionalProperties") && !has("patternProperties") => {
                    branches.extend(self.negated_properties(map, ptr, depth)?);
                }
                // not not X = X, read as a validator reads it (a test of the
                // value, like `if`); the grammar of X is a subset of X.
                "not" => branches.push(self.as_test(&map["not"], &format!("{ptr}/not"), depth + 1)?),
                // not (A or B) = not A and not B.
                "anyOf" => branches.push(self.none_of(map, "anyOf", ptr, depth)?.0),
                // not (A and B) = not A or not B.
                "allOf" => {
                    let Value::Array(items) = &map["allOf"] else {
                        return Err(wrong(ptr, "allOf", "a non-empty array of schemas"));
                    };
                    for (i, item) in items.iter().enumerate() {
                        branches.push(self.negation(item, &format!("{ptr}/allOf/{i}"), depth + 1)?);
                    }
                }
                // not (exactly one of A, B, …): none of them, or two at once.
                "oneOf" => {
                    let (node, items) = self.none_of(map, "oneOf", ptr, depth)?;
                    branches.push(node);
                    if items.len() <= MAX_PAIRED_BRANCHES {
                        branches.extend(self.pairs_matched(items, ptr, depth)?);
                    }
                }
                "$ref" => {
                    if let Some(node) = self.negated_ref(map, ptr, depth)? {
                        branches.push(node);
                    }
                }
                // Fewer matching items than the minimum, or more than the
                // maximum (the counts alone do nothing).
                "contains" => branches.extend(self.negated_contains(map, ptr, depth)?),
                "minContains" | "maxContains" => {}
                // `uniqueItems: false` constrains nothing.
                "uniqueItems" if map["uniqueItems"] == Value::Bool(false) => {}
                // What other keywords would add to the complement is left out.
                _ if self.lenient_negation => {
                    if key == "properties" {
                        branches.extend(self.negated_properties(map, ptr, depth)?);
                    } else {
                        self.left_out(key, ptr);
                    }
                }
                "format" => {
                    return Err(invalid(
                        ptr,
                        "not",
                        "cannot exclude a \"format\": the converter writes a subset of each format, so its complement would let values of the format through".to_owned(),
                    ))
                }
                _ => return Err(invalid(ptr, "not", FORMS.to_owned())),
            }
        }
        if numeric {
            // Numbers outside the range.
            let range = self.range(map, ptr)?;
            if let Some(b) = &range.min {
                branches.push(Node::Num(NumRange::between(None, Some(b.flipped()))));
            }
            if let Some(b) = &range.max {
                branches.push(Node::Num(NumRange::between(Some(b.flipped()), None)));
            }
            for d in range.divisors {
                branches.push(Node::Num(NumRange {
                    non_divisors: vec![d],
                    ..NumRange::default()
                }));
            }
        }
        // A format's complement would let values of the format through (the
        // converter writes a subset of each): leniently, the string part is
        // left out.
        if string && self.lenient_negation && has("format") {
            self.left_out("format", ptr);
        }
        if string && !(self.lenient_negation && has("format")) {
            // Strings the constraints refuse.
            let node = match self.string(map, ptr)? {
                Node::Str(s) => ir::checked_str(StrNode {
                    excluded: vec![s],
                    ..StrNode::default()
                })
                .map_err(|reason| invalid(ptr, "not", reason))?,
                _ => Node::Str(StrNode::default()),
            };
            branches.push(node);
        }
        Ok(any_of(branches))
    }
}

impl<'a> Ctx<'a> {
    /// Objects with a declared property whose value its schema refuses.
    fn negated_properties(
        &mut self,
        map: &'a Map<String, Value>,
        ptr: &str,
        depth: usize,
    ) -> Result<Vec<Node>, SchemaError> {
        let Value::Object(props) = &map["properties"] else {
            return Err(wrong(ptr, "properties", "an object of schemas"));
        };
        let mut branches = Vec::new();
        for (name, s) in props {
            let at = format!("{ptr}/properties/{}", escape_pointer(name));
            let bad = self.negation(s, &at, depth + 1)?;
            if bad != Node::Never {
                branches.push(Node::Obj(ObjNode {
                    props: vec![Prop {
                        name: name.clone(),
                        node: bad,
                        required: true,
                        implicit: false,
                    }],
                    ..ObjNode::any()
                }));
            }
        }
        Ok(branches)
    }

    /// Values matching none of the subschemas listed under `keyword`
    /// (`anyOf`, `oneOf`), and the list.
    fn none_of(
        &mut self,
        map: &'a Map<String, Value>,
        keyword: &str,
        ptr: &str,
        depth: usize,
    ) -> Result<(Node, &'a [Value]), SchemaError> {
        let Some(Value::Array(items)) = map.get(keyword) else {
            return Err(wrong(ptr, keyword, "a non-empty array of schemas"));
        };
        let mut node = Node::Any;
        for (i, item) in items.iter().enumerate() {
            let n = self.negation(item, &format!("{ptr}/{keyword}/{i}"), depth + 1)?;
            node = self.merge(&node, &n, ptr, "not")?;
        }
        Ok((node, items))
    }

    /// Values matching two of the `oneOf` branches `items` at once (each
    /// read as a test); a pair whose meet cannot be written is left out.
    fn pairs_matched(
        &mut self,
        items: &'a [Value],
        ptr: &str,
        depth: usize,
    ) -> Result<Vec<Node>, SchemaError> {
        let mut tests = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            tests.push(self.as_test(item, &format!("{ptr}/oneOf/{i}"), depth + 1)?);
        }
        let mut out = Vec::new();
        for (i, a) in tests.iter().enumerate() {
            for b in &tests[i + 1..] {
                if let Ok(both) = ir::intersect(a, b, &self.defs) {
                    if both != Node::Never {
                        out.push(both);
                    }
                }
            }
        }
        Ok(out)
    }

    /// The complement of the schema a `$ref` points to; `None` where it is
    /// left out (a reference back into itself, when lenient).
    fn negated_ref(
        &mut self,
        map: &'a Map<String, Value>,
        ptr: &str,
        depth: usize,
    ) -> Result<Option<Node>, SchemaError> {
        let Some(Value::String(reference)) = map.get("$ref") else {
            return Err(wrong(ptr, "$ref", "a string"));
        };
        let (target, pointer) = self.ref_target(reference, ptr)?;
        if self.negated_refs.contains(&pointer) {
            if self.lenient_negation {
                self.left_out("$ref", ptr);
                return Ok(None);
            }
            return Err(invalid(
                ptr,
                "not",
                format!("cannot exclude the recursive \"$ref\" {reference:?}"),
            ));
        }
        self.negated_refs.push(pointer.clone());
        let out = self.negation(target, &pointer, depth + 1);
        self.negated_refs.pop();
        out.map(Some)
    }
}

/// Values of none of the types named (integers excluded exclude every
/// number: non-integer numbers cannot be written apart from integers).
fn negate_type(map: &Map<String, Value>, ptr: &str) -> Result<(Node, Kinds), SchemaError> {
    let names: Vec<&str> = match map.get("type") {
        Some(Value::String(s)) => vec![s.as_str()],
        Some(Value::Array(list)) => list.iter().filter_map(Value::as_str).collect(),
        _ => return Err(wrong(ptr, "type", "a type name or an array of type names")),
    };
    let mut excluded = Kinds::NONE;
    for name in names {
        excluded |= type_kinds(name, ptr)?;
    }
    Ok((ir::all_kinds_except(excluded), excluded))
}

/// Objects lacking one of the required keys.
fn negate_required(map: &Map<String, Value>, ptr: &str) -> Result<Node, SchemaError> {
    let Some(Value::Array(names)) = map.get("required") else {
        return Err(wrong(ptr, "required", "an array of strings"));
    };
    let keys: Option<Vec<String>> = names
        .iter()
        .map(|n| n.as_str().map(str::to_owned))
        .collect();
    let keys = keys.ok_or_else(|| wrong(ptr, "required", "an array of strings"))?;
    Ok(ir::missing_one_of(&keys))
}

#[derive(Clone, Copy)]
enum Counted {
    Items,
    Properties,
}

/// Arrays (or objects) with too few or too many items (or members).
fn negate_counts(
    map: &Map<String, Value>,
    ptr: &str,
    counted: Counted,
) -> Result<Vec<Node>, SchemaError> {
    let (min_key, max_key) = match counted {
        Counted::Items => ("minItems", "maxItems"),
        Counted::Properties => ("minProperties", "maxProperties"),
    };
    let (min, max) = counts(map, ptr, min_key, max_key)?;
    let mut ranges = Vec::new();
    if min > 0 {
        ranges.push((0, Some(min - 1)));
    }
    if let Some(m) = max {
        ranges.push((m.saturating_add(1), None));
    }
    Ok(ranges
        .into_iter()
        .map(|(lo, hi)| match counted {
            Counted::Items => Node::Arr(ArrNode {
                min_items: lo,
                max_items: hi,
                ..ArrNode::any()
            }),
            Counted::Properties => Node::Obj(ObjNode {
                min_props: lo,
                max_props: hi,
                ..ObjNode::any()
            }),
        })
        .collect())
}
