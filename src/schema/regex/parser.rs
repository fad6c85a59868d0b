//! The pattern parser: ECMAScript syntax (non-`u`, with Annex B leniencies)
//! into the syntax tree, with group nesting bounded by [`MAX_NESTING`].

use super::ast::{digit_set, dot_set, node_from_alternatives, space_set, word_set};
use super::ast::{Alternatives, Atom, Node};
use super::{syntax, unsupported, RegexError, MAX_NESTING, MAX_REPEAT};
use crate::schema::strings::CharSet;

/// A quantifier as written: `*`, `+`, `?`, `{n}`, `{n,}` or `{n,m}`.
struct Quantifier {
    min: u64,
    max: Option<u64>,
    /// Its length in bytes.
    len: usize,
}

impl Quantifier {
    /// A one-character quantifier.
    fn simple(min: u64, max: Option<u64>) -> Self {
        Quantifier { min, max, len: 1 }
    }
}

/// The braced quantifier at the start of `s`, if there is one.
fn scan_braced_quantifier(s: &str) -> Option<Quantifier> {
    let bytes = s.as_bytes();
    if bytes.first() != Some(&b'{') {
        return None;
    }
    let (min, mut i) = scan_digits(bytes, 1)?;
    let max = if bytes.get(i) == Some(&b',') {
        match scan_digits(bytes, i + 1) {
            Some((max, end)) => {
                i = end;
                Some(max)
            }
            None => {
                i += 1;
                None
            }
        }
    } else {
        Some(min)
    };
    (bytes.get(i) == Some(&b'}')).then_some(Quantifier {
        min,
        max,
        len: i + 1,
    })
}

/// Decimal digits from `from` on: their value (saturated) and where they end.
fn scan_digits(bytes: &[u8], from: usize) -> Option<(u64, usize)> {
    let mut value: u64 = 0;
    let mut i = from;
    while let Some(d) = bytes.get(i).filter(|b| b.is_ascii_digit()) {
        value = value.saturating_mul(10).saturating_add(u64::from(d - b'0'));
        i += 1;
    }
    (i > from).then_some((value, i))
}

/// `n` hex digits at the start of `s`.
fn hex_value(s: &str, n: usize) -> Option<u32> {
    let digits = s.get(..n)?;
    if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u32::from_str_radix(digits, 16).ok()
}

fn is_high_surrogate(unit: u32) -> bool {
    (0xD800..=0xDBFF).contains(&unit)
}

fn is_low_surrogate(unit: u32) -> bool {
    (0xDC00..=0xDFFF).contains(&unit)
}

/// Checks bounds as written and converts them to grammar bounds.
fn bound_repetition(
    min: u64,
    max: Option<u64>,
    offset: usize,
) -> Result<(u32, Option<u32>), RegexError> {
    if max.is_some_and(|max| max < min) {
        return Err(syntax("numbers out of order in {} quantifier", offset));
    }
    let limit = u64::from(MAX_REPEAT);
    if min > limit {
        return Err(RegexError::TooLarge {
            count: min,
            limit: MAX_REPEAT,
        });
    }
    let to_u32 = |n: u64| u32::try_from(n.min(limit)).unwrap_or(MAX_REPEAT);
    Ok((to_u32(min), max.map(to_u32)))
}

/// A recursive-descent parser whose recursion is bounded by [`MAX_NESTING`].
pub(super) struct Parser<'a> {
    src: &'a str,
    /// Byte offset of the next character.
    pos: usize,
}

impl<'a> Parser<'a> {
    pub(super) fn new(src: &'a str) -> Self {
        Self { src, pos: 0 }
    }

