//! Intersection of two nodes (`allOf`, and sibling keywords of one schema):
//! one node matching exactly the values both match, or why none can be written.

use crate::schema::lang::Re;

use super::{
    accepts, any_of, validates, ArrNode, Defs, KeyLang, Node, ObjNode, Prop, RefId, Region,
    StrNode, MAX_REASONING_DEPTH,
};

/// The schema matching exactly the values both `a` and `b` match, or the
/// reason it cannot be written as one schema.
pub fn intersect(a: &Node, b: &Node, defs: &Defs) -> Result<Node, String> {
    STEPS_LEFT.with(|left| left.set(MAX_INTERSECT_STEPS));
    intersect_at(a, b, defs, 0)
}

thread_local! {
    /// While an intersection may defer: the merges it deferred, in order.
    static DEFERRED: std::cell::RefCell<Option<Vec<(RefId, Node)>>> = const { std::cell::RefCell::new(None) };
}

/// Like [`intersect`], but a definition still being read (a recursive
/// `$ref`) merged with other constraints becomes a new slot, its id
/// numbered after `defs`' slots, to be computed once every definition is
/// read: returned are the node and, in slot order, the `(target, with)` of
/// each new slot, which the caller must append to `defs` before anything
/// else is added. A merge already in `defs.merges` is reused.
pub fn intersect_deferring(
    a: &Node,
    b: &Node,
    defs: &Defs,
) -> Result<(Node, Vec<(RefId, Node)>), String> {
    DEFERRED.with(|d| *d.borrow_mut() = Some(Vec::new()));
    let out = intersect(a, b, defs);
    let deferred = DEFERRED.with(|d| d.borrow_mut().take()).unwrap_or_default();
    out.map(|node| (node, deferred))
}

/// The slot for `target` ∩ `with`, when deferring is allowed.
fn defer(target: RefId, with: &Node, defs: &Defs) -> Option<RefId> {
    if let Some(m) = defs
        .merges
        .iter()
        .find(|m| m.target == target && m.with == *with)
    {
        return Some(m.id);
    }
    DEFERRED.with(|d| {
        let mut d = d.borrow_mut();
        let pending = d.as_mut()?;
        let index = match pending.iter().position(|(t, w)| *t == target && w == with) {
            Some(i) => i,
            None => {
                pending.push((target, with.clone()));
                pending.len() - 1
            }
        };
        Some(defs.nodes.len() + index)
    })
}

/// Most pairs of nodes one intersection visits: recursive `$ref`s met on
/// both sides can otherwise take exponential time.
const MAX_INTERSECT_STEPS: u32 = 100_000;

thread_local! {
    /// Pairs the current intersection may still visit.
    static STEPS_LEFT: std::cell::Cell<u32> = const { std::cell::Cell::new(MAX_INTERSECT_STEPS) };
}

