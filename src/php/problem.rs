//! A problem with one option of a call, worded once and turned into the
//! caller's error type (`ModelLoadException` or `InferenceException`).

use ext_php_rs::types::Zval;

use super::convert::describe;
use super::errors::{CallError, LoadCallError};

/// A problem with one option, before it is turned into the caller's error type.
pub struct Problem {
    key: String,
    expected: String,
}

impl Problem {
    pub fn new(key: &str, expected: impl Into<String>) -> Self {
        Self {
            key: key.to_owned(),
            expected: expected.into(),
        }
    }

    pub fn wrong(key: &str, what: &str, value: &Zval) -> Self {
        Self::new(key, format!("must be {what}, got {}", describe(value)))
    }

    pub fn unknown(key: &str, known: &[&str]) -> Self {
        Self::new(
            key,
            format!("is not a known option (known: {})", known.join(", ")),
        )
    }

    pub fn integer_key(index: i64, known: &[&str]) -> Self {
        Self {
            key: index.to_string(),
            expected: format!(
                "is an integer key; options are an array keyed by name (known: {})",
                known.join(", ")
            ),
        }
    }
}

impl From<Problem> for LoadCallError {
    fn from(p: Problem) -> Self {
        LoadCallError::InvalidOption {
            key: p.key,
            expected: p.expected,
        }
    }
}

impl From<Problem> for CallError {
    fn from(p: Problem) -> Self {
        CallError::InvalidOption {
            key: p.key,
            expected: p.expected,
        }
    }
}
