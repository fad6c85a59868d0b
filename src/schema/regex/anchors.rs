//! Anchors: the `^` and `$` of top-level alternatives, and the `any*`
//! padding that makes the unanchored ones a search.

use super::ast::Node;
use super::lower::{alt_of, Lang};
use crate::grammar::expr::Expr;
use crate::schema::strings::any_char;

/// How a top-level alternative is anchored.
#[derive(Debug, Clone, Copy)]
pub(super) struct Anchors {
    pub(super) start: bool,
    pub(super) end: bool,
}

/// Strips the leading `^`s and trailing `$`s of a top-level alternative.
pub(super) fn split_anchors(terms: &[Node]) -> (Anchors, &[Node]) {
    let leading = terms
        .iter()
        .take_while(|t| matches!(t, Node::Start(_)))
        .count();
    let rest = terms.get(leading..).unwrap_or_default();
    let trailing = rest
        .iter()
        .rev()
        .take_while(|t| matches!(t, Node::End(_)))
        .count();
    let core = rest.get(..rest.len() - trailing).unwrap_or_default();
    let anchors = Anchors {
        start: leading > 0,
        end: trailing > 0,
    };
    (anchors, core)
}

/// The lowered top-level alternatives, by how they are anchored.
#[derive(Default)]
pub(super) struct AnchorGroups {
    both: Vec<Lang>,
    start_only: Vec<Lang>,
    end_only: Vec<Lang>,
    neither: Vec<Lang>,
}

impl AnchorGroups {
    pub(super) fn add(&mut self, anchors: Anchors, lang: Lang) {
        let group = match (anchors.start, anchors.end) {
            (true, true) => &mut self.both,
            (true, false) => &mut self.start_only,
            (false, true) => &mut self.end_only,
            (false, false) => &mut self.neither,
        };
        group.push(lang);
    }

    /// `any*` around each group's cores as its anchors require; `None` when
    /// no alternative can match.
    pub(super) fn into_expr(self) -> Option<Expr> {
        let any_star = any_char().repeat(0, None);
        let padded = [&self.start_only, &self.end_only, &self.neither];
        if padded
            .iter()
            .any(|group| group.iter().any(|lang| lang.nullable))
        {
            // A padded alternative that matches the empty string matches everything.
            return Some(any_star);
        }
        let mut parts = Vec::new();
        if let Some(core) = alt_of_langs(self.both) {
            parts.push(core);
        }
        if let Some(core) = alt_of_langs(self.start_only) {
            parts.push(Expr::seq([core, any_star.clone()]));
        }
        if let Some(core) = alt_of_langs(self.end_only) {
            parts.push(Expr::seq([any_star.clone(), core]));
        }
        if let Some(core) = alt_of_langs(self.neither) {
            parts.push(Expr::seq([any_star.clone(), core, any_star]));
        }
        (!parts.is_empty()).then(|| alt_of(parts))
    }
}

fn alt_of_langs(langs: Vec<Lang>) -> Option<Expr> {
    (!langs.is_empty()).then(|| alt_of(langs.into_iter().map(|lang| lang.expr).collect()))
}

#[cfg(test)]
mod tests {
    use crate::grammar::expr::Expr;
    use crate::schema::regex::pattern_to_expr;
    use crate::schema::strings::any_char;

    #[test]
    fn gbnf_of_an_unanchored_literal() {
        let any = any_char().repeat(0, None);
        let expected = Expr::seq([any.clone(), Expr::lit("ab"), any]);
        assert_eq!(pattern_to_expr("ab"), Ok(expected));
    }

    #[test]
    fn patterns_matching_everything_are_any_star() {
        let any_star = any_char().repeat(0, None);
        for pattern in ["", "^", "$", "a*", "^(a|b)?", "x?$", "()", "(?:)*", "a{0}"] {
            assert_eq!(pattern_to_expr(pattern), Ok(any_star.clone()), "{pattern}");
        }
    }
}
