//! Pre-flight check for user GBNF grammars.
//!
//! llama.cpp's grammar parser (`src/llama-grammar.cpp` in llama-cpp-sys-2
//! 0.1.161) prints its error to stderr and returns null, so the Rust wrapper
//! can only say that *something* failed; and some grammars it accepts crash
//! or hang the sampler later. [`check`] reads the GBNF text the way llama.cpp
//! does and reports the first problem with a 1-based line and column.
//!
//! # Syntax accepted (as llama.cpp accepts it)
//!
//! * A grammar is a list of rules `name ::= alternatives`, each ending at a
//!   newline (`\n`, `\r` or `\r\n`) or at the end of the text. Rule names are
//!   `[a-zA-Z0-9-]+`: llama.cpp does **not** accept `_` in names.
//! * Blanks are spaces and tabs; `#` starts a comment that runs to the end of
//!   the line. Newlines may appear after `::=`, after `|` and anywhere inside
//!   `( )`, but not between the items of a top-level sequence.
//! * Items: `"literal"`, `[class]`, `[^class]`, `.`, a rule name, a group
//!   `( ... )`, a token `<[123]>`, `<text>`, `!<[123]>`, `!<text>`, each
//!   optionally followed by `*`, `+`, `?`, `{m}`, `{m,}` or `{m,n}` (these may
//!   be stacked: `x*?` repeats `x*`).
//! * Escapes in literals and classes: `\xHH`, `\uHHHH`, `\UHHHHHHHH`, `\t`,
//!   `\n`, `\r`, `\\`, `\"`, `\[`, `\]`, `\-`. Any other character stands for
//!   itself, newlines included. `[]` and `[^]` match the empty string.
//! * An empty alternative is allowed (`a ::= "x" |` at the end of the text,
//!   `a ::= | "x"`, `( "x" | )`).
//! * A rule defined twice keeps its last definition (llama.cpp overwrites it);
//!   [`CheckedGrammar::redefined_rules`] lists such names.
//!
//! # Rejected although llama.cpp accepts it (these crash, hang or misbehave)
//!
//! * a grammar without a *defined* `root` rule (llama.cpp crashes when
//!   `root` is only referenced);
//! * left recursion through rules that match the empty string only indirectly
//!   (llama.cpp only notices an explicitly empty alternative), when the
//!   recursive reference is followed by more items: each turn pushes them on
//!   the parse stack, which grows until memory runs out. (When the reference
//!   ends its alternative the stack repeats and llama.cpp copes, so
//!   `root ::= (line "\n"?)*` with a `line` that may be empty is accepted.)
//!   Only rules reachable from `root` are checked for this;
//! * inverted ranges `[z-a]`, inverted repetitions `{3,2}` (llama.cpp loops
//!   over 2^64 rules), maxima above [`MAX_REPETITION`] (llama.cpp silently
//!   drops the bound);
//! * escapes that are not Unicode scalar values (surrogates, above U+10FFFF);
//! * a root that matches no finite string, a reachable rule that matches no
//!   finite string, and a reachable character class or `"\x00"` that can
//!   never match (the sampler rejects every token and llama.cpp aborts);
//! * sizes that exhaust memory, stack or time: [`MAX_GRAMMAR_BYTES`],
//!   [`MAX_NESTING`], [`MAX_EXPANSION`], [`MAX_LEFT_CHAIN`],
//!   [`MAX_LEFT_RECURSION_WORK`], [`MAX_PARSE_STACKS`];
//! * a NUL character in the text (it would truncate the C string).
//!
//! Token items are only checked for syntax: whether `<text>` is exactly one
//! token of the model's vocabulary is known only to llama.cpp.
//!
//! Every algorithm here is iterative and roughly linear in the size of the
//! expanded grammar, which the limits above bound.

use std::collections::HashMap;

/// Largest count allowed in `{m}`, `{m,}` and `{m,n}`. llama.cpp expands
/// repetitions into rules and rejects larger minimums itself (its
/// `MAX_REPETITION_THRESHOLD` is 2000); a larger maximum it silently turns
/// into "unbounded", so that is rejected here too. The same limit applies to
/// llama.cpp's count of rules copied by nested repetitions.
pub const MAX_REPETITION: u64 = 2000;

/// Largest grammar text accepted, in bytes.
pub const MAX_GRAMMAR_BYTES: usize = 1 << 20;

/// Deepest nesting of parentheses accepted. llama.cpp parses groups
/// recursively, so unbounded nesting overflows its stack.
pub const MAX_NESTING: usize = 1000;

/// Most grammar elements that expanding repetitions may add. llama.cpp copies
/// the repeated item once per count, so `"long literal"{2000}` written a few
/// hundred times would need gigabytes.
pub const MAX_EXPANSION: u64 = 2_000_000;

/// Longest chain of rules that each start with the next one. llama.cpp walks
/// such chains recursively when it looks for left recursion.
pub const MAX_LEFT_CHAIN: u64 = 5000;

/// Most steps llama.cpp's left-recursion check may take. It does not
/// remember rules it already checked, so some grammars (rules defined
/// bottom-up in a long chain, rules that start with several optional copies
/// of the next rule) make it run for minutes.
pub const MAX_LEFT_RECURSION_WORK: u64 = 100_000_000;

/// Most parse stacks llama.cpp may have to build at one step (an upper
/// estimate: alternatives reachable before the first character, multiplied
/// through optional items). llama.cpp removes duplicate stacks with a linear
/// search, so the time grows with the square of this number: 10 000 stacks
/// take about half a second, 100 000 (a rule of 100 000 literal
/// alternatives) minutes.
pub const MAX_PARSE_STACKS: u64 = 10_000;

/// Name of the start rule.
const ROOT: &str = "root";
/// "No value" for `u32` fields.
const UNSET: u32 = u32::MAX;
/// Largest Unicode code point.
const LAST_CODE_POINT: u32 = 0x10_FFFF;

/// A problem found in a grammar, with its 1-based line and column (the
/// column counts characters, not bytes).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}, column {column}: {message}")]
pub struct GrammarError {
    /// 1-based line (`\n`, `\r\n` and `\r` each end a line).
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
    /// What is wrong, without the position.
    pub message: String,
}

/// A grammar that passed [`check`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckedGrammar {
    rule_names: Vec<String>,
    redefined: Vec<String>,
    llama_rules: usize,
    elements: usize,
    parse_stacks: u64,
    tokens: TokenUse,
}

/// Token items in a grammar, which only the model's vocabulary can check.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct TokenUse {
    max_id: Option<u32>,
    text: bool,
}

impl CheckedGrammar {
    /// Names of the rules, in order of first definition.
    pub fn rule_names(&self) -> &[String] {
        &self.rule_names
    }

    /// Number of named rules.
    pub fn rule_count(&self) -> usize {
        self.rule_names.len()
    }

    /// Names defined more than once (llama.cpp keeps the last definition).
    pub fn redefined_rules(&self) -> &[String] {
        &self.redefined
    }

    /// Number of rules llama.cpp will build, counting the ones it generates
    /// for groups and repetitions.
    pub fn llama_rule_count(&self) -> usize {
        self.llama_rules
    }

    /// Number of grammar elements llama.cpp will build (its memory use is
    /// roughly proportional).
    pub fn element_count(&self) -> usize {
        self.elements
    }

    /// Estimated largest number of parse stacks llama.cpp keeps at one step
    /// (at most [`MAX_PARSE_STACKS`]); sampling time grows with it.
    pub fn parse_stacks(&self) -> u64 {
        self.parse_stacks
    }

    /// Largest id in `<[id]>` / `!<[id]>` items, if any: an id beyond the
    /// vocabulary never matches, which the caller can check.
    pub fn max_token_id(&self) -> Option<u32> {
        self.tokens.max_id
    }

    /// Whether the grammar has `<text>` / `!<text>` items: llama.cpp rejects
    /// the grammar when such a text is not exactly one token of the model.
    pub fn uses_text_tokens(&self) -> bool {
        self.tokens.text
    }
}

/// Parse and check a GBNF grammar whose start rule is `root`.
///
/// # Errors
///
/// The first problem found, with its position: syntax errors in text order,
/// then undefined rules, a missing `root`, left recursion, the cost of
/// llama.cpp's own checks, rules or characters that match nothing, and the
/// number of parse stacks.
pub fn check(gbnf: &str) -> Result<CheckedGrammar, GrammarError> {
    check_text(gbnf).map_err(|fail| fail.locate(gbnf))
}

fn check_text(src: &str) -> Result<CheckedGrammar, Fail> {
    precheck(src)?;
    let mut parser = Parser::new(src);
    parser.parse_grammar()?;
    let grammar = parser.into_grammar()?;
    let parse_stacks = grammar.validate()?;
    Ok(grammar.summary(parse_stacks))
}

