//! Tests of the checker as a whole, through [`check`], and helpers shared
//! with the tests of the other files.

use super::cases::{INVALID, JSON, VALID};
use super::*;
use std::time::Instant;

#[test]
fn accepts_valid_grammars() {
    for &(name, text) in VALID {
        if let Err(err) = check(text) {
            panic!("{name}: unexpected error {err}");
        }
    }
}

#[test]
fn reports_rule_names_and_counts() {
    let checked = check("root ::= a b\na ::= \"x\"*\nb ::= (\"y\")\na ::= \"z\"").unwrap();
    assert_eq!(checked.rule_names(), ["root", "a", "b"]);
    assert_eq!(checked.rule_count(), 3);
    assert_eq!(checked.redefined_rules(), ["a"]);
    // root, a, b, the `*` rule of the first `a`, the group in `b`.
    assert_eq!(checked.llama_rule_count(), 5);
    assert!(checked.element_count() > 0);
    assert_eq!(checked.max_token_id(), None);
    assert!(!checked.uses_text_tokens());
    let json = check(JSON).unwrap();
    assert_eq!(
        json.rule_names(),
        ["root", "value", "object", "array", "string", "number", "ws"]
    );
    let tokens = check("root ::= <[7]> !<[12]> <|end|>").unwrap();
    assert_eq!(tokens.max_token_id(), Some(12));
    assert!(tokens.uses_text_tokens());
}

#[test]
fn lists_each_token_text_once_with_its_place() {
    let checked = check("root ::= <|end|> x |\n  !<think> <|end|>\nx ::= \"é\" <a>").unwrap();
    let texts: Vec<(&str, usize, usize)> = checked
        .token_texts()
        .iter()
        .map(|t| (t.text.as_str(), t.line, t.column))
        .collect();
    // Rules are read in text order; `<|end|>` counts once.
    assert_eq!(
        texts,
        [("<|end|>", 1, 10), ("<think>", 2, 4), ("<a>", 3, 11)]
    );
}

#[test]
fn rejects_invalid_grammars() {
    for &(name, text, line, column, message) in INVALID {
        let expected = GrammarError {
            line,
            column,
            message: message.to_owned(),
        };
        match check(text) {
            Ok(_) => panic!("{name}: accepted"),
            Err(err) => assert_eq!(err, expected, "{name}"),
        }
    }
}

#[test]
fn error_display_has_position() {
    let err = check("root ::= [z-a]").unwrap_err();
    assert_eq!(
        err.to_string(),
        "line 1, column 11: character range is inverted: \"z\" > \"a\""
    );
}

#[test]
fn columns_count_characters() {
    let err = check("root ::= \"é€🎉\" )").unwrap_err();
    assert_eq!((err.line, err.column), (1, 16));
}

#[test]
fn rejects_oversized_text() {
    let text = format!("root ::= \"{}\"", "a".repeat(MAX_GRAMMAR_BYTES));
    let err = check(&text).unwrap_err();
    assert_eq!((err.line, err.column), (1, 1));
    assert!(err.message.contains("more than the limit"), "{err}");
}

/// Run `check` on a hostile input; it must answer quickly either way.
pub(super) fn timed(name: &str, text: &str) -> Result<CheckedGrammar, GrammarError> {
    let start = Instant::now();
    let result = check(text);
    let elapsed = start.elapsed();
    eprintln!(
        "{name}: {} bytes, {elapsed:?}: {}",
        text.len(),
        match &result {
            Ok(g) => format!("ok ({} llama rules)", g.llama_rule_count()),
            Err(e) => e.to_string(),
        }
    );
    // The time is printed, not asserted: timing belongs in benchmarks
    // (bench/convert_speed.rs, the fuzzers' one-second limit).
    result
}

pub(super) fn expect_message(result: Result<CheckedGrammar, GrammarError>, needle: &str) {
    match result {
        Ok(_) => panic!("accepted, expected an error containing {needle:?}"),
        Err(err) => assert!(err.message.contains(needle), "{err}"),
    }
}

pub(super) const NEAR_LIMIT: usize = MAX_GRAMMAR_BYTES - 64;

#[test]
fn hostile_one_megabyte_of_rules() {
    let mut text = String::from("root ::= r0\n");
    let mut i = 0;
    while text.len() < NEAR_LIMIT - 100 {
        text.push_str(&format!(
            "r{i} ::= \"x\" [a-z]{{0,3}} r{} | ( \"y\" | . ) \"z\"?\n",
            i + 1
        ));
        i += 1;
    }
    text.push_str(&format!("r{i} ::= \"end\"\n"));
    assert!(timed("1 MB of rules", &text).is_ok());
}

/// A three-character rule name for `i < 62^3`.
pub(super) fn short(i: usize) -> String {
    const DIGITS: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    [i / 3844, i / 62 % 62, i % 62]
        .iter()
        .map(|&d| char::from(DIGITS[d % 62]))
        .collect()
}

/// A grammar of `n` rules, rule `i` given by `rule(i)`, root first.
pub(super) fn chain(n: usize, rule: impl Fn(&str, &str) -> String) -> String {
    let mut text = format!("root::={}\n", short(0));
    for i in 0..n {
        text.push_str(&rule(&short(i), &short(i + 1)));
    }
    text
}

#[test]
fn never_panics_on_prefixes() {
    // Every prefix of a grammar that uses every feature: each must give
    // an answer (and positions inside the text).
    let text = format!(
        "{JSON}\nextra ::= <[12]> !<x> \"\\U0001F600\" [^a-z\\]]{{2,3}} (\"é\" | ) # end\n"
    );
    let mut cut = 0;
    while cut <= text.len() {
        if text.is_char_boundary(cut) {
            let prefix = &text[..cut];
            if let Err(err) = check(prefix) {
                assert!(err.line >= 1 && err.column >= 1, "{err}");
            }
        }
        cut += 1;
    }
}
