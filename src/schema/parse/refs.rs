//! `$ref`: local JSON-pointer references, each target parsed once into a
//! [`Defs`](crate::schema::ir::Defs) slot.

use serde_json::Value;

use super::{err, Ctx};
use crate::schema::error::{ErrorKind, SchemaError};
use crate::schema::ir::Node;

impl<'a> Ctx<'a> {
    /// Resolve a local `$ref` to a [`Node::Ref`], parsing its target once.
    pub(super) fn reference(
        &mut self,
        reference: &str,
        ptr: &str,
        depth: usize,
    ) -> Result<Node, SchemaError> {
        let pointer = pointer_of(reference, ptr)?;
        if let Some(id) = self.defs.find(&pointer) {
            return Ok(Node::Ref(id));
        }
        let target = self.target(reference, &pointer, ptr)?;
        let id = self.defs.pointers.len();
        self.defs.pointers.push(pointer.clone());
        self.defs.nodes.push(None);
        let node = self.schema(target, &pointer, depth + 1)?;
        if let Some(slot) = self.defs.nodes.get_mut(id) {
            *slot = Some(node);
        }
        Ok(Node::Ref(id))
    }

    /// The schema a local `$ref` points to, and its JSON pointer.
    pub(super) fn ref_target(
        &self,
        reference: &str,
        ptr: &str,
    ) -> Result<(&'a Value, String), SchemaError> {
        let pointer = pointer_of(reference, ptr)?;
        let target = self.target(reference, &pointer, ptr)?;
        Ok((target, pointer))
    }

    fn target(&self, reference: &str, pointer: &str, ptr: &str) -> Result<&'a Value, SchemaError> {
        if !pointer.is_empty() && !pointer.starts_with('/') {
            return Err(err(
                ptr,
                ErrorKind::BadRef {
                    reference: reference.to_owned(),
                    reason: "is not a JSON pointer (anchors are not supported)".to_owned(),
                },
            ));
        }
        self.root.pointer(pointer).ok_or_else(|| {
            err(
                ptr,
                ErrorKind::BadRef {
                    reference: reference.to_owned(),
                    reason: "points to nothing in this schema".to_owned(),
                },
            )
        })
    }
}

/// The JSON pointer of a local `$ref` (`#/…`, percent-decoded).
fn pointer_of(reference: &str, ptr: &str) -> Result<String, SchemaError> {
    let Some(fragment) = reference.strip_prefix('#') else {
        return Err(err(
            ptr,
            ErrorKind::RemoteRef {
                reference: reference.to_owned(),
            },
        ));
    };
    percent_decode(fragment).ok_or_else(|| {
        err(
            ptr,
            ErrorKind::BadRef {
                reference: reference.to_owned(),
                reason: "has an invalid percent-encoding".to_owned(),
            },
        )
    })
}

/// Decode `%xx` escapes of a URI fragment.
fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}
