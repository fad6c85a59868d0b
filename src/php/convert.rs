//! PHP values → typed Rust values, and JSON → PHP values. Every conversion is
//! total: a value of the wrong shape becomes an error naming the key.

use ext_php_rs::convert::{FromZval, StubLiteral};
use ext_php_rs::flags::DataType;
use ext_php_rs::types::{ArrayKey, ZendHashTable, Zval};

/// An `array $options = []` parameter. Holds `None` when the caller left it out.
#[derive(Debug, Clone, Copy)]
pub struct OptionsArg<'a>(Option<&'a ZendHashTable>);

impl<'a> OptionsArg<'a> {
    /// The default, `[]`.
    pub fn none() -> Self {
        Self(None)
    }

    /// `(key, value)` pairs in the caller's order; an integer key is an error
    /// reported through `bad_key`.
    pub fn entries<E>(&self, bad_key: impl Fn(i64) -> E) -> Result<Vec<(String, &'a Zval)>, E> {
        let Some(table) = self.0 else {
            return Ok(Vec::new());
        };
        let mut out = Vec::with_capacity(table.len());
        for (key, value) in table.iter() {
            let key = match key {
                ArrayKey::Long(i) => return Err(bad_key(i)),
                ArrayKey::String(s) => s,
                ArrayKey::Str(s) => s.to_owned(),
                other => other.to_string(),
            };
            out.push((key, value));
        }
        Ok(out)
    }
}

impl<'a> FromZval<'a> for OptionsArg<'a> {
    const TYPE: DataType = DataType::Array;

    fn from_zval(zval: &'a Zval) -> Option<Self> {
        zval.array().map(|a| Self(Some(a)))
    }
}

impl StubLiteral for OptionsArg<'_> {
    fn stub_literal(&self) -> String {
        "[]".to_owned()
    }
}

/// The PHP type name of a value, for error messages.
pub fn type_name(value: &Zval) -> &'static str {
    let value = value.dereference();
    match value.get_type() {
        DataType::Null => "null",
        DataType::False | DataType::True | DataType::Bool => "bool",
        DataType::Long => "int",
        DataType::Double => "float",
        DataType::String => "string",
        DataType::Array => "array",
        DataType::Object(_) => "object",
        DataType::Resource => "resource",
        _ => "unknown",
    }
}

/// What an option value was, when it was not what the key expects.
pub fn describe(value: &Zval) -> String {
    let value = value.dereference();
    match value.get_type() {
        DataType::Long => format!("int {}", value.long().unwrap_or_default()),
        DataType::Double => format!("float {}", php_float(value.double().unwrap_or_default())),
        _ => type_name(value).to_owned(),
    }
}

/// What a value is, naming the class of an object: for a list element of
/// the wrong kind.
pub fn describe_kind(value: &Zval) -> String {
    let value = value.dereference();
    match value.object() {
        Some(object) => match object.get_class_name() {
            Ok(class) => format!("an object of class {class}"),
            Err(_) => "an object".to_owned(),
        },
        None => describe(value),
    }
}

/// The items of a PHP list (keys 0, 1, 2, … in order), or the position and
/// key of the first entry that breaks the order.
pub fn list_items(table: &ZendHashTable) -> Result<Vec<&Zval>, (usize, String)> {
    let mut out = Vec::with_capacity(table.len());
    for (i, (key, item)) in table.iter().enumerate() {
        match key {
            ArrayKey::Long(k) if k == i as i64 => out.push(item),
            ArrayKey::Long(k) => return Err((i, k.to_string())),
            other => return Err((i, format!("\"{other}\""))),
        }
    }
    Ok(out)
}

/// The bytes of a string value.
pub fn string_bytes(value: &Zval) -> Option<&[u8]> {
    let value = value.dereference();
    if value.is_string() {
        value.zend_str().map(|s| s.as_bytes())
    } else {
        None
    }
}

/// A float written as PHP writes it: `NAN`, `INF`, `-INF`, else the shortest
/// decimal that reads back the same.
pub fn php_float(f: f64) -> String {
    if f.is_nan() {
        "NAN".to_owned()
    } else if f.is_infinite() {
        if f > 0.0 { "INF" } else { "-INF" }.to_owned()
    } else {
        f.to_string()
    }
}

