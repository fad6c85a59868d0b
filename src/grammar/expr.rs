//! A small grammar AST that the schema converter builds and renders to GBNF
//! (or, for tests of regular fragments, to a Rust regex).
//!
//! Text is in *code points*: a `Lit` or a `Class` matches characters of the
//! generated output, exactly as llama.cpp's grammar engine sees them.

use std::fmt::Write as _;
use std::hash::{BuildHasher, Hash, Hasher};

pub use crate::hashing::hash_of;
use crate::hashing::Map;

/// One grammar expression.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Expr {
    /// A literal string (may be empty: matches the empty string).
    Lit(String),
    /// One character in (or, when `negated`, not in) the inclusive ranges.
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
    /// Each in turn.
    Seq(Vec<Expr>),
    /// Any one of them. Never empty: use [`Expr::Lit`]`("")` for epsilon and
    /// avoid building a language that matches nothing.
    Alt(Vec<Expr>),
    /// `expr` repeated between `min` and `max` times (`None`: unbounded).
    Repeat {
        expr: Box<Expr>,
        min: u32,
        max: Option<u32>,
    },
    /// A reference to a named rule.
    Rule(String),
}

impl Expr {
    pub fn lit(s: impl Into<String>) -> Self {
        Expr::Lit(s.into())
    }

    pub fn empty() -> Self {
        Expr::Lit(String::new())
    }

    pub fn rule(name: impl Into<String>) -> Self {
        Expr::Rule(name.into())
    }

    /// A class of the given inclusive ranges.
    pub fn class(ranges: &[(char, char)]) -> Self {
        Expr::Class {
            negated: false,
            ranges: ranges.to_vec(),
        }
    }

    /// Any character not in the given inclusive ranges.
    pub fn not_class(ranges: &[(char, char)]) -> Self {
        Expr::Class {
            negated: true,
            ranges: ranges.to_vec(),
        }
    }

    /// A sequence, flattened; a one-element sequence is that element.
    pub fn seq(items: impl IntoIterator<Item = Expr>) -> Self {
        let mut out: Vec<Expr> = Vec::new();
        for item in items {
            match item {
                Expr::Seq(inner) => out.extend(inner),
                Expr::Lit(s) if s.is_empty() => {}
                Expr::Lit(s) => match out.last_mut() {
                    Some(Expr::Lit(prev)) => prev.push_str(&s),
                    _ => out.push(Expr::Lit(s)),
                },
                other => out.push(other),
            }
        }
        match out.len() {
            0 => Expr::empty(),
            1 => out.pop().unwrap_or_else(Expr::empty),
            _ => Expr::Seq(out),
        }
    }

    /// An alternation, flattened and without duplicates; one alternative is
    /// that alternative.
    ///
    /// # Panics
    /// Never with a non-empty input; an empty input is a converter bug and
    /// yields an `Alt(vec![])` that [`Expr::to_gbnf`] renders as a class that
    /// matches nothing.
    pub fn alt(items: impl IntoIterator<Item = Expr>) -> Self {
        /// Below this many alternatives a linear scan is cheaper than hashing.
        const LINEAR: usize = 16;
        let mut out: Vec<Expr> = Vec::new();
        // Past LINEAR, hashes of the alternatives kept, so that long
        // alternations (large enums) are deduplicated in linear time.
        let mut seen: Option<Map<u64, Vec<usize>>> = None;
        for item in items {
            let parts = match item {
                Expr::Alt(inner) => inner,
                other => vec![other],
            };
            for p in parts {
                if out.len() < LINEAR {
                    if !out.contains(&p) {
                        out.push(p);
                    }
                    continue;
                }
                let index = seen.get_or_insert_with(|| {
                    let mut index: Map<u64, Vec<usize>> = Map::default();
                    for (i, e) in out.iter().enumerate() {
                        index.entry(e.shallow_hash()).or_default().push(i);
                    }
                    index
                });
                let same = index.entry(p.shallow_hash()).or_default();
                if !same.iter().any(|&i| out[i] == p) {
                    same.push(out.len());
                    out.push(p);
                }
            }
        }
        if out.len() == 1 {
            out.pop().unwrap_or_else(Expr::empty)
        } else {
            Expr::Alt(out)
        }
    }

