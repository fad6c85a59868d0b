//! [`Node`] → GBNF rules. A simple walk: each object, array and `$ref` target
//! gets a rule of its own; JSON primitives are shared rules emitted when used.
//!
//! The output layout is the [`Layout`] of the options, so that whitespace is
//! bounded: by default `{"a": 1, "b": [1, 2]}` (", " between members, ": "
//! after keys, nothing else).

use crate::hashing::{Map, Set};

use super::canonical;
use super::formats::Format;
use super::ir::{Defs, Node, StrNode};
use super::lang::{self, Dfa, Re};
use super::numeric;
use super::options::Layout;
use super::range::{Bound, Divisor, NumRange};
use super::regex;
use super::strings;
use super::Productive;
use crate::grammar::expr::{render_named, Expr};

mod array;
mod object;
mod shared;

#[cfg(test)]
use array::array_body;
pub use array::repeat;
use shared::{factor, is_shared, shared_deps, shared_rule, ESCAPE_RULE};

/// Enums of more values than this are written as a prefix tree
/// ([`Expr::trie`]): `enum: range(1, 100000)` as 100,000 alternatives kept
/// llama.cpp's grammar engine busy for about 50 s before the first token.
const TRIE_FROM: usize = 32;

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
        rules: Map::default(),
        order: Vec::new(),
        used_names: Map::default(),
        given: Set::default(),
        def_rules: vec![None; defs.nodes.len()],
        pending: Vec::new(),
        hoisted: Map::default(),
        strings: Map::default(),
        multiples: Map::default(),
        keys_excluding: Map::default(),
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
    let root_first = std::iter::once("root")
        .chain(e.order.iter().map(String::as_str).filter(|n| *n != "root"))
        .filter_map(|name| e.rules.get(name).map(|expr| (name, expr)));
    Ok(render_named(root_first))
}

