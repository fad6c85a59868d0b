//! The GBNF parser: rules, groups, literals, character classes, escapes and
//! tokens, read the way llama.cpp reads them into the element arena.

use crate::hashing::Map;

use super::elements::{to_u32, DeadSite, Elem, Kind, Origin, Sym};
use super::errors::line_col;
use super::errors::{excerpt, is_name_byte, name_hint, show_char, where_is, Fail};
use super::repetition::Repeat;
use super::rules::Grammar;
use super::{TokenText, TokenUse, LAST_CODE_POINT, MAX_NESTING, UNSET};

/// A rule being built: the rule itself or a group inside it.
pub(super) struct Frame {
    rule: u32,
    pub(super) elems: Vec<Elem>,
    /// Start of the last item in `elems` (== len: nothing to repeat).
    pub(super) last_start: usize,
    /// llama.cpp's count of rules the last item stands for.
    pub(super) n_prev: u64,
    /// Byte offset of the `(`.
    open: usize,
    /// Symbol count before the group's own symbol was created.
    syms_before: usize,
    /// Named-symbol count at the same moment.
    named_before: usize,
    /// Whether `n_prev` counts rules first named inside a group.
    pub(super) n_prev_has_names: bool,
    pub(super) nested: bool,
}

impl Frame {
    pub(super) fn new(rule: u32, nested: bool, open: usize, before: (usize, usize)) -> Self {
        Frame {
            rule,
            elems: Vec::new(),
            last_start: 0,
            n_prev: 1,
            open,
            syms_before: before.0,
            named_before: before.1,
            n_prev_has_names: false,
            nested,
        }
    }

    /// Start a new item: a following repetition applies to it.
    fn begin_item(&mut self) {
        self.last_start = self.elems.len();
        self.n_prev = 1;
        self.n_prev_has_names = false;
    }

    pub(super) fn push(&mut self, kind: Kind, value: u32) {
        self.elems.push(Elem::new(kind, value));
    }

    fn next_alternative(&mut self) {
        self.push(Kind::Alt, 0);
        self.begin_item();
    }
}

pub(super) struct Parser<'a> {
    src: &'a str,
    bytes: &'a [u8],
    syms: Vec<Sym>,
    names: Map<&'a str, u32>,
    pub(super) arena: Vec<Elem>,
    dead_sites: Vec<DeadSite>,
    pub(super) expanded: u64,
    /// Highest id passed to `set_rule` (+1): llama.cpp's `rules.size()`.
    rules_len: usize,
    def_order: Vec<u32>,
    redefined: Vec<u32>,
    tokens: TokenUse,
    /// Name range of the rule being defined.
    current: (u32, u32),
}

impl<'a> Parser<'a> {
    pub(super) fn new(src: &'a str) -> Self {
        Parser {
            src,
            bytes: src.as_bytes(),
            syms: Vec::new(),
            names: Map::default(),
            arena: Vec::new(),
            dead_sites: Vec::new(),
            expanded: 0,
            rules_len: 0,
            def_order: Vec::new(),
            redefined: Vec::new(),
            tokens: TokenUse::default(),
            current: (0, 0),
        }
    }

    pub(super) fn byte(&self, pos: usize) -> Option<u8> {
        self.bytes.get(pos).copied()
    }

    fn char_at(&self, pos: usize) -> Option<char> {
        self.src.get(pos..).and_then(|rest| rest.chars().next())
    }

    /// What is at `pos`, for messages.
    pub(super) fn found(&self, pos: usize) -> String {
        match self.char_at(pos) {
            Some(c) => format!("\"{}\"", show_char(u32::from(c))),
            None => "end of input".to_owned(),
        }
    }

    /// The failure at `pos` when `what` was expected there.
    pub(super) fn expected(&self, pos: usize, what: &str) -> Fail {
        Fail::new(pos, format!("expected {what}, found {}", self.found(pos)))
    }

    /// Nothing when the byte at `pos` is `byte`, else the failure naming
    /// `what` was expected (the byte and its purpose, as in `"]" after the
    /// token id`).
    pub(super) fn expect_byte(&self, pos: usize, byte: u8, what: &str) -> Result<(), Fail> {
        if self.byte(pos) == Some(byte) {
            Ok(())
        } else {
            Err(self.expected(pos, what))
        }
    }

