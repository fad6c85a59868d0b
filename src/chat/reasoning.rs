//! Splitting `<think>…</think>` reasoning from the answer.

/// The tags of a reasoning block: the text split here, and the ones the
/// engine writes itself when it closes a thought (`engine::think`).
pub const OPEN: &str = "<think>";
pub const CLOSE: &str = "</think>";

/// The answer and the reasoning of a generated text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split {
    /// The text without its `<think>` blocks, leading whitespace trimmed.
    pub answer: String,
    /// The contents of the `<think>` blocks, trimmed and joined by a blank
    /// line; `None` when the text had no reasoning at all.
    pub reasoning: Option<String>,
}

/// Split `text` into answer and reasoning.
///
/// - Every `<think>…</think>` block goes to the reasoning.
/// - A `<think>` that is never closed (a run cut off while thinking) puts the
///   rest of the text into the reasoning and leaves nothing for the answer.
/// - A `</think>` with no opening tag before it (templates that open the block
///   inside the prompt, as Qwen3 and DeepSeek-R1 do) makes everything before
///   it reasoning.
pub fn split(text: &str) -> Split {
    let mut answer = String::with_capacity(text.len());
    let mut thoughts: Vec<&str> = Vec::new();
    let mut rest = text;

    if let Some(close) = rest.find(CLOSE) {
        if !rest[..close].contains(OPEN) {
            thoughts.push(&rest[..close]);
            rest = &rest[close + CLOSE.len()..];
        }
    }
    while let Some(open) = rest.find(OPEN) {
        answer.push_str(&rest[..open]);
        let inside = &rest[open + OPEN.len()..];
        match inside.find(CLOSE) {
            Some(close) => {
                thoughts.push(&inside[..close]);
                rest = &inside[close + CLOSE.len()..];
            }
            None => {
                thoughts.push(inside);
                rest = "";
            }
        }
    }
    answer.push_str(rest);

    let reasoning = if thoughts.is_empty() {
        None
    } else {
        let parts: Vec<&str> = thoughts
            .iter()
            .map(|t| t.trim())
            .filter(|t| !t.is_empty())
            .collect();
        Some(parts.join("\n\n"))
    };
    Split {
        answer: answer.trim_start().to_owned(),
        reasoning,
    }
}

/// Which part of a reply a piece of it belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// A `<think>` block, its tags included.
    Reasoning,
    Answer,
}

/// Cuts a reply that arrives bit by bit into pieces that each belong to one
/// [`Part`]: a `<think>` block (tags included) is reasoning, the rest is
/// answer. A tag cut off at the end of what has arrived is held back until
/// it is complete or cannot be a tag.
#[derive(Debug, Clone)]
pub struct Parts {
    in_reasoning: bool,
}

impl Parts {
    /// The parts of the reply to `prompt`: a prompt that leaves a `<think>`
    /// block open (Qwen3 and DeepSeek-R1 templates do) makes the reply start
    /// in reasoning.
    pub fn after_prompt(prompt: &str) -> Self {
        Self {
            in_reasoning: prompt.rfind(OPEN) > prompt.rfind(CLOSE),
        }
    }

    /// The next piece of `text[from..]`: its part and where it ends, or
    /// `None` when nothing can be told yet. With `complete`, `text` is the
    /// whole reply, so nothing is held back.
    pub fn next(&mut self, text: &str, from: usize, complete: bool) -> Option<(Part, usize)> {
        let rest = &text[from..];
        if rest.is_empty() {
            return None;
        }
        if !self.in_reasoning {
            match rest.find(OPEN) {
                Some(0) => self.in_reasoning = true,
                Some(open) => return Some((Part::Answer, from + open)),
                None => {
                    let held = if complete {
                        0
                    } else {
                        start_at_end(rest, OPEN)
                    };
                    let end = rest.len() - held;
                    return (end > 0).then_some((Part::Answer, from + end));
                }
            }
        }
        // In a block: it ends after its closing tag. An opening tag that
        // starts this piece belongs to it.
        let skip = if rest.starts_with(OPEN) {
            OPEN.len()
        } else {
            0
        };
        let inside = &rest[skip..];
        if let Some(close) = inside.find(CLOSE) {
            self.in_reasoning = false;
            return Some((Part::Reasoning, from + skip + close + CLOSE.len()));
        }
        let held = if complete {
            0
        } else {
            start_at_end(inside, CLOSE)
        };
        let end = rest.len() - held;
        (end > 0).then_some((Part::Reasoning, from + end))
    }
}

