//! Small random JSON Schemas that combine the keywords the converter
//! accepts, and instances near each of them.
//!
//! Every choice is read from a [`Source`]: a seeded generator for the fixed
//! run inside `make test`, or the fuzzer's bytes for the long runs
//! (`fuzz/fuzz_targets/differential.rs`). The vocabularies are deliberately
//! tiny (four property names, a handful of strings and numbers) so that
//! constraints from different keywords land on the same property and the
//! same values, which is where converters go wrong.

use serde_json::{json, Map, Value};

/// Where the generator's choices come from.
pub trait Source {
    /// A number in `0..n` (`n` ≥ 1).
    fn below(&mut self, n: u32) -> u32;
}

/// A seeded generator (SplitMix64): the same seed, the same schemas.
pub struct Seeded(u64);

impl Seeded {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }
}

impl Source for Seeded {
    fn below(&mut self, n: u32) -> u32 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (((z >> 32) * u64::from(n.max(1))) >> 32) as u32
    }
}

/// The fuzzer's input read as choices; zeros once it is used up, so every
/// input is a complete (and, past its end, the simplest) schema.
pub struct Bytes<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Bytes<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Self { data, at: 0 }
    }
}

impl Source for Bytes<'_> {
    fn below(&mut self, n: u32) -> u32 {
        let n = n.max(1);
        let mut v = 0u32;
        let mut range = 1u64;
        while range < u64::from(n) {
            let b = self.data.get(self.at).copied().unwrap_or(0);
            self.at += 1;
            v = v.wrapping_mul(256).wrapping_add(u32::from(b));
            range *= 256;
        }
        v % n
    }
}

/// The JSON Schema dialect of a generated schema: it decides which spelling
/// of dependencies and tuples is used, and the `$schema` the validator reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// `dependencies`, `items: [...]` with `additionalItems`.
    Draft7,
    /// `dependentSchemas`, `dependentRequired`, `prefixItems`, `minContains`.
    Draft2020,
}

impl Dialect {
    pub fn uri(self) -> &'static str {
        match self {
            Dialect::Draft7 => "http://json-schema.org/draft-07/schema#",
            Dialect::Draft2020 => "https://json-schema.org/draft/2020-12/schema",
        }
    }
}

const NAMES: [&str; 4] = ["a", "b", "c", "d"];
const EXTRA_NAMES: [&str; 3] = ["e", "ab", "x1"];
const STRINGS: [&str; 10] = [
    "",
    "a",
    "b",
    "ab",
    "abc",
    "x1",
    "bb",
    "2020-01-31",
    "integer",
    "string",
];
const PATTERNS: [&str; 6] = ["^a", "b$", "^[a-c]+$", "x", "^.$", "^[ab]*$"];
const FORMATS: [&str; 2] = ["date", "email"];

/// The generator of schemas and instances.
pub struct Gen<S: Source> {
    pub src: S,
    pub dialect: Dialect,
    /// Nodes left to write in the current schema (bounds its size).
    budget: u32,
    /// The definitions of the current schema (`$defs`/`definitions`), and
    /// how many of them exist yet (a definition may refer to itself and to
    /// those before it: recursion).
    defs: Vec<Value>,
    defining: usize,
}

impl<S: Source> Gen<S> {
    pub fn new(src: S) -> Self {
        Self {
            src,
            dialect: Dialect::Draft7,
            budget: 0,
            defs: Vec::new(),
            defining: 0,
        }
    }

    fn pick(&mut self, n: usize) -> usize {
        self.src.below(n as u32) as usize
    }

    /// True with probability `num/den`.
    fn chance(&mut self, num: u32, den: u32) -> bool {
        self.src.below(den) < num
    }