/// A PHP `int`, strictly (no floats, no numeric strings).
pub fn int(value: &Zval) -> Option<i64> {
    let value = value.dereference();
    if value.is_long() {
        value.long()
    } else {
        None
    }
}

/// A PHP `bool`, strictly.
pub fn bool(value: &Zval) -> Option<bool> {
    let value = value.dereference();
    if value.is_bool() {
        value.bool()
    } else {
        None
    }
}

/// A PHP `float` or `int`, finite.
pub fn finite_float(value: &Zval) -> Option<f64> {
    let value = value.dereference();
    let f = if value.is_double() {
        value.double()?
    } else if value.is_long() {
        value.long()? as f64
    } else {
        return None;
    };
    f.is_finite().then_some(f)
}

/// The bytes of a PHP string argument as text, or the offset of the first
/// byte that is not valid UTF-8.
pub fn utf8(bytes: Vec<u8>) -> Result<String, usize> {
    String::from_utf8(bytes).map_err(|e| e.utf8_error().valid_up_to())
}

/// Whether `value` is a PHP string that is not valid UTF-8.
pub fn is_non_utf8_string(value: &Zval) -> bool {
    let value = value.dereference();
    value.is_string() && value.str().is_none()
}

/// A PHP `string` as Rust text; invalid UTF-8 is `None`.
pub fn string(value: &Zval) -> Option<String> {
    let value = value.dereference();
    if value.is_string() {
        value.str().map(str::to_owned)
    } else {
        None
    }
}

/// A string key of a PHP array as text (`None` for an integer key).
pub fn key_name(key: &ArrayKey<'_>) -> Option<String> {
    match key {
        ArrayKey::String(s) => Some(s.clone()),
        ArrayKey::Str(s) => Some((*s).to_owned()),
        ArrayKey::ZendString(s) => s.as_str().ok().map(str::to_owned),
        ArrayKey::Long(_) => None,
    }
}

/// A PHP list of strings.
pub fn string_list(value: &Zval) -> Option<Vec<String>> {
    let table = value.dereference().array()?;
    let mut out = Vec::with_capacity(table.len());
    for (i, (key, item)) in table.iter().enumerate() {
        if !matches!(key, ArrayKey::Long(k) if k == i as i64) {
            return None;
        }
        out.push(string(item)?);
    }
    Some(out)
}

/// Deepest nesting of PHP arrays/objects (or JSON text) read as a schema.
pub const SCHEMA_MAX_DEPTH: usize = 128;

/// Any PHP value as JSON (see [`zval_to_json`]); `what` names it in errors.
pub fn json_value(value: &Zval, what: &str) -> Result<serde_json::Value, String> {
    let mut path = String::new();
    zval_to_json(value, 0, &mut path, what)
}

/// A PHP value as JSON: lists become arrays, other arrays and objects become
/// objects. NAN/INF, resources, invalid UTF-8 and nesting deeper than
/// [`SCHEMA_MAX_DEPTH`] (recursive arrays included) are errors naming the path
/// inside `what`.
pub fn zval_to_json(
    value: &Zval,
    depth: usize,
    path: &mut String,
    what: &str,
) -> Result<serde_json::Value, String> {
    use serde_json::Value;
    let value = value.dereference();
    let at = |path: &str| {
        if path.is_empty() {
            "/".to_owned()
        } else {
            path.to_owned()
        }
    };
    if depth > SCHEMA_MAX_DEPTH {
        return Err(format!(
            "{what} nesting is deeper than {SCHEMA_MAX_DEPTH} levels at {}",
            at(path)
        ));
    }
    Ok(match value.get_type() {
        DataType::Null => Value::Null,
        DataType::False | DataType::True | DataType::Bool => {
            Value::Bool(value.bool().unwrap_or(false))
        }
        DataType::Long => Value::from(value.long().unwrap_or_default()),
        DataType::Double => {
            let f = value.double().unwrap_or(f64::NAN);
            Value::Number(serde_json::Number::from_f64(f).ok_or_else(|| {
                format!(
                    "{what} holds {} at {}, which JSON cannot represent",
                    php_float(f),
                    at(path)
                )
            })?)
        }
        DataType::String => Value::String(
            value
                .str()
                .ok_or_else(|| {
                    format!(
                        "{what} holds a string that is not valid UTF-8 at {}",
                        at(path)
                    )
                })?
                .to_owned(),
        ),
        DataType::Array => {
            let table = value
                .array()
                .ok_or_else(|| format!("unreadable array at {}", at(path)))?;
            table_to_json(table, depth, path, what)?
        }
        DataType::Object(_) => {
            let object = value
                .object()
                .ok_or_else(|| format!("unreadable object at {}", at(path)))?;
            let class = object.get_class_name().unwrap_or_default();
            if !class.eq_ignore_ascii_case("stdClass") {
                return Err(format!(
                    "{what} holds an object of class {class} at {}; only arrays and stdClass objects map to JSON",
                    at(path)
                ));
            }
            let table = object
                .get_properties()
                .map_err(|_| format!("object without properties at {}", at(path)))?;
            let mut v = table_to_json(table, depth, path, what)?;
            if let Value::Array(items) = &v {
                if items.is_empty() {
                    v = Value::Object(serde_json::Map::new());
                }
            }
            v
        }
        _ => {
            return Err(format!(
                "{what} holds a {} at {}, which JSON cannot represent",
                type_name(value),
                at(path)
            ))
        }
    })
}

