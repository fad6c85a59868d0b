//! [`Node`] → GBNF rules. A simple walk: each object, array and `$ref` target
//! gets a rule of its own; JSON primitives are shared rules emitted when used.
//!
//! The output layout is the [`Layout`] of the options, so that whitespace is
//! bounded: by default `{"a": 1, "b": [1, 2]}` (", " between members, ": "
//! after keys, nothing else).

use std::collections::{BTreeMap, HashMap, HashSet};

use super::canonical;
use super::formats::Format;
use super::ir::{ArrNode, Defs, Node, ObjNode, StrNode};
use super::lang::{self, Dfa, Re};
use super::numeric;
use super::options::Layout;
use super::range::NumRange;
use super::regex;
use super::strings;
use super::Productive;
use crate::grammar::expr::{render, Expr, Rule};

/// Enums of more values than this are written as a prefix tree
/// ([`Expr::trie`]): `enum: range(1, 100000)` as 100,000 alternatives kept
/// llama.cpp's grammar engine busy for about 50 s before the first token.
const TRIE_FROM: usize = 32;

/// Repetitions longer than this are decomposed into blocks, so that
/// llama.cpp's expansion of `x{m,n}` stays shallow.
const BLOCK: u32 = 64;

/// Render the grammar of a parsed schema.
pub fn emit(
    root: &Node,
    defs: &Defs,
    productive: &Productive,
    layout: &Layout,
) -> Result<String, EmitError> {
    let mut e = Emitter {
        defs,
        layout,
        productive,
        rules: BTreeMap::new(),
        order: Vec::new(),
        used_names: HashMap::new(),
        def_rules: vec![None; defs.nodes.len()],
        pending: Vec::new(),
        hoisted: HashMap::new(),
        strings: HashMap::new(),
        empty_range: None,
        limitation: None,
    };
    let root_expr = match e.expr(root, "root").map_err(EmitError::CannotWrite)? {
        Some(x) => x,
        None => {
            return Err(match e.limitation {
                Some(why) => EmitError::CannotWrite(why),
                None => EmitError::Unsatisfiable(
                    e.empty_range
                        .unwrap_or_else(|| "the schema matches no value".to_owned()),
                ),
            })
        }
    };
    e.define("root".to_owned(), root_expr);
    while let Some(id) = e.pending.pop() {
        let name = e
            .def_rules
            .get(id)
            .cloned()
            .flatten()
            .ok_or_else(|| EmitError::CannotWrite("internal: unnamed $ref rule".to_owned()))?;
        let node = defs
            .get(id)
            .ok_or_else(|| EmitError::CannotWrite("internal: $ref target missing".to_owned()))?;
        let Some(expr) = e.expr(node, &name).map_err(EmitError::CannotWrite)? else {
            return Err(EmitError::CannotWrite(e.limitation.unwrap_or_else(|| {
                "internal: a $ref that can produce a value was written as none".to_owned()
            })));
        };
        e.define(name, expr);
    }
    // `root ::= x` where nothing else uses x: give x's body to root.
    if let Some(Expr::Rule(only)) = e.rules.get("root").cloned() {
        let used_elsewhere = e
            .rules
            .iter()
            .any(|(n, x)| n != "root" && expr_mentions(x, &only));
        if !used_elsewhere {
            if let Some(body) = e.rules.remove(&only) {
                e.rules.insert("root".to_owned(), body);
                e.order.retain(|n| *n != only);
            }
        }
    }
    // root first, then the rest in the order they were defined.
    let root_first = std::iter::once(&"root".to_owned())
        .chain(e.order.iter().filter(|n| *n != "root"))
        .cloned()
        .collect::<Vec<_>>();
    let rules: Vec<Rule> = root_first
        .iter()
        .filter_map(|name| {
            e.rules.get(name).map(|expr| Rule {
                name: name.clone(),
                expr: expr.clone(),
            })
        })
        .collect();
    Ok(render(&rules))
}

struct Emitter<'a> {
    defs: &'a Defs,
    layout: &'a Layout,
    productive: &'a Productive,
    rules: BTreeMap<String, Expr>,
    order: Vec<String>,
    used_names: HashMap<String, usize>,
    def_rules: Vec<Option<String>>,
    pending: Vec<usize>,
    /// The grammar of each string node written from an automaton.
    strings: HashMap<StrNode, Option<Expr>>,
    /// The rule already holding each hoisted repetition body.
    hoisted: HashMap<Expr, String>,
    /// Why the first numeric range that matched nothing did: a union drops
    /// such a branch, and a schema left with nothing reports it.
    empty_range: Option<String>,
    /// The first part of the schema left out because the converter cannot
    /// write it (not because nothing matches it).
    limitation: Option<String>,
}

