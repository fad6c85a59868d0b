//! Differential test: the recognizer's forced text against a brute-force
//! judge. Random small grammars are built as a tree of their own, written
//! out as GBNF for the recognizer, and enumerated directly by the judge:
//! every string the grammar generates, then the longest common prefix of
//! the continuations of an accepted prefix. The judge shares no code with
//! the recognizer or the GBNF parser.

use std::collections::BTreeSet;
use std::sync::Arc;

use super::{ForcedRules, Recognizer};
use crate::grammar::CheckedGbnf;

/// A grammar expression. `Ref(i)` only names a later rule, so every
/// language is finite.
#[derive(Debug, Clone)]
enum G {
    Lit(String),
    /// A class of these characters; `ranged` writes one-member classes as
    /// `[a-a]`.
    Class(Vec<char>, bool),
    Seq(Vec<G>),
    /// Alternatives; `None` is an empty alternative.
    Alt(Vec<Option<G>>),
    Opt(Box<G>),
    Rep(Box<G>, usize, usize),
    Ref(usize),
}

const ALPHABET: [char; 6] = ['a', 'b', 'c', 'é', '€', '😀'];
/// Larger languages are skipped.
const MAX_LANGUAGE: usize = 3000;

/// A xorshift generator: reproducible, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn pick(&mut self) -> char {
        ALPHABET[self.below(ALPHABET.len())]
    }
}

fn random_expr(rng: &mut Rng, depth: usize, rule: usize, rules: usize) -> G {
    let leaf = depth == 0 || rng.below(3) == 0;
    let choice = if leaf { rng.below(3) } else { 3 + rng.below(4) };
    match choice {
        0 => G::Lit((0..1 + rng.below(3)).map(|_| rng.pick()).collect()),
        1 => {
            let members = (0..1 + rng.below(2)).map(|_| rng.pick()).collect();
            G::Class(members, rng.below(2) == 0)
        }
        2 if rule + 1 < rules => G::Ref(rule + 1 + rng.below(rules - rule - 1)),
        2 => G::Lit(rng.pick().to_string()),
        3 => G::Seq(
            (0..2 + rng.below(2))
                .map(|_| random_expr(rng, depth - 1, rule, rules))
                .collect(),
        ),
        4 => G::Alt(
            (0..2 + rng.below(2))
                .map(|_| (rng.below(4) != 0).then(|| random_expr(rng, depth - 1, rule, rules)))
                .collect(),
        ),
        5 => G::Opt(Box::new(random_expr(rng, depth - 1, rule, rules))),
        _ => {
            let min = rng.below(2);
            let max = min + 1 + rng.below(2);
            G::Rep(Box::new(random_expr(rng, depth - 1, rule, rules)), min, max)
        }
    }
}

/// The expression as GBNF.
fn write(g: &G) -> String {
    match g {
        G::Lit(s) => format!("\"{s}\""),
        G::Class(members, ranged) => match members.as_slice() {
            [one] if *ranged => format!("[{one}-{one}]"),
            _ => format!("[{}]", members.iter().collect::<String>()),
        },
        G::Seq(items) => {
            let items: Vec<String> = items.iter().map(write).collect();
            format!("({})", items.join(" "))
        }
        G::Alt(alts) => {
            let alts: Vec<String> = alts
                .iter()
                .map(|a| a.as_ref().map(write).unwrap_or_default())
                .collect();
            format!("({})", alts.join(" | "))
        }
        G::Opt(item) => format!("{}?", write(item)),
        G::Rep(item, min, max) => format!("{}{{{min},{max}}}", write(item)),
        G::Ref(id) => format!("r{id}"),
    }
}

/// Every string of `g`'s language, or `None` past [`MAX_LANGUAGE`].
fn language(g: &G, rules: &[BTreeSet<String>]) -> Option<BTreeSet<String>> {
    let concat = |left: &BTreeSet<String>, right: &BTreeSet<String>| {
        let out: BTreeSet<String> = left
            .iter()
            .flat_map(|l| right.iter().map(move |r| format!("{l}{r}")))
            .collect();
        (out.len() <= MAX_LANGUAGE).then_some(out)
    };
    let just = |s: &str| BTreeSet::from([s.to_owned()]);
    let out = match g {
        G::Lit(s) => just(s),
        G::Class(members, _) => members.iter().map(char::to_string).collect(),
        G::Seq(items) => {
            let mut out = just("");
            for item in items {
                out = concat(&out, &language(item, rules)?)?;
            }
            out
        }
        G::Alt(alts) => {
            let mut out = BTreeSet::new();
            for alt in alts {
                match alt {
                    Some(alt) => out.extend(language(alt, rules)?),
                    None => {
                        out.insert(String::new());
                    }
                }
            }
            out
        }
        G::Opt(item) => {
            let mut out = language(item, rules)?;
            out.insert(String::new());
            out
        }
        G::Rep(item, min, max) => {
            let once = language(item, rules)?;
            let mut power = just("");
            let mut out = BTreeSet::new();
            for count in 0..=*max {
                if count >= *min {
                    out.extend(power.iter().cloned());
                }
                power = concat(&power, &once)?;
            }
            out
        }
        G::Ref(id) => rules.get(*id)?.clone(),
    };
    (out.len() <= MAX_LANGUAGE).then_some(out)
}

