//! Chat templates rendered as Hugging Face's `apply_chat_template` renders
//! them: the GGUF's `tokenizer.chat_template` is a Jinja template, given
//! `messages`, `add_generation_prompt`, `bos_token`, `eos_token`, the
//! caller's template variables, `raise_exception` and `strftime_now`, in an
//! environment set up as `transformers` sets up its own (blocks trimmed and
//! left-stripped, `tojson` as Python's `json.dumps`, Python's string and dict
//! methods).
//!
//! Pure Rust: nothing here knows llama.cpp; the model supplies the template
//! text and its special tokens.

use minijinja::value::{Kwargs, Value};
use minijinja::{Environment, Error, ErrorKind};
use serde::Serialize;
use serde_json::{Map, Value as Json};

use crate::chat::Message;

/// The most instructions one rendering may run: far more than any real
/// template needs for a long conversation, and a bound on a hostile one.
pub const MAX_FUEL: u64 = 50_000_000;

/// Names the renderer itself passes to a template; a template variable may
/// not take one of them.
pub const RESERVED: &[&str] = &[
    "messages",
    "add_generation_prompt",
    "bos_token",
    "eos_token",
    "raise_exception",
    "strftime_now",
    "tools",
];

/// Prefix of the detail of an error raised by the template's own
/// `raise_exception()`, to tell it apart from a failure of the template.
const RAISED: &str = "raise_exception: ";

/// The template's name inside its environment.
const NAME: &str = "chat";

/// Why a template could not render.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    /// The text is not a template minijinja can read.
    #[error("the model's chat template is not valid Jinja: {0}")]
    Syntax(String),
    /// The template called `raise_exception(message)`.
    #[error("the model's chat template refused the conversation: {0}")]
    Raised(String),
    /// The template failed while rendering (an undefined method, a type
    /// error, too much work).
    #[error("the model's chat template failed: {0}")]
    Failed(String),
    /// A template variable takes a name the renderer sets.
    #[error("template variable \"{0}\" is set by the renderer itself and cannot be passed (reserved: {reserved})", reserved = RESERVED.join(", "))]
    Reserved(String),
}

/// What a template is rendered with besides its text.
#[derive(Debug, Clone, Copy)]
pub struct RenderInput<'a> {
    pub messages: &'a [Message],
    pub add_generation_prompt: bool,
    pub bos_token: &'a str,
    pub eos_token: &'a str,
    /// The caller's template variables (`enable_thinking`, …).
    pub vars: &'a Map<String, Json>,
    /// The tools, as Hugging Face passes them (left undefined when none).
    pub tools: Option<&'a Json>,
}

/// A chat template, read once.
#[derive(Debug)]
pub struct ChatTemplate {
    env: Environment<'static>,
    writes_bos: bool,
    source: String,
}

impl ChatTemplate {
    /// Read the template `source`.
    pub fn new(source: &str) -> Result<Self, TemplateError> {
        let mut env = Environment::new();
        // transformers: `ImmutableSandboxedEnvironment(trim_blocks=True,
        // lstrip_blocks=True, extensions=[loopcontrols, …])`.
        env.set_trim_blocks(true);
        env.set_lstrip_blocks(true);
        env.set_keep_trailing_newline(false);
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.set_fuel(Some(MAX_FUEL));
        env.add_filter("tojson", tojson);
        env.add_function("raise_exception", raise_exception);
        env.add_function("strftime_now", strftime_now);
        env.add_template_owned(NAME, without_generation_tags(source))
            .map_err(|e| TemplateError::Syntax(describe(&e)))?;
        Ok(Self {
            env,
            writes_bos: source.contains("bos_token"),
            source: source.to_owned(),
        })
    }

    /// The template's text.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Whether the template writes the BOS token itself (it uses
    /// `bos_token`, as Llama 3's and Gemma's do): the prompt's tokens then
    /// get no other, as Hugging Face tokenizes a rendered chat without
    /// adding special tokens.
    pub fn writes_bos(&self) -> bool {
        self.writes_bos
    }

    /// Render a conversation.
    pub fn render(&self, input: &RenderInput<'_>) -> Result<String, TemplateError> {
        if let Some(name) = input.vars.keys().find(|k| RESERVED.contains(&k.as_str())) {
            return Err(TemplateError::Reserved(name.clone()));
        }
        let mut context = input.vars.clone();
        let messages: Vec<Json> = input.messages.iter().map(message_value).collect();
        context.insert("messages".to_owned(), Json::Array(messages));
        if let Some(tools) = input.tools {
            context.insert("tools".to_owned(), tools.clone());
        }
        context.insert(
            "add_generation_prompt".to_owned(),
            Json::Bool(input.add_generation_prompt),
        );
        context.insert("bos_token".to_owned(), Json::from(input.bos_token));
        context.insert("eos_token".to_owned(), Json::from(input.eos_token));
        let template = self
            .env
            .get_template(NAME)
            .map_err(|e| TemplateError::Failed(describe(&e)))?;
        template
            .render(Value::from_serialize(&context))
            .map_err(|e| match e.detail().and_then(|d| d.strip_prefix(RAISED)) {
                Some(message) => TemplateError::Raised(message.to_owned()),
                None => TemplateError::Failed(describe(&e)),
            })
    }
}