/// Why no grammar was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EmitError {
    /// No value matches the schema.
    Unsatisfiable(String),
    /// Values match, but the converter cannot write a grammar for them.
    CannotWrite(String),
}

impl Emitter<'_> {
    fn define(&mut self, name: String, expr: Expr) {
        if self.rules.contains_key(&name) {
            return;
        }
        let escapes = strings::escapes();
        let expr = if name == ESCAPE_RULE {
            expr
        } else {
            factor(expr, escapes)
        };
        if expr_mentions(&expr, ESCAPE_RULE) && !self.rules.contains_key(ESCAPE_RULE) {
            self.order.push(ESCAPE_RULE.to_owned());
            self.rules
                .insert(ESCAPE_RULE.to_owned(), Expr::alt(escapes.to_vec()));
        }
        let mut hoisted = Vec::new();
        let expr = self.hoist(expr, &name, &mut hoisted);
        self.order.push(name.clone());
        self.rules.insert(name, expr);
        for (sub_name, sub_expr) in hoisted {
            self.order.push(sub_name.clone());
            self.rules.insert(sub_name, sub_expr);
        }
    }

    /// `expr` with the body of every repetition that is not a single symbol
    /// moved into a rule of its own. llama.cpp expands `x{m,n}` into rules and
    /// refuses a grammar when the rules inside `x` times the count exceed
    /// 2000; a rule reference counts as one.
    fn hoist(&mut self, expr: Expr, owner: &str, out: &mut Vec<(String, Expr)>) -> Expr {
        match expr {
            Expr::Repeat {
                expr: body,
                min,
                max,
            } => {
                let body = self.hoist(*body, owner, out);
                let atom = matches!(body, Expr::Lit(_) | Expr::Class { .. } | Expr::Rule(_));
                let body = if atom || max == Some(1) {
                    body
                } else if let Some(name) = self.hoisted.get(&body) {
                    Expr::rule(name.clone())
                } else {
                    let name = self.fresh(&format!("{owner}-rep"));
                    self.hoisted.insert(body.clone(), name.clone());
                    out.push((name.clone(), body));
                    Expr::rule(name)
                };
                Expr::Repeat {
                    expr: Box::new(body),
                    min,
                    max,
                }
            }
            Expr::Seq(items) => Expr::Seq(
                items
                    .into_iter()
                    .map(|x| self.hoist(x, owner, out))
                    .collect(),
            ),
            Expr::Alt(items) => Expr::Alt(
                items
                    .into_iter()
                    .map(|x| self.hoist(x, owner, out))
                    .collect(),
            ),
            other => other,
        }
    }

    /// A fresh rule name derived from `hint`.
    fn fresh(&mut self, hint: &str) -> String {
        let mut base: String = hint
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '-'
                }
            })
            .collect();
        base.truncate(60);
        if base.is_empty() {
            base.push('r');
        }
        let n = self.used_names.entry(base.clone()).or_insert(0);
        *n += 1;
        if *n == 1 && !is_shared(&base) {
            base
        } else {
            format!("{base}-{n}")
        }
    }

    /// Define a shared primitive rule (once) and return a reference to it.
    fn shared(&mut self, name: &'static str) -> Expr {
        if !self.rules.contains_key(name) {
            self.define(name.to_owned(), shared_rule(name, self.layout));
            for dep in shared_deps(name) {
                self.shared(dep);
            }
        }
        Expr::rule(name)
    }

    fn format_rule(&mut self, f: Format) -> Expr {
        let name = f.rule_name();
        if !self.rules.contains_key(name) {
            self.define(name.to_owned(), f.expr());
        }
        Expr::rule(name)
    }

    /// The expression of a node, or `None` when it matches nothing.
    fn expr(&mut self, node: &Node, hint: &str) -> Result<Option<Expr>, String> {
        Ok(Some(match node {
            Node::Any => self.shared("value"),
            Node::Never => return Ok(None),
            Node::Null => Expr::lit("null"),
            Node::Bool => self.shared("boolean"),
            Node::Int(range) => match self.integer(range) {
                Some(x) => x,
                None => return Ok(None),
            },
            Node::Num(range) => match self.number(range) {
                Some(x) => x,
                None => return Ok(None),
            },
            Node::Str(s) => match self.string(s, hint)? {
                Some(x) => x,
                None => return Ok(None),
            },
            Node::Enum(values) => {
                let texts: Vec<String> = values
                    .iter()
                    .map(|v| canonical::value_text_in(v, self.layout))
                    .collect();
                if texts.len() > TRIE_FROM {
                    Expr::trie(texts.iter().map(String::as_str))
                } else {
                    Expr::alt(texts.into_iter().map(Expr::lit))
                }
            }
            Node::AnyOf(branches) | Node::OneOf(branches) => {
                let mut alts = Vec::new();
                for (i, b) in branches.iter().enumerate() {
                    if let Some(x) = self.expr(b, &format!("{hint}-{i}"))? {
                        alts.push(x);
                    }
                }
                if alts.is_empty() {
                    return Ok(None);
                }
                Expr::alt(alts)
            }
            Node::Ref(id) => {
                if !self.productive.relaxed(node) {
                    return Ok(None);
                }
                match self.def_rules.get(*id).cloned().flatten() {
                    Some(name) => Expr::rule(name),
                    None => {
                        let pointer = self.defs.pointers.get(*id).cloned().unwrap_or_default();
                        let last = pointer.rsplit('/').next().unwrap_or("");
                        let name = self.fresh(&format!("ref-{last}"));
                        if let Some(slot) = self.def_rules.get_mut(*id) {
                            *slot = Some(name.clone());
                        }
                        self.pending.push(*id);
                        Expr::rule(name)
                    }
                }
            }
            Node::Arr(a) => match self.array(a, hint)? {
                Some(x) => x,
                None => return Ok(None),
            },
            Node::Obj(o) => match self.object(o, hint)? {
                Some(x) => x,
                None => return Ok(None),
            },
        }))
    }

    /// The integers of `range`, or `None` when it holds none (a branch of
    /// a union such as `not: {enum: [6379, 6380]}` leaves between two
    /// neighbours).
    fn integer(&mut self, range: &NumRange) -> Option<Expr> {
        if range.min.is_none() && range.max.is_none() {
            return Some(self.shared("integer"));
        }
        let expr = numeric::integer_range(range.min.as_ref(), range.max.as_ref());
        self.range_or_none(expr)
    }

    /// The numbers of `range`, or `None` when it holds none.
    fn number(&mut self, range: &NumRange) -> Option<Expr> {
        if range.min.is_none() && range.max.is_none() {
            return Some(self.shared("number"));
        }
        let expr = numeric::number_range(range.min.as_ref(), range.max.as_ref());
        self.range_or_none(expr)
    }

    fn range_or_none(&mut self, expr: Result<Expr, numeric::RangeError>) -> Option<Expr> {
        match expr {
            Ok(x) => Some(x),
            Err(e) => {
                self.empty_range.get_or_insert_with(|| e.to_string());
                None
            }
        }
    }

    /// Members of keys other than the declared ones, all under
    /// `additional`'s schema.
    fn additional_members(&mut self, o: &ObjNode, hint: &str) -> Result<Option<Expr>, String> {
        Ok(
            match self.expr(&o.additional, &format!("{hint}-additional"))? {
                Some(value) => {
                    let names: Vec<&str> = o.props.iter().map(|p| p.name.as_str()).collect();
                    let key = Expr::seq([
                        Expr::lit("\""),
                        strings::content_excluding(&names),
                        Expr::lit("\""),
                    ]);
                    let key_name = self.fresh(&format!("{hint}-key"));
                    self.define(key_name.clone(), key);
                    Some(Expr::seq([
                        Expr::rule(key_name),
                        Expr::lit(self.layout.key_separator.as_str()),
                        value,
                    ]))
                }
                None => None,
            },
        )
    }

    /// `count` members of undeclared keys under `additional`'s schema whose
    /// keys differ from each other (each of its own length) and from the
    /// declared names; empty when they cannot be written.
    fn distinct_members(
        &mut self,
        o: &ObjNode,
        count: u64,
        hint: &str,
    ) -> Result<Vec<Expr>, String> {
        if count > MAX_DISTINCT_KEYS {
            return Ok(Vec::new());
        }
        let Some(value) = self.expr(&o.additional, &format!("{hint}-additional"))? else {
            return Ok(Vec::new());
        };
        let undeclared = Re::one_of(o.props.iter().map(|p| p.name.as_str())).complement();
        let dfa = lang::automaton(&undeclared).map_err(|e| e.to_string())?;
        let mut members = Vec::new();
        // Declared names are finitely many: past the longest, every length
        // has keys, so this ends within `count` lengths of it. The empty key
        // is valid JSON but not what anyone writes: lengths start at 1.
        let mut length = 1;
        while (members.len() as u64) < count {
            if let Some(key) = self.automaton(&dfa, length, Some(length), &format!("{hint}-key"))? {
                members.push(Expr::seq([
                    quoted(key),
                    Expr::lit(self.layout.key_separator.as_str()),
                    value.clone(),
                ]));
            }
            length += 1;
        }
        Ok(members)
    }

    /// Members of undeclared keys when patterns or `propertyNames` decide
    /// them: for each key region its keys (without the declared names) and
    /// its schema, then the remaining keys under `additional`'s.
    fn key_regions(&mut self, o: &ObjNode, hint: &str) -> Result<Option<Expr>, String> {
        let declared = Re::one_of(o.props.iter().map(|p| p.name.as_str())).complement();
        let mut langs: Vec<(Re, &Node)> = o
            .regions
            .iter()
            .map(|(lang, node)| (lang.re.clone(), node))
            .collect();
        let mut rest = vec![Re::Alt(langs.iter().map(|(re, _)| re.clone()).collect()).complement()];
        if let Some(n) = &o.names {
            rest.push(n.re.clone());
        }
        langs.push((Re::And(rest), &*o.additional));
        let mut members = Vec::new();
        for (i, (re, node)) in langs.into_iter().enumerate() {
            let Some(value) = self.expr(node, &format!("{hint}-keys-{i}"))? else {
                continue;
            };
            let dfa =
                lang::automaton(&Re::And(vec![re, declared.clone()])).map_err(|e| e.to_string())?;
            if let Some(key) = self.automaton(&dfa, 0, None, &format!("{hint}-key"))? {
                members.push(Expr::seq([
                    quoted(key),
                    Expr::lit(self.layout.key_separator.as_str()),
                    value,
                ]));
            }
        }
        Ok((!members.is_empty()).then(|| Expr::alt(members)))
    }

    /// The grammar of a string node, or `None` when no string meets it.
    fn string(&mut self, s: &StrNode, hint: &str) -> Result<Option<Expr>, String> {
        let content = if s.needs_automaton() {
            return self.string_automaton(s, hint);
        } else if let [f] = s.formats.as_slice() {
            self.format_rule(*f)
        } else if let [p] = s.patterns.as_slice() {
            let expr = regex::pattern_to_expr(p).map_err(|e| e.to_string())?;
            let ch = self.shared("char");
            let expr = expr.replace(&strings::any_char(), &ch);
            let name = self.fresh(&format!("{hint}-pattern"));
            self.define(name.clone(), expr);
            Expr::rule(name)
        } else if !s.not_in.is_empty() {
            let names: Vec<&str> = s.not_in.iter().map(String::as_str).collect();
            let name = self.fresh(&format!("{hint}-except"));
            self.define(name.clone(), strings::content_excluding(&names));
            Expr::rule(name)
        } else if s.min_len == 0 && s.max_len.is_none() {
            return Ok(Some(self.shared("string")));
        } else {
            let ch = self.shared("char");
            repeat(ch, s.min_len, s.max_len)
        };
        Ok(Some(quoted(content)))
    }

    /// A string node of several constraints, from the automaton of their
    /// intersection, bounded in length as it is written.
    fn string_automaton(&mut self, s: &StrNode, hint: &str) -> Result<Option<Expr>, String> {
        if let Some(done) = self.strings.get(s) {
            return Ok(done.clone());
        }
        let written = self.string_automaton_once(s, hint)?;
        self.strings.insert(s.clone(), written.clone());
        Ok(written)
    }

    fn string_automaton_once(&mut self, s: &StrNode, hint: &str) -> Result<Option<Expr>, String> {
        let dfa = s.automaton().map_err(|e| e.to_string())?;
        let content = self.automaton(&dfa, s.min_len, s.max_len, &format!("{hint}-string"))?;
        if content.is_none() {
            self.empty_range
                .get_or_insert_with(|| "no string meets all of its string constraints".to_owned());
        }
        Ok(content.map(quoted))
    }

    /// Rules for the strings of an automaton within lengths, and a
    /// reference to the first; `None` when there is no such string.
    fn automaton(
        &mut self,
        dfa: &Dfa,
        min: u64,
        max: Option<u64>,
        base: &str,
    ) -> Result<Option<Expr>, String> {
        let Some(emitted) = dfa
            .rules(min, max, &mut || self.fresh(base))
            .map_err(|e| e.to_string())?
        else {
            return Ok(None);
        };
        let ch = self.shared("char");
        let mut start = None;
        for (name, expr) in emitted.rules {
            start.get_or_insert_with(|| name.clone());
            self.define(name, expr.replace(&strings::any_char(), &ch));
        }
        Ok(start.map(Expr::rule))
    }

    fn array(&mut self, a: &ArrNode, hint: &str) -> Result<Option<Expr>, String> {
        let mut elems = Vec::with_capacity(a.prefix.len());
        let mut max = a.max_items;
        for (i, p) in a.prefix.iter().enumerate() {
            match self.expr(p, &format!("{hint}-{i}"))? {
                Some(x) => elems.push(x),
                None => {
                    max = Some(max.map_or(i as u64, |m| m.min(i as u64)));
                    break;
                }
            }
        }
        let items = if elems.len() == a.prefix.len() {
            self.expr(&a.items, &format!("{hint}-item"))?
        } else {
            None
        };
        if items.is_none() {
            let cap = elems.len() as u64;
            max = Some(max.map_or(cap, |m| m.min(cap)));
        }
        if max.is_some_and(|m| m < a.min_items) {
            return Ok(None);
        }
        let body = array_body(
            &elems,
            items.as_ref(),
            a.min_items,
            max,
            &self.layout.item_separator,
        );
        let name = self.fresh(hint);
        self.define(
            name.clone(),
            Expr::seq([Expr::lit("["), body, Expr::lit("]")]),
        );
        Ok(Some(Expr::rule(name)))
    }

    fn object(&mut self, o: &ObjNode, hint: &str) -> Result<Option<Expr>, String> {
        let mut members = Vec::new();
        for p in &o.props {
            // An implicitly required property whose every emission would
            // recurse without end is left optional.
            let required = p.required && (!p.implicit || self.productive.strict(&p.node));
            match self.expr(&p.node, &format!("{hint}-{}", p.name))? {
                Some(value) => members.push(Member {
                    text: Expr::seq([
                        strings::quoted_literal(&p.name),
                        Expr::lit(self.layout.key_separator.as_str()),
                        value,
                    ]),
                    required,
                }),
                None if required => return Ok(None),
                None => {}
            }
        }
        let (additional, distinct) = if o.has_key_languages() {
            (self.key_regions(o, hint)?, Vec::new())
        } else {
            let additional = self.additional_members(o, hint)?;
            // Additional keys may repeat, so an object that needs two or
            // more of them gets that many of distinct lengths first.
            let distinct = match &additional {
                Some(_) if o.min_props >= 2 => self.distinct_members(o, o.min_props, hint)?,
                _ => Vec::new(),
            };
            (additional, distinct)
        };
        let name = self.fresh(hint);
        let machine = ObjectMachine {
            name: name.clone(),
            sep: self.layout.item_separator.clone(),
            members,
            additional,
            distinct,
            min: o.min_props,
            max: o.max_props,
        };
        let Some(body) = machine.emit(self) else {
            return Ok(None);
        };
        self.define(
            name.clone(),
            Expr::seq([Expr::lit("{"), body, Expr::lit("}")]),
        );
        Ok(Some(Expr::rule(name)))
    }
}

