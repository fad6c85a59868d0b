//! Record types (a class with typed fields, read by the binding from PHP's
//! reflection) and the JSON Schema of one: each field a property, required
//! unless it has a default, nested records inline, a record that contains
//! itself through a definition in `$defs`.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::builder::{BuildError, Kind, SchemaNode};

/// The type of a field.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldType {
    String,
    Integer,
    Number,
    Boolean,
    Null,
    /// A date and time written as a string (`format: date-time` unless a
    /// constraint gives another format), read into `type_name`.
    DateTime {
        type_name: String,
    },
    /// One of `values`: the values of the enum `type_name` (`backed`), or
    /// its case names.
    Enum {
        type_name: String,
        backed: bool,
        values: Vec<Value>,
    },
    /// Another record, by its name in [`Records`].
    Record(String),
    List(Box<FieldType>),
    Nullable(Box<FieldType>),
    /// One of several types (scalars: at most one record, told apart by
    /// being an object).
    Union(Vec<FieldType>),
}

/// A field: its type, whether it may be left out (it has a default), and
/// what describes and constrains it.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub name: String,
    pub ty: FieldType,
    pub optional: bool,
    pub description: Option<String>,
    /// JSON Schema keywords and values (`minimum`, `pattern`, …).
    pub constraints: Vec<(String, Value)>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub name: String,
    pub description: Option<String>,
    pub fields: Vec<Field>,
}

/// Every record a root record reaches, by name.
pub type Records = BTreeMap<String, Record>;

/// A field (or, with no field, a record) whose schema cannot be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}", self.describe())]
pub struct FieldError {
    pub record: String,
    pub field: String,
    pub source: Box<BuildError>,
}

impl FieldError {
    fn describe(&self) -> String {
        if self.field.is_empty() {
            format!("{}: {}", self.record, self.source)
        } else {
            format!("{}::${}: {}", self.record, self.field, self.source.detail())
        }
    }
}

/// The schema of `root`, a record of `records`.
pub fn schema(root: &str, records: &Records) -> Result<SchemaNode, FieldError> {
    let mut walk = Walk {
        records,
        stack: Vec::new(),
        recursive: BTreeSet::new(),
    };
    walk.record(root, None)
}

struct Walk<'a> {
    records: &'a Records,
    stack: Vec<String>,
    /// Records met again while being built: they live in `$defs`.
    recursive: BTreeSet<String>,
}

/// The name of a record's definition: its class name, `\` as `.`.
pub fn definition_name(record: &str) -> String {
    record.trim_start_matches('\\').replace('\\', ".")
}

impl Walk<'_> {
    fn record(&mut self, name: &str, prop: Option<String>) -> Result<SchemaNode, FieldError> {
        let def = definition_name(name);
        if self.stack.iter().any(|r| r == name) {
            self.recursive.insert(name.to_owned());
            return Ok(SchemaNode::reference(Kind::Object, &def, prop));
        }
        let Some(record) = self.records.get(name) else {
            return Err(FieldError {
                record: self.stack.last().cloned().unwrap_or_default(),
                field: prop.unwrap_or_default(),
                source: Box::new(BuildError::Schema {
                    at: format!("class {name}"),
                    detail: "was not read".to_owned(),
                }),
            });
        };
        self.stack.push(name.to_owned());
        let mut props = Vec::with_capacity(record.fields.len());
        for field in &record.fields {
            let mut node = self.field_type(&field.ty, field, Some(field.name.clone()))?;
            if let Some(d) = &field.description {
                node = node.description(d);
            }
            props.push((None, node.required(!field.optional)));
        }
        self.stack.pop();
        let fail = |source| FieldError {
            record: name.to_owned(),
            field: String::new(),
            source: Box::new(source),
        };
        let mut node = SchemaNode::object(props, None).map_err(fail)?;
        if let Some(d) = &record.description {
            node = node.description(d);
        }
        if self.recursive.remove(name) {
            node = SchemaNode::reference(Kind::Object, &def, None)
                .with_definition(&def, node)
                .map_err(fail)?;
        }
        Ok(node.named(prop))
    }

    /// The schema of `ty`, with `field`'s constraints applied where they
    /// belong (the outermost list, or the value inside a nullable).
    fn field_type(
        &mut self,
        ty: &FieldType,
        field: &Field,
        prop: Option<String>,
    ) -> Result<SchemaNode, FieldError> {
        let record = self.stack.last().cloned().unwrap_or_default();
        let fail = |source| FieldError {
            record: record.clone(),
            field: field.name.clone(),
            source: Box::new(source),
        };
        let scalar = |kind| SchemaNode::scalar(kind, prop.clone());
        let node = match ty {
            FieldType::Nullable(inner) => {
                return Ok(self.field_type(inner, field, prop)?.nullable(true));
            }
            FieldType::String => scalar(Kind::String),
            FieldType::Integer => scalar(Kind::Integer),
            FieldType::Number => scalar(Kind::Number),
            FieldType::Boolean => scalar(Kind::Boolean),
            FieldType::Null => scalar(Kind::Null),
            FieldType::DateTime { .. } => {
                let node = scalar(Kind::String);
                if field.constraints.iter().any(|(k, _)| k == "format") {
                    node
                } else {
                    node.constrain("format", Value::from("date-time"))
                        .map_err(fail)?
                }
            }
            FieldType::Enum { values, .. } => {
                SchemaNode::enumeration(values.clone(), prop.clone()).map_err(fail)?
            }
            FieldType::Record(name) => {
                let node = self.record(name, prop.clone())?;
                return apply(node, field).map_err(fail);
            }
            FieldType::List(item) => {
                let item = self.element(item, field)?;
                SchemaNode::array(item, prop.clone()).map_err(fail)?
            }
            FieldType::Union(types) => {
                let mut branches = Vec::with_capacity(types.len());
                for t in types {
                    branches.push(self.element(t, field)?);
                }
                SchemaNode::any_of(branches, prop.clone()).map_err(fail)?
            }
        };
        apply(node, field).map_err(fail)
    }

    /// The schema of a list's items or a union's member: no name, no
    /// constraints of the field.
    fn element(&mut self, ty: &FieldType, field: &Field) -> Result<SchemaNode, FieldError> {
        let bare = Field {
            constraints: Vec::new(),
            ..field.clone()
        };
        self.field_type(ty, &bare, None)
    }
}

/// `field`'s constraints on `node`.
fn apply(mut node: SchemaNode, field: &Field) -> Result<SchemaNode, BuildError> {
    for (keyword, value) in &field.constraints {
        node = node.constrain(keyword, value.clone())?;
    }
    Ok(node)
}
