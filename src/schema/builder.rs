//! A JSON Schema built step by step, the way the binding's fluent `Schema`
//! builds it. Every step is checked when it is taken — the keyword fits the
//! type, bounds are in order, and the converter accepts the result — so a
//! mistake is reported where it is made, naming the property.
//!
//! Objects always say which properties are required and refuse other keys,
//! so a built schema reads the same under either reading of objects
//! ([`super::ObjectDefaults`]).

use std::collections::BTreeSet;

use serde_json::{Map, Number, Value};

use super::ir::json_eq;

/// What a node was built as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Object,
    String,
    Integer,
    Number,
    Boolean,
    Null,
    Array,
    Enum,
    AnyOf,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Object => "object",
            Kind::String => "string",
            Kind::Integer => "integer",
            Kind::Number => "number",
            Kind::Boolean => "boolean",
            Kind::Null => "null",
            Kind::Array => "array",
            Kind::Enum => "enum",
            Kind::AnyOf => "anyOf",
        }
    }

    /// The JSON Schema `type` of a node built as this kind, if it has one.
    fn json_type(self) -> Option<&'static str> {
        match self {
            Kind::Enum | Kind::AnyOf => None,
            other => Some(other.name()),
        }
    }
}

/// A mistake in a schema being built. `at` names the piece: `property
/// "city"`, or `the string schema` when it has no name.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BuildError {
    #[error("{at}: {keyword} applies to {applies} schemas, not to {kind} ones")]
    NotApplicable {
        at: String,
        keyword: &'static str,
        applies: &'static str,
        kind: &'static str,
    },
    #[error("{at}: {keyword} must be {need}, got {got}")]
    BadValue {
        at: String,
        keyword: String,
        need: &'static str,
        got: String,
    },
    #[error("{at}: {low_keyword} {low} is greater than {high_keyword} {high}")]
    Crossed {
        at: String,
        low_keyword: &'static str,
        low: String,
        high_keyword: &'static str,
        high: String,
    },
    #[error("{at}: property {index} has no name (give it one, as in Schema::string('city'), or use a string key)")]
    Unnamed { at: String, index: usize },
    #[error("{at}: property \"{name}\" is given twice")]
    Duplicate { at: String, name: String },
    #[error("{at}: the key \"{key}\" and the name \"{name}\" of its schema differ")]
    NameMismatch {
        at: String,
        key: String,
        name: String,
    },
    #[error("{at}: {keyword} needs at least one {what}")]
    Empty {
        at: String,
        keyword: &'static str,
        what: &'static str,
    },
    #[error("{at}: enum lists {value} twice")]
    Repeated { at: String, value: String },
    #[error("{at}: {detail}")]
    Schema { at: String, detail: String },
}

impl BuildError {
    /// Where the mistake is (`property "city"`, `the string schema`).
    pub fn at(&self) -> &str {
        match self {
            BuildError::NotApplicable { at, .. }
            | BuildError::BadValue { at, .. }
            | BuildError::Crossed { at, .. }
            | BuildError::Unnamed { at, .. }
            | BuildError::Duplicate { at, .. }
            | BuildError::NameMismatch { at, .. }
            | BuildError::Empty { at, .. }
            | BuildError::Repeated { at, .. }
            | BuildError::Schema { at, .. } => at,
        }
    }

    /// What is wrong, without where.
    pub fn detail(&self) -> String {
        let message = self.to_string();
        match message.strip_prefix(&format!("{}: ", self.at())) {
            Some(rest) => rest.to_owned(),
            None => message,
        }
    }
}

/// One schema under construction: immutable, each step returns a new one.
#[derive(Debug, Clone, PartialEq)]
pub struct SchemaNode {
    kind: Kind,
    name: Option<String>,
    required: bool,
    nullable: bool,
    /// The keywords, nullability aside. `$defs` of nested pieces are lifted
    /// to the top, where `#/$defs/…` finds them.
    body: Map<String, Value>,
    /// Definitions referred to below that no `$defs` here holds yet (a
    /// recursive class while it is being built): the node is checked once
    /// they are all in.
    pending: BTreeSet<String>,
}

