//! Array keywords: `items` (draft 4 tuple form and its `additionalItems`
//! included), `prefixItems`, `minItems`, `maxItems`, `uniqueItems`,
//! `contains` with `minContains`/`maxContains`.
//! `additionalItems` beside a single-schema `items` (or none) has no effect,
//! as in JSON Schema.

use serde_json::{Map, Value};

use super::{counts, err, invalid, wrong, Ctx};
use crate::schema::error::{ErrorKind, SchemaError};
use crate::schema::ir::{self, ArrNode, Contains, Defs, Node};
use crate::schema::options::ObjectDefaults;

/// Most values one item may take for `uniqueItems` to be enforced.
const MAX_UNIQUE_DOMAIN: usize = 64;
/// Most arrays of distinct items `uniqueItems` may be written as.
pub const MAX_UNIQUE_ARRAYS: usize = 20_000;

impl<'a> Ctx<'a> {
    /// The arrays of an array schema: [`Ctx::array`], or with `uniqueItems`
    /// every array of distinct items, listed (items must come from a small
    /// finite set: the grammar cannot otherwise compare items).
    pub(super) fn array_node(
        &mut self,
        map: &'a Map<String, Value>,
        ptr: &str,
        depth: usize,
    ) -> Result<Node, SchemaError> {
        let arr = self.array(map, ptr, depth)?;
        match map.get("uniqueItems") {
            None | Some(Value::Bool(false)) => Ok(Node::Arr(arr)),
            Some(Value::Bool(true)) => {
                let mut arrays = unique_arrays(&arr, &self.defs, ptr)?;
                if arr.contains.is_some() {
                    // The listing knows nothing of `contains`: each array is
                    // kept when it has the matching items.
                    let whole = Node::Arr(arr.clone());
                    let mut kept = Vec::with_capacity(arrays.len());
                    for a in arrays {
                        match ir::accepts(&whole, &a, &self.defs) {
                            Some(true) => kept.push(a),
                            Some(false) => {}
                            None => {
                                return Err(invalid(
                                    ptr,
                                    "contains",
                                    "cannot be checked on the arrays \"uniqueItems\" lists"
                                        .to_owned(),
                                ))
                            }
                        }
                    }
                    arrays = kept;
                }
                Ok(if arrays.is_empty() {
                    Node::Never
                } else {
                    Node::Enum(arrays)
                })
            }
            Some(_) => Err(wrong(ptr, "uniqueItems", "a boolean")),
        }
    }

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
        let contains = self.contains(map, ptr, depth, prefix.is_empty())?;
        Ok(ArrNode {
            prefix,
            items: Box::new(items),
            min_items,
            max_items,
            contains,
        })
    }

    /// `contains` with `minContains` (default 1) and `maxContains`; both
    /// counts do nothing without `contains`, and a minimum of 0 without a
    /// maximum asks nothing. The items that count are `contains` read as a
    /// validator reads it; with a maximum, the others are its complement.
    pub(super) fn contains(
        &mut self,
        map: &'a Map<String, Value>,
        ptr: &str,
        depth: usize,
        no_prefix: bool,
    ) -> Result<Option<Box<Contains>>, SchemaError> {
        let Some(v) = map.get("contains") else {
            return Ok(None);
        };
        let (min, max) = counts(map, ptr, "minContains", "maxContains")?;
        let min = if map.contains_key("minContains") {
            min
        } else {
            1
        };
        if let Some(m) = max.filter(|m| min > *m) {
            return Err(invalid(
                ptr,
                "minContains",
                format!("1 (its default beside \"contains\") is greater than \"maxContains\" {m}"),
            ));
        }
        if min == 0 && max.is_none() {
            return Ok(None);
        }
        if !no_prefix {
            return Err(invalid(
                ptr,
                "contains",
                "cannot be enforced beside \"prefixItems\" (or an \"items\" array): the grammar counts matching items past the tuple only".to_owned(),
            ));
        }
        let at = format!("{ptr}/contains");
        let node = self.as_test(v, &at, depth + 1)?;
        let outside = match max {
            Some(_) => Some(self.negation(v, &at, depth + 1).map_err(|e| {
                invalid(
                    ptr,
                    "maxContains",
                    format!(
                        "needs the items \"contains\" refuses, and they cannot be written: {e}"
                    ),
                )
            })?),
            None => None,
        };
        Ok(Some(Box::new(Contains {
            node,
            outside,
            min,
            max,
        })))
    }
}