/// The length of the longest proper prefix of `needle` that `text` ends
/// with: how much of `text` could be the start of `needle`, cut off.
pub fn start_at_end(text: &str, needle: &str) -> usize {
    let (text, needle) = (text.as_bytes(), needle.as_bytes());
    (1..needle.len().min(text.len() + 1))
        .rev()
        .find(|&n| text.ends_with(&needle[..n]))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `text` streamed in chunks of `step` bytes (ASCII), cut by `Parts`.
    fn pieces(prompt: &str, text: &str, step: usize) -> Vec<(Part, String)> {
        let mut parts = Parts::after_prompt(prompt);
        let mut out = Vec::new();
        let mut released = 0;
        let mut arrived = 0;
        loop {
            let complete = arrived == text.len();
            while let Some((part, end)) = parts.next(&text[..arrived], released, complete) {
                out.push((part, text[released..end].to_owned()));
                released = end;
            }
            if complete {
                return out;
            }
            arrived = (arrived + step).min(text.len());
        }
    }

    fn joined(pieces: &[(Part, String)], part: Part) -> String {
        pieces
            .iter()
            .filter(|(p, _)| *p == part)
            .map(|(_, s)| s.as_str())
            .collect()
    }

    #[test]
    fn streamed_pieces_put_each_block_with_its_tags_in_reasoning() {
        let text = "Hi <think>a</think> there<think>b</th";
        for step in 1..=text.len() {
            let got = pieces("", text, step);
            let all: String = got.iter().map(|(_, s)| s.as_str()).collect();
            assert_eq!(all, text, "step {step}");
            assert_eq!(
                joined(&got, Part::Reasoning),
                "<think>a</think><think>b</th",
                "step {step}"
            );
            assert_eq!(joined(&got, Part::Answer), "Hi  there", "step {step}");
        }
    }

    #[test]
    fn a_partial_tag_is_held_back_until_it_is_told() {
        let mut parts = Parts::after_prompt("");
        assert_eq!(parts.next("ab<th", 0, false), Some((Part::Answer, 2)));
        assert_eq!(parts.next("ab<th", 2, false), None);
        assert_eq!(parts.next("ab<tho", 2, false), Some((Part::Answer, 6)));
        assert_eq!(parts.next("ab<th", 2, true), Some((Part::Answer, 5)));
    }

    #[test]
    fn a_prompt_that_opens_a_block_starts_the_reply_in_reasoning() {
        let got = pieces("<|im_start|>assistant\n<think>\n", "hmm</think>42", 2);
        assert_eq!(joined(&got, Part::Reasoning), "hmm</think>");
        assert_eq!(joined(&got, Part::Answer), "42");
        let closed = pieces("<think>x</think> answer", "42", 1);
        assert_eq!(joined(&closed, Part::Answer), "42");
    }

    fn check(text: &str, answer: &str, reasoning: Option<&str>) {
        let got = split(text);
        assert_eq!(got.answer, answer, "answer of {text:?}");
        assert_eq!(got.reasoning.as_deref(), reasoning, "reasoning of {text:?}");
    }

    #[test]
    fn plain_text_has_no_reasoning() {
        check("  Hello", "Hello", None);
        check("", "", None);
    }

    #[test]
    fn one_block_is_split_off() {
        check(
            "<think>\nLet me see.\n</think>\n\nParis.",
            "Paris.",
            Some("Let me see."),
        );
    }

    #[test]
    fn several_blocks_are_joined() {
        check("<think>a</think>X<think>b</think> Y", "X Y", Some("a\n\nb"));
    }

    #[test]
    fn unclosed_block_leaves_answer_empty() {
        check("<think>I am still thinki", "", Some("I am still thinki"));
        check("Sure. <think>hmm", "Sure. ", Some("hmm"));
    }

    #[test]
    fn close_without_open_means_the_prompt_opened_it() {
        check("pondering...</think>\n42", "42", Some("pondering..."));
    }

    #[test]
    fn empty_block_is_reasoning_that_is_empty() {
        check("<think></think>Hi", "Hi", Some(""));
    }
}