    /// Skip blanks and comments (and newlines when `newline_ok`).
    pub(super) fn skip_space(&self, mut pos: usize, newline_ok: bool) -> usize {
        loop {
            match self.byte(pos) {
                Some(b' ' | b'\t') => pos += 1,
                Some(b'\r' | b'\n') if newline_ok => pos += 1,
                Some(b'#') => {
                    while !matches!(self.byte(pos), None | Some(b'\r' | b'\n')) {
                        pos += 1;
                    }
                }
                _ => return pos,
            }
        }
    }

    fn name_end(&self, mut pos: usize) -> usize {
        while self.byte(pos).is_some_and(is_name_byte) {
            pos += 1;
        }
        pos
    }

    // -- symbols ------------------------------------------------------------

    fn new_sym(&mut self, name: (u32, u32), pos: usize, origin: Origin) -> u32 {
        let id = to_u32(self.syms.len());
        self.syms.push(Sym {
            name_start: name.0,
            name_end: name.1,
            pos: to_u32(pos),
            first_ref: UNSET,
            start: 0,
            end: 0,
            origin,
            redefined: false,
        });
        id
    }

    /// The id of a named symbol, created on first sight.
    fn named(&mut self, start: usize, end: usize) -> u32 {
        let name = self.src.get(start..end).unwrap_or_default();
        if let Some(&id) = self.names.get(name) {
            return id;
        }
        let id = self.new_sym((to_u32(start), to_u32(end)), start, Origin::Named);
        self.names.insert(name, id);
        id
    }

    pub(super) fn generated(&mut self, pos: usize, origin: Origin) -> u32 {
        self.new_sym(self.current, pos, origin)
    }

    fn sym_mut(&mut self, id: u32) -> Option<&mut Sym> {
        self.syms.get_mut(id as usize)
    }

    /// Give `id` the rule made of the arena from `start` to the end.
    pub(super) fn set_rule(&mut self, id: u32, start: usize) {
        let end = to_u32(self.arena.len());
        if let Some(sym) = self.sym_mut(id) {
            sym.start = to_u32(start);
            sym.end = end;
        }
        self.rules_len = self.rules_len.max(id as usize + 1);
    }

    // -- rules ----------------------------------------------------------------

    pub(super) fn parse_grammar(&mut self) -> Result<(), Fail> {
        let mut pos = self.skip_space(0, true);
        while pos < self.bytes.len() {
            pos = self.parse_rule(pos)?;
        }
        Ok(())
    }

    fn parse_rule(&mut self, start: usize) -> Result<usize, Fail> {
        let end = self.name_end(start);
        if end == start {
            return Err(self.expected(start, "a rule name"));
        }
        let id = self.named(start, end);
        let name = self.src.get(start..end).unwrap_or_default();
        let pos = self.skip_space(end, false);
        if !self
            .bytes
            .get(pos..)
            .is_some_and(|rest| rest.starts_with(b"::="))
        {
            let hint = if pos == end {
                name_hint(self.char_at(end))
            } else {
                ""
            };
            return Err(Fail::new(
                pos,
                format!("expecting \"::=\" after rule name \"{name}\"{hint}"),
            ));
        }
        self.note_definition(id, start);
        self.current = (to_u32(start), to_u32(end));
        let body = self.skip_space(pos + 3, true);
        let after = self.parse_body(body, id)?;
        self.end_of_rule(after)
    }

    fn note_definition(&mut self, id: u32, start: usize) {
        let Some(sym) = self.sym_mut(id) else { return };
        let (again, noted) = (sym.defined(), sym.redefined);
        sym.pos = to_u32(start);
        sym.redefined = again;
        if !again {
            self.def_order.push(id);
        } else if !noted {
            self.redefined.push(id);
        }
    }

    /// After a rule's alternatives: a newline or the end of the text.
    fn end_of_rule(&self, pos: usize) -> Result<usize, Fail> {
        let next = match self.byte(pos) {
            None => pos,
            Some(b'\r') if self.byte(pos + 1) == Some(b'\n') => pos + 2,
            Some(b'\r' | b'\n') => pos + 1,
            Some(_) => return Err(self.unexpected(pos)),
        };
        Ok(self.skip_space(next, true))
    }

    fn unexpected(&self, pos: usize) -> Fail {
        let rest = self.bytes.get(pos..).unwrap_or_default();
        let message = if rest.starts_with(b"::=") {
            "unexpected \"::=\": each rule must start on a new line (does the previous \
             line end with \"|\" or \"::=\"?)"
                .to_owned()
        } else if rest.starts_with(b")") {
            "unexpected \")\" without a matching \"(\"".to_owned()
        } else {
            let found = self.found(pos);
            format!("unexpected {found}{}", name_hint(self.char_at(pos)))
        };
        Fail::new(pos, message)
    }

