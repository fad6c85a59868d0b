//! PHP classes as record types, through PHP's own Reflection API: reading a
//! class's public typed properties for `Schema::fromClass()`, and building
//! an instance from a decoded answer for `Response::into()`.

use std::collections::BTreeMap;

use ext_php_rs::convert::{IntoZval, IntoZvalDyn};
use ext_php_rs::types::{ZendCallable, ZendHashTable, ZendObject, Zval};
use ext_php_rs::zend::{ClassEntry, ExecutorGlobals};
use serde_json::Value;

use super::attributes::{
    constraint_keywords, description_text, list_of_type, CONSTRAINT, DESCRIPTION, LIST_OF,
};
use super::convert;
use crate::schema::builder::SchemaNode;
use crate::schema::record::{self, Field, FieldType, Record, Records};

/// Most classes one schema reads (nested and listed ones included).
const MAX_CLASSES: usize = 256;

/// `ReflectionProperty::IS_PUBLIC`.
const IS_PUBLIC: i64 = 1;

/// The exception a PHP call left pending, as text (and cleared).
fn thrown() -> Result<(), String> {
    match ExecutorGlobals::take_exception() {
        None => Ok(()),
        Some(e) => {
            let message = e
                .try_call_method("getMessage", vec![])
                .ok()
                .and_then(|m| m.string())
                .unwrap_or_default();
            Err(message)
        }
    }
}

/// Call the PHP function (or `Class::method`) `name`.
fn call(name: &str, args: Vec<&dyn IntoZvalDyn>) -> Result<Zval, String> {
    let callable =
        ZendCallable::try_from_name(name).map_err(|_| format!("{name} cannot be called"))?;
    let result = callable.try_call(args);
    thrown()?;
    result.map_err(|e| format!("{name}: {e}"))
}

/// Call `method` of the object in `target`.
fn method(target: &Zval, name: &str, args: Vec<&dyn IntoZvalDyn>) -> Result<Zval, String> {
    let result = target.try_call_method(name, args);
    thrown()?;
    result.map_err(|e| format!("{name}(): {e}"))
}

/// `new $class(...$args)` for a built-in class (the Reflection classes).
fn new_object(class: &str, args: Vec<&dyn IntoZvalDyn>) -> Result<Zval, String> {
    let ce = ClassEntry::try_find(class).ok_or_else(|| format!("class {class} is missing"))?;
    let object = ZendObject::new(ce)
        .into_zval(false)
        .map_err(|e| e.to_string())?;
    method(&object, "__construct", args)?;
    Ok(object)
}

fn text(z: &Zval) -> String {
    z.string().unwrap_or_default()
}

fn truthy(z: &Zval) -> bool {
    z.bool().unwrap_or(false)
}

fn class_of(z: &Zval) -> String {
    z.object()
        .and_then(|o| o.get_class_name().ok())
        .unwrap_or_default()
}

fn items(z: &Zval) -> Vec<&Zval> {
    z.array()
        .map(|t: &ZendHashTable| t.values().collect())
        .unwrap_or_default()
}

/// The attribute instances of class `attribute` on a reflector.
fn attributes(reflector: &Zval, attribute: &str) -> Result<Vec<Zval>, String> {
    let found = method(reflector, "getAttributes", vec![&attribute])?;
    items(&found)
        .into_iter()
        .map(|a| method(a, "newInstance", vec![]))
        .collect()
}

fn description_of(reflector: &Zval) -> Result<Option<String>, String> {
    Ok(attributes(reflector, DESCRIPTION)?
        .first()
        .and_then(description_text))
}

/// The schema of `class`.
pub fn class_schema(class: &str) -> Result<SchemaNode, String> {
    let (root, records) = read(class)?;
    record::schema(&root, &records).map_err(|e| format!("Schema::fromClass({class}): {e}"))
}