    fn rest(&self) -> &'a str {
        self.src.get(self.pos..).unwrap_or("")
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn peek_second(&self) -> Option<char> {
        self.rest().chars().nth(1)
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    fn eat(&mut self, c: char) -> bool {
        let found = self.peek() == Some(c);
        if found {
            self.pos += c.len_utf8();
        }
        found
    }

    /// The whole pattern, as its top-level alternatives.
    pub(super) fn parse_pattern(&mut self) -> Result<Alternatives, RegexError> {
        let alternatives = self.parse_disjunction(0)?;
        if self.peek() == Some(')') {
            return Err(syntax("unmatched )", self.pos));
        }
        Ok(alternatives)
    }

    fn parse_disjunction(&mut self, depth: usize) -> Result<Alternatives, RegexError> {
        let mut alternatives = vec![self.parse_alternative(depth)?];
        while self.eat('|') {
            alternatives.push(self.parse_alternative(depth)?);
        }
        Ok(alternatives)
    }

    fn parse_alternative(&mut self, depth: usize) -> Result<Vec<Node>, RegexError> {
        let mut terms = Vec::new();
        while let Some(c) = self.peek() {
            if c == '|' || c == ')' {
                break;
            }
            terms.push(self.parse_term(depth)?);
        }
        Ok(terms)
    }

    fn parse_term(&mut self, depth: usize) -> Result<Node, RegexError> {
        let start = self.pos;
        if self.eat('^') {
            return Ok(Node::Start(start));
        }
        if self.eat('$') {
            return Ok(Node::End(start));
        }
        let atom = self.parse_atom(depth)?;
        self.parse_quantifier(atom)
    }

    fn parse_atom(&mut self, depth: usize) -> Result<Node, RegexError> {
        let start = self.pos;
        let Some(c) = self.bump() else {
            return Err(syntax("unexpected end of pattern", start));
        };
        match c {
            '.' => Ok(Node::Set {
                set: dot_set(),
                offset: start,
            }),
            '(' => self.parse_group(start, depth),
            '[' => self.parse_class(start),
            '\\' => Ok(match self.parse_escape(start, false)? {
                Atom::Char(c) => Node::Char(c),
                Atom::Set(set) => Node::Set { set, offset: start },
            }),
            '*' | '+' | '?' => Err(syntax("nothing to repeat", start)),
            ')' => Err(syntax("unmatched )", start)),
            '{' if scan_braced_quantifier(self.src.get(start..).unwrap_or("")).is_some() => {
                Err(syntax("nothing to repeat", start))
            }
            c => Ok(Node::Char(c)),
        }
    }

    /// The quantifier after `atom`, if any, applied to it.
    fn parse_quantifier(&mut self, atom: Node) -> Result<Node, RegexError> {
        let start = self.pos;
        let braced = match self.peek() {
            Some('*') => Quantifier::simple(0, None),
            Some('+') => Quantifier::simple(1, None),
            Some('?') => Quantifier::simple(0, Some(1)),
            Some('{') => match scan_braced_quantifier(self.rest()) {
                Some(braced) => braced,
                None => return Ok(atom),
            },
            _ => return Ok(atom),
        };
        self.pos += braced.len;
        // A lazy quantifier matches the same language.
        self.eat('?');
        let (min, max) = bound_repetition(braced.min, braced.max, start)?;
        Ok(Node::Repeat {
            node: Box::new(atom),
            min,
            max,
        })
    }

    /// A group whose `(` is at `start` and already consumed.
    fn parse_group(&mut self, start: usize, depth: usize) -> Result<Node, RegexError> {
        if depth >= MAX_NESTING {
            return Err(RegexError::TooDeep {
                offset: start,
                limit: MAX_NESTING,
            });
        }
        let look = if self.eat('?') {
            self.parse_group_specifier(start)?
        } else {
            None
        };
        let alternatives = self.parse_disjunction(depth + 1)?;
        if !self.eat(')') {
            return Err(syntax("unterminated group", start));
        }
        let node = node_from_alternatives(alternatives);
        Ok(match look {
            Some(negate) => Node::Look {
                node: Box::new(node),
                negate,
                offset: start,
            },
            None => node,
        })
    }

    /// What follows `(?`: `:` and `<name>` open a plain group (`None`),
    /// `=` and `!` a lookahead (whether negated).
    fn parse_group_specifier(&mut self, start: usize) -> Result<Option<bool>, RegexError> {
        match self.bump() {
            Some(':') => Ok(None),
            Some('=') => Ok(Some(false)),
            Some('!') => Ok(Some(true)),
            Some('<') if self.eat('=') => Err(unsupported("lookbehind (?<=", start)),
            Some('<') if self.eat('!') => Err(unsupported("negative lookbehind (?<!", start)),
            Some('<') => self.parse_group_name(start).map(|()| None),
            Some('i' | 'm' | 's' | '-') => {
                Err(unsupported("inline modifier group (?flags:", start))
            }
            _ => Err(syntax("invalid group", start)),
        }
    }

    /// A group name up to and including its `>`.
    fn parse_group_name(&mut self, start: usize) -> Result<(), RegexError> {
        let Some(len) = self.rest().find('>') else {
            return Err(syntax("unterminated group name", start));
        };
        let name = self.rest().get(..len).unwrap_or("");
        if name.contains('\\') {
            return Err(unsupported("escape in a group name", start));
        }
        if !is_group_name(name) {
            return Err(syntax("invalid group name", start));
        }
        self.pos += len + 1;
        Ok(())
    }

    /// A character class whose `[` is at `start` and already consumed.
    fn parse_class(&mut self, start: usize) -> Result<Node, RegexError> {
        let negated = self.eat('^');
        let mut ranges: Vec<(char, char)> = Vec::new();
        loop {
            match self.peek() {
                None => return Err(syntax("unterminated character class", start)),
                Some(']') => {
                    self.bump();
                    break;
                }
                Some(_) => self.parse_class_member(&mut ranges)?,
            }
        }
        let set = CharSet::from_ranges(ranges);
        let set = if negated { set.complement() } else { set };
        Ok(Node::Set { set, offset: start })
    }

    /// One atom or range of a class, added to `ranges`.
    fn parse_class_member(&mut self, ranges: &mut Vec<(char, char)>) -> Result<(), RegexError> {
        let start = self.pos;
        let first = self.parse_class_atom()?;
        let is_range = self.peek() == Some('-') && !matches!(self.peek_second(), None | Some(']'));
        if !is_range {
            push_atom(ranges, first);
            return Ok(());
        }
        self.bump();
        match (first, self.parse_class_atom()?) {
            (Atom::Char(a), Atom::Char(b)) if a > b => {
                Err(syntax("range out of order in character class", start))
            }
            (Atom::Char(a), Atom::Char(b)) => {
                ranges.push((a, b));
                Ok(())
            }
            // Annex B: next to a class escape, `-` is itself a member.
            (first, second) => {
                push_atom(ranges, first);
                ranges.push(('-', '-'));
                push_atom(ranges, second);
                Ok(())
            }
        }
    }

    fn parse_class_atom(&mut self) -> Result<Atom, RegexError> {
        let start = self.pos;
        match self.bump() {
            None => Err(syntax("unterminated character class", start)),
            Some('\\') => self.parse_escape(start, true),
            Some(c) => Ok(Atom::Char(c)),
        }
    }

    /// An escape whose `\` is at `start` and already consumed.
    fn parse_escape(&mut self, start: usize, in_class: bool) -> Result<Atom, RegexError> {
        let Some(c) = self.bump() else {
            return Err(syntax("\\ at end of pattern", start));
        };
        let char_atom = |c: char| Ok(Atom::Char(c));
        match c {
            'd' => Ok(Atom::Set(digit_set())),
            'D' => Ok(Atom::Set(digit_set().complement())),
            'w' => Ok(Atom::Set(word_set())),
            'W' => Ok(Atom::Set(word_set().complement())),
            's' => Ok(Atom::Set(space_set())),
            'S' => Ok(Atom::Set(space_set().complement())),
            't' => char_atom('\t'),
            'n' => char_atom('\n'),
            'r' => char_atom('\r'),
            'f' => char_atom('\u{c}'),
            'v' => char_atom('\u{b}'),
            'b' if in_class => char_atom('\u{8}'),
            'b' | 'B' if !in_class => Err(unsupported("word boundary assertion", start)),
            '0' if !self.peek().is_some_and(|d| d.is_ascii_digit()) => char_atom('\0'),
            '0'..='9' if in_class || c == '0' => Err(unsupported("legacy octal escape", start)),
            '1'..='9' => Err(unsupported("back-reference", start)),
            'x' => self.parse_hex_escape(start),
            'u' => self.parse_unicode_escape(start),
            'c' => self.parse_control_escape(start),
            'k' => Err(unsupported("named back-reference \\k", start)),
            'p' | 'P' => Err(unsupported("unicode property escape", start)),
            c if c.is_ascii_alphanumeric() => {
                Err(unsupported("identity escape of a letter", start))
            }
            c => char_atom(c),
        }
    }

    /// `\xHH`, after the `x`.
    fn parse_hex_escape(&mut self, start: usize) -> Result<Atom, RegexError> {
        let value = hex_value(self.rest(), 2)
            .and_then(char::from_u32)
            .ok_or_else(|| unsupported("\\x without two hex digits", start))?;
        self.pos += 2;
        Ok(Atom::Char(value))
    }

    /// `\uHHHH`, after the `u`, joined with a following low surrogate escape.
    fn parse_unicode_escape(&mut self, start: usize) -> Result<Atom, RegexError> {
        if self.peek() == Some('{') {
            return Err(unsupported("\\u{...} escape", start));
        }
        let unit = hex_value(self.rest(), 4)
            .ok_or_else(|| unsupported("\\u without four hex digits", start))?;
        self.pos += 4;
        if is_high_surrogate(unit) {
            if let Some(low) = self.low_surrogate_escape() {
                self.pos += 6;
                let code = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
                return char::from_u32(code)
                    .map(Atom::Char)
                    .ok_or_else(|| unsupported("lone surrogate escape", start));
            }
        }
        char::from_u32(unit)
            .map(Atom::Char)
            .ok_or_else(|| unsupported("lone surrogate escape", start))
    }

    /// The code unit of a `\uHHHH` low surrogate escape coming next.
    fn low_surrogate_escape(&self) -> Option<u32> {
        let rest = self.rest().strip_prefix("\\u")?;
        hex_value(rest, 4).filter(|&unit| is_low_surrogate(unit))
    }

    /// `\cX`, after the `c`.
    fn parse_control_escape(&mut self, start: usize) -> Result<Atom, RegexError> {
        match self.peek() {
            Some(letter) if letter.is_ascii_alphabetic() => {
                self.bump();
                char::from_u32(letter as u32 % 32)
                    .map(Atom::Char)
                    .ok_or_else(|| unsupported("\\c without a control letter", start))
            }
            _ => Err(unsupported("\\c without a control letter", start)),
        }
    }
}

fn push_atom(ranges: &mut Vec<(char, char)>, atom: Atom) {
    match atom {
        Atom::Char(c) => ranges.push((c, c)),
        Atom::Set(set) => ranges.extend_from_slice(set.ranges()),
    }
}

/// An ECMAScript identifier (approximated with Unicode alphabetic classes).
fn is_group_name(name: &str) -> bool {
    let mut chars = name.chars();
    let starts_well = chars
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '$' || c == '_');
    starts_well
        && chars.all(|c| c.is_alphanumeric() || matches!(c, '$' | '_' | '\u{200c}' | '\u{200d}'))
}

