//! Reasoning under a constraint: a `<think>` block is free text, and the
//! schema or grammar shapes the answer after `</think>`.
//!
//! [`Thinking`] follows one generation token by token. It knows whether the
//! prompt leaves a block open (Qwen3's and DeepSeek-R1's templates do, and
//! so can a raw prompt), whether the model may open one itself, and when a
//! block closes — by the model, or by the engine when the thought reaches
//! `max_reasoning_tokens`, which appends `</think>` and the separator
//! itself. The sampler asks it whether the grammar applies to the next
//! token ([`Phase`]); the loops ask it for the tokens the engine writes in
//! the model's place ([`Thinking::forced`]).

use std::collections::VecDeque;

use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;

use crate::backend::params::GenerateParams;
use crate::chat::tools::Trigger;

use crate::chat::reasoning::{CLOSE, OPEN};

/// What the engine writes after `</think>` when it closes a block itself:
/// the blank line reasoning templates put between the thought and the
/// answer (Qwen3, DeepSeek-R1).
pub const SEPARATOR: &str = "\n\n";

/// How many prompt tokens, from the end, are read to tell whether the
/// prompt leaves a block open: templates open it in their last line.
const PROMPT_TAIL: usize = 512;

/// Whether the grammar applies to the next token.
#[derive(Clone, Copy)]
pub enum Phase<'a> {
    /// Free text (a thought, or a run without a constraint).
    Free,
    /// The grammar applies, but a token it refuses and that the function
    /// says opens a thought (`<think>`, or its first characters) starts
    /// the thought instead.
    MayThink(&'a dyn Fn(LlamaToken) -> bool),
    /// The grammar applies.
    Constrained,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before the answer: the model may open a block.
    MayOpen,
    /// The engine is writing the rest of `<think>` after the model's first
    /// characters of it.
    Opening,
    /// Inside a block; `from` is where its text starts in the output,
    /// `spent` counts its tokens, and `closing` says the engine is writing
    /// its close.
    Inside {
        from: usize,
        spent: u32,
        closing: bool,
    },
    /// The piece just taken closes the block.
    Closed,
    /// The answer, which started at `from`, is free text until the
    /// trigger's word (a tool call's opener).
    Watching { from: usize },
    /// The piece just taken holds the trigger's word.
    Triggered,
    /// Free text to the end: the anchored trigger did not come.
    FreeText,
    /// The answer.
    Answer,
}

/// Where one generation stands with respect to reasoning, and to the
/// trigger that starts a lazy grammar.
#[derive(Debug)]
pub struct Thinking {
    state: State,
    constrained: bool,
    /// The grammar waits for one of these words in the answer (tool calls,
    /// `auto`).
    triggers: &'static [Trigger],
    /// The word that just started the grammar, which it must read first.
    feed: Option<&'static str>,
    /// Whether the first characters of `<think>` open a thought.
    partial_opener: bool,
    budget: Option<u32>,
    /// Tokens the engine writes before the model's next one.
    forced: VecDeque<LlamaToken>,
}

impl Thinking {
    /// No reasoning to follow.
    pub fn none() -> Self {
        Self {
            state: State::Answer,
            constrained: false,
            triggers: &[],
            feed: None,
            partial_opener: false,
            budget: None,
            forced: VecDeque::new(),
        }
    }

    /// The reasoning state at the start of a generation from `prompt`.
    pub fn new(model: &LlamaModel, prompt: &[LlamaToken], params: &GenerateParams) -> Self {
        let constrained = params.constraint.is_some();
        let budget = params.max_reasoning_tokens;
        let triggers = match &params.tool_plan {
            Some(plan) if constrained => plan.triggers,
            _ => &[],
        };
        let mut thinking = Self {
            constrained,
            triggers,
            budget,
            ..Self::none()
        };
        if !constrained && budget.is_none() {
            // Nothing to shape and nothing to bound: the text is the text.
            return thinking;
        }
        let (leaves_open, speaks_of_it) = read_prompt(model, prompt);
        thinking.partial_opener = speaks_of_it;
        if leaves_open {
            thinking.enter(model, 0);
        } else if budget != Some(0) {
            thinking.state = State::MayOpen;
        } else {
            thinking.answer(0);
        }
        thinking
    }

