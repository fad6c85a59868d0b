//! Tool calls: the tools a chat may call, the call format of the model's
//! template, the grammar that makes every call a well-formed call of a
//! declared tool whose arguments satisfy its schema, and reading the calls
//! back from the generated text.
//!
//! Two formats are known:
//! - Hermes (Qwen2.5, Qwen3, Hermes, many others): each call is
//!   `<tool_call>\n{"name": "…", "arguments": {…}}\n</tool_call>`, one after
//!   the other on their own lines;
//! - Llama 3.1 / 3.2: the reply is one JSON object,
//!   `{"name": "…", "parameters": {…}}`.
//!
//! Pure Rust: the schemas of the arguments arrive converted (as grammars).

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use serde_json::{Map, Value as Json};

use crate::grammar::check::GrammarError;
use crate::grammar::compose::with_prefix;
use crate::grammar::CheckedGbnf;

/// One tool a chat may call.
#[derive(Debug, Clone)]
pub struct ToolSpec {
    pub name: String,
    pub description: Option<String>,
    /// The JSON Schema of the arguments, as the caller gave it (rendered
    /// into the prompt by the template).
    pub parameters: Json,
    /// The grammar of the arguments (start rule `root`).
    pub arguments: CheckedGbnf,
}

/// Whether and which tool the model must call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolChoice {
    /// Free text, or calls: the grammar starts at the format's opener.
    Auto,
    /// Free text only: no call is read, and the format's opener token is
    /// never sampled.
    None,
    /// Calls only, from the first token.
    Required,
    /// Calls of this tool only, from the first token.
    Named(String),
}

/// The tools of a chat and the choice among them.
#[derive(Debug, Clone)]
pub struct Tools {
    pub specs: Vec<ToolSpec>,
    pub choice: ToolChoice,
}

impl Tools {
    /// The `tools` variable of a chat template, as Hugging Face passes it:
    /// `{"type": "function", "function": {"name", "description",
    /// "parameters"}}` per tool.
    pub fn template_value(&self) -> Json {
        Json::Array(
            self.specs
                .iter()
                .map(|t| {
                    let mut function = Map::new();
                    function.insert("name".into(), Json::from(t.name.as_str()));
                    if let Some(d) = &t.description {
                        function.insert("description".into(), Json::from(d.as_str()));
                    }
                    function.insert("parameters".into(), t.parameters.clone());
                    let mut tool = Map::new();
                    tool.insert("type".into(), Json::from("function"));
                    tool.insert("function".into(), Json::Object(function));
                    Json::Object(tool)
                })
                .collect(),
        )
    }

    /// The tools the grammar offers: all, or the one the choice names.
    fn offered(&self) -> impl Iterator<Item = (usize, &ToolSpec)> {
        self.specs
            .iter()
            .enumerate()
            .filter(move |(_, t)| match &self.choice {
                ToolChoice::Named(name) => &t.name == name,
                _ => true,
            })
    }
}

/// A call of a tool: in a transcript (an assistant turn), or read from a
/// reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// The arguments (a JSON object).
    pub arguments: Json,
    /// The arguments as the model wrote them (JSON text).
    pub arguments_json: String,
}

impl ToolCall {
    /// A call with a fresh id.
    pub fn new(name: String, arguments: Json, arguments_json: String) -> Self {
        Self {
            id: fresh_id(),
            name,
            arguments,
            arguments_json,
        }
    }
}

/// `call_` and 24 hexadecimal digits, unique in the process and unlikely
/// to repeat across processes (a random key per process, and a counter).
fn fresh_id() -> String {
    static KEY: OnceLock<RandomState> = OnceLock::new();
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let key = KEY.get_or_init(RandomState::new);
    let n = COUNT.fetch_add(1, Ordering::Relaxed);
    let mut a = key.build_hasher();
    a.write_u64(n);
    let mut b = key.build_hasher();
    b.write_u64(!n);
    format!("call_{:016x}{:08x}", a.finish(), b.finish() & 0xffff_ffff)
}