/// Keywords that take a count (a non-negative integer).
const COUNTS: [&str; 4] = ["minLength", "maxLength", "minItems", "maxItems"];
/// Keywords that take a number.
const NUMBERS: [&str; 5] = [
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
];
/// Keywords that must not exceed their partner.
const PAIRS: [(&str, &str); 3] = [
    ("minLength", "maxLength"),
    ("minItems", "maxItems"),
    ("minimum", "maximum"),
];

impl SchemaNode {
    fn new(kind: Kind, name: Option<String>, body: Map<String, Value>) -> Self {
        Self {
            kind,
            name,
            required: false,
            nullable: false,
            body,
            pending: BTreeSet::new(),
        }
    }

    /// A string, integer, number, boolean or null schema.
    pub fn scalar(kind: Kind, name: Option<String>) -> Self {
        let mut body = Map::new();
        if let Some(t) = kind.json_type() {
            body.insert("type".into(), Value::from(t));
        }
        Self::new(kind, name, body)
    }

    /// An object with `properties`, each named by its key or by its own
    /// name; the ones marked required are required, and no other key is
    /// allowed.
    pub fn object(
        properties: Vec<(Option<String>, SchemaNode)>,
        name: Option<String>,
    ) -> Result<Self, BuildError> {
        let mut node = Self::new(Kind::Object, name, Map::new());
        let at = node.at();
        let mut props = Map::new();
        let mut required = Vec::new();
        for (index, (key, mut child)) in properties.into_iter().enumerate() {
            let prop = match (key, &child.name) {
                (Some(key), Some(name)) if &key != name => {
                    return Err(BuildError::NameMismatch {
                        at,
                        key,
                        name: name.clone(),
                    })
                }
                (Some(key), _) => key,
                (None, Some(name)) => name.clone(),
                (None, None) => return Err(BuildError::Unnamed { at, index }),
            };
            if props.contains_key(&prop) {
                return Err(BuildError::Duplicate { at, name: prop });
            }
            if child.required {
                required.push(Value::from(prop.clone()));
            }
            node.adopt(&mut child);
            props.insert(prop, child.to_value());
        }
        node.body.insert("type".into(), Value::from("object"));
        // An empty `properties` would come back from a PHP array as a list.
        if !props.is_empty() {
            node.body.insert("properties".into(), Value::Object(props));
        }
        node.body.insert("required".into(), Value::Array(required));
        node.body
            .insert("additionalProperties".into(), Value::Bool(false));
        node.checked()
    }

    /// An array whose items all match `items`.
    pub fn array(mut items: SchemaNode, name: Option<String>) -> Result<Self, BuildError> {
        let mut node = Self::new(Kind::Array, name, Map::new());
        node.adopt(&mut items);
        node.body.insert("type".into(), Value::from("array"));
        node.body.insert("items".into(), items.to_value());
        node.checked()
    }

    /// One of `values` (any JSON values, each once).
    pub fn enumeration(values: Vec<Value>, name: Option<String>) -> Result<Self, BuildError> {
        let node = Self::new(Kind::Enum, name, Map::new());
        if values.is_empty() {
            return Err(BuildError::Empty {
                at: node.at(),
                keyword: "enum",
                what: "value",
            });
        }
        for (i, v) in values.iter().enumerate() {
            if values[..i].iter().any(|earlier| json_eq(earlier, v)) {
                return Err(BuildError::Repeated {
                    at: node.at(),
                    value: v.to_string(),
                });
            }
        }
        let mut node = node;
        node.body.insert("enum".into(), Value::Array(values));
        node.checked()
    }

    /// A value matching any of `schemas`.
    pub fn any_of(schemas: Vec<SchemaNode>, name: Option<String>) -> Result<Self, BuildError> {
        let mut node = Self::new(Kind::AnyOf, name, Map::new());
        if schemas.is_empty() {
            return Err(BuildError::Empty {
                at: node.at(),
                keyword: "anyOf",
                what: "schema",
            });
        }
        let mut branches = Vec::with_capacity(schemas.len());
        for mut s in schemas {
            node.adopt(&mut s);
            branches.push(s.to_value());
        }
        node.body.insert("anyOf".into(), Value::Array(branches));
        node.checked()
    }