/// Read `class` and every class it reaches: its canonical name, and the
/// records.
fn read(class: &str) -> Result<(String, Records), String> {
    let mut reader = Reader {
        records: BTreeMap::new(),
        queue: Vec::new(),
        origin: class.to_owned(),
    };
    let root = reader.canonical(class, None)?;
    reader.queue.push(root.clone());
    while let Some(next) = reader.queue.pop() {
        if reader.records.contains_key(&next) {
            continue;
        }
        if reader.records.len() >= MAX_CLASSES {
            return Err(format!(
                "Schema::fromClass({class}): more than {MAX_CLASSES} classes are reachable from it"
            ));
        }
        let record = reader.record(&next)?;
        reader.records.insert(next, record);
    }
    Ok((root, reader.records))
}

struct Reader {
    records: Records,
    queue: Vec<String>,
    origin: String,
}

impl Reader {
    fn fail(&self, at: &str, why: impl std::fmt::Display) -> String {
        if at == self.origin {
            format!("Schema::fromClass({at}): {why}")
        } else {
            format!("Schema::fromClass({}): {at}: {why}", self.origin)
        }
    }

    /// The declared name of a class that can be built: not an interface,
    /// an abstract class, an enum or a trait.
    fn canonical(&self, class: &str, at: Option<&str>) -> Result<String, String> {
        let at = at.unwrap_or(class);
        let exists = call("class_exists", vec![&class])?;
        if !truthy(&exists) {
            let why = if truthy(&call("interface_exists", vec![&class])?) {
                format!("{class} is an interface; a schema needs a class it can build")
            } else {
                format!("class {class} does not exist")
            };
            return Err(self.fail(at, why));
        }
        let rc = new_object("ReflectionClass", vec![&class])?;
        if truthy(&method(&rc, "isAbstract", vec![])?) {
            return Err(self.fail(
                at,
                format!("{class} is abstract; a schema needs a class it can build"),
            ));
        }
        Ok(text(&method(&rc, "getName", vec![])?))
    }

    fn record(&mut self, class: &str) -> Result<Record, String> {
        let rc = new_object("ReflectionClass", vec![&class])?;
        let namespace = text(&method(&rc, "getNamespaceName", vec![])?);
        let description = description_of(&rc)?;
        let ctor = method(&rc, "getConstructor", vec![])?;
        let ctor_doc = if ctor.is_null() {
            String::new()
        } else {
            text(&method(&ctor, "getDocComment", vec![])?)
        };
        let props = method(&rc, "getProperties", vec![&IS_PUBLIC])?;
        let mut fields = Vec::new();
        for p in items(&props) {
            if truthy(&method(p, "isStatic", vec![])?) {
                continue;
            }
            let name = text(&method(p, "getName", vec![])?);
            let at = format!("{class}::${name}");
            let ty = method(p, "getType", vec![])?;
            if ty.is_null() {
                return Err(self.fail(&at, "has no type; declare one (string, int, float, bool, an enum, a class, or array with #[ListOf])"));
            }
            let doc = text(&method(p, "getDocComment", vec![])?);
            let list_of = attributes(p, LIST_OF)?.first().and_then(list_of_type);
            let element = Element {
                list_of,
                doc: &doc,
                ctor_doc: &ctor_doc,
                property: &name,
                namespace: &namespace,
                class,
            };
            let ty = self.field_type(&ty, &element, &at)?;
            let optional = truthy(&method(p, "hasDefaultValue", vec![])?)
                || promoted_default(p, &ctor, &name)?.is_some();
            let mut constraints = Vec::new();
            for c in attributes(p, CONSTRAINT)? {
                constraints.extend(constraint_keywords(&c).unwrap_or_default());
            }
            fields.push(Field {
                name,
                ty,
                optional,
                description: description_of(p)?,
                constraints,
            });
        }
        Ok(Record {
            name: class.to_owned(),
            description,
            fields,
        })
    }