    fn one<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.pick(xs.len())]
    }

    /// A whole schema, with its `$schema`.
    pub fn schema(&mut self) -> Value {
        self.dialect = if self.chance(1, 2) {
            Dialect::Draft7
        } else {
            Dialect::Draft2020
        };
        self.budget = 6 + self.src.below(14);
        self.defs.clear();
        self.defining = 0;
        let n_defs = if self.chance(1, 4) {
            1 + self.pick(2)
        } else {
            0
        };
        for i in 0..n_defs {
            self.defining = i + 1;
            let d = match self.pick(3) {
                0 => self.object_schema(1),
                _ => self.any_schema(1),
            };
            self.defs.push(d);
        }
        let mut root = match self.pick(4) {
            0 | 1 => self.object_schema(0),
            _ => self.any_schema(0),
        };
        if !root.is_object() {
            root = json!({"allOf": [root]});
        }
        if let Value::Object(m) = &mut root {
            m.insert("$schema".into(), json!(self.dialect.uri()));
            if !self.defs.is_empty() {
                let defs: Map<String, Value> = self
                    .defs
                    .iter()
                    .enumerate()
                    .map(|(i, d)| (format!("d{i}"), d.clone()))
                    .collect();
                m.insert(self.defs_keyword().into(), Value::Object(defs));
            }
        }
        root
    }

    fn defs_keyword(&self) -> &'static str {
        match self.dialect {
            Dialect::Draft7 => "definitions",
            Dialect::Draft2020 => "$defs",
        }
    }

    /// A reference to a definition written so far (or being written).
    fn reference(&mut self) -> Option<Value> {
        if self.defining == 0 {
            return None;
        }
        let i = self.pick(self.defining);
        Some(json!({"$ref": format!("#/{}/d{i}", self.defs_keyword())}))
    }

    /// The definition `reference` names.
    fn resolve<'v>(&'v self, reference: &str) -> Option<&'v Value> {
        let i: usize = reference.rsplit("/d").next()?.parse().ok()?;
        self.defs.get(i)
    }

    fn spend(&mut self) -> bool {
        if self.budget == 0 {
            return false;
        }
        self.budget -= 1;
        true
    }

    /// Any kind of schema.
    pub fn any_schema(&mut self, depth: u32) -> Value {
        if !self.spend() || depth > 4 {
            return self.leaf();
        }
        if self.chance(1, 10) {
            if let Some(r) = self.reference() {
                return r;
            }
        }
        match self.pick(15) {
            0..=2 => self.leaf(),
            3 | 4 => self.object_schema(depth),
            5 => self.array_schema(depth),
            6 => self.combinator(depth, "allOf"),
            7 => self.combinator(depth, "anyOf"),
            8 => self.combinator(depth, "oneOf"),
            9 => json!({"not": self.any_schema(depth + 1)}),
            10 => self.conditional(depth),
            11 | 12 => self.tagged(depth),
            13 => self.tagged_condition(depth),
            _ => {
                // Keywords of several kinds side by side, without a type.
                let mut m = Map::new();
                self.add_object_keywords(&mut m, depth);
                if let Value::Object(extra) = self.leaf() {
                    m.extend(extra);
                }
                Value::Object(m)
            }
        }
    }

    fn combinator(&mut self, depth: u32, keyword: &str) -> Value {
        let n = 1 + self.pick(3);
        let branches: Vec<Value> = (0..n).map(|_| self.any_schema(depth + 1)).collect();
        let mut m = Map::new();
        if self.chance(1, 3) {
            m.insert("type".into(), json!("object"));
        }
        m.insert(keyword.into(), Value::Array(branches));
        Value::Object(m)
    }

    /// A schema that pins some properties to values: the shape of
    /// discriminated unions, dependencies and conditions in real schemas,
    /// where constraints from several places meet on one property.
    fn pinned(&mut self, depth: u32) -> Value {
        let mut props = Map::new();
        for _ in 0..1 + self.pick(2) {
            let name = self.one(&NAMES);
            let s = match self.pick(4) {
                0 => json!({"const": self.scalar()}),
                1 => json!({"enum": [self.scalar(), self.scalar()]}),
                2 => json!({"type": self.one(&["string", "integer", "null", "boolean"])}),
                _ => self.any_schema(depth + 1),
            };
            props.insert(name.into(), s);
        }
        let mut m = Map::new();
        if self.chance(1, 2) {
            m.insert("type".into(), json!("object"));
        }
        if self.chance(1, 2) {
            let names: Vec<String> = props.keys().take(1 + self.pick(2)).cloned().collect();
            m.insert("required".into(), json!(names));
        }
        m.insert("properties".into(), Value::Object(props));
        if self.chance(1, 4) {
            m.insert("additionalProperties".into(), json!(false));
        }
        Value::Object(m)
    }

    /// `oneOf`/`anyOf` of pinned objects, beside properties of its own.
    fn tagged(&mut self, depth: u32) -> Value {
        let n = 2 + self.pick(2);
        let branches: Vec<Value> = (0..n).map(|_| self.pinned(depth + 1)).collect();
        let mut m = Map::new();
        if self.chance(2, 3) {
            m.insert("type".into(), json!("object"));
        }
        if self.chance(1, 2) {
            self.add_object_keywords(&mut m, depth + 1);
        }
        let k = if self.chance(2, 3) { "oneOf" } else { "anyOf" };
        m.insert(k.into(), Value::Array(branches));
        Value::Object(m)
    }

    /// `if` a pinned object, `then`/`else` pinned objects.
    fn tagged_condition(&mut self, depth: u32) -> Value {
        let mut m = Map::new();
        if self.chance(2, 3) {
            m.insert("type".into(), json!("object"));
        }
        if self.chance(1, 2) {
            self.add_object_keywords(&mut m, depth + 1);
        }
        let condition = self.pinned(depth + 1);
        m.insert("if".into(), condition);
        if self.chance(4, 5) {
            let then = self.pinned(depth + 1);
            m.insert("then".into(), then);
        }
        if self.chance(1, 2) {
            let otherwise = self.pinned(depth + 1);
            m.insert("else".into(), otherwise);
        }
        Value::Object(m)
    }

    fn conditional(&mut self, depth: u32) -> Value {
        let mut m = Map::new();
        m.insert("if".into(), self.any_schema(depth + 1));
        if self.chance(3, 4) {
            m.insert("then".into(), self.any_schema(depth + 1));
        }
        if self.chance(2, 3) {
            m.insert("else".into(), self.any_schema(depth + 1));
        }
        if self.chance(1, 3) {
            m.insert("type".into(), json!("object"));
        }
        Value::Object(m)
    }

    /// A schema of scalars, a constant, an enum, or `true`/`false`.
    fn leaf(&mut self) -> Value {
        match self.pick(14) {
            0 => json!(true),
            1 => json!(false),
            2 => json!({}),
            3 => {
                json!({"type": self.one(&["null", "boolean", "integer", "number", "string", "object", "array"])})
            }
            4 => {
                json!({"type": [self.one(&["string", "integer"]), self.one(&["null", "boolean", "object"])]})
            }
            5 | 6 => {
                let n = 1 + self.pick(3);
                let values: Vec<Value> = (0..n).map(|_| self.scalar()).collect();
                json!({"enum": values})
            }
            7 => json!({"const": self.scalar()}),
            8 | 9 => self.string_schema(),
            10 | 11 => self.number_schema(),
            12 => {
                let mut m = Map::new();
                m.insert("type".into(), json!("object"));
                let name = self.one(&NAMES);
                m.insert("required".into(), json!([name]));
                Value::Object(m)
            }
            _ => json!({"type": "array", "items": {"type": self.one(&["integer", "string"])}}),
        }
    }

    fn string_schema(&mut self) -> Value {
        let mut m = Map::new();
        if self.chance(3, 4) {
            m.insert("type".into(), json!("string"));
        }
        if self.chance(1, 2) {
            m.insert("minLength".into(), json!(self.pick(3)));
        }
        if self.chance(1, 2) {
            m.insert("maxLength".into(), json!(self.pick(4)));
        }
        if self.chance(1, 2) {
            m.insert("pattern".into(), json!(self.one(&PATTERNS)));
        }
        if self.chance(1, 8) {
            m.insert("format".into(), json!(self.one(&FORMATS)));
        }
        Value::Object(m)
    }

    fn number_schema(&mut self) -> Value {
        let mut m = Map::new();
        if self.chance(3, 4) {
            m.insert(
                "type".into(),
                json!(self.one(&["integer", "number", "integer"])),
            );
        }
        let bound = |g: &mut Self| -> Value {
            match g.pick(3) {
                0 => json!(g.pick(5) as i64 - 1),
                1 => json!(g.one(&[0.5, 1.5, 2.5])),
                _ => json!(g.pick(12) as i64),
            }
        };
        for k in ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"] {
            if self.chance(1, 3) {
                let b = bound(self);
                m.insert(k.into(), b);
            }
        }
        if self.chance(1, 5) {
            m.insert("multipleOf".into(), json!(self.one(&[2.0, 3.0, 0.5])));
        }
        Value::Object(m)
    }

    fn object_schema(&mut self, depth: u32) -> Value {
        let mut m = Map::new();
        if self.chance(3, 4) {
            m.insert("type".into(), json!("object"));
        }
        self.add_object_keywords(&mut m, depth);
        Value::Object(m)
    }

    /// Object keywords, each with a chance.
    fn add_object_keywords(&mut self, m: &mut Map<String, Value>, depth: u32) {
        let mut props = Map::new();
        let n = self.pick(4);
        for _ in 0..n {
            let name = self.one(&NAMES);
            let s = self.any_schema(depth + 1);
            props.insert(name.into(), s);
        }
        if !props.is_empty() || self.chance(1, 4) {
            m.insert("properties".into(), Value::Object(props));
        }
        if self.chance(1, 2) {
            let k = self.pick(3);
            let names: Vec<&str> = (0..k).map(|_| self.one(&NAMES)).collect();
            let mut unique: Vec<&str> = Vec::new();
            for n in names {
                if !unique.contains(&n) {
                    unique.push(n);
                }
            }
            m.insert("required".into(), json!(unique));
        }
        match self.pick(5) {
            0 => {
                m.insert("additionalProperties".into(), json!(false));
            }
            1 => {
                m.insert("additionalProperties".into(), json!(true));
            }
            2 => {
                let s = self.any_schema(depth + 1);
                m.insert("additionalProperties".into(), s);
            }
            _ => {}
        }
        if self.chance(1, 5) {
            let mut pp = Map::new();
            for _ in 0..1 + self.pick(2) {
                let p = self.one(&PATTERNS);
                let s = self.any_schema(depth + 1);
                pp.insert(p.into(), s);
            }
            m.insert("patternProperties".into(), Value::Object(pp));
        }
        if self.chance(1, 6) {
            let pn = match self.pick(3) {
                0 => json!({"enum": [self.one(&NAMES), self.one(&NAMES), self.one(&EXTRA_NAMES)]}),
                1 => json!({"pattern": self.one(&PATTERNS)}),
                _ => json!({"maxLength": 1}),
            };
            m.insert("propertyNames".into(), pn);
        }
        if self.chance(1, 5) {
            m.insert("minProperties".into(), json!(self.pick(3)));
        }
        if self.chance(1, 5) {
            m.insert("maxProperties".into(), json!(self.pick(4)));
        }
        if self.chance(2, 5) {
            self.add_dependencies(m, depth);
        }
    }

    fn add_dependencies(&mut self, m: &mut Map<String, Value>, depth: u32) {
        let n = 1 + self.pick(2);
        let mut schemas = Map::new();
        let mut lists = Map::new();
        for _ in 0..n {
            let key = self.one(&NAMES);
            if self.chance(1, 3) {
                let others: Vec<&str> = (0..1 + self.pick(2)).map(|_| self.one(&NAMES)).collect();
                lists.insert(key.into(), json!(others));
            } else {
                let s = match self.pick(4) {
                    0 => self.pinned(depth + 1),
                    1 => self.tagged(depth + 1),
                    _ => self.any_schema(depth + 1),
                };
                schemas.insert(key.into(), s);
            }
        }
        match self.dialect {
            Dialect::Draft7 => {
                let mut all = lists;
                for (k, v) in schemas {
                    all.insert(k, v);
                }
                m.insert("dependencies".into(), Value::Object(all));
            }
            Dialect::Draft2020 => {
                if !lists.is_empty() {
                    m.insert("dependentRequired".into(), Value::Object(lists));
                }
                if !schemas.is_empty() {
                    m.insert("dependentSchemas".into(), Value::Object(schemas));
                }
            }
        }
    }

    fn array_schema(&mut self, depth: u32) -> Value {
        let mut m = Map::new();
        if self.chance(3, 4) {
            m.insert("type".into(), json!("array"));
        }
        if self.chance(1, 3) {
            let n = 1 + self.pick(2);
            let tuple: Vec<Value> = (0..n).map(|_| self.any_schema(depth + 1)).collect();
            let rest = if self.chance(1, 2) {
                Some(self.any_schema(depth + 1))
            } else {
                None
            };
            match self.dialect {
                Dialect::Draft7 => {
                    m.insert("items".into(), Value::Array(tuple));
                    if let Some(r) = rest {
                        m.insert("additionalItems".into(), r);
                    }
                }
                Dialect::Draft2020 => {
                    m.insert("prefixItems".into(), Value::Array(tuple));
                    if let Some(r) = rest {
                        m.insert("items".into(), r);
                    }
                }
            }
        } else if self.chance(2, 3) {
            let s = self.any_schema(depth + 1);
            m.insert("items".into(), s);
        }
        if self.chance(1, 3) {
            m.insert("minItems".into(), json!(self.pick(3)));
        }
        if self.chance(1, 3) {
            m.insert("maxItems".into(), json!(self.pick(4)));
        }
        if self.chance(1, 6) {
            m.insert("uniqueItems".into(), json!(true));
        }
        if self.chance(1, 5) {
            let s = self.any_schema(depth + 1);
            m.insert("contains".into(), s);
            if self.dialect == Dialect::Draft2020 {
                if self.chance(1, 3) {
                    m.insert("minContains".into(), json!(self.pick(3)));
                }
                if self.chance(1, 3) {
                    m.insert("maxContains".into(), json!(1 + self.pick(2)));
                }
            }
        }
        Value::Object(m)
    }

    /// One of the shared values: the same few strings, numbers and keywords
    /// everywhere, so that enums meet the other constraints.
    fn scalar(&mut self) -> Value {
        match self.pick(7) {
            0 | 1 => json!(self.one(&STRINGS)),
            2 => json!(self.one(&NAMES)),
            3 => json!(self.pick(5) as i64 - 1),
            4 => json!(self.one(&[0.5, 1.5, -2.5])),
            5 => json!(self.chance(1, 2)),
            _ => Value::Null,
        }
    }

    /// Any small value.
    pub fn random_value(&mut self, depth: u32) -> Value {
        if depth > 3 {
            return self.scalar();
        }
        match self.pick(9) {
            0..=5 => self.scalar(),
            6 => {
                let n = self.pick(3);
                Value::Array((0..n).map(|_| self.random_value(depth + 1)).collect())
            }
            _ => {
                let mut m = Map::new();
                for _ in 0..self.pick(3) {
                    let k = if self.chance(3, 4) {
                        self.one(&NAMES)
                    } else {
                        self.one(&EXTRA_NAMES)
                    };
                    let v = self.random_value(depth + 1);
                    m.insert(k.into(), v);
                }
                Value::Object(m)
            }
        }
    }

    /// A value that tries to meet `schema` (it often does not: the
    /// validator labels it).
    pub fn instance(&mut self, schema: &Value, depth: u32) -> Value {
        let Value::Object(m) = schema else {
            return self.random_value(depth);
        };
        if depth > 5 || self.chance(1, 12) {
            return self.random_value(depth);
        }
        if let Some(Value::String(r)) = m.get("$ref") {
            if let Some(target) = self.resolve(r).cloned() {
                return self.instance(&target, depth + 1);
            }
        }
        if let Some(Value::Array(values)) = m.get("enum") {
            if !values.is_empty() && self.chance(5, 6) {
                return values[self.pick(values.len())].clone();
            }
        }
        if let Some(c) = m.get("const") {
            if self.chance(5, 6) {
                return c.clone();
            }
        }
        // Follow one branch of a combinator now and then.
        let mut guides: Vec<&Value> = Vec::new();
        for k in ["allOf", "anyOf", "oneOf"] {
            if let Some(Value::Array(bs)) = m.get(k) {
                guides.extend(bs.iter());
            }
        }
        for k in ["then", "else", "if"] {
            if let Some(s) = m.get(k) {
                guides.push(s);
            }
        }
        let own_kind = kind_of(m);
        if !guides.is_empty() && (own_kind.is_none() || self.chance(1, 3)) {
            let g = guides[self.pick(guides.len())];
            let v = self.instance(g, depth + 1);
            if own_kind.is_none() || !self.chance(1, 2) {
                return v;
            }
        }
        let kind = match own_kind {
            Some(k) => k,
            None => match m.get("type") {
                Some(Value::Array(ts)) if !ts.is_empty() => ts[self.pick(ts.len())]
                    .as_str()
                    .unwrap_or("null")
                    .to_owned(),
                _ => return self.random_value(depth),
            },
        };
        match kind.as_str() {
            "object" => self.object_instance(m, depth),
            "array" => self.array_instance(m, depth),
            "string" => self.string_instance(m),
            "integer" | "number" => self.number_instance(m, kind == "integer"),
            "boolean" => json!(self.chance(1, 2)),
            "null" => Value::Null,
            _ => self.random_value(depth),
        }
    }

    fn object_instance(&mut self, m: &Map<String, Value>, depth: u32) -> Value {
        let empty = Map::new();
        let props = m
            .get("properties")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let mut out = Map::new();
        let required: Vec<String> = m
            .get("required")
            .and_then(Value::as_array)
            .map(|r| {
                r.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        for (name, s) in props {
            if required.contains(name) || self.chance(2, 3) {
                let v = self.instance(s, depth + 1);
                out.insert(name.clone(), v);
            }
        }
        for name in &required {
            if !out.contains_key(name) {
                let v = self.random_value(depth + 1);
                out.insert(name.clone(), v);
            }
        }
        // Keys the dependencies talk about.
        for k in ["dependencies", "dependentSchemas", "dependentRequired"] {
            if let Some(Value::Object(deps)) = m.get(k) {
                for (key, dep) in deps {
                    if self.chance(1, 2) && !out.contains_key(key) {
                        let v = match props.get(key) {
                            Some(s) => self.instance(s, depth + 1),
                            None => self.random_value(depth + 1),
                        };
                        out.insert(key.clone(), v);
                    }
                    if out.contains_key(key) {
                        if let Value::Array(names) = dep {
                            for n in names.iter().filter_map(Value::as_str) {
                                if !out.contains_key(n) {
                                    let v = self.random_value(depth + 1);
                                    out.insert(n.to_owned(), v);
                                }
                            }
                        } else if self.chance(1, 2) {
                            // Take the dependency's own properties.
                            if let Value::Object(extra) = self.instance(dep, depth + 1) {
                                for (k2, v2) in extra {
                                    out.insert(k2, v2);
                                }
                            }
                        }
                    }
                }
            }
        }
        if self.chance(1, 4) {
            let k = if self.chance(1, 2) {
                self.one(&EXTRA_NAMES)
            } else {
                self.one(&NAMES)
            };
            let v = match m.get("additionalProperties") {
                Some(s @ Value::Object(_)) => self.instance(s, depth + 1),
                _ => self.random_value(depth + 1),
            };
            out.insert(k.into(), v);
        }
        Value::Object(out)
    }

    fn array_instance(&mut self, m: &Map<String, Value>, depth: u32) -> Value {
        let min = m.get("minItems").and_then(Value::as_u64).unwrap_or(0) as usize;
        let max = m
            .get("maxItems")
            .and_then(Value::as_u64)
            .map_or(3, |x| x as usize)
            .max(min);
        let n = min + self.pick(max - min + 1);
        let tuple: &[Value] = match (m.get("prefixItems"), m.get("items")) {
            (Some(Value::Array(t)), _) | (None, Some(Value::Array(t))) => t,
            _ => &[],
        };
        let rest = match (m.get("prefixItems"), m.get("items")) {
            (Some(_), Some(r)) => Some(r),
            (None, Some(Value::Array(_))) => m.get("additionalItems"),
            (None, Some(r)) => Some(r),
            _ => None,
        };
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            let v = match (tuple.get(i), rest) {
                (Some(s), _) => self.instance(s, depth + 1),
                (None, Some(s)) => self.instance(s, depth + 1),
                (None, None) => self.random_value(depth + 1),
            };
            out.push(v);
        }
        if let Some(c) = m.get("contains") {
            if !out.is_empty() && self.chance(1, 2) {
                let i = self.pick(out.len());
                out[i] = self.instance(c, depth + 1);
            }
        }
        Value::Array(out)
    }

    fn string_instance(&mut self, m: &Map<String, Value>) -> Value {
        let min = m.get("minLength").and_then(Value::as_u64).unwrap_or(0) as usize;
        let max = m
            .get("maxLength")
            .and_then(Value::as_u64)
            .map(|x| x as usize);
        let fits: Vec<&str> = STRINGS
            .iter()
            .chain(NAMES.iter())
            .copied()
            .filter(|s| s.len() >= min && max.is_none_or(|x| s.len() <= x))
            .collect();
        if fits.is_empty() || self.chance(1, 6) {
            return json!(self.one(&STRINGS));
        }
        json!(fits[self.pick(fits.len())])
    }

    fn number_instance(&mut self, m: &Map<String, Value>, integer: bool) -> Value {
        let lo = ["minimum", "exclusiveMinimum"]
            .iter()
            .filter_map(|k| m.get(*k).and_then(Value::as_f64))
            .fold(-2.0f64, f64::max);
        let hi = ["maximum", "exclusiveMaximum"]
            .iter()
            .filter_map(|k| m.get(*k).and_then(Value::as_f64))
            .fold(12.0f64, f64::min);
        let lo = lo.ceil() as i64;
        let hi = (hi.floor() as i64).max(lo);
        let n = lo + self.pick((hi - lo + 1).min(20) as usize) as i64;
        if !integer && self.chance(1, 3) {
            return json!(n as f64 + 0.5);
        }
        json!(n)
    }

    /// `value` changed in one or two places: a key dropped or added, a
    /// value replaced, an item added or dropped.
    pub fn mutate(&mut self, value: &Value) -> Value {
        let mut v = value.clone();
        for _ in 0..1 + self.pick(2) {
            let paths = paths(&v);
            let path = &paths[self.pick(paths.len())];
            let Some(target) = at_mut(&mut v, path) else {
                continue;
            };
            match target {
                Value::Object(o) if self.chance(1, 2) => {
                    if !o.is_empty() && self.chance(1, 2) {
                        let i = self.pick(o.len());
                        if let Some(k) = o.keys().nth(i).cloned() {
                            o.shift_remove(&k);
                        }
                    } else {
                        let k = if self.chance(2, 3) {
                            self.one(&NAMES)
                        } else {
                            self.one(&EXTRA_NAMES)
                        };
                        let val = self.random_value(2);
                        o.insert(k.into(), val);
                    }
                }
                Value::Array(a) if self.chance(1, 2) => {
                    if !a.is_empty() && self.chance(1, 2) {
                        let i = self.pick(a.len());
                        a.remove(i);
                    } else {
                        let val = self.random_value(2);
                        a.push(val);
                    }
                }
                other => *other = self.random_value(2),
            }
        }
        v
    }
}

