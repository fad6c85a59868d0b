//! Errors of the schema converter: what is wrong, and the JSON pointer of the
//! place in the schema where it is.

use super::keywords;

/// A schema the converter cannot turn into an exact grammar.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{kind} at {}{}", display_pointer(.pointer), hint(.kind))]
pub struct SchemaError {
    /// JSON pointer of the schema object (or keyword) involved; "" is the root.
    pub pointer: String,
    pub kind: ErrorKind,
}

/// What would be right, after the location: the supported names.
fn hint(kind: &ErrorKind) -> String {
    match kind {
        ErrorKind::UnsupportedKeyword { .. } => {
            format!(" (supported: {})", keywords::supported_list())
        }
        ErrorKind::UnsupportedFormat { supported, .. } => format!(" (supported: {supported})"),
        ErrorKind::Misspelled { meant, .. } | ErrorKind::MisspelledFormat { meant, .. } => {
            format!(" (did you mean \"{meant}\"?)")
        }
        _ => String::new(),
    }
}

fn display_pointer(pointer: &str) -> &str {
    if pointer.is_empty() {
        "the root (#)"
    } else {
        pointer
    }
}

impl SchemaError {
    pub fn new(pointer: impl Into<String>, kind: ErrorKind) -> Self {
        Self {
            pointer: pointer.into(),
            kind,
        }
    }

    /// The message, without the location when it is the root: for a schema
    /// checked piece by piece, where the caller names the piece.
    pub fn detail(&self) -> String {
        if self.pointer.is_empty() {
            format!("{}{}", self.kind, hint(&self.kind))
        } else {
            self.to_string()
        }
    }

    /// The keyword the error is about, when there is one.
    pub fn keyword(&self) -> Option<&str> {
        match &self.kind {
            ErrorKind::UnsupportedKeyword { keyword }
            | ErrorKind::Misspelled { keyword, .. }
            | ErrorKind::WrongType { keyword, .. }
            | ErrorKind::Invalid { keyword, .. }
            | ErrorKind::TooLarge { keyword, .. } => Some(keyword),
            ErrorKind::UnsupportedFormat { .. } | ErrorKind::MisspelledFormat { .. } => {
                Some("format")
            }
            ErrorKind::Pattern { .. } => Some("pattern"),
            ErrorKind::EmptyEnum => Some("enum"),
            ErrorKind::BadRef { .. }
            | ErrorKind::RemoteRef { .. }
            | ErrorKind::NoBaseCase { .. } => Some("$ref"),
            ErrorKind::OneOfNotExclusive { .. } => Some("oneOf"),
            ErrorKind::AllOfNotMergeable { .. } => Some("allOf"),
            ErrorKind::UnknownType { .. } => Some("type"),
            _ => None,
        }
    }
}

/// What is wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ErrorKind {
    #[error("unsupported keyword \"{keyword}\"")]
    UnsupportedKeyword { keyword: String },
    #[error("unknown keyword \"{keyword}\"")]
    Misspelled {
        keyword: String,
        meant: &'static str,
    },
    #[error("schema must be an object or a boolean, got {got}")]
    NotASchema { got: &'static str },
    #[error("keyword \"{keyword}\" must be {expected}")]
    WrongType {
        keyword: String,
        expected: &'static str,
    },
    #[error("keyword \"{keyword}\" {reason}")]
    Invalid { keyword: String, reason: String },
    #[error(
        "unknown type \"{name}\" (known: null, boolean, integer, number, string, array, object)"
    )]
    UnknownType { name: String },
    #[error("\"enum\" must not be empty")]
    EmptyEnum,
    #[error("unknown format \"{format}\"")]
    MisspelledFormat { format: String, meant: &'static str },
    #[error("unsupported format \"{format}\"")]
    UnsupportedFormat {
        format: String,
        supported: &'static str,
    },
    #[error("pattern {pattern:?}: {reason}")]
    Pattern { pattern: String, reason: String },
    #[error("numeric range: {reason}")]
    Range { reason: String },
    #[error("remote $ref \"{reference}\" is not supported (only local refs: #, #/$defs/…, #/definitions/…)")]
    RemoteRef { reference: String },
    #[error("$ref \"{reference}\" {reason}")]
    BadRef { reference: String, reason: String },
    #[error("$ref \"{reference}\" recurses with no base case: no finite value satisfies it")]
    NoBaseCase { reference: String },
    #[error("oneOf branches {first} and {second} are not provably exclusive ({hint})")]
    OneOfNotExclusive {
        first: usize,
        second: usize,
        hint: &'static str,
    },
    #[error("allOf cannot be merged into one schema: {reason}")]
    AllOfNotMergeable { reason: String },
    #[error("\"{keyword}\" {value} exceeds the limit {limit} that a grammar can enforce")]
    TooLarge {
        keyword: String,
        value: String,
        limit: u64,
    },
    #[error("schema nesting is deeper than the limit of {limit} levels")]
    TooDeep { limit: usize },
    #[error("schema is too complex: more than {limit} steps to convert")]
    TooComplex { limit: usize },
    #[error("schema can never be satisfied: {reason}")]
    Unsatisfiable { reason: String },
    #[error("the converter cannot write a grammar for this schema: {reason}")]
    CannotWrite { reason: String },
    #[error("the grammar for this schema would be {bytes} bytes, more than the limit of {limit} bytes a grammar may have (open objects and optional properties weigh most)")]
    GrammarTooLarge { bytes: usize, limit: usize },
    /// A converter bug: what it built fails the GBNF checker, so it is not
    /// handed to llama.cpp.
    #[error("the grammar built for this schema fails the GBNF checker ({reason}); please report the schema")]
    GrammarRefused { reason: String },
    #[error("invalid converter option: {reason}")]
    BadOption { reason: String },
}
