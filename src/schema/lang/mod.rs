//! Regular languages of string *values* (decoded characters), as values that
//! can be intersected, complemented and written as grammar rules.
//!
//! A language is first described by a [`Re`] (built from a `pattern`, a
//! format's grammar, a length bound, a set of excluded values), then compiled
//! into a minimal deterministic automaton ([`Dfa`]) by Brzozowski derivatives
//! over the classes of characters the description distinguishes. Intersection
//! and complement are exact at every step, and the automaton decides
//! emptiness and membership. [`Dfa::rules`] writes it as right-linear grammar
//! rules over the canonical JSON encoding of each character (see
//! `strings::char_in`), which is exact because that encoding is prefix-free.
//!
//! Why not a crate: `regex-automata` and `derivre` work on UTF-8 bytes, while
//! llama.cpp's grammars and JSON Schema's lengths work on code points; and the
//! patterns are ECMAScript, which this crate already parses exactly
//! (`schema::regex`). Owning the automaton keeps the emitted grammar in
//! characters and lets length bounds be applied at emission time, where a
//! counter over a large `maxLength` would otherwise multiply the states.
//!
//! Files: `alphabet` (the character classes), `terms` (hash-consed
//! expressions and their derivatives), `dfa` (construction, pruning,
//! minimisation, membership), `rules` (grammar emission, length bounds).

mod alphabet;
mod dfa;
mod rules;
mod terms;

#[cfg(test)]
pub(crate) mod tests;

use crate::hashing::Map;
use std::cell::RefCell;
use std::sync::Arc;

use crate::grammar::expr::Expr;
use crate::schema::strings::CharSet;

pub use dfa::Dfa;
pub use rules::Emitted;

/// The most automaton states a language may need (before minimisation, and
/// for an emitted length product).
pub const MAX_STATES: usize = 4096;

/// The most states explored for a language that reads numerals
/// ([`Re::Multiple`]), before minimisation.
pub const MAX_NUMERAL_STATES: usize = 12_000;

/// Why a language could not be compiled or emitted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LangError {
    /// The automaton would need more than [`MAX_STATES`] states.
    #[error("cannot be enforced together with the other string constraints here: their automaton needs more than {limit} states")]
    TooManyStates { limit: usize },
    /// The description itself has more than [`MAX_RE_NODES`] parts (key
    /// languages merged again and again through recursive definitions).
    #[error("cannot be enforced together with the other key constraints here: their description grows past {limit} parts")]
    TooLarge { limit: usize },
    /// The key languages of one conversion have, in all, more than
    /// [`MAX_KEY_PARTS`] parts (merged again and again through recursive
    /// definitions, each under the per-language limit).
    #[error("cannot be enforced together with the other key constraints here: the key languages of this schema's merges need more than {limit} parts in all")]
    TooMuchKeyWork { limit: usize },
}

/// The most parts the key languages of one conversion may have in all: each
/// merge of two objects' key languages describes the pairs of their regions
/// anew, and recursive definitions merged with patterns do so again at every
/// deferred merge (one such schema took 70 s before it met a per-language
/// limit). No visible MaskBench schema's output changes with it.
pub const MAX_KEY_PARTS: usize = 2_000_000;

/// The most parts a description of a language may have before its automaton
/// is built: merging the key languages of recursive definitions nests the
/// previous description in the next, and would otherwise double it at each
/// merge.
pub const MAX_RE_NODES: usize = 20_000;

/// A regular language of strings, described by its construction.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Re {
    /// One character of the set.
    Set(CharSet),
    /// Each in turn (empty: the empty string).
    Seq(Vec<Re>),
    /// Any of them (empty: no string).
    Alt(Vec<Re>),
    /// All of them at once (empty: every string).
    And(Vec<Re>),
    /// Every string the operand does not match.
    Not(Box<Re>),
    /// The operand `min..=max` times (`None`: unbounded).
    Repeat(Box<Re>, u32, Option<u32>),
    /// Decimal numerals (`-?[0-9]+(\.[0-9]+)?`, leading zeros included)
    /// with at most `scale` fraction digits, whose value is a multiple of
    /// `modulus / 10^scale` (`multipleOf: 2.5` is modulus 25, scale 1).
    /// Any other string is outside, exponents and trailing zeros past
    /// `scale` included: intersect with a numeral syntax.
    Multiple { modulus: u64, scale: u32 },
}

