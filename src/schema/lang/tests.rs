//! The automata against independent references: a direct reading of the
//! description's semantics (dynamic programming over substrings), and the
//! `regex` crate for patterns, on every short string over a small alphabet.

use super::*;
use crate::schema::regex::pattern_to_re;
use crate::schema::strings::encode_str;

/// A deterministic pseudo-random sequence (xorshift64*).
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const ALPHABET: [char; 4] = ['a', 'b', '"', '\n'];

/// Every string over `ALPHABET` up to `len` characters.
fn strings(len: usize) -> Vec<Vec<char>> {
    let mut out = vec![Vec::new()];
    let mut layer = vec![Vec::new()];
    for _ in 0..len {
        let mut next = Vec::new();
        for s in &layer {
            for c in ALPHABET {
                let mut t: Vec<char> = s.clone();
                t.push(c);
                next.push(t);
            }
        }
        out.extend(next.iter().cloned());
        layer = next;
    }
    out
}

/// Whether `s[i..j]` is in the language of `re`, read from the definition.
fn reference(re: &Re, s: &[char], i: usize, j: usize) -> bool {
    match re {
        Re::Set(set) => j == i + 1 && set.contains(s[i]),
        Re::Seq(items) => seq(items, s, i, j),
        Re::Alt(items) => items.iter().any(|x| reference(x, s, i, j)),
        Re::And(items) => items.iter().all(|x| reference(x, s, i, j)),
        Re::Not(x) => !reference(x, s, i, j),
        Re::Repeat(x, min, max) => rep(x, *min, *max, s, i, j),
        Re::Multiple { modulus, scale } => {
            let text: String = s[i..j].iter().collect();
            is_multiple(&text, *modulus, *scale)
        }
    }
}

/// Whether `text` is a numeral `-?[0-9]+(\.[0-9]+)?` with at most `scale`
/// fraction digits whose value is a multiple of `modulus / 10^scale`: by exact rational arithmetic on the
/// numeral's integer and fraction (i128), a reading independent of the
/// automaton's digit-by-digit remainders.
fn is_multiple(text: &str, modulus: u64, scale: u32) -> bool {
    let body = text.strip_prefix('-').unwrap_or(text);
    let (int, frac) = match body.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (body, None),
    };
    let digits = |t: &str| !t.is_empty() && t.chars().all(|c| c.is_ascii_digit());
    if !digits(int) || frac.is_some_and(|f| !digits(f)) {
        return false;
    }
    let frac = frac.unwrap_or("");
    if frac.len() > scale as usize {
        return false;
    }
    // value = int + frac / 10^len(frac); it is a multiple of m / 10^k when
    // (int * 10^len + frac) * 10^k is a multiple of m * 10^len.
    let len = frac.len() as u32;
    let numerator = (int.to_owned() + frac).parse::<i128>().unwrap_or(0) * 10i128.pow(scale);
    numerator % (i128::from(modulus) * 10i128.pow(len)) == 0
}

fn seq(items: &[Re], s: &[char], i: usize, j: usize) -> bool {
    match items.split_first() {
        None => i == j,
        Some((first, rest)) => (i..=j).any(|k| reference(first, s, i, k) && seq(rest, s, k, j)),
    }
}

fn rep(x: &Re, min: u32, max: Option<u32>, s: &[char], i: usize, j: usize) -> bool {
    if i == j {
        return min == 0 || reference(x, s, i, i);
    }
    if max == Some(0) {
        return false;
    }
    (i + 1..=j).any(|k| {
        reference(x, s, i, k) && rep(x, min.saturating_sub(1), max.map(|m| m - 1), s, k, j)
    })
}

fn random_re(rng: &mut Rng, depth: u32) -> Re {
    let leaf = depth == 0 || rng.below(4) == 0;
    if leaf {
        let mut ranges = Vec::new();
        for c in ALPHABET {
            if rng.below(2) == 0 {
                ranges.push((c, c));
            }
        }
        if rng.below(8) == 0 {
            return Re::empty_string();
        }
        return Re::Set(CharSet::from_ranges(ranges));
    }
    let some = |rng: &mut Rng| -> Vec<Re> {
        (0..1 + rng.below(3))
            .map(|_| random_re(rng, depth - 1))
            .collect()
    };
    match rng.below(6) {
        0 | 1 => Re::Seq(some(rng)),
        2 => Re::Alt(some(rng)),
        3 => Re::And(some(rng)),
        4 => Re::Not(Box::new(random_re(rng, depth - 1))),
        _ => {
            let min = rng.below(3) as u32;
            let max = match rng.below(3) {
                0 => None,
                _ => Some(min + rng.below(3) as u32),
            };
            Re::Repeat(Box::new(random_re(rng, depth - 1)), min, max)
        }
    }
}

