//! Numeric bounds and ranges (`minimum`, `maximum`, `exclusiveMinimum`,
//! `exclusiveMaximum`): the one home of comparing, tightening, flipping and
//! intersecting them, used by the parser, the IR's reasoning and the grammar
//! builder alike.

use super::decimal::Decimal;

/// One numeric bound of a JSON Schema.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Bound {
    /// `minimum` / `maximum`: the value itself is allowed.
    Inclusive(Decimal),
    /// `exclusiveMinimum` / `exclusiveMaximum`: the value itself is not.
    Exclusive(Decimal),
}

impl Bound {
    /// The bound's value.
    pub fn value(&self) -> &Decimal {
        match self {
            Bound::Inclusive(d) | Bound::Exclusive(d) => d,
        }
    }

    /// Whether the bound's value itself is in range.
    pub fn is_inclusive(&self) -> bool {
        matches!(self, Bound::Inclusive(_))
    }

    /// The bound on the other side of its value: `>= v` becomes `< v`.
    pub fn flipped(&self) -> Bound {
        match self {
            Bound::Inclusive(d) => Bound::Exclusive(d.clone()),
            Bound::Exclusive(d) => Bound::Inclusive(d.clone()),
        }
    }

    /// Whether every number allowed by this upper bound is below every number
    /// allowed by the lower bound `lower` (no number satisfies both).
    pub fn is_below(&self, lower: &Bound) -> bool {
        let (h, l) = (self.value(), lower.value());
        h < l || (h == l && (!self.is_inclusive() || !lower.is_inclusive()))
    }

    /// Whether `d` satisfies this bound taken as a lower bound.
    pub fn admits_above(&self, d: &Decimal) -> bool {
        match self {
            Bound::Inclusive(m) => d >= m,
            Bound::Exclusive(m) => d > m,
        }
    }

    /// Whether `d` satisfies this bound taken as an upper bound.
    pub fn admits_below(&self, d: &Decimal) -> bool {
        match self {
            Bound::Inclusive(m) => d <= m,
            Bound::Exclusive(m) => d < m,
        }
    }

    /// The tighter of two lower bounds.
    pub fn tighter_lower(a: Option<Bound>, b: Option<Bound>) -> Option<Bound> {
        match (a, b) {
            (None, x) | (x, None) => x,
            (Some(x), Some(y)) => {
                let (vx, vy) = (x.value(), y.value());
                Some(if vx > vy || (vx == vy && !x.is_inclusive()) {
                    x
                } else {
                    y
                })
            }
        }
    }

    /// The tighter of two upper bounds.
    pub fn tighter_upper(a: Option<Bound>, b: Option<Bound>) -> Option<Bound> {
        match (a, b) {
            (None, x) | (x, None) => x,
            (Some(x), Some(y)) => {
                let (vx, vy) = (x.value(), y.value());
                Some(if vx < vy || (vx == vy && !x.is_inclusive()) {
                    x
                } else {
                    y
                })
            }
        }
    }

    /// The bound as the schema keyword that writes it and its value
    /// (`minimum 3`, `exclusiveMaximum 5`, `no minimum`), for messages.
    pub fn describe(bound: Option<&Bound>, lower: bool) -> String {
        let (inclusive, exclusive) = if lower {
            ("minimum", "exclusiveMinimum")
        } else {
            ("maximum", "exclusiveMaximum")
        };
        match bound {
            None => format!("no {inclusive}"),
            Some(Bound::Inclusive(d)) => format!("{inclusive} {d}"),
            Some(Bound::Exclusive(d)) => format!("{exclusive} {d}"),
        }
    }
}

/// Numeric bounds, each optional.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NumRange {
    pub min: Option<Bound>,
    pub max: Option<Bound>,
}

impl NumRange {
    /// The numbers in both ranges.
    pub fn intersect(&self, other: &NumRange) -> NumRange {
        NumRange {
            min: Bound::tighter_lower(self.min.clone(), other.min.clone()),
            max: Bound::tighter_upper(self.max.clone(), other.max.clone()),
        }
    }

    /// Whether `d` is in the range.
    pub fn contains(&self, d: &Decimal) -> bool {
        self.min.as_ref().is_none_or(|b| b.admits_above(d))
            && self.max.as_ref().is_none_or(|b| b.admits_below(d))
    }

    /// The integers in the range, when both bounds are given and there are
    /// at most `limit` of them.
    pub fn integers(&self, limit: u64) -> Option<Vec<serde_json::Value>> {
        let lo = self.min.as_ref()?.value().ceil().to_i128()?;
        let hi = self.max.as_ref()?.value().floor().to_i128()?;
        if hi >= lo && (hi - lo) as u128 >= u128::from(limit) {
            return None;
        }
        Some(
            (lo..=hi)
                .filter(|i| self.contains(&Decimal::from_i128(*i)))
                .filter_map(|i| i64::try_from(i).ok())
                .map(serde_json::Value::from)
                .collect(),
        )
    }

    /// Whether no number is in the range.
    pub fn is_empty(&self) -> bool {
        matches!((&self.max, &self.min), (Some(hi), Some(lo)) if hi.is_below(lo))
    }

    /// Whether no number is in both ranges.
    pub fn is_disjoint(&self, other: &NumRange) -> bool {
        let below = |max: &Option<Bound>, min: &Option<Bound>| matches!((max, min), (Some(hi), Some(lo)) if hi.is_below(lo));
        below(&self.max, &other.min) || below(&other.max, &self.min)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inc(v: &str) -> Option<Bound> {
        Some(Bound::Inclusive(Decimal::parse(v).unwrap()))
    }

    fn exc(v: &str) -> Option<Bound> {
        Some(Bound::Exclusive(Decimal::parse(v).unwrap()))
    }

    fn range(min: Option<Bound>, max: Option<Bound>) -> NumRange {
        NumRange { min, max }
    }

    #[test]
    fn intersection_keeps_the_tighter_bound_and_exclusive_at_ties() {
        let a = range(inc("0"), inc("10"));
        let b = range(exc("0"), inc("20"));
        assert_eq!(a.intersect(&b), range(exc("0"), inc("10")));
        assert_eq!(b.intersect(&a), range(exc("0"), inc("10")));
        assert_eq!(a.intersect(&NumRange::default()), a);
    }

    #[test]
    fn emptiness_and_disjointness_respect_exclusivity() {
        assert!(!range(inc("1"), inc("1")).is_empty());
        assert!(range(exc("1"), inc("1")).is_empty());
        assert!(range(inc("2"), inc("1")).is_empty());
        assert!(!range(None, inc("1")).is_empty());
        assert!(range(None, inc("1")).is_disjoint(&range(exc("1"), None)));
        assert!(!range(None, inc("1")).is_disjoint(&range(inc("1"), None)));
    }

    #[test]
    fn containment_and_flipping() {
        let r = range(exc("0"), inc("1.5"));
        let d = |v: &str| Decimal::parse(v).unwrap();
        assert!(!r.contains(&d("0")) && r.contains(&d("1.5")) && !r.contains(&d("1.6")));
        assert_eq!(inc("3").unwrap().flipped(), exc("3").unwrap());
        assert_eq!(exc("3").unwrap().flipped(), inc("3").unwrap());
    }
}