fn intersect_at(a: &Node, b: &Node, defs: &Defs, depth: usize) -> Result<Node, String> {
    if depth > MAX_REASONING_DEPTH {
        return Err("schemas nest too deeply to merge".to_owned());
    }
    let spent = STEPS_LEFT.with(|left| {
        let n = left.get();
        left.set(n.saturating_sub(1));
        n == 0
    });
    if spent {
        return Err(format!(
            "merging them takes more than {MAX_INTERSECT_STEPS} steps (recursive schemas met on both sides)"
        ));
    }
    let next = depth + 1;
    let resolve = |id: &RefId| -> Result<Node, String> {
        defs.get(*id).cloned().ok_or_else(|| {
            format!(
                "{} refers to itself",
                defs.pointers.get(*id).map_or("a $ref", |p| p.as_str())
            )
        })
    };
    // The branches of a union each met with `other`, those left with no
    // value dropped (the meet distributes over `anyOf` and `oneOf` alike).
    let meet_each = |xs: &[Node], other: &Node| -> Result<Vec<Node>, String> {
        let mut out = Vec::new();
        for x in xs {
            let m = intersect_at(x, other, defs, next)?;
            if m != Node::Never {
                out.push(m);
            }
        }
        Ok(out)
    };
    Ok(match (a, b) {
        (Node::Any, x) | (x, Node::Any) => x.clone(),
        (Node::Never, _) | (_, Node::Never) => Node::Never,
        (Node::Ref(x), Node::Ref(y)) if x == y => Node::Ref(*x),
        (Node::Ref(id), other) | (other, Node::Ref(id)) => match resolve(id) {
            Ok(target) => intersect_at(&target, other, defs, next)?,
            // A definition still being read (a recursive `$ref`): a merge
            // computed once every definition is read, where the caller
            // allows it.
            Err(reason) => match defer(*id, other, defs) {
                Some(merged) => Node::Ref(merged),
                None => return Err(reason),
            },
        },
        (Node::AnyOf(xs), other) | (other, Node::AnyOf(xs)) => any_of(meet_each(xs, other)?),
        (Node::OneOf(xs), other) | (other, Node::OneOf(xs)) => {
            let mut out = meet_each(xs, other)?;
            match out.len() {
                0 => Node::Never,
                1 => out.pop().unwrap_or(Node::Never),
                _ => Node::OneOf(out),
            }
        }
        (Node::Enum(values), other) | (other, Node::Enum(values)) => {
            let mut kept = Vec::new();
            for v in values {
                // The literal is written as it is, so it is kept when it is
                // valid against `other` as a validator reads it (open objects,
                // properties not required unless listed), not only when
                // `other`'s own grammar would write it.
                let verdict = match accepts(other, v, defs) {
                    Some(true) => Some(true),
                    grammar => validates(other, v, defs).or(grammar),
                };
                match verdict {
                    Some(true) => kept.push(v.clone()),
                    Some(false) => {}
                    None => {
                        return Err(
                            "enum values cannot be checked against these constraints".to_owned()
                        )
                    }
                }
            }
            if kept.is_empty() {
                Node::Never
            } else {
                Node::Enum(kept)
            }
        }
        (Node::Null, Node::Null) => Node::Null,
        (Node::Bool, Node::Bool) => Node::Bool,
        (Node::Int(x), Node::Int(y))
        | (Node::Int(x), Node::Num(y))
        | (Node::Num(y), Node::Int(x)) => Node::Int(x.intersect(y)),
        (Node::Num(x), Node::Num(y)) => Node::Num(x.intersect(y)),
        (Node::Str(x), Node::Str(y)) => checked_str(intersect_str(x, y))?,
        (Node::Arr(x), Node::Arr(y)) => Node::Arr(intersect_arr(x, y, defs, next)?),
        (Node::Obj(x), Node::Obj(y)) => intersect_obj(x, y, defs, next)?,
        _ => Node::Never,
    })
}

/// A string node whose constraints combine, or `Never` when no string meets
/// them all; an error when their automaton is too large.
pub fn checked_str(node: StrNode) -> Result<Node, String> {
    if !node.needs_automaton() {
        return Ok(Node::Str(node));
    }
    let possible = node
        .automaton()
        .and_then(|dfa| Ok(dfa.has_length_in(node.min_len, node.max_len)?));
    let possible = match possible {
        Ok(possible) => possible,
        // Written without an automaton, never empty.
        Err(_) if node.format_within_lengths().is_some() => true,
        Err(e) => return Err(e.to_string()),
    };
    Ok(if possible {
        Node::Str(node)
    } else {
        Node::Never
    })
}