fn precheck(src: &str) -> Result<(), Fail> {
    if src.len() > MAX_GRAMMAR_BYTES {
        return Err(Fail::new(
            0,
            format!(
                "grammar is {} bytes, more than the limit of {MAX_GRAMMAR_BYTES} bytes",
                src.len()
            ),
        ));
    }
    if let Some(pos) = src.bytes().position(|b| b == 0) {
        return Err(Fail::new(pos, "grammar contains a NUL character"));
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Errors and positions
// ---------------------------------------------------------------------------

/// An error at a byte offset, located when it leaves the module.
#[derive(Debug)]
struct Fail {
    pos: usize,
    message: String,
}

impl Fail {
    fn new(pos: usize, message: impl Into<String>) -> Self {
        Fail {
            pos,
            message: message.into(),
        }
    }

    fn locate(self, src: &str) -> GrammarError {
        let (line, column) = line_col(src, self.pos);
        GrammarError {
            line,
            column,
            message: self.message,
        }
    }
}

/// 1-based line and column (in characters) of a byte offset.
fn line_col(src: &str, pos: usize) -> (usize, usize) {
    let mut end = pos.min(src.len());
    while !src.is_char_boundary(end) {
        end -= 1;
    }
    let (mut line, mut column, mut after_cr) = (1, 1, false);
    for c in src.get(..end).unwrap_or_default().chars() {
        match c {
            '\n' if after_cr => column = 1,
            '\n' | '\r' => {
                line += 1;
                column = 1;
            }
            _ => column += 1,
        }
        after_cr = c == '\r';
    }
    (line, column)
}

/// "line L, column C" of a byte offset, for messages that mention a second
/// position.
fn where_is(src: &str, pos: usize) -> String {
    let (line, column) = line_col(src, pos);
    format!("line {line}, column {column}")
}

/// A code point as it reads in a message: the character itself when
/// printable, else a GBNF escape.
fn show_char(value: u32) -> String {
    match char::from_u32(value) {
        Some('"') => "\\\"".to_owned(),
        Some('\\') => "\\\\".to_owned(),
        Some(c) if c == ' ' || (!c.is_control() && !c.is_whitespace()) => c.to_string(),
        _ if value <= 0xFF => format!("\\x{value:02X}"),
        _ if value <= 0xFFFF => format!("\\u{value:04X}"),
        _ => format!("\\U{value:08X}"),
    }
}

/// A piece of source for a message, shortened when long.
fn excerpt(text: &str) -> String {
    const MAX: usize = 24;
    if text.chars().count() <= MAX {
        text.to_owned()
    } else {
        let head: String = text.chars().take(MAX).collect();
        format!("{head}...")
    }
}

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-'
}

/// Hint added when a name is followed by a character that looks like part
/// of it.
fn name_hint(next: Option<char>) -> &'static str {
    match next {
        Some(c) if c == '_' || c.is_alphanumeric() => {
            " (rule names may contain only ASCII letters, digits and \"-\")"
        }
        _ => "",
    }
}

// ---------------------------------------------------------------------------
// Grammar elements (the same shape as llama.cpp's rules)
// ---------------------------------------------------------------------------

/// Element kinds. A rule is a list of alternatives separated by `Alt` and
/// closed by `End`; a character item is `Char`/`CharNot`/`Any` (or `Dead`)
/// followed by `CharAlt`/`RangeUpper` continuations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    End,
    Alt,
    Ref,
    Char,
    CharNot,
    CharAlt,
    RangeUpper,
    Any,
    Token,
    TokenNot,
    /// A character item that no generated text can match; the value indexes
    /// `dead_sites`.
    Dead,
}

#[derive(Debug, Clone, Copy)]
struct Elem {
    kind: Kind,
    value: u32,
}

impl Elem {
    fn new(kind: Kind, value: u32) -> Self {
        Elem { kind, value }
    }

    fn ends_alternative(self) -> bool {
        matches!(self.kind, Kind::Alt | Kind::End)
    }
}

/// A symbol: a named rule (defined or only referenced) or a rule llama.cpp
/// generates for a group or a repetition. Its index is llama.cpp's rule id.
#[derive(Debug, Clone)]
struct Sym {
    /// Byte range of the name (for generated rules: of the rule they are in).
    name_start: u32,
    name_end: u32,
    /// Where the (last) definition starts, or where the group / repetition is.
    pos: u32,
    /// First reference, for "undefined rule" messages.
    first_ref: u32,
    /// Element range in the arena; empty while undefined.
    start: u32,
    end: u32,
    origin: Origin,
    /// Defined more than once.
    redefined: bool,
}

/// Where a symbol comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    Named,
    Group,
    Repetition,
}

impl Sym {
    fn defined(&self) -> bool {
        self.start < self.end
    }
}

/// A character item that can never match.
#[derive(Debug, Clone, Copy)]
struct DeadSite {
    pos: usize,
    is_class: bool,
}

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(UNSET)
}

// ---------------------------------------------------------------------------
// Parser
// ---------------------------------------------------------------------------

/// A rule being built: the rule itself or a group inside it.
struct Frame {
    rule: u32,
    elems: Vec<Elem>,
    /// Start of the last item in `elems` (== len: nothing to repeat).
    last_start: usize,
    /// llama.cpp's count of rules the last item stands for.
    n_prev: u64,
    /// Byte offset of the `(`.
    open: usize,
    /// Symbol count before the group's own symbol was created.
    syms_before: usize,
    /// Named-symbol count at the same moment.
    named_before: usize,
    /// Whether `n_prev` counts rules first named inside a group.
    n_prev_has_names: bool,
    nested: bool,
}

impl Frame {
    fn new(rule: u32, nested: bool, open: usize, before: (usize, usize)) -> Self {
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

    fn push(&mut self, kind: Kind, value: u32) {
        self.elems.push(Elem::new(kind, value));
    }

    fn next_alternative(&mut self) {
        self.push(Kind::Alt, 0);
        self.begin_item();
    }
}

/// What a repetition operator asks for.
struct Repeat {
    op: usize,
    min: u64,
    max: Option<u64>,
}

struct Parser<'a> {
    src: &'a str,
    bytes: &'a [u8],
    syms: Vec<Sym>,
    names: HashMap<&'a str, u32>,
    arena: Vec<Elem>,
    dead_sites: Vec<DeadSite>,
    expanded: u64,
    /// Highest id passed to `set_rule` (+1): llama.cpp's `rules.size()`.
    rules_len: usize,
    def_order: Vec<u32>,
    redefined: Vec<u32>,
    tokens: TokenUse,
    /// Name range of the rule being defined.
    current: (u32, u32),
}