    /// A hash of the top of the tree only (a bounded amount of work, however
    /// deep the expression): equal expressions share it.
    fn shallow_hash(&self) -> u64 {
        let mut h = foldhash::fast::FixedState::default().build_hasher();
        self.shallow_hash_into(&mut h, 2);
        h.finish()
    }

    fn shallow_hash_into(&self, h: &mut impl Hasher, depth: u32) {
        std::mem::discriminant(self).hash(h);
        match self {
            Expr::Lit(s) | Expr::Rule(s) => s.hash(h),
            Expr::Class { negated, ranges } => {
                negated.hash(h);
                ranges.hash(h);
            }
            Expr::Seq(items) | Expr::Alt(items) => {
                items.len().hash(h);
                if depth > 0 {
                    for item in items.iter().take(2) {
                        item.shallow_hash_into(h, depth - 1);
                    }
                }
            }
            Expr::Repeat { expr, min, max } => {
                (min, max).hash(h);
                if depth > 0 {
                    expr.shallow_hash_into(h, depth - 1);
                }
            }
        }
    }

    /// `self` or nothing.
    /// The most characters a string of it has; `None`: unbounded (or a
    /// rule, unknown).
    pub fn longest_len(&self) -> Option<u64> {
        Some(match self {
            Expr::Lit(s) => s.chars().count() as u64,
            Expr::Class { .. } => 1,
            Expr::Seq(items) => items.iter().try_fold(0u64, |acc, x| {
                x.longest_len().map(|l| acc.saturating_add(l))
            })?,
            Expr::Alt(items) => items
                .iter()
                .try_fold(0u64, |acc, x| x.longest_len().map(|l| acc.max(l)))?,
            Expr::Repeat { expr, max, .. } => {
                let inner = expr.longest_len()?;
                match max {
                    Some(m) => inner.saturating_mul(u64::from(*m)),
                    None if inner == 0 => 0,
                    None => return None,
                }
            }
            Expr::Rule(_) => return None,
        })
    }

    pub fn opt(self) -> Self {
        self.repeat(0, Some(1))
    }

    /// `self` repeated `min..=max` times.
    pub fn repeat(self, min: u32, max: Option<u32>) -> Self {
        if max == Some(0) {
            return Expr::empty();
        }
        if min == 1 && max == Some(1) {
            return self;
        }
        Expr::Repeat {
            expr: Box::new(self),
            min,
            max,
        }
    }