    /// A reference to the definition `def` (of `kind`), which a `$defs`
    /// above must supply: how a recursive class refers to itself.
    pub fn reference(kind: Kind, def: &str, name: Option<String>) -> Self {
        let mut body = Map::new();
        body.insert("$ref".into(), Value::from(format!("#/$defs/{def}")));
        let mut node = Self::new(kind, name, body);
        node.pending.insert(def.to_owned());
        node
    }

    /// This node with `definition` kept in its `$defs` as `def`.
    pub fn with_definition(
        mut self,
        def: &str,
        mut definition: SchemaNode,
    ) -> Result<Self, BuildError> {
        self.adopt(&mut definition);
        let defs = self
            .body
            .entry("$defs")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(defs) = defs {
            defs.insert(def.to_owned(), definition.to_value());
        }
        self.pending.remove(def);
        self.checked()
    }

    /// The same schema under another name.
    pub fn named(mut self, name: Option<String>) -> Self {
        self.name = name;
        self
    }

    /// Whether the enclosing object requires this property.
    pub fn required(mut self, required: bool) -> Self {
        self.required = required;
        self
    }

    /// Whether null is allowed besides the values of this schema.
    pub fn nullable(mut self, nullable: bool) -> Self {
        self.nullable = nullable;
        self
    }

    pub fn description(mut self, text: &str) -> Self {
        self.body.insert("description".into(), Value::from(text));
        self
    }

    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    pub fn kind(&self) -> Kind {
        self.kind
    }

    pub fn is_required(&self) -> bool {
        self.required
    }

    pub fn is_nullable(&self) -> bool {
        self.nullable
    }

    /// Add one constraint keyword (`minLength`, `pattern`, `minimum`,
    /// `minItems`, `uniqueItems`, …), checked against the type, its partner
    /// bound and the converter.
    pub fn constrain(mut self, keyword: &str, value: Value) -> Result<Self, BuildError> {
        let (keyword, applies, kinds): (&'static str, &'static str, &[Kind]) = match keyword {
            "minLength" => ("minLength", "string", &[Kind::String]),
            "maxLength" => ("maxLength", "string", &[Kind::String]),
            "pattern" => ("pattern", "string", &[Kind::String]),
            "format" => ("format", "string", &[Kind::String]),
            "minimum" => ("minimum", "integer and number", &[Kind::Integer, Kind::Number]),
            "maximum" => ("maximum", "integer and number", &[Kind::Integer, Kind::Number]),
            "exclusiveMinimum" => (
                "exclusiveMinimum",
                "integer and number",
                &[Kind::Integer, Kind::Number],
            ),
            "exclusiveMaximum" => (
                "exclusiveMaximum",
                "integer and number",
                &[Kind::Integer, Kind::Number],
            ),
            "multipleOf" => (
                "multipleOf",
                "integer and number",
                &[Kind::Integer, Kind::Number],
            ),
            "minItems" => ("minItems", "array", &[Kind::Array]),
            "maxItems" => ("maxItems", "array", &[Kind::Array]),
            "uniqueItems" => ("uniqueItems", "array", &[Kind::Array]),
            other => {
                return Err(BuildError::BadValue {
                    at: self.at(),
                    keyword: other.to_owned(),
                    need: "one of minLength, maxLength, pattern, format, minimum, maximum, exclusiveMinimum, exclusiveMaximum, multipleOf, minItems, maxItems, uniqueItems",
                    got: "an unknown constraint".to_owned(),
                })
            }
        };
        if !kinds.contains(&self.kind) {
            return Err(BuildError::NotApplicable {
                at: self.at(),
                keyword,
                applies,
                kind: self.kind.name(),
            });
        }
        self.check_value(keyword, &value)?;
        self.body.insert(keyword.into(), value);
        for (low, high) in PAIRS {
            if let (Some(l), Some(h)) = (self.number(low), self.number(high)) {
                if l > h {
                    return Err(BuildError::Crossed {
                        at: self.at(),
                        low_keyword: low,
                        low: self.body[low].to_string(),
                        high_keyword: high,
                        high: self.body[high].to_string(),
                    });
                }
            }
        }
        self.checked()
    }

