//! Objects: declared members in order, then other keys, as a state
//! machine over (member, count written) that stays linear in the properties.

use crate::hashing::Map;

use super::{quoted, repeat, Emitter};
use crate::grammar::expr::Expr;
use crate::schema::ir::{Node, ObjNode};
use crate::schema::lang::{self, Re};
use crate::schema::strings;

impl Emitter<'_> {
    /// A member of a key other than the declared ones, of value `value`
    /// (`additional`'s schema).
    fn additional_member(&mut self, o: &ObjNode, value: Expr, hint: &str) -> Expr {
        let mut names: Vec<String> = o.props.iter().map(|p| p.name.clone()).collect();
        names.sort_unstable();
        names.dedup();
        let key_name = match self.keys_excluding.get(&names) {
            Some(name) => name.clone(),
            None => {
                let refs: Vec<&str> = names.iter().map(String::as_str).collect();
                let key = Expr::seq([
                    Expr::lit("\""),
                    self.content_excluding(&refs),
                    Expr::lit("\""),
                ]);
                let key_name = self.fresh(&format!("{hint}-key"));
                self.define(key_name.clone(), key);
                self.keys_excluding.insert(names, key_name.clone());
                key_name
            }
        };
        Expr::seq([
            Expr::rule(key_name),
            Expr::lit(self.layout.key_separator.as_str()),
            value,
        ])
    }

    /// `count` members of undeclared keys under `additional`'s schema whose
    /// keys differ from each other (each of its own length) and from the
    /// declared names; empty when they cannot be written.
    fn distinct_members(
        &mut self,
        o: &ObjNode,
        count: u64,
        value: &Expr,
        hint: &str,
    ) -> Result<Vec<Expr>, String> {
        if count > MAX_DISTINCT_KEYS {
            return Ok(Vec::new());
        }
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

    pub(super) fn object(&mut self, o: &ObjNode, hint: &str) -> Result<Option<Expr>, String> {
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
            let value = self.expr(&o.additional, &format!("{hint}-additional"))?;
            // Additional keys may repeat, so an object that needs two or
            // more of them gets that many of distinct lengths first.
            let distinct = match &value {
                Some(v) if o.min_props >= 2 => self.distinct_members(o, o.min_props, v, hint)?,
                _ => Vec::new(),
            };
            let additional = value.map(|v| self.additional_member(o, v, hint));
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

/// Most additional keys of distinct lengths an object is written with
/// (`minProperties` beyond its declared properties).
const MAX_DISTINCT_KEYS: u64 = 256;
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
        self.states(e)
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
    /// thousands of properties); the grammar of `(0, 0)`, or `None` when no
    /// valid completion exists. The states with no member written yet,
    /// `(i, 0)`, are each reached from one state only (the one before, by
    /// skipping its member), so they are written inline as alternatives of
    /// `(0, 0)` rather than as a chain of rules: an object of optional
    /// properties needs half the rules.
    fn states(&self, e: &mut Emitter<'_>) -> Option<Expr> {
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
        // The rule of each reachable count above 0 after member i, and the
        // alternatives of count 0 (last first), for i = n down to 0.
        let mut after: Map<u64, Option<String>> = Map::default();
        let mut zero: Option<Vec<Expr>> = None;
        for i in (0..=n).rev() {
            let mut here: Map<u64, Option<String>> =
                Map::with_capacity_and_hasher(reach[i].len(), Default::default());
            let mut here_zero = None;
            for &c in &reach[i] {
                if i == n {
                    let tail = self.tail_or_note(e, c);
                    if c == 0 {
                        here_zero = tail.map(|t| vec![t]);
                    } else {
                        here.insert(c, tail.map(|x| self.state_rule(e, i, c, x)));
                    }
                    continue;
                }
                let m = &self.members[i];
                let sep = if c == 0 { "" } else { self.sep.as_str() };
                let take = if self.max.is_none_or(|mx| c < mx) {
                    after
                        .get(&self.next_count(c))
                        .cloned()
                        .flatten()
                        .map(|rest| Expr::seq([Expr::lit(sep), m.text.clone(), Expr::rule(rest)]))
                } else {
                    None
                };
                if c == 0 {
                    let mut alts = if m.required { None } else { zero.take() };
                    if let Some(t) = take {
                        alts.get_or_insert_with(Vec::new).push(t);
                    }
                    here_zero = alts;
                    continue;
                }
                let skip = if m.required {
                    None
                } else {
                    after.get(&c).cloned().flatten().map(Expr::rule)
                };
                let expr = match (take, skip) {
                    (Some(t), Some(s)) => Some(Expr::alt([t, s])),
                    (Some(x), None) | (None, Some(x)) => Some(x),
                    (None, None) => None,
                };
                here.insert(c, expr.map(|x| self.state_rule(e, i, c, x)));
            }
            after = here;
            zero = here_zero;
        }
        zero.map(|mut alts| {
            alts.reverse();
            Expr::alt(alts)
        })
    }

    /// Define the rule of state `(i, c)`.
    fn state_rule(&self, e: &mut Emitter<'_>, i: usize, c: u64, body: Expr) -> String {
        let name = e.fresh(&format!("{}-{}-{}", self.name, i, c));
        e.define(name.clone(), body);
        name
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
