use super::*;
use crate::schema::decimal::fmt_scaled;
use crate::schema::test_rng::Lcg;
use regex::Regex;

fn d(text: &str) -> Decimal {
    Decimal::parse(text).unwrap_or_else(|| panic!("bad decimal {text}"))
}

fn inc(text: &str) -> Option<Bound> {
    Some(Bound::Inclusive(d(text)))
}

fn exc(text: &str) -> Option<Bound> {
    Some(Bound::Exclusive(d(text)))
}

fn compile(expr: &Expr) -> Regex {
    let text = expr.to_regex();
    assert!(!text.contains("RULE:"), "rule reference in {text}");
    Regex::new(&format!("^(?:{text})$")).unwrap()
}

/// The exact reference: value within the bounds, compared as decimals.
fn in_range(x: &Decimal, min: &Option<Bound>, max: &Option<Bound>) -> bool {
    let above = match min {
        None => true,
        Some(Bound::Inclusive(m)) => x >= m,
        Some(Bound::Exclusive(m)) => x > m,
    };
    let below = match max {
        None => true,
        Some(Bound::Inclusive(m)) => x <= m,
        Some(Bound::Exclusive(m)) => x < m,
    };
    above && below
}

/// Canonical forms, checked independently of the generator.
struct Canonical {
    integer: Regex,
    bounded: Regex,
    unbounded: Regex,
}

impl Canonical {
    fn new() -> Self {
        let int = r"-?(?:0|[1-9][0-9]{0,15})";
        Canonical {
            integer: Regex::new(&format!("^{int}$")).unwrap(),
            bounded: Regex::new(&format!(r"^{int}(?:\.[0-9]{{1,16}})?$")).unwrap(),
            unbounded: Regex::new(&format!(
                r"^({int}(?:\.[0-9]{{1,16}})?)(?:[eE][-+]?[0-9]{{1,3}})?$"
            ))
            .unwrap(),
        }
    }

    /// Whether `s` is in the canonical language, and its value.
    fn value(&self, s: &str, integer: bool, has_bound: bool) -> Option<Decimal> {
        let mantissa = if integer {
            self.integer.is_match(s).then_some(s)?
        } else if has_bound {
            self.bounded.is_match(s).then_some(s)?
        } else {
            self.unbounded.captures(s)?.get(1)?.as_str()
        };
        let m = Decimal::parse(mantissa)?;
        if m.is_zero() && mantissa.starts_with('-') {
            return None;
        }
        Decimal::parse(s)
    }
}

/// Textual variants of one value: minimal, and with trailing zeros.
fn variants(text: &str, out: &mut Vec<String>) {
    out.push(text.to_string());
    if text.contains('.') {
        out.push(format!("{text}0"));
    } else {
        out.push(format!("{text}.0"));
        out.push(format!("{text}.000"));
    }
}

/// `x * 10^scale`, rounded down, when it fits.
fn scaled_floor(x: &Decimal, scale: u32) -> Option<i128> {
    let shifted = x.shifted(i64::from(scale));
    if shifted.point() > 30 {
        return None;
    }
    shifted.floor().to_i128()
}

const JUNK: &[&str] = &[
    "",
    "-",
    "--1",
    "+1",
    "+0",
    "01",
    "-01",
    "00",
    "-00",
    "00.5",
    "1.",
    "-1.",
    ".5",
    "-.5",
    "0.",
    " 1",
    "1 ",
    "0x10",
    "1.2.3",
    "NaN",
    "Infinity",
    "-Infinity",
    "1e",
    "1e+",
    "e5",
    "1e2",
    "1E2",
    "1e-2",
    "1e+2",
    "-1e2",
    "0e0",
    "1.5e3",
    "2.5E-2",
    "1e1000",
    "1e0001",
    "-0",
    "-0.0",
    "-0.00",
    "-0.000",
    "-0e0",
    "-0.0e1",
    "0",
    "0.0",
    "0.00",
    "0.0000000000000000",
    "0.00000000000000000",
    "1",
    "-1",
    "9999999999999999",
    "-9999999999999999",
    "10000000000000000",
    "-10000000000000000",
    "99999999999999999",
    "9999999999999999.9999999999999999",
    "-9999999999999999.9999999999999999",
    "9999999999999999.99999999999999999",
    "0.0000000000000001",
    "-0.0000000000000001",
    "0.00000000000000001",
    "1.0000000000000000",
    "1.00000000000000000",
    "0.9999999999999999",
    "1.0000000000000001",
    "2147483647",
    "2147483648",
    "-2147483648",
    "-2147483649",
    "10000000000",
    "10000000000.0000000000000001",
    "9999999999.9999999999999999",
    "0.0001",
    "0.00009",
    "0.00010000",
    "0.0000999999999999",
];