/// The kind the schema's own `type` names, when it names one.
fn kind_of(m: &Map<String, Value>) -> Option<String> {
    match m.get("type") {
        Some(Value::String(t)) => Some(t.clone()),
        _ => {
            let has = |ks: &[&str]| ks.iter().any(|k| m.contains_key(*k));
            if has(&[
                "properties",
                "required",
                "additionalProperties",
                "patternProperties",
            ]) {
                Some("object".into())
            } else if has(&["items", "prefixItems", "minItems", "maxItems", "contains"]) {
                Some("array".into())
            } else if has(&["minLength", "maxLength", "pattern"]) {
                Some("string".into())
            } else if has(&["minimum", "maximum", "multipleOf"]) {
                Some("number".into())
            } else {
                None
            }
        }
    }
}

/// Every place in `v` (a path of object keys and array indices).
pub fn paths(v: &Value) -> Vec<Vec<Step>> {
    let mut out = vec![Vec::new()];
    let mut stack = vec![(Vec::new(), v)];
    while let Some((path, v)) = stack.pop() {
        match v {
            Value::Object(o) => {
                for (k, x) in o {
                    let mut p = path.clone();
                    p.push(Step::Key(k.clone()));
                    out.push(p.clone());
                    stack.push((p, x));
                }
            }
            Value::Array(a) => {
                for (i, x) in a.iter().enumerate() {
                    let mut p = path.clone();
                    p.push(Step::Index(i));
                    out.push(p.clone());
                    stack.push((p, x));
                }
            }
            _ => {}
        }
    }
    out
}

/// One step of a path into a JSON value.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    Key(String),
    Index(usize),
}

/// The value at `path`.
pub fn at_mut<'v>(v: &'v mut Value, path: &[Step]) -> Option<&'v mut Value> {
    let mut cur = v;
    for step in path {
        cur = match (cur, step) {
            (Value::Object(o), Step::Key(k)) => o.get_mut(k)?,
            (Value::Array(a), Step::Index(i)) => a.get_mut(*i)?,
            _ => return None,
        };
    }
    Some(cur)
}