/// A string of this content.
fn quoted(content: Expr) -> Expr {
    Expr::seq([Expr::lit("\""), content, Expr::lit("\"")])
}

/// Most additional keys of distinct lengths an object is written with
/// (`minProperties` beyond its declared properties).
const MAX_DISTINCT_KEYS: u64 = 256;

/// The rule that holds every escape sequence of a JSON string.
const ESCAPE_RULE: &str = "char-escape";

/// `expr` with every alternation that lists all JSON string escapes rewritten
/// to use [`ESCAPE_RULE`] instead, which keeps grammars with many character
/// sets (patterns, excluded keys) small.
fn factor(expr: Expr, escapes: &[Expr]) -> Expr {
    match expr {
        Expr::Alt(items) => {
            let items: Vec<Expr> = items.into_iter().map(|x| factor(x, escapes)).collect();
            // The escapes are literals: look at the literal alternatives only.
            let escape_set = escape_literals(escapes);
            let is_escape = |x: &Expr| literal(x).is_some_and(|l| escape_set.contains(l));
            let all_present = items.len() >= escape_set.len() && {
                let present: HashSet<&str> = items
                    .iter()
                    .filter(|x| is_escape(x))
                    .filter_map(literal)
                    .collect();
                present.len() == escape_set.len()
            };
            if all_present {
                let mut kept: Vec<Expr> = items.into_iter().filter(|x| !is_escape(x)).collect();
                kept.push(Expr::rule(ESCAPE_RULE));
                Expr::alt(kept)
            } else {
                Expr::Alt(items)
            }
        }
        Expr::Seq(items) => Expr::Seq(items.into_iter().map(|x| factor(x, escapes)).collect()),
        Expr::Repeat { expr, min, max } => Expr::Repeat {
            expr: Box::new(factor(*expr, escapes)),
            min,
            max,
        },
        other => other,
    }
}

