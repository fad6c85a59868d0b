//! Serialising a JSON instance the way a grammar from llama.cpp's own
//! JSON-schema converter (`common/json-schema-to-grammar.cpp`) requires it,
//! so that the baseline is not charged for key order.
//!
//! llama.cpp's grammars fix the order of object keys: the required properties
//! first, in the schema's order, then the optional ones in the schema's order
//! (any subset of them), then — where `additionalProperties` allows — any
//! other keys. Inside `allOf` the properties of every direct component are
//! required and those of an `anyOf` component optional, in the order the
//! components list them (and no other keys). `const` and `enum` values are
//! literal texts in the schema's own key order. This module mirrors the
//! converter's reading of a schema (`common/json-schema.cpp`,
//! `common_chat_schema_from_json`) closely enough to reorder each object of an
//! instance recursively; where a value can match several `anyOf`
//! alternatives that order keys differently, every distinct serialisation is
//! returned (at most [`MAX_CANDIDATES`]) and the instance counts as accepted
//! when any of them is. Where the schema cannot be followed (an unresolvable
//! `$ref`, a non-object schema), the instance's own order is kept and the
//! instance is counted as a fallback.
//!
//! Whitespace needs no care: every `space` of those grammars is optional, so
//! compact JSON is accepted.

use serde_json::{Map, Value};

/// The most serialisations tried for one instance.
pub const MAX_CANDIDATES: usize = 8;

/// How deep `$ref` chains and schema nesting are followed.
const MAX_DEPTH: usize = 200;

/// The serialisations of one instance for the baseline's grammar.
pub struct Ordered {
    /// Distinct texts, the first being the most likely one.
    pub texts: Vec<String>,
    /// Some part of the instance kept its own key order because the schema
    /// could not be followed there.
    pub fallback: bool,
    /// More than [`MAX_CANDIDATES`] serialisations were possible; the rest
    /// were not tried.
    pub capped: bool,
}

/// Serialise `instance` for the grammar llama.cpp's converter makes of `root`.
pub fn order(root: &Value, instance: &Value) -> Ordered {
    let mut walker = Walker {
        root,
        fallback: false,
        capped: false,
    };
    let texts = walker.value(instance, root, 0);
    Ordered {
        texts,
        fallback: walker.fallback,
        capped: walker.capped,
    }
}

/// How llama.cpp's converter reads one schema node (`build_node`).
enum Kind {
    /// Accepts any JSON value with its keys in any order.
    Any,
    /// A `$ref` into the document.
    Ref(String),
    /// `anyOf` / `oneOf`, or a `type` array expanded to one schema per type.
    AnyOf(Vec<Value>),
    AllOf(Vec<Value>),
    Const(Value),
    Enum(Vec<Value>),
    /// An object schema: the node itself carries `properties`, `required`
    /// and `additionalProperties`.
    Object,
    /// `items` as one schema (or absent: any item).
    Array(Option<Value>),
    /// `items` (or `prefixItems`) as an array of schemas.
    Tuple(Vec<Value>),
    /// Strings, numbers, booleans, null: no keys to order.
    Scalar,
    /// Not something the converter accepts here.
    Invalid,
}

