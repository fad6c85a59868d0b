//! Splitting `<think>…</think>` reasoning from the answer.

const OPEN: &str = "<think>";
const CLOSE: &str = "</think>";

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

#[cfg(test)]
mod tests {
    use super::*;

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
