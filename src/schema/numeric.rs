//! Exact grammars for the decimal text of JSON numbers within numeric bounds
//! (`minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`).
//!
//! Bounds are read exactly as decimals (never through `f64`), and the grammar
//! is built by the classic digit-by-digit range decomposition: numerals are
//! grouped by the length of their integer part, and inside one length a value
//! is compared with a bound digit by digit, from the most significant one, so
//! the grammar branches only where a digit equals the bound's digit.
//!
//! Canonical forms produced:
//! - integers: `-?(0|[1-9][0-9]*)` with at most [`MAX_INT_DIGITS`] digits and
//!   never `-0`;
//! - bounded numbers: the same integer part (a negative number may have
//!   integer part `0`, as in `-0.5`), then optionally `.` and
//!   1..=[`MAX_FRAC_DIGITS`] digits; trailing zeros in the fraction are allowed
//!   and compared by value; zero is never written with a minus sign;
//! - numbers with no bound: the same plus an optional exponent
//!   `[eE][-+]?[0-9]{1,3}`.
//!
//! Values beyond the digit caps are simply not produced: a bound beyond a cap
//! only shrinks the language, which keeps every produced numeral in range.

use std::cmp::Ordering;

use super::decimal::Decimal;
use super::range::Bound;
use crate::grammar::expr::Expr;

/// Most digits in the integer part of a produced numeral.
pub const MAX_INT_DIGITS: usize = 16;
/// Most digits after the decimal point of a produced numeral.
pub const MAX_FRAC_DIGITS: usize = 16;
/// Most digits in the exponent of a numeral of an unbounded number.
const MAX_EXP_DIGITS: u32 = 3;
/// Alternatives below one digit that are spelt out with the digit as their
/// prefix (the classic flat form); beyond this they are nested in a group,
/// which keeps both the nesting and the number of alternatives small.
const FLAT_ALTERNATIVES: usize = 12;
/// Bounds whose magnitude has more integer digits than this are treated as
/// infinite when rounded to integers (they lie far beyond the digit cap).
const INT_ROUNDING_DIGITS: i64 = 20;

/// Why no grammar can be built for a range.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum RangeError {
    /// The range contains no number the grammar can produce.
    #[error("{min}, {max}: no {kind} in this range can be generated")]
    Empty {
        /// `"integer"` or `"number"`.
        kind: &'static str,
        /// The lower bound, as the schema keyword and its value.
        min: String,
        /// The upper bound, as the schema keyword and its value.
        max: String,
    },
}

impl RangeError {
    fn empty(kind: &'static str, min: Option<&Bound>, max: Option<&Bound>) -> Self {
        RangeError::Empty {
            kind,
            min: Bound::describe(min, true),
            max: Bound::describe(max, false),
        }
    }
}

/// JSON integers `n` with `min <= n <= max` (each bound optional, of either
/// kind, possibly fractional: `minimum: 1.5` means `n >= 2`).
///
/// The language is `-?(0|[1-9][0-9]*)` limited to [`MAX_INT_DIGITS`] digits,
/// without `-0`, intersected with the range.
pub fn integer_range(min: Option<&Bound>, max: Option<&Bound>) -> Result<Expr, RangeError> {
    let empty = || RangeError::empty("integer", min, max);
    let lo = min.map_or(IntEnd::NegInf, |b| int_end(b, true));
    let hi = max.map_or(IntEnd::PosInf, |b| int_end(b, false));
    let cap = int_cap();
    if lo > hi || lo > IntEnd::Fin(cap) || hi < IntEnd::Fin(-cap) {
        return Err(empty());
    }
    let lo = match lo {
        IntEnd::Fin(v) if v > -cap => Some(Side::new(Decimal::from_i128(v), true)),
        _ => None,
    };
    let hi = match hi {
        IntEnd::Fin(v) if v < cap => Some(Side::new(Decimal::from_i128(v), true)),
        _ => None,
    };
    signed_range(lo.as_ref(), hi.as_ref(), 0).ok_or_else(empty)
}

