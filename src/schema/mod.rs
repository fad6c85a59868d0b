//! JSON Schema → GBNF, in pure Rust: parse (every keyword checked) → typed IR
//! → GBNF. No engine or language-binding types here.
//!
//! The converter is strict: every keyword it accepts is enforced exactly, and
//! anything it cannot enforce is an error naming the keyword and the JSON
//! pointer of the schema it appears in.

pub mod builder;
pub mod canonical;
pub mod decimal;
pub mod emit;
pub mod error;
pub mod formats;
pub mod ir;
pub mod keywords;
pub mod kinds;
pub mod lang;
pub mod numeric;
pub mod options;
pub mod parse;
pub mod range;
pub mod record;
pub mod regex;
pub mod strings;
#[cfg(test)]
pub(crate) mod test_rng;

use serde_json::Value;

use crate::grammar::check::MAX_GRAMMAR_BYTES;
use crate::grammar::CheckedGbnf;

pub use error::{ErrorKind, SchemaError};
use ir::{Defs, Node};
pub use options::{ConvertOptions, Layout, ObjectDefaults};

/// A converted schema: its IR (for re-serialising instances) and its grammar,
/// which passed the GBNF checker like any grammar the engine runs.
#[derive(Debug, Clone)]
pub struct Compiled {
    pub root: Node,
    pub defs: Defs,
    pub gbnf: CheckedGbnf,
}

/// Convert a schema to a GBNF grammar whose start rule is `root`, with the
/// default options.
pub fn to_gbnf(schema: &Value) -> Result<String, SchemaError> {
    to_gbnf_with(schema, &ConvertOptions::default())
}

/// Convert a schema to a GBNF grammar whose start rule is `root`.
pub fn to_gbnf_with(schema: &Value, options: &ConvertOptions) -> Result<String, SchemaError> {
    compile_with(schema, options).map(|c| c.gbnf.as_str().to_owned())
}

/// Convert a schema with the default options, keeping the intermediate form.
pub fn compile(schema: &Value) -> Result<Compiled, SchemaError> {
    compile_with(schema, &ConvertOptions::default())
}

/// Convert a schema, keeping the intermediate form.
pub fn compile_with(schema: &Value, options: &ConvertOptions) -> Result<Compiled, SchemaError> {
    if let Some(reason) = options.layout.problem() {
        return Err(SchemaError::new("", ErrorKind::BadOption { reason }));
    }
    let parsed = parse::parse_with(schema, options)?;
    let productive = Productive::of(&parsed.defs);
    if !productive.relaxed(&parsed.root) {
        let reason = match &parsed.root {
            Node::Ref(id) => parsed.defs.pointers.get(*id).cloned(),
            _ => None,
        };
        return Err(SchemaError::new(
            "",
            ErrorKind::NoBaseCase {
                reference: reason.map_or_else(|| "#".to_owned(), |p| format!("#{p}")),
            },
        ));
    }
    let gbnf =
        emit::emit(&parsed.root, &parsed.defs, &productive, &options.layout).map_err(|e| {
            SchemaError::new(
                "",
                match e {
                    emit::EmitError::Unsatisfiable(reason) => match &parsed.approximated {
                        Some(why) => ErrorKind::CannotWrite {
                            reason: format!("no value is left: {why}"),
                        },
                        None => ErrorKind::Unsatisfiable { reason },
                    },
                    emit::EmitError::CannotWrite(reason) => ErrorKind::CannotWrite { reason },
                },
            )
        })?;
    if gbnf.len() > MAX_GRAMMAR_BYTES {
        return Err(SchemaError::new(
            "",
            ErrorKind::GrammarTooLarge {
                bytes: gbnf.len(),
                limit: MAX_GRAMMAR_BYTES,
            },
        ));
    }
    let gbnf = CheckedGbnf::new(gbnf).map_err(|e| {
        SchemaError::new(
            "",
            ErrorKind::GrammarRefused {
                reason: e.to_string(),
            },
        )
    })?;
    Ok(Compiled {
        root: parsed.root,
        defs: parsed.defs,
        gbnf,
    })
}

/// Which nodes can produce a finite value, with implicitly required
/// properties counted as required (`strict`) or as optional (`relaxed`).
#[derive(Debug, Clone)]
pub struct Productive {
    strict: Vec<bool>,
    relaxed: Vec<bool>,
}

impl Productive {
    /// The least fixed points over the `$ref` targets.
    pub fn of(defs: &Defs) -> Self {
        Self {
            strict: fixed_point(defs, true),
            relaxed: fixed_point(defs, false),
        }
    }

    pub fn strict(&self, node: &Node) -> bool {
        is_productive(node, &self.strict, true)
    }

    pub fn relaxed(&self, node: &Node) -> bool {
        is_productive(node, &self.relaxed, false)
    }
}

fn fixed_point(defs: &Defs, strict: bool) -> Vec<bool> {
    let mut known = vec![false; defs.nodes.len()];
    loop {
        let mut changed = false;
        for (i, node) in defs.nodes.iter().enumerate() {
            if !known[i]
                && node
                    .as_ref()
                    .is_some_and(|n| is_productive(n, &known, strict))
            {
                known[i] = true;
                changed = true;
            }
        }
        if !changed {
            return known;
        }
    }
}

/// Whether `node` can produce a finite value, given which refs can.
fn is_productive(node: &Node, refs: &[bool], strict: bool) -> bool {
    match node {
        Node::Never => false,
        Node::Any
        | Node::Null
        | Node::Bool
        | Node::Int(_)
        | Node::Num(_)
        | Node::Str(_)
        | Node::Enum(_) => true,
        Node::AnyOf(bs) | Node::OneOf(bs) => bs.iter().any(|b| is_productive(b, refs, strict)),
        Node::Ref(id) => refs.get(*id).copied().unwrap_or(false),
        Node::Arr(a) => {
            let needed = a.min_items as usize;
            a.prefix
                .iter()
                .take(needed)
                .all(|p| is_productive(p, refs, strict))
                && (needed <= a.prefix.len() || is_productive(&a.items, refs, strict))
                && a.contains
                    .as_ref()
                    .is_none_or(|c| c.min == 0 || is_productive(&c.node, refs, strict))
        }
        Node::Obj(o) => o
            .props
            .iter()
            .filter(|p| p.required && (strict || !p.implicit))
            .all(|p| is_productive(&p.node, refs, strict)),
    }
}