/// The longest common prefix, in characters, of the strings in `words`
/// that start with `prefix`, after `prefix`; cut to `max_bytes`.
fn judged(words: &BTreeSet<String>, prefix: &str, max_bytes: usize) -> String {
    let mut rests = words.iter().filter_map(|w| w.strip_prefix(prefix));
    let Some(first) = rests.next() else {
        return String::new();
    };
    let mut common: Vec<char> = first.chars().collect();
    for rest in rests {
        let shared = common
            .iter()
            .zip(rest.chars())
            .take_while(|(a, b)| *a == b)
            .count();
        common.truncate(shared);
    }
    let mut out = String::new();
    for c in common {
        if out.len() + c.len_utf8() > max_bytes {
            break;
        }
        out.push(c);
    }
    out
}

/// A random grammar: its GBNF text and its language.
fn random_grammar(rng: &mut Rng) -> Option<(String, BTreeSet<String>)> {
    let count = 1 + rng.below(3);
    let exprs: Vec<G> = (0..count)
        .map(|rule| random_expr(rng, 3, rule, count))
        .collect();
    // Later rules first: a rule only refers to later ones.
    let mut languages = vec![BTreeSet::new(); count];
    for id in (0..count).rev() {
        languages[id] = language(&exprs[id], &languages)?;
    }
    let text: Vec<String> = exprs
        .iter()
        .enumerate()
        .map(|(id, g)| {
            let name = if id == 0 {
                "root".to_owned()
            } else {
                format!("r{id}")
            };
            format!("{name} ::= {}", write(g))
        })
        .collect();
    Some((text.join("\n"), languages.swap_remove(0)))
}

#[test]
fn forced_text_is_the_longest_common_prefix_of_every_continuation() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut compared = 0;
    let mut grammars = 0;
    for _ in 0..400 {
        let Some((gbnf, words)) = random_grammar(&mut rng) else {
            continue;
        };
        let checked = match CheckedGbnf::new(gbnf.as_str()) {
            Ok(checked) => checked,
            Err(e) => panic!("the checker refused {gbnf:?}: {e}"),
        };
        grammars += 1;
        let rules = Arc::new(ForcedRules::new(&checked));
        let all: Vec<&String> = words.iter().collect();
        for _ in 0..6 {
            let word = all[rng.below(all.len())];
            let chars: Vec<char> = word.chars().collect();
            let cut = rng.below(chars.len() + 1);
            let prefix: String = chars[..cut].iter().collect();
            let max_bytes = [0, 1, 3, 5, 100][rng.below(5)];
            // Fed in two pieces split at any byte, the last one whole.
            let mut r = Recognizer::new(Arc::clone(&rules));
            let split = rng.below(prefix.len() + 1);
            let (head, tail) = prefix.as_bytes().split_at(split);
            assert!(
                r.accept_bytes(head) && r.accept_bytes(tail),
                "{gbnf:?} refused {prefix:?} split at {split}"
            );
            let want = judged(&words, &prefix, max_bytes);
            let got = String::from_utf8(r.forced(max_bytes)).unwrap_or_default();
            assert_eq!(
                got, want,
                "grammar {gbnf:?}, prefix {prefix:?}, max_bytes {max_bytes}"
            );
            assert_eq!(
                r.may_end(),
                words.contains(&prefix),
                "{gbnf:?} after {prefix:?}"
            );
            // Nothing but the end: the prefix is a word and begins no other.
            let longer = words
                .iter()
                .any(|w| w.len() > prefix.len() && w.starts_with(&prefix));
            assert_eq!(
                r.must_end(),
                words.contains(&prefix) && !longer,
                "{gbnf:?} after {prefix:?}: must end?"
            );
            // One more character: accepted exactly when some string
            // continues that way.
            let next = format!("{prefix}{}", rng.pick());
            let viable = words.iter().any(|w| w.starts_with(&next));
            let mut r = Recognizer::new(Arc::clone(&rules));
            assert_eq!(
                r.accept_bytes(next.as_bytes()),
                viable,
                "grammar {gbnf:?}, text {next:?}"
            );
            compared += 1;
        }
    }
    assert!(grammars > 200, "only {grammars} grammars were small enough");
    assert!(compared > 1200, "only {compared} comparisons");
}

#[test]
fn the_judge_finds_the_shared_prefix_and_stops_where_a_string_ends() {
    let words: BTreeSet<String> = ["apple", "apricot", "ap"]
        .into_iter()
        .map(str::to_owned)
        .collect();
    assert_eq!(judged(&words, "", 100), "ap");
    assert_eq!(judged(&words, "apr", 100), "icot");
    assert_eq!(judged(&words, "ap", 100), "");
    let words = BTreeSet::from(["é€".to_owned()]);
    assert_eq!(judged(&words, "", 4), "é");
}
