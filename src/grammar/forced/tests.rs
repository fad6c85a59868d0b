//! The recognizer and the forced text on hand-written grammars and on
//! grammars the schema converter writes. The differential test against a
//! brute-force enumeration is in `judge`.

use std::sync::Arc;

use serde_json::json;

use super::*;
use crate::grammar::CheckedGbnf;

fn rules(gbnf: &str) -> Arc<ForcedRules> {
    let checked = CheckedGbnf::new(gbnf).unwrap_or_else(|e| panic!("{gbnf:?}: {e}"));
    Arc::new(ForcedRules::new(&checked))
}

/// A recognizer for `gbnf` that accepted `text`.
fn after(gbnf: &str, text: &str) -> Recognizer {
    let mut r = Recognizer::new(rules(gbnf));
    assert!(r.accept_bytes(text.as_bytes()), "{gbnf:?} refused {text:?}");
    r
}

/// The forced text of `gbnf` after `text`, as a string.
fn forced_after(gbnf: &str, text: &str) -> String {
    let bytes = after(gbnf, text).forced(1000);
    String::from_utf8(bytes).unwrap_or_else(|e| panic!("not UTF-8: {e}"))
}

/// Feed `r` each input of `steps` in turn; each is accepted, and the text
/// forced after it is the one that goes with it.
fn expect_forced_after_each(r: &mut Recognizer, steps: &[(&[u8], &[u8])]) {
    for &(input, forced) in steps {
        assert!(r.accept_bytes(input), "refused {input:?}");
        assert_eq!(r.forced(100), forced, "after {input:?}");
    }
}

const OBJECT: &str = r#"root ::= "{" "\"name\": " string ", \"age\": " number "}"
string ::= "\"" [a-zA-Z ]* "\""
number ::= [0-9]+
"#;

#[test]
fn an_object_with_fixed_keys_forces_each_key_and_separator() {
    assert_eq!(forced_after(OBJECT, ""), "{\"name\": \"");
    // Inside the string: more letters or the closing quote.
    assert_eq!(forced_after(OBJECT, "{\"name\": \"Bo"), "");
    assert_eq!(forced_after(OBJECT, "{\"name\": \"Bob\""), ", \"age\": ");
    assert_eq!(forced_after(OBJECT, "{\"name\": \"Bob\", \"age\": 4"), "");
    let done = after(OBJECT, "{\"name\": \"Bob\", \"age\": 42}");
    assert!(done.may_end());
    assert_eq!(done.forced(100), b"");
}

