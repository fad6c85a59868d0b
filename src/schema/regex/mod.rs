//! JSON Schema `pattern` (an ECMAScript regular expression without flags) to
//! an exact grammar expression for the *content* of a JSON string: the text
//! between the quotes, in canonical JSON encoding, whose decoded value matches
//! the pattern.
//!
//! The translation works on decoded characters and maps each one through
//! [`encode_char`] / [`char_in`]; canonical JSON encoding is a prefix-free code,
//! so the image of the pattern's language is exact: sound and complete.
//!
//! Semantics, as JSON Schema uses the pattern:
//! - The match is an unanchored search. `^` at the start and `$` at the end of
//!   a top-level alternative anchor that alternative; anchors anywhere else are
//!   [`RegexError::Unsupported`].
//! - Characters are Unicode code points (as with the `u` flag): `.` and classes
//!   match one code point, and a surrogate pair written as two `\uHHHH`
//!   escapes is one character. A lone surrogate escape, whose meaning depends
//!   on that choice, is unsupported.
//! - The syntax is the non-`u` one with Annex B leniencies: a `{` that does not
//!   start a quantifier, and a stray `]` or `}`, are literals; `-` next to a
//!   class escape inside a class is a literal. Identity escapes of letters
//!   (`\a`, `\z`, which other regex dialects read differently) are unsupported.
//! - Lazy quantifiers denote the same language as greedy ones. A repetition
//!   maximum above [`MAX_REPEAT`] is lowered to it (a smaller language, still
//!   sound); a minimum above it is [`RegexError::TooLarge`].
//!
//! Grammar safety: an unbounded repetition never gets a body that matches the
//! empty string (llama.cpp rejects such rules as left-recursive), and group
//! nesting is limited to [`MAX_NESTING`] so that neither this parser nor the
//! consumers of the resulting [`Expr`] recurse without bound.
//!
//! [`encode_char`]: crate::schema::strings::encode_char
//! [`char_in`]: crate::schema::strings::char_in

// How the pieces fit: `parser` reads the pattern into the syntax tree of
// `ast`; `anchors` splits the `^` and `$` off each top-level alternative;
// `lower` turns the rest into grammar expressions. The tests that compare
// whole patterns with a reference engine are in `tests`.
mod anchors;
mod assertions;
mod ast;
mod lower;
mod parser;

use crate::grammar::expr::Expr;
use anchors::{split_anchors, AnchorGroups};
use lower::{lower_seq, Lowered};
use parser::Parser;

/// Why a pattern cannot be turned into a grammar expression.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum RegexError {
    /// A valid ECMAScript construct that has no exact grammar translation here.
    #[error("unsupported regex feature {feature} at offset {offset}")]
    Unsupported {
        /// What the construct is.
        feature: &'static str,
        /// Byte offset of the construct in the pattern.
        offset: usize,
    },
    /// Not a valid ECMAScript regular expression.
    #[error("invalid regex at offset {offset}: {message}")]
    Syntax {
        /// What is wrong.
        message: String,
        /// Byte offset of the offending construct in the pattern.
        offset: usize,
    },
    /// A repetition minimum above [`MAX_REPEAT`].
    #[error("regex repetition {count} exceeds the limit {limit}")]
    TooLarge {
        /// The minimum as written (saturated at `u64::MAX`).
        count: u64,
        /// [`MAX_REPEAT`].
        limit: u32,
    },
    /// Groups nested deeper than [`MAX_NESTING`].
    #[error("regex groups nested deeper than {limit} at offset {offset}")]
    TooDeep {
        /// Byte offset of the first group past the limit.
        offset: usize,
        /// [`MAX_NESTING`].
        limit: usize,
    },
    /// The pattern matches no string at all (e.g. `[]`), so no grammar exists.
    #[error("regex matches no string; see the construct at offset {offset}")]
    Unsatisfiable {
        /// Byte offset of a construct that matches nothing.
        offset: usize,
    },
}

fn syntax(message: &str, offset: usize) -> RegexError {
    RegexError::Syntax {
        message: message.to_owned(),
        offset,
    }
}

fn unsupported(feature: &'static str, offset: usize) -> RegexError {
    RegexError::Unsupported { feature, offset }
}
/// The largest repetition count kept in a grammar.
pub const MAX_REPEAT: u32 = 1000;

/// The deepest group nesting accepted.
pub const MAX_NESTING: usize = 100;