/// The escape literals as a set, built once.
fn escape_literals(escapes: &[Expr]) -> &'static HashSet<String> {
    static SET: std::sync::OnceLock<HashSet<String>> = std::sync::OnceLock::new();
    SET.get_or_init(|| {
        escapes
            .iter()
            .filter_map(literal)
            .map(str::to_owned)
            .collect()
    })
}

fn literal(expr: &Expr) -> Option<&str> {
    match expr {
        Expr::Lit(s) => Some(s),
        _ => None,
    }
}

fn expr_mentions(expr: &Expr, rule: &str) -> bool {
    match expr {
        Expr::Rule(name) => name == rule,
        Expr::Alt(items) | Expr::Seq(items) => items.iter().any(|x| expr_mentions(x, rule)),
        Expr::Repeat { expr, .. } => expr_mentions(expr, rule),
        _ => false,
    }
}

struct Member {
    text: Expr,
    required: bool,
}

/// The members of an object, emitted in order. State `(i, c)`: members `i..`
/// remain and `c` were written (capped where the count no longer matters).
/// Its size is linear in the number of properties (times the count bound),
/// never exponential in the optional ones.
struct ObjectMachine {
    name: String,
    /// Between members.
    sep: String,
    members: Vec<Member>,
    additional: Option<Expr>,
    /// Members of additional keys that differ from each other, for an
    /// object that needs several of them (`min` beyond the declared ones).
    distinct: Vec<Expr>,
    min: u64,
    max: Option<u64>,
}