/// A small matcher for emitted rules over the JSON-encoded text: the end
/// positions reachable from `starts`.
fn ends(expr: &Expr, rules: &[(String, Expr)], s: &[char], starts: Vec<usize>) -> Vec<usize> {
    if starts.is_empty() {
        return starts;
    }
    let mut out: Vec<usize> = match expr {
        Expr::Lit(l) => {
            let l: Vec<char> = l.chars().collect();
            starts
                .into_iter()
                .filter(|&i| s.get(i..i + l.len()) == Some(&l[..]))
                .map(|i| i + l.len())
                .collect()
        }
        Expr::Class { negated, ranges } => starts
            .into_iter()
            .filter(|&i| {
                s.get(i)
                    .is_some_and(|c| ranges.iter().any(|(a, b)| a <= c && c <= b) != *negated)
            })
            .map(|i| i + 1)
            .collect(),
        Expr::Seq(items) => items
            .iter()
            .fold(starts, |pos, item| ends(item, rules, s, pos)),
        Expr::Alt(items) => items
            .iter()
            .flat_map(|item| ends(item, rules, s, starts.clone()))
            .collect(),
        Expr::Repeat { expr, min, max } => {
            let mut all = Vec::new();
            let mut pos = starts;
            let mut n = 0;
            loop {
                if n >= *min {
                    all.extend(pos.iter().copied());
                }
                if max.is_some_and(|m| n >= m) || pos.is_empty() {
                    break;
                }
                let next = ends(expr, rules, s, pos.clone());
                let next: Vec<usize> = next.into_iter().filter(|p| !pos.contains(p)).collect();
                pos = next;
                n += 1;
                if n > 64 {
                    break;
                }
            }
            all
        }
        Expr::Rule(name) => {
            let body = &rules.iter().find(|(n, _)| n == name).expect("rule").1;
            ends(body, rules, s, starts)
        }
    };
    out.sort_unstable();
    out.dedup();
    out
}

fn emitted_matches(e: &Emitted, encoded: &str) -> bool {
    let s: Vec<char> = encoded.chars().collect();
    ends(&e.rules[0].1, &e.rules, &s, vec![0]).contains(&s.len())
}

fn emit(dfa: &Dfa, min: u64, max: Option<u64>) -> Option<Emitted> {
    emit_checked(dfa, min, max).expect("emits")
}

fn emit_checked(dfa: &Dfa, min: u64, max: Option<u64>) -> Result<Option<Emitted>, LangError> {
    let mut n = 0;
    dfa.rules(min, max, &mut || {
        n += 1;
        format!("s{n}")
    })
}

#[test]
fn automata_of_random_descriptions_match_their_definition() {
    let mut rng = Rng::new(7);
    let all = strings(5);
    for round in 0..400 {
        let re = random_re(&mut rng, 4);
        let dfa = Dfa::new(&re).expect("compiles");
        let mut any = false;
        for s in &all {
            let text: String = s.iter().collect();
            let want = reference(&re, s, 0, s.len());
            any |= want;
            assert_eq!(
                dfa.matches(&text),
                want,
                "round {round}: {re:?} on {text:?}"
            );
        }
        // Emptiness and the shortest length agree with the strings tried.
        match dfa.length_bounds() {
            None => assert!(!any && dfa.is_empty(), "round {round}: {re:?}"),
            Some((shortest, _)) => assert_eq!(any, shortest <= 5, "round {round}: {re:?}"),
        }
    }
}

#[test]
fn emitted_rules_match_the_encoded_strings_of_the_language_within_lengths() {
    let mut rng = Rng::new(11);
    let all = strings(5);
    for round in 0..300 {
        let re = random_re(&mut rng, 3);
        let dfa = Dfa::new(&re).expect("compiles");
        let min = rng.below(3);
        let max = match rng.below(3) {
            0 => None,
            _ => Some(min + rng.below(4)),
        };
        let emitted = emit(&dfa, min, max);
        assert_eq!(
            dfa.has_length_in(min, max).ok(),
            Some(emitted.is_some()),
            "round {round}: {re:?} {min}..{max:?}"
        );
        for s in &all {
            let text: String = s.iter().collect();
            let len = s.len() as u64;
            let want = reference(&re, s, 0, s.len()) && len >= min && max.is_none_or(|m| len <= m);
            let got = emitted
                .as_ref()
                .is_some_and(|e| emitted_matches(e, &encode_str(&text)));
            assert_eq!(
                got, want,
                "round {round}: {re:?} {min}..{max:?} on {text:?}"
            );
        }
    }
}

