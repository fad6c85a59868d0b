//! JSON Schema `pattern` (an ECMAScript regular expression without flags) to
//! an exact grammar expression for the *content* of a JSON string: the text
//! between the quotes, in canonical JSON encoding, whose decoded value matches
//! the pattern.
//!
//! The translation works on decoded characters and maps each one through
//! [`encode_char`] / [`char_in`]; canonical JSON encoding is a prefix-free code,
//! so the image of the pattern's language is exact: sound and complete.
//!
//! Semantics, as JSON Schema uses the pattern:
//! - The match is an unanchored search. `^` at the start and `$` at the end of
//!   a top-level alternative anchor that alternative; anchors anywhere else are
//!   [`RegexError::Unsupported`].
//! - Characters are Unicode code points (as with the `u` flag): `.` and classes
//!   match one code point, and a surrogate pair written as two `\uHHHH`
//!   escapes is one character. A lone surrogate escape, whose meaning depends
//!   on that choice, is unsupported.
//! - The syntax is the non-`u` one with Annex B leniencies: a `{` that does not
//!   start a quantifier, and a stray `]` or `}`, are literals; `-` next to a
//!   class escape inside a class is a literal. Identity escapes of letters
//!   (`\a`, `\z`, which other regex dialects read differently) are unsupported.
//! - Lazy quantifiers denote the same language as greedy ones. A repetition
//!   maximum above [`MAX_REPEAT`] is lowered to it (a smaller language, still
//!   sound); a minimum above it is [`RegexError::TooLarge`].
//!
//! Grammar safety: an unbounded repetition never gets a body that matches the
//! empty string (llama.cpp rejects such rules as left-recursive), and group
//! nesting is limited to [`MAX_NESTING`] so that neither this parser nor the
//! consumers of the resulting [`Expr`] recurse without bound.

use std::collections::HashSet;

use crate::grammar::expr::Expr;
use crate::schema::strings::{any_char, char_in, encode_char, CharSet};

/// Why a pattern cannot be turned into a grammar expression.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum RegexError {
    /// A valid ECMAScript construct that has no exact grammar translation here.
    #[error("unsupported regex feature {feature} at offset {offset}")]
    Unsupported {
        /// What the construct is.
        feature: &'static str,
        /// Byte offset of the construct in the pattern.
        offset: usize,
    },
    /// Not a valid ECMAScript regular expression.
    #[error("invalid regex at offset {offset}: {message}")]
    Syntax {
        /// What is wrong.
        message: String,
        /// Byte offset of the offending construct in the pattern.
        offset: usize,
    },
    /// A repetition minimum above [`MAX_REPEAT`].
    #[error("regex repetition {count} exceeds the limit {limit}")]
    TooLarge {
        /// The minimum as written (saturated at `u64::MAX`).
        count: u64,
        /// [`MAX_REPEAT`].
        limit: u32,
    },
    /// Groups nested deeper than [`MAX_NESTING`].
    #[error("regex groups nested deeper than {limit} at offset {offset}")]
    TooDeep {
        /// Byte offset of the first group past the limit.
        offset: usize,
        /// [`MAX_NESTING`].
        limit: usize,
    },
    /// The pattern matches no string at all (e.g. `[]`), so no grammar exists.
    #[error("regex matches no string; see the construct at offset {offset}")]
    Unsatisfiable {
        /// Byte offset of a construct that matches nothing.
        offset: usize,
    },
}

/// The largest repetition count kept in a grammar.
pub const MAX_REPEAT: u32 = 1000;

/// The deepest group nesting accepted.
pub const MAX_NESTING: usize = 100;

/// Expression for JSON string content whose value matches `pattern` (JSON
/// Schema semantics: unanchored search).
pub fn pattern_to_expr(pattern: &str) -> Result<Expr, RegexError> {
    let alternatives = Parser::new(pattern).parse_pattern()?;
    let mut groups = AnchorGroups::default();
    let mut nothing_at = None;
    for terms in &alternatives {
        let (anchors, core) = split_anchors(terms);
        match lower_seq(core)? {
            Lowered::Lang(lang) => groups.add(anchors, lang),
            Lowered::Nothing(offset) => {
                nothing_at.get_or_insert(offset);
            }
        }
    }
    groups.into_expr().ok_or(RegexError::Unsatisfiable {
        offset: nothing_at.unwrap_or(0),
    })
}