impl<'a> Parser<'a> {
    fn new(src: &'a str) -> Self {
        Parser {
            src,
            bytes: src.as_bytes(),
            syms: Vec::new(),
            names: HashMap::new(),
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

    fn byte(&self, pos: usize) -> Option<u8> {
        self.bytes.get(pos).copied()
    }

    fn char_at(&self, pos: usize) -> Option<char> {
        self.src.get(pos..).and_then(|rest| rest.chars().next())
    }

    /// What is at `pos`, for messages.
    fn found(&self, pos: usize) -> String {
        match self.char_at(pos) {
            Some(c) => format!("\"{}\"", show_char(u32::from(c))),
            None => "end of input".to_owned(),
        }
    }

    /// Skip blanks and comments (and newlines when `newline_ok`).
    fn skip_space(&self, mut pos: usize, newline_ok: bool) -> usize {
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

    fn generated(&mut self, pos: usize, origin: Origin) -> u32 {
        self.new_sym(self.current, pos, origin)
    }

    fn sym_mut(&mut self, id: u32) -> Option<&mut Sym> {
        self.syms.get_mut(id as usize)
    }

    /// Give `id` the rule made of the arena from `start` to the end.
    fn set_rule(&mut self, id: u32, start: usize) {
        let end = to_u32(self.arena.len());
        if let Some(sym) = self.sym_mut(id) {
            sym.start = to_u32(start);
            sym.end = end;
        }
        self.rules_len = self.rules_len.max(id as usize + 1);
    }

    // -- rules ----------------------------------------------------------------

    fn parse_grammar(&mut self) -> Result<(), Fail> {
        let mut pos = self.skip_space(0, true);
        while pos < self.bytes.len() {
            pos = self.parse_rule(pos)?;
        }
        Ok(())
    }

    fn parse_rule(&mut self, start: usize) -> Result<usize, Fail> {
        let end = self.name_end(start);
        if end == start {
            return Err(Fail::new(
                start,
                format!("expected a rule name, found {}", self.found(start)),
            ));
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
        if self.byte(pos) != Some(b'<') {
            return Err(Fail::new(
                pos,
                format!("expected \"<\" after \"!\", found {}", self.found(pos)),
            ));
        }
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
                    self.tokens.text = true;
                    (0, pos + offset + 1)
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
            return Err(Fail::new(
                pos,
                format!(
                    "expected a token id after \"<[\", found {}",
                    self.found(pos)
                ),
            ));
        };
        let Some(id) = number.value.and_then(|v| u32::try_from(v).ok()) else {
            return Err(Fail::new(
                pos,
                format!("token id {} is too large", excerpt(number.text)),
            ));
        };
        if self.byte(end) != Some(b']') {
            return Err(Fail::new(
                end,
                format!(
                    "expected \"]\" after the token id, found {}",
                    self.found(end)
                ),
            ));
        }
        if self.byte(end + 1) != Some(b'>') {
            return Err(Fail::new(
                end + 1,
                format!("expected \">\" after \"]\", found {}", self.found(end + 1)),
            ));
        }
        Ok((id, end + 2))
    }

    /// Decimal digits at `pos` (None when there are none) and where they end.
    fn number(&self, pos: usize) -> (Option<Number<'a>>, usize) {
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

    // -- repetitions ----------------------------------------------------------

    fn braces(&mut self, open: usize, frame: &mut Frame) -> Result<usize, Fail> {
        let nested = frame.nested;
        let pos = self.skip_space(open + 1, nested);
        let (Some(min), after_min) = self.number(pos) else {
            return Err(Fail::new(
                pos,
                format!("expected a number after \"{{\", found {}", self.found(pos)),
            ));
        };
        let min = count(&min)?;
        let pos = self.skip_space(after_min, nested);
        let (max, end) = match self.byte(pos) {
            Some(b'}') => (Some(min), pos),
            Some(b',') => {
                let (max, end) = self.brace_max(pos + 1, nested)?;
                (max.as_ref().map(count).transpose()?, end)
            }
            _ => {
                return Err(Fail::new(
                    pos,
                    format!(
                        "expected \",\" or \"}}\" in repetition, found {}",
                        self.found(pos)
                    ),
                ))
            }
        };
        if let Some(max) = max.filter(|&max| max < min) {
            return Err(Fail::new(
                open,
                format!("repetition range is inverted: minimum {min} > maximum {max}"),
            ));
        }
        self.repeat(frame, &Repeat { op: open, min, max })?;
        Ok(self.skip_space(end + 1, nested))
    }

    /// After `{m,`: the optional maximum and the position of `}`.
    fn brace_max(&self, pos: usize, nested: bool) -> Result<(Option<Number<'a>>, usize), Fail> {
        let mut pos = self.skip_space(pos, nested);
        let (max, after) = self.number(pos);
        if max.is_some() {
            pos = self.skip_space(after, nested);
        }
        if self.byte(pos) != Some(b'}') {
            return Err(Fail::new(
                pos,
                format!(
                    "expected \"}}\" to close the repetition, found {}",
                    self.found(pos)
                ),
            ));
        }
        Ok((max, pos))
    }

    /// Expand a repetition of the frame's last item the way llama.cpp does:
    /// `S{m,n}` becomes m copies of S and a chain of n-m optional rules
    /// (`S'(k) ::= S S'(k-1) |`), `S{m,}` m copies and `S' ::= S S' |`.
    fn repeat(&mut self, frame: &mut Frame, rep: &Repeat) -> Result<(), Fail> {
        if frame.last_start >= frame.elems.len() {
            return Err(Fail::new(
                rep.op,
                format!("{} has nothing to repeat", self.found(rep.op)),
            ));
        }
        let total = match rep.max {
            Some(max) if max > 0 => max,
            _ => rep.min.max(1),
        };
        let n_prev = frame.n_prev.saturating_mul(total);
        if n_prev > MAX_REPETITION {
            let hint = if frame.n_prev_has_names {
                "; rules first named inside the repeated group count too, so defining them \
                 before this rule may help"
            } else {
                ""
            };
            return Err(Fail::new(
                rep.op,
                format!(
                    "nested repetition is too large: llama.cpp would copy {n_prev} rules \
                     (limit {MAX_REPETITION}){hint}"
                ),
            ));
        }
        let span = frame.elems.split_off(frame.last_start);
        let n_opt = rep.max.map_or(1, |max| max.saturating_sub(rep.min));
        self.charge_expansion(rep, span.len() as u64, n_opt)?;
        for _ in 0..rep.min {
            frame.elems.extend_from_slice(&span);
        }
        let mut last = UNSET;
        for i in 0..n_opt {
            let id = self.generated(rep.op, Origin::Repetition);
            let start = self.arena.len();
            self.arena.extend_from_slice(&span);
            if rep.max.is_none() {
                self.arena.push(Elem::new(Kind::Ref, id));
            } else if i > 0 {
                self.arena.push(Elem::new(Kind::Ref, last));
            }
            self.arena.push(Elem::new(Kind::Alt, 0));
            self.arena.push(Elem::new(Kind::End, 0));
            self.set_rule(id, start);
            last = id;
        }
        if n_opt > 0 {
            frame.push(Kind::Ref, last);
        }
        frame.n_prev = n_prev;
        Ok(())
    }

    fn charge_expansion(&mut self, rep: &Repeat, span: u64, n_opt: u64) -> Result<(), Fail> {
        let copies = rep.min.saturating_sub(1).saturating_mul(span);
        let rules = n_opt.saturating_mul(span.saturating_add(3));
        self.expanded = self
            .expanded
            .saturating_add(copies)
            .saturating_add(rules)
            .saturating_add(1);
        if self.expanded > MAX_EXPANSION {
            return Err(Fail::new(
                rep.op,
                format!(
                    "repetitions expand the grammar to more than {MAX_EXPANSION} elements; \
                     repeat shorter items or fewer times"
                ),
            ));
        }
        Ok(())
    }

    fn into_grammar(self) -> Result<Grammar<'a>, Fail> {
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
struct Number<'a> {
    /// None when it does not fit in 64 bits.
    value: Option<u64>,
    text: &'a str,
    pos: usize,
}

/// A repetition count, within [`MAX_REPETITION`].
fn count(number: &Number<'_>) -> Result<u64, Fail> {
    match number.value {
        Some(value) if value <= MAX_REPETITION => Ok(value),
        _ => Err(Fail::new(
            number.pos,
            format!(
                "repetition count {} exceeds the limit {MAX_REPETITION}",
                excerpt(number.text)
            ),
        )),
    }
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

// ---------------------------------------------------------------------------
// Checks on the parsed rules
// ---------------------------------------------------------------------------

/// The rules as llama.cpp will build them; ids `0..n` are its rules.
struct Grammar<'a> {
    src: &'a str,
    syms: Vec<Sym>,
    names: HashMap<&'a str, u32>,
    arena: Vec<Elem>,
    dead_sites: Vec<DeadSite>,
    n: usize,
    def_order: Vec<u32>,
    redefined: Vec<u32>,
    tokens: TokenUse,
}

/// Left edges: for each rule, the rules referenced at the start of its
/// alternatives (past rules that may match empty), with whether the
/// reference ends its alternative.
struct Graph {
    offsets: Vec<u32>,
    targets: Vec<u32>,
    tails: Vec<bool>,
}

impl Graph {
    fn edges(&self, node: usize) -> std::ops::Range<usize> {
        let start = self.offsets.get(node).copied().unwrap_or(0) as usize;
        let end = self.offsets.get(node + 1).copied().unwrap_or(0) as usize;
        start..end.max(start)
    }

    fn target(&self, edge: usize) -> usize {
        self.targets.get(edge).copied().unwrap_or(0) as usize
    }
}

/// What the left-recursion checks learn that later checks reuse.
struct LeftEdges {
    /// Rules that can match the empty string.
    nullable: Vec<bool>,
    /// Strongly connected component of each rule in the graph of left edges
    /// (numbered so that edges lead to equal or smaller numbers).
    component: Vec<u32>,
}

/// An item at the start of an alternative.
enum LeftItem {
    /// A character or token: one parse stack.
    Terminal,
    /// A rule reference; `tail` when it ends its alternative (llama.cpp
    /// then pushes nothing for the rest of the alternative).
    Ref { target: usize, tail: bool },
}

/// Parse-stack estimates per left-edge component, computed in order so that
/// the components a component starts with are done first.
struct Fanout<'g, 'a> {
    grammar: &'g Grammar<'a>,
    left: &'g LeftEdges,
    /// Rules of each component: `rules[starts[c]..starts[c + 1]]`.
    starts: Vec<usize>,
    rules: Vec<usize>,
    values: Vec<u64>,
    /// Per component: the last search that counted it.
    mark: Vec<u32>,
    searches: u32,
    /// Elements the exact counts may still look at.
    budget: u64,
    /// Reused buffer for the first items of a rule.
    items: Vec<LeftItem>,
}

impl<'g, 'a> Fanout<'g, 'a> {
    /// Elements the exact counts may look at in total.
    const BUDGET: u64 = 20_000_000;

    fn new(grammar: &'g Grammar<'a>, left: &'g LeftEdges) -> Self {
        let count = left
            .component
            .iter()
            .filter(|&&c| c != UNSET)
            .map(|&c| c as usize + 1)
            .max()
            .unwrap_or(0);
        let mut starts = vec![0usize; count + 1];
        for &comp in &left.component {
            if let Some(slot) = starts.get_mut(comp as usize + 1) {
                *slot += 1;
            }
        }
        for i in 1..starts.len() {
            let before = starts.get(i - 1).copied().unwrap_or(0);
            if let Some(slot) = starts.get_mut(i) {
                *slot += before;
            }
        }
        let mut fill = starts.clone();
        let mut rules = vec![0usize; left.component.len()];
        for (id, &comp) in left.component.iter().enumerate() {
            if let Some(next) = fill.get_mut(comp as usize) {
                if let Some(slot) = rules.get_mut(*next) {
                    *slot = id;
                }
                *next += 1;
            }
        }
        Fanout {
            grammar,
            left,
            starts,
            rules,
            values: vec![0; count],
            mark: vec![0; count],
            searches: 0,
            budget: Self::BUDGET,
            items: Vec::new(),
        }
    }

    /// The first items of rule `id`, in the reused buffer (give it back
    /// through `self.items`).
    fn first_items(&mut self, id: usize) -> Vec<LeftItem> {
        let mut items = std::mem::take(&mut self.items);
        items.clear();
        self.grammar
            .walk_left(id, &self.left.nullable, &mut |item| items.push(item));
        items
    }

    fn comp(&self, id: usize) -> usize {
        self.left.component.get(id).copied().unwrap_or(UNSET) as usize
    }

    fn value(&self, comp: usize) -> u64 {
        self.values.get(comp).copied().unwrap_or(0)
    }

    fn members(&self, comp: usize) -> &[usize] {
        let start = self.starts.get(comp).copied().unwrap_or(0);
        let end = self.starts.get(comp + 1).copied().unwrap_or(0);
        self.rules.get(start..end).unwrap_or_default()
    }

    /// A new search: components marked before count as unvisited.
    fn next_search(&mut self) -> u32 {
        self.searches = self.searches.wrapping_add(1).max(1);
        self.searches
    }

    /// Mark `comp` for search `search`; false when it already was.
    fn visit(&mut self, comp: usize, search: u32) -> bool {
        match self.mark.get_mut(comp) {
            Some(mark) if *mark != search => {
                *mark = search;
                true
            }
            _ => false,
        }
    }

    /// An upper bound: the component's own first items plus the estimates
    /// of the components it starts with (components reached at the end of
    /// alternatives counted once each, but not merged further down).
    fn upper(&mut self, comp: usize) -> u64 {
        let search = self.next_search();
        self.visit(comp, search);
        let mut total = 0u64;
        for i in 0..self.members(comp).len() {
            let id = self.members(comp).get(i).copied().unwrap_or(0);
            let items = self.first_items(id);
            for item in &items {
                total = total.saturating_add(self.item_stacks(item, search));
            }
            self.items = items;
        }
        total
    }

    /// Stacks one first item adds; a reference that ends its alternative
    /// adds nothing when its component was already counted in this search.
    fn item_stacks(&mut self, item: &LeftItem, search: u32) -> u64 {
        match *item {
            LeftItem::Terminal => 1,
            LeftItem::Ref { target, tail } => {
                let comp = self.comp(target);
                if tail && !self.visit(comp, search) {
                    0
                } else {
                    self.value(comp)
                }
            }
        }
    }

    /// The count with every component reached at the end of alternatives
    /// merged, as llama.cpp merges the stacks (the upper bound counts a
    /// component reached along two paths twice); stops above the limit or
    /// when the budget runs out (then `upper` stands).
    fn exact(&mut self, comp: usize, upper: u64) -> u64 {
        let search = self.next_search();
        self.visit(comp, search);
        let mut todo = vec![comp];
        let mut total = 0u64;
        while let Some(current) = todo.pop() {
            for i in 0..self.members(current).len() {
                let id = self.members(current).get(i).copied().unwrap_or(0);
                let items = self.first_items(id);
                self.budget = self
                    .budget
                    .saturating_sub(self.grammar.elems(id).len() as u64);
                for item in &items {
                    total = total.saturating_add(self.exact_item(item, search, &mut todo));
                }
                self.items = items;
                if total > MAX_PARSE_STACKS || self.budget == 0 {
                    return if total > MAX_PARSE_STACKS {
                        total
                    } else {
                        upper
                    };
                }
            }
        }
        total
    }

    fn exact_item(&mut self, item: &LeftItem, search: u32, todo: &mut Vec<usize>) -> u64 {
        match *item {
            LeftItem::Terminal => 1,
            LeftItem::Ref {
                target,
                tail: false,
            } => self.value(self.comp(target)),
            LeftItem::Ref { target, tail: true } => {
                let comp = self.comp(target);
                if self.visit(comp, search) {
                    todo.push(comp);
                }
                0
            }
        }
    }
}

/// How an element counts in a fixpoint over alternatives.
enum Item {
    /// Structure or a continuation of a character item.
    Skip,
    /// Always satisfied.
    Yes,
    /// Never satisfied.
    No,
    /// Satisfied when the rule is.
    Rule(u32),
}

impl<'a> Grammar<'a> {
    fn sym(&self, id: usize) -> Option<&Sym> {
        self.syms.get(id)
    }

    fn name(&self, id: usize) -> &'a str {
        self.sym(id)
            .and_then(|s| self.src.get(s.name_start as usize..s.name_end as usize))
            .unwrap_or_default()
    }

    fn pos(&self, id: usize) -> usize {
        self.sym(id).map_or(0, |s| s.pos as usize)
    }

    fn elems(&self, id: usize) -> &[Elem] {
        self.sym(id)
            .and_then(|s| self.arena.get(s.start as usize..s.end as usize))
            .unwrap_or_default()
    }

    /// Run the checks after parsing; returns the parse-stack estimate.
    fn validate(&self) -> Result<u64, Fail> {
        self.check_defined()?;
        let root = self.root()?;
        let reachable = self.reachable(root);
        let left = self.check_left_recursion(&reachable)?;
        self.check_productive(root, &reachable)?;
        self.check_stacks(root, &reachable, &left)
    }

    fn summary(&self, parse_stacks: u64) -> CheckedGrammar {
        let names = |ids: &[u32]| {
            ids.iter()
                .map(|&id| self.name(id as usize).to_owned())
                .collect()
        };
        CheckedGrammar {
            rule_names: names(&self.def_order),
            redefined: names(&self.redefined),
            llama_rules: self.n,
            elements: (0..self.n).map(|id| self.elems(id).len()).sum(),
            parse_stacks,
            tokens: self.tokens,
        }
    }

    // -- undefined rules and root -----------------------------------------------

    /// llama.cpp rejects a reference to an undefined rule from any rule it
    /// keeps, and an undefined symbol whose id is below its rule count.
    fn check_defined(&self) -> Result<(), Fail> {
        let mut fatal: Vec<bool> = self
            .syms
            .iter()
            .enumerate()
            .map(|(id, sym)| !sym.defined() && id < self.n)
            .collect();
        for id in 0..self.n {
            for elem in self.elems(id).iter().filter(|e| e.kind == Kind::Ref) {
                let target = elem.value as usize;
                if self.sym(target).is_some_and(|s| !s.defined()) {
                    if let Some(flag) = fatal.get_mut(target) {
                        *flag = true;
                    }
                }
            }
        }
        let first = (0..self.syms.len())
            .filter(|&id| fatal.get(id).copied().unwrap_or(false))
            .min_by_key(|&id| self.sym(id).map_or(UNSET, |s| s.first_ref));
        match first {
            Some(id) => Err(Fail::new(
                self.sym(id).map_or(0, |s| s.first_ref as usize),
                format!("undefined rule \"{}\"", self.name(id)),
            )),
            None => Ok(()),
        }
    }

    fn root(&self) -> Result<usize, Fail> {
        match self.names.get(ROOT) {
            Some(&id) if self.sym(id as usize).is_some_and(Sym::defined) => Ok(id as usize),
            _ => Err(Fail::new(0, "grammar has no \"root\" rule")),
        }
    }

    // -- left recursion ---------------------------------------------------------

    /// llama.cpp's own check (on every rule), then left recursion it misses
    /// and that would hang it (on rules it can reach), then its cost.
    fn check_left_recursion(&self, reachable: &[bool]) -> Result<LeftEdges, Fail> {
        let explicit_empty: Vec<bool> = (0..self.n)
            .map(|id| self.has_empty_alternative(id))
            .collect();
        let llama_edges = self.left_graph(&explicit_empty);
        if let Some(cycle) = find_cycle(&llama_edges, self.n) {
            return Err(self.left_recursion(&cycle));
        }
        let nullable = self.fixpoint(|elem| match elem.kind {
            Kind::Ref => Item::Rule(elem.value),
            Kind::Alt | Kind::End | Kind::CharAlt | Kind::RangeUpper => Item::Skip,
            _ => Item::No,
        });
        let graph = self.left_graph(&nullable);
        let component = strongly_connected(&graph, self.n);
        if let Some(cycle) = growing_cycle(&graph, &component, reachable) {
            return Err(self.left_recursion(&cycle));
        }
        self.check_llama_cost(&llama_edges)?;
        Ok(LeftEdges {
            nullable,
            component,
        })
    }

    /// llama.cpp's notion of "may be empty": an alternative with no element.
    fn has_empty_alternative(&self, id: usize) -> bool {
        let mut at_start = true;
        for elem in self.elems(id) {
            if elem.ends_alternative() {
                if at_start {
                    return true;
                }
                at_start = true;
            } else {
                at_start = false;
            }
        }
        false
    }

    /// References at the left edge of each rule, walking past references to
    /// rules marked in `passable`.
    fn left_graph(&self, passable: &[bool]) -> Graph {
        let mut graph = Graph {
            offsets: Vec::with_capacity(self.n + 1),
            targets: Vec::new(),
            tails: Vec::new(),
        };
        graph.offsets.push(0);
        for id in 0..self.n {
            let elems = self.elems(id);
            let mut active = true;
            for (i, elem) in elems.iter().enumerate() {
                match elem.kind {
                    // Every reference is below `n` once `check_defined` passed;
                    // the guard keeps the graph algorithms' indexing in range.
                    Kind::Ref if active && (elem.value as usize) < self.n => {
                        graph.targets.push(elem.value);
                        graph
                            .tails
                            .push(elems.get(i + 1).is_none_or(|e| e.ends_alternative()));
                        active = passable.get(elem.value as usize).copied().unwrap_or(false);
                    }
                    Kind::Alt | Kind::End => active = true,
                    _ => active = false,
                }
            }
            graph.offsets.push(to_u32(graph.targets.len()));
        }
        graph
    }

    fn origin(&self, id: usize) -> Option<Origin> {
        self.sym(id).map(|s| s.origin)
    }

    /// The error for a left-recursive cycle of rules, named after its
    /// earliest-defined named rule.
    fn left_recursion(&self, cycle: &[usize]) -> Fail {
        let named = (0..cycle.len())
            .filter(|&i| cycle.get(i).and_then(|&id| self.origin(id)) == Some(Origin::Named))
            .min_by_key(|&i| cycle.get(i).map_or(0, |&id| self.pos(id)));
        let Some(start) = named else {
            return self.empty_repetition(cycle);
        };
        let mut names: Vec<&str> = Vec::new();
        for i in 0..cycle.len() {
            let id = cycle.get((start + i) % cycle.len()).copied().unwrap_or(0);
            let name = self.name(id);
            if names.last() != Some(&name) {
                names.push(name);
            }
        }
        let first = cycle.get(start).copied().unwrap_or(0);
        let name = self.name(first);
        names.push(name);
        if names.len() > 2 && names.get(names.len() - 2) == Some(&name) {
            names.pop();
        }
        Fail::new(
            self.pos(first),
            format!("rule \"{name}\" is left-recursive ({})", cycle_text(&names)),
        )
    }

    /// A cycle without named rules: a repetition of something that may
    /// match the empty string (`x?*`, `("")+`).
    fn empty_repetition(&self, cycle: &[usize]) -> Fail {
        let id = cycle
            .iter()
            .copied()
            .find(|&id| self.origin(id) == Some(Origin::Repetition))
            .or_else(|| cycle.first().copied())
            .unwrap_or(0);
        Fail::new(
            self.pos(id),
            format!(
                "the repeated item can match the empty string, which makes rule \"{}\" \
                 left-recursive for llama.cpp",
                self.name(id)
            ),
        )
    }

    /// llama.cpp checks left recursion recursively and without memory: bound
    /// its depth and its total work.
    fn check_llama_cost(&self, edges: &Graph) -> Result<(), Fail> {
        let order = postorder(edges, self.n);
        let mut work = vec![0u64; self.n];
        let mut depth = vec![0u64; self.n];
        for &id in &order {
            let mut w = self.elems(id).len() as u64;
            let mut d = 0u64;
            for edge in edges.edges(id) {
                let target = edges.target(edge);
                w = w.saturating_add(work.get(target).copied().unwrap_or(0));
                d = d.max(depth.get(target).copied().unwrap_or(0));
            }
            if let (Some(wi), Some(di)) = (work.get_mut(id), depth.get_mut(id)) {
                *wi = w;
                *di = d + 1;
            }
        }
        if let Some((id, &deepest)) = depth.iter().enumerate().max_by_key(|&(_, d)| *d) {
            if deepest > MAX_LEFT_CHAIN {
                return Err(Fail::new(
                    self.pos(id),
                    format!(
                        "rule \"{}\" starts a chain of {deepest} rules that each begin with the \
                         next one; llama.cpp follows such chains recursively (limit {MAX_LEFT_CHAIN})",
                        self.name(id)
                    ),
                ));
            }
        }
        let total = outer_loop_work(edges, &work, self.n);
        if total > MAX_LEFT_RECURSION_WORK {
            return Err(Fail::new(
                0,
                format!(
                    "llama.cpp's left-recursion check would take about {total} steps on this \
                     grammar (limit {MAX_LEFT_RECURSION_WORK}); define rules top-down, starting \
                     with root, or avoid repeating optional rules"
                ),
            ));
        }
        Ok(())
    }

    // -- parse stacks -------------------------------------------------------------

    /// Estimate how many stacks llama.cpp builds at once: at the start
    /// (expanding `root`) and when it resumes at any position of a rule.
    fn check_stacks(&self, root: usize, reachable: &[bool], left: &LeftEdges) -> Result<u64, Fail> {
        let fanout = self.component_fanout(left);
        let of_rule = |id: usize| {
            let comp = left.component.get(id).copied().unwrap_or(UNSET) as usize;
            fanout.get(comp).copied().unwrap_or(0)
        };
        let mut worst = (of_rule(root), root);
        for id in (0..self.n).filter(|&id| reachable.get(id).copied().unwrap_or(false)) {
            let from_here = self.max_resume_fanout(id, &of_rule, &left.nullable);
            if from_here > worst.0 {
                worst = (from_here, id);
            }
        }
        let (count, id) = worst;
        if count <= MAX_PARSE_STACKS {
            return Ok(count);
        }
        Err(Fail::new(
            self.pos(id),
            format!(
                "rule \"{}\" makes llama.cpp track about {count} parse stacks at once \
                 (limit {MAX_PARSE_STACKS}); group alternatives by common prefix and avoid \
                 nesting optional items",
                self.name(id)
            ),
        ))
    }

    /// Visit the items the alternatives of rule `id` can start with (past
    /// references to rules that may match the empty string).
    fn walk_left(&self, id: usize, nullable: &[bool], visit: &mut dyn FnMut(LeftItem)) {
        let elems = self.elems(id);
        let mut active = true;
        for (i, elem) in elems.iter().enumerate() {
            match elem.kind {
                Kind::Alt | Kind::End => active = true,
                _ if !active => {}
                Kind::Ref => {
                    let target = elem.value as usize;
                    let tail = elems.get(i + 1).is_none_or(|e| e.ends_alternative());
                    visit(LeftItem::Ref { target, tail });
                    active = nullable.get(target).copied().unwrap_or(false);
                }
                _ => {
                    visit(LeftItem::Terminal);
                    active = false;
                }
            }
        }
    }

    /// Stacks created by expanding any rule of each component, with the
    /// stack below fixed. Rules of one component reach each other through
    /// references that end their alternative, so they share that stack and
    /// llama.cpp merges their duplicates.
    fn component_fanout(&self, left: &LeftEdges) -> Vec<u64> {
        let mut fanout = Fanout::new(self, left);
        for comp in 0..fanout.values.len() {
            let upper = fanout.upper(comp);
            let value = if upper > 1 {
                fanout.exact(comp, upper)
            } else {
                upper
            };
            if let Some(slot) = fanout.values.get_mut(comp) {
                *slot = value;
            }
        }
        fanout.values
    }

    /// The largest number of stacks created when llama.cpp resumes inside
    /// rule `id` (after a character, or after a rule it references ends).
    fn max_resume_fanout(
        &self,
        id: usize,
        of_rule: &dyn Fn(usize) -> u64,
        nullable: &[bool],
    ) -> u64 {
        let mut best = 0u64;
        let mut from_here = 0u64;
        for elem in self.elems(id).iter().rev() {
            from_here = match elem.kind {
                Kind::Alt | Kind::End => 0,
                Kind::CharAlt | Kind::RangeUpper => from_here,
                Kind::Ref => {
                    let target = elem.value as usize;
                    let rest = if nullable.get(target).copied().unwrap_or(false) {
                        from_here
                    } else {
                        0
                    };
                    of_rule(target).saturating_add(rest)
                }
                _ => 1,
            };
            best = best.max(from_here);
        }
        best
    }

    // -- rules that match nothing -----------------------------------------------

    fn check_productive(&self, root: usize, reachable: &[bool]) -> Result<(), Fail> {
        let productive = self.fixpoint(|elem| match elem.kind {
            Kind::Ref => Item::Rule(elem.value),
            Kind::Alt | Kind::End | Kind::CharAlt | Kind::RangeUpper => Item::Skip,
            Kind::Dead => Item::No,
            _ => Item::Yes,
        });
        let is_productive = |id: usize| productive.get(id).copied().unwrap_or(false);
        if !is_productive(root) {
            return Err(Fail::new(self.pos(root), "rule \"root\" matches nothing"));
        }
        let is_reachable = |id: usize| reachable.get(id).copied().unwrap_or(false);
        let barren = self
            .def_order
            .iter()
            .map(|&id| id as usize)
            .find(|&id| is_reachable(id) && !is_productive(id));
        if let Some(id) = barren {
            return Err(Fail::new(
                self.pos(id),
                format!("rule \"{}\" matches nothing", self.name(id)),
            ));
        }
        self.check_dead_chars(reachable)
    }

    fn check_dead_chars(&self, reachable: &[bool]) -> Result<(), Fail> {
        let site = (0..self.n)
            .filter(|&id| reachable.get(id).copied().unwrap_or(false))
            .flat_map(|id| self.elems(id).iter())
            .filter(|elem| elem.kind == Kind::Dead)
            .filter_map(|elem| self.dead_sites.get(elem.value as usize))
            .min_by_key(|site| site.pos);
        match site {
            Some(site) if site.is_class => Err(Fail::new(
                site.pos,
                "character class matches no character a model can generate, so the sampler \
                 would get stuck here",
            )),
            Some(site) => Err(Fail::new(
                site.pos,
                "\"\\x00\" can never be generated (token text cannot contain NUL), so the \
                 sampler would get stuck here",
            )),
            None => Ok(()),
        }
    }

    fn reachable(&self, root: usize) -> Vec<bool> {
        let mut seen = vec![false; self.n];
        let mut todo = vec![root];
        if let Some(flag) = seen.get_mut(root) {
            *flag = true;
        }
        while let Some(id) = todo.pop() {
            for elem in self.elems(id).iter().filter(|e| e.kind == Kind::Ref) {
                if let Some(flag) = seen.get_mut(elem.value as usize) {
                    if !*flag {
                        *flag = true;
                        todo.push(elem.value as usize);
                    }
                }
            }
        }
        seen
    }

    /// Least fixpoint "some alternative has all its items satisfied", where
    /// `item` says how each element counts. Linear in the grammar size.
    fn fixpoint(&self, item: impl Fn(Elem) -> Item) -> Vec<bool> {
        let mut alt_rule: Vec<u32> = Vec::new();
        let mut pending: Vec<u32> = Vec::new();
        let mut uses: Vec<(u32, u32)> = Vec::new();
        for id in 0..self.n {
            let mut open = false;
            for &elem in self.elems(id) {
                if !open {
                    alt_rule.push(to_u32(id));
                    pending.push(0);
                    open = true;
                }
                let alt = alt_rule.len() - 1;
                let Some(count) = pending.get_mut(alt) else {
                    continue;
                };
                match item(elem) {
                    Item::Rule(target) => {
                        *count = count.saturating_add(1);
                        uses.push((target, to_u32(alt)));
                    }
                    Item::No => *count = UNSET,
                    Item::Skip | Item::Yes => {}
                }
                if elem.ends_alternative() {
                    open = false;
                }
            }
        }
        solve_fixpoint(self.n, &alt_rule, pending, &uses)
    }
}

/// Mark `rule` satisfied and queue it, once.
fn satisfy(rule: u32, done: &mut [bool], todo: &mut Vec<usize>) {
    if let Some(flag) = done.get_mut(rule as usize) {
        if !*flag {
            *flag = true;
            todo.push(rule as usize);
        }
    }
}

/// A cycle of names joined by arrows, elided in the middle when long.
fn cycle_text(names: &[&str]) -> String {
    const KEEP: usize = 8;
    if names.len() <= KEEP {
        return names.join(" -> ");
    }
    let head = names.get(..KEEP - 2).unwrap_or_default().join(" -> ");
    let tail = names
        .get(names.len() - 2..)
        .unwrap_or_default()
        .join(" -> ");
    format!("{head} -> ... {} more ... -> {tail}", names.len() - KEEP)
}

/// Propagate satisfied rules through the alternatives that use them.
fn solve_fixpoint(
    n: usize,
    alt_rule: &[u32],
    mut pending: Vec<u32>,
    uses: &[(u32, u32)],
) -> Vec<bool> {
    // Alternatives grouped by the rule they use (a counting sort).
    let mut first_use = vec![0usize; n + 1];
    for &(target, _) in uses {
        if let Some(slot) = first_use.get_mut(target as usize + 1) {
            *slot += 1;
        }
    }
    for i in 1..first_use.len() {
        let before = first_use.get(i - 1).copied().unwrap_or(0);
        if let Some(slot) = first_use.get_mut(i) {
            *slot += before;
        }
    }
    let mut fill = first_use.clone();
    let mut users = vec![0u32; uses.len()];
    for &(target, alt) in uses {
        if let Some(next) = fill.get_mut(target as usize) {
            if let Some(slot) = users.get_mut(*next) {
                *slot = alt;
            }
            *next += 1;
        }
    }
    let mut done = vec![false; n];
    let mut todo: Vec<usize> = Vec::new();
    for (alt, &count) in pending.iter().enumerate() {
        if count == 0 {
            satisfy(
                alt_rule.get(alt).copied().unwrap_or(UNSET),
                &mut done,
                &mut todo,
            );
        }
    }
    while let Some(rule) = todo.pop() {
        let start = first_use.get(rule).copied().unwrap_or(0);
        let end = first_use.get(rule + 1).copied().unwrap_or(0);
        for &alt in users.get(start..end).unwrap_or_default() {
            let Some(count) = pending.get_mut(alt as usize) else {
                continue;
            };
            if *count == UNSET || *count == 0 {
                continue;
            }
            *count -= 1;
            if *count == 0 {
                satisfy(
                    alt_rule.get(alt as usize).copied().unwrap_or(UNSET),
                    &mut done,
                    &mut todo,
                );
            }
        }
    }
    done
}

// ---------------------------------------------------------------------------
// Graph algorithms (all iterative)
// ---------------------------------------------------------------------------

/// Any cycle, as the list of its nodes.
fn find_cycle(graph: &Graph, n: usize) -> Option<Vec<usize>> {
    const WHITE: u8 = 0;
    const GRAY: u8 = 1;
    const BLACK: u8 = 2;
    let mut color = vec![WHITE; n];
    let mut stack: Vec<(usize, usize)> = Vec::new();
    for start in 0..n {
        if color.get(start) != Some(&WHITE) {
            continue;
        }
        color[start] = GRAY;
        stack.push((start, graph.edges(start).start));
        while let Some(&mut (node, ref mut next)) = stack.last_mut() {
            if *next >= graph.edges(node).end {
                color[node] = BLACK;
                stack.pop();
                continue;
            }
            let target = graph.target(*next);
            *next += 1;
            match color.get(target).copied() {
                Some(WHITE) => {
                    color[target] = GRAY;
                    stack.push((target, graph.edges(target).start));
                }
                Some(GRAY) => {
                    let from = stack.iter().rposition(|&(id, _)| id == target).unwrap_or(0);
                    return Some(
                        stack
                            .get(from..)
                            .unwrap_or_default()
                            .iter()
                            .map(|&(id, _)| id)
                            .collect(),
                    );
                }
                _ => {}
            }
        }
    }
    None
}

/// A cycle through an edge whose reference does not end its alternative: in
/// llama.cpp's stack machine each turn of such a cycle pushes the rest of
/// the alternative, so the stack grows without end. (Cycles made only of
/// alternative-ending references revisit the same stack and terminate.)
fn growing_cycle(graph: &Graph, component: &[u32], reachable: &[bool]) -> Option<Vec<usize>> {
    let comp = |id: usize| component.get(id).copied().unwrap_or(UNSET);
    let n = component.len();
    for node in (0..n).filter(|&id| reachable.get(id).copied().unwrap_or(false)) {
        for edge in graph.edges(node) {
            let target = graph.target(edge);
            let tail = graph.tails.get(edge).copied().unwrap_or(true);
            if !tail && comp(node) == comp(target) {
                return Some(path_within(graph, target, node, component));
            }
        }
    }
    None
}

/// Nodes on a shortest path from `from` to `to` staying inside their
/// component, starting with `to` (so that `to -> from -> ... -> to` is the
/// cycle).
fn path_within(graph: &Graph, from: usize, to: usize, component: &[u32]) -> Vec<usize> {
    if from == to {
        return vec![to];
    }
    let comp = component.get(from).copied();
    let mut parent = vec![UNSET; component.len()];
    let mut queue = std::collections::VecDeque::from([from]);
    if let Some(p) = parent.get_mut(from) {
        *p = to_u32(from);
    }
    while let Some(node) = queue.pop_front() {
        if node == to {
            break;
        }
        for edge in graph.edges(node) {
            let target = graph.target(edge);
            if component.get(target).copied() != comp {
                continue;
            }
            if let Some(p) = parent.get_mut(target) {
                if *p == UNSET {
                    *p = to_u32(node);
                    queue.push_back(target);
                }
            }
        }
    }
    let mut path = Vec::new();
    let mut node = to;
    while node != from && path.len() <= component.len() {
        path.push(node);
        node = parent.get(node).copied().unwrap_or(UNSET) as usize;
    }
    path.push(from);
    path.reverse();
    path.rotate_right(1);
    path
}

/// Tarjan's strongly connected components, iteratively. Returns each node's
/// component number.
fn strongly_connected(graph: &Graph, n: usize) -> Vec<u32> {
    let mut index = vec![UNSET; n];
    let mut low = vec![0u32; n];
    let mut on_stack = vec![false; n];
    let mut component = vec![UNSET; n];
    let mut stack: Vec<usize> = Vec::new();
    let mut calls: Vec<(usize, usize)> = Vec::new();
    let mut counter = 0u32;
    let mut components = 0u32;
    for root in 0..n {
        if index[root] != UNSET {
            continue;
        }
        index[root] = counter;
        low[root] = counter;
        counter += 1;
        stack.push(root);
        on_stack[root] = true;
        calls.push((root, graph.edges(root).start));
        while let Some(&mut (node, ref mut next)) = calls.last_mut() {
            if *next < graph.edges(node).end {
                let target = graph.target(*next);
                *next += 1;
                if index[target] == UNSET {
                    index[target] = counter;
                    low[target] = counter;
                    counter += 1;
                    stack.push(target);
                    on_stack[target] = true;
                    calls.push((target, graph.edges(target).start));
                } else if on_stack[target] {
                    low[node] = low[node].min(index[target]);
                }
                continue;
            }
            calls.pop();
            if let Some(&(parent, _)) = calls.last() {
                low[parent] = low[parent].min(low[node]);
            }
            if low[node] == index[node] {
                while let Some(member) = stack.pop() {
                    on_stack[member] = false;
                    component[member] = components;
                    if member == node {
                        break;
                    }
                }
                components += 1;
            }
        }
    }
    component
}

/// Nodes of an acyclic graph, each after all its successors.
fn postorder(graph: &Graph, n: usize) -> Vec<usize> {
    let mut seen = vec![false; n];
    let mut order = Vec::with_capacity(n);
    let mut stack: Vec<(usize, usize)> = Vec::new();
    for start in 0..n {
        if seen[start] {
            continue;
        }
        seen[start] = true;
        stack.push((start, graph.edges(start).start));
        while let Some(&mut (node, ref mut next)) = stack.last_mut() {
            if *next < graph.edges(node).end {
                let target = graph.target(*next);
                *next += 1;
                if let Some(flag) = seen.get_mut(target) {
                    if !*flag {
                        *flag = true;
                        stack.push((target, graph.edges(target).start));
                    }
                }
            } else {
                order.push(node);
                stack.pop();
            }
        }
    }
    order
}

/// llama.cpp runs its (memoryless) check from every rule not yet visited, in
/// id order; a run visits everything reachable from its start.
fn outer_loop_work(graph: &Graph, work: &[u64], n: usize) -> u64 {
    let mut visited = vec![false; n];
    let mut total = 0u64;
    let mut todo: Vec<usize> = Vec::new();
    for start in 0..n {
        if visited[start] {
            continue;
        }
        total = total.saturating_add(work.get(start).copied().unwrap_or(0));
        visited[start] = true;
        todo.push(start);
        while let Some(node) = todo.pop() {
            for edge in graph.edges(node) {
                let target = graph.target(edge);
                if let Some(flag) = visited.get_mut(target) {
                    if !*flag {
                        *flag = true;
                        todo.push(target);
                    }
                }
            }
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    /// llama.cpp's `grammars/json.gbnf` (current version).
    const JSON: &str = r#"root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws

object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws

array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws

string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4}) # escapes
  )* "\"" ws

number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws

# Optional space: by convention, applied in this grammar after literal chars when allowed
ws ::= | " " | "\n" [ \t]{0,20}
"#;

    /// An older `json.gbnf` (recursive `ws`, `\U0010FFFF` range).
    const JSON_OLD: &str = r#"# Grammar for subset of JSON - doesn't support full string or number syntax

root  ::= object
value ::= object | array | string | number | boolean

object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}"

array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]"

string  ::=
  "\"" (
    [\x20\x21\x23-\x5b\x5d-\U0010FFFF] | # any code point except " (\x22) and \ (\x5c)
    "\\" (["\\/bfnrt] | "u" [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F]) # escapes
  )* "\""

# Only plain integers currently
number  ::= "-"? [0-9]+ ws
boolean ::= ("true" | "false") ws

# Optional space: by convention, applied in this grammar after literal chars when allowed
ws ::= ([ \t\n] ws)?
"#;

    /// llama.cpp's `grammars/arithmetic.gbnf`.
    const ARITHMETIC: &str = r#"root  ::= (expr "=" ws term "\n")+
expr  ::= term ([-+*/] term)*
term  ::= ident | num | "(" ws expr ")" ws
ident ::= [a-z] [a-z0-9_]* ws
num   ::= [0-9]+ ws
ws    ::= [ \t\n]*
"#;

    const VALID: &[(&str, &str)] = &[
        ("json", JSON),
        ("json, older version", JSON_OLD),
        ("arithmetic", ARITHMETIC),
        ("no trailing newline", "root ::= \"a\""),
        ("crlf line ends", "root ::= a\r\na ::= \"x\" | \"y\"\r\n"),
        ("lone cr line ends", "root ::= a\ra ::= \"x\"\r"),
        (
            "comments",
            "# header\n\nroot ::= a # trailing\n# between\n   # indented\na ::= \"x\" # end",
        ),
        (
            "comment before ::= continuation",
            "root ::= # nothing yet\n  \"a\"",
        ),
        (
            "escapes",
            r#"root ::= "\x41\u00e9\U0001F600\t\n\r\"\\\[\]\-" [\x01-\x1F\[\]\-\\^] [\u0100-\U0010FFFF]"#,
        ),
        ("unicode", "root ::= \"héllo 世界 🎉\" [α-ω]+ [^é]"),
        ("raw newline inside a literal", "root ::= \"a\nb\""),
        (
            "repetitions",
            r#"root ::= "a"{3} "b"{2,} "c"{0,5} "d"{1,2} ("e" "f"){2,3} "g"*? [0-9]{0,2000} "h"{ 1 , 2 }"#,
        ),
        (
            "stacked repetition",
            "root ::= (\"a\"{2}){3} \"b\"*? \"c\"+? \"d\"{2}* \"e\"{0,3}{2}",
        ),
        ("empty alternative at the end", "root ::= a\na ::= \"x\" | "),
        ("empty alternative first", "root ::= | \"x\""),
        ("empty alternative in a group", "root ::= (\"x\" | ) \"y\""),
        ("empty rule at end of text", "root ::= a \"b\"\na ::="),
        (
            "alternatives continued after |",
            "root ::= \"a\" |\n  \"b\" |\n\n  \"c\"",
        ),
        (
            "groups span lines",
            "root ::= (\n  \"a\"\n  \"b\"\n |\n \"c\"\n)",
        ),
        ("any character", "root ::= . .* \"end\""),
        (
            "empty literal and empty class",
            "root ::= \"\" [] [^] \"a\"",
        ),
        (
            "class edge cases",
            "root ::= [a-] [-a] [--z] [\\]] [^^] [\\-]",
        ),
        (
            "names with digits and dashes",
            "root ::= 1st-rule\n1st-rule ::= \"x\"",
        ),
        (
            "tokens",
            "root ::= <[123]> !<[5]> <|im_end|> !<think> <[4294967295]>",
        ),
        ("right recursion", "root ::= \"x\" root | \"y\""),
        (
            "redefinition keeps the last",
            "root ::= \"a\"\nroot ::= \"b\"",
        ),
        (
            "nullable loop in tail position",
            "root ::= (line \"\\n\"?)*\nline ::= [a-z]*",
        ),
        ("optional inside star", "root ::= (\"a\"?)*"),
        (
            "indirectly empty rule before a tail self-reference",
            "root ::= b root | \"y\"\nb ::= c\nc ::= \"\" | \"z\"",
        ),
        (
            "unused unproductive rule",
            "root ::= \"a\"\nloop ::= \"b\" loop",
        ),
        (
            "unused empty class",
            "root ::= \"a\"\nnever ::= [^\\x00-\\U0010FFFF]",
        ),
        ("class containing NUL and more", "root ::= [\\x00-\\x1F]"),
        (
            "undefined rule only in an overwritten body (llama.cpp ignores it)",
            "root ::= foo\nroot ::= \"a\"",
        ),
        (
            "undefined rule dropped by {0} (llama.cpp ignores it)",
            "root ::= foo{0} \"a\"",
        ),
        (
            "repeated group of rules defined earlier",
            "a ::= \"x\"\nb ::= \"y\"\nc ::= \"z\"\nroot ::= (a b c){1000}",
        ),
        (
            "unreachable hidden left recursion",
            "root ::= \"a\"\na ::= b a \"x\" | \"y\"\nb ::= c\nc ::= \"\" | \"z\"",
        ),
        (
            "bottom-up definitions",
            "digit ::= [0-9]\nnumber ::= digit+\nvalue ::= number | \"x\"\nroot ::= value",
        ),
    ];

    fn nested(depth: usize) -> String {
        format!("root ::= {}\"a\"{}", "(".repeat(depth), ")".repeat(depth))
    }

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

    /// (name, grammar, line, column, message)
    const INVALID: &[(&str, &str, usize, usize, &str)] = &[
        ("empty", "", 1, 1, "grammar is empty"),
        ("only comments", "# nothing\n  \n", 1, 1, "grammar is empty"),
        (
            "missing ::=",
            "root ::= \"a\"\n\nfoo  \"b\"",
            3,
            6,
            "expecting \"::=\" after rule name \"foo\"",
        ),
        (
            "underscore in a rule name",
            "my_rule ::= \"a\"",
            1,
            3,
            "expecting \"::=\" after rule name \"my\" (rule names may contain only ASCII letters, digits and \"-\")",
        ),
        (
            "underscore in a reference",
            "root ::= my_rule",
            1,
            12,
            "unexpected \"_\" (rule names may contain only ASCII letters, digits and \"-\")",
        ),
        ("no root", "rot ::= \"a\"", 1, 1, "grammar has no \"root\" rule"),
        (
            "root only referenced (llama.cpp crashes)",
            "a ::= root\na ::= \"x\"",
            1,
            1,
            "grammar has no \"root\" rule",
        ),
        ("undefined rule", "root ::= list\nlist ::= item (\",\" item)*", 2, 10, "undefined rule \"item\""),
        (
            "undefined rule in an overwritten body with later rules",
            "root ::= foo\nroot ::= \"a\"\nbar ::= \"b\"",
            1,
            10,
            "undefined rule \"foo\"",
        ),
        ("inverted range", "root ::= [a-zA-Z] [0-9z-a]", 1, 23, "character range is inverted: \"z\" > \"a\""),
        (
            "inverted escaped range",
            "root ::= [\\x7F-\\x00]",
            1,
            11,
            "character range is inverted: \"\\x7F\" > \"\\x00\"",
        ),
        ("unterminated literal", "root ::= \"abc", 1, 10, "unterminated string literal"),
        ("literal spanning lines", "root ::= x \"abc\nx ::= \"y\"", 2, 9, "unterminated string literal"),
        ("unterminated literal after backslash", "root ::= \"abc\\", 1, 10, "unterminated string literal"),
        ("unterminated class", "root ::= [abc", 1, 10, "unterminated character class"),
        ("unterminated range", "root ::= [a-", 1, 10, "unterminated character class"),
        (
            "left recursion",
            "root ::= expr\n# terms\nterm ::= \"x\" | expr \"*\"\nexpr ::= term \"+\" | \"1\"",
            3,
            1,
            "rule \"term\" is left-recursive (term -> expr -> term)",
        ),
        ("direct left recursion", "root ::= \"a\" | root \"a\"", 1, 1, "rule \"root\" is left-recursive (root -> root)"),
        (
            "left recursion through an optional item",
            "root ::= a\na ::= b? a \"x\" | \"y\"\nb ::= \"b\"",
            2,
            1,
            "rule \"a\" is left-recursive (a -> a)",
        ),
        (
            "left recursion through a rule with an empty alternative",
            "root ::= asdf\nasdf ::= \"a\" | foo \"b\"\nfoo ::= \"c\" | empty asdf \"d\" | \"e\"\nempty ::= \"blah\" | ",
            2,
            1,
            "rule \"asdf\" is left-recursive (asdf -> foo -> asdf)",
        ),
        (
            "left recursion through an indirectly empty rule (llama.cpp hangs)",
            "root ::= a\na ::= b a \"x\" | \"y\"\nb ::= c\nc ::= \"\" | \"z\"",
            2,
            1,
            "rule \"a\" is left-recursive (a -> a)",
        ),
        (
            "repetition of an empty group",
            "root ::= (\"\")*",
            1,
            14,
            "the repeated item can match the empty string, which makes rule \"root\" left-recursive for llama.cpp",
        ),
        (
            "star of an optional item",
            "root ::= \"a\" \"c\"?*",
            1,
            18,
            "the repeated item can match the empty string, which makes rule \"root\" left-recursive for llama.cpp",
        ),
        (
            "plus of a star",
            "root ::= x\nx ::= \"b\"*+",
            2,
            11,
            "the repeated item can match the empty string, which makes rule \"x\" left-recursive for llama.cpp",
        ),
        (
            "repetition count too large",
            "root ::= \"a\"{5000000000}",
            1,
            14,
            "repetition count 5000000000 exceeds the limit 2000",
        ),
        (
            "repetition count overflows 64 bits",
            "root ::= \"a\"{99999999999999999999}",
            1,
            14,
            "repetition count 99999999999999999999 exceeds the limit 2000",
        ),
        ("repetition maximum too large", "root ::= \"a\"{0,2001}", 1, 16, "repetition count 2001 exceeds the limit 2000"),
        (
            "inverted repetition",
            "root ::= \"a\"{3,2}",
            1,
            13,
            "repetition range is inverted: minimum 3 > maximum 2",
        ),
        (
            "nested repetition too large",
            "root ::= \"a\"{50}{50}",
            1,
            17,
            "nested repetition is too large: llama.cpp would copy 2500 rules (limit 2000)",
        ),
        (
            "repeated group naming new rules",
            "root ::= (a b c){1000}\na ::= \"x\"\nb ::= \"y\"\nc ::= \"z\"",
            1,
            17,
            "nested repetition is too large: llama.cpp would copy 4000 rules (limit 2000); rules first named inside the repeated group count too, so defining them before this rule may help",
        ),
        ("nothing to repeat", "root ::= *\"a\"", 1, 10, "\"*\" has nothing to repeat"),
        ("repeating an empty literal", "root ::= \"\"+", 1, 12, "\"+\" has nothing to repeat"),
        ("repeating a removed item", "root ::= \"a\"{0}?", 1, 16, "\"?\" has nothing to repeat"),
        ("repetition after |", "root ::= \"a\" | {2}", 1, 16, "\"{\" has nothing to repeat"),
        ("brace without number", "root ::= \"a\"{x}", 1, 14, "expected a number after \"{\", found \"x\""),
        ("brace bad separator", "root ::= \"a\"{1;}", 1, 15, "expected \",\" or \"}\" in repetition, found \";\""),
        ("brace unclosed", "root ::= \"a\"{1,2", 1, 17, "expected \"}\" to close the repetition, found end of input"),
        ("unknown escape", "root ::= \"a\\qb\"", 1, 12, "unknown escape \"\\q\""),
        ("short hex escape", "root ::= [\\x4]", 1, 11, "expected 2 hex digits after \"\\x\""),
        ("surrogate escape", "root ::= \"\\uD800\"", 1, 11, "escape \"\\uD800\" is a UTF-16 surrogate, not a character"),
        (
            "escape above U+10FFFF",
            "root ::= \"\\U00110000\"",
            1,
            11,
            "escape \"\\U00110000\" is above U+10FFFF, the last Unicode code point",
        ),
        ("root matches nothing", "root ::= a\na ::= \"x\" a", 1, 1, "rule \"root\" matches nothing"),
        ("root is an empty class", "root ::= [^\\x00-\\U0010FFFF]", 1, 1, "rule \"root\" matches nothing"),
        ("reachable rule matches nothing", "root ::= \"a\" | \"b\" x\nx ::= \"c\" x", 2, 1, "rule \"x\" matches nothing"),
        (
            "reachable empty class",
            "root ::= \"a\" | \"b\" [^\\x01-\\U0010FFFF]",
            1,
            20,
            "character class matches no character a model can generate, so the sampler would get stuck here",
        ),
        (
            "reachable NUL literal",
            "root ::= \"a\" | \"b\\x00\"",
            1,
            18,
            "\"\\x00\" can never be generated (token text cannot contain NUL), so the sampler would get stuck here",
        ),
        ("NUL character", "root ::= \"a\0\"", 1, 12, "grammar contains a NUL character"),
        ("unclosed group", "root ::= (\"a\" | \"b\"", 1, 10, "unclosed \"(\""),
        (
            "unexpected character in a group",
            "root ::=\n (\"a\" ]",
            2,
            7,
            "unexpected \"]\" inside the group opened at line 2, column 2; expected \")\"",
        ),
        ("unmatched )", "root ::= \"a\")", 1, 13, "unexpected \")\" without a matching \"(\""),
        ("single quotes", "root ::= 'a'", 1, 10, "unexpected \"'\""),
        (
            "trailing | before the next rule",
            "root ::= \"a\" |\nb ::= \"c\"",
            2,
            3,
            "unexpected \"::=\": each rule must start on a new line (does the previous line end with \"|\" or \"::=\"?)",
        ),
        ("| starting a line", "root ::= \"a\"\n  | \"b\"", 2, 3, "expected a rule name, found \"|\""),
        ("rule name missing", "::= \"a\"", 1, 1, "expected a rule name, found \":\""),
        ("token id missing", "root ::= <[abc]>", 1, 12, "expected a token id after \"<[\", found \"a\""),
        ("token id too large", "root ::= <[4294967296]>", 1, 12, "token id 4294967296 is too large"),
        ("token id unclosed", "root ::= <[12>", 1, 14, "expected \"]\" after the token id, found \">\""),
        ("token without <", "root ::= !x", 1, 11, "expected \"<\" after \"!\", found \"x\""),
        ("unterminated token", "root ::= <abc", 1, 10, "unterminated token: expected \">\""),

    ];

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
    fn timed(name: &str, text: &str) -> Result<CheckedGrammar, GrammarError> {
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

    fn expect_message(result: Result<CheckedGrammar, GrammarError>, needle: &str) {
        match result {
            Ok(_) => panic!("accepted, expected an error containing {needle:?}"),
            Err(err) => assert!(err.message.contains(needle), "{err}"),
        }
    }

    const NEAR_LIMIT: usize = MAX_GRAMMAR_BYTES - 64;

    #[test]
    fn hostile_one_megabyte_literal() {
        let text = format!("root ::= \"{}\"", "ab".repeat(NEAR_LIMIT / 2));
        assert!(timed("1 MB literal", &text).is_ok());
    }

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

    /// A three-character rule name for `i < 62^3`.
    fn short(i: usize) -> String {
        const DIGITS: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
        [i / 3844, i / 62 % 62, i % 62]
            .iter()
            .map(|&d| char::from(DIGITS[d % 62]))
            .collect()
    }

    /// A grammar of `n` rules, rule `i` given by `rule(i)`, root first.
    fn chain(n: usize, rule: impl Fn(&str, &str) -> String) -> String {
        let mut text = format!("root::={}\n", short(0));
        for i in 0..n {
            text.push_str(&rule(&short(i), &short(i + 1)));
        }
        text
    }

    #[test]
    fn hostile_many_alternatives() {
        let alts: Vec<String> = (0..100_000).map(|i| format!("\"{i}\"")).collect();
        let text = format!("root ::= {}", alts.join(" | "));
        expect_message(
            timed("100k alternatives", &text),
            "rule \"root\" makes llama.cpp track about 100000 parse stacks at once (limit 10000)",
        );
        let text = format!("root ::= \"<\" (\"x\" | {})", alts.join(" | "));
        expect_message(
            timed("100k alternatives after a character", &text),
            "100001 parse stacks",
        );
        let alts: Vec<String> = (0..10_000).map(|i| format!("\"{i}\"")).collect();
        let text = format!("root ::= {}", alts.join(" | "));
        assert!(timed("10k alternatives", &text).is_ok());
        let alts: Vec<String> = (0..100_000).map(|i| short(i % 20_000)).collect();
        let mut text = format!("root::={}\n", alts.join("|"));
        for i in 0..10_000 {
            text.push_str(&format!("{}::=.\n", short(i)));
        }
        for i in 10_000..20_000 {
            text.push_str(&format!("{}::=\"\"\n", short(i)));
        }
        let result = timed("100k alternatives of rules", &text);
        assert!(result.is_ok(), "{result:?}");
    }

    #[test]
    fn hostile_long_chains() {
        let n = 90_000;
        let text = chain(n, |a, b| format!("{a}::=.{b}\n")) + &format!("{}::=.", short(n));
        assert!(timed("90k-rule right chain", &text).is_ok());

        let n = 100_000;
        let text = chain(n, |a, b| format!("{a}::={b}\n")) + &format!("{}::=.", short(n));
        expect_message(
            timed("100k-rule left chain", &text),
            "starts a chain of 100002 rules",
        );

        let text =
            chain(n, |a, b| format!("{a}::={b}\n")) + &format!("{}::={}", short(n), short(0));
        expect_message(
            timed("100k-rule left cycle", &text),
            "is left-recursive (aaa -> aab -> aac -> aad -> aae -> aaf -> ... 99994 more ... -> Aa4 -> aaa)",
        );

        let mut text = format!("{}::=.\n", short(n));
        for i in (0..n).rev() {
            text.push_str(&format!("{}::={}\n", short(i), short(i + 1)));
        }
        text.push_str(&format!("root::={}", short(0)));
        expect_message(
            timed("100k-rule left chain, bottom-up", &text),
            "starts a chain",
        );

        let n = 20_000;
        let text = chain(n, |a, b| {
            format!("{a}::=c{a} {b} \"x\"|.\nc{a}::=d{a}\nd{a}::=|.\n")
        }) + &format!("{}::={}", short(n), short(0));
        expect_message(
            timed("20k-level hidden left cycle", &text),
            "is left-recursive",
        );
    }

    #[test]
    fn hostile_left_recursion_check_cost() {
        // Each level starts with two copies of the next, which may be empty:
        // llama.cpp's check takes 2^depth steps.
        let mut text = String::from("root ::= n0\n");
        for i in 0..40 {
            text.push_str(&format!("n{i} ::= | n{} n{}\n", i + 1, i + 1));
        }
        text.push_str("n40 ::= \"x\"\n");
        expect_message(
            timed("exponential left-recursion check", &text),
            "left-recursion check would take",
        );
        // A bottom-up chain: llama.cpp restarts its check at every rule.
        let n = 4_900;
        let mut text = String::from("r0 ::= \"y\" \"y\" \"y\" \"y\" \"y\" \"y\" \"y\" \"y\"\n");
        for i in 1..n {
            text.push_str(&format!(
                "r{i} ::= r{} \"x\" \"x\" \"x\" \"x\" \"x\" \"x\" \"x\" \"x\" \"x\" \"x\"\n",
                i - 1
            ));
        }
        text.push_str(&format!("root ::= r{}\n", n - 1));
        expect_message(
            timed("quadratic left-recursion check", &text),
            "left-recursion check would take",
        );
    }

    #[test]
    fn parse_stack_estimates() {
        // Each level starts with two optional copies of the next: 2^levels
        // stacks (llama.cpp builds 8193 for 13 levels, 16385 for 14).
        let levels = |n: usize| {
            let mut text = String::from("root ::= n0\n");
            for i in 0..n {
                text.push_str(&format!(
                    "n{i} ::= a{i} a{i}\na{i} ::= b{i}\nb{i} ::= | n{}\n",
                    i + 1
                ));
            }
            text + &format!("n{n} ::= \"x\"\n")
        };
        assert_eq!(check(&levels(13)).map(|g| g.parse_stacks()), Ok(8192));
        expect_message(
            check(&levels(14)),
            "about 16384 parse stacks at once (limit 10000)",
        );
        // Rules reached along several paths are counted once, as llama.cpp
        // merges the stacks (it builds 3000 here).
        let alts: Vec<String> = (0..3000).map(|i| format!("\"w{i}\"")).collect();
        let mut text = format!("root ::= d0\nbig ::= {}\n", alts.join(" | "));
        for i in 0..6 {
            text.push_str(&format!(
                "d{i} ::= x{i} | y{i}\nx{i} ::= d{}\ny{i} ::= d{}\n",
                i + 1,
                i + 1
            ));
        }
        text.push_str("d6 ::= big\n");
        assert_eq!(check(&text).map(|g| g.parse_stacks()), Ok(3000));
        assert_eq!(check(JSON).map(|g| g.parse_stacks()), Ok(12));
    }

    #[test]
    fn hostile_repetitions() {
        let text = format!("root ::= \"{}\"{{2000}}", "a".repeat(1000));
        assert!(timed("1000-char literal x2000", &text).is_ok());
        let text = format!("root ::= \"{}\"{{2000}}", "a".repeat(1001));
        expect_message(
            timed("long literal x2000", &text),
            "repetitions expand the grammar",
        );
        let text = format!("root ::= \"a\"{}", "+".repeat(NEAR_LIMIT - 16));
        expect_message(
            timed("1 MB of stacked +", &text),
            "repetitions expand the grammar",
        );
        let text = format!("root ::= \"a\"{}", "*".repeat(NEAR_LIMIT - 16));
        expect_message(
            timed("1 MB of stacked *", &text),
            "repetitions expand the grammar",
        );
        let text = format!("root ::= \"a\"{}", "*".repeat(1000));
        expect_message(timed("1000 stacked *", &text), "can match the empty string");
        let text = format!("root ::= \"a\"{}", "?".repeat(1000));
        assert!(timed("1000 stacked ?", &text).is_ok());
        let text = format!("root ::= {}", "[a-z]{0,2000} ".repeat(150));
        assert!(timed("150 x {0,2000}", &text).is_ok());
        let text = format!("root ::= {}", "[a-z]{0,2000} ".repeat(1000));
        expect_message(
            timed("1000 x {0,2000}", &text),
            "repetitions expand the grammar",
        );
        let text = format!("root ::= \"a\"{{{}}}", "9".repeat(NEAR_LIMIT - 16));
        expect_message(
            timed("1 MB repetition count", &text),
            "exceeds the limit 2000",
        );
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
}