    /// Whether the grammar alone decides the next tokens: the answer has
    /// begun under a grammar that applies from its first token, and the
    /// engine has nothing of its own to write or feed. Only then may what
    /// the grammar forces be appended without sampling (a thought, and the
    /// moment a thought may still open, stay the model's).
    pub fn grammar_decides(&self) -> bool {
        self.grammar_first()
            && self.state == State::Answer
            && self.forced.is_empty()
            && self.feed.is_none()
    }

    /// Whether the grammar applies from the answer's first token.
    fn grammar_first(&self) -> bool {
        self.constrained && self.triggers.is_empty()
    }

    /// The word the grammar must read before the next token: the trigger
    /// the model just wrote, part of the grammar's own text.
    pub fn take_feed(&mut self) -> Option<&'static str> {
        self.feed.take()
    }

    /// Whether the grammar applies to the next token; `opens` tells a
    /// token that opens a thought.
    pub fn phase<'a>(&self, opens: &'a dyn Fn(LlamaToken) -> bool) -> Phase<'a> {
        match self.state {
            _ if !self.constrained => Phase::Free,
            State::MayOpen if self.grammar_first() => Phase::MayThink(opens),
            State::Answer => Phase::Constrained,
            _ => Phase::Free,
        }
    }

    /// Whether `piece`, the first of the reply, opens a thought: it is
    /// `<think>` or starts with it; or it is the tag's first characters
    /// and the prompt speaks of `<think>` (a vocabulary without the tag as
    /// one token writes it in pieces: `<`, `think`, `>`). Elsewhere a `<`
    /// the grammar refuses is only refused.
    pub fn opens(&self, piece: &[u8]) -> bool {
        let piece = String::from_utf8_lossy(piece);
        let start = piece.trim_start();
        !start.is_empty()
            && (start.starts_with(OPEN) || (self.partial_opener && OPEN.starts_with(start)))
    }

    /// The next token the engine writes itself, if any.
    pub fn forced(&mut self) -> Option<LlamaToken> {
        self.forced.pop_front()
    }

    /// Before `piece` (the text of the next token) is appended to `text`:
    /// whether to take it. A piece that closes the block (or holds the
    /// trigger's word) and goes on with more than whitespace (anything) is
    /// replaced by its text up to the tag and the separator (up to the
    /// word), so that the grammar starts where the piece is cut.
    pub fn admit(&mut self, model: &LlamaModel, text: &str, piece: &[u8]) -> bool {
        match self.state {
            State::Inside { from, spent, .. } => {
                let Some(end) = word_end(&text[from.min(text.len())..], piece, CLOSE) else {
                    return true;
                };
                if piece[end..].iter().all(u8::is_ascii_whitespace) {
                    self.state = State::Closed;
                    return true;
                }
                let head = String::from_utf8_lossy(&piece[..end]).into_owned();
                self.write(model, &head);
                self.write(model, SEPARATOR);
                self.state = State::Inside {
                    from,
                    spent,
                    closing: true,
                };
                false
            }
            State::Watching { .. } | State::MayOpen => {
                if self.triggers.is_empty() {
                    return true;
                }
                // Before the answer is told from a thought, the text so far
                // is the answer's start.
                let from = match self.state {
                    State::Watching { from } => from,
                    _ => 0,
                };
                let answer = &text[from.min(text.len())..];
                let mut found: Option<(usize, &'static str)> = None;
                let mut all_missed = true;
                for trigger in self.triggers {
                    let end = if trigger.anchored {
                        match anchored_end(answer, piece, trigger.word) {
                            Anchored::Found(end) => Some(end),
                            Anchored::Undecided => {
                                all_missed = false;
                                None
                            }
                            Anchored::Missed => None,
                        }
                    } else {
                        all_missed = false;
                        word_end(answer, piece, trigger.word)
                    };
                    if let Some(end) = end {
                        if found.is_none_or(|(e, _)| end < e) {
                            found = Some((end, trigger.word));
                        }
                    }
                }
                let Some((end, word)) = found else {
                    if all_missed && self.state != State::MayOpen {
                        self.state = State::FreeText;
                    }
                    return true;
                };
                if end == piece.len() {
                    self.state = State::Triggered;
                    self.feed = Some(word);
                    return true;
                }
                let head = String::from_utf8_lossy(&piece[..end]).into_owned();
                self.write(model, &head);
                false
            }
            _ => true,
        }
    }

    /// After a token was appended and `text` is the output so far; `free`
    /// says the token was taken without the grammar.
    pub fn advance(&mut self, model: &LlamaModel, free: bool, text: &str) {
        match self.state {
            State::MayOpen | State::Opening => {
                let start = text.trim_start();
                if let Some(at) = text.find(OPEN).filter(|_| start.starts_with(OPEN)) {
                    if self.state == State::Opening || !self.grammar_first() || free {
                        self.enter(model, at + OPEN.len());
                        return;
                    }
                }
                if self.state == State::Opening {
                    return;
                }
                let undecided = !start.is_empty() && OPEN.starts_with(start);
                match (undecided, self.grammar_first()) {
                    // Free text: the next tokens tell.
                    (true, false) => {}
                    // The grammar refused these first characters of
                    // `<think>`: the engine writes the rest.
                    (true, true) if free => {
                        self.write(model, &OPEN[start.len()..]);
                        self.state = State::Opening;
                    }
                    // The answer, from the start of the text.
                    _ => self.answer(0),
                }
            }
            State::Inside {
                from,
                spent,
                closing: false,
            } => {
                let spent = spent + 1;
                self.state = State::Inside {
                    from,
                    spent,
                    closing: false,
                };
                if self.budget.is_some_and(|b| spent >= b) {
                    self.close(model);
                }
            }
            State::Closed => self.answer(text.len()),
            State::Triggered => self.state = State::Answer,
            State::Inside { closing: true, .. }
            | State::Watching { .. }
            | State::FreeText
            | State::Answer => {}
        }
    }

    /// The answer starts at `from` in the output.
    fn answer(&mut self, from: usize) {
        self.state = if self.triggers.is_empty() {
            State::Answer
        } else {
            State::Watching { from }
        };
    }

    /// The model ended its turn (end of generation): inside a thought under
    /// a constraint, that would leave no answer, so the engine closes the
    /// thought instead and the answer follows. Whether it did.
    pub fn close_instead_of_ending(&mut self, model: &LlamaModel) -> bool {
        if !self.constrained || !matches!(self.state, State::Inside { closing: false, .. }) {
            return false;
        }
        self.close(model);
        true
    }

    /// Inside a block whose text starts at `from`; closed at once when no
    /// thinking is allowed.
    fn enter(&mut self, model: &LlamaModel, from: usize) {
        self.state = State::Inside {
            from,
            spent: 0,
            closing: false,
        };
        if self.budget == Some(0) {
            self.close(model);
        }
    }

    /// Queue `</think>` and the separator; the block ends when they are in.
    fn close(&mut self, model: &LlamaModel) {
        self.write(model, CLOSE);
        self.write(model, SEPARATOR);
        if let State::Inside { from, spent, .. } = self.state {
            self.state = State::Inside {
                from,
                spent,
                closing: true,
            };
        }
    }

    /// Queue the tokens of `text` (special tokens parsed: `</think>` is one
    /// token in the vocabularies of reasoning models).
    fn write(&mut self, model: &LlamaModel, text: &str) {
        self.forced
            .extend(model.vocab().tokenize(text.as_bytes(), false, true));
    }
}

