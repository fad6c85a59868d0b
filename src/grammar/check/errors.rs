//! Errors at byte offsets, their line and column, and how messages show
//! characters and names.

use super::GrammarError;

/// An error at a byte offset, located when it leaves the module.
#[derive(Debug)]
pub(super) struct Fail {
    pos: usize,
    message: String,
}

impl Fail {
    pub(super) fn new(pos: usize, message: impl Into<String>) -> Self {
        Fail {
            pos,
            message: message.into(),
        }
    }

    pub(super) fn locate(self, src: &str) -> GrammarError {
        let (line, column) = line_col(src, self.pos);
        GrammarError {
            line,
            column,
            message: self.message,
        }
    }
}

/// 1-based line and column (in characters) of a byte offset.
pub(super) fn line_col(src: &str, pos: usize) -> (usize, usize) {
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
pub(super) fn where_is(src: &str, pos: usize) -> String {
    let (line, column) = line_col(src, pos);
    format!("line {line}, column {column}")
}

/// A code point as it reads in a message: the character itself when
/// printable, else a GBNF escape.
pub(super) fn show_char(value: u32) -> String {
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
pub(super) fn excerpt(text: &str) -> String {
    const MAX: usize = 24;
    if text.chars().count() <= MAX {
        text.to_owned()
    } else {
        let head: String = text.chars().take(MAX).collect();
        format!("{head}...")
    }
}

pub(super) fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-'
}

/// Hint added when a name is followed by a character that looks like part
/// of it.
pub(super) fn name_hint(next: Option<char>) -> &'static str {
    match next {
        Some(c) if c == '_' || c.is_alphanumeric() => {
            " (rule names may contain only ASCII letters, digits and \"-\")"
        }
        _ => "",
    }
}
