//! Array keywords: `items` (draft 4 tuple form and its `additionalItems`
//! included), `prefixItems`, `minItems`, `maxItems`. `additionalItems`
//! beside a single-schema `items` (or none) has no effect, as in JSON Schema.

use serde_json::{Map, Value};

use super::{counts, invalid, wrong, Ctx};
use crate::schema::error::SchemaError;
use crate::schema::ir::{ArrNode, Node};
use crate::schema::options::ObjectDefaults;

impl<'a> Ctx<'a> {
    pub(super) fn array(
        &mut self,
        map: &'a Map<String, Value>,
        ptr: &str,
        depth: usize,
    ) -> Result<ArrNode, SchemaError> {
        let (min_items, max_items) = counts(map, ptr, "minItems", "maxItems")?;
        let mut prefix = Vec::new();
        let mut items = Node::Any;
        if let Some(v) = map.get("prefixItems") {
            let Value::Array(list) = v else {
                return Err(wrong(ptr, "prefixItems", "an array of schemas"));
            };
            for (i, s) in list.iter().enumerate() {
                prefix.push(self.schema(s, &format!("{ptr}/prefixItems/{i}"), depth + 1)?);
            }
        }
        match map.get("items") {
            None => {}
            Some(v) if self.is_empty_map(v) => {}
            Some(Value::Array(list)) => {
                // Draft 4 tuple form: further items take `additionalItems`;
                // without it, none are written under the strict defaults (a
                // subset of JSON Schema's "any further items").
                if !prefix.is_empty() {
                    return Err(invalid(
                        ptr,
                        "items",
                        "is an array while prefixItems is also given".to_owned(),
                    ));
                }
                for (i, s) in list.iter().enumerate() {
                    prefix.push(self.schema(s, &format!("{ptr}/items/{i}"), depth + 1)?);
                }
                items = match map.get("additionalItems") {
                    Some(v) => self.schema(v, &format!("{ptr}/additionalItems"), depth + 1)?,
                    None if self.object_defaults == ObjectDefaults::JsonSchema => Node::Any,
                    None => Node::Never,
                };
            }
            Some(s) => items = self.schema(s, &format!("{ptr}/items"), depth + 1)?,
        }
        Ok(ArrNode {
            prefix,
            items: Box::new(items),
            min_items,
            max_items,
        })
    }
}
