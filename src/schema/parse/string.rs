//! String keywords: `minLength`, `maxLength`, `pattern`, `format`.

use serde_json::{Map, Value};

use super::{counts, err, invalid, wrong, Ctx};
use crate::schema::error::{ErrorKind, SchemaError};
use crate::schema::formats::{self, FormatName};
use crate::schema::ir::{self, Node, StrNode};
use crate::schema::regex;

impl<'a> Ctx<'a> {
    pub(super) fn string(&self, map: &Map<String, Value>, ptr: &str) -> Result<Node, SchemaError> {
        let (min_len, max_len) = counts(map, ptr, "minLength", "maxLength")?;
        let pattern = match map.get("pattern") {
            None => None,
            Some(Value::String(p)) => {
                regex::check(p).map_err(|e| {
                    err(
                        ptr,
                        ErrorKind::Pattern {
                            pattern: p.clone(),
                            reason: e.to_string(),
                        },
                    )
                })?;
                Some(p.clone())
            }
            Some(_) => return Err(wrong(ptr, "pattern", "a string")),
        };
        let format = match map.get("format") {
            None => None,
            Some(Value::String(name)) => match FormatName::of(name) {
                FormatName::Enforced(f) => Some(f),
                // An annotation no vocabulary defines: ignored, as
                // validators ignore it.
                FormatName::Custom => None,
                FormatName::Unenforced => {
                    return Err(err(
                        ptr,
                        ErrorKind::UnsupportedFormat {
                            format: name.clone(),
                            supported: formats::SUPPORTED,
                        },
                    ))
                }
                FormatName::NearMiss(meant) => {
                    return Err(err(
                        ptr,
                        ErrorKind::MisspelledFormat {
                            format: name.clone(),
                            meant,
                        },
                    ))
                }
            },
            Some(_) => return Err(wrong(ptr, "format", "a string")),
        };
        let node = StrNode {
            min_len,
            max_len,
            patterns: pattern.into_iter().collect(),
            formats: format.into_iter().collect(),
            ..StrNode::default()
        };
        let keyword = if node.patterns.is_empty() {
            "format"
        } else {
            "pattern"
        };
        ir::checked_str(node).map_err(|reason| invalid(ptr, keyword, reason))
    }
}
