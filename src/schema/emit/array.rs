//! Arrays and counted repetition.

use super::Emitter;
use crate::grammar::expr::Expr;
use crate::schema::ir::{self, ArrNode, Contains};

/// Repetitions longer than this are decomposed into blocks, so that
/// llama.cpp's expansion of `x{m,n}` stays shallow.
const BLOCK: u32 = 64;

/// Most cases (items written, matching items counted) an array with
/// `contains` is written as, one rule each.
pub const MAX_COUNT_STATES: u64 = 1024;

impl Emitter<'_> {
    pub(super) fn array(&mut self, a: &ArrNode, hint: &str) -> Result<Option<Expr>, String> {
        if let Some(c) = &a.contains {
            return self.counted_array(a, c, hint);
        }
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

impl Emitter<'_> {
    /// An array with `contains`: its items written one by one through the
    /// cases (items so far, matching items so far), each a rule; an item
    /// either matches (`items` and `contains`) or is any item (without
    /// `maxContains`) or one that does not match (with it). Only cases from
    /// which the array can still be closed are written, so generation never
    /// reaches a dead end. The parser refuses `contains` beside a tuple.
    fn counted_array(
        &mut self,
        a: &ArrNode,
        c: &Contains,
        hint: &str,
    ) -> Result<Option<Expr>, String> {
        let merge = |x: &crate::schema::ir::Node, keyword: &str| {
            ir::intersect(&a.items, x, self.defs)
                .map_err(|e| format!("\"{keyword}\" cannot be combined with \"items\": {e}"))
        };
        let inside = merge(&c.node, "contains")?;
        let other = match (&c.max, &c.outside) {
            (None, _) => (*a.items).clone(),
            (Some(_), Some(outside)) => merge(outside, "maxContains")?,
            (Some(_), None) => {
                return Err("internal: maxContains without its complement".to_owned())
            }
        };
        let yes = self.expr(&inside, &format!("{hint}-match"))?;
        let no = self.expr(&other, &format!("{hint}-item"))?;
        let (lo, hi) = (a.min_items, a.max_items);
        let items_cap = hi.unwrap_or(lo.max(1));
        let count_cap = c.max.unwrap_or(c.min);
        let states = (items_cap + 1).saturating_mul(count_cap + 1);
        if states > MAX_COUNT_STATES {
            return Err(format!(
                "\"contains\" with these counts needs {states} cases of (items, matching items), more than the {MAX_COUNT_STATES} a grammar is written with"
            ));
        }
        let width = count_cap as usize + 1;
        let id = |i: u64, j: u64| (i as usize) * width + j as usize;
        let accepting = |i: u64, j: u64| i >= lo && j >= c.min;
        // The cases after one more item: matching, then not.
        let next = |i: u64, j: u64| -> [Option<(u64, u64)>; 2] {
            if hi.is_some_and(|h| i >= h) {
                return [None, None];
            }
            let i2 = (i + 1).min(items_cap);
            // Past the count needed (without a maximum) any item will do:
            // the other kind of item is then every item.
            let matching = (yes.is_some() && j < count_cap).then_some((i2, j + 1));
            let other = no.is_some().then_some((i2, j));
            [matching, other]
        };
        // Cases from which the array can be closed.
        let mut live = vec![false; states as usize];
        loop {
            let mut changed = false;
            for i in 0..=items_cap {
                for j in 0..=count_cap {
                    if live[id(i, j)] {
                        continue;
                    }
                    let ok = accepting(i, j)
                        || next(i, j).iter().flatten().any(|&(a, b)| live[id(a, b)]);
                    if ok {
                        live[id(i, j)] = true;
                        changed = true;
                    }
                }
            }
            if !changed {
                break;
            }
        }
        if !live[id(0, 0)] {
            return Ok(None);
        }
        let mut names: Vec<Option<String>> = vec![None; states as usize];
        let mut pending = vec![(0u64, 0u64)];
        names[0] = Some(self.fresh(&format!("{hint}-count")));
        let sep = self.layout.item_separator.clone();
        while let Some((i, j)) = pending.pop() {
            let mut alts = Vec::new();
            if accepting(i, j) {
                alts.push(Expr::empty());
            }
            let [matching, other] = next(i, j);
            for (target, item) in [(matching, &yes), (other, &no)] {
                let (Some((a, b)), Some(item)) = (target, item) else {
                    continue;
                };
                if !live[id(a, b)] {
                    continue;
                }
                let name = match &names[id(a, b)] {
                    Some(n) => n.clone(),
                    None => {
                        let n = self.fresh(&format!("{hint}-count"));
                        names[id(a, b)] = Some(n.clone());
                        pending.push((a, b));
                        n
                    }
                };
                let lead = if i == 0 {
                    Expr::empty()
                } else {
                    Expr::lit(&sep)
                };
                alts.push(Expr::seq([lead, item.clone(), Expr::rule(name)]));
            }
            if let Some(name) = names[id(i, j)].clone() {
                self.define(name, Expr::alt(alts));
            }
        }
        let start = names[0].clone().unwrap_or_default();
        let name = self.fresh(hint);
        self.define(
            name.clone(),
            Expr::seq([Expr::lit("["), Expr::rule(start), Expr::lit("]")]),
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