impl ObjectMachine {
    /// Counts above this are all the same state.
    fn cap(&self) -> u64 {
        match self.max {
            Some(m) => m,
            None => self.min.max(1),
        }
    }

    fn emit(&self, e: &mut Emitter<'_>) -> Option<Expr> {
        let simple = self.members.iter().all(|m| m.required)
            && self.additional.is_none()
            && self.max.is_none();
        if simple {
            if (self.members.len() as u64) < self.min {
                return None;
            }
            let mut parts = Vec::new();
            for (i, m) in self.members.iter().enumerate() {
                if i > 0 {
                    parts.push(Expr::lit(self.sep.as_str()));
                }
                parts.push(m.text.clone());
            }
            return Some(Expr::seq(parts));
        }
        self.states(e).map(Expr::rule)
    }

    /// The count after writing a member with `c` written before.
    fn next_count(&self, c: u64) -> u64 {
        if self.max.is_some() {
            c + 1
        } else {
            (c + 1).min(self.cap())
        }
    }

    /// The rules of the states `(i, c)` reachable from `(0, 0)`, built from
    /// the last member back (iteratively: an object may have tens of
    /// thousands of properties); the rule of `(0, 0)`, or `None` when no
    /// valid completion exists.
    fn states(&self, e: &mut Emitter<'_>) -> Option<String> {
        let n = self.members.len();
        // Counts reachable before each member, in increasing order.
        let mut reach: Vec<Vec<u64>> = Vec::with_capacity(n + 1);
        reach.push(vec![0]);
        for (i, m) in self.members.iter().enumerate() {
            let mut next: Vec<u64> = Vec::new();
            for &c in &reach[i] {
                if self.max.is_none_or(|mx| c < mx) {
                    next.push(self.next_count(c));
                }
                if !m.required {
                    next.push(c);
                }
            }
            next.sort_unstable();
            next.dedup();
            reach.push(next);
        }
        // The rule of each reachable count after member i, for i = n down to 0.
        let mut after: HashMap<u64, Option<String>> = HashMap::new();
        for i in (0..=n).rev() {
            let mut here: HashMap<u64, Option<String>> = HashMap::with_capacity(reach[i].len());
            for &c in &reach[i] {
                let expr = if i == n {
                    self.tail_or_note(e, c)
                } else {
                    let m = &self.members[i];
                    let sep = if c == 0 { "" } else { self.sep.as_str() };
                    let take = if self.max.is_none_or(|mx| c < mx) {
                        after
                            .get(&self.next_count(c))
                            .cloned()
                            .flatten()
                            .map(|rest| {
                                Expr::seq([Expr::lit(sep), m.text.clone(), Expr::rule(rest)])
                            })
                    } else {
                        None
                    };
                    let skip = if m.required {
                        None
                    } else {
                        after.get(&c).cloned().flatten().map(Expr::rule)
                    };
                    match (take, skip) {
                        (Some(t), Some(s)) => Some(Expr::alt([t, s])),
                        (Some(x), None) | (None, Some(x)) => Some(x),
                        (None, None) => None,
                    }
                };
                let name = expr.map(|x| {
                    let name = e.fresh(&format!("{}-{}-{}", self.name, i, c));
                    e.define(name.clone(), x);
                    name
                });
                here.insert(c, name);
            }
            after = here;
        }
        after.get(&0).cloned().flatten()
    }

