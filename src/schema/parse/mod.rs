//! JSON Schema (a `serde_json::Value`) → [`Node`], every keyword checked on
//! the way in. Work is budgeted: nesting depth and the number of schema objects
//! visited are bounded, so hostile input fails fast with an error.

use crate::hashing::Map as HashMap;

use serde_json::{Map, Value};

use super::error::{ErrorKind, SchemaError};
use super::ir::{self, any_of, Defs, Node};
use super::keywords::{self, Class};
use super::options::{ConvertOptions, ObjectDefaults};

mod array;
mod dependencies;
mod negation;
mod number;
mod object;
mod refs;
mod string;
mod types;

/// Deepest nesting of schema objects accepted.
pub const MAX_DEPTH: usize = 128;
/// Most schema objects visited (refs included) for one conversion.
pub const MAX_STEPS: usize = 200_000;
/// Largest `minLength` / `minItems` / `minProperties` a grammar enforces, and
/// the cap applied to the matching maxima (a smaller maximum keeps every
/// output valid).
pub const MAX_COUNT: u64 = 10_000;
/// How to make `oneOf` branches exclusive, for the error message.
const ONE_OF_HINT: &str =
    "give them different types, or a required property whose const/enum values differ";
/// Most schema objects visited to write one `oneOf` branch's complement.
const MAX_COMPLEMENT_STEPS: usize = 2_000;
/// Most alternatives a `oneOf` branch may be split into while it is made
/// exclusive of the others, and most nodes it may grow to.
const MAX_ONE_OF_ALTERNATIVES: usize = 256;
const MAX_ONE_OF_NODES: usize = 20_000;
/// Longest property name, in characters.
pub const MAX_NAME_CHARS: usize = 1_000;

/// The parsed schema: the root node and the `$ref` targets it uses.
#[derive(Debug, Clone)]
pub struct Parsed {
    pub root: Node,
    pub defs: Defs,
    /// Where a subset of what the schema allows was written for want of an
    /// exact grammar: nothing left to write is then no proof that nothing
    /// is valid.
    pub approximated: Option<String>,
}

/// Parse a schema document with the default options.
pub fn parse(schema: &Value) -> Result<Parsed, SchemaError> {
    parse_with(schema, &ConvertOptions::default())
}

/// Parse a schema document.
pub fn parse_with(schema: &Value, options: &ConvertOptions) -> Result<Parsed, SchemaError> {
    ir::KeyLang::begin_conversion();
    let mut ctx = Ctx {
        root: schema,
        defs: Defs::default(),
        steps: 0,
        empty_array_is_schema: options.empty_array_is_schema,
        object_defaults: options.object_defaults,
        lenient_negation: false,
        negated_refs: Vec::new(),
        infer_types: true,
        approximated: None,
        step_limit: MAX_STEPS,
        budget_spent: false,
        skip_combinators: false,
    };
    let root = ctx.schema(schema, "", 0)?;
    ctx.resolve_merges()?;
    if root == Node::Never {
        if let Some(reason) = ctx.approximated {
            return Err(SchemaError::new(
                "",
                ErrorKind::CannotWrite {
                    reason: format!("no value is left: {reason}"),
                },
            ));
        }
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
        approximated: ctx.approximated,
    })
}