// ---------------------------------------------------------------------------
// Syntax tree

/// A parsed pattern fragment, over decoded characters.
#[derive(Debug)]
enum Node {
    Char(char),
    Set {
        set: CharSet,
        offset: usize,
    },
    Seq(Vec<Node>),
    Alt(Vec<Node>),
    Repeat {
        node: Box<Node>,
        min: u32,
        max: Option<u32>,
    },
    /// `^`, at this byte offset.
    Start(usize),
    /// `$`, at this byte offset.
    End(usize),
}

/// What an escape or a class member stands for.
enum Atom {
    Char(char),
    Set(CharSet),
}

/// The alternatives of a disjunction, each a list of terms.
type Alternatives = Vec<Vec<Node>>;

fn node_from_alternatives(mut alternatives: Alternatives) -> Node {
    if alternatives.len() == 1 {
        if let Some(terms) = alternatives.pop() {
            return node_from_terms(terms);
        }
    }
    Node::Alt(alternatives.into_iter().map(node_from_terms).collect())
}

fn node_from_terms(mut terms: Vec<Node>) -> Node {
    if terms.len() == 1 {
        if let Some(term) = terms.pop() {
            return term;
        }
    }
    Node::Seq(terms)
}

// ---------------------------------------------------------------------------
// Character sets

fn digit_set() -> CharSet {
    CharSet::from_ranges([('0', '9')])
}

fn word_set() -> CharSet {
    CharSet::from_ranges([('0', '9'), ('A', 'Z'), ('_', '_'), ('a', 'z')])
}

/// ECMAScript `\s`: WhiteSpace and LineTerminator.
fn space_set() -> CharSet {
    CharSet::from_ranges([
        ('\t', '\r'),
        (' ', ' '),
        ('\u{a0}', '\u{a0}'),
        ('\u{1680}', '\u{1680}'),
        ('\u{2000}', '\u{200a}'),
        ('\u{2028}', '\u{2029}'),
        ('\u{202f}', '\u{202f}'),
        ('\u{205f}', '\u{205f}'),
        ('\u{3000}', '\u{3000}'),
        ('\u{feff}', '\u{feff}'),
    ])
}

/// ECMAScript `.` without the `s` flag: anything but a line terminator.
fn dot_set() -> CharSet {
    CharSet::from_ranges([('\n', '\n'), ('\r', '\r'), ('\u{2028}', '\u{2029}')]).complement()
}

// ---------------------------------------------------------------------------
// Parser

fn syntax(message: &str, offset: usize) -> RegexError {
    RegexError::Syntax {
        message: message.to_owned(),
        offset,
    }
}

fn unsupported(feature: &'static str, offset: usize) -> RegexError {
    RegexError::Unsupported { feature, offset }
}

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
struct Parser<'a> {
    src: &'a str,
    /// Byte offset of the next character.
    pos: usize,
}

