//! [`ForcedRules`]: a checked grammar's rules compiled once for the
//! recognizer, with llama.cpp's character matching and, per character item,
//! the one code point it allows (if it allows exactly one).

use std::fmt;

use crate::grammar::check::{rule_arena, Elem, Kind};
use crate::grammar::CheckedGbnf;

use super::utf8::{is_scalar, LAST_SCALAR};

/// `single` for an element that starts no character item, or one that
/// allows more than one code point.
pub(super) const MANY: u32 = u32::MAX;
/// `single` for a character item that allows no code point a model can
/// generate (the checker's `Dead` items, only in unreachable rules).
pub(super) const NONE: u32 = u32::MAX - 1;

/// A checked grammar's rules in the shape llama.cpp builds them, compiled
/// once per grammar for [`Recognizer`](super::Recognizer)s.
///
/// Built from a [`CheckedGbnf`] rather than stored inside it: most grammars
/// are never fast-forwarded, `CheckedGbnf` stays a cheap handle on its text
/// (compared and hashed by text), and whoever caches grammars for the engine
/// can keep one `Arc<ForcedRules>` beside each. Immutable after
/// construction, so it is `Send + Sync` and shared through `Arc`.
pub struct ForcedRules {
    /// Every rule's elements, each rule closed by its `End`.
    pub(super) elems: Vec<Elem>,
    /// Where rule `id` starts in `elems`.
    pub(super) starts: Vec<u32>,
    pub(super) root: u32,
    /// Per element: for the first element of a character item, the one code
    /// point the item allows, else [`MANY`] or [`NONE`].
    pub(super) single: Vec<u32>,
    /// False when the arena could not be built (never for checked text);
    /// such rules force nothing and recognize nothing.
    pub(super) usable: bool,
}

impl ForcedRules {
    /// Compile `gbnf`'s rules. Never fails: the text passed the checker, so
    /// reading it again succeeds; were it ever to fail, the rules would be
    /// unusable and every recognizer of them would force nothing.
    pub fn new(gbnf: &CheckedGbnf) -> Self {
        let Ok(arena) = rule_arena(gbnf.as_str()) else {
            return ForcedRules {
                elems: vec![Elem::new(Kind::End, 0)],
                starts: vec![0],
                root: 0,
                single: vec![MANY],
                usable: false,
            };
        };
        let single = (0..arena.elems.len())
            .map(|pos| single_member(&arena.elems, pos))
            .collect();
        ForcedRules {
            elems: arena.elems,
            starts: arena.starts,
            root: arena.root,
            single,
            usable: true,
        }
    }

    pub(super) fn kind(&self, pos: u32) -> Kind {
        self.elems.get(pos as usize).map_or(Kind::End, |e| e.kind)
    }

    /// llama.cpp's `llama_grammar_is_end_of_sequence` (and out of range).
    pub(super) fn ends_sequence(&self, pos: u32) -> bool {
        matches!(self.kind(pos), Kind::End | Kind::Alt)
    }

    /// Start of rule `id`.
    pub(super) fn rule_start(&self, id: u32) -> Option<u32> {
        self.starts.get(id as usize).copied()
    }

    pub(super) fn is_token(&self, pos: u32) -> bool {
        matches!(self.kind(pos), Kind::Token | Kind::TokenNot)
    }

    pub(super) fn single(&self, pos: u32) -> u32 {
        self.single.get(pos as usize).copied().unwrap_or(MANY)
    }

    /// llama.cpp's `llama_grammar_match_char`: whether the character item at
    /// `pos` allows `chr`, and the position after the item.
    pub(super) fn match_char(&self, pos: u32, chr: u32) -> (bool, u32) {
        let first = self.kind(pos);
        let positive = match first {
            Kind::Char | Kind::Any => true,
            Kind::CharNot => false,
            // `Dead` (matches only NUL, which is never read) or not a
            // character item at all.
            _ => return (false, self.skip_item(pos)),
        };
        let mut found = false;
        for (low, high, any) in self.members(pos) {
            found |= any || (low <= chr && chr <= high);
        }
        (found == positive, self.skip_item(pos))
    }

    /// llama.cpp's `llama_grammar_match_partial_char`, given the code points
    /// `low..=high` a pending UTF-8 sequence may still complete to: whether
    /// the item at `pos` may allow one of them. Like llama.cpp, a negated
    /// class refuses as soon as one excluded member lies in the range.
    pub(super) fn match_partial(&self, pos: u32, low: u32, high: u32) -> bool {
        let positive = match self.kind(pos) {
            Kind::Char | Kind::Any => true,
            Kind::CharNot => false,
            _ => return false,
        };
        for (lo, hi, any) in self.members(pos) {
            if any {
                return true;
            }
            if lo <= high && low <= hi {
                return positive;
            }
        }
        !positive
    }

    /// The members of the character item at `pos`: `(low, high, any)`.
    fn members(&self, pos: u32) -> Members<'_> {
        Members {
            elems: &self.elems,
            pos: pos as usize,
            first: true,
        }
    }

    /// The position after the character item at `pos`.
    fn skip_item(&self, pos: u32) -> u32 {
        let mut next = pos.saturating_add(1);
        while matches!(self.kind(next), Kind::CharAlt | Kind::RangeUpper) {
            next = next.saturating_add(1);
        }
        next
    }
}

impl fmt::Debug for ForcedRules {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ForcedRules")
            .field("rules", &self.starts.len())
            .field("elements", &self.elems.len())
            .field("usable", &self.usable)
            .finish()
    }
}

