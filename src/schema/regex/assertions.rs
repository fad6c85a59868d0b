//! Patterns with assertions inside them (`^` and `$` within a group, and
//! lookaheads), as languages of whole strings for the automaton layer.
//!
//! An assertion constrains what surrounds its position, so each construct is
//! read together with the language of the rest of the string after it (its
//! continuation): `(?=X)` holds where the rest of the string starts with `X`,
//! so `(?=X)R` followed by `K` is `X·any* ∩ R·K` (`(?!X)` the complement of
//! `X·any*`); `$` holds where the rest is empty, so it keeps the empty string
//! if the continuation has it; `^` holds only at the start of the string, so
//! a continuation is known both for "here is the start" and for "later",
//! where they differ.
//!
//! Repetitions of a part with an assertion are unrolled up to
//! [`MAX_UNROLL`] iterations; an unbounded one is supported when it ends the
//! pattern's search (`(…)*` followed by anything: then it may stop at once)
//! or when it is the tempered token `((?!X).)*` anchored at the end (no
//! occurrence of `X` may start inside it); others are unsupported.

use super::ast::Node;
use super::{to_re, unsupported, RegexError};
use crate::schema::lang::Re;
use crate::schema::strings::CharSet;

/// The most description nodes a translation may copy: a continuation is
/// copied into each assertion and alternative that constrains it.
const MAX_SIZE: usize = 20_000;

/// Bounded repetitions of a part with an assertion are unrolled up to this
/// many iterations.
pub(super) const MAX_UNROLL: u32 = 16;

/// The language of a whole string with a match of `alternatives`
/// (JSON Schema's unanchored search).
pub(super) fn search_re(alternatives: Vec<Vec<Node>>) -> Result<Re, RegexError> {
    let node = Node::Alt(alternatives.into_iter().map(Node::Seq).collect());
    let mut t = Translator { budget: MAX_SIZE };
    let rest = Rest {
        later: Re::any_string(),
        start: None,
    };
    let later = t.tr(&node, Pos::Later, &rest)?;
    if !has_start(&node) {
        return Ok(Re::Seq(vec![Re::any_string(), later]));
    }
    let at_start = t.tr(&node, Pos::Start, &rest)?;
    Ok(Re::Alt(vec![at_start, Re::Seq(vec![non_empty(), later])]))
}

#[derive(Clone, Copy, PartialEq)]
enum Pos {
    /// Nothing has been read: `^` holds.
    Start,
    Later,
}

/// The language of the rest of the string.
struct Rest {
    later: Re,
    /// Where it differs at the start of the string.
    start: Option<Re>,
}

impl Rest {
    fn at(&self, pos: Pos) -> &Re {
        match (pos, &self.start) {
            (Pos::Start, Some(start)) => start,
            _ => &self.later,
        }
    }
}

struct Translator {
    /// Description nodes that may still be copied.
    budget: usize,
}

impl Translator {
    /// A copy of `re`, counted against the budget.
    fn copy(&mut self, re: &Re, offset: usize) -> Result<Re, RegexError> {
        let size = size(re);
        if size > self.budget {
            return Err(unsupported(
                "assertions whose combination is too large",
                offset,
            ));
        }
        self.budget -= size;
        Ok(re.clone())
    }

