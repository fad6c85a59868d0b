//! Option `lora`: the adapters `Model::load()` loads with a model, and the
//! ones a call applies.

use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use ext_php_rs::types::{ArrayKey, Zval};

use super::convert::{self, describe};
use super::problem::Problem;
use crate::backend::params::{lora_default_name, LoraSpec, MAX_LORA_SCALE};

const LOAD_SHAPE: &str = "a list of adapters, each ['path' => string, 'scale' => float (default 1.0), 'name' => string (default: the file's name without .gguf)]";

/// `Model::load()`'s `lora`: a list of `['path' => …, 'scale' => …,
/// 'name' => …]`.
pub fn load_adapters(key: &str, value: &Zval) -> Result<Vec<LoraSpec>, Problem> {
    let list = value
        .array()
        .filter(|a| a.has_sequential_keys())
        .ok_or_else(|| Problem::wrong(key, LOAD_SHAPE, value))?;
    let mut specs = Vec::with_capacity(list.len());
    for (i, item) in list.values().enumerate() {
        let at = format!("{key}[{i}]");
        let entry = item.array().ok_or_else(|| {
            Problem::wrong(
                &at,
                LOAD_SHAPE.trim_start_matches("a list of adapters, each "),
                item,
            )
        })?;
        let (mut path, mut scale, mut name) = (None, 1.0f32, None);
        for (field, v) in entry.iter() {
            let field = match field {
                ArrayKey::Long(n) => n.to_string(),
                other => convert::key_name(&other).unwrap_or_default(),
            };
            match field.as_str() {
                "path" => {
                    let bytes = convert::string_bytes(v)
                        .filter(|p| !p.is_empty() && !p.contains(&0))
                        .ok_or_else(|| {
                            Problem::wrong(&format!("{at}['path']"), "the path of a LoRA adapter GGUF (a non-empty string without NUL bytes)", v)
                        })?;
                    path = Some(PathBuf::from(std::ffi::OsStr::from_bytes(bytes)));
                }
                "scale" => scale = scale_of(&format!("{at}['scale']"), v)?,
                "name" => {
                    let text = convert::string(v)
                        .filter(|n| !n.is_empty() && !n.contains('\0'))
                        .ok_or_else(|| {
                            Problem::wrong(&format!("{at}['name']"), "a non-empty UTF-8 string", v)
                        })?;
                    name = Some(text);
                }
                other => {
                    return Err(Problem::new(
                        &at,
                        format!(
                            "has the key '{other}'; an adapter takes 'path', 'scale' and 'name'"
                        ),
                    ))
                }
            }
        }
        let path = path.ok_or_else(|| Problem::new(&at, "needs a 'path'"))?;
        let name = name.unwrap_or_else(|| lora_default_name(&path));
        let spec = LoraSpec::new(path, name, scale)
            .ok_or_else(|| Problem::new(&format!("{at}['scale']"), scale_range()))?;
        specs.push(spec);
    }
    Ok(specs)
}

/// A call's `lora`: adapter name => scale; `[]` applies none.
pub fn call_adapters(key: &str, value: &Zval) -> Result<Vec<(String, f32)>, Problem> {
    let what = "an array of adapter name => scale (e.g. ['support' => 1.0]), or [] for none";
    let table = value
        .array()
        .ok_or_else(|| Problem::wrong(key, what, value))?;
    let mut chosen = Vec::with_capacity(table.len());
    for (name, item) in table.iter() {
        let name = match name {
            ArrayKey::Long(n) => {
                return Err(Problem::new(
                    key,
                    format!(
                        "has the integer key {n}: adapters are chosen by name ([name => scale])"
                    ),
                ))
            }
            other => convert::key_name(&other)
                .ok_or_else(|| Problem::new(key, "names an adapter that is not valid UTF-8"))?,
        };
        let scale = scale_of(&format!("{key}['{name}']"), item)?;
        chosen.push((name, scale));
    }
    Ok(chosen)
}

fn scale_of(key: &str, value: &Zval) -> Result<f32, Problem> {
    convert::finite_float(value)
        .filter(|s| s.abs() <= f64::from(MAX_LORA_SCALE))
        .map(|s| s as f32)
        .ok_or_else(|| Problem::new(key, format!("{}, got {}", scale_range(), describe(value))))
}

fn scale_range() -> String {
    format!("must be a number from -{MAX_LORA_SCALE} to {MAX_LORA_SCALE} (0: off, 1: as trained)")
}