fn kind(schema: &Value) -> Kind {
    let Some(s) = schema.as_object() else {
        return Kind::Invalid;
    };
    if let Some(r) = s.get("$ref") {
        return r
            .as_str()
            .map_or(Kind::Invalid, |r| Kind::Ref(r.to_owned()));
    }
    if let Some(alts) = s.get("oneOf").or_else(|| s.get("anyOf")) {
        return alts
            .as_array()
            .map_or(Kind::Invalid, |a| Kind::AnyOf(a.clone()));
    }
    let ty = s.get("type");
    if let Some(types) = ty.and_then(Value::as_array) {
        let alts = types
            .iter()
            .map(|t| {
                let mut alt = s.clone();
                alt.insert("type".to_owned(), t.clone());
                Value::Object(alt)
            })
            .collect();
        return Kind::AnyOf(alts);
    }
    if let Some(c) = s.get("const") {
        return Kind::Const(c.clone());
    }
    if let Some(values) = s.get("enum") {
        return values
            .as_array()
            .map_or(Kind::Invalid, |v| Kind::Enum(v.clone()));
    }
    let type_name = match ty {
        None | Some(Value::Null) => "",
        Some(Value::String(t)) => t.as_str(),
        Some(_) => return Kind::Invalid,
    };
    let has_properties = s.contains_key("properties")
        || s.get("additionalProperties")
            .is_some_and(|a| a != &Value::Bool(true));
    let all_of = || {
        s.get("allOf")
            .and_then(Value::as_array)
            .map_or(Kind::Invalid, |a| Kind::AllOf(a.clone()))
    };
    match type_name {
        "" => {
            if has_properties {
                Kind::Object
            } else if s.contains_key("allOf") {
                all_of()
            } else if s.contains_key("items") || s.contains_key("prefixItems") {
                array(s)
            } else {
                // A string (pattern, length, format) or anything at all;
                // neither has keys to order.
                Kind::Any
            }
        }
        "object" if !has_properties && s.contains_key("allOf") => all_of(),
        "object" => Kind::Object,
        "string" if s.contains_key("allOf") => all_of(),
        "array" => array(s),
        _ => Kind::Scalar,
    }
}

fn array(s: &Map<String, Value>) -> Kind {
    match s.get("items").or_else(|| s.get("prefixItems")) {
        None => Kind::Array(None),
        Some(Value::Array(items)) => Kind::Tuple(items.clone()),
        Some(items) => Kind::Array(Some(items.clone())),
    }
}

/// The named properties of an object schema (schema order), which of them
/// are required, and the schema of other keys (`None`: not allowed).
struct ObjectShape {
    properties: Vec<(String, Value)>,
    required: Vec<String>,
    additional: Option<Value>,
}

fn object_shape(schema: &Value) -> ObjectShape {
    let required: Vec<String> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let properties: Vec<(String, Value)> = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default();
    let any = Value::Object(Map::new());
    let additional = match schema.get("additionalProperties") {
        Some(Value::Bool(true)) => Some(any),
        Some(Value::Bool(false)) => None,
        Some(other) => Some(other.clone()),
        None if schema.get("properties").is_none() => Some(any),
        None => None,
    };
    ObjectShape {
        properties,
        required,
        additional,
    }
}

struct Walker<'r> {
    root: &'r Value,
    fallback: bool,
    capped: bool,
}