    /// The field type of a `ReflectionType`.
    fn field_type(&mut self, ty: &Zval, element: &Element, at: &str) -> Result<FieldType, String> {
        match class_of(ty).as_str() {
            "ReflectionNamedType" => {
                let name = text(&method(ty, "getName", vec![])?);
                let nullable = truthy(&method(ty, "allowsNull", vec![])?);
                let inner = self.named(&name, element, at)?;
                Ok(if nullable && !matches!(inner, FieldType::Null) {
                    FieldType::Nullable(Box::new(inner))
                } else {
                    inner
                })
            }
            "ReflectionUnionType" => {
                let members = method(ty, "getTypes", vec![])?;
                let mut types = Vec::new();
                let mut nullable = false;
                let mut classes = Vec::new();
                for m in items(&members) {
                    let name = text(&method(m, "getName", vec![])?);
                    if name == "null" {
                        nullable = true;
                        continue;
                    }
                    let t = self.named(&name, element, at)?;
                    match &t {
                        FieldType::Record(_) => classes.push(name),
                        FieldType::Enum { .. } | FieldType::DateTime { .. } | FieldType::List(_) => {
                            return Err(self.fail(at, format!("the union type has {name} in it, which a decoded answer cannot be told apart by (an enum's values and a date are strings, an array is a list): use one type, or a nullable one")))
                        }
                        _ => {}
                    }
                    types.push(t);
                }
                if classes.len() > 1 {
                    return Err(self.fail(at, format!("a union of classes ({}) has no discriminator to tell which one an answer is; use one class", classes.join(", "))));
                }
                let inner = if types.len() == 1 {
                    types.remove(0)
                } else {
                    FieldType::Union(types)
                };
                Ok(if nullable {
                    FieldType::Nullable(Box::new(inner))
                } else {
                    inner
                })
            }
            other => Err(self.fail(
                at,
                format!("its type ({other}, an intersection) cannot be expressed as a schema"),
            )),
        }
    }

    /// The field type of a type name.
    fn named(&mut self, name: &str, element: &Element, at: &str) -> Result<FieldType, String> {
        Ok(match name {
            "string" => FieldType::String,
            "int" => FieldType::Integer,
            "float" => FieldType::Number,
            "bool" => FieldType::Boolean,
            "true" | "false" => FieldType::Enum {
                type_name: String::new(),
                backed: true,
                values: vec![Value::Bool(name == "true")],
            },
            "null" => FieldType::Null,
            "array" => {
                let item = element.item_type(at).map_err(|why| self.fail(at, why))?;
                FieldType::List(Box::new(self.element(&item, element, at)?))
            }
            "self" | "static" => FieldType::Record(element.class.to_owned()),
            "mixed" | "object" | "iterable" | "callable" | "Closure" | "Generator" | "resource" => {
                return Err(self.fail(
                    at,
                    format!(
                        "its type {name} cannot be expressed as a schema; declare a precise type"
                    ),
                ))
            }
            class => self.class_type(class, at)?,
        })
    }

    /// A list item type named in `#[ListOf]` or a docblock.
    fn element(&mut self, name: &str, element: &Element, at: &str) -> Result<FieldType, String> {
        let scalar = match name.to_ascii_lowercase().as_str() {
            "string" | "non-empty-string" => Some(FieldType::String),
            "int" | "integer" => Some(FieldType::Integer),
            "float" | "double" => Some(FieldType::Number),
            "bool" | "boolean" => Some(FieldType::Boolean),
            _ => None,
        };
        if let Some(s) = scalar {
            return Ok(s);
        }
        let class = element.resolve(name).ok_or_else(|| {
            self.fail(at, format!("cannot find the class {name} its items are declared with; write its full name, or #[ListOf({name}::class)]"))
        })?;
        self.class_type(&class, at)
    }

    /// An enum, a date-time class or a class to read as a record.
    fn class_type(&mut self, class: &str, at: &str) -> Result<FieldType, String> {
        if truthy(&call("enum_exists", vec![&class])?) {
            return enum_type(class).map_err(|why| self.fail(at, why));
        }
        let date = call("is_a", vec![&class, &"DateTimeInterface", &true])?;
        if truthy(&date) {
            let type_name = if class.eq_ignore_ascii_case("DateTimeInterface") {
                "DateTimeImmutable".to_owned()
            } else {
                class.to_owned()
            };
            return Ok(FieldType::DateTime { type_name });
        }
        let canonical = self.canonical(class, Some(at))?;
        if !self.records.contains_key(&canonical) {
            self.queue.push(canonical.clone());
        }
        Ok(FieldType::Record(canonical))
    }
}