    /// The strings that match `node` at a position `pos` and continue with
    /// `rest`.
    fn tr(&mut self, node: &Node, pos: Pos, rest: &Rest) -> Result<Re, RegexError> {
        let offset = first_offset(node);
        if !node.has_assertion() {
            let re = to_re(node)?;
            if pos == Pos::Later || rest.start.is_none() {
                return Ok(Re::Seq(vec![re, self.copy(&rest.later, offset)?]));
            }
            // Reading something leaves the start; reading nothing does not.
            let nullable = nullable(&re);
            let mut alts = vec![Re::Seq(vec![
                Re::And(vec![re, non_empty()]),
                self.copy(&rest.later, offset)?,
            ])];
            if nullable {
                alts.push(self.copy(rest.at(Pos::Start), offset)?);
            }
            return Ok(Re::Alt(alts));
        }
        match node {
            Node::Start(_) => match pos {
                Pos::Start => self.copy(rest.at(Pos::Start), offset),
                Pos::Later => Ok(Re::nothing()),
            },
            Node::End(_) => Ok(if nullable(rest.at(pos)) {
                Re::empty_string()
            } else {
                Re::nothing()
            }),
            Node::Look {
                node: inner,
                negate,
                ..
            } => {
                let anything = Rest {
                    later: Re::any_string(),
                    start: None,
                };
                let ahead = self.tr(inner, pos, &anything)?;
                let ahead = if *negate { ahead.complement() } else { ahead };
                Ok(Re::And(vec![ahead, self.copy(rest.at(pos), offset)?]))
            }
            Node::Alt(items) => Ok(Re::Alt(
                items
                    .iter()
                    .map(|item| self.tr(item, pos, rest))
                    .collect::<Result<_, _>>()?,
            )),
            Node::Seq(items) => self.seq(items, pos, rest),
            Node::Repeat {
                node: body,
                min,
                max,
            } => self.repeat(body, *min, *max, pos, rest),
            // Sets and characters hold no assertion.
            Node::Char(_) | Node::Set { .. } => Ok(Re::nothing()),
        }
    }

    fn seq(&mut self, items: &[Node], pos: Pos, rest: &Rest) -> Result<Re, RegexError> {
        let Some((first, others)) = items.split_first() else {
            return self.copy(rest.at(pos), 0);
        };
        if others.is_empty() {
            return self.tr(first, pos, rest);
        }
        // The rest after `first`; at the start only if `first` may read
        // nothing and what follows tells the start apart.
        let later = self.seq(others, Pos::Later, rest)?;
        let differs = rest.start.is_some() || others.iter().any(has_start);
        let start = if pos == Pos::Start && shortest(first) == 0 && differs {
            Some(self.seq(others, Pos::Start, rest)?)
        } else {
            None
        };
        self.tr(first, pos, &Rest { later, start })
    }

    fn repeat(
        &mut self,
        body: &Node,
        min: u32,
        max: Option<u32>,
        pos: Pos,
        rest: &Rest,
    ) -> Result<Re, RegexError> {
        let offset = first_offset(body);
        match max {
            Some(max) if max <= MAX_UNROLL => {
                // body{min} then (body (body …)?)? up to max.
                let mut tail = Node::Seq(Vec::new());
                for _ in min..max {
                    tail = Node::Alt(vec![
                        Node::Seq(vec![body.clone(), tail]),
                        Node::Seq(Vec::new()),
                    ]);
                }
                let mut items: Vec<Node> = (0..min).map(|_| body.clone()).collect();
                items.push(tail);
                self.seq(&items, pos, rest)
            }
            Some(_) => Err(unsupported(
                "an assertion repeated more than 16 times",
                offset,
            )),
            None if min > 0 && min <= MAX_UNROLL => {
                let mut items: Vec<Node> = (0..min).map(|_| body.clone()).collect();
                items.push(Node::Repeat {
                    node: Box::new(body.clone()),
                    min: 0,
                    max: None,
                });
                self.seq(&items, pos, rest)
            }
            None if min == 0 => self.star(body, rest, offset),
            None => Err(unsupported(
                "an assertion repeated more than 16 times",
                offset,
            )),
        }
    }