    fn check_value(&self, keyword: &'static str, value: &Value) -> Result<(), BuildError> {
        let bad = |need: &'static str| BuildError::BadValue {
            at: self.at(),
            keyword: keyword.to_owned(),
            need,
            got: value.to_string(),
        };
        if COUNTS.contains(&keyword) && value.as_u64().is_none() {
            return Err(bad("a non-negative integer"));
        }
        if NUMBERS.contains(&keyword) && !value.is_number() {
            return Err(bad("a number"));
        }
        if keyword == "multipleOf" && value.as_f64().is_none_or(|m| m <= 0.0) {
            return Err(bad("a number greater than 0"));
        }
        if matches!(keyword, "pattern" | "format") && !value.is_string() {
            return Err(bad("a string"));
        }
        if keyword == "uniqueItems" && !value.is_boolean() {
            return Err(bad("a boolean"));
        }
        Ok(())
    }

    fn number(&self, keyword: &str) -> Option<f64> {
        self.body.get(keyword).and_then(Value::as_f64)
    }

    /// The JSON Schema.
    pub fn to_value(&self) -> Value {
        let mut body = self.body.clone();
        if self.nullable {
            make_nullable(&mut body, self.kind);
        }
        Value::Object(body)
    }

    /// Where this node is, for messages.
    pub fn at(&self) -> String {
        match &self.name {
            Some(name) => format!("property \"{name}\""),
            None => format!("the {} schema", self.kind.name()),
        }
    }

    /// Take `child`'s `$defs` (and what it still waits for) into this node.
    fn adopt(&mut self, child: &mut SchemaNode) {
        if let Some(Value::Object(defs)) = child.body.remove("$defs") {
            let mine = self
                .body
                .entry("$defs")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(mine) = mine {
                for (k, v) in defs {
                    self.pending.remove(&k);
                    mine.insert(k, v);
                }
            }
        }
        let defined = |k: &String| matches!(self.body.get("$defs"), Some(Value::Object(d)) if d.contains_key(k));
        let waiting: Vec<String> = child
            .pending
            .iter()
            .filter(|k| !defined(k))
            .cloned()
            .collect();
        self.pending.extend(waiting);
    }

    /// This node, once the converter accepts it (when nothing it refers to
    /// is still missing).
    fn checked(self) -> Result<Self, BuildError> {
        if self.pending.is_empty() {
            super::compile(&self.to_value()).map_err(|e| BuildError::Schema {
                at: self.at(),
                detail: e.detail(),
            })?;
        }
        Ok(self)
    }
}

/// Let `body` (a schema of `kind`) take null too.
fn make_nullable(body: &mut Map<String, Value>, kind: Kind) {
    match body.get_mut("type") {
        Some(Value::String(t)) if t == "null" => return,
        Some(t @ Value::String(_)) => {
            let name = t.take();
            *t = Value::Array(vec![name, Value::from("null")]);
            return;
        }
        _ => {}
    }
    let list = match kind {
        Kind::Enum => "enum",
        Kind::AnyOf => "anyOf",
        _ => "$ref",
    };
    match (kind, body.get_mut(list)) {
        (Kind::Enum, Some(Value::Array(values))) => {
            if !values.iter().any(Value::is_null) {
                values.push(Value::Null);
            }
        }
        (Kind::AnyOf, Some(Value::Array(branches))) => {
            branches.push(null_schema());
        }
        _ => {
            // A reference: wrap it, keeping its definitions at the top.
            let defs = body.remove("$defs");
            let description = body.remove("description");
            let inner = std::mem::take(body);
            body.insert(
                "anyOf".into(),
                Value::Array(vec![Value::Object(inner), null_schema()]),
            );
            if let Some(d) = description {
                body.insert("description".into(), d);
            }
            if let Some(d) = defs {
                body.insert("$defs".into(), d);
            }
        }
    }
}

fn null_schema() -> Value {
    let mut m = Map::new();
    m.insert("type".into(), Value::from("null"));
    Value::Object(m)
}

/// A finite float as a JSON number (`None` for NaN and the infinities).
pub fn number(f: f64) -> Option<Number> {
    Number::from_f64(f)
}

#[cfg(test)]
mod tests;
