//! Characters of JSON string *values* and the grammar of their canonical JSON
//! encoding, as `serde_json` writes it: `\"`, `\\`, `\b`, `\f`, `\n`, `\r`,
//! `\t`, `\u00xx` (lowercase hex) for the other control characters, and every
//! other character raw. Grammars built from these never contain a raw control
//! character inside a string.

use std::sync::OnceLock;

use crate::grammar::expr::Expr;

/// A set of characters as sorted, non-overlapping, non-adjacent inclusive ranges.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct CharSet {
    ranges: Vec<(char, char)>,
}

impl CharSet {
    pub fn empty() -> Self {
        Self::default()
    }

    /// Every Unicode scalar value.
    pub fn any() -> Self {
        Self::from_ranges([('\0', char::MAX)])
    }

    pub fn single(c: char) -> Self {
        Self::from_ranges([(c, c)])
    }

    pub fn from_ranges(ranges: impl IntoIterator<Item = (char, char)>) -> Self {
        let mut v: Vec<(char, char)> = ranges
            .into_iter()
            .map(|(a, b)| if a <= b { (a, b) } else { (b, a) })
            .collect();
        v.sort();
        let mut out: Vec<(char, char)> = Vec::with_capacity(v.len());
        for (a, b) in v {
            if let Some(last) = out.last_mut() {
                if (a as u32) <= next_u32(last.1) {
                    if b > last.1 {
                        last.1 = b;
                    }
                    continue;
                }
            }
            out.push((a, b));
        }
        Self { ranges: out }
    }

    pub fn ranges(&self) -> &[(char, char)] {
        &self.ranges
    }

    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    pub fn contains(&self, c: char) -> bool {
        self.ranges.iter().any(|&(a, b)| a <= c && c <= b)
    }

    pub fn union(&self, other: &CharSet) -> CharSet {
        CharSet::from_ranges(self.ranges.iter().chain(other.ranges.iter()).copied())
    }

    /// Every scalar value not in `self`.
    pub fn complement(&self) -> CharSet {
        let mut out = Vec::new();
        let mut next: u32 = 0;
        for &(a, b) in &self.ranges {
            if (a as u32) > next {
                push_scalar_range(&mut out, next, a as u32 - 1);
            }
            next = b as u32 + 1;
        }
        if next <= char::MAX as u32 {
            push_scalar_range(&mut out, next, char::MAX as u32);
        }
        CharSet::from_ranges(out)
    }

    pub fn intersect(&self, other: &CharSet) -> CharSet {
        self.complement().union(&other.complement()).complement()
    }

    pub fn minus(&self, other: &CharSet) -> CharSet {
        self.intersect(&other.complement())
    }
}

/// The scalar after `c` as a number (skipping nothing: adjacency test only).
fn next_u32(c: char) -> u32 {
    let n = c as u32 + 1;
    // The surrogate gap is not a gap for adjacency purposes.
    if n == 0xD800 {
        0xE000
    } else {
        n
    }
}

/// Push `[lo, hi]` as char ranges, leaving out the surrogate block.
fn push_scalar_range(out: &mut Vec<(char, char)>, lo: u32, hi: u32) {
    let mut add = |a: u32, b: u32| {
        if a <= b {
            if let (Some(a), Some(b)) = (char::from_u32(a), char::from_u32(b)) {
                out.push((a, b));
            }
        }
    };
    if hi < 0xD800 || lo > 0xDFFF {
        add(lo, hi);
    } else {
        add(lo, 0xD7FF.min(hi));
        add(0xE000.max(lo), hi);
    }
}

/// Characters written raw inside a JSON string.
fn raw_set() -> &'static CharSet {
    static RAW: OnceLock<CharSet> = OnceLock::new();
    RAW.get_or_init(|| {
        CharSet::from_ranges([('\0', '\u{1f}'), ('"', '"'), ('\\', '\\')]).complement()
    })
}

