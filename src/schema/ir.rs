//! The typed intermediate form of a schema, and the operations that reason
//! about it: intersection (`allOf`), exact validation of literal values
//! (`enum` filtering), and exclusivity (`oneOf`).

use serde_json::Value;

use super::decimal::Decimal;
use super::formats::Format;
use super::kinds::Kinds;
use super::range::{Bound, NumRange};

/// Index of a `$ref` target in [`Defs`].
pub type RefId = usize;

/// One schema, reduced to what the grammar must enforce.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    /// Any JSON value.
    Any,
    /// No value at all.
    Never,
    Null,
    Bool,
    /// Integers in a range.
    Int(NumRange),
    /// Numbers (integers included) in a range.
    Num(NumRange),
    Str(StrNode),
    Arr(ArrNode),
    Obj(ObjNode),
    /// Exactly these values.
    Enum(Vec<Value>),
    AnyOf(Vec<Node>),
    /// Branches already proven pairwise exclusive.
    OneOf(Vec<Node>),
    Ref(RefId),
}

/// String constraints; lengths count characters (code points).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StrNode {
    pub min_len: u64,
    pub max_len: Option<u64>,
    pub pattern: Option<String>,
    pub format: Option<Format>,
    /// Values excluded (from `not: {enum: …}`).
    pub not_in: Vec<String>,
}

/// Array constraints. Items past `prefix` must match `items` (`Never`: none allowed).
#[derive(Debug, Clone, PartialEq)]
pub struct ArrNode {
    pub prefix: Vec<Node>,
    pub items: Box<Node>,
    pub min_items: u64,
    pub max_items: Option<u64>,
}

/// One declared property. A `Never` node means the key is forbidden.
#[derive(Debug, Clone, PartialEq)]
pub struct Prop {
    pub name: String,
    pub node: Node,
    pub required: bool,
    /// Required only because the schema has no `required` keyword (every
    /// property is then emitted). Such a property is left optional when
    /// emitting it every time would recurse without end.
    pub implicit: bool,
}

/// Object constraints. Keys not declared must match `additional` (`Never`: none allowed).
#[derive(Debug, Clone, PartialEq)]
pub struct ObjNode {
    pub props: Vec<Prop>,
    pub additional: Box<Node>,
    pub min_props: u64,
    pub max_props: Option<u64>,
    /// `additionalProperties` was absent: the grammar emits no other keys
    /// (`additional` is `Never`), but JSON Schema itself allows any. That
    /// difference matters when reasoning about what a schema *accepts*.
    pub open_by_default: bool,
}

static ANY: Node = Node::Any;

impl ArrNode {
    /// Any array.
    pub fn any() -> Self {
        Self {
            prefix: Vec::new(),
            items: Box::new(Node::Any),
            min_items: 0,
            max_items: None,
        }
    }
}

impl ObjNode {
    /// Any object, generated without keys of its own (additional keys allowed).
    pub fn any() -> Self {
        Self {
            props: Vec::new(),
            additional: Box::new(Node::Any),
            min_props: 0,
            max_props: None,
            open_by_default: false,
        }
    }

    /// The schema the grammar uses for a value under `key`.
    pub fn schema_of(&self, key: &str) -> &Node {
        self.props
            .iter()
            .find(|p| p.name == key)
            .map_or(&*self.additional, |p| &p.node)
    }

    /// The schema JSON Schema applies to a value under `key`.
    pub fn real_schema_of(&self, key: &str) -> &Node {
        match self.props.iter().find(|p| p.name == key) {
            Some(p) => &p.node,
            None if self.open_by_default => &ANY,
            None => &self.additional,
        }
    }
}

/// Which semantics a check uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Semantics {
    /// What the generated grammar produces: every property of a schema
    /// without `required` is required, and absent `additionalProperties`
    /// means no other keys.
    Grammar,
    /// What a JSON Schema validator accepts.
    Validator,
}

/// The targets of `$ref`s, filled in as they are parsed.
#[derive(Debug, Default, Clone)]
pub struct Defs {
    /// JSON pointer of each target.
    pub pointers: Vec<String>,
    /// `None` while the target is being parsed (a recursive reference).
    pub nodes: Vec<Option<Node>>,
}

impl Defs {
    pub fn find(&self, pointer: &str) -> Option<RefId> {
        self.pointers.iter().position(|p| p == pointer)
    }

    pub fn get(&self, id: RefId) -> Option<&Node> {
        self.nodes.get(id).and_then(Option::as_ref)
    }
}