/// Where a list's item type may be written.
struct Element<'a> {
    list_of: Option<String>,
    doc: &'a str,
    ctor_doc: &'a str,
    property: &'a str,
    namespace: &'a str,
    class: &'a str,
}

impl Element<'_> {
    /// The item type's name: `#[ListOf]`, else `@var list<T>` on the
    /// property, else `@param list<T> $name` on the constructor.
    fn item_type(&self, _at: &str) -> Result<String, String> {
        if let Some(t) = &self.list_of {
            return Ok(t.clone());
        }
        let from_var = docblock_type(self.doc, "@var", None);
        let from_param = docblock_type(self.ctor_doc, "@param", Some(self.property));
        match from_var.or(from_param) {
            Some(t) => list_item(&t).ok_or_else(|| {
                format!("its docblock type {t} is not a list of one type (list<T>, array<T>, array<int, T>, T[])")
            }),
            None => Err("is an array with no item type; add #[ListOf(Foo::class)] or a @var list<Foo> docblock".to_owned()),
        }
    }

    /// A class name from a docblock: fully qualified, or in the class's
    /// namespace, or global. (`use` imports are not visible to reflection.)
    fn resolve(&self, name: &str) -> Option<String> {
        let candidates = if let Some(full) = name.strip_prefix('\\') {
            vec![full.to_owned()]
        } else if self.namespace.is_empty() {
            vec![name.to_owned()]
        } else {
            vec![format!("{}\\{name}", self.namespace), name.to_owned()]
        };
        candidates.into_iter().find(|c| {
            ["class_exists", "enum_exists"]
                .iter()
                .any(|f| call(f, vec![&c.as_str()]).is_ok_and(|z| truthy(&z)))
        })
    }
}

/// The type written after `tag` in a docblock (for `@param`, the one for
/// `$param`), generics included.
fn docblock_type(doc: &str, tag: &str, param: Option<&str>) -> Option<String> {
    let mut rest = doc;
    while let Some(i) = rest.find(tag) {
        rest = &rest[i + tag.len()..];
        let line = rest.lines().next().unwrap_or("").trim_start();
        let (ty, after) = split_type(line);
        match param {
            None => return Some(ty.to_owned()),
            Some(p) => {
                let var = after.split_whitespace().next().unwrap_or("");
                if var.trim_start_matches('&').trim_start_matches("...") == format!("${p}") {
                    return Some(ty.to_owned());
                }
            }
        }
    }
    None
}

/// A type expression at the start of `line` (up to the first space outside
/// `<…>`), and what follows it.
fn split_type(line: &str) -> (&str, &str) {
    let mut depth = 0usize;
    for (i, c) in line.char_indices() {
        match c {
            '<' | '{' | '(' => depth += 1,
            '>' | '}' | ')' => depth = depth.saturating_sub(1),
            c if c.is_whitespace() && depth == 0 => return (&line[..i], &line[i..]),
            _ => {}
        }
    }
    (line, "")
}

/// `T` of `list<T>`, `array<T>`, `array<int, T>`, `non-empty-list<T>`,
/// `T[]`, with `|null`/`?` around the whole dropped.
fn list_item(ty: &str) -> Option<String> {
    let ty = ty.trim().trim_start_matches('?');
    let ty = ty
        .split('|')
        .map(str::trim)
        .filter(|t| !t.eq_ignore_ascii_case("null"))
        .collect::<Vec<_>>();
    let [ty] = ty.as_slice() else { return None };
    if let Some(item) = ty.strip_suffix("[]") {
        return simple(item);
    }
    let open = ty.find('<')?;
    let head = ty[..open].to_ascii_lowercase();
    if !matches!(
        head.as_str(),
        "list" | "array" | "non-empty-list" | "non-empty-array"
    ) {
        return None;
    }
    let inner = ty[open + 1..].strip_suffix('>')?;
    let parts: Vec<&str> = inner.split(',').map(str::trim).collect();
    match parts.as_slice() {
        [item] => simple(item),
        [key, item]
            if matches!(*key, "int" | "array-key") && head.starts_with("array")
                || head.starts_with("non-empty-array") =>
        {
            simple(item)
        }
        _ => None,
    }
}