impl<'r> Walker<'r> {
    /// `$ref` resolution as llama.cpp does it: `#/a/b/0`, no `~` escapes.
    fn resolve(&self, reference: &str) -> Option<&'r Value> {
        let path = reference.strip_prefix("#/")?;
        let mut target = self.root;
        for token in path.split('/') {
            target = match target {
                Value::Object(o) => o.get(token)?,
                Value::Array(a) => a.get(token.parse::<usize>().ok()?)?,
                _ => return None,
            };
        }
        Some(target)
    }

    fn compact(v: &Value) -> String {
        v.to_string()
    }

    fn value(&mut self, v: &Value, schema: &Value, depth: usize) -> Vec<String> {
        if depth > MAX_DEPTH {
            self.fallback = true;
            return vec![Self::compact(v)];
        }
        match kind(schema) {
            Kind::Invalid => {
                self.fallback = true;
                vec![Self::compact(v)]
            }
            Kind::Any | Kind::Scalar => vec![Self::compact(v)],
            Kind::Ref(r) => match self.resolve(&r) {
                Some(target) => self.value(v, target, depth + 1),
                None => {
                    self.fallback = true;
                    vec![Self::compact(v)]
                }
            },
            Kind::AnyOf(alts) => {
                let fitting: Vec<&Value> = alts
                    .iter()
                    .filter(|a| self.may_fit(v, a, depth + 1))
                    .collect();
                let chosen: Vec<&Value> = if fitting.is_empty() {
                    alts.iter().collect()
                } else {
                    fitting
                };
                let mut out = Vec::new();
                for alt in chosen {
                    let texts = self.value(v, alt, depth + 1);
                    self.merge(&mut out, texts);
                }
                out
            }
            Kind::Const(c) => vec![literal(v, std::slice::from_ref(&c))],
            Kind::Enum(values) => vec![literal(v, &values)],
            Kind::Object => match v.as_object() {
                Some(o) => {
                    let shape = object_shape(schema);
                    self.object(o, &shape, depth)
                }
                None => vec![Self::compact(v)],
            },
            Kind::AllOf(children) => self.all_of(v, &children, depth),
            Kind::Array(items) => match v.as_array() {
                Some(a) => {
                    let any = Value::Object(Map::new());
                    let item_schema = items.as_ref().unwrap_or(&any);
                    let parts: Vec<Vec<String>> = a
                        .iter()
                        .map(|item| self.value(item, item_schema, depth + 1))
                        .collect();
                    self.join("[", "]", parts)
                }
                None => vec![Self::compact(v)],
            },
            Kind::Tuple(items) => match v.as_array() {
                Some(a) => {
                    let any = Value::Object(Map::new());
                    let parts: Vec<Vec<String>> = a
                        .iter()
                        .enumerate()
                        .map(|(i, item)| self.value(item, items.get(i).unwrap_or(&any), depth + 1))
                        .collect();
                    self.join("[", "]", parts)
                }
                None => vec![Self::compact(v)],
            },
        }
    }

    /// An object in the order `_build_object_rule` emits: required
    /// properties, optional ones, then other keys in the instance's order.
    fn object(&mut self, o: &Map<String, Value>, shape: &ObjectShape, depth: usize) -> Vec<String> {
        let is_required = |k: &str| shape.required.iter().any(|r| r == k);
        let mut keys: Vec<(&str, Option<&Value>)> = Vec::with_capacity(o.len());
        let mut seen = std::collections::HashSet::new();
        for pass_required in [true, false] {
            for (name, prop) in &shape.properties {
                if is_required(name) == pass_required && o.contains_key(name) && seen.insert(name) {
                    keys.push((name, Some(prop)));
                }
            }
        }
        for k in o.keys() {
            if !shape.properties.iter().any(|(name, _)| name == k) {
                keys.push((k, shape.additional.as_ref()));
            }
        }
        let any = Value::Object(Map::new());
        let parts: Vec<Vec<String>> = keys
            .iter()
            .filter_map(|(k, s)| {
                let value = o.get(*k)?;
                let key = Value::String((*k).to_owned()).to_string();
                let texts = self.value(value, s.unwrap_or(&any), depth + 1);
                Some(texts.into_iter().map(|t| format!("{key}:{t}")).collect())
            })
            .collect();
        self.join("{", "}", parts)
    }

    /// `_visit_all_of`: the properties of every component (those of `anyOf`
    /// alternatives optional), or the values common to all `enum`s.
    fn all_of(&mut self, v: &Value, children: &[Value], depth: usize) -> Vec<String> {
        let mut properties: Vec<(String, Value)> = Vec::new();
        let mut required: Vec<String> = Vec::new();
        let mut enum_values: Vec<(String, Value, usize)> = Vec::new();
        for child in children {
            match kind(child) {
                Kind::AnyOf(alts) => {
                    for alt in &alts {
                        self.component(
                            alt,
                            false,
                            &mut properties,
                            &mut required,
                            &mut enum_values,
                            depth + 1,
                        );
                    }
                }
                _ => self.component(
                    child,
                    true,
                    &mut properties,
                    &mut required,
                    &mut enum_values,
                    depth + 1,
                ),
            }
        }
        if !enum_values.is_empty() {
            let common: Vec<Value> = enum_values
                .iter()
                .filter(|(_, _, n)| *n == children.len())
                .map(|(_, value, _)| value.clone())
                .collect();
            if !common.is_empty() {
                return vec![literal(v, &common)];
            }
        }
        let Some(o) = v.as_object() else {
            return vec![Self::compact(v)];
        };
        // A name listed twice keeps its first place; its value follows the
        // last schema given for it, as the converter's rule table does.
        let mut merged: Vec<(String, Value)> = Vec::new();
        for (name, schema) in properties {
            match merged.iter_mut().find(|(n, _)| *n == name) {
                Some(slot) => slot.1 = schema,
                None => merged.push((name, schema)),
            }
        }
        let shape = ObjectShape {
            properties: merged,
            required,
            additional: None,
        };
        self.object(o, &shape, depth)
    }

    #[allow(clippy::too_many_arguments)]
    fn component(
        &mut self,
        schema: &Value,
        is_required: bool,
        properties: &mut Vec<(String, Value)>,
        required: &mut Vec<String>,
        enum_values: &mut Vec<(String, Value, usize)>,
        depth: usize,
    ) {
        if depth > MAX_DEPTH {
            self.fallback = true;
            return;
        }
        match kind(schema) {
            Kind::Ref(r) => match self.resolve(&r) {
                Some(target) => {
                    let target = target.clone();
                    self.component(
                        &target,
                        is_required,
                        properties,
                        required,
                        enum_values,
                        depth + 1,
                    );
                }
                None => self.fallback = true,
            },
            Kind::Object => {
                for (name, prop) in object_shape(schema).properties {
                    if is_required {
                        required.push(name.clone());
                    }
                    properties.push((name, prop));
                }
            }
            Kind::Enum(values) => {
                for value in values {
                    let text = value.to_string();
                    match enum_values.iter_mut().find(|(t, _, _)| *t == text) {
                        Some(slot) => slot.2 += 1,
                        None => enum_values.push((text, value, 1)),
                    }
                }
            }
            _ => {}
        }
    }

    /// Whether `v` may match `schema` by its JSON type alone.
    fn may_fit(&self, v: &Value, schema: &Value, depth: usize) -> bool {
        if depth > MAX_DEPTH {
            return true;
        }
        match kind(schema) {
            Kind::Any | Kind::Invalid => true,
            Kind::Ref(r) => self
                .resolve(&r)
                .is_none_or(|t| self.may_fit(v, t, depth + 1)),
            Kind::AnyOf(alts) => alts.iter().any(|a| self.may_fit(v, a, depth + 1)),
            Kind::AllOf(_) => true,
            Kind::Const(c) => &c == v,
            Kind::Enum(values) => values.contains(v),
            Kind::Object => v.is_object(),
            Kind::Array(_) | Kind::Tuple(_) => v.is_array(),
            Kind::Scalar => {
                let ty = schema.get("type").and_then(Value::as_str).unwrap_or("");
                match ty {
                    "string" => v.is_string(),
                    "integer" => v.is_i64() || v.is_u64(),
                    "number" => v.is_number(),
                    "boolean" => v.is_boolean(),
                    "null" => v.is_null(),
                    _ => true,
                }
            }
        }
    }

    /// Add `texts` to `out`, without duplicates and up to the cap.
    fn merge(&mut self, out: &mut Vec<String>, texts: Vec<String>) {
        for t in texts {
            if out.contains(&t) {
                continue;
            }
            if out.len() == MAX_CANDIDATES {
                self.capped = true;
                return;
            }
            out.push(t);
        }
    }

    /// `open` + the parts joined by commas + `close`, for every combination
    /// of the parts' alternatives (up to the cap).
    fn join(&mut self, open: &str, close: &str, parts: Vec<Vec<String>>) -> Vec<String> {
        let mut acc: Vec<String> = vec![String::new()];
        for (i, alternatives) in parts.into_iter().enumerate() {
            let mut next = Vec::with_capacity(acc.len() * alternatives.len());
            'outer: for prefix in &acc {
                for alt in &alternatives {
                    if next.len() == MAX_CANDIDATES {
                        self.capped = true;
                        break 'outer;
                    }
                    let sep = if i == 0 { "" } else { "," };
                    next.push(format!("{prefix}{sep}{alt}"));
                }
            }
            acc = next;
        }
        acc.into_iter()
            .map(|body| format!("{open}{body}{close}"))
            .collect()
    }
}

/// A `const`/`enum` grammar is the literal text of each value, keys in the
/// schema's order: serialise `v` as the value it equals, if any.
fn literal(v: &Value, values: &[Value]) -> String {
    values.iter().find(|c| *c == v).unwrap_or(v).to_string()
}