/// How deep the reasoning operations follow `$ref`s before giving up.
const MAX_REASONING_DEPTH: usize = 64;

/// The kinds of value a node can match.
pub fn kinds(node: &Node, defs: &Defs) -> Kinds {
    kinds_at(node, defs, 0)
}

fn kinds_at(node: &Node, defs: &Defs, depth: usize) -> Kinds {
    match node {
        Node::Any => Kinds::ALL,
        Node::Never => Kinds::NONE,
        Node::Null => Kinds::NULL,
        Node::Bool => Kinds::BOOL,
        Node::Int(_) => Kinds::INT,
        Node::Num(_) => Kinds::NUMBER,
        Node::Str(_) => Kinds::STR,
        Node::Arr(_) => Kinds::ARR,
        Node::Obj(_) => Kinds::OBJ,
        Node::Enum(values) => values
            .iter()
            .fold(Kinds::NONE, |k, v| k | Kinds::of_value(v)),
        Node::AnyOf(branches) | Node::OneOf(branches) => branches
            .iter()
            .fold(Kinds::NONE, |k, b| k | kinds_at(b, defs, depth + 1)),
        Node::Ref(id) => match defs.get(*id) {
            Some(target) if depth < MAX_REASONING_DEPTH => kinds_at(target, defs, depth + 1),
            _ => Kinds::ALL,
        },
    }
}

/// A hash that values equal under [`json_eq`] share: strings and booleans by
/// content, numbers by their nearest double (equal values have the same one),
/// containers by kind and size only.
pub fn json_hash(value: &Value) -> u64 {
    match value {
        Value::Null => 0,
        Value::Bool(b) => 1 + u64::from(*b),
        Value::Number(n) => {
            let f = n.as_f64().unwrap_or(0.0);
            crate::grammar::expr::hash_of(&(3u8, if f == 0.0 { 0 } else { f.to_bits() }))
        }
        Value::String(s) => crate::grammar::expr::hash_of(s.as_str()),
        Value::Array(a) => crate::grammar::expr::hash_of(&(4u8, a.len())),
        Value::Object(o) => crate::grammar::expr::hash_of(&(5u8, o.len())),
    }
}

/// JSON equality with numbers compared by value (`1 == 1.0`).
pub fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            match (Decimal::from_json(x), Decimal::from_json(y)) {
                (Some(x), Some(y)) => x == y,
                _ => x == y,
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_eq(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

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
            if s.pattern.is_some() || s.format.is_some() {
                return None;
            }
            let len = text.chars().count() as u64;
            len >= s.min_len && s.max_len.is_none_or(|m| len <= m) && !s.not_in.contains(text)
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
            true
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

fn min_opt(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, None) | (None, x) => x,
    }
}

/// The schema matching exactly the values both `a` and `b` match, or the
/// reason it cannot be written as one schema.
pub fn intersect(a: &Node, b: &Node, defs: &Defs) -> Result<Node, String> {
    intersect_at(a, b, defs, 0)
}

fn intersect_at(a: &Node, b: &Node, defs: &Defs, depth: usize) -> Result<Node, String> {
    if depth > MAX_REASONING_DEPTH {
        return Err("schemas nest too deeply to merge".to_owned());
    }
    let next = depth + 1;
    let resolve = |id: &RefId| -> Result<Node, String> {
        defs.get(*id).cloned().ok_or_else(|| {
            format!(
                "{} refers to itself",
                defs.pointers.get(*id).map_or("a $ref", |p| p.as_str())
            )
        })
    };
    Ok(match (a, b) {
        (Node::Any, x) | (x, Node::Any) => x.clone(),
        (Node::Never, _) | (_, Node::Never) => Node::Never,
        (Node::Ref(x), Node::Ref(y)) if x == y => Node::Ref(*x),
        (Node::Ref(id), other) | (other, Node::Ref(id)) => {
            intersect_at(&resolve(id)?, other, defs, next)?
        }
        (Node::AnyOf(xs), other) | (other, Node::AnyOf(xs)) => {
            let mut out = Vec::new();
            for x in xs {
                let m = intersect_at(x, other, defs, next)?;
                if m != Node::Never {
                    out.push(m);
                }
            }
            any_of(out)
        }
        (Node::OneOf(xs), other) | (other, Node::OneOf(xs)) => {
            let mut out = Vec::new();
            for x in xs {
                let m = intersect_at(x, other, defs, next)?;
                if m != Node::Never {
                    out.push(m);
                }
            }
            match out.len() {
                0 => Node::Never,
                1 => out.pop().unwrap_or(Node::Never),
                _ => Node::OneOf(out),
            }
        }
        (Node::Enum(values), other) | (other, Node::Enum(values)) => {
            let mut kept = Vec::new();
            for v in values {
                match accepts(other, v, defs) {
                    Some(true) => kept.push(v.clone()),
                    Some(false) => {}
                    None => {
                        return Err(
                            "enum values cannot be checked against a pattern or format".to_owned()
                        )
                    }
                }
            }
            if kept.is_empty() {
                Node::Never
            } else {
                Node::Enum(kept)
            }
        }
        (Node::Null, Node::Null) => Node::Null,
        (Node::Bool, Node::Bool) => Node::Bool,
        (Node::Int(x), Node::Int(y))
        | (Node::Int(x), Node::Num(y))
        | (Node::Num(y), Node::Int(x)) => Node::Int(x.intersect(y)),
        (Node::Num(x), Node::Num(y)) => Node::Num(x.intersect(y)),
        (Node::Str(x), Node::Str(y)) => Node::Str(intersect_str(x, y)?),
        (Node::Arr(x), Node::Arr(y)) => Node::Arr(intersect_arr(x, y, defs, next)?),
        (Node::Obj(x), Node::Obj(y)) => intersect_obj(x, y, defs, next)?,
        _ => Node::Never,
    })
}