    /// [`Self::tail`], noting why in `e` when keys that cannot be told
    /// apart are all that is missing.
    fn tail_or_note(&self, e: &mut Emitter<'_>, c: u64) -> Option<Expr> {
        let tail = self.tail(c);
        let need = self.min.saturating_sub(c);
        let room = self.max.is_none_or(|m| m - c.min(m) >= need);
        if tail.is_none() && need >= 2 && self.additional.is_some() && room {
            e.limitation.get_or_insert_with(|| {
                format!(
                    "an object needing {need} keys besides its declared properties, \
                     where patternProperties or propertyNames decide the keys (or more than \
                     {MAX_DISTINCT_KEYS}): such keys are not told apart"
                )
            });
        }
        tail
    }

    /// Additional members after the declared ones, given `c` written so far.
    /// Additional keys may repeat, so they count at most once toward `min`,
    /// except the `distinct` ones, written first when two or more are needed.
    fn tail(&self, c: u64) -> Option<Expr> {
        let room = self.max.map(|m| m.saturating_sub(c));
        let need = self.min.saturating_sub(c);
        let Some(kv) = &self.additional else {
            return (need == 0).then(Expr::empty);
        };
        if room.is_some_and(|r| r < need.max(1)) {
            return (need == 0).then(Expr::empty);
        }
        let first_sep = if c == 0 { "" } else { self.sep.as_str() };
        let more = Expr::seq([Expr::lit(self.sep.as_str()), kv.clone()]);
        if need >= 2 {
            let forced = self.distinct.get(..usize::try_from(need).ok()?)?;
            let mut parts = Vec::with_capacity(forced.len() * 2 + 1);
            for (i, member) in forced.iter().enumerate() {
                parts.push(Expr::lit(if i == 0 {
                    first_sep
                } else {
                    self.sep.as_str()
                }));
                parts.push(member.clone());
            }
            parts.push(repeat(more, 0, room.map(|r| r - need)));
            return Some(Expr::seq(parts));
        }
        let more_max = room.map(|r| r.saturating_sub(1));
        let some = Expr::seq([Expr::lit(first_sep), kv.clone(), repeat(more, 0, more_max)]);
        Some(if need == 1 { some } else { some.opt() })
    }
}