#[cfg(test)]
mod tests {
    use crate::schema::regex::tests::timed;
    use crate::schema::regex::{pattern_to_expr, RegexError, MAX_NESTING, MAX_REPEAT};

    /// Each pattern of `cases` is refused with an error of `kind`
    /// (`"Unsupported"` or `"Syntax"`) at its offset.
    fn expect_errors_at(kind: &str, cases: &[(&str, usize)]) {
        for &(pattern, offset) in cases {
            let got = match pattern_to_expr(pattern) {
                Err(RegexError::Unsupported { offset, .. }) => ("Unsupported", offset),
                Err(RegexError::Syntax { offset, .. }) => ("Syntax", offset),
                other => panic!("{pattern}: expected {kind}, got {other:?}"),
            };
            assert_eq!(got, (kind, offset), "{pattern}");
        }
    }

    #[test]
    fn unsupported_features_are_reported_with_offsets() {
        let cases: &[(&str, usize)] = &[
            ("(?=a)", 0),
            ("a(?!b)", 1),
            ("(?<=a)b", 0),
            ("x(?<!a)b", 1),
            (r"(a)\1", 3),
            (r"(?<n>a)\k<n>", 7),
            (r"\bfoo", 0),
            (r"a\B", 1),
            (r"\p{L}", 0),
            (r"é\P{L}", 2),
            ("a^b", 1),
            ("a$b", 1),
            ("(^a)", 1),
            ("(a$)", 2),
            ("^a|b^", 4),
            ("(?:^a)*", 3),
            (r"\u{41}", 0),
            (r"\uD800", 0),
            (r"\uDE00\uD83D", 0),
            (r"[\uDC00]", 1),
            (r"\a", 0),
            (r"\01", 0),
            (r"[\1]", 1),
            (r"\c1", 0),
            ("(?i:a)", 0),
            (r"\x4", 0),
            (r"\u12", 0),
            (r"[\B]", 1),
            (r"(?<\u0041>x)", 0),
        ];
        expect_errors_at("Unsupported", cases);
        assert_eq!(
            pattern_to_expr("(?=a)"),
            Err(RegexError::Unsupported {
                feature: "lookahead (?=",
                offset: 0
            })
        );
    }