#[test]
fn must_end_only_where_nothing_but_the_end_is_allowed() {
    // Complete, and nothing may follow.
    assert!(after(OBJECT, "{\"name\": \"Bob\", \"age\": 42}").must_end());
    // Complete, but more digits may follow: the model chooses.
    let number = after(OBJECT, "{\"name\": \"Bob\", \"age\": 42");
    assert!(!number.may_end() && !number.must_end());
    let optional = r#"root ::= "a" "b"?"#;
    assert!(after(optional, "a").may_end());
    assert!(!after(optional, "a").must_end());
    assert!(after(optional, "ab").must_end());
    assert!(!after("root ::= [a-z]+", "abc").must_end());
    assert!(!after(OBJECT, "").must_end());
    // Inside a character: not yet.
    let mut r = Recognizer::new(rules(r#"root ::= "é""#));
    assert!(r.accept_bytes(&[0xC3]));
    assert!(!r.must_end());
    assert!(r.accept_bytes(&[0xA9]));
    assert!(r.must_end());
}

#[test]
fn a_converted_object_schema_forces_its_required_keys() {
    let schema = json!({
        "type": "object",
        "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
        "required": ["name", "age"],
        "additionalProperties": false
    });
    let compiled = crate::schema::compile(&schema).unwrap_or_else(|e| panic!("{e}"));
    let rules = Arc::new(ForcedRules::new(&compiled.gbnf));
    let mut r = Recognizer::new(Arc::clone(&rules));
    assert_eq!(r.forced(100), b"{\"name\": \"", "{}", compiled.gbnf);
    expect_forced_after_each(
        &mut r,
        &[
            (b"{\"name\": \"Ann", b""),
            (b"\"", b", \"age\": "),
            (b", \"age\": 3", b""),
            (b"}", b""),
        ],
    );
    assert!(r.may_end());
}

#[test]
fn a_converted_nested_schema_forces_the_inner_object_s_opening() {
    let schema = json!({
        "type": "object",
        "properties": {
            "user": {
                "type": "object",
                "properties": {"id": {"type": "integer"}},
                "required": ["id"],
                "additionalProperties": false
            },
            "ok": {"type": "boolean"}
        },
        "required": ["user", "ok"],
        "additionalProperties": false
    });
    let compiled = crate::schema::compile(&schema).unwrap_or_else(|e| panic!("{e}"));
    let mut r = Recognizer::new(Arc::new(ForcedRules::new(&compiled.gbnf)));
    assert_eq!(r.forced(100), b"{\"user\": {\"id\": ", "{}", compiled.gbnf);
    expect_forced_after_each(
        &mut r,
        &[
            (b"{\"user\": {\"id\": 7}", b", \"ok\": "),
            (b", \"ok\": t", b"rue}"),
        ],
    );
}

#[test]
fn alternatives_that_share_a_prefix_force_only_the_prefix() {
    let g = r#"root ::= "apple" | "apricot""#;
    assert_eq!(forced_after(g, ""), "ap");
    assert_eq!(forced_after(g, "apr"), "icot");
    // The same through rules of their own.
    let g = "root ::= a | b\na ::= \"apple\"\nb ::= \"apricot\"";
    assert_eq!(forced_after(g, ""), "ap");
}

#[test]
fn an_optional_item_stops_the_forced_text() {
    let g = r#"root ::= "ab" "c"? "d""#;
    assert_eq!(forced_after(g, ""), "ab");
    assert_eq!(forced_after(g, "abc"), "d");
}

#[test]
fn repetitions_force_their_minimum_and_then_stop() {
    assert_eq!(forced_after(r#"root ::= "x" "y"* "z""#, ""), "x");
    assert_eq!(forced_after(r#"root ::= "x" "y"+ "z""#, ""), "xy");
    assert_eq!(forced_after(r#"root ::= "x" "y"{2,3} "z""#, ""), "xyy");
    assert_eq!(forced_after(r#"root ::= "x" "y"{2,3} "z""#, "xyyy"), "z");
    assert_eq!(forced_after(r#"root ::= "x" "y"{2} "z""#, ""), "xyyz");
}

#[test]
fn a_grammar_that_may_end_forces_nothing() {
    let g = r#"root ::= "abc" |"#;
    let r = after(g, "");
    assert!(r.may_end());
    assert_eq!(r.forced(100), b"");
    // Ending is allowed only after "ab"; before, "ab" is forced.
    let g = r#"root ::= "ab" "c"?"#;
    assert_eq!(forced_after(g, ""), "ab");
    assert_eq!(forced_after(g, "ab"), "");
    assert!(after(g, "ab").may_end());
}

#[test]
fn multi_byte_literals_are_forced_whole_and_never_cut() {
    let g = r#"root ::= "é€😀!""#;
    assert_eq!(forced_after(g, ""), "é€😀!");
    let r = after(g, "");
    // é is 2 bytes, € 3, 😀 4.
    let cases: [(usize, &str); 8] = [
        (0, ""),
        (1, ""),
        (2, "é"),
        (4, "é"),
        (5, "é€"),
        (8, "é€"),
        (9, "é€😀"),
        (10, "é€😀!"),
    ];
    for (max, want) in cases {
        assert_eq!(r.forced(max), want.as_bytes(), "max_bytes {max}");
    }
    assert_eq!(forced_after(g, "é€"), "😀!");
}

#[test]
fn classes_of_one_member_are_forced() {
    assert_eq!(forced_after("root ::= [a] [b-b] [cc] [d-de]", ""), "abc");
    assert_eq!(forced_after("root ::= [é] [\\u20AC-\\u20AC]", ""), "é€");
}

#[test]
fn negated_classes_force_only_when_they_leave_one_code_point() {
    assert_eq!(forced_after(r#"root ::= "a" [^b] "c""#, ""), "a");
    assert_eq!(forced_after(r#"root ::= "a" [^b] "c""#, "ax"), "c");
    // Everything but U+0001..`, b..U+10FFFF: only "a" is left.
    assert_eq!(
        forced_after(r#"root ::= [^\x01-`b-\U0010FFFF] "z""#, ""),
        "az"
    );
    assert_eq!(forced_after(r#"root ::= "a" . "c""#, ""), "a");
}

#[test]
fn a_stack_waiting_for_a_token_item_stops_the_forced_text() {
    assert_eq!(forced_after(r#"root ::= "ab" <[12]> "cd""#, ""), "ab");
    assert_eq!(forced_after(r#"root ::= "ab" !<[12]> "cd""#, ""), "ab");
    assert_eq!(forced_after(r#"root ::= "ab" <think> "cd""#, ""), "ab");
    // Also when another stack would force a character.
    assert_eq!(forced_after(r#"root ::= "a" (<[12]> | "b") "c""#, ""), "a");
    // Bytes cannot satisfy a token item.
    let mut r = after(r#"root ::= "ab" <[12]> "cd""#, "ab");
    assert!(!r.accept_bytes(b"c"));
    assert!(r.is_dead());
}

#[test]
fn a_refused_byte_kills_the_recognizer_for_good() {
    let mut r = Recognizer::new(rules(r#"root ::= "abc" "d"*"#));
    assert!(r.accept_bytes(b"a"));
    assert!(!r.accept_bytes(b"xbc"));
    assert!(r.is_dead());
    assert_eq!(r.forced(100), b"");
    assert!(!r.accept_bytes(b"bc"));
    assert!(!r.may_end());
    // A byte after the end of a grammar that must end is refused too.
    let mut r = after(r#"root ::= "abc""#, "abc");
    assert!(!r.accept_bytes(b"d"));
    assert!(r.is_dead());
}

#[test]
fn invalid_utf8_kills_the_recognizer() {
    for bytes in [
        &b"\x80"[..],
        b"\xC3(",
        b"\xC0\xAF",
        b"\xED\xA0\x80",
        b"\x00",
    ] {
        let mut r = Recognizer::new(rules("root ::= [^a]*"));
        assert!(!r.accept_bytes(bytes), "{bytes:?}");
        assert!(r.is_dead(), "{bytes:?}");
    }
}

#[test]
fn a_character_split_across_two_calls_is_read_whole() {
    let g = r#"root ::= "é€" "!""#;
    let mut r = Recognizer::new(rules(g));
    // Documented choice: nothing is forced while a character is pending.
    expect_forced_after_each(
        &mut r,
        &[(b"\xC3", b""), (b"\xA9\xE2\x82", b""), (b"\xAC", b"!")],
    );
    // A pending start that cannot become é is refused at once: C4 starts
    // U+0100..=U+013F.
    let mut r = Recognizer::new(rules(g));
    assert!(!r.accept_bytes(b"\xC4"));
    assert!(r.is_dead());
    // ...and one that could, but is then completed wrongly, later.
    let mut r = Recognizer::new(rules(g));
    assert!(r.accept_bytes(b"\xC3"));
    assert!(!r.accept_bytes(b"\xA8"));
}

#[test]
fn a_pending_character_follows_llama_cpp_on_negated_classes() {
    // llama.cpp refuses a pending C3 (U+00C0..=U+00FF) against [^é] because
    // é lies in that range, although è would do.
    let mut r = Recognizer::new(rules("root ::= [^é]"));
    assert!(!r.accept_bytes(b"\xC3"));
    let mut r = Recognizer::new(rules("root ::= [^é]"));
    assert!(r.accept_bytes(b"\xC3\xA8"));
}

#[test]
fn nested_and_recursive_rules_force_their_fixed_parts() {
    let g = r#"root ::= "(" list ")"
list ::= item ("," item)*
item ::= "<" [a-z]+ ">" | "[" list "]"
"#;
    assert_eq!(forced_after(g, ""), "(");
    assert_eq!(forced_after(g, "(<"), "");
    assert_eq!(forced_after(g, "(<ab"), "");
    assert_eq!(forced_after(g, "(<ab>"), "");
    assert_eq!(forced_after(g, "(<ab>,[[<x>"), "");
    let r = after(g, "(<ab>,[[<x>]]");
    assert_eq!(r.forced(100), b"");
    let r = after(g, "(<ab>,[[<x>]])");
    assert!(r.may_end());
    // One nesting level deep with a fixed tail.
    let g = r#"root ::= pair
pair ::= "{" key ":" value "}"
key ::= "\"k\""
value ::= "1" | pair
"#;
    assert_eq!(forced_after(g, ""), "{\"k\":");
    assert_eq!(forced_after(g, "{\"k\":{"), "\"k\":");
    assert_eq!(forced_after(g, "{\"k\":{\"k\":1"), "}}");
}

#[test]
fn empty_alternatives_and_empty_rules_are_skipped_like_llama_cpp() {
    assert_eq!(
        forced_after("root ::= \"a\" e \"b\"\ne ::= | \"c\"", ""),
        "a"
    );
    assert_eq!(
        forced_after("root ::= \"a\" e \"b\"\ne ::= \"c\" |", "a"),
        ""
    );
    assert_eq!(forced_after("root ::= \"a\" (\"c\" | ) \"b\"", "ac"), "b");
    assert_eq!(forced_after("root ::= \"a\" e \"b\"\ne ::= ", ""), "ab");
    assert_eq!(
        forced_after("root ::= \"a\" e e \"b\"\ne ::= ( )", ""),
        "ab"
    );
}

#[test]
fn forced_gives_up_on_more_stacks_than_its_cap() {
    let grammar = |n: usize| {
        let alternatives: Vec<String> = (0..n).map(|i| format!("\"a{i}\"")).collect();
        format!("root ::= {}", alternatives.join(" | "))
    };
    // Below the cap every alternative's "a" is forced...
    let below = grammar(MAX_FORCED_STACKS);
    assert_eq!(forced_after(&below, ""), "a");
    // ...above it, nothing, though "a" is still forced.
    let above = grammar(MAX_FORCED_STACKS + 1);
    let r = after(&above, "");
    assert!(!r.is_dead() && !r.is_lost());
    assert_eq!(r.forced(100), b"");
}

#[test]
fn forced_into_reuses_the_callers_buffer() {
    let r = after(r#"root ::= "abc""#, "");
    let mut buf = b"old".to_vec();
    r.forced_into(100, &mut buf);
    assert_eq!(buf, b"abc");
    let r = after(r#"root ::= "abc""#, "abc");
    r.forced_into(100, &mut buf);
    assert_eq!(buf, b"");
}

#[test]
fn forcing_leaves_the_recognizer_where_it_was() {
    let mut r = after(OBJECT, "");
    let forced = r.forced(100);
    assert_eq!(forced, b"{\"name\": \"");
    assert_eq!(r.forced(100), forced);
    assert!(r.accept_bytes(&forced));
    assert_eq!(r.forced(100), b"");
}

#[test]
fn rules_are_shared_across_threads() {
    fn shareable<T: Send + Sync>() {}
    shareable::<ForcedRules>();
    shareable::<Recognizer>();
    let rules = rules(OBJECT);
    let handles: Vec<_> = (0..2)
        .map(|_| {
            let rules = Arc::clone(&rules);
            std::thread::spawn(move || Recognizer::new(rules).forced(100))
        })
        .collect();
    for handle in handles {
        assert_eq!(handle.join().ok(), Some(b"{\"name\": \"".to_vec()));
    }
}

#[test]
fn a_step_over_its_work_budget_loses_track_and_then_forces_nothing() {
    let mut r = after(OBJECT, "{\"name\": \"");
    r.accept_char(u32::from('a'), 1);
    assert!(r.is_lost() && !r.is_dead());
    assert_eq!(r.forced(100), b"");
    // It no longer knows what the grammar allows, so it refuses nothing.
    assert!(r.accept_bytes(b"anything"));
    assert!(!r.may_end());
}

#[test]
fn a_recognizer_of_unusable_rules_is_lost_from_the_start() {
    let mut rules = ForcedRules::new(&CheckedGbnf::new(OBJECT).unwrap_or_else(|e| panic!("{e}")));
    rules.usable = false;
    let r = Recognizer::new(Arc::new(rules));
    assert!(r.is_lost());
    assert_eq!(r.forced(100), b"");
}