struct Ctx<'a> {
    root: &'a Value,
    defs: Defs,
    steps: usize,
    /// [`ConvertOptions::empty_array_is_schema`].
    empty_array_is_schema: bool,
    /// [`ConvertOptions::object_defaults`].
    object_defaults: ObjectDefaults,
    /// Whether a complement may leave out the part of a keyword it cannot
    /// write (a subset of the complement) instead of failing: set while
    /// `oneOf` branches are made exclusive, where any subset is sound.
    lenient_negation: bool,
    /// `$ref` pointers whose complement is being written (a cycle stops).
    negated_refs: Vec<String>,
    /// Whether a schema without `type` takes the kinds its keywords imply
    /// (`{"minimum": 1}` writes numbers): off where a subschema is read as
    /// a test of the value (`if`, `not: {not: …}`), as a validator reads it.
    infer_types: bool,
    /// The first place a subset of what the schema allows was written for
    /// want of an exact grammar: a schema left with no value says so,
    /// rather than that nothing satisfies it.
    approximated: Option<String>,
    /// Steps allowed before [`ErrorKind::TooComplex`]: [`MAX_STEPS`], or
    /// less while a `oneOf` branch's complement is written.
    step_limit: usize,
    /// Whether the lower limit was what ran out.
    budget_spent: bool,
    /// Whether the next schema object read leaves its own combinators out
    /// (`not`, `allOf`, `anyOf`, `oneOf`, `if`: they are checked apart, on
    /// literals: see [`Ctx::literal_passes`]).
    skip_combinators: bool,
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

/// A JSON value that is a schema (see [`Ctx::read_schema`]).
enum SchemaValue<'a> {
    /// A boolean schema: every value (`true`) or none (`false`).
    Bool(bool),
    Object(&'a Map<String, Value>),
}

impl<'a> Ctx<'a> {
    /// Whether `v` is `[]` standing for `{}` (see
    /// [`ConvertOptions::empty_array_is_schema`]).
    fn is_empty_map(&self, v: &Value) -> bool {
        self.empty_array_is_schema && matches!(v, Value::Array(a) if a.is_empty())
    }