    #[test]
    fn syntax_errors_are_reported_with_offsets() {
        let cases: &[(&str, usize)] = &[
            ("(a", 0),
            ("x(a|(b)", 1),
            ("a)", 1),
            ("[a", 0),
            (r"[a\]", 0),
            ("*a", 0),
            ("a**", 2),
            ("a|+", 2),
            ("{3}", 0),
            ("a{3,1}", 1),
            ("[z-a]", 1),
            (r"[\x7a-\x61]", 1),
            ("\\", 0),
            ("ab\\", 2),
            ("(?<>a)", 0),
            ("(?<1a>x)", 0),
            ("(?<a", 0),
            ("(?x)", 0),
            ("^*", 1),
            ("a{2}{3}", 4),
            ("(?", 0),
        ];
        expect_errors_at("Syntax", cases);
        assert_eq!(
            pattern_to_expr("[z-a]"),
            Err(RegexError::Syntax {
                message: "range out of order in character class".to_owned(),
                offset: 1
            })
        );
    }

    #[test]
    fn repetition_limits() {
        let too_large = |count| {
            Err(RegexError::TooLarge {
                count,
                limit: MAX_REPEAT,
            })
        };
        assert_eq!(pattern_to_expr("a{1001}"), too_large(1001));
        assert_eq!(pattern_to_expr("a{1000000}"), too_large(1_000_000));
        assert_eq!(pattern_to_expr("a{1001,}"), too_large(1001));
        assert_eq!(
            pattern_to_expr("a{99999999999999999999999}"),
            too_large(u64::MAX)
        );
        let gbnf = |p: &str| pattern_to_expr(p).map(|e| e.to_gbnf());
        assert_eq!(gbnf("^a{0,1000000}$"), Ok(r#""a"{0,1000}"#.to_owned()));
        assert_eq!(gbnf("^a{1000}$"), Ok(r#""a"{1000}"#.to_owned()));
        assert_eq!(
            gbnf("^a{5,99999999999999999999}$"),
            Ok(r#""a"{5,1000}"#.to_owned())
        );
        assert_eq!(gbnf("^a{7,}$"), Ok(r#""a"{7,}"#.to_owned()));
    }

    #[test]
    fn deep_nesting_is_refused_without_recursing() {
        let open = "(".repeat(100_000);
        let too_deep = Err(RegexError::TooDeep {
            offset: MAX_NESTING,
            limit: MAX_NESTING,
        });
        assert_eq!(timed("open parens", || pattern_to_expr(&open)), too_deep);
        let balanced = format!("{open}a{}", ")".repeat(100_000));
        assert_eq!(
            timed("balanced parens", || pattern_to_expr(&balanced)),
            too_deep
        );
        let starred = format!("{}a{}", "(?:".repeat(100_000), ")*".repeat(100_000));
        assert!(matches!(
            pattern_to_expr(&starred),
            Err(RegexError::TooDeep { .. })
        ));
    }
}
