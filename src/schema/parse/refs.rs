//! `$ref`: local JSON-pointer references, each target parsed once into a
//! [`Defs`](crate::schema::ir::Defs) slot.

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
        let Some(fragment) = reference.strip_prefix('#') else {
            return Err(err(
                ptr,
                ErrorKind::RemoteRef {
                    reference: reference.to_owned(),
                },
            ));
        };
        let pointer = percent_decode(fragment).ok_or_else(|| {
            err(
                ptr,
                ErrorKind::BadRef {
                    reference: reference.to_owned(),
                    reason: "has an invalid percent-encoding".to_owned(),
                },
            )
        })?;
        if let Some(id) = self.defs.find(&pointer) {
            return Ok(Node::Ref(id));
        }
        if !pointer.is_empty() && !pointer.starts_with('/') {
            return Err(err(
                ptr,
                ErrorKind::BadRef {
                    reference: reference.to_owned(),
                    reason: "is not a JSON pointer (anchors are not supported)".to_owned(),
                },
            ));
        }
        let target = self.root.pointer(&pointer).ok_or_else(|| {
            err(
                ptr,
                ErrorKind::BadRef {
                    reference: reference.to_owned(),
                    reason: "points to nothing in this schema".to_owned(),
                },
            )
        })?;
        let id = self.defs.pointers.len();
        self.defs.pointers.push(pointer.clone());
        self.defs.nodes.push(None);
        let node = self.schema(target, &pointer, depth + 1)?;
        if let Some(slot) = self.defs.nodes.get_mut(id) {
            *slot = Some(node);
        }
        Ok(Node::Ref(id))
    }
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
