//! The typed intermediate form of a schema (this file: the node types,
//! kinds, literal equality), and the operations that reason about it, one
//! file each: exact validation of literal values (`accepts.rs`, for `enum`
//! filtering), intersection (`intersect.rs`, `allOf`), exclusivity
//! (`exclusive.rs`, `oneOf`) and writable complements (`complement.rs`, `not`).

use serde_json::Value;

use super::decimal::Decimal;
use super::formats::Format;
use super::kinds::Kinds;
use super::lang::{self, Dfa, LangError, Re};
use super::range::NumRange;
use super::regex;
use crate::grammar::expr::Expr;

mod accepts;
mod complement;
mod exclusive;
mod intersect;

pub use accepts::{accepts, validates};
pub use complement::{all_except, all_kinds_except, missing_one_of};
pub use exclusive::excludes;
pub use intersect::{checked_str, intersect, intersect_deferring};

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

/// String constraints, all of which a value must meet; lengths count
/// characters (code points).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct StrNode {
    pub min_len: u64,
    pub max_len: Option<u64>,
    /// Patterns the value matches (JSON Schema's unanchored search).
    pub patterns: Vec<String>,
    /// Formats the value has (the converter's subset of each).
    pub formats: Vec<Format>,
    /// Values excluded (from `not: {enum: …}`).
    pub not_in: Vec<String>,
    /// String constraints the value must not meet (from `not`).
    pub excluded: Vec<StrNode>,
}

/// Array constraints. Items past `prefix` must match `items` (`Never`: none allowed).
#[derive(Debug, Clone, PartialEq)]
pub struct ArrNode {
    pub prefix: Vec<Node>,
    pub items: Box<Node>,
    pub min_items: u64,
    pub max_items: Option<u64>,
    /// `contains` with its counts.
    pub contains: Option<Box<Contains>>,
}

/// `contains`, `minContains`, `maxContains`: between `min` and `max` items
/// match `node`.
#[derive(Debug, Clone, PartialEq)]
pub struct Contains {
    /// The items that count (a subset of `contains`' values).
    pub node: Node,
    /// The items that do not count (a subset of the values `contains`
    /// refuses); needed only with a maximum.
    pub outside: Option<Node>,
    pub min: u64,
    pub max: Option<u64>,
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
    /// Undeclared keys in these disjoint languages take these schemas
    /// instead of `additional` (from `patternProperties`: one region per
    /// combination of patterns a key can match, with their schemas merged).
    pub regions: Vec<Region>,
    /// Every key is in this language (`propertyNames`); `None`: any key.
    pub names: Option<KeyLang>,
}

/// How many nodes `node` is made of (`$ref` targets not followed), for
/// bounding work that multiplies alternatives.
pub fn size(node: &Node) -> usize {
    1usize.saturating_add(match node {
        Node::AnyOf(xs) | Node::OneOf(xs) => xs.iter().fold(0, |n, x| n.saturating_add(size(x))),
        Node::Arr(a) => {
            let counted = a.contains.as_ref().map_or(0, |c| {
                size(&c.node).saturating_add(c.outside.as_ref().map_or(0, size))
            });
            a.prefix
                .iter()
                .fold(size(&a.items).saturating_add(counted), |n, x| {
                    n.saturating_add(size(x))
                })
        }
        Node::Obj(o) => {
            let props = o.props.iter().map(|p| size(&p.node));
            let regions = o.regions.iter().map(|(_, n)| size(n));
            props
                .chain(regions)
                .fold(size(&o.additional), usize::saturating_add)
        }
        _ => 0,
    })
}

/// How many alternatives `node` offers at its top.
pub fn alternatives(node: &Node) -> usize {
    match node {
        Node::AnyOf(xs) | Node::OneOf(xs) => xs.len().max(1),
        _ => 1,
    }
}

/// Undeclared keys of a language, and the schema of their values.
pub type Region = (KeyLang, Node);

/// A language of keys, with its automaton.
#[derive(Debug, Clone)]
pub struct KeyLang {
    pub re: Re,
    pub dfa: std::sync::Arc<Dfa>,
}

thread_local! {
    /// Parts the key languages of the current conversion may still have
    /// (see [`lang::MAX_KEY_PARTS`]); [`KeyLang::begin_conversion`] fills it.
    static KEY_PARTS_LEFT: std::cell::Cell<usize> = const { std::cell::Cell::new(lang::MAX_KEY_PARTS) };
}

impl KeyLang {
    /// The language of `re`; an error when its description or automaton is
    /// too large, or when the conversion's key languages pass their budget.
    pub fn new(re: Re) -> Result<KeyLang, LangError> {
        let size = re.size_up_to(lang::MAX_RE_NODES);
        if size > lang::MAX_RE_NODES {
            return Err(LangError::TooLarge {
                limit: lang::MAX_RE_NODES,
            });
        }
        let spent = KEY_PARTS_LEFT.with(|left| {
            let l = left.get();
            left.set(l.saturating_sub(size));
            l < size
        });
        if spent {
            return Err(LangError::TooMuchKeyWork {
                limit: lang::MAX_KEY_PARTS,
            });
        }
        let dfa = lang::automaton(&re)?;
        Ok(KeyLang { re, dfa })
    }

