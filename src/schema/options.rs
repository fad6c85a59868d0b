//! The converter's options: the policy choices that are not JSON Schema
//! itself (how the output is laid out, what an object schema means when it
//! leaves `required`/`additionalProperties` out, how input is read), in one
//! value passed to [`compile_with`](super::compile_with).

/// Options of one conversion. [`ConvertOptions::default`] is the converter's
/// strict behaviour, which [`compile`](super::compile) and
/// [`to_gbnf`](super::to_gbnf) use.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConvertOptions {
    /// The separators the grammar writes between JSON tokens.
    pub layout: Layout,
    /// What an object schema without `required` or `additionalProperties` means.
    pub object_defaults: ObjectDefaults,
    /// Read an empty array (`[]`) where a schema, or an object of schemas
    /// (`properties`, `$defs`), is expected as the empty object `{}`. For
    /// callers whose source language cannot tell an empty list from an empty
    /// map. Off by default: JSON Schema gives `[]` no such meaning.
    pub empty_array_is_schema: bool,
}

/// The separators a grammar writes, and so the only whitespace it allows.
/// Each is its punctuation (`,` or `:`) with optional JSON whitespace
/// (space, tab, newline, carriage return) around it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// Between array items and between object members (default `", "`).
    pub item_separator: String,
    /// Between an object key and its value (default `": "`).
    pub key_separator: String,
}

impl Default for Layout {
    /// `{"a": 1, "b": [1, 2]}`.
    fn default() -> Self {
        Self {
            item_separator: ", ".to_owned(),
            key_separator: ": ".to_owned(),
        }
    }
}

impl Layout {
    /// No whitespace at all: `{"a":1,"b":[1,2]}`.
    pub fn compact() -> Self {
        Self {
            item_separator: ",".to_owned(),
            key_separator: ":".to_owned(),
        }
    }

    /// Why the layout cannot be used, if it cannot: a separator that is not
    /// its punctuation with JSON whitespace around it.
    pub fn problem(&self) -> Option<String> {
        let json_ws = |c: char| matches!(c, ' ' | '\t' | '\n' | '\r');
        for (name, sep, punct) in [
            ("item_separator", &self.item_separator, ","),
            ("key_separator", &self.key_separator, ":"),
        ] {
            if sep.trim_matches(json_ws) != punct {
                return Some(format!(
                    "{name} {sep:?} must be \"{punct}\" with only JSON whitespace around it"
                ));
            }
        }
        None
    }
}

/// What an object schema means where it leaves `required` or
/// `additionalProperties` out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ObjectDefaults {
    /// The converter's strict reading: without `required`, every declared
    /// property is required (left optional only where emitting it every time
    /// would recurse without end); without `additionalProperties`, no other
    /// key is written. Grammars then produce complete, predictable objects.
    #[default]
    Strict,
    /// JSON Schema's own reading, as a validator applies it: without
    /// `required`, every property may be left out; without
    /// `additionalProperties`, any other key may appear (with any value).
    JsonSchema,
}

impl ObjectDefaults {
    /// Every policy with its name (the `schema_defaults` option).
    pub const ALL: &'static [(ObjectDefaults, &'static str)] = &[
        (ObjectDefaults::Strict, "strict"),
        (ObjectDefaults::JsonSchema, "json-schema"),
    ];

    /// The policy called `name`.
    pub fn from_name(name: &str) -> Option<ObjectDefaults> {
        Self::ALL.iter().find(|(_, n)| *n == name).map(|(d, _)| *d)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;
    use crate::schema::ir::Node;
    use crate::schema::{canonical, compile_with, to_gbnf, to_gbnf_with, ErrorKind};

    fn with(schema: &Value, options: &ConvertOptions) -> Result<String, ErrorKind> {
        to_gbnf_with(schema, options).map_err(|e| e.kind)
    }

    #[test]
    fn layout_sets_every_separator_the_grammar_writes() {
        let schema = json!({"type": "object", "properties": {
            "a": {"type": "array", "items": {"type": "integer"}},
            "b": {"enum": [{"x": [1, 2]}]},
            "c": {}
        }});
        let default = to_gbnf(&schema).unwrap();
        assert!(default.contains("\", \"") && default.contains("\": \""));
        let compact = ConvertOptions {
            layout: Layout::compact(),
            ..ConvertOptions::default()
        };
        let gbnf = with(&schema, &compact).unwrap();
        for spaced in ["\", \"", "\": \"", "\\\": "] {
            assert!(default.contains(spaced), "{spaced} in {default}");
            assert!(!gbnf.contains(spaced), "{spaced} in {gbnf}");
        }
        assert!(gbnf.contains(r#"{\"x\":[1,2]}"#), "{gbnf}");
        let c = compile_with(&schema, &compact).unwrap();
        let value = json!({"c": null, "a": [1, 2], "b": {"x": [1, 2]}});
        assert_eq!(
            canonical::instance_text_in(&value, &c.root, &c.defs, &compact.layout),
            r#"{"a":[1,2],"b":{"x":[1,2]},"c":null}"#
        );
        let bad = ConvertOptions {
            layout: Layout {
                item_separator: ";".to_owned(),
                ..Layout::default()
            },
            ..ConvertOptions::default()
        };
        assert!(matches!(
            with(&schema, &bad),
            Err(ErrorKind::BadOption { .. })
        ));
    }

    #[test]
    fn strict_object_defaults_require_every_property_and_close_the_object() {
        assert_eq!(
            ConvertOptions::default().object_defaults,
            ObjectDefaults::Strict
        );
        let options = ConvertOptions {
            object_defaults: ObjectDefaults::Strict,
            ..ConvertOptions::default()
        };
        let schema = json!({"type": "object", "properties": {"a": {"type": "integer"}}});
        let c = compile_with(&schema, &options).unwrap();
        let Node::Obj(o) = &c.root else {
            panic!("{:?}", c.root)
        };
        assert!(o.props[0].required && o.props[0].implicit);
        assert_eq!(*o.additional, Node::Never);
        assert!(o.open_by_default);
    }

    #[test]
    fn empty_array_is_a_schema_only_when_asked() {
        let on = ConvertOptions {
            empty_array_is_schema: true,
            ..ConvertOptions::default()
        };
        let off = ConvertOptions::default();
        assert!(!off.empty_array_is_schema);
        assert_eq!(with(&json!([]), &on), with(&json!({}), &off));
        assert!(matches!(
            with(&json!([]), &off),
            Err(ErrorKind::NotASchema { got: "array" })
        ));
        let props = json!({"type": "object", "properties": [], "$defs": []});
        assert_eq!(
            with(&props, &on),
            with(&json!({"type": "object", "properties": {}}), &off)
        );
        assert!(matches!(
            with(&props, &off),
            Err(ErrorKind::WrongType { .. })
        ));
        let not = json!({"type": "object", "properties": {"a": {"not": []}}, "required": []});
        assert_eq!(
            with(&not, &on),
            with(
                &json!({"type": "object", "properties": {"a": false}, "required": []}),
                &off
            )
        );
        assert!(matches!(
            with(&not, &off),
            Err(ErrorKind::NotASchema { .. })
        ));
        // `items: []` is otherwise the draft 4 tuple form with no elements.
        let items = json!({"type": "array", "items": []});
        assert_eq!(with(&items, &on), with(&json!({"type": "array"}), &off));
        assert_eq!(with(&items, &off), Ok("root ::= \"[]\"\n".to_owned()));
    }
}