/// The characters a [`Re::Multiple`] reads, each its own class: the digits,
/// the decimal point and the minus sign, in that order.
pub(super) const NUMERAL_CHARS: [char; 12] =
    ['0', '1', '2', '3', '4', '5', '6', '7', '8', '9', '.', '-'];

/// The automaton of a description, from a per-thread cache: a schema asks
/// for the same language when it is parsed, merged and written, and formats
/// recur across schemas. Failures are kept too: finding that an automaton is
/// too large costs as much as building it.
pub fn automaton(re: &Re) -> Result<Arc<Dfa>, LangError> {
    thread_local! {
        static CACHE: RefCell<Cache> = RefCell::new(Cache::default());
    }
    if let Some(hit) = CACHE.with(|c| c.borrow_mut().get(re)) {
        return hit;
    }
    let built = conjunction(re)
        .unwrap_or_else(|| Dfa::new(re))
        .map(Arc::new);
    CACHE.with(|c| c.borrow_mut().insert(re, built.clone()));
    built
}

type Built = Result<Arc<Dfa>, LangError>;

/// Automata kept for reuse, in two tiers. Large ones (formats such as `uri`,
/// about 900 states and 3 ms each) stay until [`Cache::LARGE`] of them are
/// kept, however many small ones a schema's key languages bring; small ones
/// are kept by generation: when [`Cache::RECENT`] are new, the older
/// generation goes and the recent becomes it, and a hit in the older one
/// brings it back.
#[derive(Default)]
struct Cache {
    large: Map<Re, Built>,
    recent: Map<Re, Built>,
    older: Map<Re, Built>,
}

impl Cache {
    /// Large automata kept (the tier is emptied when it holds more).
    const LARGE: usize = 64;
    /// Small automata per generation.
    const RECENT: usize = 256;
    /// States from which an automaton counts as large.
    const LARGE_STATES: usize = 100;

    fn get(&mut self, re: &Re) -> Option<Built> {
        if let Some(hit) = self.large.get(re).or_else(|| self.recent.get(re)) {
            return Some(hit.clone());
        }
        let hit = self.older.remove(re)?;
        self.insert(re, hit.clone());
        Some(hit)
    }

    fn insert(&mut self, re: &Re, built: Built) {
        let large = match &built {
            Ok(dfa) => dfa.len() >= Self::LARGE_STATES,
            Err(_) => true,
        };
        if large {
            if self.large.len() >= Self::LARGE {
                self.large.clear();
            }
            self.large.insert(re.clone(), built);
            return;
        }
        if self.recent.len() >= Self::RECENT {
            self.older = std::mem::take(&mut self.recent);
        }
        self.recent.insert(re.clone(), built);
    }
}

/// The automaton of a conjunction as the product of its operands' automata
/// (each from the cache, a negated operand complemented); `None` when `re`
/// is not a conjunction of several operands, or when an operand alone is too
/// large (the conjunction may still be small: derivatives decide).
fn conjunction(re: &Re) -> Option<Result<Dfa, LangError>> {
    let Re::And(_) = re else { return None };
    // The operands, nested conjunctions flattened.
    fn operands<'a>(re: &'a Re, out: &mut Vec<&'a Re>) {
        match re {
            Re::And(parts) => parts.iter().for_each(|p| operands(p, out)),
            other => out.push(other),
        }
    }
    let mut parts = Vec::new();
    operands(re, &mut parts);
    let mut built = Vec::with_capacity(parts.len());
    for part in parts {
        let (inner, negated) = match part {
            Re::Not(inner) => (&**inner, true),
            other => (other, false),
        };
        let dfa = automaton(inner).ok()?;
        // An operand that every string meets changes nothing.
        if (!negated && dfa.is_universal()) || (negated && dfa.is_empty()) {
            continue;
        }
        built.push((dfa, negated));
    }
    match built.as_slice() {
        // Every string: derivatives say so in a step.
        [] => return None,
        [(only, false)] => return Some(Ok(Dfa::clone(only))),
        _ => {}
    }
    let operands: Vec<(&Dfa, bool)> = built.iter().map(|(d, n)| (&**d, *n)).collect();
    Some(Dfa::intersection(&operands, re.state_limit()))
}

impl Re {
    /// Whether the description has at most `limit` parts (counted until
    /// the limit is passed).
    pub fn size_within(&self, limit: usize) -> bool {
        self.size_up_to(limit) <= limit
    }

