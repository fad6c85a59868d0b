//! [`CheckedGbnf`]: the only form in which a grammar reaches llama.cpp.

use std::fmt;
use std::sync::Arc;

use super::check::{check, GrammarError, TokenText};

/// GBNF text (start rule `root`) that passed [`check`], so llama.cpp can
/// load and run it without crashing, hanging or exhausting memory.
///
/// The only way to make one is [`CheckedGbnf::new`], which runs the checker;
/// the engine takes nothing else, so no caller (a language binding, the schema
/// converter, a benchmark) can hand llama.cpp an unchecked grammar. Cloning
/// is cheap: the text is shared.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct CheckedGbnf {
    text: Arc<str>,
    /// The `<text>` token items, which the engine checks against the
    /// model's vocabulary before llama.cpp parses the grammar (llama.cpp's
    /// parser would print its complaint to the process's stderr).
    token_texts: Arc<[TokenText]>,
}

impl CheckedGbnf {
    /// Check `text` and keep it.
    ///
    /// # Errors
    ///
    /// The checker's first finding, with its line and column.
    pub fn new(text: impl Into<Arc<str>>) -> Result<Self, GrammarError> {
        let text = text.into();
        let checked = check(&text)?;
        Ok(Self {
            text,
            token_texts: checked.token_texts().into(),
        })
    }

    /// The `<text>` token items, each text once, in text order.
    pub fn token_texts(&self) -> &[TokenText] {
        &self.token_texts
    }

    /// The grammar's text.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

impl fmt::Debug for CheckedGbnf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CheckedGbnf")
            .field("bytes", &self.text.len())
            .finish()
    }
}

impl fmt::Display for CheckedGbnf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_text_of_a_grammar_that_passes() {
        let g = CheckedGbnf::new("root ::= \"a\" | \"b\"").expect("valid grammar");
        assert_eq!(g.as_str(), "root ::= \"a\" | \"b\"");
    }

    #[test]
    fn refuses_what_the_checker_refuses() {
        // llama.cpp crashes on a root that is only referenced, never defined.
        let err = CheckedGbnf::new("a ::= root").unwrap_err();
        assert!(err.to_string().contains("root"), "{err}");
        // Hidden left recursion: llama.cpp's parse stack would grow until
        // memory runs out.
        let err = CheckedGbnf::new("root ::= e \"x\"\ne ::= root | ").unwrap_err();
        assert!(err.to_string().contains("left-recursive"), "{err}");
    }
}