/// The members of one character item, walked as llama.cpp walks them: an
/// element followed by `RangeUpper` is a range, `Any` is everything, else a
/// single character; `CharAlt` continues the item.
struct Members<'a> {
    elems: &'a [Elem],
    pos: usize,
    first: bool,
}

impl Iterator for Members<'_> {
    type Item = (u32, u32, bool);

    fn next(&mut self) -> Option<Self::Item> {
        let elem = *self.elems.get(self.pos)?;
        let continues = matches!(elem.kind, Kind::CharAlt);
        if !(self.first || continues) {
            return None;
        }
        self.first = false;
        if let Some(upper) = self
            .elems
            .get(self.pos + 1)
            .filter(|e| e.kind == Kind::RangeUpper)
        {
            self.pos += 2;
            return Some((elem.value, upper.value, false));
        }
        self.pos += 1;
        Some((elem.value, elem.value, elem.kind == Kind::Any))
    }
}

/// The one code point the character item starting at `pos` allows, among
/// the code points a model can generate (Unicode scalar values but NUL), or
/// [`NONE`] / [`MANY`]. Elements that start no character item get
/// [`MANY`]: they are never asked.
fn single_member(elems: &[Elem], pos: usize) -> u32 {
    let kind = elems.get(pos).map(|e| e.kind);
    let negated = match kind {
        Some(Kind::Char) => false,
        Some(Kind::CharNot) => true,
        Some(Kind::Dead) => return NONE,
        _ => return MANY,
    };
    let members = Members {
        elems,
        pos,
        first: true,
    };
    let mut ranges: Vec<(u32, u32)> = members.map(|(low, high, _)| (low, high)).collect();
    if negated {
        ranges = complement(ranges);
    }
    let mut only = NONE;
    for (low, high) in ranges {
        // The generated code points are 1..=U+D7FF and U+E000..=U+10FFFF.
        for (lo, hi) in [(low.max(1), high.min(0xD7FF)), (low.max(0xE000), high)] {
            let hi = hi.min(LAST_SCALAR);
            if lo > hi {
                continue;
            }
            if lo < hi || (only != NONE && only != lo) {
                return MANY;
            }
            only = lo;
        }
    }
    debug_assert!(only == NONE || is_scalar(only));
    only
}

/// The code points `1..=U+10FFFF` outside `ranges`.
fn complement(mut ranges: Vec<(u32, u32)>) -> Vec<(u32, u32)> {
    ranges.sort_unstable();
    let mut gaps = Vec::new();
    let mut next = 1u32;
    for (low, high) in ranges {
        if low > next {
            gaps.push((next, low - 1));
        }
        next = next.max(high.saturating_add(1));
    }
    if next <= LAST_SCALAR {
        gaps.push((next, LAST_SCALAR));
    }
    gaps
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(text: &str) -> ForcedRules {
        ForcedRules::new(&CheckedGbnf::new(text).expect("valid grammar"))
    }

    /// `single` of root's first element.
    fn root_single(text: &str) -> u32 {
        let r = rules(text);
        let start = r.rule_start(r.root).expect("root");
        r.single(start)
    }

    #[test]
    fn a_class_of_one_member_allows_one_code_point() {
        assert_eq!(root_single("root ::= [a]"), u32::from('a'));
        assert_eq!(root_single("root ::= [a-a]"), u32::from('a'));
        assert_eq!(root_single("root ::= [aa-a]"), u32::from('a'));
        // NUL is never generated, so only U+0001 is left.
        assert_eq!(root_single("root ::= [\\x00\\x01]"), 1);
        assert_eq!(root_single("root ::= [ab]"), MANY);
        assert_eq!(root_single("root ::= [a-b]"), MANY);
        assert_eq!(root_single("root ::= ."), MANY);
    }

    #[test]
    fn a_negated_class_allows_one_code_point_only_when_it_excludes_all_others() {
        assert_eq!(
            root_single("root ::= [^\\x01-`b-\\U0010FFFF]"),
            u32::from('a')
        );
        assert_eq!(root_single("root ::= [^\\x01-`c-\\U0010FFFF]"), MANY);
        assert_eq!(root_single("root ::= [^a]"), MANY);
    }

    #[test]
    fn match_char_follows_llama_cpp() {
        let r = rules("root ::= [a-cx] [^a-c] .");
        let start = r.rule_start(r.root).expect("root");
        assert_eq!(r.match_char(start, u32::from('b')), (true, start + 3));
        assert!(r.match_char(start, u32::from('x')).0);
        assert!(!r.match_char(start, u32::from('d')).0);
        let second = start + 3;
        assert!(!r.match_char(second, u32::from('b')).0);
        assert!(r.match_char(second, u32::from('d')).0);
        assert!(r.match_char(second + 2, 0x1F600).0);
    }

    #[test]
    fn match_partial_refuses_a_negated_class_with_an_excluded_member_in_range() {
        let r = rules("root ::= [^é] [é]");
        let start = r.rule_start(r.root).expect("root");
        // After the lead byte C3 the character is one of U+00C0..=U+00FF.
        assert!(!r.match_partial(start, 0xC0, 0xFF));
        assert!(r.match_partial(start, 0x100, 0x13F));
        assert!(r.match_partial(start + 1, 0xC0, 0xFF));
        assert!(!r.match_partial(start + 1, 0x100, 0x13F));
    }
}
