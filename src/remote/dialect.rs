//! Our GBNF in the dialect of xgrammar, the grammar backend vLLM and SGLang
//! use by default: the plain BNF of the rules llama.cpp builds from it
//! (`grammar::check::plain_bnf`), which both read alike.

use crate::grammar::check::{plain_bnf, LowerError};

/// `gbnf` as xgrammar reads it, or why it cannot be said exactly.
pub fn xgrammar(gbnf: &str) -> Result<String, String> {
    plain_bnf(gbnf).map_err(|e| match e {
        LowerError::Tokens => e.to_string(),
        LowerError::Invalid(detail) => format!("the grammar does not check ({detail})"),
    })
}
