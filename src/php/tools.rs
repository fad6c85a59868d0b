//! The `tools` and `tool_choice` options of a chat: the shape OpenAI,
//! symfony/ai and the published chat templates use, read into checked tool
//! specifications (each tool's arguments converted to a grammar by the
//! strict converter).

use ext_php_rs::types::{ArrayKey, Zval};
use serde_json::{Map, Value as Json};

use super::convert::{self, describe};
use super::schema_arg::{schema_json_grammar, schema_value};
use crate::chat::tools::{ToolChoice, ToolSpec};
use crate::schema::ObjectDefaults;

/// The keys of one tool.
const TOOL_KEYS: &[&str] = &["name", "description", "parameters", "strict"];

/// The shape a tool is written in, for messages.
const SHAPE: &str = "['name' => …, 'description' => …, 'parameters' => JSON Schema]";

/// The tools of the `tools` option, or what is wrong with them (worded to
/// follow `option "tools" `).
pub fn tools(value: &Zval, defaults: ObjectDefaults) -> Result<Vec<ToolSpec>, String> {
    let value = value.dereference();
    let table = value
        .array()
        .filter(|t| {
            t.iter()
                .enumerate()
                .all(|(i, (k, _))| k == ArrayKey::Long(i as i64))
        })
        .ok_or_else(|| {
            format!(
                "must be a list of tools, each {SHAPE}, got {}",
                describe(value)
            )
        })?;
    if table.is_empty() {
        return Err(format!("must list at least one tool, each {SHAPE}"));
    }
    let mut specs: Vec<ToolSpec> = Vec::with_capacity(table.len());
    for (index, (_, item)) in table.iter().enumerate() {
        let spec = tool(index, item, defaults)?;
        if let Some(first) = specs.iter().position(|s| s.name == spec.name) {
            return Err(format!(
                "tool {index}: name \"{}\" is already the name of tool {first}; tool names must be distinct",
                spec.name
            ));
        }
        specs.push(spec);
    }
    Ok(specs)
}

/// Tool `index` of the list.
fn tool(index: usize, item: &Zval, defaults: ObjectDefaults) -> Result<ToolSpec, String> {
    let item = item.dereference();
    let mut fields = fields(item).ok_or_else(|| {
        format!(
            "tool {index} must be an array {SHAPE}, got {}",
            describe(item)
        )
    })?;
    // The OpenAI wrapper: ['type' => 'function', 'function' => [...]].
    if let Some(kind) = take(&mut fields, "type") {
        if convert::string(kind).as_deref() != Some("function") {
            return Err(format!(
                "tool {index}: \"type\" must be 'function', got {}",
                describe(kind)
            ));
        }
        let function = take(&mut fields, "function").ok_or_else(|| {
            format!("tool {index}: \"type\" => 'function' needs a \"function\" array {SHAPE}")
        })?;
        if let Some((key, _)) = fields.first() {
            return Err(format!(
                "tool {index} has an unknown key \"{key}\" beside \"type\" and \"function\""
            ));
        }
        fields = fields_of(function).ok_or_else(|| {
            format!(
                "tool {index}: \"function\" must be an array {SHAPE}, got {}",
                describe(function)
            )
        })?;
    }
    if let Some((key, _)) = fields
        .iter()
        .find(|(k, _)| !TOOL_KEYS.contains(&k.as_str()))
    {
        return Err(format!(
            "tool {index} has an unknown key \"{key}\" (known: {})",
            TOOL_KEYS.join(", ")
        ));
    }
    let name_value =
        take(&mut fields, "name").ok_or_else(|| format!("tool {index} has no \"name\""))?;
    let name = convert::string(name_value)
        .filter(|n| valid_name(n))
        .ok_or_else(|| {
            format!(
                "tool {index}: \"name\" must be 1 to 64 letters, digits, underscores or dashes, got {}",
                describe(name_value)
            )
        })?;
    let description = match take(&mut fields, "description") {
        None => None,
        Some(d) if d.is_null() => None,
        Some(d) => Some(convert::string(d).ok_or_else(|| {
            format!(
                "tool \"{name}\": \"description\" must be a string, got {}",
                describe(d)
            )
        })?),
    };
    if let Some(strict) = take(&mut fields, "strict") {
        if convert::bool(strict).is_none() {
            return Err(format!(
                "tool \"{name}\": \"strict\" must be a bool (calls are always strict), got {}",
                describe(strict)
            ));
        }
    }
    let parameters = match take(&mut fields, "parameters") {
        None => serde_json::json!({"type": "object", "properties": {}}),
        Some(p) => schema_value(p).map_err(|e| format!("tool \"{name}\": parameters: {e}"))?,
    };
    if parameters.get("type").and_then(Json::as_str) != Some("object") {
        return Err(format!(
            "tool \"{name}\": parameters must be an object schema (\"type\" => \"object\"): the arguments of a call are an object"
        ));
    }
    let arguments = schema_json_grammar(&parameters, defaults)
        .map_err(|e| format!("tool \"{name}\": parameters: {e}"))?;
    Ok(ToolSpec {
        name,
        description,
        parameters,
        arguments,
    })
}