fn intersect_str(x: &StrNode, y: &StrNode) -> StrNode {
    fn union<T: Clone + PartialEq>(a: &[T], b: &[T]) -> Vec<T> {
        let mut out = a.to_vec();
        for v in b {
            if !out.contains(v) {
                out.push(v.clone());
            }
        }
        out
    }
    StrNode {
        min_len: x.min_len.max(y.min_len),
        max_len: min_opt(x.max_len, y.max_len),
        patterns: union(&x.patterns, &y.patterns),
        formats: union(&x.formats, &y.formats),
        not_in: union(&x.not_in, &y.not_in),
        excluded: union(&x.excluded, &y.excluded),
    }
}

fn intersect_arr(x: &ArrNode, y: &ArrNode, defs: &Defs, depth: usize) -> Result<ArrNode, String> {
    let n = x.prefix.len().max(y.prefix.len());
    let mut prefix = Vec::with_capacity(n);
    for i in 0..n {
        let a = x.prefix.get(i).unwrap_or(&x.items);
        let b = y.prefix.get(i).unwrap_or(&y.items);
        prefix.push(intersect_at(a, b, defs, depth)?);
    }
    let contains = match (&x.contains, &y.contains) {
        (Some(a), Some(b)) if a != b => {
            return Err(
                "two different \"contains\" on one array cannot be written as one count".to_owned(),
            )
        }
        (Some(c), _) | (None, Some(c)) => Some(c.clone()),
        (None, None) => None,
    };
    Ok(ArrNode {
        prefix,
        items: Box::new(intersect_at(&x.items, &y.items, defs, depth)?),
        min_items: x.min_items.max(y.min_items),
        max_items: min_opt(x.max_items, y.max_items),
        contains,
    })
}

fn intersect_obj(x: &ObjNode, y: &ObjNode, defs: &Defs, depth: usize) -> Result<Node, String> {
    let mut names: Vec<&str> = x.props.iter().map(|p| p.name.as_str()).collect();
    for p in &y.props {
        if !names.contains(&p.name.as_str()) {
            names.push(&p.name);
        }
    }
    let mut props = Vec::with_capacity(names.len());
    for name in names {
        let mut required = x
            .props
            .iter()
            .chain(&y.props)
            .any(|p| p.name == name && p.required);
        // A side that does not declare the key applies what JSON Schema applies to it.
        let node = intersect_at(x.real_schema_of(name), y.real_schema_of(name), defs, depth)?;
        let implicit = required
            && x.props
                .iter()
                .chain(&y.props)
                .filter(|p| p.name == name && p.required)
                .all(|p| p.implicit);
        if node == Node::Never && required {
            if !implicit {
                return Ok(Node::Never);
            }
            required = false;
        }
        props.push(Prop {
            name: name.to_owned(),
            node,
            required,
            implicit,
        });
    }
    let (regions, names) = if x.has_key_languages() || y.has_key_languages() {
        merge_key_languages(x, y, defs, depth)?
    } else {
        (Vec::new(), None)
    };
    let additional = intersect_at(&x.additional, &y.additional, defs, depth)?;
    // JSON Schema lets any other key through both sides (each open by
    // default or explicitly), while the grammar writes fewer.
    let truly_open = |o: &ObjNode| o.open_by_default || *o.additional == Node::Any;
    let open_by_default = truly_open(x) && truly_open(y) && additional != Node::Any;
    Ok(Node::Obj(ObjNode {
        props,
        additional: Box::new(additional),
        min_props: x.min_props.max(y.min_props),
        max_props: min_opt(x.max_props, y.max_props),
        open_by_default,
        regions,
        names,
    }))
}

