//! The shared rules (`value`, `string`, `number`, …) every grammar may use,
//! and the factoring of JSON string escapes into one rule.

use crate::hashing::Set;

use crate::grammar::expr::Expr;
use crate::schema::numeric;
use crate::schema::options::Layout;
use crate::schema::strings;

/// The rule that holds every escape sequence of a JSON string.
pub(super) const ESCAPE_RULE: &str = "char-escape";

/// `expr` with every alternation that lists all JSON string escapes rewritten
/// to use [`ESCAPE_RULE`] instead, which keeps grammars with many character
/// sets (patterns, excluded keys) small.
///
/// Rewrites in place; returns whether `expr` then refers to [`ESCAPE_RULE`].
pub(super) fn factor(expr: &mut Expr, escapes: &[Expr]) -> bool {
    match expr {
        Expr::Alt(items) => {
            let mut mentions = false;
            for item in items.iter_mut() {
                mentions |= factor(item, escapes);
            }
            // The escapes are literals: look at the literal alternatives only.
            let escape_set = escape_literals(escapes);
            let is_escape = |x: &Expr| literal(x).is_some_and(|l| escape_set.contains(l));
            let all_present = items.len() >= escape_set.len() && {
                let present: Set<&str> = items
                    .iter()
                    .filter(|x| is_escape(x))
                    .filter_map(literal)
                    .collect();
                present.len() == escape_set.len()
            };
            if all_present {
                let mut kept: Vec<Expr> = std::mem::take(items)
                    .into_iter()
                    .filter(|x| !is_escape(x))
                    .collect();
                kept.push(Expr::rule(ESCAPE_RULE));
                *expr = Expr::alt(kept);
                return true;
            }
            mentions
        }
        Expr::Seq(items) => items
            .iter_mut()
            .fold(false, |mentions, x| factor(x, escapes) | mentions),
        Expr::Repeat { expr, .. } => factor(expr, escapes),
        Expr::Rule(name) => name == ESCAPE_RULE,
        Expr::Lit(_) | Expr::Class { .. } => false,
    }
}

/// The escape literals as a set, built once.
fn escape_literals(escapes: &[Expr]) -> &'static Set<String> {
    static SET: std::sync::OnceLock<Set<String>> = std::sync::OnceLock::new();
    SET.get_or_init(|| {
        escapes
            .iter()
            .filter_map(literal)
            .map(str::to_owned)
            .collect()
    })
}

fn literal(expr: &Expr) -> Option<&str> {
    match expr {
        Expr::Lit(s) => Some(s),
        _ => None,
    }
}
pub(super) fn is_shared(name: &str) -> bool {
    matches!(
        name,
        "value"
            | "object"
            | "array"
            | "string"
            | "char"
            | "char-escape"
            | "number"
            | "integer"
            | "boolean"
            | "root"
    )
}

pub(super) fn shared_deps(name: &str) -> &'static [&'static str] {
    match name {
        "value" => &["object", "array", "string", "number", "boolean"],
        "object" | "array" => &["value", "string"],
        "string" => &["char"],
        _ => &[],
    }
}

pub(super) fn shared_rule(name: &str, layout: &Layout) -> Expr {
    let (item_sep, key_sep) = (
        layout.item_separator.as_str(),
        layout.key_separator.as_str(),
    );
    let digit = || Expr::class(&[('0', '9')]);
    let int_part = || {
        Expr::alt([
            Expr::lit("0"),
            Expr::seq([
                Expr::class(&[('1', '9')]),
                digit().repeat(0, Some(numeric::MAX_INT_DIGITS as u32 - 1)),
            ]),
        ])
    };
    match name {
        "value" => Expr::alt(
            ["object", "array", "string", "number", "boolean"]
                .map(Expr::rule)
                .into_iter()
                .chain([Expr::lit("null")]),
        ),
        "object" => {
            let member = Expr::seq([
                Expr::rule("string"),
                Expr::lit(key_sep),
                Expr::rule("value"),
            ]);
            Expr::seq([
                Expr::lit("{"),
                Expr::seq([
                    member.clone(),
                    Expr::seq([Expr::lit(item_sep), member]).repeat(0, None),
                ])
                .opt(),
                Expr::lit("}"),
            ])
        }
        "array" => Expr::seq([
            Expr::lit("["),
            Expr::seq([
                Expr::rule("value"),
                Expr::seq([Expr::lit(item_sep), Expr::rule("value")]).repeat(0, None),
            ])
            .opt(),
            Expr::lit("]"),
        ]),
        "string" => Expr::seq([
            Expr::lit("\""),
            Expr::rule("char").repeat(0, None),
            Expr::lit("\""),
        ]),
        "char" => strings::any_char(),
        "number" => Expr::seq([
            Expr::lit("-").opt(),
            int_part(),
            Expr::seq([
                Expr::lit("."),
                digit().repeat(1, Some(numeric::MAX_FRAC_DIGITS as u32)),
            ])
            .opt(),
            Expr::seq([
                Expr::class(&[('E', 'E'), ('e', 'e')]),
                Expr::class(&[('+', '+'), ('-', '-')]).opt(),
                digit().repeat(1, Some(2)),
            ])
            .opt(),
        ]),
        "integer" => Expr::seq([Expr::lit("-").opt(), int_part()]),
        "boolean" => Expr::alt([Expr::lit("true"), Expr::lit("false")]),
        _ => Expr::empty(),
    }
}
