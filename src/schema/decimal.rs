//! Exact decimal numbers: JSON number text parsed, compared and rounded
//! without floating point, so that numeric bounds are read exactly.

use std::cmp::Ordering;
use std::fmt;

/// Exponents are saturated at this magnitude when parsing: far beyond any
/// digit cap, yet small enough that position arithmetic cannot overflow.
const EXP_LIMIT: i64 = 1 << 40;

/// A decimal number parsed exactly from JSON text (no floating point): sign,
/// significant digits and the position of the decimal point.
///
/// The value is `0.d1 d2 … dn × 10^point` (negated when `negative`), with no
/// leading or trailing zero digit, so equal values have equal representations
/// and the derived equality is numeric equality. Zero has no digits and is
/// never negative.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Decimal {
    negative: bool,
    digits: Vec<u8>,
    point: i64,
}

impl Decimal {
    /// The value zero.
    pub fn zero() -> Self {
        Decimal {
            negative: false,
            digits: Vec::new(),
            point: 0,
        }
    }

    /// Parse JSON number syntax, exponent included: `1`, `-0.5`, `1e3`,
    /// `2.5E-2`. Anything else (`+1`, `01`, `.5`, `1.`, spaces) is `None`.
    /// Exponents beyond ±2^40 are saturated.
    pub fn parse(text: &str) -> Option<Decimal> {
        let bytes = text.as_bytes();
        let (negative, rest) = match bytes.split_first() {
            Some((b'-', rest)) => (true, rest),
            _ => (false, bytes),
        };
        let (int, rest) = split_digits(rest);
        if int.is_empty() || (int.len() > 1 && int[0] == b'0') {
            return None;
        }
        let (frac, rest) = match rest.split_first() {
            Some((b'.', after)) => {
                let (frac, rest) = split_digits(after);
                if frac.is_empty() {
                    return None;
                }
                (frac, rest)
            }
            _ => (&rest[..0], rest),
        };
        let exponent = match rest.split_first() {
            None => 0,
            Some((b'e' | b'E', after)) => parse_exponent(after)?,
            Some(_) => return None,
        };
        let int_len = i64::try_from(int.len()).ok()?;
        let digits = int.iter().chain(frac).map(|b| b - b'0').collect();
        Some(Self::from_parts(
            negative,
            digits,
            int_len.saturating_add(exponent),
        ))
    }

    /// The exact value of a `serde_json` number (through its JSON text).
    pub fn from_json(n: &serde_json::Number) -> Option<Decimal> {
        Self::parse(&n.to_string())
    }

    /// The value of an integer.
    pub fn from_i128(value: i128) -> Self {
        let text = value.unsigned_abs().to_string();
        let digits: Vec<u8> = text.bytes().map(|b| b - b'0').collect();
        let point = i64::try_from(digits.len()).unwrap_or(0);
        Self::from_parts(value < 0, digits, point)
    }

    /// Normalise `0.digits × 10^point`: strip leading and trailing zeros.
    fn from_parts(negative: bool, mut digits: Vec<u8>, mut point: i64) -> Self {
        let leading = digits.iter().take_while(|&&d| d == 0).count();
        if leading == digits.len() {
            return Self::zero();
        }
        digits.drain(..leading);
        point = point.saturating_sub(i64::try_from(leading).unwrap_or(i64::MAX));
        while digits.last() == Some(&0) {
            digits.pop();
        }
        Decimal {
            negative,
            digits,
            point,
        }
    }

    /// Whether the value is zero.
    pub fn is_zero(&self) -> bool {
        self.digits.is_empty()
    }

    /// Whether the value is below zero.
    pub fn is_negative(&self) -> bool {
        self.negative
    }

    /// Whether the value is a whole number.
    pub fn is_integer(&self) -> bool {
        self.digits_len() <= self.point || self.is_zero()
    }

    /// The value with the opposite sign.
    pub fn negated(&self) -> Self {
        let mut out = self.clone();
        out.negative = !self.is_zero() && !self.negative;
        out
    }

    /// The absolute value.
    pub fn abs(&self) -> Self {
        let mut out = self.clone();
        out.negative = false;
        out
    }

    /// The greatest integer not above the value.
    pub fn floor(&self) -> Self {
        self.to_integer(true)
    }

    /// The least integer not below the value.
    pub fn ceil(&self) -> Self {
        self.to_integer(false)
    }

    /// The value rounded `down` (toward negative infinity) or up.
    fn to_integer(&self, down: bool) -> Self {
        if self.is_integer() {
            return self.clone();
        }
        let truncated = self.truncated();
        // Truncation rounds toward zero, which is down for positive values
        // and up for negative ones; the other way is one integer further
        // from zero.
        if self.negative == down {
            truncated.magnitude_plus_one(self.negative)
        } else {
            truncated
        }
    }