/// JSON numbers `x` with `min <= x <= max` (each bound optional, of either
/// kind). With a bound the language has no exponent; with none it is the
/// whole canonical number syntax plus `[eE][-+]?[0-9]{1,3}`.
pub fn number_range(min: Option<&Bound>, max: Option<&Bound>) -> Result<Expr, RangeError> {
    if min.is_none() && max.is_none() {
        let mantissa = signed_range(None, None, MAX_FRAC_DIGITS)
            .ok_or_else(|| RangeError::empty("number", min, max))?;
        return Ok(Expr::seq([mantissa, exponent().opt()]));
    }
    decimal_range(min, max, MAX_FRAC_DIGITS)
}

/// JSON numbers `x` with `min <= x <= max` (each bound optional) written
/// with at most `frac_cap` fraction digits (capped at [`MAX_FRAC_DIGITS`])
/// and no exponent: the multiples of `10^-frac_cap` in the range.
pub fn decimal_range(
    min: Option<&Bound>,
    max: Option<&Bound>,
    frac_cap: usize,
) -> Result<Expr, RangeError> {
    let frac_cap = frac_cap.min(MAX_FRAC_DIGITS);
    let empty = || RangeError::empty("number", min, max);
    if min.is_none() && max.is_none() {
        return signed_range(None, None, frac_cap).ok_or_else(empty);
    }
    if let (Some(lo), Some(hi)) = (min, max) {
        if hi.is_below(lo) {
            return Err(empty());
        }
    }
    let limit = Decimal::pow10(i64::try_from(MAX_INT_DIGITS).unwrap_or(i64::MAX));
    let lo = min
        .filter(|b| *b.value() > limit.negated())
        .map(Side::from_bound);
    let hi = max.filter(|b| *b.value() < limit).map(Side::from_bound);
    signed_range(lo.as_ref(), hi.as_ref(), frac_cap).ok_or_else(empty)
}

/// `[eE][-+]?[0-9]{1,3}`.
fn exponent() -> Expr {
    Expr::seq([
        Expr::class(&[('E', 'E'), ('e', 'e')]),
        Expr::class(&[('+', '+'), ('-', '-')]).opt(),
        any_digit().repeat(1, Some(MAX_EXP_DIGITS)),
    ])
}

/// An end of an integer range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum IntEnd {
    NegInf,
    Fin(i128),
    PosInf,
}

/// The largest integer magnitude with [`MAX_INT_DIGITS`] digits.
fn int_cap() -> i128 {
    let digits = u32::try_from(MAX_INT_DIGITS).unwrap_or(u32::MAX);
    10i128.checked_pow(digits).map_or(i128::MAX, |p| p - 1)
}

/// An end far beyond the digit cap, by sign; `None` when it is near.
fn far_end(d: &Decimal) -> Option<IntEnd> {
    (d.point() > INT_ROUNDING_DIGITS).then_some(if d.is_negative() {
        IntEnd::NegInf
    } else {
        IntEnd::PosInf
    })
}

/// The least integer satisfying a lower bound (`lower`), or the greatest
/// satisfying an upper one.
fn int_end(bound: &Bound, lower: bool) -> IntEnd {
    let d = bound.value();
    if let Some(end) = far_end(d) {
        return end;
    }
    // An inclusive bound is rounded toward the inside of the range; an
    // exclusive one toward the outside, then moved one integer in (so that
    // a bound that is an integer is itself left out).
    let end = match (bound, lower) {
        (Bound::Inclusive(d), true) => d.ceil().to_i128(),
        (Bound::Exclusive(d), true) => d.floor().to_i128().map(|v| v + 1),
        (Bound::Inclusive(d), false) => d.floor().to_i128(),
        (Bound::Exclusive(d), false) => d.ceil().to_i128().map(|v| v - 1),
    };
    match end {
        Some(v) => IntEnd::Fin(v),
        None if lower => IntEnd::PosInf,
        None => IntEnd::NegInf,
    }
}

/// The number of digits in the integer part of a non-negative value
/// (0 for values below 1), saturated just past the cap.
fn int_class(d: &Decimal) -> usize {
    if d.is_zero() || d.point() <= 0 {
        return 0;
    }
    usize::try_from(d.point())
        .unwrap_or(usize::MAX)
        .min(MAX_INT_DIGITS + 1)
}

/// One end of an interval, with whether the end value itself is in.
#[derive(Debug, Clone, PartialEq)]
struct Side {
    value: Decimal,
    inclusive: bool,
}

