//! `Displace\Infer\Schema`: a fluent, immutable JSON Schema builder, and
//! `Schema::fromClass()`.

use ext_php_rs::convert::FromZval;
use ext_php_rs::flags::ClassFlags;
use ext_php_rs::prelude::*;
use ext_php_rs::types::{ZendHashTable, Zval};
use ext_php_rs::zend::ClassEntry;
use serde_json::Value;

use super::attributes::number_arg;
use super::convert;
use super::exceptions::{infer_exception, internal_class, no_constructor, type_error};
use super::reflect;
use crate::schema::builder::{BuildError, Kind, SchemaNode};

/// `\JsonSerializable`, which `json_encode()` asks for the schema.
fn json_serializable() -> &'static ClassEntry {
    internal_class("JsonSerializable").unwrap_or_else(ext_php_rs::zend::ce::stringable)
}

/// A JSON Schema for structured output, built step by step; each method
/// returns a new schema and checks what it adds.
#[php_class]
#[php(name = "Displace\\Infer\\Schema")]
#[php(flags = ClassFlags::Final.union(ClassFlags::NotSerializable))]
#[php(implements(ce = json_serializable, stub = "\\JsonSerializable"))]
#[derive(Debug, Clone)]
pub struct Schema {
    pub node: SchemaNode,
}

fn built(result: Result<SchemaNode, BuildError>) -> PhpResult<Schema> {
    result
        .map(|node| Schema { node })
        .map_err(|e| infer_exception(e.to_string()))
}

/// The `Schema` objects of a PHP array, with their string keys.
fn schemas(method: &str, table: &ZendHashTable) -> PhpResult<Vec<(Option<String>, SchemaNode)>> {
    let mut out = Vec::with_capacity(table.len());
    for (key, value) in table.iter() {
        let name = convert::key_name(&key);
        let Some(schema) = <&Schema>::from_zval(value) else {
            let at = match &name {
                Some(n) => format!("\"{n}\""),
                None => key.to_string(),
            };
            return Err(type_error(format!(
                "Schema::{method}(): entry {at} must be a Displace\\Infer\\Schema, got {}",
                convert::describe_kind(value)
            )));
        };
        out.push((name, schema.node.clone()));
    }
    Ok(out)
}

impl Schema {
    fn with(&self, keyword: &str, value: Value) -> PhpResult<Schema> {
        built(self.node.clone().constrain(keyword, value))
    }

    fn count(&self, keyword: &str, n: i64) -> PhpResult<Schema> {
        self.with(keyword, Value::from(n))
    }

    fn numeric(&self, keyword: &str, n: &Zval) -> PhpResult<Schema> {
        match number_arg("Schema", keyword, Some(n))? {
            Some(v) => self.with(keyword, v),
            None => Err(type_error(format!(
                "Schema: {keyword} must be a finite int or float, got null"
            ))),
        }
    }
}

#[php_impl]
impl Schema {
    /// Schemas come from the static methods.
    pub fn __construct() -> PhpResult<Self> {
        Err(no_constructor(
            "Schema",
            "Schema::object(), Schema::string(), … or Schema::fromClass()",
        ))
    }

    /// An object with these properties (`Schema`s, named by their string
    /// keys or their own names). Only those marked `required()` are
    /// required; no other key is allowed.
    #[php(defaults(name = None))]
    pub fn object(properties: &ZendHashTable, name: Option<String>) -> PhpResult<Schema> {
        built(SchemaNode::object(schemas("object", properties)?, name))
    }

    #[php(defaults(name = None))]
    pub fn string(name: Option<String>) -> Schema {
        Schema {
            node: SchemaNode::scalar(Kind::String, name),
        }
    }

    #[php(defaults(name = None))]
    pub fn integer(name: Option<String>) -> Schema {
        Schema {
            node: SchemaNode::scalar(Kind::Integer, name),
        }
    }

    #[php(defaults(name = None))]
    pub fn number(name: Option<String>) -> Schema {
        Schema {
            node: SchemaNode::scalar(Kind::Number, name),
        }
    }

    #[php(defaults(name = None))]
    pub fn boolean(name: Option<String>) -> Schema {
        Schema {
            node: SchemaNode::scalar(Kind::Boolean, name),
        }
    }

    #[php(name = "null", defaults(name = None))]
    pub fn null_schema(name: Option<String>) -> Schema {
        Schema {
            node: SchemaNode::scalar(Kind::Null, name),
        }
    }