/// The canonical JSON encoding of one character (without quotes).
pub fn encode_char(c: char) -> String {
    match c {
        '"' => "\\\"".to_owned(),
        '\\' => "\\\\".to_owned(),
        '\u{8}' => "\\b".to_owned(),
        '\u{c}' => "\\f".to_owned(),
        '\n' => "\\n".to_owned(),
        '\r' => "\\r".to_owned(),
        '\t' => "\\t".to_owned(),
        c if (c as u32) < 0x20 => format!("\\u{:04x}", c as u32),
        c => c.to_string(),
    }
}

/// The canonical JSON encoding of a string value, without the quotes.
pub fn encode_str(s: &str) -> String {
    s.chars().map(encode_char).collect()
}

/// A literal string value, quotes included.
pub fn quoted_literal(s: &str) -> Expr {
    Expr::lit(format!("\"{}\"", encode_str(s)))
}

/// One character of `set`, in its canonical JSON encoding. `None` when the set
/// is empty.
pub fn char_in(set: &CharSet) -> Option<Expr> {
    let mut alts = Vec::new();
    let raw = set.intersect(raw_set());
    if !raw.is_empty() {
        alts.push(class_expr(&raw));
    }
    let escaped = set.minus(raw_set());
    for &(a, b) in escaped.ranges() {
        alts.extend(
            escape_table()
                .iter()
                .filter(|(c, _)| (a..=b).contains(c))
                .map(|(_, e)| e.clone()),
        );
    }
    if alts.is_empty() {
        None
    } else {
        Some(Expr::alt(alts))
    }
}

/// The escape sequences of the characters a JSON string never holds raw:
/// control characters, `"` and `\\`, one literal each.
pub fn escapes() -> &'static [Expr] {
    static ESCAPES: OnceLock<Vec<Expr>> = OnceLock::new();
    ESCAPES.get_or_init(|| escape_table().iter().map(|(_, e)| e.clone()).collect())
}

/// Each character that is always escaped, with its escape, in code order.
fn escape_table() -> &'static [(char, Expr)] {
    static TABLE: OnceLock<Vec<(char, Expr)>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let escaped = raw_set().complement();
        let mut out = Vec::new();
        for &(a, b) in escaped.ranges() {
            for code in a as u32..=b as u32 {
                if let Some(c) = char::from_u32(code) {
                    out.push((c, Expr::lit(encode_char(c))));
                }
            }
        }
        out
    })
}

/// Any one character of a JSON string.
pub fn any_char() -> Expr {
    static ANY: OnceLock<Expr> = OnceLock::new();
    ANY.get_or_init(|| char_in(&CharSet::any()).unwrap_or_else(Expr::empty))
        .clone()
}

/// String content (no quotes) of any string except the given values, built
/// from a trie of the excluded values (its size linear in their length),
/// written with `any` for one character of a string and `escapes` for every
/// escape sequence: the caller's rule references, so that each trie node
/// costs a class and two references instead of the ~35 alternatives of a
/// character spelled out.
pub fn content_excluding_in(excluded: &[&str], any: &Expr, escapes: &Expr) -> Expr {
    let words: Vec<Vec<char>> = excluded.iter().map(|w| w.chars().collect()).collect();
    let refs: Vec<&[char]> = words.iter().map(Vec::as_slice).collect();
    let any_rest = any.clone().repeat(0, None);
    excluding(&refs, &any_rest, escapes)
}