    /// `body*`, `body` holding an assertion.
    fn star(&mut self, body: &Node, rest: &Rest, offset: usize) -> Result<Re, RegexError> {
        if rest.start.is_none() && rest.later == Re::any_string() {
            // Zero iterations already accept every rest.
            return Ok(Re::any_string());
        }
        if rest.start.is_none() && rest.later == Re::empty_string() {
            if let Node::Seq(items) = body {
                if let [Node::Look {
                    node: x,
                    negate: true,
                    ..
                }, one] = items.as_slice()
                {
                    if !x.has_assertion() && matches!(one, Node::Char(_) | Node::Set { .. }) {
                        // ((?!X)c)*$: characters of c, and no X starting
                        // before the end (X empty: no character at all).
                        let x = to_re(x)?;
                        if nullable(&x) {
                            return Ok(Re::empty_string());
                        }
                        return Ok(Re::And(vec![
                            Re::Repeat(Box::new(to_re(one)?), 0, None),
                            Re::Not(Box::new(Re::Seq(vec![
                                Re::any_string(),
                                x,
                                Re::any_string(),
                            ]))),
                        ]));
                    }
                }
            }
        }
        Err(unsupported(
            "an assertion inside an unbounded repetition",
            offset,
        ))
    }
}

fn non_empty() -> Re {
    Re::Repeat(Box::new(Re::Set(CharSet::any())), 1, None)
}

/// Whether `^` occurs in `node`.
fn has_start(node: &Node) -> bool {
    match node {
        Node::Start(_) => true,
        Node::Char(_) | Node::Set { .. } | Node::End(_) => false,
        Node::Seq(items) | Node::Alt(items) => items.iter().any(has_start),
        Node::Repeat { node, .. } | Node::Look { node, .. } => has_start(node),
    }
}

/// The fewest characters `node` reads.
pub(super) fn shortest(node: &Node) -> u64 {
    match node {
        Node::Char(_) | Node::Set { .. } => 1,
        Node::Seq(items) => items.iter().map(shortest).fold(0, u64::saturating_add),
        Node::Alt(items) => items.iter().map(shortest).min().unwrap_or(0),
        Node::Repeat { node, min, .. } => shortest(node).saturating_mul(u64::from(*min)),
        Node::Start(_) | Node::End(_) | Node::Look { .. } => 0,
    }
}

/// The byte offset of the first construct with one, for messages.
fn first_offset(node: &Node) -> usize {
    match node {
        Node::Set { offset, .. } | Node::Start(offset) | Node::End(offset) => *offset,
        Node::Look { offset, .. } => *offset,
        Node::Seq(items) | Node::Alt(items) => items.first().map_or(0, first_offset),
        Node::Repeat { node, .. } => first_offset(node),
        Node::Char(_) => 0,
    }
}

/// Whether the description matches the empty string.
pub(crate) fn nullable(re: &Re) -> bool {
    match re {
        Re::Set(_) | Re::Multiple { .. } => false,
        Re::Seq(items) | Re::And(items) => items.iter().all(nullable),
        Re::Alt(items) => items.iter().any(nullable),
        Re::Not(inner) => !nullable(inner),
        Re::Repeat(inner, min, _) => *min == 0 || nullable(inner),
    }
}

/// The number of nodes of a description.
fn size(re: &Re) -> usize {
    match re {
        Re::Set(_) | Re::Multiple { .. } => 1,
        Re::Seq(items) | Re::Alt(items) | Re::And(items) => {
            1 + items.iter().map(size).sum::<usize>()
        }
        Re::Not(inner) | Re::Repeat(inner, _, _) => 1 + size(inner),
    }
}

#[cfg(test)]
mod tests {
    use crate::schema::lang::tests::Rng;
    use crate::schema::lang::Dfa;
    use crate::schema::regex::{check, needs_automaton, pattern_to_re, RegexError};

    fn automaton(pattern: &str) -> Dfa {
        let re = pattern_to_re(pattern).unwrap_or_else(|e| panic!("{pattern}: {e}"));
        Dfa::new(&re).unwrap_or_else(|e| panic!("{pattern}: {e}"))
    }

    /// fancy-regex, a backtracking engine with lookaheads, as the judge.
    fn reference(pattern: &str) -> fancy_regex::Regex {
        fancy_regex::Regex::new(pattern).unwrap_or_else(|e| panic!("{pattern}: {e}"))
    }