impl Side {
    fn new(value: Decimal, inclusive: bool) -> Self {
        Side { value, inclusive }
    }

    fn from_bound(bound: &Bound) -> Self {
        Side::new(bound.value().clone(), bound.is_inclusive())
    }

    /// Whether zero is on the allowed side of this upper end.
    fn upper_admits_zero(&self) -> bool {
        !self.value.is_negative() && (self.inclusive || !self.value.is_zero())
    }
}

/// Signed numerals with values in the interval: a `-` and a non-zero
/// magnitude for negative values, no sign for the others. `frac_cap` is the
/// number of fraction digits allowed (0 for integers).
///
/// A range holding both signs is also written as `-?C | E | 0` (see
/// [`straddling`]); the shorter of the two forms is kept.
fn signed_range(lo: Option<&Side>, hi: Option<&Side>, frac_cap: usize) -> Option<Expr> {
    let split = split_by_sign(lo, hi, frac_cap);
    let has_negatives = lo.is_none_or(|l| l.value.is_negative());
    let has_positives = hi.is_none_or(|h| h.value > Decimal::zero());
    if !(has_negatives && has_positives) {
        return split;
    }
    let neg_upper = lo.map(|l| Side::new(l.value.negated(), l.inclusive));
    let factored = straddling(neg_upper.as_ref(), hi, frac_cap);
    match (split, factored) {
        (Some(s), Some(f)) if s.to_gbnf().len() < f.to_gbnf().len() => Some(s),
        (split, None) => split,
        (_, factored) => factored,
    }
}

/// Negative values as `-` and their magnitude, then the others.
fn split_by_sign(lo: Option<&Side>, hi: Option<&Side>, frac_cap: usize) -> Option<Expr> {
    let non_negative = if hi.is_none_or(Side::upper_admits_zero) {
        let lo = lo.filter(|s| !s.value.is_negative());
        unsigned_range(lo, hi, frac_cap)
    } else {
        None
    };
    let negative = negative_part(lo, hi, frac_cap).map(|m| Expr::seq([Expr::lit("-"), m]));
    let parts: Vec<Expr> = negative.into_iter().chain(non_negative).collect();
    (!parts.is_empty()).then(|| Expr::alt(parts))
}

/// A range with negative and positive values (so zero too), given the upper
/// ends of the magnitudes on each side, as `-?C | E | 0`: `C` the non-zero
/// magnitudes both signs allow, `E` those only the looser side allows
/// (`-90..90` is `-?C | 0`, `-128..127` is `-?C | "-128" | 0`). `None` when
/// no magnitude is shared.
fn straddling(neg: Option<&Side>, pos: Option<&Side>, frac_cap: usize) -> Option<Expr> {
    let tighter = |a: &Side, b: &Side| a.value < b.value || (a.value == b.value && !a.inclusive);
    let (tight, loose, loose_is_negative) = match (neg, pos) {
        (Some(n), Some(p)) if tighter(n, p) => (Some(n), Some(p), false),
        (Some(n), Some(p)) => (Some(p), Some(n), true),
        (Some(n), None) => (Some(n), None, false),
        (None, p) => (p, None, true),
    };
    let positive = Side::new(Decimal::zero(), false);
    let common = unsigned_range(Some(&positive), tight, frac_cap)?;
    let extra = tight.and_then(|t| {
        let beyond = Side::new(t.value.clone(), !t.inclusive);
        unsigned_range(Some(&beyond), loose, frac_cap)
    });
    let extra = extra.map(|e| {
        if loose_is_negative {
            Expr::seq([Expr::lit("-"), e])
        } else {
            e
        }
    });
    let signed = Expr::seq([Expr::lit("-").opt(), common]);
    let zero = Layout::new(0, frac_cap).zeros(0);
    Some(Expr::alt([signed].into_iter().chain(extra).chain([zero])))
}

/// Unsigned numerals `m > 0` such that `-m` is in the interval.
fn negative_part(lo: Option<&Side>, hi: Option<&Side>, frac_cap: usize) -> Option<Expr> {
    if lo.is_some_and(|s| !s.value.is_negative()) {
        return None;
    }
    let m_lo = match hi {
        Some(h) if h.value.is_negative() => Side::new(h.value.negated(), h.inclusive),
        _ => Side::new(Decimal::zero(), false),
    };
    let m_hi = lo.map(|l| Side::new(l.value.negated(), l.inclusive));
    unsigned_range(Some(&m_lo), m_hi.as_ref(), frac_cap)
}

