//! Arrays and counted repetition.

use super::Emitter;
use crate::grammar::expr::Expr;
use crate::schema::ir::ArrNode;

/// Repetitions longer than this are decomposed into blocks, so that
/// llama.cpp's expansion of `x{m,n}` stays shallow.
const BLOCK: u32 = 64;
impl Emitter<'_> {
    pub(super) fn array(&mut self, a: &ArrNode, hint: &str) -> Result<Option<Expr>, String> {
        let mut elems = Vec::with_capacity(a.prefix.len());
        let mut max = a.max_items;
        for (i, p) in a.prefix.iter().enumerate() {
            match self.expr(p, &format!("{hint}-{i}"))? {
                Some(x) => elems.push(x),
                None => {
                    max = Some(max.map_or(i as u64, |m| m.min(i as u64)));
                    break;
                }
            }
        }
        let items = if elems.len() == a.prefix.len() {
            self.expr(&a.items, &format!("{hint}-item"))?
        } else {
            None
        };
        if items.is_none() {
            let cap = elems.len() as u64;
            max = Some(max.map_or(cap, |m| m.min(cap)));
        }
        if max.is_some_and(|m| m < a.min_items) {
            return Ok(None);
        }
        let body = array_body(
            &elems,
            items.as_ref(),
            a.min_items,
            max,
            &self.layout.item_separator,
        );
        let name = self.fresh(hint);
        self.define(
            name.clone(),
            Expr::seq([Expr::lit("["), body, Expr::lit("]")]),
        );
        Ok(Some(Expr::rule(name)))
    }
}

/// The elements of an array between `[` and `]`: `elems` first (each may be
/// the last), then `items` repeated, `min..=max` elements in all, `sep`
/// between elements.
pub(super) fn array_body(
    elems: &[Expr],
    items: Option<&Expr>,
    min: u64,
    max: Option<u64>,
    sep: &str,
) -> Expr {
    // Built from the back: `from(i)` is the language of elements i.. given i elements written.
    let total_cap = max;
    let mut rest: Option<Expr> = None; // elements after the prefix
    let p = elems.len() as u64;
    if let Some(item) = items {
        let lo = min.saturating_sub(p);
        let hi = total_cap.map(|m| m.saturating_sub(p));
        if hi != Some(0) {
            let with_sep = Expr::seq([Expr::lit(sep), item.clone()]);
            rest = Some(if p == 0 {
                // No prefix: the first item has no separator.
                let hi_more = hi.map(|h| h.saturating_sub(1));
                let some = Expr::seq([
                    item.clone(),
                    repeat(with_sep, lo.saturating_sub(1), hi_more),
                ]);
                if lo == 0 {
                    some.opt()
                } else {
                    some
                }
            } else {
                repeat(with_sep, lo, hi)
            });
        }
    }
    let mut acc = rest.unwrap_or_else(Expr::empty);
    for i in (0..elems.len()).rev() {
        let sep = if i == 0 { "" } else { sep };
        let here = Expr::seq([Expr::lit(sep), elems[i].clone(), acc]);
        let within_max = total_cap.is_none_or(|m| (i as u64) < m);
        acc = if !within_max {
            Expr::empty()
        } else if (i as u64) < min {
            here
        } else {
            here.opt()
        };
    }
    acc
}

/// `x` repeated `min..=max` times, decomposed into blocks when large.
pub fn repeat(x: Expr, min: u64, max: Option<u64>) -> Expr {
    let small = |n: u64| u32::try_from(n).unwrap_or(u32::MAX);
    let block = u64::from(BLOCK);
    let exactly = |x: &Expr, n: u64| -> Expr {
        if n <= block {
            x.clone().repeat(small(n), Some(small(n)))
        } else {
            Expr::seq([
                x.clone()
                    .repeat(BLOCK, Some(BLOCK))
                    .repeat(small(n / block), Some(small(n / block))),
                x.clone().repeat(small(n % block), Some(small(n % block))),
            ])
        }
    };
    let head = exactly(&x, min);
    let tail = match max {
        None => x.repeat(0, None),
        Some(m) => {
            let k = m.saturating_sub(min);
            if k <= block {
                x.repeat(0, Some(small(k)))
            } else {
                let (q, r) = (k / block, k % block);
                let full = x.clone().repeat(BLOCK, Some(BLOCK));
                Expr::alt([
                    Expr::seq([
                        full.clone().repeat(0, Some(small(q - 1))),
                        x.clone().repeat(0, Some(BLOCK - 1)),
                    ]),
                    Expr::seq([
                        full.repeat(small(q), Some(small(q))),
                        x.repeat(0, Some(small(r))),
                    ]),
                ])
            }
        }
    };
    Expr::seq([head, tail])
}