    /// `value` read as a schema: a boolean schema (`[]` standing for `{}`
    /// is `true`) or a schema object; any other JSON value is refused. The
    /// one reading for a schema and for the schema of a `not`.
    fn read_schema(&self, value: &'a Value, ptr: &str) -> Result<SchemaValue<'a>, SchemaError> {
        match value {
            Value::Bool(b) => Ok(SchemaValue::Bool(*b)),
            Value::Array(_) if self.is_empty_map(value) => Ok(SchemaValue::Bool(true)),
            Value::Object(map) => Ok(SchemaValue::Object(map)),
            other => Err(err(
                ptr,
                ErrorKind::NotASchema {
                    got: json_type(other),
                },
            )),
        }
    }

    fn step(&mut self, ptr: &str, depth: usize) -> Result<(), SchemaError> {
        if depth > MAX_DEPTH {
            return Err(err(ptr, ErrorKind::TooDeep { limit: MAX_DEPTH }));
        }
        self.steps += 1;
        if self.steps > self.step_limit {
            self.budget_spent = self.step_limit < MAX_STEPS;
            return Err(err(ptr, ErrorKind::TooComplex { limit: MAX_STEPS }));
        }
        Ok(())
    }

    fn schema(&mut self, value: &'a Value, ptr: &str, depth: usize) -> Result<Node, SchemaError> {
        self.step(ptr, depth)?;
        let skip = std::mem::take(&mut self.skip_combinators);
        let map = match self.read_schema(value, ptr)? {
            SchemaValue::Bool(b) => return Ok(if b { Node::Any } else { Node::Never }),
            SchemaValue::Object(map) => map,
        };
        for key in map.keys() {
            let refused = match keywords::classify(key) {
                Class::Supported | Class::Annotation | Class::Unknown => continue,
                Class::Unsupported => ErrorKind::UnsupportedKeyword {
                    keyword: key.clone(),
                },
                Class::Misspelled(meant) => ErrorKind::Misspelled {
                    keyword: key.clone(),
                    meant,
                },
            };
            return Err(err(ptr, refused));
        }
        for &defs_key in keywords::DEFINITIONS {
            if let Some(v) = map.get(defs_key) {
                if !v.is_object() && !self.is_empty_map(v) {
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
        if skip {
            return Ok(node);
        }
        if let Some(v) = map.get("allOf") {
            let before = node.clone();
            node = self.all_of(&before, v, ptr, depth)?;
            // Branches whose implied types differ (`{"minProperties": 2}`
            // and `{"multipleOf": 2}`) leave nothing when each takes its
            // own; a validator reads each keyword as constraining its own
            // type only, and so does the converter then.
            if node == Node::Never && self.infer_types {
                self.infer_types = false;
                let read = self.all_of(&before, v, ptr, depth);
                self.infer_types = true;
                node = read?;
            }
        }
        if let Some(v) = map.get("anyOf") {
            let branches = self.branches(v, ptr, "anyOf", depth)?;
            node = self.merge(&node, &any_of(branches), ptr, "anyOf")?;
        }
        if let Some(v) = map.get("oneOf") {
            let branches = self.branches(v, ptr, "oneOf", depth)?;
            node = self.one_of(&node, branches, v, ptr, depth)?;
        }
        if let Some(v) = map.get("not") {
            let complement = self.negation(v, &format!("{ptr}/not"), depth + 1)?;
            node = self.merge(&node, &complement, ptr, "not")?;
        }
        if let Some(condition) = map.get("if") {
            if map.contains_key("then") || map.contains_key("else") {
                let cases = self.conditional(map, condition, ptr, depth)?;
                node = self.merge(&node, &cases, ptr, "if")?;
            }
        }
        Ok(node)
    }

    /// `node` intersected with every branch of `allOf`.
    fn all_of(
        &mut self,
        node: &Node,
        v: &'a Value,
        ptr: &str,
        depth: usize,
    ) -> Result<Node, SchemaError> {
        if let Some(kept) = self.literals_of_all_of(v, ptr, depth) {
            return self.merge(node, &kept, ptr, "allOf");
        }
        let mut node = node.clone();
        for (i, branch) in self
            .branches(v, ptr, "allOf", depth)?
            .into_iter()
            .enumerate()
        {
            node = self.intersect(&node, &branch).map_err(|reason| {
                err(
                    ptr,
                    ErrorKind::AllOfNotMergeable {
                        reason: format!("branch {i}: {reason}"),
                    },
                )
            })?;
        }
        Ok(node)
    }

    /// An `allOf` with a branch of literals only (`enum`, `const`): the
    /// literals every other branch accepts, each checked as a validator
    /// checks it, so that a branch whose grammar (a complement, say) could
    /// not be written still applies exactly. `None` when a branch cannot be
    /// decided on some literal: the branches are then merged as usual.
    fn literals_of_all_of(&mut self, v: &'a Value, ptr: &str, depth: usize) -> Option<Node> {
        let Value::Array(branches) = v else {
            return None;
        };
        let literal_only = |b: &Value| -> Option<Vec<Value>> {
            let map = b.as_object()?;
            let mut constraints = map
                .keys()
                .filter(|k| !matches!(keywords::classify(k), Class::Annotation | Class::Unknown));
            let (Some(key), None) = (constraints.next(), constraints.next()) else {
                return None;
            };
            match (key.as_str(), &map[key.as_str()]) {
                ("enum", Value::Array(values)) if !values.is_empty() => Some(dedup(values)),
                ("const", value) => Some(vec![value.clone()]),
                _ => None,
            }
        };
        let (at, literals) = branches
            .iter()
            .enumerate()
            .find_map(|(i, b)| literal_only(b).map(|l| (i, l)))?;
        let mut kept = Vec::with_capacity(literals.len());
        for literal in literals {
            let mut passes = true;
            for (i, b) in branches.iter().enumerate().filter(|(i, _)| *i != at) {
                if !self.literal_passes(b, &literal, &format!("{ptr}/allOf/{i}"), depth + 1)? {
                    passes = false;
                    break;
                }
            }
            if passes {
                kept.push(literal);
            }
        }
        Some(if kept.is_empty() {
            Node::Never
        } else {
            Node::Enum(kept)
        })
    }

    /// Whether a validator accepts `literal` against `schema`: its
    /// combinators (`not`, `allOf`, `anyOf`, `oneOf`, `if`) decided branch
    /// by branch on the literal (no complement or exclusivity to write),
    /// the rest read as a test. `None` when that cannot be decided exactly.
    fn literal_passes(
        &mut self,
        schema: &'a Value,
        literal: &Value,
        ptr: &str,
        depth: usize,
    ) -> Option<bool> {
        if depth > MAX_DEPTH {
            return None;
        }
        if let Some(map) = schema.as_object() {
            let mut passes =
                |s: &'a Value, at: String| self.literal_passes(s, literal, &at, depth + 1);
            if let Some(inner) = map.get("not") {
                if passes(inner, format!("{ptr}/not"))? {
                    return Some(false);
                }
            }
            for key in ["allOf", "anyOf", "oneOf"] {
                let Some(v) = map.get(key) else { continue };
                let Value::Array(branches) = v else {
                    return None;
                };
                let mut passing = 0usize;
                for (i, b) in branches.iter().enumerate() {
                    passing += usize::from(passes(b, format!("{ptr}/{key}/{i}"))?);
                }
                let ok = match key {
                    "allOf" => passing == branches.len(),
                    "anyOf" => passing >= 1,
                    _ => passing == 1,
                };
                if !ok {
                    return Some(false);
                }
            }
            if let Some(condition) = map.get("if") {
                let (case, key) = if passes(condition, format!("{ptr}/if"))? {
                    (map.get("then"), "then")
                } else {
                    (map.get("else"), "else")
                };
                if let Some(case) = case {
                    if !passes(case, format!("{ptr}/{key}"))? {
                        return Some(false);
                    }
                }
            }
        }
        // A subset written for want of an exact grammar is no exact test.
        let approximated = self.approximated.take();
        self.skip_combinators = true;
        let node = self.as_test(schema, ptr, depth);
        self.skip_combinators = false;
        let exact = self.approximated.is_none();
        self.approximated = approximated;
        if !exact {
            return None;
        }
        ir::validates(&node.ok()?, literal, &self.defs)
    }

    /// `if`/`then`/`else` as the union of its two cases: values matching
    /// `if` and `then`, and values matching `not if` and `else`. The first
    /// `if` is read as a test ([`Ctx::as_test`]: a property it names is not
    /// required of the value); both are subsets of their cases, so the
    /// union is a subset of the schema.
    fn conditional(
        &mut self,
        map: &'a Map<String, Value>,
        condition: &'a Value,
        ptr: &str,
        depth: usize,
    ) -> Result<Node, SchemaError> {
        let holds = self.as_test(condition, &format!("{ptr}/if"), depth + 1)?;
        let fails = self.negation(condition, &format!("{ptr}/if"), depth + 1)?;
        let mut cases = Vec::with_capacity(2);
        for (keyword, case) in [("then", holds), ("else", fails)] {
            let branch = match map.get(keyword) {
                Some(v) => self.schema(v, &format!("{ptr}/{keyword}"), depth + 1)?,
                None => Node::Any,
            };
            cases.push(self.merge(&case, &branch, ptr, keyword)?);
        }
        Ok(any_of(
            cases.into_iter().filter(|n| *n != Node::Never).collect(),
        ))
    }

    /// `value` read as a test of a value, the way a validator reads it:
    /// JSON Schema's object defaults, and no kinds implied by keywords.
    /// The grammar of the result is a subset of the values that pass.
    fn as_test(&mut self, value: &'a Value, ptr: &str, depth: usize) -> Result<Node, SchemaError> {
        let policy = std::mem::replace(&mut self.object_defaults, ObjectDefaults::JsonSchema);
        let infer = std::mem::replace(&mut self.infer_types, false);
        let node = self.schema(value, ptr, depth);
        self.object_defaults = policy;
        self.infer_types = infer;
        node
    }

    /// `value` read as a test ([`Ctx::as_test`]) when that reading is exact
    /// (no subset written for want of a grammar): exactly the values a
    /// validator accepts. `None` otherwise, or when it cannot be read.
    fn exact_test(&mut self, value: &'a Value, ptr: &str, depth: usize) -> Option<Node> {
        let approximated = self.approximated.take();
        let node = self.as_test(value, ptr, depth);
        let exact = self.approximated.is_none();
        self.approximated = approximated;
        node.ok().filter(|_| exact)
    }

    /// `a` ∩ `b`, where a definition still being read becomes a merge
    /// computed once every definition is read.
    fn intersect(&mut self, a: &Node, b: &Node) -> Result<Node, String> {
        let (node, deferred) = ir::intersect_deferring(a, b, &self.defs)?;
        for (target, with) in deferred {
            let id = self.defs.nodes.len();
            let of = self.defs.pointers.get(target).cloned().unwrap_or_default();
            // Not a JSON pointer: no `$ref` finds it.
            self.defs
                .pointers
                .push(format!("(#{of} merged with its siblings)"));
            self.defs.nodes.push(None);
            self.defs.merges.push(ir::Merge { id, target, with });
        }
        Ok(node)
    }

    /// Computes the merges deferred while their definitions were read, in
    /// slot order (more may follow from them). A merge's target is an
    /// earlier slot (a definition, or a merge computed before it), so it is
    /// known by then.
    fn resolve_merges(&mut self) -> Result<(), SchemaError> {
        /// Merges one schema may need.
        const MAX_MERGES: usize = 256;
        let cannot = |reason: String| SchemaError::new("", ErrorKind::CannotWrite { reason });
        let mut i = 0;
        while let Some(m) = self.defs.merges.get(i).cloned() {
            i += 1;
            if i > MAX_MERGES {
                return Err(cannot(format!(
                    "recursive definitions merged with their siblings need more than {MAX_MERGES} merged copies"
                )));
            }
            // Never unknown (see above); nothing would be a subset anyway.
            let target = self.defs.get(m.target).cloned().unwrap_or(Node::Never);
            let node = self.intersect(&target, &m.with).map_err(|reason| {
                let of = self
                    .defs
                    .pointers
                    .get(m.target)
                    .cloned()
                    .unwrap_or_default();
                cannot(format!("#{of} merged with its siblings: {reason}"))
            })?;
            if let Some(slot) = self.defs.nodes.get_mut(m.id) {
                *slot = Some(node);
            }
        }
        Ok(())
    }

    fn merge(&mut self, a: &Node, b: &Node, ptr: &str, keyword: &str) -> Result<Node, SchemaError> {
        self.intersect(a, b).map_err(|reason| {
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

    /// `oneOf`: values of exactly one branch. Branches proven exclusive are
    /// kept as they are; a branch that may overlap others is narrowed to the
    /// values the others' schemas refuse (`A and not B`), where the
    /// complement of each other branch can be written (in part: a subset of
    /// the complement keeps every value valid).
    fn one_of(
        &mut self,
        base: &Node,
        branches: Vec<Node>,
        raw: &'a Value,
        ptr: &str,
        depth: usize,
    ) -> Result<Node, SchemaError> {
        let mut kept: Vec<(usize, Node)> = Vec::new();
        for (i, b) in branches.into_iter().enumerate() {
            let m = self.merge(base, &b, &format!("{ptr}/oneOf/{i}"), "oneOf")?;
            if m != Node::Never {
                kept.push((i, m));
            }
        }
        if kept.is_empty() {
            return Ok(Node::Never);
        }
        // What each branch accepts as a validator reads it, where that can
        // be written exactly: what a branch's grammar writes must fail every
        // other branch as JSON Schema reads it, not only as its grammar is
        // written (`{"multipleOf": 3}` writes numbers and accepts objects),
        // and that includes the branches whose grammar writes nothing here.
        let items: &[Value] = match raw {
            Value::Array(items) => items,
            _ => &[],
        };
        let mut tests: Vec<Option<Node>> = Vec::with_capacity(items.len());
        for (j, item) in items.iter().enumerate() {
            let test = self.exact_test(item, &format!("{ptr}/oneOf/{j}"), depth + 1);
            tests.push(test);
        }
        // For each kept branch, the other branches (by index) it may meet.
        let mut overlaps: Vec<Vec<usize>> = vec![Vec::new(); kept.len()];
        for (x, (i, node)) in kept.iter().enumerate() {
            for j in (0..items.len()).filter(|j| j != i) {
                let apart = tests
                    .get(j)
                    .and_then(Option::as_ref)
                    .is_some_and(|t| ir::excludes(node, t, &self.defs));
                if !apart {
                    overlaps[x].push(j);
                }
            }
        }
        let mut nodes: Vec<Node> = Vec::with_capacity(kept.len());
        let mut first_overlap = None;
        for (x, (i, node)) in kept.iter().enumerate() {
            if let (None, Some(&j)) = (first_overlap, overlaps[x].first()) {
                first_overlap = Some((*i, j));
            }
            let mut node = node.clone();
            for &j in &overlaps[x] {
                let not_exclusive = || {
                    err(
                        ptr,
                        ErrorKind::OneOfNotExclusive {
                            first: (*i).min(j),
                            second: (*i).max(j),
                            hint: ONE_OF_HINT,
                        },
                    )
                };
                let Value::Array(items) = raw else {
                    return Err(not_exclusive());
                };
                let others =
                    self.lenient_complement(&items[j], &format!("{ptr}/oneOf/{j}"), depth)?;
                // Narrowing distributes alternatives over each other: bounded.
                let product = ir::alternatives(&node).saturating_mul(ir::alternatives(&others));
                if others == Node::Never || product > MAX_ONE_OF_ALTERNATIVES {
                    return Err(not_exclusive());
                }
                node = self
                    .intersect(&node, &others)
                    .map_err(|_| not_exclusive())?;
                if ir::size(&node) > MAX_ONE_OF_NODES {
                    return Err(not_exclusive());
                }
                if node == Node::Never {
                    break;
                }
            }
            if node != Node::Never {
                nodes.push(node);
            }
        }
        Ok(match (nodes.len(), first_overlap) {
            // Every branch narrowed away: not a contradiction of the schema
            // (the written complements are subsets), so not "unsatisfiable".
            (0, Some((first, second))) => {
                return Err(err(
                    ptr,
                    ErrorKind::OneOfNotExclusive {
                        first,
                        second,
                        hint: ONE_OF_HINT,
                    },
                ))
            }
            (0, None) => Node::Never,
            (1, _) => nodes.pop().unwrap_or(Node::Never),
            _ => Node::OneOf(nodes),
        })
    }

    /// A subset of the values `schema` refuses, written from what of it can
    /// be complemented (see [`Ctx::lenient_negation`]).
    fn lenient_complement(
        &mut self,
        schema: &'a Value,
        ptr: &str,
        depth: usize,
    ) -> Result<Node, SchemaError> {
        let before = std::mem::replace(&mut self.lenient_negation, true);
        let limit = self.step_limit;
        self.step_limit = limit.min(self.steps.saturating_add(MAX_COMPLEMENT_STEPS));
        let defs_before = self.defs.pointers.len();
        let out = self.negation(schema, ptr, depth + 1);
        self.lenient_negation = before;
        self.step_limit = limit;
        if out.is_err() && std::mem::take(&mut self.budget_spent) {
            // Too large to complement here: no value proven apart. The
            // `$ref` targets it began are dropped with it.
            self.defs.pointers.truncate(defs_before);
            self.defs.nodes.truncate(defs_before);
            self.defs.merges.retain(|m| m.id < defs_before);
            return Ok(Node::Never);
        }
        out
    }
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

fn dedup(values: &[Value]) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::with_capacity(values.len());
    // Values bucketed by a key that equal values share, so that large enums
    // are deduplicated in linear time.
    let mut seen: HashMap<u64, Vec<usize>> = HashMap::default();
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