/// How a chat's generation treats tools, set by the model from the
/// caller's [`Tools`] and its template's [`ToolFormat`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolPlan {
    pub format: ToolFormat,
    /// The grammar waits for one of these words (`auto`), which it then
    /// reads as its own start; empty: it applies from the first token of
    /// the answer.
    pub triggers: &'static [Trigger],
    /// Text whose token is never sampled (`none`: the format's opener).
    pub ban: Option<&'static str>,
    /// Whether the reply's calls are read (not for `none`).
    pub read_calls: bool,
}

impl ToolPlan {
    /// The plan for `tools` in `format`.
    pub fn new(format: ToolFormat, tools: &Tools) -> Self {
        Self {
            format,
            triggers: if tools.choice == ToolChoice::Auto {
                format.triggers()
            } else {
                &[]
            },
            ban: (tools.choice == ToolChoice::None).then(|| format.opener()),
            read_calls: tools.choice != ToolChoice::None,
        }
    }
}

/// Where the grammar of a call starts in free text: at `word`, which
/// `anchored` requires at the start of the answer (leading whitespace
/// aside).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Trigger {
    pub word: &'static str,
    pub anchored: bool,
}

/// A model's call format, as its chat template writes calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolFormat {
    Hermes,
    Llama3,
}

const HERMES_OPEN: &str = "<tool_call>";
const HERMES_CLOSE: &str = "</tool_call>";
/// A Markdown JSON block around a bare call.
const FENCE_OPEN: &str = "```json\n";
const FENCE_CLOSE: &str = "\n```";

/// Why a template cannot take tools.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolFormatError {
    #[error("the model's chat template has no tool support (it never reads `tools`): it cannot be given tools")]
    NoSupport,
    #[error("the model's chat template renders tools, but in a call format this extension does not know (known: Hermes/Qwen `<tool_call>` blocks, Llama 3 JSON calls)")]
    UnknownFormat,
}

impl ToolFormat {
    /// The format of a chat template's calls.
    pub fn of_template(source: &str) -> Result<Self, ToolFormatError> {
        if !source.contains("tools") {
            return Err(ToolFormatError::NoSupport);
        }
        if source.contains(HERMES_OPEN) {
            Ok(ToolFormat::Hermes)
        } else if source.contains("<|start_header_id|>") && source.contains("parameters") {
            Ok(ToolFormat::Llama3)
        } else {
            Err(ToolFormatError::UnknownFormat)
        }
    }

