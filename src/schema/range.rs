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

/// A `multipleOf` value as an integer over a power of ten: `2.5` is
/// 25 / 10^1, `0.01` is 1 / 10^2, `30` is 30 / 10^0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Divisor {
    pub modulus: u64,
    pub scale: u32,
}

/// Why a `multipleOf` value cannot be enforced.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DivisorError {
    #[error("must be greater than 0")]
    NotPositive,
    #[error("has more than {limit} significant digits, or more than {limit} digits after the point: a multiple of it cannot be written in the digits a number is limited to")]
    TooPrecise { limit: usize },
    #[error("is {modulus} steps of {step}: the grammar tracks the remainder of the digits read by {modulus}, and remainders by more than {limit} are more states than it can write")]
    TooManyRemainders {
        modulus: u64,
        step: String,
        limit: u64,
    },
}

impl Divisor {
    /// The most significant digits, and the most digits after the point, a
    /// `multipleOf` value may have (its integer must fit arithmetic on
    /// `u64` with room for one more digit).
    pub const MAX_DIGITS: usize = 17;

    /// The largest modulus enforced: the automaton of the multiples has a
    /// state per remainder (see `lang::MAX_STATES`).
    pub const MAX_MODULUS: u64 = 4000;

    /// The divisor of a `multipleOf` value.
    pub fn of(d: &Decimal) -> Result<Divisor, DivisorError> {
        if d.is_zero() || d.is_negative() {
            return Err(DivisorError::NotPositive);
        }
        let too_precise = DivisorError::TooPrecise {
            limit: Self::MAX_DIGITS,
        };
        let digits = usize::try_from(d.digits_len()).unwrap_or(usize::MAX);
        // value = 0.d1…dn × 10^point = (d1…dn) × 10^(point − n)
        let exponent = d.point() - d.digits_len();
        let zeros = usize::try_from(exponent.max(0)).unwrap_or(usize::MAX);
        let scale = usize::try_from((-exponent).max(0)).unwrap_or(usize::MAX);
        if digits.saturating_add(zeros) > Self::MAX_DIGITS || scale > Self::MAX_DIGITS {
            return Err(too_precise);
        }
        let mut modulus: u64 = 0;
        for i in 0..digits {
            modulus = modulus * 10 + u64::from(d.digit(i).unwrap_or(0));
        }
        for _ in 0..zeros {
            modulus *= 10;
        }
        let divisor = Divisor {
            modulus,
            scale: u32::try_from(scale).unwrap_or(u32::MAX),
        };
        if modulus > Self::MAX_MODULUS {
            return Err(DivisorError::TooManyRemainders {
                modulus,
                step: Decimal::pow10(-i64::from(divisor.scale)).to_string(),
                limit: Self::MAX_MODULUS,
            });
        }
        Ok(divisor)
    }

    /// Whether `d` is an integer multiple of the divisor.
    pub fn divides(&self, d: &Decimal) -> bool {
        let scaled = d.shifted(i64::from(self.scale));
        if !scaled.is_integer() {
            return false;
        }
        if scaled.is_zero() {
            return true;
        }
        // The integer is d1…dn followed by (point − n) zeros.
        let m = u128::from(self.modulus.max(1));
        let mut rest: u128 = 0;
        for i in 0..usize::try_from(scaled.digits_len()).unwrap_or(0) {
            rest = (rest * 10 + u128::from(scaled.digit(i).unwrap_or(0))) % m;
        }
        let zeros = u64::try_from(scaled.point() - scaled.digits_len()).unwrap_or(0);
        times_pow10(u64::try_from(rest).unwrap_or(0), zeros, self.modulus) == 0
    }

    /// The value as JSON Schema writes it, for messages.
    pub fn describe(&self) -> String {
        Decimal::from_i128(i128::from(self.modulus))
            .shifted(-i64::from(self.scale))
            .to_string()
    }
}

/// `rest * 10^exponent mod modulus` (modulus 0 read as 1), by squaring.
pub fn times_pow10(rest: u64, exponent: u64, modulus: u64) -> u64 {
    let m = u128::from(modulus.max(1));
    let mut acc = u128::from(rest) % m;
    let (mut base, mut e) = (10u128 % m, exponent);
    while e > 0 {
        if e & 1 == 1 {
            acc = acc * base % m;
        }
        base = base * base % m;
        e >>= 1;
    }
    u64::try_from(acc).unwrap_or(0)
}

/// Numeric bounds, each optional, and divisors.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct NumRange {
    pub min: Option<Bound>,
    pub max: Option<Bound>,
    /// The value is a multiple of each (`multipleOf`).
    pub divisors: Vec<Divisor>,
    /// The value is a multiple of none of them (`not: {multipleOf}`).
    pub non_divisors: Vec<Divisor>,
}

impl NumRange {
    /// Numbers between two bounds.
    pub fn between(min: Option<Bound>, max: Option<Bound>) -> NumRange {
        NumRange {
            min,
            max,
            ..NumRange::default()
        }
    }

    /// Whether the range has divisors or non-divisors, beyond its bounds.
    pub fn has_divisors(&self) -> bool {
        !self.divisors.is_empty() || !self.non_divisors.is_empty()
    }

    /// The numbers in both ranges.
    pub fn intersect(&self, other: &NumRange) -> NumRange {
        let union = |a: &[Divisor], b: &[Divisor]| {
            let mut out = a.to_vec();
            out.extend(b.iter().filter(|d| !a.contains(d)));
            out
        };
        NumRange {
            min: Bound::tighter_lower(self.min.clone(), other.min.clone()),
            max: Bound::tighter_upper(self.max.clone(), other.max.clone()),
            divisors: union(&self.divisors, &other.divisors),
            non_divisors: union(&self.non_divisors, &other.non_divisors),
        }
    }

    /// Whether `d` is in the range.
    pub fn contains(&self, d: &Decimal) -> bool {
        self.min.as_ref().is_none_or(|b| b.admits_above(d))
            && self.max.as_ref().is_none_or(|b| b.admits_below(d))
            && self.divisors.iter().all(|m| m.divides(d))
            && !self.non_divisors.iter().any(|m| m.divides(d))
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

    /// Whether no number is in the range by its bounds (divisors can leave
    /// a range with bounds empty too; emitting it finds out).
    pub fn is_empty(&self) -> bool {
        matches!((&self.max, &self.min), (Some(hi), Some(lo)) if hi.is_below(lo))
    }

    /// Whether no number is in both ranges.
    pub fn is_disjoint(&self, other: &NumRange) -> bool {
        let below = |max: &Option<Bound>, min: &Option<Bound>| matches!((max, min), (Some(hi), Some(lo)) if hi.is_below(lo));
        // A multiple of `m` is never in a range that excludes multiples of `m`.
        let excluded =
            |a: &NumRange, b: &NumRange| a.divisors.iter().any(|m| b.non_divisors.contains(m));
        below(&self.max, &other.min)
            || below(&other.max, &self.min)
            || excluded(self, other)
            || excluded(other, self)
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
        NumRange::between(min, max)
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