/// Where an anchored word stands in an answer.
#[derive(Debug, PartialEq, Eq)]
enum Anchored {
    /// The answer (leading whitespace aside) starts with the word, which
    /// ends at this offset of the piece.
    Found(usize),
    /// The answer so far is the word's beginning (or whitespace).
    Undecided,
    /// The answer starts otherwise.
    Missed,
}

/// Whether `answer` + `piece`, leading whitespace aside, starts with `word`.
/// Only the answer's first bytes are read, so a long free answer costs
/// nothing per token.
fn anchored_end(answer: &str, piece: &[u8], word: &str) -> Anchored {
    let said = answer
        .trim_start_matches(|c: char| c.is_ascii_whitespace())
        .as_bytes();
    if said.len() >= word.len() || !word.as_bytes().starts_with(said) {
        // Either the word was found before this piece, or never will be.
        return Anchored::Missed;
    }
    let mut joined = said.to_vec();
    joined.extend_from_slice(piece);
    let start = if said.is_empty() {
        joined
            .iter()
            .position(|b| !b.is_ascii_whitespace())
            .unwrap_or(joined.len())
    } else {
        0
    };
    let rest = &joined[start..];
    if rest.starts_with(word.as_bytes()) {
        // Where the word ends, in the piece's own offsets.
        return Anchored::Found(start + word.len() - said.len());
    }
    if word.as_bytes().starts_with(rest) {
        Anchored::Undecided
    } else {
        Anchored::Missed
    }
}

