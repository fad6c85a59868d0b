//! Lowering the syntax tree to grammar expressions for JSON string content,
//! keeping unbounded repetitions free of bodies that match the empty string.

use crate::hashing::Set;

use super::ast::Node;
use super::{unsupported, RegexError};
use crate::grammar::expr::Expr;
use crate::schema::strings::{char_in, encode_char, CharSet};

/// A non-empty language of JSON string content.
#[derive(Debug)]
pub(super) struct Lang {
    pub(super) expr: Expr,
    /// Whether it contains the empty string.
    pub(super) nullable: bool,
}

impl Lang {
    fn epsilon() -> Self {
        Lang {
            expr: Expr::empty(),
            nullable: true,
        }
    }
}

/// The result of lowering a node.
pub(super) enum Lowered {
    Lang(Lang),
    /// Matches nothing, because of the construct at this byte offset.
    Nothing(usize),
}

fn lower(node: &Node) -> Result<Lowered, RegexError> {
    match node {
        Node::Char(c) => Ok(Lowered::Lang(Lang {
            expr: Expr::lit(encode_char(*c)),
            nullable: false,
        })),
        Node::Set { set, offset } => Ok(lower_set(set, *offset)),
        Node::Seq(items) => lower_seq(items),
        Node::Alt(items) => lower_alt(items),
        Node::Repeat { node, min, max } => lower_repeat(node, *min, *max),
        Node::Start(offset) => Err(unsupported(
            "^ assertion not at the start of a top-level alternative",
            *offset,
        )),
        Node::End(offset) => Err(unsupported(
            "$ assertion not at the end of a top-level alternative",
            *offset,
        )),
        Node::Look { negate, offset, .. } => Err(unsupported(look_feature(*negate), *offset)),
    }
}

/// The name of a lookahead, in messages.
pub(super) fn look_feature(negate: bool) -> &'static str {
    if negate {
        "negative lookahead (?!"
    } else {
        "lookahead (?="
    }
}

fn lower_set(set: &CharSet, offset: usize) -> Lowered {
    if let [(a, b)] = set.ranges() {
        if a == b {
            return Lowered::Lang(Lang {
                expr: Expr::lit(encode_char(*a)),
                nullable: false,
            });
        }
    }
    match char_in(set) {
        Some(expr) => Lowered::Lang(Lang {
            expr,
            nullable: false,
        }),
        None => Lowered::Nothing(offset),
    }
}

/// The items of a sequence or an alternation lowered: the languages of those
/// that match something, and the offset of the first that matches nothing.
fn lower_each(items: &[Node]) -> Result<(Vec<Lang>, Option<usize>), RegexError> {
    let mut langs = Vec::with_capacity(items.len());
    let mut nothing_at = None;
    for item in items {
        match lower(item)? {
            Lowered::Lang(lang) => langs.push(lang),
            Lowered::Nothing(offset) => {
                nothing_at.get_or_insert(offset);
            }
        }
    }
    Ok((langs, nothing_at))
}

pub(super) fn lower_seq(items: &[Node]) -> Result<Lowered, RegexError> {
    let (langs, nothing_at) = lower_each(items)?;
    // One item that matches nothing leaves the sequence nothing to match.
    Ok(match nothing_at {
        Some(offset) => Lowered::Nothing(offset),
        None => Lowered::Lang(Lang {
            nullable: langs.iter().all(|lang| lang.nullable),
            expr: Expr::seq(langs.into_iter().map(|lang| lang.expr)),
        }),
    })
}

fn lower_alt(items: &[Node]) -> Result<Lowered, RegexError> {
    let (langs, nothing_at) = lower_each(items)?;
    if langs.is_empty() {
        return Ok(Lowered::Nothing(nothing_at.unwrap_or(0)));
    }
    Ok(Lowered::Lang(Lang {
        nullable: langs.iter().any(|lang| lang.nullable),
        expr: alt_of(langs.into_iter().map(|lang| lang.expr).collect()),
    }))
}

fn lower_repeat(node: &Node, min: u32, max: Option<u32>) -> Result<Lowered, RegexError> {
    Ok(match lower(node)? {
        Lowered::Lang(lang) => Lowered::Lang(repeat_lang(lang, min, max)),
        Lowered::Nothing(_) if min == 0 => Lowered::Lang(Lang::epsilon()),
        nothing @ Lowered::Nothing(_) => nothing,
    })
}

/// `lang{min,max}`, keeping unbounded repetitions free of nullable bodies.
fn repeat_lang(lang: Lang, min: u32, max: Option<u32>) -> Lang {
    if max == Some(0) || lang.expr == Expr::empty() {
        return Lang::epsilon();
    }
    if max.is_none() && lang.nullable {
        // For nullable X, X{n,} = X*, and X* = (star_body(X))*.
        let mut body = Vec::new();
        star_body(&lang.expr, &mut body);
        if body.is_empty() {
            return Lang::epsilon();
        }
        return Lang {
            expr: alt_of(body).repeat(0, None),
            nullable: true,
        };
    }
    Lang {
        nullable: lang.nullable || min == 0,
        expr: lang.expr.repeat(min, max),
    }
}