    /// A new conversion: its key languages get the whole budget.
    pub fn begin_conversion() {
        KEY_PARTS_LEFT.with(|left| left.set(lang::MAX_KEY_PARTS));
    }
}

impl PartialEq for KeyLang {
    fn eq(&self, other: &Self) -> bool {
        self.re == other.re
    }
}

static ANY: Node = Node::Any;
static NEVER: Node = Node::Never;

impl ArrNode {
    /// Any array.
    pub fn any() -> Self {
        Self {
            prefix: Vec::new(),
            items: Box::new(Node::Any),
            min_items: 0,
            max_items: None,
            contains: None,
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
            regions: Vec::new(),
            names: None,
        }
    }

    /// The schema the grammar uses for a value under `key`.
    pub fn schema_of(&self, key: &str) -> &Node {
        if let Some(p) = self.props.iter().find(|p| p.name == key) {
            return &p.node;
        }
        self.undeclared(key).unwrap_or(&self.additional)
    }

    /// The schema of an undeclared key when a region or `propertyNames`
    /// decides it; `None` when `additional` (or JSON Schema's default) does.
    fn undeclared(&self, key: &str) -> Option<&Node> {
        if self.names.as_ref().is_some_and(|n| !n.dfa.matches(key)) {
            return Some(&NEVER);
        }
        self.regions
            .iter()
            .find(|(lang, _)| lang.dfa.matches(key))
            .map(|(_, node)| node)
    }

    /// Whether the keys of this object are constrained beyond declared
    /// properties and `additional` (`patternProperties`, `propertyNames`).
    pub fn has_key_languages(&self) -> bool {
        !self.regions.is_empty() || self.names.is_some()
    }