/// `AnyOf` of the branches, simplified.
pub fn any_of(mut branches: Vec<Node>) -> Node {
    branches.retain(|b| *b != Node::Never);
    if branches.contains(&Node::Any) {
        return Node::Any;
    }
    match branches.len() {
        0 => Node::Never,
        1 => branches.pop().unwrap_or(Node::Never),
        _ => Node::AnyOf(branches),
    }
}

/// Why a string node cannot be enforced exactly, if it cannot: a pattern or
/// format together with length bounds, or a pattern with a format.
pub fn str_conflict(s: &StrNode) -> Option<String> {
    let lengths = s.min_len > 0 || s.max_len.is_some();
    if !s.not_in.is_empty() && (lengths || s.pattern.is_some() || s.format.is_some()) {
        return Some(
            "cannot exclude values (\"not\") and constrain the string otherwise".to_owned(),
        );
    }
    match (&s.pattern, &s.format) {
        (Some(_), Some(_)) => Some("cannot be combined with both \"pattern\" and \"format\"".to_owned()),
        (Some(_), None) if lengths => Some("cannot be combined with \"minLength\"/\"maxLength\" (write the length into the pattern)".to_owned()),
        (None, Some(_)) if lengths => Some("cannot be combined with \"minLength\"/\"maxLength\"".to_owned()),
        _ => None,
    }
}

fn intersect_str(x: &StrNode, y: &StrNode) -> Result<StrNode, String> {
    let pattern = match (&x.pattern, &y.pattern) {
        (Some(p), Some(q)) if p != q => return Err("two different patterns".to_owned()),
        (p, q) => p.clone().or_else(|| q.clone()),
    };
    let format = match (x.format, y.format) {
        (Some(f), Some(g)) if f != g => return Err("two different formats".to_owned()),
        (f, g) => f.or(g),
    };
    let mut not_in = x.not_in.clone();
    for v in &y.not_in {
        if !not_in.contains(v) {
            not_in.push(v.clone());
        }
    }
    let node = StrNode {
        min_len: x.min_len.max(y.min_len),
        max_len: min_opt(x.max_len, y.max_len),
        pattern,
        format,
        not_in,
    };
    match str_conflict(&node) {
        Some(reason) => Err(format!("a merged string schema {reason}")),
        None => Ok(node),
    }
}

fn intersect_arr(x: &ArrNode, y: &ArrNode, defs: &Defs, depth: usize) -> Result<ArrNode, String> {
    let n = x.prefix.len().max(y.prefix.len());
    let mut prefix = Vec::with_capacity(n);
    for i in 0..n {
        let a = x.prefix.get(i).unwrap_or(&x.items);
        let b = y.prefix.get(i).unwrap_or(&y.items);
        prefix.push(intersect_at(a, b, defs, depth)?);
    }
    Ok(ArrNode {
        prefix,
        items: Box::new(intersect_at(&x.items, &y.items, defs, depth)?),
        min_items: x.min_items.max(y.min_items),
        max_items: min_opt(x.max_items, y.max_items),
    })
}