    fn agree(pattern: &str, rust: &str, dfa: &Dfa, judge: &fancy_regex::Regex, s: &str) -> bool {
        let want = judge.is_match(s).unwrap_or_else(|e| panic!("{rust}: {e}"));
        assert_eq!(dfa.matches(s), want, "pattern {pattern:?} on {s:?}");
        want
    }

    /// Every string over `chars` up to `len` characters.
    fn strings(chars: &[char], len: usize) -> Vec<String> {
        let mut out = vec![String::new()];
        let mut layer = vec![String::new()];
        for _ in 0..len {
            let next: Vec<String> = layer
                .iter()
                .flat_map(|s| chars.iter().map(move |c| format!("{s}{c}")))
                .collect();
            out.extend(next.iter().cloned());
            layer = next;
        }
        out
    }

    /// Real-world patterns (MaskBench) and the forms they stand for, with
    /// the same pattern for fancy-regex where its syntax differs (`.` and
    /// `\s` are ECMAScript's here), and samples.
    const CASES: &[(&str, Option<&str>, &[&str])] = &[
        (
            r"^(?!@@)[@a-zA-Z0-9_-]+$",
            None,
            &["@@x", "@x", "a@@", "@", "ab-_"],
        ),
        (
            r"^(?!org\.bukkit\.)([a-zA-Z_$][a-zA-Z\d_$]*\.)*[a-zA-Z_$][a-zA-Z\d_$]*$",
            Some(r"^(?!org\.bukkit\.)([a-zA-Z_$][a-zA-Z0-9_$]*\.)*[a-zA-Z_$][a-zA-Z0-9_$]*$"),
            &[
                "org.bukkit.Main",
                "org.bukkitx.Main",
                "com.x.Y",
                "org.bukkit",
                "a..b",
            ],
        ),
        (
            r"^(?!^lucene\.|builtin\.|mongodb\.).*",
            Some(r"^(?!^lucene\.|builtin\.|mongodb\.)[^\n\r\x{2028}\x{2029}]*"),
            &[
                "lucene.x",
                "builtin.",
                "mongodb.a",
                "my.lucene.x",
                "",
                "x\nbuiltin.",
            ],
        ),
        (
            r"^((?!(c|C)(l|L)(y|Y)(d|D)(e|E)).)*$",
            Some(r"^((?!(c|C)(l|L)(y|Y)(d|D)(e|E))[^\n\r\x{2028}\x{2029}])*$"),
            &["clyde", "xCLYDEx", "clyd", "cly de", "", "Clyd\ne"],
        ),
        (
            r"^(?![ \t\n]*\(default(.*)\))[\s\S]*",
            Some(r"^(?![ \t\n]*\(default([^\n\r\x{2028}\x{2029}]*)\))[\s\S]*"),
            &[
                "(default x)",
                "  (default)",
                "(defaults",
                "x(default)",
                "\n(default a)",
            ],
        ),
        (
            r"^(?=[^=]+$)(?!\s+$)(.|\n)+$",
            Some(r"^(?=[^=]+$)(?![\t\n\x0B\f\r \xA0]+$)([^\n\r\x{2028}\x{2029}]|\n)+$"),
            &["a=b", "ab", "  ", " a ", "a\nb", "a\rb", ""],
        ),
        (
            r"^@([\da-z](?:(?!.*--)[\da-z-]*[\da-z])?)/([\da-z](?:(?!.*--)[\da-z-]*[\da-z])?)$",
            Some(
                r"^@([0-9a-z](?:(?![^\n\r\x{2028}\x{2029}]*--)[0-9a-z-]*[0-9a-z])?)/([0-9a-z](?:(?![^\n\r\x{2028}\x{2029}]*--)[0-9a-z-]*[0-9a-z])?)$",
            ),
            &["@a/b", "@a-b/c-d", "@a--b/c", "@a/b--c", "@ab/c-", "@-a/b"],
        ),
        (
            r"((?:[^/]*/)*)(?=\.(yaml|yml|json))",
            None,
            &["a/b.yaml", "x.json", "a/b.txt", ".yml"],
        ),
        (
            r"(^.+\..+)|(^[a-zA-Z0-9_-]+)",
            Some(r"(^[^\n\r\x{2028}\x{2029}]+\.[^\n\r\x{2028}\x{2029}]+)|(^[a-zA-Z0-9_-]+)"),
            &["a.b", "-", ".", " x", "ab"],
        ),
        (
            r"(^Hpt_|^Int_|_Armour_)",
            None,
            &["Hpt_x", "xHpt_", "a_Armour_b", "Int", "Int_"],
        ),
        (r"^([^,]|$)", None, &["", "a", ",", ",a", "a,"]),
        (
            r"(^$)|(^[a-f0-9]{4}-[a-f0-9]{2}$)",
            None,
            &["", "abcd-ef", "abcd-e", "x", "abcd-efa"],
        ),
        (
            r"^$|(^(?:\S+\s+){0,3}\S+$)",
            Some(r"^$|(^(?:[^\t\n\x0B\f\r \xA0]+[\t\n\x0B\f\r \xA0]+){0,3}[^\t\n\x0B\f\r \xA0]+$)"),
            &["", "a", "a b", "a b c d", "a b c d e", " a", "a "],
        ),
        (
            r"^(?!.*(\{Trigger\}|[<>])).*\.[bB][lL][fF]$",
            Some(
                r"^(?![^\n\r\x{2028}\x{2029}]*(\{Trigger\}|[<>]))[^\n\r\x{2028}\x{2029}]*\.[bB][lL][fF]$",
            ),
            &["a.blf", "a{Trigger}.blf", "<a.BLF", "a.bl", ".Blf"],
        ),
        (
            r"^(?![iI][oO]broker)",
            None,
            &["iobroker", "IObroker.x", "io", "xiobroker", ""],
        ),
        (
            r"a(?=b)|c(?!d)",
            None,
            &["ab", "a", "c", "cd", "cdc", "xcd"],
        ),
        (r"(?=a)(?!ab)a+", None, &["a", "ab", "aab", "b", "ba"]),
        (r"^(a(?=b)|b){1,4}$", None, &["ab", "abb", "a", "ba", "bab"]),
        (r"^(a$|b)c?", None, &["a", "ac", "b", "bc", "x"]),
        (r"x(^a|b)", None, &["xa", "xb", "a", "b"]),
        (r"(?!)", None, &["", "a"]),
        (r"(?=)", None, &["", "a"]),
        (
            r"^(?:(?!ab).)*$",
            Some(r"^(?:(?!ab)[^\n\r\x{2028}\x{2029}])*$"),
            &["", "a", "ab", "ba", "bba", "aab"],
        ),
        (r"(?:(?=a)|b){2}c", None, &["ac", "bbc", "bc", "c", "abc"]),
    ];