    /// The schema JSON Schema applies to a value under `key`.
    pub fn real_schema_of(&self, key: &str) -> &Node {
        if let Some(p) = self.props.iter().find(|p| p.name == key) {
            return &p.node;
        }
        match self.undeclared(key) {
            Some(node) => node,
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
    /// Slots that hold a target merged with other constraints, computed
    /// once every target is read (see [`intersect_deferring`]).
    pub merges: Vec<Merge>,
}

/// A definition merged with sibling constraints while it was still being
/// read: slot `id` is `target` ∩ `with`, written once `target` is known.
#[derive(Debug, Clone, PartialEq)]
pub struct Merge {
    pub id: RefId,
    pub target: RefId,
    pub with: Node,
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
pub(crate) const MAX_REASONING_DEPTH: usize = 64;

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

/// The strings a schema accepts, as a language (`propertyNames`), or why
/// they cannot be written as one.
pub fn key_re(node: &Node, defs: &Defs) -> Result<Re, String> {
    key_re_at(node, defs, 0)
}

fn key_re_at(node: &Node, defs: &Defs, depth: usize) -> Result<Re, String> {
    Ok(match node {
        Node::Any => Re::any_string(),
        Node::Never
        | Node::Null
        | Node::Bool
        | Node::Int(_)
        | Node::Num(_)
        | Node::Arr(_)
        | Node::Obj(_) => Re::nothing(),
        Node::Str(s) => s.re()?,
        Node::Enum(values) => Re::one_of(values.iter().filter_map(Value::as_str)),
        Node::AnyOf(branches) | Node::OneOf(branches) => Re::Alt(
            branches
                .iter()
                .map(|b| key_re_at(b, defs, depth + 1))
                .collect::<Result<_, _>>()?,
        ),
        Node::Ref(id) => match defs.get(*id) {
            Some(target) if depth < MAX_REASONING_DEPTH => key_re_at(target, defs, depth + 1)?,
            _ => return Err("refers to itself".to_owned()),
        },
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

impl StrNode {
    /// Whether more than one kind of constraint applies, so that the
    /// grammar is written from an automaton of their intersection rather
    /// than from one constraint alone.
    pub fn needs_automaton(&self) -> bool {
        let lengths = self.written_max_len().is_some() || self.written_min_len() > 0;
        let kinds = usize::from(lengths)
            + self.patterns.len()
            + self.formats.len()
            + usize::from(!self.not_in.is_empty())
            + self.excluded.len();
        kinds > 1
            || !self.excluded.is_empty()
            || self.patterns.iter().any(|p| regex::needs_automaton(p))
    }

    /// The `maxLength` the grammar must enforce: none when every string of
    /// a format or pattern is that short anyway (`format: email` with
    /// `maxLength: 1024`; counting to a bound nothing reaches multiplies
    /// the automaton's states for nothing).
    pub fn written_max_len(&self) -> Option<u64> {
        let max = self.max_len?;
        let formats = self.formats.iter().map(|f| f.longest_len());
        let patterns = self
            .patterns
            .iter()
            .map(|p| regex::pattern_to_expr(p).ok().and_then(|e| e.longest_len()));
        match formats.chain(patterns).flatten().min() {
            Some(implied) if implied <= max => None,
            _ => Some(max),
        }
    }

    /// The `minLength` the grammar must enforce: 0 when every string is
    /// that long anyway.
    pub fn written_min_len(&self) -> u64 {
        if self.min_len > self.implied_min_len() {
            self.min_len
        } else {
            0
        }
    }

    /// A length every value has anyway: the shortest string of each pattern
    /// and format is a lower bound on the values' length, so a `minLength`
    /// within it constrains nothing (`format: uri` with `minLength: 1`).
    fn implied_min_len(&self) -> u64 {
        let formats = self.formats.iter().map(|f| f.shortest_len());
        let patterns = self
            .patterns
            .iter()
            .map(|p| regex::shortest_match(p).unwrap_or(0));
        formats.chain(patterns).max().unwrap_or(0)
    }

    /// The language of the values, lengths left out (they are applied
    /// when the automaton is written).
    pub fn re_without_lengths(&self) -> Result<Re, String> {
        let mut all = Vec::new();
        for p in &self.patterns {
            all.push(regex::pattern_to_re(p).map_err(|e| format!("pattern {p:?}: {e}"))?);
        }
        for f in &self.formats {
            all.push(
                f.re().ok_or_else(|| {
                    format!("internal: format {} is not plain text", f.rule_name())
                })?,
            );
        }
        if !self.not_in.is_empty() {
            all.push(Re::one_of(self.not_in.iter().map(String::as_str)).complement());
        }
        for x in &self.excluded {
            all.push(x.re()?.complement());
        }
        Ok(Re::And(all))
    }

    /// The language of the values.
    pub fn re(&self) -> Result<Re, String> {
        let body = self.re_without_lengths()?;
        if self.min_len == 0 && self.max_len.is_none() {
            return Ok(body);
        }
        Ok(Re::And(vec![body, Re::length(self.min_len, self.max_len)]))
    }

    /// The grammar of a lone `format` under length bounds whose automaton
    /// is too large, written by capping the format's repetitions (see
    /// [`Format::expr_within`]); `None` for any other combination.
    ///
    /// [`Format::expr_within`]: crate::schema::formats::Format::expr_within
    pub fn format_within_lengths(&self) -> Option<Expr> {
        match self.formats.as_slice() {
            [f] if self.patterns.is_empty()
                && self.not_in.is_empty()
                && self.excluded.is_empty() =>
            {
                f.expr_within(self.min_len, self.max_len)
            }
            _ => None,
        }
    }

    /// The automaton of the values, lengths left out.
    pub fn automaton(&self) -> Result<std::sync::Arc<Dfa>, AutomatonError> {
        let re = self
            .re_without_lengths()
            .map_err(AutomatonError::Internal)?;
        // From the per-thread cache: membership of literals (enum values,
        // declared keys) asks for the same language many times.
        lang::automaton(&re).map_err(AutomatonError::Lang)
    }

    /// Whether `text` meets the constraints exactly as the grammar writes
    /// them.
    pub fn accepts(&self, text: &str) -> Result<bool, AutomatonError> {
        let len = text.chars().count() as u64;
        if len < self.min_len || self.max_len.is_some_and(|m| len > m) {
            return Ok(false);
        }
        if !self.needs_automaton() && self.patterns.is_empty() && self.formats.is_empty() {
            return Ok(!self.not_in.iter().any(|v| v == text));
        }
        Ok(self.automaton()?.matches(text))
    }
}

/// Why the automaton of a string node could not be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AutomatonError {
    #[error(transparent)]
    Lang(#[from] LangError),
    #[error("{0}")]
    Internal(String),
}

/// Node builders shared by the tests of the reasoning operations.
#[cfg(test)]
mod testing {
    use super::*;
    use crate::schema::decimal::Decimal;
    use crate::schema::range::Bound;

    pub fn int(min: Option<i64>, max: Option<i64>) -> Node {
        let b = |v: i64| Bound::Inclusive(Decimal::parse(&v.to_string()).unwrap());
        Node::Int(NumRange::between(min.map(b), max.map(b)))
    }

    pub fn obj(props: Vec<(&str, Node, bool)>, additional: Node) -> Node {
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
            ..ObjNode::any()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_equality_compares_numbers_by_value() {
        assert!(json_eq(&json!(1), &json!(1.0)));
        assert!(json_eq(&json!({"a": [1, 2.50]}), &json!({"a": [1.0, 2.5]})));
        assert!(!json_eq(&json!("1"), &json!(1)));
    }
}