/// A plain type name (no generics, unions or shapes).
fn simple(name: &str) -> Option<String> {
    let ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '\\' || c == '-');
    ok.then(|| name.to_owned())
}

/// The field type of the enum `class`: its values (backed) or case names.
fn enum_type(class: &str) -> Result<FieldType, String> {
    let re = new_object("ReflectionEnum", vec![&class])?;
    let backed = truthy(&method(&re, "isBacked", vec![])?);
    let cases = call(&format!("{class}::cases"), vec![])?;
    let mut values = Vec::new();
    for case in items(&cases) {
        values.push(case_value(case, backed, class)?);
    }
    if values.is_empty() {
        return Err(format!("enum {class} has no cases"));
    }
    let type_name = text(&method(&re, "getName", vec![])?);
    Ok(FieldType::Enum {
        type_name,
        backed,
        values,
    })
}

/// What stands for an enum case in a schema: its value (`backed`) or its
/// name.
fn case_value(case: &Zval, backed: bool, class: &str) -> Result<Value, String> {
    let v = case_property(case, if backed { "value" } else { "name" })
        .ok_or_else(|| format!("enum {class} has a case without a value"))?;
    match (v.long(), v.string()) {
        (Some(i), _) => Ok(Value::from(i)),
        (None, Some(s)) => Ok(Value::from(s)),
        _ => Err(format!(
            "enum {class} has a case that is neither int nor string"
        )),
    }
}

/// A property of an enum case (`name`, `value`), read from its table:
/// reading it through the object handlers asks for write access.
fn case_property<'a>(case: &'a Zval, name: &str) -> Option<&'a Zval> {
    case.object()?.get_properties().ok()?.get(name)
}

/// The default of the promoted constructor parameter behind property
/// `name`, if it is one and has one.
fn promoted_default(property: &Zval, ctor: &Zval, name: &str) -> Result<Option<Zval>, String> {
    if ctor.is_null() || !truthy(&method(property, "isPromoted", vec![])?) {
        return Ok(None);
    }
    for param in items(&method(ctor, "getParameters", vec![])?) {
        if text(&method(param, "getName", vec![])?) == name {
            if truthy(&method(param, "isDefaultValueAvailable", vec![])?) {
                return Ok(Some(method(param, "getDefaultValue", vec![])?));
            }
            return Ok(None);
        }
    }
    Ok(None)
}

/// A value of `Schema::enum()`: a backed enum case is its value, a unit
/// case its name; anything else as JSON.
pub fn enum_value(item: &Zval) -> Result<Value, String> {
    if let Some(object) = item.object() {
        let class = object.get_class_name().unwrap_or_default();
        if truthy(&call("enum_exists", vec![&class.as_str()])?) {
            let backed = case_property(item, "value").is_some();
            return case_value(item, backed, &class);
        }
    }
    convert::json_value(item, "enum value")
}

/// An instance of `class` built from `value`, checked against the class's
/// types as it is built. `Err` says where the answer does not fit.
pub fn hydrate(class: &str, value: &Value) -> Result<Zval, String> {
    let (root, records) = read(class)?;
    let schema = record::schema(&root, &records).map_err(|e| e.to_string())?;
    let hydrator = Hydrator { records: &records };
    let object = hydrator.record(&root, value, "")?;
    // What the types cannot say (bounds, patterns, formats), the schema
    // does: judged as a validator reads it.
    if let Ok(compiled) = crate::schema::compile(&schema.to_value()) {
        if crate::schema::ir::validates(&compiled.root, value, &compiled.defs) == Some(false) {
            return Err(format!(
                "the answer does not satisfy the constraints of {root}'s schema"
            ));
        }
    }
    Ok(object)
}