    /// Parse the alternatives of rule `rule` starting at `pos`; groups are
    /// handled with an explicit stack of frames.
    fn parse_body(&mut self, mut pos: usize, rule: u32) -> Result<usize, Fail> {
        let mut stack = vec![Frame::new(rule, false, pos, (0, 0))];
        loop {
            let Some(frame) = stack.last_mut() else {
                return Ok(pos);
            };
            pos = self.parse_items(pos, frame)?;
            match self.byte(pos) {
                Some(b'(') => pos = self.open_group(&mut stack, pos)?,
                Some(b'|') => {
                    frame.next_alternative();
                    pos = self.skip_space(pos + 1, true);
                }
                _ => match self.close_frame(&mut stack, pos)? {
                    Some(next) => pos = next,
                    None => return Ok(pos),
                },
            }
        }
    }

    fn open_group(&mut self, stack: &mut Vec<Frame>, open: usize) -> Result<usize, Fail> {
        if stack.len() > MAX_NESTING {
            return Err(Fail::new(
                open,
                format!("parentheses are nested too deeply (limit {MAX_NESTING})"),
            ));
        }
        let pos = self.skip_space(open + 1, true);
        let before = (self.syms.len(), self.names.len());
        let id = self.generated(open, Origin::Group);
        stack.push(Frame::new(id, true, open, before));
        Ok(pos)
    }

    /// Finish the innermost frame. Returns where parsing continues, or
    /// `None` when the rule itself is done.
    fn close_frame(&mut self, stack: &mut Vec<Frame>, pos: usize) -> Result<Option<usize>, Fail> {
        let Some(frame) = stack.pop() else {
            return Ok(None);
        };
        let start = self.arena.len();
        self.arena.extend_from_slice(&frame.elems);
        self.arena.push(Elem::new(Kind::End, 0));
        self.set_rule(frame.rule, start);
        if !frame.nested {
            return Ok(None);
        }
        if self.byte(pos) != Some(b')') {
            return Err(self.unclosed(frame.open, pos));
        }
        let created = self.syms.len().saturating_sub(frame.syms_before).max(1);
        let named = self.names.len() > frame.named_before;
        let Some(parent) = stack.last_mut() else {
            return Ok(None);
        };
        parent.begin_item();
        parent.n_prev = created as u64;
        parent.n_prev_has_names = named;
        parent.push(Kind::Ref, frame.rule);
        Ok(Some(self.skip_space(pos + 1, parent.nested)))
    }

    fn unclosed(&self, open: usize, pos: usize) -> Fail {
        if pos >= self.bytes.len() {
            return Fail::new(open, "unclosed \"(\"");
        }
        Fail::new(
            pos,
            format!(
                "unexpected {} inside the group opened at {}; expected \")\"",
                self.found(pos),
                where_is(self.src, open)
            ),
        )
    }

    // -- items ----------------------------------------------------------------

    /// Parse the items of one sequence; stops at anything that is not an
    /// item (`(` included: the caller opens the group).
    fn parse_items(&mut self, mut pos: usize, frame: &mut Frame) -> Result<usize, Fail> {
        loop {
            let nested = frame.nested;
            pos = match self.byte(pos) {
                Some(b'"') => self.literal(pos, frame)?,
                Some(b'[') => self.class(pos, frame)?,
                Some(b'<' | b'!') => self.token(pos, frame)?,
                Some(b) if is_name_byte(b) => self.reference(pos, frame),
                Some(b'.') => {
                    frame.begin_item();
                    frame.push(Kind::Any, 0);
                    self.skip_space(pos + 1, nested)
                }
                Some(op @ (b'*' | b'+' | b'?')) => {
                    let (min, max) = match op {
                        b'*' => (0, None),
                        b'+' => (1, None),
                        _ => (0, Some(1)),
                    };
                    self.repeat(frame, &Repeat { op: pos, min, max })?;
                    self.skip_space(pos + 1, nested)
                }
                Some(b'{') => self.braces(pos, frame)?,
                _ => return Ok(pos),
            };
        }
    }

    fn reference(&mut self, pos: usize, frame: &mut Frame) -> usize {
        let end = self.name_end(pos);
        let id = self.named(pos, end);
        if let Some(sym) = self.sym_mut(id) {
            if sym.first_ref == UNSET {
                sym.first_ref = to_u32(pos);
            }
        }
        frame.begin_item();
        frame.push(Kind::Ref, id);
        self.skip_space(end, frame.nested)
    }