/// Every array of `arr` whose items are pairwise distinct, or an error when
/// an item's values are not a small finite set or the arrays too many.
fn unique_arrays(arr: &ArrNode, defs: &Defs, ptr: &str) -> Result<Vec<Value>, SchemaError> {
    let infinite = || {
        invalid(
            ptr,
            "uniqueItems",
            format!(
                "can only be enforced when every item comes from a finite set of at most \
                 {MAX_UNIQUE_DOMAIN} values (booleans, null, enums, consts, integer ranges): the \
                 grammar cannot compare items"
            ),
        )
    };
    // The values of each position; the last stands for every further one.
    let mut domains = Vec::with_capacity(arr.prefix.len() + 1);
    for node in arr.prefix.iter().chain(std::iter::once(&*arr.items)) {
        domains.push(finite_values(node, defs, 0).ok_or_else(infinite)?);
    }
    let longest = arr.prefix.len() + domains.last().map_or(0, Vec::len);
    let max = arr
        .max_items
        .map_or(longest, |m| (m.min(longest as u64)) as usize);
    let mut out = Vec::new();
    let mut current: Vec<Value> = Vec::new();
    let mut stack: Vec<usize> = vec![0];
    // Depth-first over positions: `stack[d]` is the next value to try at d.
    while let Some(next) = stack.last().copied() {
        let d = stack.len() - 1;
        if next == 0 && current.len() as u64 >= arr.min_items {
            out.push(Value::Array(current.clone()));
            if out.len() > MAX_UNIQUE_ARRAYS {
                return Err(err(
                    ptr,
                    ErrorKind::TooLarge {
                        keyword: "uniqueItems".to_owned(),
                        value: format!("more than {MAX_UNIQUE_ARRAYS} arrays of distinct items"),
                        limit: MAX_UNIQUE_ARRAYS as u64,
                    },
                ));
            }
        }
        let domain = &domains[d.min(domains.len() - 1)];
        let fits = d < max;
        let candidate = (next..domain.len())
            .find(|&i| fits && !current.iter().any(|v| ir::json_eq(v, &domain[i])));
        match candidate {
            Some(i) => {
                if let Some(top) = stack.last_mut() {
                    *top = i + 1;
                }
                current.push(domain[i].clone());
                stack.push(0);
            }
            None => {
                stack.pop();
                current.pop();
            }
        }
    }
    Ok(out)
}

/// The values of `node` when they are few enough to list.
fn finite_values(node: &Node, defs: &Defs, depth: usize) -> Option<Vec<Value>> {
    if depth > ir::MAX_REASONING_DEPTH {
        return None;
    }
    let values = match node {
        Node::Never => Vec::new(),
        Node::Null => vec![Value::Null],
        Node::Bool => vec![Value::Bool(false), Value::Bool(true)],
        Node::Enum(values) => values.clone(),
        Node::Int(range) => range.integers(MAX_UNIQUE_DOMAIN as u64)?,
        Node::AnyOf(branches) | Node::OneOf(branches) => {
            let mut all: Vec<Value> = Vec::new();
            for b in branches {
                for v in finite_values(b, defs, depth + 1)? {
                    if !all.iter().any(|w| ir::json_eq(w, &v)) {
                        all.push(v);
                    }
                }
            }
            all
        }
        Node::Ref(id) => finite_values(defs.get(*id)?, defs, depth + 1)?,
        _ => return None,
    };
    (values.len() <= MAX_UNIQUE_DOMAIN).then_some(values)
}