/// A message as Hugging Face's templates read it: `role`, `content`, and for
/// an assistant turn that calls tools `tool_calls` (`id`, `type`,
/// `function` with `name` and `arguments` as an object), for a tool's
/// result `tool_call_id` and `name`.
fn message_value(m: &Message) -> Json {
    let mut turn = Map::new();
    turn.insert("role".to_owned(), Json::from(m.role.as_str()));
    turn.insert("content".to_owned(), Json::from(m.content.as_str()));
    if !m.tool_calls.is_empty() {
        let calls = m
            .tool_calls
            .iter()
            .map(|c| {
                let mut function = Map::new();
                function.insert("name".to_owned(), Json::from(c.name.as_str()));
                function.insert("arguments".to_owned(), c.arguments.clone());
                let mut call = Map::new();
                call.insert("id".to_owned(), Json::from(c.id.as_str()));
                call.insert("type".to_owned(), Json::from("function"));
                call.insert("function".to_owned(), Json::Object(function));
                Json::Object(call)
            })
            .collect();
        turn.insert("tool_calls".to_owned(), Json::Array(calls));
    }
    if let Some(id) = &m.tool_call_id {
        turn.insert("tool_call_id".to_owned(), Json::from(id.as_str()));
    }
    if let Some(name) = &m.name {
        turn.insert("name".to_owned(), Json::from(name.as_str()));
    }
    Json::Object(turn)
}

/// An error with the line it happened on.
fn describe(e: &Error) -> String {
    let what = match e.detail() {
        Some(detail) => format!("{}: {detail}", e.kind()),
        None => e.kind().to_string(),
    };
    match e.line() {
        Some(line) => format!("{what} (line {line})"),
        None => what,
    }
}

/// The template with `transformers`' `{% generation %}` / `{% endgeneration
/// %}` markers (which only track the assistant's text for training) removed:
/// they render nothing, and minijinja does not know the tag.
fn without_generation_tags(source: &str) -> String {
    let mut out = String::with_capacity(source.len());
    let mut rest = source;
    while let Some(start) = rest.find("{%") {
        let Some(len) = rest[start..].find("%}") else {
            break;
        };
        let tag = &rest[start + 2..start + len];
        let word = tag.trim_matches(|c: char| c == '-' || c == '+' || c.is_whitespace());
        if word == "generation" || word == "endgeneration" {
            out.push_str(&rest[..start]);
        } else {
            out.push_str(&rest[..start + len + 2]);
        }
        rest = &rest[start + len + 2..];
    }
    out.push_str(rest);
    out
}

/// `raise_exception(message)`: the template refuses the conversation.
fn raise_exception(message: String) -> Result<Value, Error> {
    Err(Error::new(
        ErrorKind::InvalidOperation,
        format!("{RAISED}{message}"),
    ))
}

/// `strftime_now(format)`: the local time, as C's `strftime` writes it.
fn strftime_now(format: String) -> Result<Value, Error> {
    local_time(&format)
        .map(Value::from)
        .ok_or_else(|| Error::new(ErrorKind::InvalidOperation, "strftime_now: invalid format"))
}

fn local_time(format: &str) -> Option<String> {
    let c_format = std::ffi::CString::new(format).ok()?;
    let mut buf = vec![0u8; 256 + format.len() * 8];
    // SAFETY: `now` and `tm` are plain values owned here; `localtime_r`
    // writes only `tm`; `strftime` writes at most `buf.len()` bytes into
    // `buf` and reads the NUL-terminated format.
    let written = unsafe {
        let now = libc::time(std::ptr::null_mut());
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&now, &mut tm).is_null() {
            return None;
        }
        libc::strftime(buf.as_mut_ptr().cast(), buf.len(), c_format.as_ptr(), &tm)
    };
    if written == 0 && !format.is_empty() {
        return None;
    }
    buf.truncate(written);
    String::from_utf8(buf).ok()
}