    /// The alternation of `words` as a prefix tree: words that share a start
    /// share its literal, and the alternatives where they part are grouped
    /// (single last characters into one class). A grammar engine then
    /// follows one branch per character instead of one per word, which for
    /// a large enum is the difference between a few and thousands of parse
    /// stacks at every token. Where the words would nest deeper than
    /// [`TRIE_DEPTH`] groups, the plain alternation is returned.
    pub fn trie<'a>(words: impl IntoIterator<Item = &'a str>) -> Self {
        let mut words: Vec<&str> = words.into_iter().collect();
        words.sort_unstable();
        words.dedup();
        if words.is_empty() {
            return Expr::Alt(Vec::new());
        }
        trie_of(&words, TRIE_DEPTH)
            .unwrap_or_else(|| Expr::alt(words.iter().map(|w| Expr::lit(*w))))
    }

    /// `self` with every subtree equal to `from` replaced by `to`.
    pub fn replace(&self, from: &Expr, to: &Expr) -> Expr {
        if self == from {
            return to.clone();
        }
        match self {
            Expr::Seq(items) => Expr::Seq(items.iter().map(|x| x.replace(from, to)).collect()),
            Expr::Alt(items) => Expr::Alt(items.iter().map(|x| x.replace(from, to)).collect()),
            Expr::Repeat { expr, min, max } => Expr::Repeat {
                expr: Box::new(expr.replace(from, to)),
                min: *min,
                max: *max,
            },
            other => other.clone(),
        }
    }

    /// Render as a GBNF expression (the right-hand side of a rule).
    pub fn to_gbnf(&self) -> String {
        let mut out = String::new();
        self.write_gbnf(&mut out, false);
        out
    }

    fn write_gbnf(&self, out: &mut String, nested: bool) {
        match self {
            Expr::Lit(s) => {
                out.push('"');
                for c in s.chars() {
                    push_escaped(out, c, &['"', '\\']);
                }
                out.push('"');
            }
            Expr::Class { negated, ranges } => write_class(out, *negated, ranges),
            Expr::Seq(items) => write_joined(out, items, " ", nested),
            Expr::Alt(items) => {
                if items.is_empty() {
                    // Matches nothing: an empty negated class would match
                    // everything, so use a class of no characters.
                    out.push_str("[^\\x00-\\U0010FFFF]");
                    return;
                }
                write_joined(out, items, " | ", nested);
            }
            Expr::Repeat { expr, min, max } => {
                let atom = matches!(**expr, Expr::Lit(_) | Expr::Class { .. } | Expr::Rule(_));
                if !atom {
                    out.push('(');
                    expr.write_gbnf(out, false);
                    out.push(')');
                } else {
                    expr.write_gbnf(out, true);
                }
                match (min, max) {
                    (0, Some(1)) => out.push('?'),
                    (0, None) => out.push('*'),
                    (1, None) => out.push('+'),
                    (m, None) => {
                        let _ = write!(out, "{{{m},}}");
                    }
                    (m, Some(n)) if m == n => {
                        let _ = write!(out, "{{{m}}}");
                    }
                    (m, Some(n)) => {
                        let _ = write!(out, "{{{m},{n}}}");
                    }
                }
            }
            Expr::Rule(name) => out.push_str(name),
        }
    }

    /// Render as a Rust `regex` pattern (anchored by the caller). Only for
    /// tests of fragments without rule references.
    pub fn to_regex(&self) -> String {
        let mut out = String::new();
        self.write_regex(&mut out);
        out
    }

    fn write_regex(&self, out: &mut String) {
        match self {
            Expr::Lit(s) => {
                out.push_str("(?:");
                out.push_str(&regex_escape(s));
                out.push(')');
            }
            Expr::Class { negated, ranges } => {
                out.push('[');
                if *negated {
                    out.push('^');
                }
                for (a, b) in ranges {
                    let _ = write!(out, "\\x{{{:x}}}-\\x{{{:x}}}", *a as u32, *b as u32);
                }
                if ranges.is_empty() && !negated {
                    out.push_str("&&[^\\x{0}-\\x{10FFFF}]");
                }
                out.push(']');
            }
            Expr::Seq(items) => {
                out.push_str("(?:");
                for item in items {
                    item.write_regex(out);
                }
                out.push(')');
            }
            Expr::Alt(items) => {
                out.push_str("(?:");
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push('|');
                    }
                    item.write_regex(out);
                }
                out.push(')');
            }
            Expr::Repeat { expr, min, max } => {
                out.push_str("(?:");
                expr.write_regex(out);
                out.push(')');
                match max {
                    Some(n) => {
                        let _ = write!(out, "{{{min},{n}}}");
                    }
                    None => {
                        let _ = write!(out, "{{{min},}}");
                    }
                }
            }
            Expr::Rule(name) => {
                let _ = write!(out, "(?:RULE:{name})");
            }
        }
    }
}

fn regex_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_ascii_alphanumeric() || c == ' ' {
            out.push(c);
        } else {
            let _ = write!(out, "\\x{{{:x}}}", c as u32);
        }
    }
    out
}

/// `items` in GBNF with `separator` between them (a sequence or a choice),
/// in parentheses when `nested` in a larger expression.
fn write_joined(out: &mut String, items: &[Expr], separator: &str, nested: bool) {
    if nested {
        out.push('(');
    }
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(separator);
        }
        item.write_gbnf(out, true);
    }
    if nested {
        out.push(')');
    }
}

