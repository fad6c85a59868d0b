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
//! * a root, or a reachable rule, that matches no finite string (once
//!   inside it the sampler never allows end-of-generation, so the output
//!   runs until the token limit);
//! * a reachable character class or `"\x00"` that can never match (there
//!   the sampler rejects every token, and accepting one anyway throws);
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

// How the pieces fit: `parser` (with `repetition`) reads the text into the
// `elements` of an arena, as llama.cpp would build them; `rules` then runs
// the checks in order, calling on `left_recursion`, `stacks` (the parse-stack
// estimate) and the `graph` algorithms; `errors` turns a byte offset into a
// line and column. Test tables are in `cases`, whole-checker tests in `tests`.
mod elements;
mod errors;
mod graph;
mod left_recursion;
mod lower;
mod parser;
mod repetition;
mod rules;
mod stacks;

pub(crate) use elements::{Elem, Kind, RuleArena};
use errors::Fail;
use parser::Parser;

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
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct TokenUse {
    max_id: Option<u32>,
    /// Each `<text>` item once, `<` and `>` included, with its line and
    /// column, in text order.
    texts: Vec<TokenText>,
}

/// A `<text>` (or `!<text>`) item: llama.cpp tokenizes `text` (angle
/// brackets included, control-token markup parsed) and rejects the grammar
/// unless it is exactly one token of the model.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TokenText {
    pub text: String,
    /// 1-based line and column (in characters) of the `<`.
    pub line: usize,
    pub column: usize,
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
        !self.tokens.texts.is_empty()
    }

    /// The `<text>` items, each text once, in text order.
    pub fn token_texts(&self) -> &[TokenText] {
        &self.tokens.texts
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

pub use lower::LowerError;

/// A grammar as plain BNF: the rules llama.cpp builds from it, written in
/// the subset every GBNF-like engine reads alike (see `lower`). The grammar
/// is checked first.
///
/// # Errors
///
/// The grammar's first problem, or why it has no plain form (token items).
pub fn plain_bnf(gbnf: &str) -> Result<String, LowerError> {
    let invalid = |fail: Fail| LowerError::Invalid(fail.locate(gbnf).to_string());
    precheck(gbnf).map_err(invalid)?;
    let mut parser = Parser::new(gbnf);
    parser.parse_grammar().map_err(invalid)?;
    let grammar = parser.into_grammar().map_err(invalid)?;
    grammar.validate().map_err(invalid)?;
    let root = grammar.root().map_err(invalid)?;
    lower::plain_bnf(&grammar, root)
}

/// The rules llama.cpp builds from `gbnf`, in one arena.
///
/// Meant for text that already passed [`check`] (a `CheckedGbnf`): the
/// checks themselves are not run again, so code that walks the arena may
/// rely on what they guarantee (`root` and every referenced rule defined, no
/// left recursion that grows the parse stack) only for such text.
///
/// # Errors
///
/// The grammar's first syntax problem, or a missing `root`.
pub(crate) fn rule_arena(gbnf: &str) -> Result<RuleArena, GrammarError> {
    let located = |fail: Fail| fail.locate(gbnf);
    precheck(gbnf).map_err(located)?;
    let mut parser = Parser::new(gbnf);
    parser.parse_grammar().map_err(located)?;
    let grammar = parser.into_grammar().map_err(located)?;
    let root = grammar.root().map_err(located)?;
    Ok(grammar.arena(root))
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

#[cfg(test)]
mod cases;
#[cfg(test)]
mod tests;
