//! A `schema` argument (a PHP array or object, JSON text, or a
//! `Displace\Infer\Schema`) read as JSON and converted to a grammar.

use ext_php_rs::convert::FromZval;
use ext_php_rs::types::Zval;

use super::convert::{type_name, zval_to_json};
use super::schema::Schema;
use crate::grammar::CheckedGbnf;
use crate::schema::{ConvertOptions, ObjectDefaults};

/// A `schema` argument: a PHP array (or object), or JSON text.
pub fn schema_value(value: &Zval) -> Result<serde_json::Value, String> {
    let value = value.dereference();
    if let Some(schema) = <&Schema>::from_zval(value) {
        return Ok(schema.node.to_value());
    }
    if value.is_string() {
        let Some(text) = value.str() else {
            return Err("schema is not valid UTF-8".to_owned());
        };
        return serde_json::from_str(text).map_err(|e| format!("schema is not valid JSON: {e}"));
    }
    if value.is_array() || value.is_object() {
        let mut path = String::new();
        return zval_to_json(value, 0, &mut path, "schema");
    }
    Err(format!(
        "schema must be an array, a JSON string or a Displace\\Infer\\Schema, got {}",
        type_name(value)
    ))
}

/// The grammar for a `schema` argument (array or JSON text), or the message.
/// An empty PHP array (`[]`) is how PHP code writes `{}`, so it stands for
/// the empty schema.
/// `defaults` is the reading of objects that leave `required` or
/// `additionalProperties` out (the `schema_defaults` option).
pub fn schema_grammar(value: &Zval, defaults: ObjectDefaults) -> Result<CheckedGbnf, String> {
    schema_json_grammar(&schema_value(value)?, defaults)
}

/// The grammar for a schema already read as JSON (see [`schema_grammar`]).
pub fn schema_json_grammar(
    schema: &serde_json::Value,
    defaults: ObjectDefaults,
) -> Result<CheckedGbnf, String> {
    let options = ConvertOptions {
        empty_array_is_schema: true,
        object_defaults: defaults,
        ..ConvertOptions::default()
    };
    let compiled = crate::schema::compile_with(schema, &options).map_err(|e| e.to_string())?;
    Ok(compiled.gbnf)
}