fn write_class(out: &mut String, negated: bool, ranges: &[(char, char)]) {
    if ranges.is_empty() {
        out.push_str(if negated {
            "[\\x00-\\U0010FFFF]"
        } else {
            "[^\\x00-\\U0010FFFF]"
        });
        return;
    }
    out.push('[');
    if negated {
        out.push('^');
    }
    for &(a, b) in ranges {
        push_class_char(out, a);
        if b != a {
            out.push('-');
            push_class_char(out, b);
        }
    }
    out.push(']');
}

/// A character inside `[...]`. llama.cpp knows `\]`, `\[`, `\-` and `\\` but
/// not `\^`, so `^` is written in hex.
fn push_class_char(out: &mut String, c: char) {
    if c == '^' {
        out.push_str("\\x5E");
    } else {
        push_escaped(out, c, &[']', '\\', '-', '[']);
    }
}

/// Write `c` so that llama.cpp's GBNF parser reads it back as `c`.
fn push_escaped(out: &mut String, c: char, special: &[char]) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c if special.contains(&c) => {
            out.push('\\');
            out.push(c);
        }
        c if (c as u32) < 0x20 || c as u32 == 0x7F => {
            let _ = write!(out, "\\x{:02X}", c as u32);
        }
        c if (0x80..0xA0).contains(&(c as u32))
            || c == '\u{2028}'
            || c == '\u{2029}'
            || c == '\u{FFFE}'
            || c == '\u{FFFF}' =>
        {
            let _ = write!(out, "\\u{:04X}", c as u32);
        }
        c if (c as u32) >= 0xF0000 => {
            let _ = write!(out, "\\U{:08X}", c as u32);
        }
        c => out.push(c),
    }
}

/// A named rule and its expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub name: String,
    pub expr: Expr,
}

/// Rules rendered as GBNF text, one per line, `root` first.
pub fn render(rules: &[Rule]) -> String {
    render_named(rules.iter().map(|rule| (rule.name.as_str(), &rule.expr)))
}

/// Named expressions rendered as GBNF text, one rule per line, in order.
pub fn render_named<'a>(rules: impl IntoIterator<Item = (&'a str, &'a Expr)>) -> String {
    let mut out = String::new();
    for (name, expr) in rules {
        out.push_str(name);
        out.push_str(" ::= ");
        expr.write_gbnf(&mut out, false);
        out.push('\n');
    }
    out
}

/// How deep [`Expr::trie`] nests its groups at most: each group is a rule
/// in llama.cpp's parse, and its parser recurses into them.
pub const TRIE_DEPTH: usize = 48;

/// The prefix tree of `words` (sorted, distinct), or `None` when it would
/// nest deeper than `depth` groups.
fn trie_of(words: &[&str], depth: usize) -> Option<Expr> {
    let mut alts = Vec::new();
    let mut leaves: Vec<(char, char)> = Vec::new();
    let mut optional = false;
    let mut i = 0;
    while i < words.len() {
        let word = words[i];
        let Some(first) = word.chars().next() else {
            optional = true;
            i += 1;
            continue;
        };
        // Sorted: the words that start with `first` follow each other.
        let end = i + words[i..]
            .iter()
            .take_while(|w| w.starts_with(first))
            .count();
        let group = &words[i..end];
        i = end;
        if let [only] = group {
            if only.chars().count() == 1 {
                leaves.push((first, first));
            } else {
                alts.push(Expr::lit(*only));
            }
            continue;
        }
        // The start the whole group shares (at least `first`).
        let shared = group
            .iter()
            .skip(1)
            .fold(group[0].len(), |n, w| n.min(common_prefix_len(group[0], w)));
        let rest: Vec<&str> = group.iter().map(|w| &w[shared..]).collect();
        let tail = trie_of(&rest, depth.checked_sub(1)?)?;
        alts.push(Expr::seq([Expr::lit(&group[0][..shared]), tail]));
    }
    if !leaves.is_empty() {
        alts.push(Expr::class(&merge_ranges(leaves)));
    }
    // A word that ends here is the empty alternative (not `?`: llama.cpp
    // copies the rules of a repeated group).
    if optional {
        alts.push(Expr::empty());
    }
    Some(match alts.len() {
        0 => Expr::empty(),
        _ => Expr::alt(alts),
    })
}