/// What one integer-part length contributes.
enum ClassLanguage {
    Empty,
    Full,
    Part(Expr),
}

/// Unsigned numerals with values in the interval (whose ends, when given,
/// are non-negative), by integer-part class: class 0 is integer part `0`,
/// class `k` is a `k`-digit integer part. Runs of unconstrained classes are
/// merged into one `[1-9][0-9]{a,b}`.
fn unsigned_range(lo: Option<&Side>, hi: Option<&Side>, frac_cap: usize) -> Option<Expr> {
    let lo = lo.filter(|s| !(s.inclusive && s.value.is_zero()));
    let mut parts = Vec::new();
    let mut run: Option<(usize, usize)> = None;
    for class in 0..=MAX_INT_DIGITS {
        match class_language(class, lo, hi, frac_cap) {
            ClassLanguage::Full => {
                run = Some(run.map_or((class, class), |(first, _)| (first, class)));
            }
            ClassLanguage::Part(expr) => {
                parts.extend(run.take().map(|r| full_run(r, frac_cap)));
                parts.push(expr);
            }
            ClassLanguage::Empty => parts.extend(run.take().map(|r| full_run(r, frac_cap))),
        }
    }
    parts.extend(run.map(|r| full_run(r, frac_cap)));
    (!parts.is_empty()).then(|| Expr::alt(parts))
}

/// The numerals of one integer-part class within the interval.
fn class_language(
    class: usize,
    lo: Option<&Side>,
    hi: Option<&Side>,
    frac_cap: usize,
) -> ClassLanguage {
    // The least value of a class of integer parts `10^(class-1)..` as an
    // inclusive lower end constrains nothing (zero was dropped already).
    let least = |s: &Side| {
        let exponent = i64::try_from(class).unwrap_or(i64::MAX) - 1;
        class > 0 && s.inclusive && s.value == Decimal::pow10(exponent)
    };
    let lo = match lo.map(|s| (s, int_class(&s.value).cmp(&class))) {
        Some((_, Ordering::Greater)) => return ClassLanguage::Empty,
        Some((s, Ordering::Equal)) if !least(s) => Some(s),
        _ => None,
    };
    let hi = match hi.map(|s| (s, int_class(&s.value).cmp(&class))) {
        Some((_, Ordering::Less)) => return ClassLanguage::Empty,
        Some((s, Ordering::Equal)) => Some(s),
        _ => None,
    };
    if lo.is_none() && hi.is_none() {
        return ClassLanguage::Full;
    }
    let alts = fold_end(Layout::new(class, frac_cap).suffix(0, lo, hi));
    if alts.is_empty() {
        ClassLanguage::Empty
    } else {
        ClassLanguage::Part(Expr::alt(alts))
    }
}

/// All numerals of the classes `first..=last`.
fn full_run((first, last): (usize, usize), frac_cap: usize) -> Expr {
    let frac = Layout::new(last, frac_cap).frac_any();
    let nonzero = |min: usize| {
        Expr::seq([
            digit_class(1, 9),
            any_digit().repeat(count(min), Some(count(last - 1))),
        ])
    };
    let int = match (first, last) {
        (0, 0) => Expr::lit("0"),
        (0, _) => Expr::alt([Expr::lit("0"), nonzero(0)]),
        _ => nonzero(first - 1),
    };
    Expr::seq([int, frac])
}

/// The digit positions of one integer-part class: `int_digits` digits (the
/// first in `first`), then up to `frac_cap` fraction digits after a `.`.
struct Layout {
    int_digits: usize,
    first: (u8, u8),
    frac_cap: usize,
}

impl Layout {
    fn new(class: usize, frac_cap: usize) -> Self {
        Layout {
            int_digits: class.max(1),
            first: if class == 0 { (0, 0) } else { (1, 9) },
            frac_cap,
        }
    }

    /// One past the last digit position.
    fn end(&self) -> usize {
        self.int_digits + self.frac_cap
    }

    /// The digits allowed at position `p`.
    fn span(&self, p: usize) -> (u8, u8) {
        if p == 0 {
            self.first
        } else {
            (0, 9)
        }
    }