    fn literal(&mut self, open: usize, frame: &mut Frame) -> Result<usize, Fail> {
        frame.begin_item();
        let unterminated = || Fail::new(open, "unterminated string literal");
        let mut pos = open + 1;
        loop {
            match self.byte(pos) {
                None => return Err(unterminated()),
                Some(b'"') => break,
                Some(_) => {}
            }
            let (value, next) = self.escaped_char(pos, &unterminated)?;
            if value == 0 {
                let site = self.dead_site(pos, false);
                frame.push(Kind::Dead, site);
            } else {
                frame.push(Kind::Char, value);
            }
            pos = next;
        }
        Ok(self.skip_space(pos + 1, frame.nested))
    }

    fn dead_site(&mut self, pos: usize, is_class: bool) -> u32 {
        self.dead_sites.push(DeadSite { pos, is_class });
        to_u32(self.dead_sites.len() - 1)
    }

    fn class(&mut self, open: usize, frame: &mut Frame) -> Result<usize, Fail> {
        frame.begin_item();
        let unterminated = || Fail::new(open, "unterminated character class");
        let mut pos = open + 1;
        let negated = self.byte(pos) == Some(b'^');
        if negated {
            pos += 1;
        }
        let first = frame.elems.len();
        let mut ranges = Vec::new();
        loop {
            match self.byte(pos) {
                None => return Err(unterminated()),
                Some(b']') => break,
                Some(_) => {}
            }
            let kind = match (frame.elems.len() > first, negated) {
                (true, _) => Kind::CharAlt,
                (false, true) => Kind::CharNot,
                (false, false) => Kind::Char,
            };
            let ((low, high), next) = self.class_range(pos, &unterminated)?;
            frame.push(kind, low);
            if let Some(high) = high {
                frame.push(Kind::RangeUpper, high);
            }
            ranges.push((low, high.unwrap_or(low)));
            pos = next;
        }
        if frame.elems.len() > first && class_is_empty(negated, &mut ranges) {
            let site = self.dead_site(open, true);
            if let Some(elem) = frame.elems.get_mut(first) {
                *elem = Elem::new(Kind::Dead, site);
            }
        }
        Ok(self.skip_space(pos + 1, frame.nested))
    }

    /// One class member at `pos`: (low, optional high) and where the next
    /// member starts.
    fn class_range(
        &self,
        pos: usize,
        unterminated: &dyn Fn() -> Fail,
    ) -> Result<((u32, Option<u32>), usize), Fail> {
        let (low, next) = self.escaped_char(pos, unterminated)?;
        if self.byte(next) != Some(b'-') || self.byte(next + 1) == Some(b']') {
            return Ok(((low, None), next));
        }
        if self.byte(next + 1).is_none() {
            return Err(unterminated());
        }
        let (high, after) = self.escaped_char(next + 1, unterminated)?;
        if high < low {
            return Err(Fail::new(
                pos,
                format!(
                    "character range is inverted: \"{}\" > \"{}\"",
                    show_char(low),
                    show_char(high)
                ),
            ));
        }
        Ok(((low, Some(high)), after))
    }

    /// One character of a literal or class, escapes decoded.
    fn escaped_char(
        &self,
        pos: usize,
        unterminated: &dyn Fn() -> Fail,
    ) -> Result<(u32, usize), Fail> {
        let Some(c) = self.char_at(pos) else {
            return Err(unterminated());
        };
        if c != '\\' {
            return Ok((u32::from(c), pos + c.len_utf8()));
        }
        let Some(e) = self.char_at(pos + 1) else {
            return Err(unterminated());
        };
        let value = match e {
            'x' => return self.hex_escape(pos, 2),
            'u' => return self.hex_escape(pos, 4),
            'U' => return self.hex_escape(pos, 8),
            't' => 0x09,
            'n' => 0x0A,
            'r' => 0x0D,
            '\\' | '"' | '[' | ']' | '-' => u32::from(e),
            _ => {
                return Err(Fail::new(
                    pos,
                    format!("unknown escape \"\\{}\"", show_char(u32::from(e))),
                ))
            }
        };
        Ok((value, pos + 2))
    }

