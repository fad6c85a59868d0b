//! Array keywords: `items` (draft 4 tuple form included), `prefixItems`,
//! `minItems`, `maxItems`.

use serde_json::{Map, Value};

use super::{counts, invalid, wrong, Ctx};
use crate::schema::error::SchemaError;
use crate::schema::ir::{ArrNode, Node};

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
                // Draft 4 tuple form: no further items (a subset of its "any further items").
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
                items = Node::Never;
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