/// The elements of an array between `[` and `]`: `elems` first (each may be
/// the last), then `items` repeated, `min..=max` elements in all, `sep`
/// between elements.
fn array_body(elems: &[Expr], items: Option<&Expr>, min: u64, max: Option<u64>, sep: &str) -> Expr {
    // Built from the back: `from(i)` is the language of elements i.. given i elements written.
    let total_cap = max;
    let mut rest: Option<Expr> = None; // elements after the prefix
    let p = elems.len() as u64;
    if let Some(item) = items {
        let lo = min.saturating_sub(p);
        let hi = total_cap.map(|m| m.saturating_sub(p));
        if hi != Some(0) {
            let with_sep = Expr::seq([Expr::lit(sep), item.clone()]);
            rest = Some(if p == 0 {
                // No prefix: the first item has no separator.
                let hi_more = hi.map(|h| h.saturating_sub(1));
                let some = Expr::seq([
                    item.clone(),
                    repeat(with_sep, lo.saturating_sub(1), hi_more),
                ]);
                if lo == 0 {
                    some.opt()
                } else {
                    some
                }
            } else {
                repeat(with_sep, lo, hi)
            });
        }
    }
    let mut acc = rest.unwrap_or_else(Expr::empty);
    for i in (0..elems.len()).rev() {
        let sep = if i == 0 { "" } else { sep };
        let here = Expr::seq([Expr::lit(sep), elems[i].clone(), acc]);
        let within_max = total_cap.is_none_or(|m| (i as u64) < m);
        acc = if !within_max {
            Expr::empty()
        } else if (i as u64) < min {
            here
        } else {
            here.opt()
        };
    }
    acc
}

/// `x` repeated `min..=max` times, decomposed into blocks when large.
pub fn repeat(x: Expr, min: u64, max: Option<u64>) -> Expr {
    let small = |n: u64| u32::try_from(n).unwrap_or(u32::MAX);
    let block = u64::from(BLOCK);
    let exactly = |x: &Expr, n: u64| -> Expr {
        if n <= block {
            x.clone().repeat(small(n), Some(small(n)))
        } else {
            Expr::seq([
                x.clone()
                    .repeat(BLOCK, Some(BLOCK))
                    .repeat(small(n / block), Some(small(n / block))),
                x.clone().repeat(small(n % block), Some(small(n % block))),
            ])
        }
    };
    let head = exactly(&x, min);
    let tail = match max {
        None => x.repeat(0, None),
        Some(m) => {
            let k = m.saturating_sub(min);
            if k <= block {
                x.repeat(0, Some(small(k)))
            } else {
                let (q, r) = (k / block, k % block);
                let full = x.clone().repeat(BLOCK, Some(BLOCK));
                Expr::alt([
                    Expr::seq([
                        full.clone().repeat(0, Some(small(q - 1))),
                        x.clone().repeat(0, Some(BLOCK - 1)),
                    ]),
                    Expr::seq([
                        full.repeat(small(q), Some(small(q))),
                        x.repeat(0, Some(small(r))),
                    ]),
                ])
            }
        }
    };
    Expr::seq([head, tail])
}

fn is_shared(name: &str) -> bool {
    matches!(
        name,
        "value"
            | "object"
            | "array"
            | "string"
            | "char"
            | "char-escape"
            | "number"
            | "integer"
            | "boolean"
            | "root"
    )
}

fn shared_deps(name: &str) -> &'static [&'static str] {
    match name {
        "value" => &["object", "array", "string", "number", "boolean"],
        "object" | "array" => &["value", "string"],
        "string" => &["char"],
        _ => &[],
    }
}