struct Hydrator<'a> {
    records: &'a Records,
}

/// A JSON pointer for messages ("/" for the root).
fn shown(path: &str) -> &str {
    if path.is_empty() {
        "/"
    } else {
        path
    }
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "an integer",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

impl Hydrator<'_> {
    fn value(&self, ty: &FieldType, value: &Value, path: &str) -> Result<Zval, String> {
        let mismatch = |want: &str| {
            format!(
                "at {}: expected {want}, got {}",
                shown(path),
                kind_of(value)
            )
        };
        let mut z = Zval::new();
        match (ty, value) {
            (FieldType::Nullable(_), Value::Null) | (FieldType::Null, Value::Null) => z.set_null(),
            (FieldType::Nullable(inner), _) => return self.value(inner, value, path),
            (FieldType::String, Value::String(s)) => {
                z.set_string(s, false).map_err(|e| e.to_string())?;
            }
            (FieldType::Integer, Value::Number(n)) => {
                let want = if n.is_f64() {
                    "an integer"
                } else {
                    "an integer that fits PHP's int"
                };
                z.set_long(n.as_i64().ok_or_else(|| mismatch(want))?);
            }
            (FieldType::Number, Value::Number(n)) => {
                z.set_double(n.as_f64().ok_or_else(|| mismatch("a number"))?);
            }
            (FieldType::Boolean, Value::Bool(b)) => z.set_bool(*b),
            (
                FieldType::Enum {
                    type_name,
                    backed,
                    values,
                },
                v,
            ) => {
                if !values.iter().any(|x| crate::schema::ir::json_eq(x, v)) {
                    let listed: Vec<String> = values.iter().map(Value::to_string).collect();
                    return Err(format!(
                        "at {}: {v} is not one of {}",
                        shown(path),
                        listed.join(", ")
                    ));
                }
                return match (type_name.is_empty(), backed, v) {
                    (true, _, v) => convert::json_to_zval(v),
                    (false, true, v) => {
                        let arg = convert::json_to_zval(v)?;
                        call(&format!("{type_name}::from"), vec![&arg])
                    }
                    (false, false, Value::String(case)) => {
                        call("constant", vec![&format!("{type_name}::{case}").as_str()])
                    }
                    _ => Err(mismatch("a case name")),
                };
            }
            (FieldType::DateTime { type_name }, Value::String(s)) => {
                let rc = new_object("ReflectionClass", vec![&type_name.as_str()])?;
                return method(&rc, "newInstance", vec![&s.as_str()]).map_err(|e| {
                    format!("at {}: {s:?} is not a date PHP reads: {e}", shown(path))
                });
            }
            (FieldType::List(item), Value::Array(values)) => {
                let mut table =
                    ZendHashTable::with_capacity(u32::try_from(values.len()).unwrap_or(u32::MAX));
                for (i, v) in values.iter().enumerate() {
                    let element = self.value(item, v, &format!("{path}/{i}"))?;
                    table.push(element).map_err(|e| e.to_string())?;
                }
                z.set_hashtable(table);
            }
            (FieldType::Record(class), _) => return self.record(class, value, path),
            (FieldType::Union(types), _) => {
                let fits = |t: &FieldType| match (t, value) {
                    (FieldType::String, Value::String(_))
                    | (FieldType::Boolean, Value::Bool(_))
                    | (FieldType::Number, Value::Number(_))
                    | (FieldType::Record(_), Value::Object(_)) => true,
                    (FieldType::Integer, Value::Number(n)) => n.is_i64(),
                    _ => false,
                };
                // An integer goes to `int` before `float` when both are there.
                let pick = types
                    .iter()
                    .find(|t| matches!(t, FieldType::Integer) && fits(t))
                    .or_else(|| types.iter().find(|t| fits(t)));
                return match pick {
                    Some(t) => self.value(t, value, path),
                    None => Err(mismatch("a value of one of the union's types")),
                };
            }
            (FieldType::String | FieldType::DateTime { .. }, _) => {
                return Err(mismatch("a string"))
            }
            (FieldType::Integer, _) => return Err(mismatch("an integer")),
            (FieldType::Number, _) => return Err(mismatch("a number")),
            (FieldType::Boolean, _) => return Err(mismatch("a boolean")),
            (FieldType::Null, _) => return Err(mismatch("null")),
            (FieldType::List(_), _) => return Err(mismatch("an array")),
        }
        Ok(z)
    }

    /// An instance of `class` from the object `value`: through its
    /// constructor when every required parameter has a value in the answer,
    /// else without it (each property set through reflection).
    fn record(&self, class: &str, value: &Value, path: &str) -> Result<Zval, String> {
        let Value::Object(map) = value else {
            return Err(format!(
                "at {}: expected an object for {class}, got {}",
                shown(path),
                kind_of(value)
            ));
        };
        let record = self
            .records
            .get(class)
            .ok_or_else(|| format!("class {class} was not read"))?;
        if let Some(key) = map
            .keys()
            .find(|k| !record.fields.iter().any(|f| &f.name == *k))
        {
            return Err(format!(
                "at {}: {class} has no property \"{key}\"",
                shown(path)
            ));
        }
        let mut values = BTreeMap::new();
        for field in &record.fields {
            match map.get(&field.name) {
                Some(v) => {
                    let at = format!("{path}/{}", pointer_escape(&field.name));
                    values.insert(field.name.clone(), self.value(&field.ty, v, &at)?);
                }
                None if field.optional => {}
                None => {
                    return Err(format!(
                        "at {}: {class} needs \"{}\", which the answer leaves out",
                        shown(path),
                        field.name
                    ))
                }
            }
        }
        let rc = new_object("ReflectionClass", vec![&class])?;
        let ctor = method(&rc, "getConstructor", vec![])?;
        let mut params = Vec::new();
        let mut callable = !ctor.is_null();
        if callable {
            for p in items(&method(&ctor, "getParameters", vec![])?) {
                let name = text(&method(p, "getName", vec![])?);
                let optional = truthy(&method(p, "isOptional", vec![])?);
                let promoted = truthy(&method(p, "isPromoted", vec![])?);
                if !values.contains_key(&name) && !optional {
                    callable = false;
                }
                params.push((name, promoted));
            }
        }
        let mut passed = Vec::new();
        let object = if callable {
            let mut args = ZendHashTable::new();
            for (name, _) in &params {
                if let Some(v) = values.get(name) {
                    args.insert(name.as_str(), v.shallow_clone())
                        .map_err(|e| e.to_string())?;
                    passed.push(name.clone());
                }
            }
            let mut args_zval = Zval::new();
            args_zval.set_hashtable(args);
            method(&rc, "newInstanceArgs", vec![&args_zval])
                .map_err(|e| format!("at {}: the constructor of {class} threw: {e}", shown(path)))?
        } else {
            method(&rc, "newInstanceWithoutConstructor", vec![])?
        };
        for field in &record.fields {
            if passed.contains(&field.name) {
                continue;
            }
            let given = values.get(&field.name);
            if given.is_none() && callable {
                // Left out: the constructor gave it its default.
                continue;
            }
            let rp = method(&rc, "getProperty", vec![&field.name.as_str()])?;
            let value = match given {
                Some(v) => v.shallow_clone(),
                // Left out, constructor skipped: a promoted parameter's
                // default is set here; a property's own default is there.
                None => match promoted_default(&rp, &ctor, &field.name)? {
                    Some(d) => d,
                    None => continue,
                },
            };
            method(&rp, "setValue", vec![&object, &value])
                .map_err(|e| format!("at {}: {class}::${}: {e}", shown(path), field.name))?;
        }
        Ok(object)
    }
}

/// A property name as a JSON pointer token.
fn pointer_escape(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}
