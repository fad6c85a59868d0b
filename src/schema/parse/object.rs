//! Object keywords: `properties`, `required`, `additionalProperties`,
//! `minProperties`, `maxProperties`, with the converter's object defaults.

use serde_json::{Map, Value};

use super::{counts, err, escape_pointer, invalid, wrong, Ctx, MAX_NAME_CHARS};
use crate::schema::error::{ErrorKind, SchemaError};
use crate::schema::ir::{self, KeyLang, Node, ObjNode, Prop};
use crate::schema::lang::Re;
use crate::schema::options::ObjectDefaults;
use crate::schema::regex;

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
            ObjectDefaults::JsonSchema => (false, false),
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
        let patterns = self.pattern_properties(map, ptr, depth)?;
        let mut tests: Vec<Option<Node>> = vec![None; patterns.len()];
        let names = self.property_names(map, ptr, depth)?;
        // A declared or required key takes the schemas of the patterns it
        // matches too; one that propertyNames refuses is forbidden.
        for p in &mut props {
            if names.as_ref().is_some_and(|n| !n.dfa.matches(&p.name)) {
                p.node = Node::Never;
                continue;
            }
            let declared = map
                .get("properties")
                .and_then(Value::as_object)
                .is_some_and(|d| d.contains_key(&p.name));
            let mut matched = false;
            for (k, (_, lang, node, raw)) in patterns.iter().enumerate() {
                if lang.dfa.matches(&p.name) {
                    p.node = if declared || matched {
                        // The property has its shape already: the pattern's
                        // schema is a test of its value, read as a validator
                        // reads it (`{"properties": …}` does not make a number
                        // an object).
                        let test = match &tests[k] {
                            Some(t) => t.clone(),
                            None => {
                                let at = format!(
                                    "{ptr}/patternProperties/{}",
                                    escape_pointer(&patterns[k].0)
                                );
                                let t = self.as_test(raw, &at, depth + 1)?;
                                tests[k] = Some(t.clone());
                                t
                            }
                        };
                        self.merge(&p.node, &test, ptr, "patternProperties")?
                    } else {
                        node.clone()
                    };
                    matched = true;
                }
            }
        }
        let patterns: Vec<(String, KeyLang, Node)> = patterns
            .into_iter()
            .map(|(pattern, lang, node, _)| (pattern, lang, node))
            .collect();
        let regions = self.regions(&patterns, names.as_ref(), ptr)?;
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
        // More properties required by the strict reading than
        // `maxProperties` allows: the implicit ones become optional (as
        // JSON Schema has them), so that any allowed number is written.
        let required = props.iter().filter(|p| p.required).count() as u64;
        if max_props.is_some_and(|m| required > m) {
            for p in props.iter_mut().filter(|p| p.implicit) {
                p.required = false;
            }
        }
        let node = Node::Obj(ObjNode {
            props,
            additional: Box::new(additional),
            min_props,
            max_props,
            open_by_default: closed_by_default && !map.contains_key("additionalProperties"),
            regions,
            names,
        });
        self.dependencies(map, node, ptr, depth)
    }

    /// Each `patternProperties` entry: the pattern, its language, its schema
    /// (and the schema as written).
    fn pattern_properties(
        &mut self,
        map: &'a Map<String, Value>,
        ptr: &str,
        depth: usize,
    ) -> Result<Vec<(String, KeyLang, Node, &'a Value)>, SchemaError> {
        let Some(v) = map.get("patternProperties") else {
            return Ok(Vec::new());
        };
        let Value::Object(entries) = v else {
            return Err(wrong(ptr, "patternProperties", "an object of schemas"));
        };
        let mut out = Vec::with_capacity(entries.len());
        for (pattern, s) in entries {
            let at = format!("{ptr}/patternProperties/{}", escape_pointer(pattern));
            let re = regex::pattern_to_re(pattern).map_err(|e| {
                err(
                    &at,
                    ErrorKind::Pattern {
                        pattern: pattern.clone(),
                        reason: e.to_string(),
                    },
                )
            })?;
            let lang =
                KeyLang::new(re).map_err(|e| invalid(&at, "patternProperties", e.to_string()))?;
            let node = self.schema(s, &at, depth + 1)?;
            out.push((pattern.clone(), lang, node, s));
        }
        Ok(out)
    }

    /// The language of `propertyNames`.
    fn property_names(
        &mut self,
        map: &'a Map<String, Value>,
        ptr: &str,
        depth: usize,
    ) -> Result<Option<KeyLang>, SchemaError> {
        let Some(v) = map.get("propertyNames") else {
            return Ok(None);
        };
        let at = format!("{ptr}/propertyNames");
        let node = self.schema(v, &at, depth + 1)?;
        let re = ir::key_re(&node, &self.defs)
            .map_err(|reason| invalid(&at, "propertyNames", reason))?;
        KeyLang::new(re)
            .map(Some)
            .map_err(|e| invalid(&at, "propertyNames", e.to_string()))
    }

    /// The languages of undeclared keys by the patterns they match, each
    /// with the merged schemas of those patterns. Keys that match none
    /// are left to `additionalProperties`.
    fn regions(
        &mut self,
        patterns: &[(String, KeyLang, Node)],
        names: Option<&KeyLang>,
        ptr: &str,
    ) -> Result<Vec<ir::Region>, SchemaError> {
        if patterns.is_empty() {
            return Ok(Vec::new());
        }
        let base = names.map_or_else(Re::any_string, |n| n.re.clone());
        // (the languages met, the merged schema if a pattern matched)
        let mut regions: Vec<(Vec<Re>, Option<Node>)> = vec![(vec![base], None)];
        for (_, lang, node) in patterns {
            let mut next = Vec::with_capacity(regions.len() * 2);
            for (parts, merged) in regions {
                let mut inside = parts.clone();
                inside.push(lang.re.clone());
                let mut outside = parts;
                outside.push(lang.re.clone().complement());
                let possible = |parts: &[Re]| -> Result<bool, SchemaError> {
                    KeyLang::new(Re::And(parts.to_vec()))
                        .map(|lang| !lang.dfa.is_empty())
                        .map_err(|e| invalid(ptr, "patternProperties", e.to_string()))
                };
                // Schemas are merged only where keys can match both.
                if possible(&inside)? {
                    let inside_node = match &merged {
                        Some(m) => self.merge(m, node, ptr, "patternProperties")?,
                        None => node.clone(),
                    };
                    next.push((inside, Some(inside_node)));
                }
                if possible(&outside)? {
                    next.push((outside, merged));
                }
            }
            if next.len() > MAX_REGIONS {
                return Err(err(
                    ptr,
                    ErrorKind::TooLarge {
                        keyword: "patternProperties".to_owned(),
                        value: format!("{} overlapping patterns", patterns.len()),
                        limit: MAX_REGIONS as u64,
                    },
                ));
            }
            regions = next;
        }
        let mut out = Vec::new();
        for (parts, merged) in regions {
            if let Some(node) = merged {
                let lang = KeyLang::new(Re::And(parts))
                    .map_err(|e| invalid(ptr, "patternProperties", e.to_string()))?;
                out.push((lang, node));
            }
        }
        Ok(out)
    }
}

/// The most key languages the patterns of one object may split into.
const MAX_REGIONS: usize = 32;
