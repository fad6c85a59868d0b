//! `Displace\Infer\Prompt`: an immutable chat transcript.
#![allow(non_snake_case)] // PHP parameter names are camelCase: `callId`.

use ext_php_rs::flags::ClassFlags;
use ext_php_rs::prelude::*;

use ext_php_rs::binary::Binary;

use super::convert;
use super::exceptions::{infer_exception, no_constructor, type_error};
use super::image::Image;
use super::message::Message;
use super::tool_call::ToolCall;
use crate::chat::{tools, Part};
use crate::engine::{self, Role};
use ext_php_rs::convert::FromZval;
use ext_php_rs::types::{ArrayKey, ZendHashTable, Zval};

/// An immutable chat transcript; each `with*` returns a new Prompt.
#[php_class]
#[php(name = "Displace\\Infer\\Prompt")]
#[php(flags = ClassFlags::Final.union(ClassFlags::NotSerializable))]
#[derive(Debug, Default)]
pub struct Prompt {
    pub(super) messages: Vec<engine::Message>,
}

impl Prompt {
    /// This transcript plus a message. The content arrives as bytes so that
    /// text that is not UTF-8 gets a clear error rather than a TypeError.
    fn with(&self, role: Role, content: Binary<u8>) -> PhpResult<Self> {
        let content = text_arg(content, "message content")?;
        Ok(self.pushed(engine::Message::new(role, content)))
    }

    /// This transcript plus `message`.
    fn pushed(&self, message: engine::Message) -> Self {
        let mut messages = self.messages.clone();
        messages.push(message);
        Self { messages }
    }

    /// This transcript plus a message whose content is a string or a list
    /// of strings and images.
    fn with_parts(&self, role: Role, content: &Zval) -> PhpResult<Self> {
        let content = content.dereference();
        let message = if let Some(bytes) = convert::string_bytes(content) {
            engine::Message::new(role, text_arg(bytes.to_vec(), "message content")?)
        } else if let Some(table) = content.array() {
            let items = convert::list_items(table).map_err(|(position, key)| {
                type_error(format!(
                    "message content must be a list (keys 0, 1, 2, … in order), but entry {position} has the key {key}"
                ))
            })?;
            let parts = items
                .into_iter()
                .enumerate()
                .map(|(i, item)| part_of(i, item))
                .collect::<PhpResult<Vec<_>>>()?;
            engine::Message::from_parts(role, parts)
        } else {
            return Err(type_error(format!(
                "message content must be a string or a list of strings and Displace\\Infer\\Image objects, got {}",
                convert::describe_kind(content)
            )));
        };
        Ok(self.pushed(message))
    }
}

/// Item `index` of a message's content list.
fn part_of(index: usize, item: &Zval) -> PhpResult<Part> {
    let item = item.dereference();
    if let Some(bytes) = convert::string_bytes(item) {
        return text_arg(bytes.to_vec(), &format!("message content[{index}]")).map(Part::Text);
    }
    if let Some(image) = <&Image>::from_zval(item) {
        return Ok(Part::Image(image.inner.clone()));
    }
    Err(type_error(format!(
        "message content[{index}] must be a string or a Displace\\Infer\\Image, got {}",
        convert::describe_kind(item)
    )))
}

/// A string argument (or a list's string) as UTF-8 text.
fn text_arg(bytes: impl Into<Vec<u8>>, name: &str) -> PhpResult<String> {
    convert::utf8(bytes.into()).map_err(|offset| {
        infer_exception(format!(
            "{name} is not valid UTF-8 (invalid byte at offset {offset})"
        ))
    })
}