fn shared_rule(name: &str, layout: &Layout) -> Expr {
    let (item_sep, key_sep) = (
        layout.item_separator.as_str(),
        layout.key_separator.as_str(),
    );
    let digit = || Expr::class(&[('0', '9')]);
    let int_part = || {
        Expr::alt([
            Expr::lit("0"),
            Expr::seq([
                Expr::class(&[('1', '9')]),
                digit().repeat(0, Some(numeric::MAX_INT_DIGITS as u32 - 1)),
            ]),
        ])
    };
    match name {
        "value" => Expr::alt(
            ["object", "array", "string", "number", "boolean"]
                .map(Expr::rule)
                .into_iter()
                .chain([Expr::lit("null")]),
        ),
        "object" => {
            let member = Expr::seq([
                Expr::rule("string"),
                Expr::lit(key_sep),
                Expr::rule("value"),
            ]);
            Expr::seq([
                Expr::lit("{"),
                Expr::seq([
                    member.clone(),
                    Expr::seq([Expr::lit(item_sep), member]).repeat(0, None),
                ])
                .opt(),
                Expr::lit("}"),
            ])
        }
        "array" => Expr::seq([
            Expr::lit("["),
            Expr::seq([
                Expr::rule("value"),
                Expr::seq([Expr::lit(item_sep), Expr::rule("value")]).repeat(0, None),
            ])
            .opt(),
            Expr::lit("]"),
        ]),
        "string" => Expr::seq([
            Expr::lit("\""),
            Expr::rule("char").repeat(0, None),
            Expr::lit("\""),
        ]),
        "char" => strings::any_char(),
        "number" => Expr::seq([
            Expr::lit("-").opt(),
            int_part(),
            Expr::seq([
                Expr::lit("."),
                digit().repeat(1, Some(numeric::MAX_FRAC_DIGITS as u32)),
            ])
            .opt(),
            Expr::seq([
                Expr::class(&[('E', 'E'), ('e', 'e')]),
                Expr::class(&[('+', '+'), ('-', '-')]).opt(),
                digit().repeat(1, Some(2)),
            ])
            .opt(),
        ]),
        "integer" => Expr::seq([Expr::lit("-").opt(), int_part()]),
        "boolean" => Expr::alt([Expr::lit("true"), Expr::lit("false")]),
        _ => Expr::empty(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn re(e: &Expr) -> ::regex::Regex {
        ::regex::Regex::new(&format!("^(?:{})$", e.to_regex())).unwrap()
    }

    #[test]
    fn repeat_decomposition_is_exact() {
        let x = Expr::lit("a");
        for (min, max) in [
            (0, Some(200)),
            (3, Some(130)),
            (70, Some(70)),
            (0, Some(64)),
            (65, None),
            (0, Some(129)),
            (130, Some(300)),
        ] {
            let r = re(&repeat(x.clone(), min, max));
            for n in 0..=320u64 {
                let ok = n >= min && max.is_none_or(|m| n <= m);
                assert_eq!(
                    r.is_match(&"a".repeat(n as usize)),
                    ok,
                    "{min}..{max:?} at {n}"
                );
            }
        }
    }

    #[test]
    fn array_bodies_respect_counts_and_prefixes() {
        let e = |c: char| Expr::lit(c.to_string());
        type Case<'a> = (
            Vec<Expr>,
            Option<Expr>,
            u64,
            Option<u64>,
            Vec<&'a str>,
            Vec<&'a str>,
        );
        let cases: Vec<Case> = vec![
            (
                vec![],
                Some(e('x')),
                0,
                None,
                vec!["", "x", "x, x, x"],
                vec![", x", "x,x"],
            ),
            (
                vec![],
                Some(e('x')),
                2,
                Some(3),
                vec!["x, x", "x, x, x"],
                vec!["", "x", "x, x, x, x"],
            ),
            (
                vec![e('a'), e('b')],
                None,
                0,
                None,
                vec!["", "a", "a, b"],
                vec!["b", "a, b, x"],
            ),
            (
                vec![e('a'), e('b')],
                Some(e('x')),
                1,
                Some(3),
                vec!["a", "a, b", "a, b, x"],
                vec!["", "a, b, x, x"],
            ),
            (
                vec![e('a')],
                Some(e('x')),
                3,
                None,
                vec!["a, x, x", "a, x, x, x"],
                vec!["a", "a, x"],
            ),
        ];
        for (elems, items, min, max, good, bad) in cases {
            let r = re(&array_body(&elems, items.as_ref(), min, max, ", "));
            for g in good {
                assert!(r.is_match(g), "{min}..{max:?} should accept {g:?}");
            }
            for b in bad {
                assert!(!r.is_match(b), "{min}..{max:?} should reject {b:?}");
            }
        }
    }
}
