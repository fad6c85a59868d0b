//! The parsed grammar's elements and symbols, in the same shape as
//! llama.cpp's rules.

use super::UNSET;

/// Element kinds. A rule is a list of alternatives separated by `Alt` and
/// closed by `End`; a character item is `Char`/`CharNot`/`Any` (or `Dead`)
/// followed by `CharAlt`/`RangeUpper` continuations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
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

#[derive(Debug, Clone, Copy)]
pub(super) struct Elem {
    pub(super) kind: Kind,
    pub(super) value: u32,
}

impl Elem {
    pub(super) fn new(kind: Kind, value: u32) -> Self {
        Elem { kind, value }
    }

    pub(super) fn ends_alternative(self) -> bool {
        matches!(self.kind, Kind::Alt | Kind::End)
    }
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