/// Call `index` of `withToolCalls()`.
fn call_of(index: usize, item: &Zval) -> PhpResult<tools::ToolCall> {
    let item = item.dereference();
    if let Ok(call) = <&ToolCall>::from_zval(item).ok_or(()) {
        return Ok(call.inner.clone());
    }
    let bad = |why: String| infer_exception(format!("call {index} {why}"));
    let table = item.array().ok_or_else(|| {
        bad(format!(
            "must be a Displace\\Infer\\ToolCall or an array ['id' => …, 'name' => …, 'arguments' => …], got {}",
            convert::describe(item)
        ))
    })?;
    let mut id = None;
    let mut name = None;
    let mut arguments = None;
    for (key, value) in table.iter() {
        let Some(key) = convert::key_name(&key) else {
            return Err(bad(format!(
                "has an integer key {key} (known: id, name, arguments)"
            )));
        };
        let text = |what: &str| {
            convert::string(value)
                .filter(|s| !s.is_empty())
                .ok_or_else(|| {
                    bad(format!(
                        "\"{what}\" must be a non-empty string, got {}",
                        convert::describe(value)
                    ))
                })
        };
        match key.as_str() {
            "id" => id = Some(text("id")?),
            "name" => name = Some(text("name")?),
            "arguments" => arguments = Some(value),
            other => {
                return Err(bad(format!(
                    "has an unknown key \"{other}\" (known: id, name, arguments)"
                )))
            }
        }
    }
    let name = name.ok_or_else(|| bad("has no \"name\"".to_owned()))?;
    let (arguments, text) = match arguments {
        Some(value) => super::tools::arguments_value(value, "\"arguments\"").map_err(bad)?,
        None => (
            serde_json::Value::Object(serde_json::Map::new()),
            "{}".to_owned(),
        ),
    };
    let mut call = tools::ToolCall::new(name, arguments, text);
    if let Some(id) = id {
        call.id = id;
    }
    Ok(call)
}

#[php_impl]
impl Prompt {
    /// Prompts come from `Prompt::system()` or `Prompt::user()`.
    pub fn __construct() -> PhpResult<Self> {
        Err(no_constructor(
            "Prompt",
            "Prompt::system() or Prompt::user()",
        ))
    }

    /// A transcript that starts with a system message.
    pub fn system(content: Binary<u8>) -> PhpResult<Self> {
        Self::default().with(Role::System, content)
    }

    /// A transcript that starts with a user message: a string, or a list
    /// of strings and `Image`s in the order the model reads them.
    pub fn user(content: &Zval) -> PhpResult<Self> {
        Self::default().with_parts(Role::User, content)
    }

    /// This transcript plus a system message.
    pub fn with_system(&self, content: Binary<u8>) -> PhpResult<Self> {
        self.with(Role::System, content)
    }

    /// This transcript plus a user message (a string, or a list of
    /// strings and `Image`s).
    pub fn with_user(&self, content: &Zval) -> PhpResult<Self> {
        self.with_parts(Role::User, content)
    }

    /// This transcript plus an assistant message.
    pub fn with_assistant(&self, content: Binary<u8>) -> PhpResult<Self> {
        self.with(Role::Assistant, content)
    }

    /// This transcript plus an assistant turn that calls tools: `calls` is
    /// a list of `ToolCall` (from a response) or arrays `['id' => …, 'name'
    /// => …, 'arguments' => array|JSON text]` (`id` optional).
    pub fn with_tool_calls(&self, calls: &ZendHashTable) -> PhpResult<Self> {
        let mut out = Vec::with_capacity(calls.len());
        for (index, (key, item)) in calls.iter().enumerate() {
            if key != ArrayKey::Long(index as i64) {
                return Err(infer_exception(
                    "calls must be a list (keys 0, 1, 2, ... in order)".to_owned(),
                ));
            }
            out.push(call_of(index, item)?);
        }
        if out.is_empty() {
            return Err(infer_exception(
                "calls must hold at least one call".to_owned(),
            ));
        }
        Ok(self.pushed(engine::Message::calling(out)))
    }

    /// This transcript plus the result of the call `callId` (a `tool`
    /// message), with the tool's name when given.
    pub fn with_tool_result(
        &self,
        callId: Binary<u8>,
        content: Binary<u8>,
        name: Option<Binary<u8>>,
    ) -> PhpResult<Self> {
        let id = text_arg(callId, "callId")?;
        if id.is_empty() {
            return Err(infer_exception("callId must not be empty".to_owned()));
        }
        if !self
            .messages
            .iter()
            .any(|m| m.tool_calls.iter().any(|c| c.id == id))
        {
            return Err(infer_exception(format!(
                "callId \"{id}\" is not the id of a call in this transcript (add the calls with withToolCalls() first)"
            )));
        }
        let content = text_arg(content, "content")?;
        let name = name.map(|n| text_arg(n, "name")).transpose()?;
        Ok(self.pushed(engine::Message::tool_result(id, content, name)))
    }

    /// The messages, oldest first.
    pub fn messages(&self) -> Vec<Message> {
        self.messages
            .iter()
            .map(|m| Message { inner: m.clone() })
            .collect()
    }

    /// The role of the last message, or null when there is none.
    pub fn last_role(&self) -> Option<&'static str> {
        self.messages.last().map(|m| m.role.as_str())
    }

    /// How many messages the transcript holds.
    pub fn count(&self) -> i64 {
        self.messages.len() as i64
    }

    /// Whether the transcript holds no message.
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }
}