impl<'a> Parser<'a> {
    fn new(src: &'a str) -> Self {
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
    fn parse_pattern(&mut self) -> Result<Alternatives, RegexError> {
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
        if self.eat('?') {
            self.parse_group_specifier(start)?;
        }
        let alternatives = self.parse_disjunction(depth + 1)?;
        if !self.eat(')') {
            return Err(syntax("unterminated group", start));
        }
        Ok(node_from_alternatives(alternatives))
    }

    /// What follows `(?`: only `:` and `<name>` open a plain group.
    fn parse_group_specifier(&mut self, start: usize) -> Result<(), RegexError> {
        match self.bump() {
            Some(':') => Ok(()),
            Some('=') => Err(unsupported("lookahead (?=", start)),
            Some('!') => Err(unsupported("negative lookahead (?!", start)),
            Some('<') if self.eat('=') => Err(unsupported("lookbehind (?<=", start)),
            Some('<') if self.eat('!') => Err(unsupported("negative lookbehind (?<!", start)),
            Some('<') => self.parse_group_name(start),
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

// ---------------------------------------------------------------------------
// Anchors

/// How a top-level alternative is anchored.
#[derive(Debug, Clone, Copy)]
struct Anchors {
    start: bool,
    end: bool,
}

/// Strips the leading `^`s and trailing `$`s of a top-level alternative.
fn split_anchors(terms: &[Node]) -> (Anchors, &[Node]) {
    let leading = terms
        .iter()
        .take_while(|t| matches!(t, Node::Start(_)))
        .count();
    let rest = terms.get(leading..).unwrap_or_default();
    let trailing = rest
        .iter()
        .rev()
        .take_while(|t| matches!(t, Node::End(_)))
        .count();
    let core = rest.get(..rest.len() - trailing).unwrap_or_default();
    let anchors = Anchors {
        start: leading > 0,
        end: trailing > 0,
    };
    (anchors, core)
}

/// The lowered top-level alternatives, by how they are anchored.
#[derive(Default)]
struct AnchorGroups {
    both: Vec<Lang>,
    start_only: Vec<Lang>,
    end_only: Vec<Lang>,
    neither: Vec<Lang>,
}

impl AnchorGroups {
    fn add(&mut self, anchors: Anchors, lang: Lang) {
        let group = match (anchors.start, anchors.end) {
            (true, true) => &mut self.both,
            (true, false) => &mut self.start_only,
            (false, true) => &mut self.end_only,
            (false, false) => &mut self.neither,
        };
        group.push(lang);
    }

    /// `any*` around each group's cores as its anchors require; `None` when
    /// no alternative can match.
    fn into_expr(self) -> Option<Expr> {
        let any_star = any_char().repeat(0, None);
        let padded = [&self.start_only, &self.end_only, &self.neither];
        if padded
            .iter()
            .any(|group| group.iter().any(|lang| lang.nullable))
        {
            // A padded alternative that matches the empty string matches everything.
            return Some(any_star);
        }
        let mut parts = Vec::new();
        if let Some(core) = alt_of_langs(self.both) {
            parts.push(core);
        }
        if let Some(core) = alt_of_langs(self.start_only) {
            parts.push(Expr::seq([core, any_star.clone()]));
        }
        if let Some(core) = alt_of_langs(self.end_only) {
            parts.push(Expr::seq([any_star.clone(), core]));
        }
        if let Some(core) = alt_of_langs(self.neither) {
            parts.push(Expr::seq([any_star.clone(), core, any_star]));
        }
        (!parts.is_empty()).then(|| alt_of(parts))
    }
}

fn alt_of_langs(langs: Vec<Lang>) -> Option<Expr> {
    (!langs.is_empty()).then(|| alt_of(langs.into_iter().map(|lang| lang.expr).collect()))
}

// ---------------------------------------------------------------------------
// Lowering to grammar expressions

/// A non-empty language of JSON string content.
#[derive(Debug)]
struct Lang {
    expr: Expr,
    /// Whether it contains the empty string.
    nullable: bool,
}

impl Lang {
    fn epsilon() -> Self {
        Lang {
            expr: Expr::empty(),
            nullable: true,
        }
    }
}

/// The result of lowering a node.
enum Lowered {
    Lang(Lang),
    /// Matches nothing, because of the construct at this byte offset.
    Nothing(usize),
}

fn lower(node: &Node) -> Result<Lowered, RegexError> {
    match node {
        Node::Char(c) => Ok(Lowered::Lang(Lang {
            expr: Expr::lit(encode_char(*c)),
            nullable: false,
        })),
        Node::Set { set, offset } => Ok(lower_set(set, *offset)),
        Node::Seq(items) => lower_seq(items),
        Node::Alt(items) => lower_alt(items),
        Node::Repeat { node, min, max } => lower_repeat(node, *min, *max),
        Node::Start(offset) => Err(unsupported(
            "^ assertion not at the start of a top-level alternative",
            *offset,
        )),
        Node::End(offset) => Err(unsupported(
            "$ assertion not at the end of a top-level alternative",
            *offset,
        )),
    }
}

fn lower_set(set: &CharSet, offset: usize) -> Lowered {
    if let [(a, b)] = set.ranges() {
        if a == b {
            return Lowered::Lang(Lang {
                expr: Expr::lit(encode_char(*a)),
                nullable: false,
            });
        }
    }
    match char_in(set) {
        Some(expr) => Lowered::Lang(Lang {
            expr,
            nullable: false,
        }),
        None => Lowered::Nothing(offset),
    }
}

fn lower_seq(items: &[Node]) -> Result<Lowered, RegexError> {
    let mut exprs = Vec::with_capacity(items.len());
    let mut nullable = true;
    let mut nothing_at = None;
    for item in items {
        match lower(item)? {
            Lowered::Lang(lang) => {
                nullable &= lang.nullable;
                exprs.push(lang.expr);
            }
            Lowered::Nothing(offset) => {
                nothing_at.get_or_insert(offset);
            }
        }
    }
    Ok(match nothing_at {
        Some(offset) => Lowered::Nothing(offset),
        None => Lowered::Lang(Lang {
            expr: Expr::seq(exprs),
            nullable,
        }),
    })
}

fn lower_alt(items: &[Node]) -> Result<Lowered, RegexError> {
    let mut exprs = Vec::with_capacity(items.len());
    let mut nullable = false;
    let mut nothing_at = None;
    for item in items {
        match lower(item)? {
            Lowered::Lang(lang) => {
                nullable |= lang.nullable;
                exprs.push(lang.expr);
            }
            Lowered::Nothing(offset) => {
                nothing_at.get_or_insert(offset);
            }
        }
    }
    if exprs.is_empty() {
        return Ok(Lowered::Nothing(nothing_at.unwrap_or(0)));
    }
    Ok(Lowered::Lang(Lang {
        expr: alt_of(exprs),
        nullable,
    }))
}

fn lower_repeat(node: &Node, min: u32, max: Option<u32>) -> Result<Lowered, RegexError> {
    Ok(match lower(node)? {
        Lowered::Lang(lang) => Lowered::Lang(repeat_lang(lang, min, max)),
        Lowered::Nothing(_) if min == 0 => Lowered::Lang(Lang::epsilon()),
        nothing @ Lowered::Nothing(_) => nothing,
    })
}

/// `lang{min,max}`, keeping unbounded repetitions free of nullable bodies.
fn repeat_lang(lang: Lang, min: u32, max: Option<u32>) -> Lang {
    if max == Some(0) || lang.expr == Expr::empty() {
        return Lang::epsilon();
    }
    if max.is_none() && lang.nullable {
        // For nullable X, X{n,} = X*, and X* = (star_body(X))*.
        let mut body = Vec::new();
        star_body(&lang.expr, &mut body);
        if body.is_empty() {
            return Lang::epsilon();
        }
        return Lang {
            expr: alt_of(body).repeat(0, None),
            nullable: true,
        };
    }
    Lang {
        nullable: lang.nullable || min == 0,
        expr: lang.expr.repeat(min, max),
    }
}

/// Non-nullable expressions whose alternation, starred, equals `expr*`.
///
/// For nullable parts: `(A B)* = (A | B)*` and `(A{m,n})* = A*`.
fn star_body(expr: &Expr, out: &mut Vec<Expr>) {
    if !nullable(expr) {
        out.push(expr.clone());
        return;
    }
    match expr {
        Expr::Seq(items) | Expr::Alt(items) => {
            for item in items {
                star_body(item, out);
            }
        }
        Expr::Repeat { expr: inner, .. } => star_body(inner, out),
        // A nullable literal is the empty string; classes and rules are never nullable.
        Expr::Lit(_) | Expr::Class { .. } | Expr::Rule(_) => {}
    }
}

/// Whether `expr` matches the empty string.
fn nullable(expr: &Expr) -> bool {
    match expr {
        Expr::Lit(s) => s.is_empty(),
        Expr::Class { .. } | Expr::Rule(_) => false,
        Expr::Seq(items) => items.iter().all(nullable),
        Expr::Alt(items) => items.iter().any(nullable),
        Expr::Repeat { expr, min, .. } => *min == 0 || nullable(expr),
    }
}

/// An alternation, flattened and without duplicates, in linear time
/// ([`Expr::alt`] deduplicates in quadratic time).
fn alt_of(items: Vec<Expr>) -> Expr {
    let mut flat = Vec::with_capacity(items.len());
    for item in items {
        match item {
            Expr::Alt(inner) => flat.extend(inner),
            other => flat.push(other),
        }
    }
    let keep: Vec<bool> = {
        let mut seen = HashSet::with_capacity(flat.len());
        flat.iter().map(|expr| seen.insert(expr)).collect()
    };
    let mut unique: Vec<Expr> = flat
        .into_iter()
        .zip(keep)
        .filter_map(|(expr, keep)| keep.then_some(expr))
        .collect();
    if unique.len() == 1 {
        if let Some(only) = unique.pop() {
            return only;
        }
    }
    Expr::Alt(unique)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::strings::encode_str;
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
            Expr::Seq(items) | Expr::Alt(items) => {
                items.iter().all(unbounded_bodies_are_not_nullable)
            }
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

    /// A tiny deterministic generator (64-bit LCG).
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: usize) -> usize {
            self.0 = self
                .0
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((self.0 >> 33) % n as u64) as usize
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

    fn random_alternation(rng: &mut Rng, depth: usize, es: &mut String, rust: &mut String) {
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

    fn random_term(rng: &mut Rng, depth: usize, es: &mut String, rust: &mut String) {
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
    fn random_pattern(rng: &mut Rng) -> (String, String) {
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
        let mut rng = Rng(0x5eed);
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
    fn gbnf_of_an_unanchored_literal() {
        let any = any_char().repeat(0, None);
        let expected = Expr::seq([any.clone(), Expr::lit("ab"), any]);
        assert_eq!(pattern_to_expr("ab"), Ok(expected));
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
    fn patterns_matching_everything_are_any_star() {
        let any_star = any_char().repeat(0, None);
        for pattern in ["", "^", "$", "a*", "^(a|b)?", "x?$", "()", "(?:)*", "a{0}"] {
            assert_eq!(pattern_to_expr(pattern), Ok(any_star.clone()), "{pattern}");
        }
    }

    #[test]
    fn nullable_bodies_of_unbounded_repeats_are_rewritten() {
        let a = Expr::lit("a");
        let b = Expr::lit("b");
        let ab_star = Expr::alt([a.clone(), b.clone()]).repeat(0, None);
        assert_eq!(pattern_to_expr("^(a?b?)*$"), Ok(ab_star.clone()));
        assert_eq!(pattern_to_expr("^(a*|b)+$"), Ok(ab_star));
        assert_eq!(pattern_to_expr("^(?:a*)*$"), Ok(a.clone().repeat(0, None)));
        assert_eq!(pattern_to_expr("^(?:a{0,3}){2,}$"), Ok(a.repeat(0, None)));
        assert_eq!(pattern_to_expr("^(?:){3,}$"), Ok(Expr::empty()));
        assert_eq!(
            pattern_to_expr("^(?:a?){2,3}$").map(|e| e.to_gbnf()),
            Ok(r#"("a"?){2,3}"#.to_owned())
        );
    }

    fn unsupported_at(pattern: &str) -> Option<usize> {
        match pattern_to_expr(pattern) {
            Err(RegexError::Unsupported { offset, .. }) => Some(offset),
            other => panic!("{pattern}: expected Unsupported, got {other:?}"),
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
        for &(pattern, offset) in cases {
            assert_eq!(unsupported_at(pattern), Some(offset), "{pattern}");
        }
        assert_eq!(
            pattern_to_expr("(?=a)"),
            Err(RegexError::Unsupported {
                feature: "lookahead (?=",
                offset: 0
            })
        );
    }

    fn syntax_at(pattern: &str) -> Option<usize> {
        match pattern_to_expr(pattern) {
            Err(RegexError::Syntax { offset, .. }) => Some(offset),
            other => panic!("{pattern}: expected Syntax, got {other:?}"),
        }
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
        for &(pattern, offset) in cases {
            assert_eq!(syntax_at(pattern), Some(offset), "{pattern}");
        }
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
    fn unsatisfiable_patterns() {
        let nothing = |offset| Err(RegexError::Unsatisfiable { offset });
        assert_eq!(pattern_to_expr("[]"), nothing(0));
        assert_eq!(pattern_to_expr("^a[]b"), nothing(2));
        assert_eq!(pattern_to_expr(r"x[^\s\S]"), nothing(1));
        assert_eq!(pattern_to_expr("[]|a[]"), nothing(0));
        assert_eq!(pattern_to_expr("([]){2}"), nothing(1));
        assert!(pattern_to_expr("^[]?a$").is_ok());
        assert!(pattern_to_expr("^([])*$").is_ok());
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
    fn assert_quick<T>(what: &str, f: impl FnOnce() -> T) -> T {
        let start = Instant::now();
        let out = f();
        eprintln!("{what}: {:?}", start.elapsed());
        out
    }

    #[test]
    fn deep_nesting_is_refused_without_recursing() {
        let open = "(".repeat(100_000);
        let too_deep = Err(RegexError::TooDeep {
            offset: MAX_NESTING,
            limit: MAX_NESTING,
        });
        assert_eq!(
            assert_quick("open parens", || pattern_to_expr(&open)),
            too_deep
        );
        let balanced = format!("{open}a{}", ")".repeat(100_000));
        assert_eq!(
            assert_quick("balanced parens", || pattern_to_expr(&balanced)),
            too_deep
        );
        let starred = format!("{}a{}", "(?:".repeat(100_000), ")*".repeat(100_000));
        assert!(matches!(
            pattern_to_expr(&starred),
            Err(RegexError::TooDeep { .. })
        ));
    }

    #[test]
    fn the_deepest_accepted_nesting_renders() {
        let deepest = format!("^{}a{}$", "(".repeat(MAX_NESTING), ")*".repeat(MAX_NESTING));
        let expr = assert_quick("deepest", || pattern_to_expr(&deepest));
        assert_eq!(expr.map(|e| e.to_gbnf()), Ok(r#""a"*"#.to_owned()));
        let deepest = format!(
            "^{}a{}$",
            "(b".repeat(MAX_NESTING),
            ")?".repeat(MAX_NESTING)
        );
        let gbnf = pattern_to_expr(&deepest)
            .map(|e| e.to_gbnf())
            .unwrap_or_default();
        assert_eq!(gbnf.matches('?').count(), MAX_NESTING);
    }

    #[test]
    fn huge_patterns_stay_fast() {
        let same = vec!["a"; 100_000].join("|");
        let expr = assert_quick("same alternatives", || pattern_to_expr(&same));
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
        match assert_quick("distinct alternatives", || pattern_to_expr(&distinct)) {
            Ok(Expr::Alt(items)) => assert_eq!(items.len(), 50_000),
            other => panic!("{other:?}"),
        }
        let long = "ab\\\"".repeat(250_000);
        assert!(assert_quick("long literal", || pattern_to_expr(&long)).is_ok());
        let groups = "(?:a|b)*".repeat(20_000);
        assert!(assert_quick("many groups", || pattern_to_expr(&groups)).is_ok());
        let classes = "[^a-z\\d\\s]".repeat(20_000);
        assert!(assert_quick("many classes", || pattern_to_expr(&classes)).is_ok());
        let brackets = "[".repeat(100_000);
        assert!(matches!(
            pattern_to_expr(&brackets),
            Err(RegexError::Syntax { offset: 0, .. })
        ));
        let braces = "a{1".repeat(100_000);
        assert!(assert_quick("braces", || pattern_to_expr(&braces)).is_ok());
        let big_class = format!(
            "[{}]",
            (0x100u32..0x20000)
                .filter_map(char::from_u32)
                .collect::<String>()
        );
        assert!(assert_quick("big class", || pattern_to_expr(&big_class)).is_ok());
    }

    #[test]
    fn random_garbage_never_panics() {
        const PIECES: &[&str] = &[
            "(", ")", "[", "]", "{", "}", "|", "^", "$", "*", "+", "?", ".", "\\", "-", ",", "a",
            "1", "0", "?:", "?<", "?=", "<", ">", "\\u", "D83D", "\\x", "\\c", "é", "😀", "{2,",
            "{1}",
        ];
        let mut rng = Rng(42);
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
}
