//! Writing an automaton as grammar rules over the JSON encoding of its
//! characters, optionally bounded in length.
//!
//! A length bound is applied here rather than in the description: the
//! product of the automaton with a counter is explored only as far as it is
//! reachable, and a state whose only transitions loop back to itself (the
//! `[a-z]*` at the end of most patterns) is written as a counted repetition
//! instead of one state per count. `^[a-z][a-z0-9-]*$` with `maxLength: 2048`
//! is then two rules, not 2,048.

use crate::hashing::Map;
use std::ops::ControlFlow;

use super::alphabet::{Alphabet, Bits};
use super::dfa::{live_numbers, renumbered, Dfa};
use super::{LangError, MAX_STATES};
use crate::grammar::expr::Expr;
use crate::schema::emit::repeat;
use crate::schema::strings::char_in;

/// A length maximum whose counter needs more than [`MAX_STATES`] states is
/// lowered to the largest that fits, but never below this many characters
/// (nor below the minimum): a grammar for only shorter strings is refused.
pub const MIN_LOWERED_MAX: u64 = 64;

/// The states a product with a lowered maximum may have: fewer than
/// [`MAX_STATES`], so that the grammar stays small (a product of 4,096
/// states writes about a megabyte).
const LOWERED_STATES: usize = MAX_STATES / 4;

/// Chains of states referenced once are written inline up to this depth.
const INLINE_DEPTH: usize = 16;

/// A set that ends this many counted tails (`[a-z]{0,n}` for many `n`)
/// gets one chain of rules they all share, instead of a repetition each.
const CHAIN_FROM: usize = 3;

/// Grammar rules for a language; the first is its start.
#[derive(Debug, Clone, PartialEq)]
pub struct Emitted {
    pub rules: Vec<(String, Expr)>,
}

/// The maximum a product is counted to.
enum Counted {
    /// The length maximum asked for.
    Exact(u64),
    /// A lower one, the asked one needing too many states.
    Lowered(u64),
}

/// A state of the product of the automaton with a length counter, its
/// character sets as the automaton's classes (turned into characters only
/// when written).
struct Node {
    accepting: bool,
    /// A state that only loops on these characters: the rest is
    /// `set{lo, hi}`.
    sink: Option<(Bits, u64, Option<u64>)>,
    /// The characters that stay in this node.
    self_loop: Option<Bits>,
    edges: Vec<(Bits, usize)>,
}

impl Dfa {
    /// The length bounds left to apply to this language: those it already
    /// keeps are dropped (a format of at most 253 characters under
    /// `maxLength: 1024` needs no counter).
    pub fn needed_bounds(&self, min: u64, max: Option<u64>) -> (u64, Option<u64>) {
        match self.length_bounds() {
            Some((shortest, longest)) => (
                if shortest >= min { 0 } else { min },
                match (max, longest) {
                    (Some(m), Some(l)) if l <= m => None,
                    (m, _) => m,
                },
            ),
            None => (min, max),
        }
    }

    /// Whether some string of the language has a length in `min..=max`;
    /// an error when writing it so would take too many states. The same
    /// answer as [`Dfa::rules`] gives, found without building the product
    /// when there is a maximum.
    pub fn has_length_in(&self, min: u64, max: Option<u64>) -> Result<bool, LangError> {
        if self.states.is_empty() || max.is_some_and(|m| m < min) {
            return Ok(false);
        }
        let (min, max) = self.needed_bounds(min, max);
        match self.counted_max(min, max)? {
            None => Ok(live(self.product(min, None)?).is_some()),
            Some(Counted::Exact(m)) => Ok(self.reaches_length(min, m)),
            Some(Counted::Lowered(m)) => {
                if self.reaches_length(min, m) {
                    Ok(true)
                } else {
                    Err(LangError::TooManyStates { limit: MAX_STATES })
                }
            }
        }
    }

