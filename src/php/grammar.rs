//! `Displace\Infer\Grammar`: the schema converter and the GBNF checker.

use ext_php_rs::flags::ClassFlags;
use ext_php_rs::prelude::*;
use ext_php_rs::types::Zval;

use ext_php_rs::binary::Binary;

use super::convert;
use super::convert::OptionsArg;
use super::exceptions::{infer_exception, no_constructor};
use super::options::from_schema_defaults;
use super::schema_arg::schema_grammar;
use crate::grammar::CheckedGbnf;

/// Static helpers for grammars.
#[php_class]
#[php(name = "Displace\\Infer\\Grammar")]
#[php(flags = ClassFlags::Final.union(ClassFlags::NotSerializable))]
#[derive(Debug)]
pub struct Grammar;

#[php_impl]
impl Grammar {
    /// Grammar has only static methods.
    pub fn __construct() -> PhpResult<Self> {
        Err(no_constructor(
            "Grammar",
            "Grammar::fromSchema() or Grammar::check()",
        ))
    }

    /// The GBNF grammar the converter builds for a JSON Schema (array or JSON
    /// text). Option `schema_defaults` (`'strict'` or `'json-schema'`) says how
    /// objects that leave `required`/`additionalProperties` out are read.
    #[php(defaults(options = OptionsArg::none()))]
    pub fn from_schema(schema: &Zval, options: OptionsArg<'_>) -> PhpResult<String> {
        let defaults = from_schema_defaults(options).map_err(|e| infer_exception(e.to_string()))?;
        let gbnf = schema_grammar(schema, defaults).map_err(infer_exception)?;
        Ok(gbnf.as_str().to_owned())
    }

    /// Throw when `gbnf` does not parse or has no `root` rule; the message
    /// gives the line and column.
    pub fn check(gbnf: Binary<u8>) -> PhpResult<()> {
        let gbnf = convert::utf8(gbnf.into()).map_err(|offset| {
            infer_exception(format!(
                "invalid grammar: grammar is not valid UTF-8 (invalid byte at offset {offset})"
            ))
        })?;
        CheckedGbnf::new(gbnf)
            .map(|_| ())
            .map_err(|e| infer_exception(format!("invalid grammar: {e}")))
    }
}