struct Emitter<'a> {
    defs: &'a Defs,
    layout: &'a Layout,
    productive: &'a Productive,
    rules: Map<String, Expr>,
    order: Vec<String>,
    used_names: Map<String, usize>,
    /// Every name [`Emitter::fresh`] gave.
    given: Set<String>,
    def_rules: Vec<Option<String>>,
    pending: Vec<usize>,
    /// The grammar of each string node written from an automaton.
    strings: Map<StrNode, Option<Expr>>,
    /// The grammar of each numeric node with divisors (integer or not).
    multiples: Map<(bool, NumRange), Option<Expr>>,
    /// The rule of the keys other than each set of declared names (sorted):
    /// objects that share their names (a definition and its merges) share it.
    keys_excluding: Map<Vec<String>, String>,
    /// The rule already holding each hoisted repetition body.
    hoisted: Map<Expr, String>,
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
    fn define(&mut self, name: String, mut expr: Expr) {
        if self.rules.contains_key(&name) {
            return;
        }
        let escapes = strings::escapes();
        if name != ESCAPE_RULE
            && factor(&mut expr, escapes)
            && !self.rules.contains_key(ESCAPE_RULE)
        {
            self.order.push(ESCAPE_RULE.to_owned());
            self.rules
                .insert(ESCAPE_RULE.to_owned(), Expr::alt(escapes.to_vec()));
        }
        let mut hoisted = Vec::new();
        self.hoist(&mut expr, &name, &mut hoisted);
        self.order.push(name.clone());
        self.rules.insert(name, expr);
        for (sub_name, sub_expr) in hoisted {
            self.order.push(sub_name.clone());
            self.rules.insert(sub_name, sub_expr);
        }
    }

    /// Move the body of every repetition in `expr` that is not a single
    /// symbol into a rule of its own. llama.cpp expands `x{m,n}` into rules
    /// and refuses a grammar when the rules inside `x` times the count exceed
    /// 2000; a rule reference counts as one.
    fn hoist(&mut self, expr: &mut Expr, owner: &str, out: &mut Vec<(String, Expr)>) {
        match expr {
            Expr::Repeat {
                expr: body, max, ..
            } => {
                self.hoist(body, owner, out);
                let atom = matches!(**body, Expr::Lit(_) | Expr::Class { .. } | Expr::Rule(_));
                if atom || *max == Some(1) {
                    return;
                }
                if let Some(name) = self.hoisted.get(&**body) {
                    **body = Expr::rule(name.clone());
                    return;
                }
                let name = self.fresh(&format!("{owner}-rep"));
                let moved = std::mem::replace(&mut **body, Expr::rule(name.clone()));
                self.hoisted.insert(moved.clone(), name.clone());
                out.push((name, moved));
            }
            Expr::Seq(items) | Expr::Alt(items) => {
                for x in items.iter_mut() {
                    self.hoist(x, owner, out);
                }
            }
            Expr::Lit(_) | Expr::Class { .. } | Expr::Rule(_) => {}
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
        // Numbered names of one hint can meet the plain name of another
        // (`root` is shared, so its first array is `root-1`, the name the
        // hint `root-1` asks for first): a name is never given twice.
        let mut n = self.used_names.get(&base).copied().unwrap_or(0);
        loop {
            n += 1;
            let name = if n == 1 && !is_shared(&base) {
                base.clone()
            } else {
                format!("{base}-{n}")
            };
            if self.given.insert(name.clone()) {
                self.used_names.insert(base, n);
                return name;
            }
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
            Node::Int(range) | Node::Num(range) => {
                match self.numbers(range, matches!(node, Node::Int(_)))? {
                    Some(x) => x,
                    None => return Ok(None),
                }
            }
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

    /// The integers (`integer`) or the numbers of `range`, or `None` when it
    /// holds none (a branch of a union such as `not: {enum: [6379, 6380]}`
    /// leaves between two neighbours).
    fn numbers(&mut self, range: &NumRange, integer: bool) -> Result<Option<Expr>, String> {
        if range.has_divisors() {
            return self.multiples(range, integer);
        }
        if range.min.is_none() && range.max.is_none() {
            let name = if integer { "integer" } else { "number" };
            return Ok(Some(self.shared(name)));
        }
        let (min, max) = (range.min.as_ref(), range.max.as_ref());
        let expr = if integer {
            numeric::integer_range(min, max)
        } else {
            numeric::number_range(min, max)
        };
        Ok(self.range_or_none(expr))
    }

    /// The numbers (or integers) of a range with divisors: the automaton of
    /// the range's numerals intersected with each divisor's (and the
    /// complement of each non-divisor's). Written without exponents.
    fn multiples(&mut self, range: &NumRange, integer: bool) -> Result<Option<Expr>, String> {
        let key = (integer, range.clone());
        if let Some(done) = self.multiples.get(&key) {
            return Ok(done.clone());
        }
        let (min, max) = (range.min.as_ref(), range.max.as_ref());
        // Divisors of modulus 1 (`0.01`) only limit fraction digits.
        if range.non_divisors.is_empty() && range.divisors.iter().all(|d| d.modulus == 1) {
            let expr = if integer {
                numeric::integer_range(min, max)
            } else {
                let scale = range.divisors.iter().map(|d| d.scale).min().unwrap_or(0);
                numeric::decimal_range(min, max, usize::try_from(scale).unwrap_or(usize::MAX))
            };
            let written = self.range_or_none(expr);
            self.multiples.insert(key, written.clone());
            return Ok(written);
        }
        // Digits stay capped as everywhere (16 integer digits): past them a
        // validator reading numbers as doubles sees another number, and its
        // remainder with it.
        let syntax = if integer {
            numeric::integer_range(min, max)
        } else {
            numeric::decimal_range(min, max, numeric::MAX_FRAC_DIGITS)
        };
        let Some(syntax) = self.range_or_none(syntax) else {
            return Ok(None);
        };
        let syntax = Re::from_expr(&syntax)
            .ok_or_else(|| "internal: a numeric range refers to a rule".to_owned())?;
        let multiple = |d: &Divisor| Re::Multiple {
            modulus: d.modulus,
            scale: d.scale,
        };
        let mut parts = vec![syntax];
        parts.extend(range.divisors.iter().map(multiple));
        parts.extend(range.non_divisors.iter().map(|d| multiple(d).complement()));
        let dfa = lang::automaton(&Re::And(parts)).map_err(|_| {
            let of = |ds: &[Divisor]| ds.iter().map(Divisor::describe).collect::<Vec<_>>();
            let mut what = of(&range.divisors).join(" and ");
            let not = of(&range.non_divisors);
            if !not.is_empty() {
                what = format!("{what} not of {}", not.join(" or "));
            }
            format!(
                "\"multipleOf\" cannot be enforced here: the {} multiples of {} with {} and {} need an automaton of more than {} states",
                if integer { "integer" } else { "number" },
                what.trim_start(),
                Bound::describe(min, true),
                Bound::describe(max, false),
                lang::MAX_NUMERAL_STATES
            )
        })?;
        let written = self.automaton(
            &dfa,
            0,
            None,
            if integer { "multiple-int" } else { "multiple" },
        )?;
        if written.is_none() {
            self.empty_range.get_or_insert_with(|| {
                format!(
                    "no {} between {} and {} meets its \"multipleOf\"",
                    if integer { "integer" } else { "number" },
                    Bound::describe(min, true),
                    Bound::describe(max, false)
                )
            });
        }
        self.multiples.insert(key, written.clone());
        Ok(written)
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

    /// String content except `names`, over the shared character rules.
    fn content_excluding(&mut self, names: &[&str]) -> Expr {
        let ch = self.shared("char");
        strings::content_excluding_in(names, &ch, &Expr::rule(ESCAPE_RULE))
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
            let content = self.content_excluding(&names);
            self.define(name.clone(), content);
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
        let content = s.automaton().map_err(|e| e.to_string()).and_then(|dfa| {
            self.automaton(
                &dfa,
                s.written_min_len(),
                s.written_max_len(),
                &format!("{hint}-string"),
            )
        });
        let content = match content {
            Ok(content) => content,
            Err(e) => {
                // A lone format under lengths too long to count.
                let expr = s.format_within_lengths().ok_or(e)?;
                let name = self.fresh(&format!("{hint}-format"));
                self.define(name.clone(), expr);
                return Ok(Some(quoted(Expr::rule(name))));
            }
        };
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
        let any = strings::any_char();
        let mut start = None;
        for (name, expr) in emitted.rules {
            start.get_or_insert_with(|| name.clone());
            let expr = if expr_holds(&expr, &any) {
                let ch = self.shared("char");
                expr.replace(&any, &ch)
            } else {
                expr
            };
            self.define(name, expr);
        }
        Ok(start.map(Expr::rule))
    }
}

/// A string of this content.
fn quoted(content: Expr) -> Expr {
    Expr::seq([Expr::lit("\""), content, Expr::lit("\"")])
}

/// Whether `part` occurs in `expr`.
fn expr_holds(expr: &Expr, part: &Expr) -> bool {
    expr == part
        || match expr {
            Expr::Alt(items) | Expr::Seq(items) => items.iter().any(|x| expr_holds(x, part)),
            Expr::Repeat { expr, .. } => expr_holds(expr, part),
            _ => false,
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
