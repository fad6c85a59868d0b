//! Every input the fuzz targets (fuzz/) ever flagged, kept as a regression
//! test with the outcome it must have: each schema in fuzz/regressions/*.json
//! converts to a grammar the GBNF checker accepts, within a size and cost
//! budget (a flagged schema was too slow to convert, and a blown-up grammar
//! is what a slow conversion makes), or is refused with a given message; each
//! grammar in *.gbnf is accepted or refused as listed. An input without an
//! expected outcome fails the test. No time is measured: timing belongs to
//! the fuzzers' `-timeout=1` and to bench/convert_speed.rs.

use std::path::PathBuf;

use infer::grammar::check::{check, MAX_PARSE_STACKS};
use infer::schema;

/// What a flagged schema must give.
enum Schema {
    /// A grammar the checker accepts, of at most `max_bytes` bytes and at
    /// most `max_llama_rules` rules for llama.cpp to build.
    Converts {
        max_bytes: usize,
        max_llama_rules: usize,
    },
    /// An error whose message contains this.
    Refused(&'static str),
}

/// What a flagged grammar must give: accepted with these rule names, or
/// refused with a message containing the text.
enum Grammar {
    Accepted(&'static [&'static str]),
    #[allow(dead_code)] // no flagged grammar is refused yet
    Refused(&'static str),
}

/// The budgets are about 30% above what the converter emits today.
const SCHEMAS: &[(&str, Schema)] = &[
    (
        "schema-slow-2.json",
        // Today: 46,064 bytes, 2,157 rules.
        Schema::Converts {
            max_bytes: 60_000,
            max_llama_rules: 2_800,
        },
    ),
    (
        "schema-slow-sendgrid.json",
        // Today: 44,480 bytes, 2,073 rules.
        Schema::Converts {
            max_bytes: 58_000,
            max_llama_rules: 2_700,
        },
    ),
    (
        // The differential fuzzer's first timeout: a declared key matching
        // a pattern whose schema is a recursive definition merged its key
        // languages again at each deferred merge, doubling their
        // description each time (it ran for hours).
        "schema-hang-recursive-key-merge.json",
        Schema::Refused("their description grows past 20000 parts"),
    ),
    (
        // The differential fuzzer's slowest refusal (70 s): recursive
        // definitions whose patternProperties name themselves, beside
        // propertyNames, maxProperties 0 and dependencies; every deferred
        // merge described the pairs of key regions anew, each description
        // under the per-language limit. Now stopped by the conversion's
        // budget of key-language parts (a quarter of a second).
        "schema-slow-recursive-key-parts.json",
        Schema::Refused("need more than 2000000 parts in all"),
    ),
];

const GRAMMARS: &[(&str, Grammar)] = &[("grammar-seed-yes-no.gbnf", Grammar::Accepted(&["root"]))];

fn inputs(extension: &str) -> Vec<(String, String)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/regressions");
    let mut out: Vec<(String, String)> = std::fs::read_dir(&dir)
        .expect("fuzz/regressions exists")
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == extension))
        .map(|p| {
            let text =
                String::from_utf8_lossy(&std::fs::read(&p).expect("readable file")).into_owned();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, text)
        })
        .collect();
    out.sort();
    out
}

/// The inputs on disk and the expectations name the same files.
fn paired<'a, T>(extension: &str, expected: &'a [(&str, T)]) -> Vec<(String, String, &'a T)> {
    let files = inputs(extension);
    let mut names: Vec<&str> = expected.iter().map(|(n, _)| *n).collect();
    names.sort_unstable();
    let on_disk: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        on_disk, names,
        "every fuzz/regressions/*.{extension} file needs an expected outcome here, and every expectation a file"
    );
    files
        .into_iter()
        .map(|(name, text)| {
            let e = &expected.iter().find(|(n, _)| *n == name).unwrap().1;
            (name, text, e)
        })
        .collect()
}

#[test]
fn flagged_schemas_have_their_expected_outcome() {
    let cases = paired("json", SCHEMAS);
    assert!(!cases.is_empty());
    for (name, text, expected) in cases {
        let value: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| {
            panic!("{name}: a flagged schema is JSON (the target skips the rest): {e}")
        });
        match (schema::to_gbnf(&value), expected) {
            (
                Ok(gbnf),
                Schema::Converts {
                    max_bytes,
                    max_llama_rules,
                },
            ) => {
                let checked =
                    check(&gbnf).unwrap_or_else(|e| panic!("{name}: emitted grammar refused: {e}"));
                eprintln!(
                    "{name}: {} bytes, {} llama.cpp rules",
                    gbnf.len(),
                    checked.llama_rule_count()
                );
                assert!(
                    gbnf.len() <= *max_bytes,
                    "{name}: grammar of {} bytes, budget {max_bytes}",
                    gbnf.len()
                );
                assert!(
                    checked.llama_rule_count() <= *max_llama_rules,
                    "{name}: {} llama.cpp rules, budget {max_llama_rules}",
                    checked.llama_rule_count()
                );
                assert!(checked.parse_stacks() <= MAX_PARSE_STACKS, "{name}");
            }
            (Err(e), Schema::Refused(fragment)) => {
                assert!(e.to_string().contains(fragment), "{name}: {e}");
            }
            (Ok(gbnf), Schema::Refused(fragment)) => {
                panic!("{name}: converted, expected an error containing {fragment:?}:\n{gbnf}")
            }
            (Err(e), Schema::Converts { .. }) => {
                panic!("{name}: refused ({e}), expected to convert")
            }
        }
    }
}

#[test]
fn flagged_grammars_have_their_expected_outcome() {
    let cases = paired("gbnf", GRAMMARS);
    assert!(!cases.is_empty());
    for (name, text, expected) in cases {
        match (check(&text), expected) {
            (Ok(g), Grammar::Accepted(rules)) => assert_eq!(g.rule_names(), *rules, "{name}"),
            (Err(e), Grammar::Refused(fragment)) => {
                assert!(e.to_string().contains(fragment), "{name}: {e}")
            }
            (Ok(_), Grammar::Refused(fragment)) => {
                panic!("{name}: accepted, expected an error containing {fragment:?}")
            }
            (Err(e), Grammar::Accepted(_)) => panic!("{name}: refused: {e}"),
        }
    }
}