/// Patterns written in the syntax both ECMAScript and the `regex` crate
/// read the same way.
fn random_pattern(rng: &mut Rng, depth: u32) -> String {
    let atoms = ["a", "b", "[ab]", "[^a]", ".", "\\n", "\""];
    if depth == 0 || rng.below(3) == 0 {
        return atoms[rng.below(atoms.len() as u64) as usize].to_owned();
    }
    match rng.below(4) {
        0 => format!(
            "{}{}",
            random_pattern(rng, depth - 1),
            random_pattern(rng, depth - 1)
        ),
        1 => format!(
            "(?:{}|{})",
            random_pattern(rng, depth - 1),
            random_pattern(rng, depth - 1)
        ),
        2 => {
            let q = ["*", "+", "?", "{2}", "{1,3}", "{0,2}", "{2,}"];
            format!(
                "(?:{}){}",
                random_pattern(rng, depth - 1),
                q[rng.below(q.len() as u64) as usize]
            )
        }
        _ => {
            let anchored = rng.below(2) == 0;
            let p = random_pattern(rng, depth - 1);
            if anchored {
                format!("^{p}$")
            } else {
                p
            }
        }
    }
}

fn pattern(rng: &mut Rng) -> (String, Re, regex::Regex) {
    loop {
        let p = random_pattern(rng, 4);
        // Anchors only at the ends of the whole pattern.
        let inner_anchor = p
            .get(1..p.len().saturating_sub(1))
            .is_some_and(|m| m.contains('^') || m.contains('$'));
        if inner_anchor {
            continue;
        }
        let re = pattern_to_re(&p).expect("parses");
        let rust = regex::Regex::new(&p).expect("regex crate parses");
        return (p, re, rust);
    }
}

#[test]
fn intersections_and_complements_of_patterns_agree_with_the_regex_crate() {
    let mut rng = Rng::new(3);
    let all = strings(5);
    for _ in 0..200 {
        let (pa, a, ra) = pattern(&mut rng);
        let (pb, b, rb) = pattern(&mut rng);
        let both = Dfa::new(&Re::And(vec![a.clone(), b.clone()])).expect("compiles");
        let not_a = Dfa::new(&a.clone().complement()).expect("compiles");
        let a_not_b = Dfa::new(&Re::And(vec![a, b.complement()])).expect("compiles");
        for s in &all {
            let text: String = s.iter().collect();
            let (ma, mb) = (ra.is_match(&text), rb.is_match(&text));
            assert_eq!(
                both.matches(&text),
                ma && mb,
                "{pa:?} and {pb:?} on {text:?}"
            );
            assert_eq!(not_a.matches(&text), !ma, "not {pa:?} on {text:?}");
            assert_eq!(
                a_not_b.matches(&text),
                ma && !mb,
                "{pa:?} but not {pb:?} on {text:?}"
            );
        }
    }
}

#[test]
fn multiples_match_exact_arithmetic_on_every_short_numeral() {
    const CHARS: [char; 7] = ['0', '1', '3', '5', '7', '.', '-'];
    let mut texts = vec![String::new()];
    let mut layer = vec![String::new()];
    for _ in 0..6 {
        layer = layer
            .iter()
            .flat_map(|t| CHARS.iter().map(move |c| format!("{t}{c}")))
            .collect();
        texts.extend(layer.iter().cloned());
    }
    let syntax =
        Re::from_expr(&crate::schema::numeric::decimal_range(None, None, 16).unwrap()).unwrap();
    let numerals = Dfa::new(&syntax).unwrap();
    for (modulus, scale) in [
        (1, 0),
        (7, 0),
        (25, 1),
        (1, 2),
        (101, 0),
        (10, 0),
        (3, 3),
        (12, 1),
    ] {
        let multiple = Re::Multiple { modulus, scale };
        let dfa = Dfa::new(&multiple).unwrap();
        let not = Dfa::new(&Re::And(vec![
            syntax.clone(),
            multiple.clone().complement(),
        ]))
        .unwrap();
        let mut accepted = 0;
        for t in &texts {
            let expected = is_multiple(t, modulus, scale);
            assert_eq!(dfa.matches(t), expected, "{t} against {modulus}/10^{scale}");
            let numeral = numerals.matches(t);
            let within = t
                .split_once('.')
                .is_none_or(|(_, f)| f.len() <= scale as usize);
            assert_eq!(
                not.matches(t),
                numeral && !(within && expected),
                "{t} outside {modulus}/10^{scale}"
            );
            accepted += usize::from(expected);
        }
        assert!(
            accepted > 10,
            "{modulus}/10^{scale}: only {accepted} multiples"
        );
    }
}