    /// The maximum the product is built with: `None` when there is none;
    /// when `max` needs more states than [`MAX_STATES`], the largest maximum
    /// that fits in [`LOWERED_STATES`] (a subset of the language, so the
    /// grammar stays sound), if that keeps at least [`MIN_LOWERED_MAX`]
    /// characters and `min`.
    fn counted_max(&self, min: u64, max: Option<u64>) -> Result<Option<Counted>, LangError> {
        let Some(m) = max else {
            return Ok(None);
        };
        if self.countable_max(m, MAX_STATES) >= m {
            return Ok(Some(Counted::Exact(m)));
        }
        let fits = self.countable_max(m, LOWERED_STATES);
        if fits < min || fits < MIN_LOWERED_MAX.min(m) {
            return Err(LangError::TooManyStates { limit: MAX_STATES });
        }
        Ok(Some(Counted::Lowered(fits)))
    }

    /// Whether the product with the counter up to `max` has a live start:
    /// an accepting state reached with at least `min` characters, or a
    /// state that only loops (written as a counted tail).
    fn reaches_length(&self, min: u64, max: u64) -> bool {
        self.walk_layers(max, |n, layer| {
            let live = layer
                .iter()
                .any(|&q| self.only_loops(q) || (self.states[q].accepting && n >= min));
            if live {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .is_some()
    }

    /// Whether state `q`'s transitions all loop back to it (a counted sink
    /// in the product, not expanded).
    fn only_loops(&self, q: usize) -> bool {
        let targets = &self.states[q].next;
        !targets.is_empty() && targets.iter().all(|(_, t)| *t == q)
    }

    /// The states reached with exactly `n` characters, for `n` = 0, 1, …,
    /// `max`, as the product explores them (a state that only loops is not
    /// expanded), each layer given to `visit` until it breaks; `None` when
    /// the layers run out or `max` is passed first.
    fn walk_layers<R>(
        &self,
        max: u64,
        mut visit: impl FnMut(u64, &[usize]) -> ControlFlow<R>,
    ) -> Option<R> {
        let mut layer = vec![0usize];
        let mut seen = vec![u64::MAX; self.states.len()];
        for n in 0..=max {
            if let ControlFlow::Break(r) = visit(n, &layer) {
                return Some(r);
            }
            if n == max {
                break;
            }
            let mut next = Vec::new();
            for &q in layer.iter().filter(|&&q| !self.only_loops(q)) {
                for (_, t) in &self.states[q].next {
                    if seen[*t] != n + 1 {
                        seen[*t] = n + 1;
                        next.push(*t);
                    }
                }
            }
            if next.is_empty() {
                return None;
            }
            layer = next;
        }
        None
    }

    /// The live states of the product with the length counter (bounds the
    /// language already keeps dropped, a maximum as [`Dfa::counted_max`]
    /// sets it); `None` when no string has such a length. A lowered product
    /// with no string is an error, since longer strings may exist.
    fn live_product(&self, min: u64, max: Option<u64>) -> Result<Option<Vec<Node>>, LangError> {
        let (min, max) = self.needed_bounds(min, max);
        match self.counted_max(min, max)? {
            None => Ok(live(self.product(min, None)?)),
            Some(Counted::Exact(m)) => Ok(live(self.product(min, Some(m))?)),
            Some(Counted::Lowered(m)) => live(self.product(min, Some(m))?)
                .map(Some)
                .ok_or(LangError::TooManyStates { limit: MAX_STATES }),
        }
    }

    /// The largest maximum up to `max` whose product with the counter has
    /// at most `limit` states: the product's states counted layer by layer
    /// (the states reached with each count), as `product` explores them.
    fn countable_max(&self, max: u64, limit: usize) -> u64 {
        let mut total = 0usize;
        self.walk_layers(max, |n, layer| {
            total += layer.len();
            if total > limit {
                ControlFlow::Break(n.saturating_sub(1))
            } else {
                ControlFlow::Continue(())
            }
        })
        .unwrap_or(max)
    }

    /// Rules for the strings of the language whose length (in characters)
    /// is in `min..=max`; `None` when there is none. `fresh` names rules.
    pub fn rules(
        &self,
        min: u64,
        max: Option<u64>,
        fresh: &mut dyn FnMut() -> String,
    ) -> Result<Option<Emitted>, LangError> {
        if self.states.is_empty() || max.is_some_and(|m| m < min) {
            return Ok(None);
        }
        let Some(nodes) = self.live_product(min, max)? else {
            return Ok(None);
        };
        let mut indegree = vec![0usize; nodes.len()];
        for (i, node) in nodes.iter().enumerate() {
            for (_, t) in &node.edges {
                if *t != i {
                    indegree[*t] += 1;
                }
            }
        }
        // Sets that end many counted tails share one chain of rules.
        let mut sinks: Map<Bits, usize> = Map::default();
        for node in &nodes {
            if let Some((set, _, Some(_))) = &node.sink {
                *sinks.entry(set.clone()).or_default() += 1;
            }
        }
        let mut writer = Writer {
            alphabet: &self.alphabet,
            nodes: &nodes,
            indegree: &indegree,
            names: vec![None; nodes.len()],
            pending: vec![0],
            fresh,
            chars: Map::default(),
            chained: sinks
                .into_iter()
                .filter(|(_, n)| *n >= CHAIN_FROM)
                .map(|(s, _)| (s, Vec::new()))
                .collect(),
            extra: Vec::new(),
        };
        writer.names[0] = Some((writer.fresh)());
        let mut rules = Vec::new();
        while let Some(i) = writer.pending.pop() {
            let expr = writer.expr(i, 0);
            if let Some(name) = writer.names[i].clone() {
                rules.push((name, expr));
            }
        }
        rules.append(&mut writer.extra);
        Ok(Some(Emitted { rules }))
    }

    /// The reachable product states, the start first.
    fn product(&self, min: u64, max: Option<u64>) -> Result<Vec<Node>, LangError> {
        // Counts past `min` are all alike when there is no maximum.
        let step = |n: u64| match max {
            Some(_) => n + 1,
            None => (n + 1).min(min),
        };
        let mut index: Map<(usize, u64), usize> = Map::default();
        let mut keys = vec![(0usize, 0u64)];
        index.insert((0, 0), 0);
        let mut nodes = Vec::new();
        let mut i = 0;
        while let Some(&(q, n)) = keys.get(i) {
            i += 1;
            let edges = &self.states[q].next;
            let only_loops = !edges.is_empty() && edges.iter().all(|(_, t)| *t == q);
            if only_loops && (max.is_some() || n < min) {
                let set = edges
                    .iter()
                    .fold(Bits::empty(self.alphabet.len()), |acc, (s, _)| acc.or(s));
                nodes.push(Node {
                    accepting: false,
                    sink: Some((set, min.saturating_sub(n), max.map(|m| m - n))),
                    self_loop: None,
                    edges: Vec::new(),
                });
                continue;
            }
            let accepting = self.states[q].accepting && n >= min;
            let mut node = Node {
                accepting,
                sink: None,
                self_loop: None,
                edges: Vec::new(),
            };
            if max.is_none_or(|m| n < m) {
                let next_n = step(n);
                for (set, t) in edges {
                    let t = *t;
                    let key = (t, next_n);
                    let target = match index.get(&key) {
                        Some(&x) => x,
                        None => {
                            let x = keys.len();
                            if x >= MAX_STATES {
                                return Err(LangError::TooManyStates { limit: MAX_STATES });
                            }
                            index.insert(key, x);
                            keys.push(key);
                            x
                        }
                    };
                    if target == nodes.len() {
                        node.self_loop = Some(match node.self_loop.take() {
                            Some(s) => s.or(set),
                            None => set.clone(),
                        });
                    } else {
                        node.edges.push((set.clone(), target));
                    }
                }
            }
            nodes.push(node);
        }
        Ok(nodes)
    }
}

/// The nodes from which a string is accepted, renumbered; `None` if the
/// start is not one of them. A sink node, written as a counted repetition
/// with no edges after it, ends the string.
fn live(nodes: Vec<Node>) -> Option<Vec<Node>> {
    let numbers = live_numbers(
        &nodes,
        |node| node.accepting || node.sink.is_some(),
        |node| &node.edges,
    )?;
    Some(
        nodes
            .into_iter()
            .zip(&numbers)
            .filter(|(_, number)| number.is_some())
            .map(|(mut node, _)| {
                node.edges = renumbered(node.edges, &numbers);
                node
            })
            .collect(),
    )
}

struct Writer<'a> {
    alphabet: &'a Alphabet,
    nodes: &'a [Node],
    indegree: &'a [usize],
    names: Vec<Option<String>>,
    pending: Vec<usize>,
    fresh: &'a mut dyn FnMut() -> String,
    /// The expression of each character set written so far.
    chars: Map<Bits, Option<Expr>>,
    /// For the sets of many counted tails, the rules `up to j of them`,
    /// by `j`.
    chained: Map<Bits, Vec<String>>,
    /// Rules other than the nodes' (the chains).
    extra: Vec<(String, Expr)>,
}

impl Writer<'_> {
    fn chars(&mut self, set: &Bits) -> Option<Expr> {
        if let Some(x) = self.chars.get(set) {
            return x.clone();
        }
        // A set written as more than one class gets a rule of its own, so
        // that the states that use it share its text.
        let x = char_in(&self.alphabet.chars_of(set)).map(|c| match c {
            Expr::Alt(_) => {
                let name = (self.fresh)();
                self.extra.push((name.clone(), c));
                Expr::rule(name)
            }
            other => other,
        });
        self.chars.insert(set.clone(), x.clone());
        x
    }

    /// `set{lo, hi}`.
    fn counted(&mut self, set: &Bits, lo: u64, hi: Option<u64>) -> Expr {
        let Some(c) = self.chars(set) else {
            return Expr::empty();
        };
        match hi {
            Some(h) if self.chained.contains_key(set) => {
                let tail = self.up_to(set, &c, h.saturating_sub(lo));
                Expr::seq([repeat(c, lo, Some(lo)), tail])
            }
            _ => repeat(c, lo, hi),
        }
    }

    /// A rule for up to `j` characters of `set` (`c` writes one), from a
    /// chain shared by every tail of that set.
    fn up_to(&mut self, set: &Bits, c: &Expr, j: u64) -> Expr {
        if j == 0 {
            return Expr::empty();
        }
        loop {
            let have = self.chained.get(set).map_or(0, Vec::len) as u64;
            if have >= j {
                break;
            }
            let name = (self.fresh)();
            let below = self
                .chained
                .get(set)
                .and_then(|v| v.last())
                .map_or_else(Expr::empty, |n| Expr::rule(n.clone()));
            self.extra
                .push((name.clone(), Expr::seq([c.clone(), below]).opt()));
            if let Some(v) = self.chained.get_mut(set) {
                v.push(name);
            }
        }
        self.chained
            .get(set)
            .and_then(|v| v.get(j as usize - 1))
            .map_or_else(Expr::empty, |n| Expr::rule(n.clone()))
    }

    /// The expression of node `i`'s language.
    fn expr(&mut self, i: usize, depth: usize) -> Expr {
        let node = &self.nodes[i];
        if let Some((set, lo, hi)) = &node.sink {
            return self.counted(set, *lo, *hi);
        }
        let mut alts = Vec::new();
        // Edges grouped by target keep one alternative per target.
        let mut by_target: Vec<(usize, Bits)> = Vec::new();
        for (set, t) in &node.edges {
            match by_target.iter_mut().find(|(x, _)| x == t) {
                Some((_, s)) => *s = s.or(set),
                None => by_target.push((*t, set.clone())),
            }
        }
        for (t, set) in by_target {
            let Some(c) = self.chars(&set) else { continue };
            let rest = self.reference(t, depth);
            alts.push(Expr::seq([c, rest]));
        }
        if node.accepting {
            alts.push(Expr::empty());
        }
        let body = if alts.is_empty() {
            Expr::empty()
        } else {
            Expr::alt(alts)
        };
        let self_loop = node.self_loop.clone();
        match self_loop.and_then(|s| self.chars(&s)) {
            Some(c) => Expr::seq([c.repeat(0, None), body]),
            None => body,
        }
    }

    /// A reference to node `t`: its rule, or its expression inline when
    /// only one place refers to it.
    fn reference(&mut self, t: usize, depth: usize) -> Expr {
        if let Some(name) = &self.names[t] {
            return Expr::rule(name.clone());
        }
        if self.indegree[t] == 1 && depth < INLINE_DEPTH {
            return self.expr(t, depth + 1);
        }
        // An end (accepting, nothing follows) is the empty string wherever
        // it is referred to, not a rule of its own.
        let node = &self.nodes[t];
        if node.edges.is_empty() && node.sink.is_none() && node.self_loop.is_none() {
            return Expr::empty();
        }
        let name = (self.fresh)();
        self.names[t] = Some(name.clone());
        self.pending.push(t);
        Expr::rule(name)
    }
}