/// Candidate strings around the bounds: integers, a decimal grid of up
/// to 3 fraction digits within 3 of each bound, a finer grid at the
/// bound's own precision, trailing-zero forms and malformed numerals.
fn candidates(min: &Option<Bound>, max: &Option<Bound>, grid: bool) -> Vec<String> {
    let mut out: Vec<String> = JUNK.iter().map(|s| s.to_string()).collect();
    for i in -120..=120 {
        variants(&i.to_string(), &mut out);
    }
    for bound in [min, max].into_iter().flatten() {
        let b = bound.value();
        let Some(center) = scaled_floor(b, 0) else {
            continue;
        };
        for i in center - 40..=center + 40 {
            variants(&i.to_string(), &mut out);
        }
        let precision = u32::try_from((b.digits_len() - b.point()).max(0))
            .unwrap_or(0)
            .min(17);
        let scales: &[u32] = if grid { &[1, 2, 3] } else { &[1] };
        for &scale in scales {
            let c = scaled_floor(b, scale).unwrap_or(0);
            let reach = 3 * 10i128.pow(scale);
            for v in c - reach..=c + reach {
                let text = fmt_scaled(v, scale);
                if v % 7 == 0 {
                    variants(&text, &mut out);
                } else {
                    out.push(text);
                }
            }
        }
        for scale in [precision, precision + 1, 16, 17] {
            if let Some(c) = scaled_floor(b, scale) {
                for v in c - 25..=c + 25 {
                    variants(&fmt_scaled(v, scale), &mut out);
                }
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Checks the grammar of a range against the reference on every
/// candidate; returns how many strings were checked.
fn check(integer: bool, min: Option<Bound>, max: Option<Bound>, grid: bool) -> usize {
    let canonical = Canonical::new();
    let built = if integer {
        integer_range(min.as_ref(), max.as_ref())
    } else {
        number_range(min.as_ref(), max.as_ref())
    };
    let candidates = candidates(&min, &max, grid);
    let Ok(expr) = built else {
        // An empty range: nothing canonical may be in it.
        for s in &candidates {
            let has_bound = min.is_some() || max.is_some();
            if let Some(x) = canonical.value(s, integer, has_bound) {
                assert!(
                    !in_range(&x, &min, &max),
                    "{min:?}..{max:?} reported empty but holds {s}"
                );
            }
        }
        return candidates.len();
    };
    let re = compile(&expr);
    assert!(
        !expr.to_gbnf().contains("\"\""),
        "empty literal in {}",
        expr.to_gbnf()
    );
    assert!(depth(&expr) <= 12, "too deep: {}", expr.to_gbnf());
    let has_bound = min.is_some() || max.is_some();
    for s in &candidates {
        let matched = re.is_match(s);
        let expected = canonical
            .value(s, integer, has_bound)
            .is_some_and(|x| in_range(&x, &min, &max));
        if matched {
            // Soundness, independently of the canonical-form oracle.
            let x = Decimal::parse(s).unwrap_or_else(|| panic!("{s} is no JSON number"));
            assert!(!integer || x.is_integer(), "{s}");
            assert!(
                in_range(&x, &min, &max),
                "{min:?}..{max:?} matches out-of-range {s}"
            );
        }
        assert_eq!(
            matched,
            expected,
            "integer={integer} {min:?}..{max:?} on {s:?}\ngrammar: {}",
            expr.to_gbnf()
        );
    }
    candidates.len()
}

type Case = (Option<Bound>, Option<Bound>);

fn table() -> Vec<Case> {
    vec![
        (None, None),
        (inc("0"), None),
        (exc("0"), None),
        (None, inc("0")),
        (None, exc("0")),
        (inc("0"), inc("100")),
        (inc("1"), inc("100")),
        (exc("0"), exc("100")),
        (inc("-90"), inc("90")),
        (inc("-180"), exc("180")),
        (inc("-100"), inc("-5")),
        (exc("-100"), exc("-5")),
        (inc("-7"), inc("13")),
        (inc("-2147483648"), inc("2147483647")),
        (inc("0.0001"), None),
        (None, inc("1e10")),
        (inc("0.5"), exc("10")),
        (exc("-0.5"), inc("0.5")),
        (inc("1.5"), inc("1.5")),
        (inc("1.5"), inc("2.25")),
        (exc("1.5"), exc("2.25")),
        (inc("-2.25"), exc("-1.5")),
        (None, inc("1.5")),
        (None, exc("2")),
        (exc("-2"), None),
        (inc("-1.001"), inc("-0.999")),
        (inc("0.1"), inc("0.2")),
        (exc("0.999"), exc("1.001")),
        (inc("99.99"), inc("100.01")),
        (inc("1e-20"), None),
        (exc("0"), inc("1e-17")),
        (inc("1e-17"), inc("2e-17")),
        (inc("1.00000000000000001"), inc("1.00000000000000009")),
        (inc("0.12345678901234567"), None),
        (None, exc("0.12345678901234567")),
        (inc("-1e30"), inc("1e30")),
        (inc("1e30"), None),
        (None, inc("-1e30")),
        (inc("9999999999999999"), None),
        (None, inc("-9999999999999999.5")),
        (inc("-10000000000000000"), exc("10000000000000000")),
        (exc("9999999999999999.9999999999999998"), None),
        (inc("5"), inc("3")),
        (exc("3"), exc("3")),
        (inc("3"), exc("3")),
        (exc("1.2"), exc("1.8")),
        (inc("1.2"), inc("1.8")),
        (exc("1"), exc("2")),
        (inc("1e300"), None),
        (inc("-1e-300"), inc("1e-300")),
    ]
}

#[test]
fn numbers_match_the_reference_exactly() {
    let mut checked = 0;
    for (min, max) in table() {
        checked += check(false, min, max, true);
    }
    println!("number table: {checked} strings checked");
    assert!(checked > 400_000, "{checked}");
}

#[test]
fn integers_match_the_reference_exactly() {
    let mut checked = 0;
    for (min, max) in table() {
        checked += check(true, min, max, false);
    }
    // Every integer of a wide window, for the small ranges.
    for (min, max) in [
        (inc("0"), inc("100")),
        (inc("-90"), inc("90")),
        (exc("-1000"), exc("-17.5")),
    ] {
        let re = compile(&integer_range(min.as_ref(), max.as_ref()).unwrap());
        for i in -2000..=2000 {
            let expected = in_range(&Decimal::from_i128(i), &min, &max);
            assert_eq!(re.is_match(&i.to_string()), expected, "{i}");
            checked += 1;
        }
    }
    println!("integer table: {checked} strings checked");
    assert!(checked > 20_000, "{checked}");
}

/// A random decimal of up to 3 integer digits and 3 fraction digits.
fn random_decimal(rng: &mut Lcg) -> String {
    let sign = if rng.next(2) == 0 { "-" } else { "" };
    let int = match rng.next(4) {
        0 => 0,
        1 => rng.next(10),
        2 => rng.next(100),
        _ => rng.next(1000),
    };
    match rng.next(3) {
        0 => format!("{sign}{int}"),
        1 => format!("{sign}{int}.{}", rng.next(10)),
        _ => format!("{sign}{int}.{:03}", rng.next(1000)),
    }
}

/// Wider: up to 7 integer digits and 6 fraction digits, or powers
/// of ten far beyond the caps either way.
fn random_wide_decimal(rng: &mut Lcg) -> String {
    let sign = if rng.next(2) == 0 { "-" } else { "" };
    match rng.next(8) {
        0 => format!("{sign}1e{}", rng.next(40) as i64 - 20),
        1 => format!("{sign}{}e-{}", rng.next(100), rng.next(20)),
        _ => {
            let int_digits = rng.next(8) as u32;
            let int = rng.next(10u64.pow(int_digits));
            let digits = rng.next(7) as usize;
            let frac = rng.next(10u64.pow(digits as u32));
            if digits == 0 {
                format!("{sign}{int}")
            } else {
                format!("{sign}{int}.{frac:0digits$}")
            }
        }
    }
}

/// No bound, or `text` as an inclusive or an exclusive one.
fn random_bound(rng: &mut Lcg, text: String) -> Option<Bound> {
    let value = d(&text);
    match rng.next(5) {
        0 => None,
        1 | 2 => Some(Bound::Inclusive(value)),
        _ => Some(Bound::Exclusive(value)),
    }
}

#[test]
fn random_ranges_match_the_reference_exactly() {
    let mut rng = Lcg(0x5eed);
    let mut checked = 0;
    for i in 0..400 {
        let (min, max) = if i % 2 == 0 {
            let (a, b) = (random_decimal(&mut rng), random_decimal(&mut rng));
            (random_bound(&mut rng, a), random_bound(&mut rng, b))
        } else {
            let (a, b) = (random_wide_decimal(&mut rng), random_wide_decimal(&mut rng));
            (random_bound(&mut rng, a), random_bound(&mut rng, b))
        };
        if min.is_none() && max.is_none() {
            continue;
        }
        checked += check(false, min.clone(), max.clone(), false);
        checked += check(true, min, max, false);
    }
    println!("random ranges: {checked} strings checked");
    assert!(checked > 300_000, "{checked}");
}

#[test]
fn empty_ranges_are_errors_naming_the_bounds() {
    let empty = [
        (true, inc("5"), inc("3")),
        (false, inc("5"), inc("3")),
        (false, exc("3"), exc("3")),
        (false, inc("3"), exc("3")),
        (false, exc("0"), exc("0")),
        (true, exc("1"), exc("2")),
        (true, inc("1.2"), inc("1.8")),
        (true, inc("1e300"), None),
        (false, inc("1e300"), None),
        (true, None, inc("-1e17")),
        (false, inc("1e-17"), inc("2e-17")),
        (false, exc("9999999999999999.9999999999999999"), None),
    ];
    for (integer, min, max) in empty {
        let result = if integer {
            integer_range(min.as_ref(), max.as_ref())
        } else {
            number_range(min.as_ref(), max.as_ref())
        };
        assert!(
            matches!(result, Err(RangeError::Empty { .. })),
            "{min:?}..{max:?}: {result:?}"
        );
    }
    let err = number_range(exc("1.5").as_ref(), inc("1").as_ref()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "exclusiveMinimum 1.5, maximum 1: no number in this range can be generated"
    );
    assert_eq!(
        integer_range(inc("1.2").as_ref(), exc("2").as_ref()).unwrap_err(),
        RangeError::Empty {
            kind: "integer",
            min: "minimum 1.2".into(),
            max: "exclusiveMaximum 2".into()
        }
    );
}

#[test]
fn unbounded_forms() {
    let re = compile(&number_range(None, None).unwrap());
    for ok in [
        "0",
        "0e5",
        "1e2",
        "-1.5E-300",
        "0.0",
        "-0.5e+1",
        "12.50",
        "1E999",
        "-9999999999999999.9999999999999999e-999",
    ] {
        assert!(re.is_match(ok), "{ok}");
    }
    for bad in [
        "-0", "-0e1", "-0.0e1", "-0.00", "1e1000", "1e", ".5e1", "+1e1", "01e1", "1.e1",
    ] {
        assert!(!re.is_match(bad), "{bad}");
    }
}

/// Nesting depth of groups (alternations and repetitions of compounds).
fn depth(expr: &Expr) -> usize {
    match expr {
        Expr::Seq(items) => items.iter().map(depth).max().unwrap_or(0),
        Expr::Alt(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Expr::Repeat { expr, .. } => 1 + depth(expr),
        _ => 0,
    }
}

#[test]
fn typical_grammars_are_small() {
    let cases: Vec<(bool, Case)> = vec![
        (true, (inc("0"), inc("100"))),
        (true, (inc("-90"), inc("90"))),
        (true, (inc("-2147483648"), inc("2147483647"))),
        (false, (inc("0"), None)),
        (false, (exc("0"), None)),
        (false, (inc("0.5"), exc("10"))),
        (false, (inc("0.0001"), None)),
        (false, (None, inc("1e10"))),
        (false, (inc("-90"), inc("90"))),
        (false, (inc("-180"), exc("180"))),
        (false, (None, None)),
    ];
    let extreme: Vec<(bool, Case)> = vec![
        (
            false,
            (inc("0.1234567890123456"), inc("0.1234567890123457")),
        ),
        (
            false,
            (exc("-0.1234567890123456"), inc("1.1234567890123457")),
        ),
        (
            false,
            (exc("1e15"), inc("9999999999999999.9999999999999999")),
        ),
        (
            false,
            (inc("-9999999999999999.9999999999999999"), exc("-1e-16")),
        ),
    ];
    let limits = std::iter::repeat_n(700, cases.len()).chain(std::iter::repeat(2500));
    for ((integer, (min, max)), limit) in cases.into_iter().chain(extreme).zip(limits) {
        let expr = if integer {
            integer_range(min.as_ref(), max.as_ref())
        } else {
            number_range(min.as_ref(), max.as_ref())
        }
        .unwrap();
        let gbnf = expr.to_gbnf();
        println!("integer={integer} {min:?}..{max:?}:\n  {gbnf}");
        assert!(gbnf.len() < limit, "{} > {limit}: {gbnf}", gbnf.len());
        assert!(depth(&expr) <= 12, "{gbnf}");
    }
}

#[test]
fn golden_grammars() {
    let gbnf = |integer: bool, min: Option<Bound>, max: Option<Bound>| {
        let built = if integer {
            integer_range(min.as_ref(), max.as_ref())
        } else {
            number_range(min.as_ref(), max.as_ref())
        };
        built.unwrap().to_gbnf()
    };
    assert_eq!(gbnf(true, None, None), r#"("-"? [1-9] [0-9]{0,15}) | "0""#);
    assert_eq!(
        gbnf(true, inc("0"), inc("100")),
        r#""0" | ([1-9] [0-9]?) | "100""#
    );
    assert_eq!(
        gbnf(true, inc("-90"), inc("90")),
        r#"("-"? ([1-9] | ([1-8] [0-9]) | "90")) | "0""#
    );
    assert_eq!(gbnf(true, exc("0"), None), r#"[1-9] [0-9]{0,15}"#);
    assert_eq!(gbnf(true, inc("-5"), inc("-3")), r#""-" [3-5]"#);
    assert_eq!(
        gbnf(true, inc("-128"), inc("127")).matches("128").count(),
        1
    );
    assert_eq!(
        gbnf(false, inc("0.5"), exc("10")),
        r#"("0." [5-9] [0-9]{0,15}) | ([1-9] ("." [0-9]{1,16})?)"#
    );
    assert_eq!(
        gbnf(false, inc("0"), None),
        r#"("0" | ([1-9] [0-9]{0,15})) ("." [0-9]{1,16})?"#
    );
    assert!(gbnf(false, None, inc("1.5"))
        .ends_with(r#" | ("1" ("." [0-4] [0-9]{0,15})?) | ("1.5" "0"{0,15})"#));
    assert_eq!(
        gbnf(false, inc("1"), inc("1.05")),
        r#"("1" ".0"?) | ("1.0" [0-4] [0-9]{0,14}) | ("1.05" "0"{0,14})"#
    );
    assert!(gbnf(false, None, inc("0")).ends_with(r#" | ("0" ("." "0"{1,16})?)"#));
}