    /// `\x`, `\u` or `\U` at `pos` followed by exactly `digits` hex digits.
    fn hex_escape(&self, pos: usize, digits: usize) -> Result<(u32, usize), Fail> {
        let start = pos + 2;
        let mut value: u32 = 0;
        for i in 0..digits {
            let digit = self
                .byte(start + i)
                .and_then(|b| char::from(b).to_digit(16));
            let Some(digit) = digit else {
                let letter = self.byte(pos + 1).map_or('x', char::from);
                return Err(Fail::new(
                    pos,
                    format!("expected {digits} hex digits after \"\\{letter}\""),
                ));
            };
            value = (value << 4) | digit;
        }
        let text = self.src.get(pos..start + digits).unwrap_or_default();
        if value > LAST_CODE_POINT {
            return Err(Fail::new(
                pos,
                format!("escape \"{text}\" is above U+10FFFF, the last Unicode code point"),
            ));
        }
        if (0xD800..=0xDFFF).contains(&value) {
            return Err(Fail::new(
                pos,
                format!("escape \"{text}\" is a UTF-16 surrogate, not a character"),
            ));
        }
        Ok((value, start + digits))
    }

    fn token(&mut self, start: usize, frame: &mut Frame) -> Result<usize, Fail> {
        let mut pos = start;
        let mut kind = Kind::Token;
        if self.byte(pos) == Some(b'!') {
            kind = Kind::TokenNot;
            pos += 1;
        }
        self.expect_byte(pos, b'<', "\"<\" after \"!\"")?;
        pos += 1;
        let (value, end) = if self.byte(pos) == Some(b'[') {
            let (id, end) = self.token_id(pos + 1)?;
            self.tokens.max_id = self.tokens.max_id.max(Some(id));
            (id, end)
        } else {
            match self
                .bytes
                .get(pos..)
                .and_then(|rest| rest.iter().position(|&b| b == b'>'))
            {
                Some(offset) => {
                    let end = pos + offset + 1;
                    let text = String::from_utf8_lossy(&self.bytes[pos - 1..end]);
                    if !self.tokens.texts.iter().any(|t| t.text == text) {
                        let (line, column) = line_col(self.src, pos - 1);
                        self.tokens.texts.push(TokenText {
                            text: text.into_owned(),
                            line,
                            column,
                        });
                    }
                    (0, end)
                }
                None => return Err(Fail::new(start, "unterminated token: expected \">\"")),
            }
        };
        frame.begin_item();
        frame.push(kind, value);
        Ok(self.skip_space(end, frame.nested))
    }

    /// `123]>` after `<[`: the id and where the token ends.
    fn token_id(&self, pos: usize) -> Result<(u32, usize), Fail> {
        let (number, end) = self.number(pos);
        let Some(number) = number else {
            return Err(self.expected(pos, "a token id after \"<[\""));
        };
        let Some(id) = number.value.and_then(|v| u32::try_from(v).ok()) else {
            return Err(Fail::new(
                pos,
                format!("token id {} is too large", excerpt(number.text)),
            ));
        };
        self.expect_byte(end, b']', "\"]\" after the token id")?;
        self.expect_byte(end + 1, b'>', "\">\" after \"]\"")?;
        Ok((id, end + 2))
    }

    /// Decimal digits at `pos` (None when there are none) and where they end.
    pub(super) fn number(&self, pos: usize) -> (Option<Number<'a>>, usize) {
        let mut end = pos;
        let mut value: Option<u64> = Some(0);
        while let Some(b @ b'0'..=b'9') = self.byte(end) {
            value = value
                .and_then(|v| v.checked_mul(10))
                .and_then(|v| v.checked_add(u64::from(b - b'0')));
            end += 1;
        }
        if end == pos {
            return (None, pos);
        }
        let text = self.src.get(pos..end).unwrap_or_default();
        (Some(Number { value, text, pos }), end)
    }

    pub(super) fn into_grammar(self) -> Result<Grammar<'a>, Fail> {
        if self.rules_len == 0 {
            return Err(Fail::new(0, "grammar is empty"));
        }
        Ok(Grammar {
            src: self.src,
            syms: self.syms,
            names: self.names,
            arena: self.arena,
            dead_sites: self.dead_sites,
            n: self.rules_len,
            def_order: self.def_order,
            redefined: self.redefined,
            tokens: self.tokens,
        })
    }
}

/// A decimal number in the source.
pub(super) struct Number<'a> {
    /// None when it does not fit in 64 bits.
    pub(super) value: Option<u64>,
    pub(super) text: &'a str,
    pub(super) pos: usize,
}