    /// The value of an integer as `i128`; `None` for a fraction or an integer
    /// out of range.
    pub fn to_i128(&self) -> Option<i128> {
        if !self.is_integer() {
            return None;
        }
        let zeros = u32::try_from(self.point - self.digits_len()).ok()?;
        let mut magnitude: i128 = 0;
        for &d in &self.digits {
            magnitude = magnitude.checked_mul(10)?.checked_add(i128::from(d))?;
        }
        magnitude = magnitude.checked_mul(10i128.checked_pow(zeros)?)?;
        Some(if self.negative { -magnitude } else { magnitude })
    }

    /// `10^exponent`.
    pub fn pow10(exponent: i64) -> Self {
        Decimal {
            negative: false,
            digits: vec![1],
            point: exponent.saturating_add(1),
        }
    }

    /// The value times `10^places`.
    pub fn shifted(&self, places: i64) -> Self {
        let mut out = self.clone();
        if !out.is_zero() {
            out.point = out.point.saturating_add(places);
        }
        out
    }

    /// The position of the decimal point: the value is `0.d1 d2 … × 10^point`.
    pub(super) fn point(&self) -> i64 {
        self.point
    }

    /// The `i`-th significant digit (from the most significant one).
    pub(super) fn digit(&self, i: usize) -> Option<u8> {
        self.digits.get(i).copied()
    }

    /// The number of significant digits.
    pub(super) fn digits_len(&self) -> i64 {
        i64::try_from(self.digits.len()).unwrap_or(i64::MAX)
    }

    /// The value rounded toward zero (the sign is kept, zero excepted).
    fn truncated(&self) -> Self {
        let keep = usize::try_from(self.point.max(0))
            .unwrap_or(usize::MAX)
            .min(self.digits.len());
        Self::from_parts(self.negative, self.digits[..keep].to_vec(), self.point)
    }

    /// For an integer whose digits fit its point, the integer one further
    /// from zero, with the given sign.
    fn magnitude_plus_one(&self, negative: bool) -> Self {
        let width = usize::try_from(self.point.max(0)).unwrap_or(0);
        let mut digits = self.digits.clone();
        digits.resize(width.max(digits.len()), 0);
        let mut carry = true;
        for d in digits.iter_mut().rev() {
            if *d == 9 {
                *d = 0;
            } else {
                *d += 1;
                carry = false;
                break;
            }
        }
        let mut point = i64::try_from(digits.len()).unwrap_or(i64::MAX);
        if carry {
            digits.insert(0, 1);
            point = point.saturating_add(1);
        }
        Self::from_parts(negative, digits, point)
    }

    fn signum(&self) -> i8 {
        match (self.is_zero(), self.negative) {
            (true, _) => 0,
            (false, true) => -1,
            (false, false) => 1,
        }
    }

    fn cmp_magnitude(&self, other: &Self) -> Ordering {
        match (self.is_zero(), other.is_zero()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Less,
            (false, true) => Ordering::Greater,
            (false, false) => self
                .point
                .cmp(&other.point)
                .then_with(|| self.digits.cmp(&other.digits)),
        }
    }
}

impl Ord for Decimal {
    fn cmp(&self, other: &Self) -> Ordering {
        match self.signum().cmp(&other.signum()) {
            Ordering::Equal => match self.signum() {
                -1 => other.cmp_magnitude(self),
                0 => Ordering::Equal,
                _ => self.cmp_magnitude(other),
            },
            unequal => unequal,
        }
    }
}

impl PartialOrd for Decimal {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for Decimal {
    /// Plain decimal text when the point is near the digits, else scientific.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_zero() {
            return f.write_str("0");
        }
        if self.negative {
            f.write_str("-")?;
        }
        let digits: String = self.digits.iter().map(|&d| char::from(b'0' + d)).collect();
        let len = self.digits_len();
        if !(-20..=40).contains(&self.point) {
            let (first, rest) = digits.split_at(1);
            let dot = if rest.is_empty() { "" } else { "." };
            return write!(f, "{first}{dot}{rest}e{}", self.point - 1);
        }
        if self.point <= 0 {
            let zeros = "0".repeat(usize::try_from(-self.point).unwrap_or(0));
            return write!(f, "0.{zeros}{digits}");
        }
        if self.point >= len {
            let zeros = "0".repeat(usize::try_from(self.point - len).unwrap_or(0));
            return write!(f, "{digits}{zeros}");
        }
        let (int, frac) = digits.split_at(usize::try_from(self.point).unwrap_or(0));
        write!(f, "{int}.{frac}")
    }
}

/// The leading ASCII digits of `bytes`, and the rest.
fn split_digits(bytes: &[u8]) -> (&[u8], &[u8]) {
    let n = bytes.iter().take_while(|b| b.is_ascii_digit()).count();
    bytes.split_at(n)
}

