//! Object keywords: `properties`, `required`, `additionalProperties`,
//! `minProperties`, `maxProperties`, with the converter's object defaults.

use serde_json::{Map, Value};

use super::{counts, err, escape_pointer, wrong, Ctx, MAX_NAME_CHARS};
use crate::schema::error::{ErrorKind, SchemaError};
use crate::schema::ir::{Node, ObjNode, Prop};
use crate::schema::options::ObjectDefaults;

impl<'a> Ctx<'a> {
    pub(super) fn object(
        &mut self,
        map: &'a Map<String, Value>,
        ptr: &str,
        depth: usize,
    ) -> Result<Node, SchemaError> {
        let (min_props, max_props) = counts(map, ptr, "minProperties", "maxProperties")?;
        // What an absent `required` / `additionalProperties` means. An
        // object that declares no property at all is open whatever the
        // policy: closed, it could only be `{}`, which is never what such a
        // schema's author means (`{"type": "object", "minProperties": 1}`
        // would match nothing).
        let declares = map.get("properties").is_some_and(|v| match v {
            Value::Object(props) => !props.is_empty(),
            other => !self.is_empty_map(other),
        }) || map.contains_key("patternProperties");
        let (required_by_default, closed_by_default) = match self.object_defaults {
            ObjectDefaults::Strict => (true, declares),
        };
        let additional = match map.get("additionalProperties") {
            None if closed_by_default => Node::Never,
            None => Node::Any,
            Some(Value::Bool(false)) => Node::Never,
            Some(v) => self.schema(v, &format!("{ptr}/additionalProperties"), depth + 1)?,
        };
        // A key that is required but not declared: JSON Schema lets it take
        // any value unless additionalProperties says otherwise.
        let undeclared = if map.contains_key("additionalProperties") {
            additional.clone()
        } else {
            Node::Any
        };
        let required: Option<Vec<String>> = match map.get("required") {
            None => None,
            Some(Value::Array(names)) => {
                let mut out: Vec<String> = Vec::with_capacity(names.len());
                for n in names {
                    let Value::String(name) = n else {
                        return Err(wrong(ptr, "required", "an array of strings"));
                    };
                    if !out.contains(name) {
                        out.push(name.clone());
                    }
                }
                Some(out)
            }
            Some(_) => return Err(wrong(ptr, "required", "an array of strings")),
        };
        let mut props = Vec::new();
        if let Some(v) = map.get("properties").filter(|v| !self.is_empty_map(v)) {
            let Value::Object(declared) = v else {
                return Err(wrong(ptr, "properties", "an object of schemas"));
            };
            for (name, s) in declared {
                if name.chars().count() > MAX_NAME_CHARS {
                    return Err(err(
                        ptr,
                        ErrorKind::TooLarge {
                            keyword: "properties".to_owned(),
                            value: format!(
                                "a property name of {} characters",
                                name.chars().count()
                            ),
                            limit: MAX_NAME_CHARS as u64,
                        },
                    ));
                }
                let node = self.schema(
                    s,
                    &format!("{ptr}/properties/{}", escape_pointer(name)),
                    depth + 1,
                )?;
                let is_required = required
                    .as_ref()
                    .map_or(required_by_default, |r| r.contains(name));
                props.push(Prop {
                    name: name.clone(),
                    node,
                    required: is_required,
                    implicit: required.is_none() && required_by_default,
                });
            }
        }
        for name in required.iter().flatten() {
            if !props.iter().any(|p| &p.name == name) {
                props.push(Prop {
                    name: name.clone(),
                    node: undeclared.clone(),
                    required: true,
                    implicit: false,
                });
            }
        }
        // A property no value can satisfy is forbidden; the object is
        // unsatisfiable only if `required` asks for it explicitly.
        for p in &mut props {
            if p.required && p.node == Node::Never {
                if !p.implicit {
                    return Ok(Node::Never);
                }
                p.required = false;
            }
        }
        Ok(Node::Obj(ObjNode {
            props,
            additional: Box::new(additional),
            min_props,
            max_props,
            open_by_default: closed_by_default && !map.contains_key("additionalProperties"),
        }))
    }
}