/// Whether a class matches no character a model can generate (anything but
/// NUL up to U+10FFFF).
fn class_is_empty(negated: bool, ranges: &mut [(u32, u32)]) -> bool {
    if !negated {
        return ranges.iter().all(|&(_, high)| high == 0);
    }
    ranges.sort_unstable();
    let mut next = 1u32;
    for &(low, high) in ranges.iter() {
        if low > next {
            return false;
        }
        next = next.max(high.saturating_add(1));
        if next > LAST_CODE_POINT {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use crate::grammar::check::tests::{expect_message, timed, NEAR_LIMIT};
    use crate::grammar::check::{check, GrammarError, MAX_NESTING};

    fn nested(depth: usize) -> String {
        format!("root ::= {}\"a\"{}", "(".repeat(depth), ")".repeat(depth))
    }

    #[test]
    fn nesting_limit() {
        assert!(check(&nested(MAX_NESTING)).is_ok());
        let err = check(&nested(MAX_NESTING + 1)).unwrap_err();
        assert_eq!(
            err,
            GrammarError {
                line: 1,
                column: 10 + MAX_NESTING,
                message: "parentheses are nested too deeply (limit 1000)".to_owned(),
            }
        );
    }

    #[test]
    fn hostile_one_megabyte_literal() {
        let text = format!("root ::= \"{}\"", "ab".repeat(NEAR_LIMIT / 2));
        assert!(timed("1 MB literal", &text).is_ok());
    }

    #[test]
    fn hostile_one_megabyte_class() {
        let body: String = ('\u{100}'..='\u{D7FF}')
            .chain('\u{E000}'..='\u{FFFF}')
            .collect();
        let mut class = String::new();
        while class.len() < NEAR_LIMIT - 64 {
            class.push_str(&body);
        }
        let cut = (0..=NEAR_LIMIT - 64)
            .rev()
            .find(|&i| class.is_char_boundary(i))
            .unwrap_or(0);
        class.truncate(cut);
        assert!(timed("1 MB negated class", &format!("root ::= [^{class}]")).is_ok());
    }

    #[test]
    fn hostile_one_megabyte_of_groups() {
        let text = format!("root ::= {}", "(\"a\")".repeat(NEAR_LIMIT / 5));
        assert!(timed("1 MB of groups", &text).is_ok());
        let text = format!("root ::= {}", "()".repeat(NEAR_LIMIT / 2));
        assert!(timed("1 MB of empty groups", &text).is_ok());
        let text = format!("root ::= \"a\"{}", " |".repeat(NEAR_LIMIT / 2));
        assert!(timed("1 MB of empty alternatives", &text).is_ok());
    }

    #[test]
    fn hostile_deep_parentheses() {
        let text = nested(100_000);
        expect_message(timed("100k nested parentheses", &text), "nested too deeply");
        let text = format!("root ::= {}", "(".repeat(NEAR_LIMIT - 16));
        expect_message(
            timed("1 MB of open parentheses", &text),
            "nested too deeply",
        );
        // Many groups at the maximum depth, one after the other.
        let one = format!(
            "{}\"a\"{}",
            "(".repeat(MAX_NESTING),
            ")".repeat(MAX_NESTING)
        );
        let text = format!("root ::= {}", one.repeat(400));
        assert!(timed("400 groups 1000 deep", &text).is_ok());
    }

    #[test]
    fn hostile_odd_text() {
        let text = format!("# {}\nroot ::= \"a\"", "x".repeat(NEAR_LIMIT));
        assert!(timed("1 MB comment", &text).is_ok());
        let text = format!("root ::= \"a\"{}", " \t".repeat(NEAR_LIMIT / 2));
        assert!(timed("1 MB of blanks", &text).is_ok());
        let text = "\n".repeat(NEAR_LIMIT) + "root ::= 'a'";
        let err = timed("1 MB of newlines then an error", &text).unwrap_err();
        assert_eq!((err.line, err.column), (NEAR_LIMIT + 1, 10));
        let text = format!("root ::= <{}", "x".repeat(NEAR_LIMIT));
        expect_message(
            timed("1 MB unterminated token", &text),
            "unterminated token",
        );
        let text = format!("root ::= {}", "\\".repeat(NEAR_LIMIT));
        expect_message(timed("1 MB of backslashes", &text), "unexpected");
        let text = format!("root ::= \"{}\"", "\\x41".repeat(NEAR_LIMIT / 4 - 8));
        assert!(timed("1 MB of escapes", &text).is_ok());
    }
}