/// Where `word` ends in `piece` when `before` + `piece` holds it and
/// `before` alone does not: the word may start in the last bytes before.
fn word_end(before: &str, piece: &[u8], word: &str) -> Option<usize> {
    let tail_len = (word.len() - 1).min(before.len());
    let tail = &before.as_bytes()[before.len() - tail_len..];
    let mut joined = Vec::with_capacity(tail.len() + piece.len());
    joined.extend_from_slice(tail);
    joined.extend_from_slice(piece);
    let at = joined
        .windows(word.len())
        .position(|w| w == word.as_bytes())?;
    Some(at + word.len() - tail.len())
}

/// Whether the last `<think>` of the prompt's text is not closed after it.
/// And whether it speaks of `<think>` at all (a template or few-shot turns
/// that use it), which makes the tag's first characters, as the reply's
/// first words, the start of one.
fn read_prompt(model: &LlamaModel, prompt: &[LlamaToken]) -> (bool, bool) {
    let vocab = model.vocab();
    let tail = &prompt[prompt.len().saturating_sub(PROMPT_TAIL)..];
    let mut bytes = Vec::new();
    for &token in tail {
        vocab.token_to_piece_into(token, &mut bytes, true, None);
    }
    let text = String::from_utf8_lossy(&bytes);
    let last_open = text.rfind(OPEN);
    (last_open > text.rfind(CLOSE), last_open.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_first_piece_opens_a_thought_when_it_is_or_begins_the_tag() {
        let mut thinking = Thinking::none();
        for partial in [false, true] {
            thinking.partial_opener = partial;
            for piece in ["<think>", " <think>\n", "<think>Hmm"] {
                assert!(thinking.opens(piece.as_bytes()), "{piece:?}");
            }
            for piece in ["<", "<th"] {
                assert_eq!(thinking.opens(piece.as_bytes()), partial, "{piece:?}");
            }
            for piece in ["{", "", " ", "<a", "think", "<thinking"] {
                assert!(!thinking.opens(piece.as_bytes()), "{piece:?}");
            }
        }
    }

    #[test]
    fn the_closing_tag_is_found_across_the_thought_and_the_piece() {
        assert_eq!(word_end("I think </thi", b"nk>\n\n", CLOSE), Some(3));
        assert_eq!(word_end("done", b"</think>{", CLOSE), Some(8));
        assert_eq!(word_end("", b"</think>", CLOSE), Some(8));
        assert_eq!(word_end("a </think", b" no", CLOSE), None);
        assert_eq!(word_end("<", b"/think>x", CLOSE), Some(7));
    }

    #[test]
    fn an_anchored_word_must_open_the_answer() {
        assert_eq!(anchored_end("", b"{", "{"), Anchored::Found(1));
        assert_eq!(anchored_end(" \n", b"{\"", "{"), Anchored::Found(1));
        assert_eq!(anchored_end("", b"  ", "{"), Anchored::Undecided);
        assert_eq!(anchored_end("", b"Sure", "{"), Anchored::Missed);
        assert_eq!(
            anchored_end("<tool", b"_call>\n", "<tool_call>"),
            Anchored::Found(6)
        );
        assert_eq!(
            anchored_end("<to", b"ol", "<tool_call>"),
            Anchored::Undecided
        );
    }
}
