//! JSON text in the layout the grammars produce (by default `{"a": 1, "b": [1, 2]}`),
//! strings in canonical encoding, and object keys in schema order. Used for
//! `enum`/`const` literals, and by the benchmark to re-serialise instances.

use serde_json::Value;

use super::ir::{self, Defs, Node};
use super::kinds::Kinds;
use super::options::Layout;
use super::strings::encode_str;

/// `value` as the grammars write it (default layout), keys in their
/// original order.
pub fn value_text(value: &Value) -> String {
    value_text_in(value, &Layout::default())
}

/// `value` as the grammars of `layout` write it, keys in their original order.
pub fn value_text_in(value: &Value, layout: &Layout) -> String {
    let mut out = String::new();
    write_value(&mut out, value, None, &Defs::default(), layout, 0);
    out
}

/// `value` as the grammar of `node` would write it (default layout):
/// declared properties in declaration order, then the other keys in their
/// original order.
pub fn instance_text(value: &Value, node: &Node, defs: &Defs) -> String {
    instance_text_in(value, node, defs, &Layout::default())
}

/// [`instance_text`] for a grammar converted with `layout`.
pub fn instance_text_in(value: &Value, node: &Node, defs: &Defs, layout: &Layout) -> String {
    let mut out = String::new();
    write_value(&mut out, value, Some(node), defs, layout, 0);
    out
}

const MAX_DEPTH: usize = 512;

fn write_value(
    out: &mut String,
    value: &Value,
    node: Option<&Node>,
    defs: &Defs,
    layout: &Layout,
    depth: usize,
) {
    let node = node.map(|n| resolve(n, value, defs, 0));
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => {
            out.push('"');
            out.push_str(&encode_str(s));
            out.push('"');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(&layout.item_separator);
                }
                let child = match node {
                    Some(Node::Arr(a)) if depth < MAX_DEPTH => {
                        Some(a.prefix.get(i).unwrap_or(&a.items))
                    }
                    _ => None,
                };
                write_value(out, item, child, defs, layout, depth + 1);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = Vec::with_capacity(map.len());
            if let Some(Node::Obj(o)) = node {
                for p in &o.props {
                    if let Some((k, _)) = map.get_key_value(&p.name) {
                        keys.push(k);
                    }
                }
            }
            for k in map.keys() {
                if !keys.contains(&k) {
                    keys.push(k);
                }
            }
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push_str(&layout.item_separator);
                }
                out.push('"');
                out.push_str(&encode_str(k));
                out.push('"');
                out.push_str(&layout.key_separator);
                let child = match node {
                    Some(Node::Obj(o)) if depth < MAX_DEPTH => Some(o.schema_of(k)),
                    _ => None,
                };
                if let Some(v) = map.get(k) {
                    write_value(out, v, child, defs, layout, depth + 1);
                }
            }
            out.push('}');
        }
    }
}

/// The node that describes `value`: through refs, and into the union branch
/// that accepts it (or, failing that, the first of the right kind).
fn resolve<'a>(node: &'a Node, value: &Value, defs: &'a Defs, depth: usize) -> &'a Node {
    if depth > 64 {
        return node;
    }
    match node {
        Node::Ref(id) => defs
            .get(*id)
            .map_or(node, |t| resolve(t, value, defs, depth + 1)),
        Node::AnyOf(branches) | Node::OneOf(branches) => {
            let accepted = branches
                .iter()
                .find(|b| ir::accepts(b, value, defs) == Some(true));
            let kind = Kinds::of_value(value);
            let same_kind = || {
                branches
                    .iter()
                    .find(|b| ir::kinds(b, defs).intersects(kind))
            };
            match accepted.or_else(same_kind) {
                Some(b) => resolve(b, value, defs, depth + 1),
                None => node,
            }
        }
        _ => node,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn layout_matches_the_grammars() {
        assert_eq!(
            value_text(&json!({"a": [1, 2.5, "x\n"], "b": {}, "c": []})),
            r#"{"a": [1, 2.5, "x\n"], "b": {}, "c": []}"#
        );
    }
}