    /// A list whose items all match `items`.
    #[php(name = "array", defaults(name = None))]
    pub fn array_of(items: &Schema, name: Option<String>) -> PhpResult<Schema> {
        built(SchemaNode::array(items.node.clone(), name))
    }

    /// One of `values` (strings, numbers, booleans, null, arrays; backed
    /// enum cases count as their values).
    #[php(name = "enum", defaults(name = None))]
    pub fn enum_of(values: &ZendHashTable, name: Option<String>) -> PhpResult<Schema> {
        let items = convert::list_items(values).map_err(|(position, key)| {
            type_error(format!(
                "Schema::enum(): values must be a list; entry {position} has key {key}"
            ))
        })?;
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            out.push(reflect::enum_value(item).map_err(infer_exception)?);
        }
        built(SchemaNode::enumeration(out, name))
    }

    /// A value matching any of `schemas`.
    #[php(defaults(name = None))]
    pub fn any_of(schemas: &ZendHashTable, name: Option<String>) -> PhpResult<Schema> {
        let branches = self::schemas("anyOf", schemas)?
            .into_iter()
            .map(|(_, node)| node)
            .collect();
        built(SchemaNode::any_of(branches, name))
    }

    /// The schema of a class, from its public typed properties (see the
    /// guide, docs/php-schemas.md).
    pub fn from_class(class: &str) -> PhpResult<Schema> {
        reflect::class_schema(class)
            .map(|node| Schema { node })
            .map_err(infer_exception)
    }

    /// Required in the enclosing object (or not).
    #[php(defaults(required = true))]
    pub fn required(&self, required: bool) -> Schema {
        Schema {
            node: self.node.clone().required(required),
        }
    }

    /// Null allowed besides the values of this schema (or not).
    #[php(defaults(nullable = true))]
    pub fn nullable(&self, nullable: bool) -> Schema {
        Schema {
            node: self.node.clone().nullable(nullable),
        }
    }

    pub fn description(&self, text: String) -> Schema {
        Schema {
            node: self.node.clone().description(&text),
        }
    }

    pub fn min_length(&self, n: i64) -> PhpResult<Schema> {
        self.count("minLength", n)
    }

    pub fn max_length(&self, n: i64) -> PhpResult<Schema> {
        self.count("maxLength", n)
    }

    /// An ECMAScript regular expression the string must contain a match of
    /// (anchor it with `^…$` to match the whole string).
    pub fn pattern(&self, regex: String) -> PhpResult<Schema> {
        self.with("pattern", Value::from(regex))
    }

    /// `date`, `date-time`, `email`, `uuid`, … (docs/structured-output.md lists them).
    pub fn format(&self, format: String) -> PhpResult<Schema> {
        self.with("format", Value::from(format))
    }

    pub fn minimum(&self, n: &Zval) -> PhpResult<Schema> {
        self.numeric("minimum", n)
    }

    pub fn maximum(&self, n: &Zval) -> PhpResult<Schema> {
        self.numeric("maximum", n)
    }

    pub fn exclusive_minimum(&self, n: &Zval) -> PhpResult<Schema> {
        self.numeric("exclusiveMinimum", n)
    }

    pub fn exclusive_maximum(&self, n: &Zval) -> PhpResult<Schema> {
        self.numeric("exclusiveMaximum", n)
    }

    pub fn multiple_of(&self, n: &Zval) -> PhpResult<Schema> {
        self.numeric("multipleOf", n)
    }

    pub fn min_items(&self, n: i64) -> PhpResult<Schema> {
        self.count("minItems", n)
    }

    pub fn max_items(&self, n: i64) -> PhpResult<Schema> {
        self.count("maxItems", n)
    }

    #[php(defaults(unique = true))]
    pub fn unique_items(&self, unique: bool) -> PhpResult<Schema> {
        self.with("uniqueItems", Value::from(unique))
    }

    /// The property name, if any.
    pub fn name(&self) -> Option<String> {
        self.node.name().map(str::to_owned)
    }

    pub fn is_required(&self) -> bool {
        self.node.is_required()
    }

    /// The JSON Schema as a PHP array.
    pub fn to_array(&self) -> PhpResult<Zval> {
        convert::json_to_zval(&self.node.to_value()).map_err(infer_exception)
    }

    /// The JSON Schema as JSON text.
    pub fn to_json(&self) -> String {
        self.node.to_value().to_string()
    }

    pub fn json_serialize(&self) -> PhpResult<Zval> {
        self.to_array()
    }
}