    /// The number of parts of the description, counted up to `limit + 1`.
    pub fn size_up_to(&self, limit: usize) -> usize {
        fn count(re: &Re, left: &mut usize) -> bool {
            if *left == 0 {
                return false;
            }
            *left -= 1;
            match re {
                Re::Set(_) | Re::Multiple { .. } => true,
                Re::Seq(xs) | Re::Alt(xs) | Re::And(xs) => xs.iter().all(|x| count(x, left)),
                Re::Not(x) | Re::Repeat(x, _, _) => count(x, left),
            }
        }
        let mut left = limit.saturating_add(1);
        count(self, &mut left);
        limit.saturating_add(1) - left
    }

    /// The empty string only.
    pub fn empty_string() -> Re {
        Re::Seq(Vec::new())
    }

    /// No string at all.
    pub fn nothing() -> Re {
        Re::Alt(Vec::new())
    }

    /// Every string.
    pub fn any_string() -> Re {
        Re::Repeat(Box::new(Re::Set(CharSet::any())), 0, None)
    }

    /// Exactly this string.
    pub fn literal(s: &str) -> Re {
        Re::Seq(s.chars().map(|c| Re::Set(CharSet::single(c))).collect())
    }

    /// Any of these strings.
    pub fn one_of<'a>(words: impl IntoIterator<Item = &'a str>) -> Re {
        Re::Alt(words.into_iter().map(Re::literal).collect())
    }

    /// Strings of `min..=max` characters.
    pub fn length(min: u64, max: Option<u64>) -> Re {
        let clamp = |n: u64| u32::try_from(n).unwrap_or(u32::MAX);
        Re::Repeat(
            Box::new(Re::Set(CharSet::any())),
            clamp(min),
            max.map(clamp),
        )
    }

    /// The complement.
    pub fn complement(self) -> Re {
        Re::Not(Box::new(self))
    }

    /// The language of a grammar expression read over decoded characters, for
    /// expressions whose characters need no JSON escaping (formats, numbers).
    /// `None` when it refers to a rule or holds a character that a JSON
    /// string escapes (its encoding would differ from the character).
    pub fn from_expr(expr: &Expr) -> Option<Re> {
        let escaped = CharSet::from_ranges([('\0', '\u{1f}'), ('"', '"'), ('\\', '\\')]);
        Some(match expr {
            Expr::Lit(s) => {
                if s.chars().any(|c| escaped.contains(c)) {
                    return None;
                }
                Re::literal(s)
            }
            Expr::Class { negated, ranges } => {
                let set = CharSet::from_ranges(ranges.iter().copied());
                let set = if *negated { set.complement() } else { set };
                if !set.intersect(&escaped).is_empty() {
                    return None;
                }
                Re::Set(set)
            }
            Expr::Seq(items) => Re::Seq(items.iter().map(Re::from_expr).collect::<Option<_>>()?),
            Expr::Alt(items) => Re::Alt(items.iter().map(Re::from_expr).collect::<Option<_>>()?),
            Expr::Repeat { expr, min, max } => {
                Re::Repeat(Box::new(Re::from_expr(expr)?), *min, *max)
            }
            Expr::Rule(_) => return None,
        })
    }

    /// Every character set the description mentions.
    fn sets<'a>(&'a self, out: &mut Vec<&'a CharSet>) {
        match self {
            Re::Set(s) => out.push(s),
            Re::Seq(items) | Re::Alt(items) | Re::And(items) => {
                for item in items {
                    item.sets(out);
                }
            }
            Re::Not(inner) | Re::Repeat(inner, _, _) => inner.sets(out),
            Re::Multiple { .. } => {}
        }
    }

    /// The most states its automaton may explore: more for a language
    /// that reads numerals, where a remainder times a digit counter explores
    /// many states that minimisation then merges (a step of 6.75 over 16
    /// digits: about 11,000 before, 400 after).
    fn state_limit(&self) -> usize {
        if self.reads_numerals() {
            MAX_NUMERAL_STATES
        } else {
            MAX_STATES
        }
    }

    /// Whether the description reads numerals ([`Re::Multiple`]).
    fn reads_numerals(&self) -> bool {
        match self {
            Re::Set(_) => false,
            Re::Seq(items) | Re::Alt(items) | Re::And(items) => {
                items.iter().any(Re::reads_numerals)
            }
            Re::Not(inner) | Re::Repeat(inner, _, _) => inner.reads_numerals(),
            Re::Multiple { .. } => true,
        }
    }
}
