//! Tests of whole patterns: a table of real-world patterns and random ones
//! checked against the `regex` crate as a reference engine, error messages,
//! and hostile inputs.

use super::lower::nullable;
use super::*;
use crate::schema::strings::{any_char, encode_str};
use crate::schema::test_rng::Lcg;
use std::time::Instant;

/// ECMAScript `\s` as the inside of a Rust class.
macro_rules! es_space {
    () => {
        r"\t\n\x0B\x0C\r \xA0\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}"
    };
}

/// ECMAScript `.` as a Rust class.
macro_rules! es_dot {
    () => {
        r"[^\n\r\x{2028}\x{2029}]"
    };
}

/// A pattern, an equivalent Rust regex on decoded values (`None`: the
/// pattern itself), and samples beyond the common ones.
type Case = (&'static str, Option<&'static str>, &'static [&'static str]);

const CASES: &[Case] = &[
    (
        r"^[a-z0-9-]+$",
        None,
        &["abc-123", "ABC", "a_b", "-", "a b", "abc\n"],
    ),
    (
        r"^\d{4}-\d{2}-\d{2}$",
        Some(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"),
        &[
            "2024-01-31",
            "2024-1-31",
            "20240131",
            "2024-01-31x",
            "٢٠٢٤-01-31",
            "x2024-01-31",
        ],
    ),
    (
        r"^https?://",
        None,
        &[
            "http://x", "https://", "ftp://", "xhttp://", "HTTP://", "https:/",
        ],
    ),
    (r"[A-Z]", None, &["abc", "aBc", "É", "\u{1d400}"]),
    (
        r"^(\+|-)?\d+$",
        Some(r"^(\+|-)?[0-9]+$"),
        &["+1", "-12", "12", "+-1", "1.5", "+", "١"],
    ),
    (
        r"^[^@]+@[^@]+\.[^@]+$",
        None,
        &[
            "a@b.c",
            "a@b",
            "@b.c",
            "a@@b.c",
            "a\"b@c\\d.e",
            "é@ü.日",
            "a\n@b.c",
        ],
    ),
    (
        r"^\S+$",
        Some(concat!("^[^", es_space!(), "]+$")),
        &["abc", "a b", "a\u{a0}b", "\u{feff}", "😀", "\"\\", "\u{85}"],
    ),
    (
        r"^.{1,5}$",
        Some(concat!("^", es_dot!(), "{1,5}$")),
        &[
            "abcde",
            "abcdef",
            "😀😀😀😀😀",
            "😀😀😀😀😀😀",
            "a\nb",
            "a\rb",
            "\u{2028}",
            "\u{2029}",
            "\u{85}",
            "\t",
            "\"\"\"\"\"",
        ],
    ),
    (r"a|b", None, &["b", "c", "xax", "BA"]),
    (
        r"^(?:[01]\d|2[0-3]):[0-5]\d$",
        Some(r"^(?:[01][0-9]|2[0-3]):[0-5][0-9]$"),
        &["00:00", "23:59", "24:00", "9:00", "12:60", "19:5"],
    ),
    (r"^\$", None, &["$1", "a$", "$\n"]),
    (
        r"^[\w.-]+$",
        Some(r"^[0-9A-Za-z_.\-]+$"),
        &["a.b-c_d", "é", "a/b"],
    ),
    (r"\\", None, &["a\\b", "/", "\\\\"]),
    ("\"", None, &["say \"hi\"", "'", "\\\""]),
    (
        r"^[a-zA-Z_][a-zA-Z0-9_]*$",
        None,
        &["_x1", "1x", "x-y", "Xyz"],
    ),
    (
        r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$",
        None,
        &[
            "123e4567-e89b-12d3-a456-426614174000",
            "123E4567-e89b-12d3-a456-426614174000",
            "123e4567e89b12d3a456426614174000",
        ],
    ),
    (
        r"^#[0-9a-fA-F]{6}$",
        None,
        &["#ff00AA", "#ff00a", "ff00aa", "#ff00aa0"],
    ),
    (r"^[A-Z]{2}$", None, &["FR", "fr", "FRA", "F"]),
    (
        r"^\+?[1-9]\d{1,14}$",
        Some(r"^\+?[1-9][0-9]{1,14}$"),
        &["+33123456789", "0123", "+1", "12", "1234567890123456"],
    ),
    (
        r"^(0|[1-9]\d*)(\.\d+)?$",
        Some(r"^(0|[1-9][0-9]*)(\.[0-9]+)?$"),
        &["0", "0.5", "01", "10.25", "1.", ".5"],
    ),
    (
        r"^v?\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$",
        Some(r"^v?[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.\-]+)?$"),
        &["1.2.3", "v1.2.3-rc.1", "1.2", "v1.2.3-", "1.2.3+b"],
    ),
    (
        r"^[^\s]+$",
        Some(concat!("^[^", es_space!(), "]+$")),
        &["abc", "a\u{3000}b", "a\u{200b}b"],
    ),
    (
        r"\s",
        Some(concat!("[", es_space!(), "]")),
        &[
            "\u{b}", "\u{c}", "\u{1680}", "\u{200a}", "\u{200b}", "\u{205f}", "x",
        ],
    ),
    (
        r"^\s*$",
        Some(concat!("^[", es_space!(), "]*$")),
        &["   ", "\t\n\r", "\u{feff}\u{a0}", " x "],
    ),
    (r"abc", None, &["xxabcxx", "ab", "ABC", "a\"bc"]),
    (r"^abc$", None, &["abcd", "xabc"]),
    (r"^$", None, &["x"]),
    (r"^", None, &["x"]),
    (r"$", None, &["x"]),
    ("", None, &["x"]),
    (r"^a|b$", None, &["ab", "ba", "cab", "bc", "acb"]),
    (r"^(a|b)*$", None, &["abba", "abc"]),
    (
        r"^(?<year>\d{4})-(?<month>\d{2})$",
        Some(r"^(?P<year>[0-9]{4})-(?P<month>[0-9]{2})$"),
        &["2024-05", "2024-5"],
    ),
    (r"x{2,}", None, &["x", "xx", "axxxb", "x x"]),
    (r"^a{2,3}?$", Some(r"^a{2,3}$"), &["a", "aa", "aaa", "aaaa"]),
    (
        r"^a+?b*?$",
        Some(r"^a+b*$"),
        &["a", "ab", "abb", "b", "aab"],
    ),
    (r"a{", Some(r"a\{"), &["a{", "{", "xa{y"]),
    (r"^{,5}$", Some(r"^\{,5\}$"), &["{,5}", "{5}"]),
    (
        r"^x{1,2}}$",
        Some(r"^x{1,2}\}$"),
        &["x}", "xx}", "xxx}", "x"],
    ),
    (r"^a{1,b}$", Some(r"^a\{1,b\}$"), &["a{1,b}", "ab"]),
    (r"[\]\\]", None, &["]", "x\\", "["]),
    (
        r"^[^\x22\\]*$",
        Some(r#"^[^"\\]*$"#),
        &["plain", "q\"", "b\\", "é😀"],
    ),
    (r"\n", None, &["a\nb", "a\\nb", "\r"]),
    (r"^\t+$", None, &["\t\t", "\\t", " "]),
    (r"\x41\u0042", Some(r"AB"), &["xABy", "A B", "ab"]),
    (r"\uD83D\uDE00", Some(r"\x{1F600}"), &["😀", "x😀y", "😁"]),
    (
        r"^[\uD83D\uDE00-\uD83D\uDE4F]+$",
        Some(r"^[\x{1F600}-\x{1F64F}]+$"),
        &["😀😁", "🙏", "🚀", "a"],
    ),
    (r"\cJ", Some(r"\n"), &["a\nb", "J"]),
    (r"^[\b]$", Some(r"^\x08$"), &["\u{8}", "b", "\\b"]),
    (r"\0", Some(r"\x00"), &["\0", "0", "\\0"]),
    (r"^[\d-z]+$", Some(r"^[0-9\-z]+$"), &["1-z", "y", "5"]),
    (r"^\W+$", Some(r"^[^0-9A-Za-z_]+$"), &["!!", "a!", "é"]),
    (r"^\D$", Some(r"^[^0-9]$"), &["5", "x", "\n"]),
    (r"[^]", Some(r"(?s:.)"), &["\n"]),
    (r"a|[]", Some(r"a"), &["ba", "b"]),
    (r"^(?:a*)*$", None, &["aaa", "ab"]),
    (r"^(a?b?)+$", None, &["abab", "ba", "abc"]),
    (r"^(?:|x)+y$", None, &["y", "xxy", "xx"]),
    (
        r"^\/api\/v\d+\/",
        Some(r"^/api/v[0-9]+/"),
        &["/api/v1/x", "/api/v/x", "api/v1/"],
    ),
    (
        r"^[\u0000-\u001f]+$",
        Some(r"^[\x00-\x1F]+$"),
        &["\u{1}\u{1f}", "\n\t", " "],
    ),
    (
        r"^[^\u0000-\u001f]*$",
        Some(r"^[^\x00-\x1F]*$"),
        &["ok", "not\nok", "\u{7f}"],
    ),
    (r"^é+ü$", None, &["ééü", "eü", "é"]),
    (r"😀{2}", None, &["😀😀", "😀", "x😀😀😀"]),
    (
        r"^[\s\S]{0,3}$",
        Some(r"^(?s:.){0,3}$"),
        &["\n\n\n", "abcd"],
    ),
    (
        r"^\.\*\+\?\(\)\[\]\{\}\|\^\$\/\-$",
        Some(r"^\.\*\+\?\(\)\[\]\{\}\|\^\$/-$"),
        &[".*+?()[]{}|^$/-", ".*+?()[]{}|^$/"],
    ),
    (
        r"^[a-z]+(?:\.[a-z]+)*@example\.com$",
        None,
        &["a.b@example.com", "a.@example.com", "a@exampleXcom"],
    ),
    (
        r"^(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)$",
        Some(
            r"^(?:(?:25[0-5]|2[0-4][0-9]|1?[0-9]?[0-9])\.){3}(?:25[0-5]|2[0-4][0-9]|1?[0-9]?[0-9])$",
        ),
        &["192.168.0.1", "256.1.1.1", "1.2.3", "01.2.3.4", "1.2.3.4.5"],
    ),
    (
        r"^[A-Z][a-z]*( [A-Z][a-z]*)*$",
        None,
        &["John Smith", "john", "John  Smith"],
    ),
    (r"\d{3}", Some(r"[0-9]{3}"), &["ab123", "12", "1 23"]),
    (r"^[^<>]*$", None, &["<b>", "a>b", "ab"]),
    (
        r"foo|^bar|baz$|^qux$",
        None,
        &["xfoox", "barx", "xbar", "xbaz", "bazx", "qux", "quxx"],
    ),
    (r"^a{0}b$", None, &["b", "ab"]),
    (r"^(ab){2}$", None, &["abab", "ab", "ababab"]),
    (r"a*", None, &["bbb"]),
    (
        r"^\w+@\w+$",
        Some(r"^[0-9A-Za-z_]+@[0-9A-Za-z_]+$"),
        &["a@b", "a@", "é@b"],
    ),
    (
        r"^[\x20-\x7e]*$",
        Some(r"^[ -~]*$"),
        &["printable ~", "tab\t", "é"],
    ),
    (
        r"^['\u2019]$",
        Some(r"^['\x{2019}]$"),
        &["'", "\u{2019}", "\""],
    ),
];

/// Checked against every pattern.
const COMMON_SAMPLES: &[&str] = &[
    "",
    "a",
    "abc",
    "A",
    "Z",
    "0",
    "9",
    "123",
    "-",
    "_",
    ".",
    "a-b",
    "\"",
    "\\",
    "\n",
    "\r",
    "\t",
    "\u{1}",
    "\u{1f}",
    "\u{7f}",
    "\u{8}",
    "\u{c}",
    "é",
    "日本",
    "😀",
    "a\"b",
    "x\\y",
    " ",
    "\u{a0}",
    "\u{2028}",
    "\u{feff}",
    "a b",
    "2024-01-31",
    "http://x",
    "https://example.com/a?b=c",
    "user@example.com",
    "$",
    "^",
    "ab\ncd",
    "\\n",
    "\\\"",
    "{",
    "}",
    "[]",
    "()",
    "aaaa",
    "abab",
    "-12",
    "+1",
    "00:00",
];

/// The alphabet of the exhaustive short-string check.
const ALPHABET: &[char] = &[
    'a', 'b', 'Z', '0', '-', '.', '"', '\\', '\n', ' ', '😀', '@',
];

fn anchored(re: &str) -> ::regex::Regex {
    match ::regex::Regex::new(&format!("^(?:{re})$")) {
        Ok(re) => re,
        Err(e) => panic!("bad regex {re}: {e}"),
    }
}

fn reference(re: &str) -> ::regex::Regex {
    match ::regex::Regex::new(re) {
        Ok(re) => re,
        Err(e) => panic!("bad reference regex {re}: {e}"),
    }
}

fn grammar_regex(pattern: &str) -> ::regex::Regex {
    match pattern_to_expr(pattern) {
        Ok(expr) => {
            assert!(
                unbounded_bodies_are_not_nullable(&expr),
                "{pattern}: nullable star body"
            );
            anchored(&expr.to_regex())
        }
        Err(e) => panic!("{pattern}: {e}"),
    }
}

fn unbounded_bodies_are_not_nullable(expr: &Expr) -> bool {
    match expr {
        Expr::Lit(_) | Expr::Class { .. } | Expr::Rule(_) => true,
        Expr::Seq(items) | Expr::Alt(items) => items.iter().all(unbounded_bodies_are_not_nullable),
        Expr::Repeat { expr, max, .. } => {
            (max.is_some() || !nullable(expr)) && unbounded_bodies_are_not_nullable(expr)
        }
    }
}

/// Every string over `ALPHABET` of at most `len` characters.
fn short_strings(len: usize) -> Vec<String> {
    let mut all = vec![String::new()];
    let mut layer = vec![String::new()];
    for _ in 0..len {
        layer = layer
            .iter()
            .flat_map(|s| ALPHABET.iter().map(move |c| format!("{s}{c}")))
            .collect();
        all.extend(layer.iter().cloned());
    }
    all
}

fn assert_same_verdict(
    pattern: &str,
    expected: &::regex::Regex,
    ours: &::regex::Regex,
    sample: &str,
) -> bool {
    let want = expected.is_match(sample);
    let got = ours.is_match(&encode_str(sample));
    assert_eq!(got, want, "pattern {pattern:?}, sample {sample:?}");
    want
}

#[test]
fn table_of_real_world_patterns() {
    let mut checks = 0;
    for (pattern, rust, samples) in CASES {
        let expected = reference(rust.unwrap_or(pattern));
        let ours = grammar_regex(pattern);
        for sample in samples.iter().chain(COMMON_SAMPLES) {
            assert_same_verdict(pattern, &expected, &ours, sample);
            checks += 1;
        }
    }
    assert!(
        CASES.len() >= 60 && checks > 4000,
        "{} cases, {checks} checks",
        CASES.len()
    );
}

#[test]
fn table_samples_exercise_both_verdicts() {
    for (pattern, rust, samples) in CASES {
        let expected = reference(rust.unwrap_or(pattern));
        let all: Vec<&str> = samples.iter().chain(COMMON_SAMPLES).copied().collect();
        let matching = all.iter().filter(|s| expected.is_match(s)).count();
        assert!(matching > 0, "{pattern}: no matching sample");
        let universal = ["", "^", "$", "a*", "^(?:a*)*$"].contains(pattern);
        assert!(
            universal || matching < all.len(),
            "{pattern}: no failing sample"
        );
    }
}

#[test]
fn table_patterns_on_every_short_string() {
    let strings = short_strings(3);
    for (pattern, rust, _) in CASES {
        let expected = reference(rust.unwrap_or(pattern));
        let ours = grammar_regex(pattern);
        for s in &strings {
            assert_same_verdict(pattern, &expected, &ours, s);
        }
    }
}

#[test]
fn non_canonical_encodings_never_match() {
    let broken = [
        "\"", "\\", "\n", "\u{1}", "\\/", "\\u0041", "\\u00e9", "a\"", "\\x",
    ];
    for pattern in [
        r"^.$", r"^[^a]$", r"^\S$", r"[\s\S]", "^\"$", r"^\\$", r"^\n$",
    ] {
        let ours = grammar_regex(pattern);
        for s in broken {
            assert!(!ours.is_match(s), "{pattern} matched raw {s:?}");
        }
    }
}

/// Atoms as (ECMAScript, Rust) pairs of equal meaning.
const ATOMS: &[(&str, &str)] = &[
    ("a", "a"),
    ("b", "b"),
    ("\"", "\""),
    (r"\\", r"\\"),
    (r"\n", r"\n"),
    ("é", "é"),
    ("😀", "😀"),
    ("-", "-"),
    (".", es_dot!()),
    (r"\d", "[0-9]"),
    (r"\w", "[0-9A-Za-z_]"),
    (r"\s", concat!("[", es_space!(), "]")),
    (r"\S", concat!("[^", es_space!(), "]")),
    ("[ab\"]", "[ab\"]"),
    (r"[^a\n]", r"[^a\n]"),
    (r"[\\-a]", r"[\\-a]"),
];

const QUANTIFIERS: &[&str] = &["*", "+", "?", "{0,2}", "{2}", "{1,}", "*?", "??", "{1,3}?"];

fn random_alternation(rng: &mut Lcg, depth: usize, es: &mut String, rust: &mut String) {
    for i in 0..=rng.below(3) {
        if i > 0 {
            es.push('|');
            rust.push('|');
        }
        for _ in 0..rng.below(4) {
            random_term(rng, depth, es, rust);
        }
    }
}

fn random_term(rng: &mut Lcg, depth: usize, es: &mut String, rust: &mut String) {
    if depth > 0 && rng.below(4) == 0 {
        let open = if rng.below(2) == 0 { "(" } else { "(?:" };
        es.push_str(open);
        rust.push_str(open);
        random_alternation(rng, depth - 1, es, rust);
        es.push(')');
        rust.push(')');
    } else {
        let (e, r) = ATOMS[rng.below(ATOMS.len())];
        es.push_str(e);
        rust.push_str("(?:");
        rust.push_str(r);
        rust.push(')');
    }
    if rng.below(3) == 0 {
        let q = QUANTIFIERS[rng.below(QUANTIFIERS.len())];
        es.push_str(q);
        rust.push_str(q);
    }
}

/// A random pattern whose top-level alternatives may be anchored.
fn random_pattern(rng: &mut Lcg) -> (String, String) {
    let (mut es, mut rust) = (String::new(), String::new());
    for i in 0..=rng.below(3) {
        if i > 0 {
            es.push('|');
            rust.push('|');
        }
        let (start, end) = (rng.below(2) == 0, rng.below(2) == 0);
        let (mut e, mut r) = (String::new(), String::new());
        random_alternation(rng, 2, &mut e, &mut r);
        es.push_str(&format!(
            "{}(?:{e}){}",
            if start { "^" } else { "" },
            if end { "$" } else { "" }
        ));
        rust.push_str(&format!(
            "{}(?:{r}){}",
            if start { "^" } else { "" },
            if end { "$" } else { "" }
        ));
    }
    (es, rust)
}

#[test]
fn random_patterns_agree_with_a_reference_engine() {
    const SAMPLE_CHARS: &[char] = &[
        'a', 'b', '"', '\\', '\n', 'é', '😀', '-', '1', '_', ' ', '\u{a0}',
    ];
    let mut rng = Lcg(0x5eed);
    let mut matched = 0;
    let mut checks = 0;
    for _ in 0..300 {
        let (es, rust) = random_pattern(&mut rng);
        let expected = reference(&rust);
        let ours = grammar_regex(&es);
        for _ in 0..150 {
            let len = rng.below(7);
            let sample: String = (0..len)
                .map(|_| SAMPLE_CHARS[rng.below(SAMPLE_CHARS.len())])
                .collect();
            if assert_same_verdict(&es, &expected, &ours, &sample) {
                matched += 1;
            }
            checks += 1;
        }
    }
    assert!(
        matched > checks / 10 && matched < checks * 9 / 10,
        "{matched} of {checks}"
    );
}

#[test]
fn gbnf_of_an_anchored_class() {
    assert_eq!(
        pattern_to_expr(r"^[a-z]+$").map(|e| e.to_gbnf()),
        Ok("[a-z]+".to_owned())
    );
}

#[test]
fn gbnf_escapes_pattern_characters_for_json() {
    let gbnf = |p: &str| pattern_to_expr(p).map(|e| e.to_gbnf());
    assert_eq!(gbnf("^\"$"), Ok(r#""\\\"""#.to_owned()));
    assert_eq!(gbnf(r"^\\$"), Ok(r#""\\\\""#.to_owned()));
    assert_eq!(gbnf(r"^\n$"), Ok(r#""\\n""#.to_owned()));
    assert_eq!(gbnf(r"^\x01$"), Ok(r#""\\u0001""#.to_owned()));
}

#[test]
fn error_messages_carry_their_data() {
    let msg = |p: &str| pattern_to_expr(p).err().map(|e| e.to_string());
    assert_eq!(
        msg("a(?=b)"),
        Some("unsupported regex feature lookahead (?= at offset 1".to_owned())
    );
    assert_eq!(
        msg("a{2000}"),
        Some("regex repetition 2000 exceeds the limit 1000".to_owned())
    );
    assert_eq!(
        msg("(a"),
        Some("invalid regex at offset 0: unterminated group".to_owned())
    );
}

/// Runs `f`, printing how long it took (timing is not asserted in
/// tests; the fuzzers and the benchmarks bound it).
pub(super) fn timed<T>(what: &str, f: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let out = f();
    eprintln!("{what}: {:?}", start.elapsed());
    out
}

#[test]
fn huge_patterns_stay_fast() {
    let same = vec!["a"; 100_000].join("|");
    let expr = timed("same alternatives", || pattern_to_expr(&same));
    assert_eq!(
        expr,
        Ok(Expr::seq([
            any_char().repeat(0, None),
            Expr::lit("a"),
            any_char().repeat(0, None)
        ]))
    );
    let distinct: Vec<String> = (0..50_000).map(|i| format!("x{i}")).collect();
    let distinct = format!("^(?:{})$", distinct.join("|"));
    match timed("distinct alternatives", || pattern_to_expr(&distinct)) {
        Ok(Expr::Alt(items)) => assert_eq!(items.len(), 50_000),
        other => panic!("{other:?}"),
    }
    let long = "ab\\\"".repeat(250_000);
    assert!(timed("long literal", || pattern_to_expr(&long)).is_ok());
    let groups = "(?:a|b)*".repeat(20_000);
    assert!(timed("many groups", || pattern_to_expr(&groups)).is_ok());
    let classes = "[^a-z\\d\\s]".repeat(20_000);
    assert!(timed("many classes", || pattern_to_expr(&classes)).is_ok());
    let brackets = "[".repeat(100_000);
    assert!(matches!(
        pattern_to_expr(&brackets),
        Err(RegexError::Syntax { offset: 0, .. })
    ));
    let braces = "a{1".repeat(100_000);
    assert!(timed("braces", || pattern_to_expr(&braces)).is_ok());
    let big_class = format!(
        "[{}]",
        (0x100u32..0x20000)
            .filter_map(char::from_u32)
            .collect::<String>()
    );
    assert!(timed("big class", || pattern_to_expr(&big_class)).is_ok());
}

#[test]
fn random_garbage_never_panics() {
    const PIECES: &[&str] = &[
        "(", ")", "[", "]", "{", "}", "|", "^", "$", "*", "+", "?", ".", "\\", "-", ",", "a", "1",
        "0", "?:", "?<", "?=", "<", ">", "\\u", "D83D", "\\x", "\\c", "é", "😀", "{2,", "{1}",
    ];
    let mut rng = Lcg(42);
    let mut ok = 0;
    for _ in 0..20_000 {
        let pattern: String = (0..rng.below(12))
            .map(|_| PIECES[rng.below(PIECES.len())])
            .collect();
        if let Ok(expr) = pattern_to_expr(&pattern) {
            assert!(unbounded_bodies_are_not_nullable(&expr), "{pattern}");
            assert!(!expr.to_gbnf().is_empty());
            ok += 1;
        }
    }
    assert!(ok > 1000, "{ok}");
}