/// Strings not in `words` (all suffixes at the same trie node).
fn excluding(words: &[&[char]], any_rest: &Expr, escapes: &Expr) -> Expr {
    if words.is_empty() {
        return any_rest.clone();
    }
    let mut alts = Vec::new();
    if !words.iter().any(|w| w.is_empty()) {
        alts.push(Expr::empty());
    }
    let mut firsts: Vec<char> = words.iter().filter_map(|w| w.first().copied()).collect();
    firsts.sort_unstable();
    firsts.dedup();
    let others = CharSet::from_ranges(firsts.iter().map(|&c| (c, c))).complement();
    let other_char = if firsts.iter().any(|&c| !raw_set().contains(c)) {
        // A word starts with a character written escaped: spell the others.
        char_in(&others)
    } else {
        let raw = others.intersect(raw_set());
        Some(if raw.is_empty() {
            escapes.clone()
        } else {
            Expr::alt([class_expr(&raw), escapes.clone()])
        })
    };
    if let Some(c) = other_char {
        alts.push(Expr::seq([c, any_rest.clone()]));
    }
    for c in firsts {
        let rest: Vec<&[char]> = words
            .iter()
            .filter(|w| w.first() == Some(&c))
            .map(|w| &w[1..])
            .collect();
        alts.push(Expr::seq([
            Expr::lit(encode_char(c)),
            excluding(&rest, any_rest, escapes),
        ]));
    }
    Expr::alt(alts)
}

/// A class expression for a set, negated when that is shorter.
fn class_expr(set: &CharSet) -> Expr {
    let complement = set.complement();
    if complement.ranges().len() < set.ranges().len() {
        Expr::not_class(complement.ranges())
    } else {
        Expr::class(set.ranges())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charset_normalises_and_complements() {
        let s = CharSet::from_ranges([('c', 'e'), ('a', 'b'), ('x', 'x')]);
        assert_eq!(s.ranges(), &[('a', 'e'), ('x', 'x')]);
        let c = s.complement();
        assert!(!c.contains('a') && c.contains('f') && !c.contains('x') && c.contains('\0'));
        assert_eq!(c.complement(), s);
        assert_eq!(CharSet::any().complement(), CharSet::empty());
    }

    #[test]
    fn intersect_and_minus() {
        let a = CharSet::from_ranges([('a', 'm')]);
        let b = CharSet::from_ranges([('h', 'z')]);
        assert_eq!(a.intersect(&b).ranges(), &[('h', 'm')]);
        assert_eq!(a.minus(&b).ranges(), &[('a', 'g')]);
    }

    #[test]
    fn encodes_like_serde_json() {
        for s in [
            "plain",
            "q\"b\\s",
            "\u{8}\u{c}\n\r\t",
            "\u{1}\u{1f}",
            "é/€😀\u{7f}",
        ] {
            let ours = format!("\"{}\"", encode_str(s));
            assert_eq!(ours, serde_json::to_string(s).unwrap());
        }
    }

    #[test]
    fn char_in_escapes_specials() {
        let e = char_in(&CharSet::from_ranges([('"', '"'), ('a', 'b')])).unwrap();
        let re = regex::Regex::new(&format!("^(?:{})$", e.to_regex())).unwrap();
        assert!(re.is_match("a") && re.is_match("\\\"") && !re.is_match("\"") && !re.is_match("c"));
    }

    #[test]
    fn content_excluding_rejects_exactly_the_excluded_values() {
        let escapes = Expr::alt(escapes().iter().cloned());
        let e = content_excluding_in(&["name", "na", "x\"y", ""], &any_char(), &escapes);
        let re = regex::Regex::new(&format!("^(?:{})$", e.to_regex())).unwrap();
        for bad in ["name", "na", "x\"y", ""] {
            assert!(!re.is_match(&encode_str(bad)), "{bad:?}");
        }
        for ok in [
            "n", "nam", "names", "nb", "b", "x", "x\"", "x\"yz", "zz", "é",
        ] {
            assert!(re.is_match(&encode_str(ok)), "{ok:?}");
        }
    }

    #[test]
    fn any_char_never_matches_raw_controls() {
        let re = regex::Regex::new(&format!("^(?:{})$", any_char().to_regex())).unwrap();
        for ok in ["a", "\\n", "\\u001f", "\\\\", "\\\"", "😀", "\u{7f}"] {
            assert!(re.is_match(ok), "{ok:?}");
        }
        for bad in ["\n", "\u{1}", "\"", "\\", "\\u00", "\\/"] {
            assert!(!re.is_match(bad), "{bad:?}");
        }
    }
}