    /// Where the grammar starts when the model may answer in text
    /// (`auto`). Hermes models also write a bare JSON call as their whole
    /// reply, or one in a Markdown JSON block (Qwen2.5-Coder does both):
    /// `{` or `` ```json `` opening the answer starts a call too.
    pub fn triggers(self) -> &'static [Trigger] {
        const BARE: Trigger = Trigger {
            word: "{",
            anchored: true,
        };
        match self {
            ToolFormat::Hermes => &[
                Trigger {
                    word: HERMES_OPEN,
                    anchored: false,
                },
                BARE,
                Trigger {
                    word: FENCE_OPEN,
                    anchored: true,
                },
            ],
            ToolFormat::Llama3 => &[BARE],
        }
    }

    /// The text that opens a call, which `none` keeps the model from
    /// writing when it is one token.
    pub fn opener(self) -> &'static str {
        match self {
            ToolFormat::Hermes => HERMES_OPEN,
            ToolFormat::Llama3 => "{\"name\"",
        }
    }

    /// The grammar of the calls `tools` allows (its start is a
    /// [`Trigger`]'s word, where `auto` starts it). `None` for
    /// `ToolChoice::None`.
    pub fn grammar(self, tools: &Tools) -> Result<Option<CheckedGbnf>, GrammarError> {
        if tools.choice == ToolChoice::None {
            return Ok(None);
        }
        let mut bodies = Vec::new();
        let mut rules = String::new();
        for (i, tool) in tools.offered() {
            let prefix = format!("t{i}-");
            let key = match self {
                ToolFormat::Hermes => "arguments",
                ToolFormat::Llama3 => "parameters",
            };
            bodies.push(format!(
                "{} {prefix}root",
                gbnf_literal(&format!("\"name\": \"{}\", \"{key}\": ", tool.name))
            ));
            rules.push_str(&with_prefix(tool.arguments.as_str(), &prefix));
            if !rules.ends_with('\n') {
                rules.push('\n');
            }
        }
        let body = format!("body ::= {}\n", bodies.join(" | "));
        // Hermes: tagged calls, or one bare call (in a Markdown JSON block
        // or not) as the whole reply.
        let top = match self {
            ToolFormat::Hermes => {
                "root ::= call (\"\\n\" call)* | \"{\" body \"}\" | \"```json\\n{\" body \"}\\n```\"\n"
            }
            ToolFormat::Llama3 => "root ::= \"{\" body \"}\"\n",
        };
        let call = match self {
            ToolFormat::Hermes => "call ::= \"<tool_call>\\n{\" body \"}\\n</tool_call>\"\n",
            ToolFormat::Llama3 => "",
        };
        CheckedGbnf::new(format!("{top}{call}{body}{rules}")).map(Some)
    }

    /// The calls in a reply, and the reply's text without them (trimmed).
    /// Only complete calls of the format count.
    pub fn parse(self, text: &str) -> (String, Vec<ToolCall>) {
        match self {
            ToolFormat::Hermes if !text.contains(HERMES_OPEN) => {
                let bare = text.trim();
                let bare = bare
                    .strip_prefix(FENCE_OPEN)
                    .and_then(|b| b.strip_suffix(FENCE_CLOSE))
                    .unwrap_or(bare);
                match read_call(bare, "arguments") {
                    Some(call) => (String::new(), vec![call]),
                    None => (text.trim().to_owned(), Vec::new()),
                }
            }
            ToolFormat::Hermes => {
                let mut calls = Vec::new();
                let mut rest = String::new();
                let mut tail = text;
                while let Some(open) = tail.find(HERMES_OPEN) {
                    let inside = &tail[open + HERMES_OPEN.len()..];
                    let Some(close) = inside.find(HERMES_CLOSE) else {
                        break;
                    };
                    match read_call(inside[..close].trim(), "arguments") {
                        Some(call) => {
                            rest.push_str(&tail[..open]);
                            calls.push(call);
                        }
                        None => rest.push_str(
                            &tail[..open + HERMES_OPEN.len() + close + HERMES_CLOSE.len()],
                        ),
                    }
                    tail = &inside[close + HERMES_CLOSE.len()..];
                }
                rest.push_str(tail);
                (rest.trim().to_owned(), calls)
            }
            ToolFormat::Llama3 => match read_call(text.trim(), "parameters") {
                Some(call) => (String::new(), vec![call]),
                None => (text.trim().to_owned(), Vec::new()),
            },
        }
    }
}

/// A call written as `{"name": "…", "<key>": {…}}`, with the arguments' text
/// as written.
fn read_call(json: &str, key: &str) -> Option<ToolCall> {
    let value: Json = serde_json::from_str(json).ok()?;
    let name = value.get("name")?.as_str()?.to_owned();
    let arguments = value.get(key)?.clone();
    if !arguments.is_object() {
        return None;
    }
    // The arguments' own text: what follows `"<key>": ` up to the closing
    // brace of the call (the grammar writes nothing after the arguments).
    let marker = format!("\"{key}\": ");
    let arguments_json = json
        .find(&marker)
        .and_then(|at| json[at + marker.len()..].strip_suffix('}'))
        .filter(|text| serde_json::from_str::<Json>(text).ok().as_ref() == Some(&arguments))
        .map_or_else(|| arguments.to_string(), str::to_owned);
    Some(ToolCall::new(name, arguments, arguments_json))
}

/// `text` as a GBNF string literal.
fn gbnf_literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests;