    #[test]
    fn assertion_patterns_agree_with_a_backtracking_engine() {
        let all_short = strings(&['a', 'b', '.', '-', '@', ' ', '\n'], 4);
        let mut checks = 0;
        for (pattern, rust, samples) in CASES {
            assert!(needs_automaton(pattern), "{pattern}");
            let dfa = automaton(pattern);
            let judge = reference(rust.unwrap_or(pattern));
            let mut verdicts = [0, 0];
            for s in samples
                .iter()
                .copied()
                .chain(all_short.iter().map(String::as_str))
            {
                verdicts[usize::from(agree(pattern, rust.unwrap_or(pattern), &dfa, &judge, s))] +=
                    1;
                checks += 1;
            }
            let universal = ["(?=)"].contains(pattern);
            let empty = ["(?!)"].contains(pattern);
            assert!(universal || verdicts[0] > 0, "{pattern}: no failing sample");
            assert!(empty || verdicts[1] > 0, "{pattern}: no matching sample");
        }
        assert!(checks > 50_000, "{checks}");
    }

    /// Random patterns over `a`, `b`, `c` with lookaheads and anchors in
    /// groups, on every string of up to 5 of those characters.
    #[test]
    fn random_assertion_patterns_agree_with_a_backtracking_engine() {
        fn term(rng: &mut Rng, depth: u32, out: &mut String) {
            match rng.below(if depth == 0 { 6 } else { 10 }) {
                0 => out.push('a'),
                1 => out.push('b'),
                2 => out.push_str("[bc]"),
                3 => out.push('^'),
                4 => out.push('$'),
                5 => out.push('c'),
                6 | 7 => {
                    out.push_str(["(?=", "(?!", "(?:", "("][rng.below(4) as usize]);
                    alternation(rng, depth - 1, out);
                    out.push(')');
                }
                _ => {
                    out.push_str("(?:");
                    alternation(rng, depth - 1, out);
                    out.push(')');
                    out.push_str(["?", "{0,2}", "{1,3}", "*", "+"][rng.below(5) as usize]);
                }
            }
        }
        fn alternation(rng: &mut Rng, depth: u32, out: &mut String) {
            for i in 0..=rng.below(2) {
                if i > 0 {
                    out.push('|');
                }
                for _ in 0..=rng.below(3) {
                    term(rng, depth, out);
                }
            }
        }
        let samples = strings(&['a', 'b', 'c'], 5);
        let mut rng = Rng::new(0xa55e);
        let (mut compared, mut unsupported, mut matched, mut checks) = (0, 0, 0, 0);
        for _ in 0..600 {
            let mut pattern = String::new();
            alternation(&mut rng, 3, &mut pattern);
            // fancy-regex refuses to repeat a group that reads nothing.
            let Ok(judge) = fancy_regex::Regex::new(&pattern) else {
                continue;
            };
            match pattern_to_re(&pattern) {
                Ok(re) => {
                    let dfa = Dfa::new(&re).unwrap_or_else(|e| panic!("{pattern}: {e}"));
                    for s in &samples {
                        matched += usize::from(agree(&pattern, &pattern, &dfa, &judge, s));
                        checks += 1;
                    }
                    compared += 1;
                }
                Err(RegexError::Unsupported { feature, .. }) => {
                    assert!(
                        feature.contains("repet") || feature.contains("too large"),
                        "{pattern}: {feature}"
                    );
                    unsupported += 1;
                }
                Err(e) => panic!("{pattern}: {e}"),
            }
        }
        assert!(
            compared > 300 && unsupported > 0,
            "{compared} compared, {unsupported} unsupported"
        );
        assert!(
            matched > checks / 10 && matched < checks * 9 / 10,
            "{matched} of {checks}"
        );
    }

    #[test]
    fn unsupported_assertions_say_where() {
        for (pattern, feature, offset) in [
            (
                r"^([^,]+(,|$)){3,}$",
                "an assertion inside an unbounded repetition",
                2,
            ),
            (
                r"((?=a).){20}",
                "an assertion repeated more than 16 times",
                1,
            ),
            (r"a\bb", "word boundary assertion", 1),
            (r"(?<=a)b", "lookbehind (?<=", 0),
        ] {
            assert_eq!(
                check(pattern),
                Err(RegexError::Unsupported { feature, offset }),
                "{pattern}"
            );
        }
        let nested = "(?=(?=(?=(?=(?=(?=(?=(?=(?=(?=(?=(?=a|b)|c)|d)|e)|f)|g)|h)|i)|j)|k)|l)|m)";
        let many = format!("^{}$", format!("(?:{nested}x|y)").repeat(12));
        assert!(
            matches!(check(&many), Err(RegexError::Unsupported { feature, .. }) if feature.contains("too large")),
            "{:?}",
            check(&many)
        );
    }
}