fn intersect_obj(x: &ObjNode, y: &ObjNode, defs: &Defs, depth: usize) -> Result<Node, String> {
    let mut names: Vec<&str> = x.props.iter().map(|p| p.name.as_str()).collect();
    for p in &y.props {
        if !names.contains(&p.name.as_str()) {
            names.push(&p.name);
        }
    }
    let mut props = Vec::with_capacity(names.len());
    for name in names {
        let mut required = x
            .props
            .iter()
            .chain(&y.props)
            .any(|p| p.name == name && p.required);
        // A side that does not declare the key applies what JSON Schema applies to it.
        let node = intersect_at(x.real_schema_of(name), y.real_schema_of(name), defs, depth)?;
        let implicit = required
            && x.props
                .iter()
                .chain(&y.props)
                .filter(|p| p.name == name && p.required)
                .all(|p| p.implicit);
        if node == Node::Never && required {
            if !implicit {
                return Ok(Node::Never);
            }
            required = false;
        }
        props.push(Prop {
            name: name.to_owned(),
            node,
            required,
            implicit,
        });
    }
    Ok(Node::Obj(ObjNode {
        props,
        additional: Box::new(intersect_at(&x.additional, &y.additional, defs, depth)?),
        min_props: x.min_props.max(y.min_props),
        max_props: min_opt(x.max_props, y.max_props),
        open_by_default: x.open_by_default && y.open_by_default,
    }))
}

/// Whether no value the grammar of `out` can produce validates against
/// `against`. `false` means "not proven", not "overlapping".
pub fn excludes(out: &Node, against: &Node, defs: &Defs) -> bool {
    excludes_at(out, against, defs, 0)
}

fn excludes_at(out: &Node, against: &Node, defs: &Defs, depth: usize) -> bool {
    if depth > MAX_REASONING_DEPTH {
        return false;
    }
    let next = depth + 1;
    if !kinds(out, defs).intersects(kinds(against, defs)) {
        return true;
    }
    match (out, against) {
        (Node::Never, _) | (_, Node::Never) => true,
        (Node::Ref(id), _) => defs
            .get(*id)
            .is_some_and(|t| excludes_at(t, against, defs, next)),
        (_, Node::Ref(id)) => defs
            .get(*id)
            .is_some_and(|t| excludes_at(out, t, defs, next)),
        (Node::AnyOf(xs) | Node::OneOf(xs), _) => {
            xs.iter().all(|x| excludes_at(x, against, defs, next))
        }
        (_, Node::AnyOf(ys) | Node::OneOf(ys)) => {
            ys.iter().all(|y| excludes_at(out, y, defs, next))
        }
        (Node::Enum(values), _) => values
            .iter()
            .all(|v| validates(against, v, defs) == Some(false)),
        (_, Node::Enum(values)) => values.iter().all(|v| accepts(out, v, defs) == Some(false)),
        (Node::Int(a) | Node::Num(a), Node::Int(b) | Node::Num(b)) => a.is_disjoint(b),
        (Node::Str(a), Node::Str(b)) => {
            a.max_len.is_some_and(|m| m < b.min_len) || b.max_len.is_some_and(|m| m < a.min_len)
        }
        (Node::Obj(a), Node::Obj(b)) => objects_exclude(a, b, defs, next),
        _ => false,
    }
}

/// An object from `a` always fails validation against `b`: a property `a`
/// always emits has a value `b` rejects, or `b` requires a key `a` never emits.
fn objects_exclude(a: &ObjNode, b: &ObjNode, defs: &Defs, depth: usize) -> bool {
    // Implicitly required properties whose value recurses may be left
    // optional by the emitter, so only the others are sure to be emitted.
    let always_emitted = |p: &&Prop| p.required && (!p.implicit || !contains_ref(&p.node));
    let emitted_value_rejected = a
        .props
        .iter()
        .filter(always_emitted)
        .any(|p| excludes_at(&p.node, b.real_schema_of(&p.name), defs, depth));
    let required_never_emitted = b
        .props
        .iter()
        .filter(|p| p.required && !p.implicit)
        .any(|p| {
            let in_a = a.props.iter().find(|q| q.name == p.name);
            match in_a {
                Some(q) => q.node == Node::Never,
                None => *a.additional == Node::Never,
            }
        });
    emitted_value_rejected || required_never_emitted
}

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