#[test]
fn minimal_automata_of_familiar_languages() {
    let dfa = |p: &str| Dfa::new(&pattern_to_re(p).expect("parses")).expect("compiles");
    assert_eq!(dfa("^[a-z]+$").len(), 2);
    assert_eq!(dfa("abc").len(), 4);
    assert_eq!(dfa("^(a|b)*abb$").len(), 4);
    assert!(dfa("^a$").matches("a") && !dfa("^a$").matches("aa"));
    let never = Dfa::new(&Re::And(vec![
        pattern_to_re("^a+$").expect("parses"),
        pattern_to_re("b").expect("parses"),
    ]))
    .expect("compiles");
    assert!(never.is_empty());
}

#[test]
fn counted_parts_beside_any_string_do_not_count() {
    // An unanchored `[a-z]{1,255}` is "some letter": counting to 255 in
    // every state made a 21 ms conversion of a small schema.
    let cases = [
        ("[a-c]{1,255}", 2),
        ("^a{2,500}", 3),
        ("b{1,400}$", 2),
        ("^(?:ab){1,90}", 3),
        ("a{2,}", 3),
    ];
    let texts: Vec<String> = [
        "", "a", "b", "c", "aa", "ab", "abc", "ba", "bb", "xb", "xab", "ababc",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .chain(strings(4).iter().map(|s| s.iter().collect()))
    .collect();
    for (p, states) in cases {
        let dfa = Dfa::new(&pattern_to_re(p).expect("parses")).expect("compiles");
        assert_eq!(dfa.len(), states, "{p}");
        let rust = regex::Regex::new(p).expect("regex crate parses");
        for text in &texts {
            assert_eq!(dfa.matches(text), rust.is_match(text), "{p} on {text:?}");
        }
    }
    // Counted further than an automaton may explore: only absorbing the
    // extra repetitions keeps it within the limit.
    let far = Re::Repeat(
        Box::new(Re::Set(CharSet::from_ranges([('a', 'c')]))),
        1,
        Some(MAX_STATES as u32 * 2),
    );
    let unanchored = Re::Seq(vec![Re::any_string(), far.clone(), Re::any_string()]);
    assert_eq!(Dfa::new(&unanchored).expect("compiles").len(), 2);
    let at_end = Re::Seq(vec![Re::any_string(), far]);
    assert_eq!(Dfa::new(&at_end).expect("compiles").len(), 2);
}

#[test]
fn length_bounds_of_automata() {
    let dfa = |p: &str| Dfa::new(&pattern_to_re(p).expect("parses")).expect("compiles");
    assert_eq!(dfa("^[0-9]{3,5}$").length_bounds(), Some((3, Some(5))));
    assert_eq!(dfa("^x[0-9]*$").length_bounds(), Some((1, None)));
    assert_eq!(
        Dfa::new(&Re::nothing()).expect("compiles").length_bounds(),
        None
    );
}

#[test]
fn a_large_maximum_length_over_a_trailing_loop_stays_small() {
    let dfa = Dfa::new(&pattern_to_re("^[a-z][a-z0-9-]*$").expect("parses")).expect("compiles");
    let e = emit(&dfa, 0, Some(2048)).expect("some");
    assert!(e.rules.len() <= 2, "{:?}", e.rules);
    assert!(emitted_matches(&e, &format!("a{}", "0".repeat(2047))));
    assert!(!emitted_matches(&e, &format!("a{}", "0".repeat(2048))));
}

#[test]
fn length_checks_agree_with_the_rules_written_when_the_maximum_is_lowered() {
    use crate::schema::formats::Format;
    // About 15 states at each length: counting to 400 needs more than
    // MAX_STATES states, so the maximum is lowered (to about 68), or
    // refused where that drops below `min`. A URI counted to 64 is refused.
    let wide =
        Dfa::new(&pattern_to_re("^(?:[ab]|c[ab]{14})*$").expect("parses")).expect("compiles");
    let uri = Dfa::new(&Format::Uri.re().expect("plain characters")).expect("compiles");
    let cases = [
        (&wide, 0, Some(400)),
        (&wide, 60, Some(400)),
        (&wide, 100, Some(400)),
        (&wide, 5, None),
        (&uri, 0, Some(20)),
        (&uri, 0, Some(64)),
        (&uri, 3, None),
    ];
    for (dfa, min, max) in cases {
        let written = emit_checked(dfa, min, max);
        let checked = dfa.has_length_in(min, max);
        assert_eq!(
            checked.as_ref().ok(),
            written.as_ref().ok().map(Option::is_some).as_ref(),
            "{min}..{max:?}: {checked:?}"
        );
        assert_eq!(checked.is_err(), written.is_err(), "{min}..{max:?}");
    }
    let lowered = emit(&wide, 0, Some(400)).expect("some");
    assert!(emitted_matches(&lowered, &"ab".repeat(20)));
    assert!(!emitted_matches(&lowered, &"ab".repeat(100)), "not lowered");
    assert!(wide.has_length_in(100, Some(400)).is_err());
    assert!(uri.has_length_in(0, Some(64)).is_err());
}

#[test]
fn formats_read_as_languages() {
    use crate::schema::formats::Format;
    let uuid = Re::from_expr(&Format::Uuid.expr()).expect("plain characters");
    let dfa = Dfa::new(&uuid).expect("compiles");
    assert!(dfa.matches("123e4567-e89b-12d3-a456-426614174000"));
    assert!(!dfa.matches("123e4567-e89b-12d3-a456-42661417400"));
    assert_eq!(Re::from_expr(&Expr::lit("a\"b")), None);
    assert_eq!(Re::from_expr(&Expr::rule("x")), None);
}

#[test]
fn conjunctions_built_as_products_match_their_definition_and_are_minimal() {
    let mut rng = Rng::new(19);
    let all = strings(5);
    let every = Re::Repeat(
        Box::new(Re::Set(CharSet::from_ranges([('\0', char::MAX)]))),
        0,
        None,
    );
    for round in 0..400 {
        let parts: Vec<Re> = (0..2 + rng.below(3))
            .map(|_| {
                let x = random_re(&mut rng, 3);
                match rng.below(6) {
                    0 | 1 => x.complement(),
                    2 => Re::And(vec![x, random_re(&mut rng, 2).complement()]),
                    3 => Re::And(vec![x, every.clone()]),
                    _ => x,
                }
            })
            .collect();
        let re = Re::And(parts);
        let Some(product) = conjunction(&re) else {
            // Only a conjunction of operands every string meets is left to
            // derivatives.
            assert!(
                Dfa::new(&re).expect("compiles").is_universal(),
                "round {round}: {re:?}"
            );
            continue;
        };
        let product = product.expect("compiles");
        let derived = Dfa::new(&re).expect("compiles");
        assert_eq!(product.len(), derived.len(), "round {round}: {re:?}");
        for s in &all {
            let text: String = s.iter().collect();
            assert_eq!(
                product.matches(&text),
                reference(&re, s, 0, s.len()),
                "round {round}: {re:?} on {text:?}"
            );
        }
    }
}

#[test]
fn a_conjunction_with_an_operand_too_large_alone_is_left_to_derivatives() {
    // `(a|b)*a(a|b){12}` alone needs 2^13 states, more than the limit; with
    // a length of at most 3 beside it the conjunction is empty and small.
    let ab = || Re::Set(CharSet::from_ranges([('a', 'b')]));
    let large = Re::Seq(vec![
        Re::Repeat(Box::new(ab()), 0, None),
        Re::literal("a"),
        Re::Repeat(Box::new(ab()), 12, Some(12)),
    ]);
    assert!(matches!(
        Dfa::new(&large),
        Err(LangError::TooManyStates { .. })
    ));
    let re = Re::And(vec![large, Re::length(0, Some(3))]);
    assert!(conjunction(&re).is_none());
    assert!(automaton(&re).expect("compiles").is_empty());
}
