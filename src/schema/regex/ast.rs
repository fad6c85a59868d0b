//! The syntax tree a pattern parses into, over decoded characters, and the
//! ECMAScript character sets of `\d`, `\w`, `\s` and `.`.

use crate::schema::strings::CharSet;

/// A parsed pattern fragment, over decoded characters.
#[derive(Debug, Clone)]
pub(super) enum Node {
    Char(char),
    Set {
        set: CharSet,
        offset: usize,
    },
    Seq(Vec<Node>),
    Alt(Vec<Node>),
    Repeat {
        node: Box<Node>,
        min: u32,
        max: Option<u32>,
    },
    /// `^`, at this byte offset.
    Start(usize),
    /// `$`, at this byte offset.
    End(usize),
    /// `(?=node)`, or `(?!node)` when `negate`, at this byte offset.
    Look {
        node: Box<Node>,
        negate: bool,
        offset: usize,
    },
}

impl Node {
    /// Whether an assertion (`^`, `$`, a lookahead) occurs in it.
    pub(super) fn has_assertion(&self) -> bool {
        match self {
            Node::Char(_) | Node::Set { .. } => false,
            Node::Seq(items) | Node::Alt(items) => items.iter().any(Node::has_assertion),
            Node::Repeat { node, .. } => node.has_assertion(),
            Node::Start(_) | Node::End(_) | Node::Look { .. } => true,
        }
    }
}

/// What an escape or a class member stands for.
pub(super) enum Atom {
    Char(char),
    Set(CharSet),
}

/// The alternatives of a disjunction, each a list of terms.
pub(super) type Alternatives = Vec<Vec<Node>>;

pub(super) fn node_from_alternatives(mut alternatives: Alternatives) -> Node {
    if alternatives.len() == 1 {
        if let Some(terms) = alternatives.pop() {
            return node_from_terms(terms);
        }
    }
    Node::Alt(alternatives.into_iter().map(node_from_terms).collect())
}

fn node_from_terms(mut terms: Vec<Node>) -> Node {
    if terms.len() == 1 {
        if let Some(term) = terms.pop() {
            return term;
        }
    }
    Node::Seq(terms)
}

// ---------------------------------------------------------------------------
// Character sets

pub(super) fn digit_set() -> CharSet {
    CharSet::from_ranges([('0', '9')])
}

pub(super) fn word_set() -> CharSet {
    CharSet::from_ranges([('0', '9'), ('A', 'Z'), ('_', '_'), ('a', 'z')])
}

/// ECMAScript `\s`: WhiteSpace and LineTerminator.
pub(super) fn space_set() -> CharSet {
    CharSet::from_ranges([
        ('\t', '\r'),
        (' ', ' '),
        ('\u{a0}', '\u{a0}'),
        ('\u{1680}', '\u{1680}'),
        ('\u{2000}', '\u{200a}'),
        ('\u{2028}', '\u{2029}'),
        ('\u{202f}', '\u{202f}'),
        ('\u{205f}', '\u{205f}'),
        ('\u{3000}', '\u{3000}'),
        ('\u{feff}', '\u{feff}'),
    ])
}

/// ECMAScript `.` without the `s` flag: anything but a line terminator.
pub(super) fn dot_set() -> CharSet {
    CharSet::from_ranges([('\n', '\n'), ('\r', '\r'), ('\u{2028}', '\u{2029}')]).complement()
}