/// Whether a `$ref` occurs anywhere in `node`.
fn contains_ref(node: &Node) -> bool {
    match node {
        Node::Ref(_) => true,
        Node::AnyOf(bs) | Node::OneOf(bs) => bs.iter().any(contains_ref),
        Node::Arr(a) => a.prefix.iter().any(contains_ref) || contains_ref(&a.items),
        Node::Obj(o) => {
            o.props.iter().any(|p| contains_ref(&p.node)) || contains_ref(&o.additional)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn int(min: Option<i64>, max: Option<i64>) -> Node {
        let b = |v: i64| Bound::Inclusive(Decimal::parse(&v.to_string()).unwrap());
        Node::Int(NumRange {
            min: min.map(b),
            max: max.map(b),
        })
    }

    fn obj(props: Vec<(&str, Node, bool)>, additional: Node) -> Node {
        Node::Obj(ObjNode {
            props: props
                .into_iter()
                .map(|(n, node, required)| Prop {
                    name: n.into(),
                    node,
                    required,
                    implicit: false,
                })
                .collect(),
            additional: Box::new(additional),
            min_props: 0,
            max_props: None,
            open_by_default: false,
        })
    }

    #[test]
    fn json_equality_compares_numbers_by_value() {
        assert!(json_eq(&json!(1), &json!(1.0)));
        assert!(json_eq(&json!({"a": [1, 2.50]}), &json!({"a": [1.0, 2.5]})));
        assert!(!json_eq(&json!("1"), &json!(1)));
    }

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
            pattern: Some("^a".into()),
            ..StrNode::default()
        });
        assert_eq!(accepts(&patterned, &json!("abc"), &defs), None);
        assert_eq!(accepts(&patterned, &json!(1), &defs), Some(false));
    }

    #[test]
    fn intersection_of_ranges_keeps_the_tighter_bounds() {
        let defs = Defs::default();
        let m = intersect(&int(Some(0), Some(100)), &int(Some(10), None), &defs).unwrap();
        assert_eq!(m, int(Some(10), Some(100)));
    }

    #[test]
    fn intersection_of_objects_applies_additional_properties_of_the_other_side() {
        let defs = Defs::default();
        let closed = obj(vec![("a", Node::Any, true)], Node::Never);
        let open = obj(vec![("b", Node::Bool, false)], Node::Any);
        let Node::Obj(m) = intersect(&closed, &open, &defs).unwrap() else {
            panic!()
        };
        assert_eq!(m.props.len(), 2);
        assert_eq!(
            m.props[1].node,
            Node::Never,
            "b is forbidden by the closed side"
        );
        assert_eq!(*m.additional, Node::Never);
        let needs_b = obj(vec![("b", Node::Bool, true)], Node::Any);
        assert_eq!(intersect(&closed, &needs_b, &defs).unwrap(), Node::Never);
    }

    #[test]
    fn intersection_filters_enums() {
        let defs = Defs::default();
        let e = Node::Enum(vec![json!(1), json!(50), json!("x")]);
        assert_eq!(
            intersect(&e, &int(Some(10), None), &defs).unwrap(),
            Node::Enum(vec![json!(50)])
        );
    }

    #[test]
    fn exclusivity_by_kind_by_enum_and_by_discriminator() {
        let defs = Defs::default();
        assert!(excludes(&Node::Null, &int(None, None), &defs));
        assert!(!excludes(
            &int(None, None),
            &Node::Num(NumRange::default()),
            &defs
        ));
        assert!(excludes(&int(Some(0), Some(5)), &int(Some(6), None), &defs));
        let cat = obj(
            vec![("kind", Node::Enum(vec![json!("cat")]), true)],
            Node::Any,
        );
        let dog = obj(
            vec![("kind", Node::Enum(vec![json!("dog")]), true)],
            Node::Any,
        );
        assert!(excludes(&cat, &dog, &defs) && excludes(&dog, &cat, &defs));
        let loose = obj(
            vec![("kind", Node::Enum(vec![json!("cat")]), false)],
            Node::Any,
        );
        assert!(
            !excludes(&loose, &dog, &defs),
            "an optional discriminator proves nothing"
        );
        // Without additionalProperties, JSON Schema accepts undeclared keys:
        // an object emitting `x` is not excluded by one that declares only `y`.
        let Node::Obj(mut only_y) = obj(vec![("y", Node::Bool, false)], Node::Never) else {
            panic!()
        };
        only_y.open_by_default = true;
        let emits_x = obj(vec![("x", Node::Bool, true)], Node::Never);
        assert!(!excludes(&emits_x, &Node::Obj(only_y.clone()), &defs));
        only_y.open_by_default = false;
        assert!(excludes(&emits_x, &Node::Obj(only_y), &defs));
    }
}