/// The key regions of two objects combined: every non-empty meet of a
/// region (or the rest) of one with a region (or the rest) of the other,
/// with both schemas; the meet of the two rests stays `additional`'s.
fn merge_key_languages(
    x: &ObjNode,
    y: &ObjNode,
    defs: &Defs,
    depth: usize,
) -> Result<(Vec<Region>, Option<KeyLang>), String> {
    let names = match (&x.names, &y.names) {
        (Some(a), Some(b)) => Some(
            KeyLang::new(Re::And(vec![a.re.clone(), b.re.clone()])).map_err(|e| e.to_string())?,
        ),
        (Some(a), None) | (None, Some(a)) => Some(a.clone()),
        (None, None) => None,
    };
    // Each side's regions, then its rest (`None`) with what JSON Schema
    // applies there.
    let sides = |o: &ObjNode| -> Vec<(Re, Node)> {
        let rest = Re::Alt(o.regions.iter().map(|(l, _)| l.re.clone()).collect()).complement();
        let rest_node = if o.open_by_default {
            Node::Any
        } else {
            (*o.additional).clone()
        };
        o.regions
            .iter()
            .map(|(l, n)| (l.re.clone(), n.clone()))
            .chain([(rest, rest_node)])
            .collect()
    };
    let (xs, ys) = (sides(x), sides(y));
    let mut regions = Vec::new();
    for (i, (lx, nx)) in xs.iter().enumerate() {
        for (j, (ly, ny)) in ys.iter().enumerate() {
            if i + 1 == xs.len() && j + 1 == ys.len() {
                continue;
            }
            let mut parts = vec![lx.clone(), ly.clone()];
            if let Some(n) = &names {
                parts.push(n.re.clone());
            }
            let lang = KeyLang::new(Re::And(parts)).map_err(|e| e.to_string())?;
            if lang.dfa.is_empty() {
                continue;
            }
            regions.push((lang, intersect_at(nx, ny, defs, depth)?));
        }
    }
    Ok((regions, names))
}

fn min_opt(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, None) | (None, x) => x,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::ir::testing::{int, obj};
    use serde_json::json;

    #[test]
    fn an_intersection_that_would_take_exponential_time_stops_at_its_budget() {
        // Four alternatives per level, six levels: 16^6 pairs of branches.
        fn tree(depth: usize) -> Node {
            if depth == 0 {
                return Node::Null;
            }
            Node::AnyOf(
                (0..4)
                    .map(|i| {
                        obj(
                            vec![
                                ("p", tree(depth - 1), true),
                                ("q", int(Some(i), None), true),
                            ],
                            Node::Never,
                        )
                    })
                    .collect(),
            )
        }
        let (a, b) = (tree(6), tree(6));
        let e = intersect(&a, &b, &Defs::default()).unwrap_err();
        assert!(e.contains("more than 100000 steps"), "{e}");
        // The budget is per intersection: a small one still succeeds after.
        assert!(intersect(&tree(1), &tree(1), &Defs::default()).is_ok());
    }

    #[test]
    fn intersection_of_ranges_keeps_the_tighter_bounds() {
        let defs = Defs::default();
        let m = intersect(&int(Some(0), Some(100)), &int(Some(10), None), &defs).unwrap();
        assert_eq!(m, int(Some(10), Some(100)));
    }

    #[test]
    fn intersection_of_objects_applies_additional_properties_of_the_other_side() {
        let defs = Defs::default();
        let closed = obj(vec![("a", Node::Any, true)], Node::Never);
        let open = obj(vec![("b", Node::Bool, false)], Node::Any);
        let Node::Obj(m) = intersect(&closed, &open, &defs).unwrap() else {
            panic!()
        };
        assert_eq!(m.props.len(), 2);
        assert_eq!(
            m.props[1].node,
            Node::Never,
            "b is forbidden by the closed side"
        );
        assert_eq!(*m.additional, Node::Never);
        let needs_b = obj(vec![("b", Node::Bool, true)], Node::Any);
        assert_eq!(intersect(&closed, &needs_b, &defs).unwrap(), Node::Never);
    }

    #[test]
    fn intersection_filters_enums() {
        let defs = Defs::default();
        let e = Node::Enum(vec![json!(1), json!(50), json!("x")]);
        assert_eq!(
            intersect(&e, &int(Some(10), None), &defs).unwrap(),
            Node::Enum(vec![json!(50)])
        );
    }
}
