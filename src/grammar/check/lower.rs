//! A checked grammar written out as plain BNF: the rules llama.cpp builds
//! from it (groups and repetitions already expanded into rules of their
//! own, the last definition of a redefined rule), each a list of
//! alternatives of string literals, character classes and rule references.
//!
//! That subset is read the same way by every GBNF-like engine — xgrammar
//! (vLLM, SGLang) included, whose syntax differs from llama.cpp's at the
//! edges (no `.`, no empty alternative, `\x` with any number of digits, no
//! stacked quantifiers, no token items) — so a grammar written out this way
//! means exactly what llama.cpp enforces. Every character that is not a
//! letter, a digit or a space is written as `\uHHHH` / `\UHHHHHHHH`, the one
//! escape both read alike.

use std::fmt::Write;

use super::elements::{Elem, Kind};
use super::rules::Grammar;

/// Why a grammar has no plain-BNF form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LowerError {
    #[error("it uses token items (<[id]>, <text>), which name tokens of one model's vocabulary")]
    Tokens,
    #[error("{0}")]
    Invalid(String),
}

/// `grammar` (checked) as plain BNF whose start rule is `root`.
pub(super) fn plain_bnf(grammar: &Grammar<'_>, root: usize) -> Result<String, LowerError> {
    let name = |id: usize| {
        if id == root {
            "root".to_owned()
        } else {
            format!("r{id}")
        }
    };
    let mut out = String::new();
    for id in 0..grammar.syms.len() {
        let elems = grammar.elems(id);
        if elems.is_empty() {
            continue;
        }
        let _ = write!(out, "{} ::=", name(id));
        let mut alternatives = Vec::new();
        let mut current = Vec::new();
        let mut i = 0;
        while i < elems.len() {
            let elem = elems[i];
            match elem.kind {
                Kind::End => break,
                Kind::Alt => {
                    alternatives.push(std::mem::take(&mut current));
                    i += 1;
                }
                Kind::Ref => {
                    current.push(Piece::Rule(name(elem.value as usize)));
                    i += 1;
                }
                Kind::Char | Kind::CharNot | Kind::Any => {
                    let end = elems[i + 1..]
                        .iter()
                        .position(|e| !matches!(e.kind, Kind::CharAlt | Kind::RangeUpper))
                        .map_or(elems.len(), |n| i + 1 + n);
                    current.push(char_item(&elems[i..end])?);
                    i = end;
                }
                Kind::Token | Kind::TokenNot => return Err(LowerError::Tokens),
                Kind::CharAlt | Kind::RangeUpper | Kind::Dead => {
                    return Err(LowerError::Invalid(
                        "a character item with no start".to_owned(),
                    ))
                }
            }
        }
        alternatives.push(current);
        let written: Vec<String> = alternatives.iter().map(|a| sequence(a)).collect();
        let _ = writeln!(out, " {}", written.join(" | "));
    }
    Ok(out)
}

/// One item of a sequence.
enum Piece {
    /// A single character, merged with its neighbours into one literal.
    Char(u32),
    Class(String),
    Rule(String),
}

fn sequence(pieces: &[Piece]) -> String {
    if pieces.is_empty() {
        return "\"\"".to_owned();
    }
    let mut parts = Vec::new();
    let mut literal = String::new();
    for piece in pieces {
        match piece {
            Piece::Char(c) => literal.push_str(&escaped(*c)),
            other => {
                if !literal.is_empty() {
                    parts.push(format!("\"{}\"", std::mem::take(&mut literal)));
                }
                match other {
                    Piece::Class(c) => parts.push(c.clone()),
                    Piece::Rule(r) => parts.push(r.clone()),
                    Piece::Char(_) => {}
                }
            }
        }
    }
    if !literal.is_empty() {
        parts.push(format!("\"{literal}\""));
    }
    parts.join(" ")
}

/// A character item: `Char` alone is a literal character; otherwise a
/// class (`CharNot` negated, `Any` any character).
fn char_item(elems: &[Elem]) -> Result<Piece, LowerError> {
    let first = elems[0];
    if first.kind == Kind::Char && elems.len() == 1 {
        return Ok(Piece::Char(first.value));
    }
    if first.kind == Kind::Any {
        return Ok(Piece::Class("[^]".to_owned()));
    }
    let mut class = String::from(if first.kind == Kind::CharNot {
        "[^"
    } else {
        "["
    });
    let mut i = 0;
    while i < elems.len() {
        let low = elems[i].value;
        class.push_str(&escaped(low));
        if let Some(upper) = elems.get(i + 1).filter(|e| e.kind == Kind::RangeUpper) {
            class.push('-');
            class.push_str(&escaped(upper.value));
            i += 1;
        }
        i += 1;
        if let Some(next) = elems.get(i) {
            if next.kind != Kind::CharAlt {
                return Err(LowerError::Invalid(
                    "a character class item out of order".to_owned(),
                ));
            }
        }
    }
    class.push(']');
    Ok(Piece::Class(class))
}

/// A character as both dialects read it alike.
fn escaped(c: u32) -> String {
    match char::from_u32(c) {
        Some(ch) if ch.is_ascii_alphanumeric() || ch == ' ' => ch.to_string(),
        _ if c <= 0xFFFF => format!("\\u{c:04X}"),
        _ => format!("\\U{c:08X}"),
    }
}

#[cfg(test)]
mod tests {
    use super::super::plain_bnf;
    use super::LowerError;

    #[test]
    fn groups_repetitions_and_classes_become_plain_rules() {
        let bnf =
            plain_bnf("root ::= (\"a\" | ) [x-z\\x41]+ item* .\nitem ::= [^\"\\\\] \"\\u00e9\"\n")
                .unwrap();
        // No construct xgrammar reads differently is left.
        assert!(!bnf.contains('.'), "{bnf}");
        assert!(!bnf.contains("\\x"), "{bnf}");
        assert!(!bnf.contains("| |") && !bnf.contains("::= |"), "{bnf}");
        assert!(!bnf.contains('*') && !bnf.contains('+'), "{bnf}");
        assert!(bnf.contains("[^]"), "{bnf}");
        assert!(bnf.contains("[x-zA]"), "{bnf}");
        assert!(bnf.contains("[^\\u0022\\u005C]"), "{bnf}");
        assert!(bnf.contains("\"\\u00E9\""), "{bnf}");
        assert!(
            bnf.starts_with("root ::=") || bnf.contains("\nroot ::="),
            "{bnf}"
        );
        // And it is a grammar llama.cpp's dialect reads too.
        crate::grammar::check::check(&bnf).unwrap();
    }

    #[test]
    fn token_items_have_no_plain_form() {
        assert_eq!(plain_bnf("root ::= <[12]> \"a\""), Err(LowerError::Tokens));
        assert!(matches!(
            plain_bnf("root ::= undefined"),
            Err(LowerError::Invalid(_))
        ));
    }
}
