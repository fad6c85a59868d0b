//! The parsed grammar's elements and symbols, in the same shape as
//! llama.cpp's rules.

use super::UNSET;

/// Element kinds. A rule is a list of alternatives separated by `Alt` and
/// closed by `End`; a character item is `Char`/`CharNot`/`Any` (or `Dead`)
/// followed by `CharAlt`/`RangeUpper` continuations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    End,
    Alt,
    Ref,
    Char,
    CharNot,
    CharAlt,
    RangeUpper,
    Any,
    Token,
    TokenNot,
    /// A character item that no generated text can match; the value indexes
    /// `dead_sites`.
    Dead,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Elem {
    pub(crate) kind: Kind,
    pub(crate) value: u32,
}

impl Elem {
    pub(crate) fn new(kind: Kind, value: u32) -> Self {
        Elem { kind, value }
    }

    pub(super) fn ends_alternative(self) -> bool {
        matches!(self.kind, Kind::Alt | Kind::End)
    }
}

/// Every rule llama.cpp builds from a grammar, in one arena, for code
/// outside the checker that must follow llama.cpp's parse exactly (the
/// forced-text recognizer in `grammar::forced`).
#[derive(Debug, Clone, Default)]
pub(crate) struct RuleArena {
    /// The rules' elements; rule `id` starts at `starts[id]` and runs to its
    /// `End` (an undefined rule is a lone `End`).
    pub(crate) elems: Vec<Elem>,
    pub(crate) starts: Vec<u32>,
    /// llama.cpp's id of `root`.
    pub(crate) root: u32,
}

/// A symbol: a named rule (defined or only referenced) or a rule llama.cpp
/// generates for a group or a repetition. Its index is llama.cpp's rule id.
#[derive(Debug, Clone)]
pub(super) struct Sym {
    /// Byte range of the name (for generated rules: of the rule they are in).
    pub(super) name_start: u32,
    pub(super) name_end: u32,
    /// Where the (last) definition starts, or where the group / repetition is.
    pub(super) pos: u32,
    /// First reference, for "undefined rule" messages.
    pub(super) first_ref: u32,
    /// Element range in the arena; empty while undefined.
    pub(super) start: u32,
    pub(super) end: u32,
    pub(super) origin: Origin,
    /// Defined more than once.
    pub(super) redefined: bool,
}

/// Where a symbol comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Origin {
    Named,
    Group,
    Repetition,
}

impl Sym {
    pub(super) fn defined(&self) -> bool {
        self.start < self.end
    }
}

/// A character item that can never match.
#[derive(Debug, Clone, Copy)]
pub(super) struct DeadSite {
    pub(super) pos: usize,
    pub(super) is_class: bool,
}

pub(super) fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(UNSET)
}