/// The length in bytes of the longest common prefix of `a` and `b`, on a
/// character boundary.
fn common_prefix_len(a: &str, b: &str) -> usize {
    a.char_indices()
        .zip(b.chars())
        .find(|((_, x), y)| x != y)
        .map_or(a.len().min(b.len()), |((at, _), _)| at)
}

/// Sorted, distinct single characters as ranges of consecutive ones.
fn merge_ranges(mut chars: Vec<(char, char)>) -> Vec<(char, char)> {
    chars.sort_unstable();
    let mut out: Vec<(char, char)> = Vec::with_capacity(chars.len());
    for (c, _) in chars {
        match out.last_mut() {
            Some((_, hi)) if (*hi as u32) + 1 == c as u32 => *hi = c,
            _ => out.push((c, c)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `e` as a Rust regex, to judge its language with another engine.
    fn to_regex(e: &Expr) -> String {
        match e {
            Expr::Lit(s) => regex::escape(s),
            Expr::Class { negated, ranges } => {
                let body: String = ranges
                    .iter()
                    .map(|(a, b)| {
                        format!(
                            "{}-{}",
                            regex::escape(&a.to_string()),
                            regex::escape(&b.to_string())
                        )
                    })
                    .collect();
                format!("[{}{body}]", if *negated { "^" } else { "" })
            }
            Expr::Seq(items) => items
                .iter()
                .map(|x| format!("(?:{})", to_regex(x)))
                .collect(),
            Expr::Alt(items) => format!(
                "(?:{})",
                items
                    .iter()
                    .map(|x| format!("(?:{})", to_regex(x)))
                    .collect::<Vec<_>>()
                    .join("|")
            ),
            Expr::Repeat { expr, min, max } => format!(
                "(?:{}){{{min},{}}}",
                to_regex(expr),
                max.map_or(String::new(), |m| m.to_string())
            ),
            Expr::Rule(name) => panic!("rule {name} in a trie"),
        }
    }

    #[test]
    fn a_trie_matches_exactly_its_words() {
        let sets: Vec<Vec<String>> = vec![
            (1..=2000).map(|n| n.to_string()).collect(),
            [
                "a", "ab", "abc", "b", "ba", "", "é", "éa", "\"x\"", "\"xy\"",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
            [
                "\"red\"",
                "\"green\"",
                "\"grey\"",
                "\"greyhound\"",
                "null",
                "1.5",
                "15",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        ];
        for words in &sets {
            let trie = Expr::trie(words.iter().map(String::as_str));
            let re = regex::Regex::new(&format!("^(?:{})$", to_regex(&trie))).expect("regex");
            for w in words {
                assert!(re.is_match(w), "{w:?} in {}", trie.to_gbnf());
            }
            for w in words {
                for probe in [format!("{w}0"), format!("{w}a"), format!("x{w}")] {
                    assert_eq!(re.is_match(&probe), words.contains(&probe), "{probe:?}");
                }
                let mut cut = w.clone();
                if cut.pop().is_some() {
                    assert_eq!(re.is_match(&cut), words.contains(&cut), "{cut:?}");
                }
            }
        }
    }

    #[test]
    fn a_trie_of_numbers_shares_prefixes() {
        let words: Vec<String> = (1..=100_000).map(|n| n.to_string()).collect();
        let trie = Expr::trie(words.iter().map(String::as_str));
        let flat = Expr::alt(words.iter().map(|w| Expr::lit(w.as_str())));
        assert!(
            trie.to_gbnf().len() * 4 < flat.to_gbnf().len(),
            "{} vs {}",
            trie.to_gbnf().len(),
            flat.to_gbnf().len()
        );
        // The top level parts at the first digit.
        let Expr::Alt(top) = &trie else {
            panic!("{}", trie.to_gbnf())
        };
        assert!(top.len() <= 10, "{}", top.len());
    }

    #[test]
    fn a_trie_too_deep_is_a_plain_alternation() {
        let words: Vec<String> = (0..=TRIE_DEPTH + 2).map(|n| "a".repeat(n)).collect();
        let trie = Expr::trie(words.iter().map(String::as_str));
        assert_eq!(trie, Expr::alt(words.iter().map(|w| Expr::lit(w.as_str()))));
    }

    #[test]
    fn literals_are_escaped_for_gbnf() {
        assert_eq!(
            Expr::lit("a\"b\\c\nd\u{1}").to_gbnf(),
            r#""a\"b\\c\nd\x01""#
        );
    }

    #[test]
    fn classes_escape_their_metacharacters() {
        let e = Expr::class(&[('a', 'z'), (']', ']'), ('-', '-'), ('\\', '\\')]);
        assert_eq!(e.to_gbnf(), r"[a-z\]\-\\]");
        assert_eq!(Expr::class(&[('^', '^')]).to_gbnf(), r"[\x5E]");
        assert_eq!(
            Expr::not_class(&[('"', '"'), ('\0', '\u{1f}')]).to_gbnf(),
            r#"[^"\x00-\x1F]"#
        );
    }

    #[test]
    fn seq_merges_literals_and_drops_empties() {
        let e = Expr::seq([
            Expr::lit("a"),
            Expr::empty(),
            Expr::lit("b"),
            Expr::rule("x"),
        ]);
        assert_eq!(e, Expr::Seq(vec![Expr::lit("ab"), Expr::rule("x")]));
        assert_eq!(Expr::seq([Expr::lit("a")]), Expr::lit("a"));
    }

    #[test]
    fn alt_flattens_and_dedups() {
        let e = Expr::alt([Expr::lit("a"), Expr::alt([Expr::lit("b"), Expr::lit("a")])]);
        assert_eq!(e.to_gbnf(), r#""a" | "b""#);
    }

    #[test]
    fn repetition_syntax() {
        let d = Expr::class(&[('0', '9')]);
        assert_eq!(d.clone().opt().to_gbnf(), "[0-9]?");
        assert_eq!(d.clone().repeat(0, None).to_gbnf(), "[0-9]*");
        assert_eq!(d.clone().repeat(1, None).to_gbnf(), "[0-9]+");
        assert_eq!(d.clone().repeat(2, Some(5)).to_gbnf(), "[0-9]{2,5}");
        assert_eq!(d.clone().repeat(3, Some(3)).to_gbnf(), "[0-9]{3}");
        assert_eq!(d.repeat(2, None).to_gbnf(), "[0-9]{2,}");
        let s = Expr::seq([Expr::lit("a"), Expr::rule("b")]).repeat(0, None);
        assert_eq!(s.to_gbnf(), r#"("a" b)*"#);
    }

    #[test]
    fn nested_alternatives_are_parenthesised() {
        let e = Expr::seq([Expr::lit("x"), Expr::alt([Expr::lit("a"), Expr::lit("b")])]);
        assert_eq!(e.to_gbnf(), r#""x" ("a" | "b")"#);
    }

    #[test]
    fn regex_rendering_matches_the_same_language() {
        let e = Expr::seq([
            Expr::lit("-").opt(),
            Expr::alt([
                Expr::lit("0"),
                Expr::seq([
                    Expr::class(&[('1', '9')]),
                    Expr::class(&[('0', '9')]).repeat(0, Some(2)),
                ]),
            ]),
        ]);
        let re = regex::Regex::new(&format!("^{}$", e.to_regex())).unwrap();
        for ok in ["0", "-0", "7", "123", "-99"] {
            assert!(re.is_match(ok), "{ok}");
        }
        for bad in ["", "01", "1234", "--1", "a"] {
            assert!(!re.is_match(bad), "{bad}");
        }
    }

    #[test]
    fn render_writes_one_rule_per_line() {
        let rules = vec![
            Rule {
                name: "root".into(),
                expr: Expr::rule("x"),
            },
            Rule {
                name: "x".into(),
                expr: Expr::lit("y"),
            },
        ];
        assert_eq!(render(&rules), "root ::= x\nx ::= \"y\"\n");
    }
}