    /// Index in `side`'s digits of the digit at position `p` (which has
    /// place value `10^(int_digits - 1 - p)`).
    fn index(&self, side: &Side, p: usize) -> i64 {
        let k = i64::try_from(self.int_digits).unwrap_or(i64::MAX);
        let p = i64::try_from(p).unwrap_or(i64::MAX);
        side.value.point().saturating_sub(k).saturating_add(p)
    }

    /// `side`'s digit at position `p`.
    fn digit(&self, side: &Side, p: usize) -> u8 {
        usize::try_from(self.index(side, p))
            .ok()
            .and_then(|i| side.value.digit(i))
            .unwrap_or(0)
    }

    /// Whether all of `side`'s digits from position `p` on (those beyond the
    /// fraction cap included) are zero.
    fn zero_from(&self, side: &Side, p: usize) -> bool {
        self.index(side, p) >= side.value.digits_len()
    }

    /// Numeral suffixes from position `p`, given that the digits before `p`
    /// equal those of `lo` and of `hi` where these are given, whose value is
    /// within them (compared as if padded with zeros without end), as flat
    /// alternatives (none: no suffix). The empty suffix, when allowed, comes
    /// first as an empty literal; [`fold_end`] removes it.
    fn suffix(&self, p: usize, lo: Option<&Side>, hi: Option<&Side>) -> Vec<Expr> {
        let lo = lo.filter(|s| !(s.inclusive && self.zero_from(s, p)));
        if let Some(h) = hi.filter(|h| self.zero_from(h, p)) {
            return if h.inclusive && lo.is_none() {
                vec![self.zeros(p)]
            } else {
                Vec::new()
            };
        }
        if lo.is_none() && hi.is_none() {
            return vec![self.any(p)];
        }
        // Ending here reads as zeros: below any remaining `lo` digits, and
        // below the remaining `hi` digits, which are not all zero.
        let may_end = p >= self.int_digits && lo.is_none();
        if let Some(h) = hi.filter(|h| may_end && p < self.end() && self.digit(h, p) == 0) {
            return self.zero_run(p, h);
        }
        let mut alts: Vec<Expr> = Vec::new();
        if may_end {
            alts.push(Expr::empty());
        }
        if p < self.end() {
            for (a, b, rests) in self.digit_groups(p, lo, hi) {
                let rests = fold_end(rests);
                if rests.len() <= FLAT_ALTERNATIVES {
                    alts.extend(
                        rests
                            .into_iter()
                            .map(|rest| self.after_point(p, digits_then(a, b, rest))),
                    );
                } else {
                    let nested = digits_then(a, b, Expr::alt(rests));
                    alts.push(self.after_point(p, nested));
                }
            }
        }
        alts
    }

    /// [`Layout::suffix`] at a fraction position `p` where `hi` (with no
    /// `lo`) has a run of zero digits, not all its remaining digits: up to
    /// that many zeros, or all of them and then what may follow them. This
    /// keeps runs of zeros (`maximum: 0.0001`) flat.
    fn zero_run(&self, p: usize, hi: &Side) -> Vec<Expr> {
        let run = (p..self.end())
            .take_while(|&q| self.digit(hi, q) == 0)
            .count();
        let zeros = |min: usize| {
            if min == run {
                Expr::lit("0".repeat(run))
            } else {
                Expr::lit("0").repeat(count(min), Some(count(run)))
            }
        };
        let short = if p == self.int_digits {
            Expr::seq([Expr::lit("."), zeros(1)]).opt()
        } else {
            zeros(0)
        };
        let longs = self
            .suffix(p + run, None, Some(hi))
            .into_iter()
            .filter(|tail| *tail != Expr::empty())
            .map(|tail| self.after_point(p, Expr::seq([zeros(run), tail])));
        std::iter::once(short).chain(longs).collect()
    }