/// `[+-]?[0-9]+` to the end of the text, saturated at ±[`EXP_LIMIT`].
fn parse_exponent(bytes: &[u8]) -> Option<i64> {
    let (negative, rest) = match bytes.split_first() {
        Some((b'-', rest)) => (true, rest),
        Some((b'+', rest)) => (false, rest),
        _ => (false, bytes),
    };
    if rest.is_empty() || !rest.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let magnitude = rest.iter().fold(0i64, |acc, &b| {
        (acc * 10 + i64::from(b - b'0')).min(EXP_LIMIT)
    });
    Some(if negative { -magnitude } else { magnitude })
}

/// `value / 10^scale` as minimal decimal text: an independent way to write
/// the decimals the tests of this module and of `numeric` compare against.
#[cfg(test)]
pub(crate) fn fmt_scaled(value: i128, scale: u32) -> String {
    let sign = if value < 0 { "-" } else { "" };
    let mag = value.unsigned_abs();
    let unit = 10u128.pow(scale);
    let (int, frac) = (mag / unit, mag % unit);
    if scale == 0 || frac == 0 {
        return format!("{sign}{int}");
    }
    let frac = format!("{frac:0width$}", width = scale as usize);
    format!("{sign}{int}.{}", frac.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(text: &str) -> Decimal {
        Decimal::parse(text).unwrap_or_else(|| panic!("bad decimal {text}"))
    }

    #[test]
    fn decimals_parse_json_syntax_exactly() {
        for (text, shown) in [
            ("1", "1"),
            ("-0.5", "-0.5"),
            ("1e3", "1000"),
            ("2.5E-2", "0.025"),
            ("-0", "0"),
            ("-0.000e7", "0"),
            ("100.2500", "100.25"),
            ("0.0001", "0.0001"),
            ("1e300", "1e300"),
            ("-12.5e-40", "-1.25e-39"),
            ("123e+2", "12300"),
            ("1e99999999999999999999999", "1e1099511627776"),
        ] {
            assert_eq!(d(text).to_string(), shown, "{text}");
            assert_eq!(d(shown), d(text), "{text}");
        }
        for bad in [
            "", "-", "+1", "01", "-01", "1.", ".5", "1e", "1e+", "1.5.2", " 1", "1 ", "0x1", "NaN",
            "1_0", "１",
        ] {
            assert_eq!(Decimal::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn decimals_order_by_value() {
        let grid: Vec<i128> = (-2500..=2500)
            .step_by(7)
            .chain([-100_000, 0, 99_999, 100_000])
            .collect();
        for &a in &grid {
            for &b in grid.iter().step_by(3) {
                let (x, y) = (d(&fmt_scaled(a, 3)), d(&fmt_scaled(b, 3)));
                assert_eq!(x.cmp(&y), a.cmp(&b), "{a} {b}");
                assert_eq!(x == y, a == b);
            }
        }
        assert_eq!(d("1.50"), d("1.5"));
        assert_eq!(d("1.5e1"), d("15"));
        assert!(d("1e-300") > Decimal::zero());
        assert!(d("-1e-300") < Decimal::zero());
        assert!(d("-1e300") < d("-1e299"));
        assert!(d("1e300") > d("9999999999999999"));
    }

    #[test]
    fn decimals_round_to_integers() {
        for (text, floor, ceil) in [
            ("1.5", "1", "2"),
            ("-1.5", "-2", "-1"),
            ("-0.5", "-1", "0"),
            ("0.5", "0", "1"),
            ("9.99", "9", "10"),
            ("-9.99", "-10", "-9"),
            ("3", "3", "3"),
            ("-3", "-3", "-3"),
            ("1e-300", "0", "1"),
            ("99.9e1", "999", "999"),
            ("999.9", "999", "1000"),
        ] {
            assert_eq!(d(text).floor(), d(floor), "floor {text}");
            assert_eq!(d(text).ceil(), d(ceil), "ceil {text}");
        }
        assert!(d("1e3").is_integer());
        assert!(!d("1.5").is_integer());
        assert!(d("0").is_integer());
        assert_eq!(d("-1.2e3").to_i128(), Some(-1200));
        assert_eq!(d("1.5").to_i128(), None);
        assert_eq!(d("1e50").to_i128(), None);
    }

    #[test]
    fn decimals_from_serde_json() {
        let values: Vec<serde_json::Value> = serde_json::from_str(
            "[1, -0.5, 1e16, 0.1, 18446744073709551615, -9223372036854775808, 2.5e-7, -0.0, 1.0]",
        )
        .unwrap();
        let expected = [
            "1",
            "-0.5",
            "10000000000000000",
            "0.1",
            "18446744073709551615",
            "-9223372036854775808",
            "0.00000025",
            "0",
            "1",
        ];
        for (v, e) in values.iter().zip(expected) {
            let serde_json::Value::Number(n) = v else {
                panic!("{v}")
            };
            assert_eq!(Decimal::from_json(n), Some(d(e)), "{v}");
        }
    }
}