/// Expression for JSON string content whose value matches `pattern` (JSON
/// Schema semantics: unanchored search).
pub fn pattern_to_expr(pattern: &str) -> Result<Expr, RegexError> {
    let alternatives = Parser::new(pattern).parse_pattern()?;
    let mut groups = AnchorGroups::default();
    let mut nothing_at = None;
    for terms in &alternatives {
        let (anchors, core) = split_anchors(terms);
        match lower_seq(core)? {
            Lowered::Lang(lang) => groups.add(anchors, lang),
            Lowered::Nothing(offset) => {
                nothing_at.get_or_insert(offset);
            }
        }
    }
    groups.into_expr().ok_or(RegexError::Unsatisfiable {
        offset: nothing_at.unwrap_or(0),
    })
}

#[cfg(test)]
mod tests;

/// The language of the string values that `pattern` matches (JSON Schema
/// semantics: unanchored search), for combining it with other constraints.
pub fn pattern_to_re(pattern: &str) -> Result<crate::schema::lang::Re, RegexError> {
    use crate::schema::lang::Re;
    let alternatives = Parser::new(pattern).parse_pattern()?;
    if has_inner_assertion(&alternatives) {
        return assertions::search_re(alternatives);
    }
    let mut out = Vec::with_capacity(alternatives.len());
    for terms in &alternatives {
        let (anchors, core) = split_anchors(terms);
        let mut seq = Vec::with_capacity(core.len() + 2);
        if !anchors.start {
            seq.push(Re::any_string());
        }
        for term in core {
            seq.push(to_re(term)?);
        }
        if !anchors.end {
            seq.push(Re::any_string());
        }
        out.push(Re::Seq(seq));
    }
    Ok(Re::Alt(out))
}

fn to_re(node: &ast::Node) -> Result<crate::schema::lang::Re, RegexError> {
    use crate::schema::lang::Re;
    use crate::schema::strings::CharSet;
    Ok(match node {
        ast::Node::Char(c) => Re::Set(CharSet::single(*c)),
        ast::Node::Set { set, .. } => Re::Set(set.clone()),
        ast::Node::Seq(items) => Re::Seq(items.iter().map(to_re).collect::<Result<_, _>>()?),
        ast::Node::Alt(items) => Re::Alt(items.iter().map(to_re).collect::<Result<_, _>>()?),
        ast::Node::Repeat { node, min, max } => Re::Repeat(Box::new(to_re(node)?), *min, *max),
        ast::Node::Start(offset) => {
            return Err(unsupported(
                "^ assertion not at the start of a top-level alternative",
                *offset,
            ))
        }
        ast::Node::End(offset) => {
            return Err(unsupported(
                "$ assertion not at the end of a top-level alternative",
                *offset,
            ))
        }
        ast::Node::Look { negate, offset, .. } => {
            return Err(unsupported(lower::look_feature(*negate), *offset))
        }
    })
}

/// Whether an assertion occurs other than as the leading `^` or trailing
/// `$` of a top-level alternative.
fn has_inner_assertion(alternatives: &ast::Alternatives) -> bool {
    alternatives.iter().any(|terms| {
        let (_, core) = split_anchors(terms);
        core.iter().any(ast::Node::has_assertion)
    })
}

/// Whether `pattern` has assertions that only its language
/// ([`pattern_to_re`]) can express, not [`pattern_to_expr`]: a `^` or `$`
/// inside a group, a lookahead. An invalid pattern has none.
pub fn needs_automaton(pattern: &str) -> bool {
    Parser::new(pattern)
        .parse_pattern()
        .is_ok_and(|alternatives| has_inner_assertion(&alternatives))
}

/// A lower bound on the length of the strings `pattern` matches (under
/// search semantics, the shortest match of its least demanding
/// alternative; lookaheads count as reading nothing). `None` for an invalid
/// pattern.
pub fn shortest_match(pattern: &str) -> Option<u64> {
    let alternatives = Parser::new(pattern).parse_pattern().ok()?;
    alternatives
        .iter()
        .map(|terms| {
            let (_, core) = split_anchors(terms);
            core.iter()
                .map(assertions::shortest)
                .fold(0, u64::saturating_add)
        })
        .min()
}

/// Checks that `pattern` can be enforced: as a grammar expression, or as a
/// language when it has assertions inside it.
pub fn check(pattern: &str) -> Result<(), RegexError> {
    if needs_automaton(pattern) {
        pattern_to_re(pattern).map(|_| ())
    } else {
        pattern_to_expr(pattern).map(|_| ())
    }
}