    /// The choices for the digit at position `p`, each with its suffixes:
    /// adjacent digits with the same suffixes share one class.
    fn digit_groups(
        &self,
        p: usize,
        lo: Option<&Side>,
        hi: Option<&Side>,
    ) -> Vec<(u8, u8, Vec<Expr>)> {
        let (low, high) = self.span(p);
        let lo_digit = lo.map(|s| self.digit(s, p));
        let hi_digit = hi.map(|s| self.digit(s, p));
        let mut groups: Vec<(u8, u8, Vec<Expr>)> = Vec::new();
        for d in low..=high {
            if lo_digit.is_some_and(|l| d < l) || hi_digit.is_some_and(|h| d > h) {
                continue;
            }
            let next_lo = lo.filter(|_| lo_digit == Some(d));
            let next_hi = hi.filter(|_| hi_digit == Some(d));
            let rests = self.suffix(p + 1, next_lo, next_hi);
            if rests.is_empty() {
                continue;
            }
            match groups.last_mut() {
                Some(last) if last.1 + 1 == d && last.2 == rests => last.1 = d,
                _ => groups.push((d, d, rests)),
            }
        }
        groups
    }

    /// `expr`, preceded by the decimal point when it starts the fraction.
    fn after_point(&self, p: usize, expr: Expr) -> Expr {
        if p == self.int_digits {
            Expr::seq([Expr::lit("."), expr])
        } else {
            expr
        }
    }

    /// Every suffix from position `p`.
    fn any(&self, p: usize) -> Expr {
        let k = self.int_digits;
        match p.cmp(&k) {
            Ordering::Less => {
                let (a, b) = self.span(p);
                let rest = count(k - p - 1);
                let rest = Expr::seq([any_digit().repeat(rest, Some(rest)), self.frac_any()]);
                digits_then(a, b, rest)
            }
            Ordering::Equal => self.frac_any(),
            Ordering::Greater => any_digit().repeat(0, Some(count(self.end() - p))),
        }
    }

    /// Every suffix from position `p` whose digits are all zero.
    fn zeros(&self, p: usize) -> Expr {
        let k = self.int_digits;
        match p.cmp(&k) {
            Ordering::Less => Expr::seq([Expr::lit("0".repeat(k - p)), self.zeros(k)]),
            Ordering::Equal if self.frac_cap == 0 => Expr::empty(),
            Ordering::Equal => {
                let zeros = Expr::lit("0").repeat(1, Some(count(self.frac_cap)));
                Expr::seq([Expr::lit("."), zeros]).opt()
            }
            Ordering::Greater => Expr::lit("0").repeat(0, Some(count(self.end() - p))),
        }
    }

    /// An optional fraction of any digits: `(\.[0-9]{1,cap})?`.
    fn frac_any(&self) -> Expr {
        if self.frac_cap == 0 {
            return Expr::empty();
        }
        let digits = any_digit().repeat(1, Some(count(self.frac_cap)));
        Expr::seq([Expr::lit("."), digits]).opt()
    }
}

/// Alternatives without an empty one: `"" | X | Y` is `X? | Y`.
fn fold_end(mut alts: Vec<Expr>) -> Vec<Expr> {
    if alts.len() > 1 && alts[0] == Expr::empty() {
        alts.remove(0);
        alts[0] = alts[0].clone().opt();
    }
    alts
}

/// A repetition count (the counts here are at most a few dozen).
fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// A digit in `a..=b`, then `rest`; `[0-9]` joins a leading `[0-9]{m,n}`
/// of `rest` into `[0-9]{m+1,n+1}`.
fn digits_then(a: u8, b: u8, rest: Expr) -> Expr {
    let mut items = match rest {
        Expr::Seq(items) => items,
        other => vec![other],
    };
    if (a, b) == (0, 9) {
        let run = match items.first() {
            Some(e) if *e == any_digit() => Some((1, Some(1))),
            Some(Expr::Repeat { expr, min, max }) if **expr == any_digit() => Some((*min, *max)),
            _ => None,
        };
        if let Some((min, max)) = run {
            items[0] = any_digit().repeat(min + 1, max.map(|m| m + 1));
            return Expr::seq(items);
        }
    }
    Expr::seq(std::iter::once(digit_class(a, b)).chain(items))
}

fn any_digit() -> Expr {
    digit_class(0, 9)
}

/// The digits `a..=b`, as a literal when there is one.
fn digit_class(a: u8, b: u8) -> Expr {
    let (a, b) = (char::from(b'0' + a), char::from(b'0' + b));
    if a == b {
        Expr::lit(a)
    } else {
        Expr::class(&[(a, b)])
    }
}

#[cfg(test)]
mod tests;
