//! The regular-language layer against `fancy-regex` (Rust's `regex` crate,
//! with lookaheads added by backtracking): two patterns built from the input
//! (over a vocabulary whose meaning ECMAScript and `fancy-regex` share on the
//! strings tried, lookaheads included), their automata, and the automata of
//! their intersection, union and complements must say of every test string
//! exactly what the unanchored search says.
#![no_main]

use infer::schema::lang::{Dfa, Re};
use infer::schema::regex::pattern_to_re;
use libfuzzer_sys::fuzz_target;

/// Pattern pieces; the test strings use only `a`..`d`, `1` and `-`, where
/// `.`, `\d` and `\w` mean the same in both dialects.
const PIECES: &[&str] = &[
    "a", "b", "c", "-", "1", "[ab]", "[^a]", "[a-c1]", ".", "\\d", "\\w", "*", "+", "?", "|", "(", ")",
    "(?:", "{2}", "{1,3}", "{0,2}", "^", "$", "(?=", "(?!", ".*", "{2,}",
];
const CHARS: &[char] = &['a', 'b', 'c', 'd', '1', '-'];

fn pattern(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|b| PIECES[usize::from(*b) % PIECES.len()])
        .collect()
}

fuzz_target!(|data: &[u8]| {
    let mut parts = data.split(|b| *b == 0xff);
    let (Some(a), Some(b)) = (parts.next(), parts.next()) else {
        return;
    };
    if a.len() > 12 || b.len() > 12 {
        return;
    }
    let (pa, pb) = (pattern(a), pattern(b));
    let (Ok(ra), Ok(rb)) = (fancy_regex::Regex::new(&pa), fancy_regex::Regex::new(&pb)) else {
        return;
    };
    let (Ok(la), Ok(lb)) = (pattern_to_re(&pa), pattern_to_re(&pb)) else {
        return;
    };
    let built = |re: Re| Dfa::new(&re).ok();
    let (Some(and), Some(or), Some(not_a), Some(a_not_b)) = (
        built(Re::And(vec![la.clone(), lb.clone()])),
        built(Re::Alt(vec![la.clone(), lb.clone()])),
        built(la.clone().complement()),
        built(Re::And(vec![la, lb.complement()])),
    ) else {
        return;
    };
    let mut strings: Vec<String> = vec![String::new()];
    for chunk in parts {
        strings.push(
            chunk
                .iter()
                .take(16)
                .map(|b| CHARS[usize::from(*b) % CHARS.len()])
                .collect(),
        );
    }
    for s in &strings {
        let (Ok(ma), Ok(mb)) = (ra.is_match(s), rb.is_match(s)) else {
            return;
        };
        assert_eq!(and.matches(s), ma && mb, "{pa:?} and {pb:?} on {s:?}");
        assert_eq!(or.matches(s), ma || mb, "{pa:?} or {pb:?} on {s:?}");
        assert_eq!(not_a.matches(s), !ma, "not {pa:?} on {s:?}");
        assert_eq!(a_not_b.matches(s), ma && !mb, "{pa:?} and not {pb:?} on {s:?}");
    }
});