/// `tojson` as `transformers` defines it: Python's `json.dumps` with
/// `ensure_ascii=False` (non-ASCII kept, nothing HTML-escaped), `", "` and
/// `": "` between items, optional `indent`, `sort_keys`, `ensure_ascii` and
/// `separators` (the defaults, or `(',', ':')` without indent; any other
/// pair is an error rather than ignored).
fn tojson(value: &Value, indent: Option<Value>, kwargs: Kwargs) -> Result<Value, Error> {
    let indent: Option<Value> = match indent {
        Some(i) => Some(i),
        None => kwargs.get::<Option<Value>>("indent")?,
    };
    let sort_keys = kwargs.get::<Option<bool>>("sort_keys")?.unwrap_or(false);
    let ensure_ascii = kwargs.get::<Option<bool>>("ensure_ascii")?.unwrap_or(false);
    let separators: Option<Value> = kwargs.get("separators")?;
    kwargs.assert_all_used()?;
    let compact = match separators.filter(|v| !v.is_none() && !v.is_undefined()) {
        None => false,
        Some(v) => {
            // Every item a string, or no pair at all.
            let pair: Vec<String> = v
                .try_iter()
                .ok()
                .and_then(|items| items.map(|x| x.as_str().map(str::to_owned)).collect())
                .unwrap_or_default();
            let default = if indent.is_some() { ",: " } else { ", : " };
            match pair.as_slice() {
                [a, b] if a == "," && b == ":" && indent.is_none() => true,
                [a, b] if format!("{a}{b}") == default => false,
                _ => {
                    return Err(Error::new(
                        ErrorKind::InvalidOperation,
                        format!("tojson: separators {v} are not supported (only Python's defaults, and (',', ':') without indent)"),
                    ))
                }
            }
        }
    };
    let indent = match indent {
        None => None,
        Some(v) if v.is_none() || v.is_undefined() => None,
        Some(v) => match (v.as_i64(), v.as_str()) {
            (Some(n), _) => Some(" ".repeat(usize::try_from(n.max(0)).unwrap_or(0))),
            (None, Some(s)) => Some(s.to_owned()),
            _ => {
                return Err(Error::new(
                    ErrorKind::InvalidOperation,
                    "tojson: indent is an int or a string",
                ))
            }
        },
    };
    let mut json = serde_json::to_value(value)
        .map_err(|e| Error::new(ErrorKind::InvalidOperation, format!("tojson: {e}")))?;
    if sort_keys {
        sort(&mut json);
    }
    let mut out = Vec::new();
    let written = match &indent {
        Some(unit) => {
            let formatter = serde_json::ser::PrettyFormatter::with_indent(unit.as_bytes());
            let mut ser = serde_json::Serializer::with_formatter(&mut out, formatter);
            json.serialize(&mut ser)
        }
        None if compact => json.serialize(&mut serde_json::Serializer::new(&mut out)),
        None => {
            let mut ser = serde_json::Serializer::with_formatter(&mut out, PythonFormatter);
            json.serialize(&mut ser)
        }
    };
    written.map_err(|e| Error::new(ErrorKind::InvalidOperation, format!("tojson: {e}")))?;
    let mut text = String::from_utf8(out)
        .map_err(|e| Error::new(ErrorKind::InvalidOperation, format!("tojson: {e}")))?;
    if ensure_ascii {
        text = ascii_escaped(&text);
    }
    Ok(Value::from_safe_string(text))
}

/// `value` as Python's `json.dumps(value, ensure_ascii=False)` writes it:
/// `", "` and `": "`, as `tojson` renders it in a template.
pub fn python_json(value: &Json) -> String {
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut out, PythonFormatter);
    // Writing a `Value` into memory cannot fail, and it is UTF-8.
    match value.serialize(&mut ser) {
        Ok(()) => String::from_utf8(out).unwrap_or_default(),
        Err(_) => value.to_string(),
    }
}

fn sort(value: &mut Json) {
    match value {
        Json::Object(map) => {
            let mut entries: Vec<(String, Json)> = std::mem::take(map).into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            for (k, mut v) in entries {
                sort(&mut v);
                map.insert(k, v);
            }
        }
        Json::Array(items) => items.iter_mut().for_each(sort),
        _ => {}
    }
}

/// Non-ASCII characters as `\uXXXX` (surrogate pairs beyond the BMP), as
/// `json.dumps(ensure_ascii=True)` writes them.
fn ascii_escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    out
}

/// `json.dumps`' default separators without indent: `", "` and `": "`.
struct PythonFormatter;

/// `", "` before every item but the first.
fn item_separator<W: ?Sized + std::io::Write>(writer: &mut W, first: bool) -> std::io::Result<()> {
    if first {
        Ok(())
    } else {
        writer.write_all(b", ")
    }
}

impl serde_json::ser::Formatter for PythonFormatter {
    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        item_separator(writer, first)
    }

    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        item_separator(writer, first)
    }

    fn begin_object_value<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
    ) -> std::io::Result<()> {
        writer.write_all(b": ")
    }
}

#[cfg(test)]
mod tests;
