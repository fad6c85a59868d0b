//! Exclusivity (`oneOf`): proving that no value one branch's grammar can
//! produce validates against another.

use super::{accepts, kinds, validates, Defs, Node, ObjNode, Prop, MAX_REASONING_DEPTH};

/// Whether no value the grammar of `out` can produce validates against
/// `against`. `false` means "not proven", not "overlapping".
pub fn excludes(out: &Node, against: &Node, defs: &Defs) -> bool {
    excludes_at(out, against, defs, 0)
}

fn excludes_at(out: &Node, against: &Node, defs: &Defs, depth: usize) -> bool {
    if depth > MAX_REASONING_DEPTH {
        return false;
    }
    let next = depth + 1;
    if !kinds(out, defs).intersects(kinds(against, defs)) {
        return true;
    }
    match (out, against) {
        (Node::Never, _) | (_, Node::Never) => true,
        (Node::Ref(id), _) => defs
            .get(*id)
            .is_some_and(|t| excludes_at(t, against, defs, next)),
        (_, Node::Ref(id)) => defs
            .get(*id)
            .is_some_and(|t| excludes_at(out, t, defs, next)),
        (Node::AnyOf(xs) | Node::OneOf(xs), _) => {
            xs.iter().all(|x| excludes_at(x, against, defs, next))
        }
        (_, Node::AnyOf(ys) | Node::OneOf(ys)) => {
            ys.iter().all(|y| excludes_at(out, y, defs, next))
        }
        (Node::Enum(values), _) => values
            .iter()
            .all(|v| validates(against, v, defs) == Some(false)),
        (_, Node::Enum(values)) => values.iter().all(|v| accepts(out, v, defs) == Some(false)),
        (Node::Int(a) | Node::Num(a), Node::Int(b) | Node::Num(b)) => a.is_disjoint(b),
        (Node::Str(a), Node::Str(b)) => {
            a.max_len.is_some_and(|m| m < b.min_len) || b.max_len.is_some_and(|m| m < a.min_len)
        }
        (Node::Obj(a), Node::Obj(b)) => objects_exclude(a, b, defs, next),
        _ => false,
    }
}

/// An object from `a` always fails validation against `b`: a property `a`
/// always emits has a value `b` rejects, or `b` requires a key `a` never
/// has. "Never has" is read as JSON Schema reads `a`, not as its grammar
/// writes it: a key its grammar leaves out only by the strict defaults
/// (`additionalProperties` absent) comes back when `a` is later merged
/// with a schema that declares it (a dependency, `allOf`), and the proof
/// must hold for what `a` becomes then.
fn objects_exclude(a: &ObjNode, b: &ObjNode, defs: &Defs, depth: usize) -> bool {
    // Only properties a schema requires are sure to be there: one the
    // strict defaults require is dropped when a merge leaves it no value
    // (`additionalProperties: false` beside a dependency or a narrowed
    // `oneOf` branch), and left optional where its value recurses.
    let always_emitted = |p: &&Prop| p.required && !p.implicit;
    let emitted_value_rejected = a
        .props
        .iter()
        .filter(always_emitted)
        .any(|p| excludes_at(&p.node, b.real_schema_of(&p.name), defs, depth));
    let required_never_emitted = b
        .props
        .iter()
        .filter(|p| p.required && !p.implicit)
        .any(|p| {
            let in_a = a.props.iter().find(|q| q.name == p.name);
            match in_a {
                Some(q) => q.node == Node::Never,
                None => *a.real_schema_of(&p.name) == Node::Never,
            }
        });
    emitted_value_rejected || required_never_emitted
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::ir::testing::{int, obj};
    use crate::schema::range::NumRange;
    use serde_json::json;

    #[test]
    fn exclusivity_by_kind_by_enum_and_by_discriminator() {
        let defs = Defs::default();
        assert!(excludes(&Node::Null, &int(None, None), &defs));
        assert!(!excludes(
            &int(None, None),
            &Node::Num(NumRange::default()),
            &defs
        ));
        assert!(excludes(&int(Some(0), Some(5)), &int(Some(6), None), &defs));
        let cat = obj(
            vec![("kind", Node::Enum(vec![json!("cat")]), true)],
            Node::Any,
        );
        let dog = obj(
            vec![("kind", Node::Enum(vec![json!("dog")]), true)],
            Node::Any,
        );
        assert!(excludes(&cat, &dog, &defs) && excludes(&dog, &cat, &defs));
        let loose = obj(
            vec![("kind", Node::Enum(vec![json!("cat")]), false)],
            Node::Any,
        );
        assert!(
            !excludes(&loose, &dog, &defs),
            "an optional discriminator proves nothing"
        );
        // Without additionalProperties, JSON Schema accepts undeclared keys:
        // an object emitting `x` is not excluded by one that declares only `y`.
        let Node::Obj(mut only_y) = obj(vec![("y", Node::Bool, false)], Node::Never) else {
            panic!()
        };
        only_y.open_by_default = true;
        let emits_x = obj(vec![("x", Node::Bool, true)], Node::Never);
        assert!(!excludes(&emits_x, &Node::Obj(only_y.clone()), &defs));
        only_y.open_by_default = false;
        assert!(excludes(&emits_x, &Node::Obj(only_y), &defs));
    }
}