fn table_to_json(
    table: &ZendHashTable,
    depth: usize,
    path: &mut String,
    what: &str,
) -> Result<serde_json::Value, String> {
    use serde_json::Value;
    let is_list = table
        .iter()
        .enumerate()
        .all(|(i, (k, _))| matches!(k, ArrayKey::Long(n) if n == i as i64));
    let mut list = Vec::new();
    let mut map = serde_json::Map::new();
    for (key, item) in table.iter() {
        let key = match key {
            ArrayKey::Long(i) => i.to_string(),
            ArrayKey::String(s) => s,
            ArrayKey::Str(s) => s.to_owned(),
            other => other.to_string(),
        };
        let len = path.len();
        path.push('/');
        path.push_str(&key.replace('~', "~0").replace('/', "~1"));
        let v = zval_to_json(item, depth + 1, path, what);
        path.truncate(len);
        let v = v?;
        if is_list {
            list.push(v);
        } else {
            map.insert(key, v);
        }
    }
    Ok(if is_list {
        Value::Array(list)
    } else {
        Value::Object(map)
    })
}

/// Largest nesting of arrays and objects `json_to_zval` builds (PHP's own
/// `json_decode` default depth).
const JSON_MAX_DEPTH: usize = 512;

/// A JSON value as PHP would decode it with `json_decode($text, true)`:
/// objects become associative arrays, integers that do not fit become floats,
/// and numeric string keys become integer keys.
pub fn json_to_zval(value: &serde_json::Value) -> Result<Zval, String> {
    json_to_zval_at(value, 0)
}

fn json_to_zval_at(value: &serde_json::Value, depth: usize) -> Result<Zval, String> {
    use serde_json::Value;
    let mut zval = Zval::new();
    match value {
        Value::Null => zval.set_null(),
        Value::Bool(b) => zval.set_bool(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => zval.set_long(i),
            None => zval.set_double(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => zval.set_string(s, false).map_err(|e| e.to_string())?,
        Value::Array(items) => {
            if depth >= JSON_MAX_DEPTH {
                return Err(format!("nesting deeper than {JSON_MAX_DEPTH}"));
            }
            let mut table =
                ZendHashTable::with_capacity(items.len().try_into().unwrap_or(u32::MAX));
            for item in items {
                table
                    .push(json_to_zval_at(item, depth + 1)?)
                    .map_err(|e| e.to_string())?;
            }
            zval.set_hashtable(table);
        }
        Value::Object(map) => {
            if depth >= JSON_MAX_DEPTH {
                return Err(format!("nesting deeper than {JSON_MAX_DEPTH}"));
            }
            let mut table = ZendHashTable::with_capacity(map.len().try_into().unwrap_or(u32::MAX));
            for (key, item) in map {
                let item = json_to_zval_at(item, depth + 1)?;
                match canonical_int(key) {
                    Some(i) => table.insert_at_index(i, item),
                    None => table.insert(key.as_str(), item),
                }
                .map_err(|e| e.to_string())?;
            }
            zval.set_hashtable(table);
        }
    }
    Ok(zval)
}

/// PHP stores a string key that is a canonical decimal integer ("7", "-3",
/// not "07" or "+3") as an integer key.
fn canonical_int(key: &str) -> Option<i64> {
    let i: i64 = key.parse().ok()?;
    (i.to_string() == key).then_some(i)
}