/// Non-nullable expressions whose alternation, starred, equals `expr*`.
///
/// For nullable parts: `(A B)* = (A | B)*` and `(A{m,n})* = A*`.
fn star_body(expr: &Expr, out: &mut Vec<Expr>) {
    if !nullable(expr) {
        out.push(expr.clone());
        return;
    }
    match expr {
        Expr::Seq(items) | Expr::Alt(items) => {
            for item in items {
                star_body(item, out);
            }
        }
        Expr::Repeat { expr: inner, .. } => star_body(inner, out),
        // A nullable literal is the empty string; classes and rules are never nullable.
        Expr::Lit(_) | Expr::Class { .. } | Expr::Rule(_) => {}
    }
}

/// Whether `expr` matches the empty string.
pub(super) fn nullable(expr: &Expr) -> bool {
    match expr {
        Expr::Lit(s) => s.is_empty(),
        Expr::Class { .. } | Expr::Rule(_) => false,
        Expr::Seq(items) => items.iter().all(nullable),
        Expr::Alt(items) => items.iter().any(nullable),
        Expr::Repeat { expr, min, .. } => *min == 0 || nullable(expr),
    }
}

/// An alternation, flattened and without duplicates, in linear time
/// ([`Expr::alt`] deduplicates in quadratic time).
pub(super) fn alt_of(items: Vec<Expr>) -> Expr {
    let mut flat = Vec::with_capacity(items.len());
    for item in items {
        match item {
            Expr::Alt(inner) => flat.extend(inner),
            other => flat.push(other),
        }
    }
    let keep: Vec<bool> = {
        let mut seen = Set::with_capacity_and_hasher(flat.len(), Default::default());
        flat.iter().map(|expr| seen.insert(expr)).collect()
    };
    let mut unique: Vec<Expr> = flat
        .into_iter()
        .zip(keep)
        .filter_map(|(expr, keep)| keep.then_some(expr))
        .collect();
    if unique.len() == 1 {
        if let Some(only) = unique.pop() {
            return only;
        }
    }
    Expr::Alt(unique)
}

#[cfg(test)]
mod tests {
    use crate::grammar::expr::Expr;
    use crate::schema::regex::tests::timed;
    use crate::schema::regex::{pattern_to_expr, RegexError, MAX_NESTING};

    #[test]
    fn nullable_bodies_of_unbounded_repeats_are_rewritten() {
        let a = Expr::lit("a");
        let b = Expr::lit("b");
        let ab_star = Expr::alt([a.clone(), b.clone()]).repeat(0, None);
        assert_eq!(pattern_to_expr("^(a?b?)*$"), Ok(ab_star.clone()));
        assert_eq!(pattern_to_expr("^(a*|b)+$"), Ok(ab_star));
        assert_eq!(pattern_to_expr("^(?:a*)*$"), Ok(a.clone().repeat(0, None)));
        assert_eq!(pattern_to_expr("^(?:a{0,3}){2,}$"), Ok(a.repeat(0, None)));
        assert_eq!(pattern_to_expr("^(?:){3,}$"), Ok(Expr::empty()));
        assert_eq!(
            pattern_to_expr("^(?:a?){2,3}$").map(|e| e.to_gbnf()),
            Ok(r#"("a"?){2,3}"#.to_owned())
        );
    }

    #[test]
    fn unsatisfiable_patterns() {
        let nothing = |offset| Err(RegexError::Unsatisfiable { offset });
        assert_eq!(pattern_to_expr("[]"), nothing(0));
        assert_eq!(pattern_to_expr("^a[]b"), nothing(2));
        assert_eq!(pattern_to_expr(r"x[^\s\S]"), nothing(1));
        assert_eq!(pattern_to_expr("[]|a[]"), nothing(0));
        assert_eq!(pattern_to_expr("([]){2}"), nothing(1));
        assert!(pattern_to_expr("^[]?a$").is_ok());
        assert!(pattern_to_expr("^([])*$").is_ok());
    }

    #[test]
    fn the_deepest_accepted_nesting_renders() {
        let deepest = format!("^{}a{}$", "(".repeat(MAX_NESTING), ")*".repeat(MAX_NESTING));
        let expr = timed("deepest", || pattern_to_expr(&deepest));
        assert_eq!(expr.map(|e| e.to_gbnf()), Ok(r#""a"*"#.to_owned()));
        let deepest = format!(
            "^{}a{}$",
            "(b".repeat(MAX_NESTING),
            ")?".repeat(MAX_NESTING)
        );
        let gbnf = pattern_to_expr(&deepest)
            .map(|e| e.to_gbnf())
            .unwrap_or_default();
        assert_eq!(gbnf.matches('?').count(), MAX_NESTING);
    }
}