/// The `tool_choice` option: `'auto'`, `'none'`, `'required'`, a tool's
/// name, or OpenAI's `['type' => 'function', 'function' => ['name' =>
/// …]]`; `names` are the tools' names.
pub fn tool_choice(value: &Zval, names: &[&str]) -> Result<ToolChoice, String> {
    let value = value.dereference();
    let expected = || {
        format!(
            "must be 'auto', 'none', 'required' or the name of one of the tools ({})",
            names.join(", ")
        )
    };
    let name = match convert::string(value) {
        Some(word) => match word.as_str() {
            "auto" => return Ok(ToolChoice::Auto),
            "none" => return Ok(ToolChoice::None),
            "required" => return Ok(ToolChoice::Required),
            _ => word,
        },
        None => fields(value)
            .and_then(|mut f| {
                let function = take(&mut f, "function")?;
                let kind = take(&mut f, "type")?;
                if convert::string(kind).as_deref() != Some("function") || !f.is_empty() {
                    return None;
                }
                let mut inner = fields_of(function)?;
                let name = convert::string(take(&mut inner, "name")?)?;
                inner.is_empty().then_some(name)
            })
            .ok_or_else(|| format!("{}, got {}", expected(), describe(value)))?,
    };
    if names.contains(&name.as_str()) {
        Ok(ToolChoice::Named(name))
    } else {
        Err(format!(
            "{}, got '{name}', which is not among the tools",
            expected()
        ))
    }
}

/// OpenAI's rule for function names.
fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The string-keyed entries of an array, or `None` for anything else.
fn fields(value: &Zval) -> Option<Vec<(String, &Zval)>> {
    let table = value.array()?;
    let mut out = Vec::with_capacity(table.len());
    for (key, item) in table.iter() {
        out.push((convert::key_name(&key)?, item));
    }
    Some(out)
}

fn fields_of(value: &Zval) -> Option<Vec<(String, &Zval)>> {
    fields(value.dereference())
}

/// Remove and return the entry `key`.
fn take<'a>(fields: &mut Vec<(String, &'a Zval)>, key: &str) -> Option<&'a Zval> {
    let at = fields.iter().position(|(k, _)| k == key)?;
    Some(fields.remove(at).1)
}

/// The JSON of a tool call's arguments as a PHP value's JSON object, for a
/// transcript (`Prompt::withToolCalls()`): an array, or JSON text.
pub fn arguments_value(value: &Zval, what: &str) -> Result<(Json, String), String> {
    let value = value.dereference();
    let json = if let Some(text) = convert::string(value) {
        serde_json::from_str::<Json>(text.as_str())
            .map_err(|e| format!("{what} is not valid JSON: {e}"))?
    } else if value.is_array() || value.is_object() {
        match convert::json_value(value, what)? {
            // An empty PHP array is how PHP writes `{}`.
            Json::Array(items) if items.is_empty() => Json::Object(Map::new()),
            other => other,
        }
    } else {
        return Err(format!(
            "{what} must be an array or a JSON object string, got {}",
            describe(value)
        ));
    };
    if !json.is_object() {
        return Err(format!("{what} must be a JSON object, got {json}"));
    }
    let text = crate::chat::template::python_json(&json);
    Ok((json, text))
}
