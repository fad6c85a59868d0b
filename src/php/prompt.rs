//! `Displace\Infer\Prompt`: an immutable chat transcript.

use ext_php_rs::flags::ClassFlags;
use ext_php_rs::prelude::*;

use ext_php_rs::binary::Binary;

use super::convert;
use super::exceptions::{infer_exception, no_constructor};
use super::message::Message;
use crate::engine::{self, Role};

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
        let content = convert::utf8(content.into()).map_err(|offset| {
            infer_exception(format!(
                "message content is not valid UTF-8 (invalid byte at offset {offset})"
            ))
        })?;
        let mut messages = self.messages.clone();
        messages.push(engine::Message::new(role, content));
        Ok(Self { messages })
    }
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

    /// A transcript that starts with a user message.
    pub fn user(content: Binary<u8>) -> PhpResult<Self> {
        Self::default().with(Role::User, content)
    }

    /// This transcript plus a system message.
    pub fn with_system(&self, content: Binary<u8>) -> PhpResult<Self> {
        self.with(Role::System, content)
    }

    /// This transcript plus a user message.
    pub fn with_user(&self, content: Binary<u8>) -> PhpResult<Self> {
        self.with(Role::User, content)
    }

    /// This transcript plus an assistant message.
    pub fn with_assistant(&self, content: Binary<u8>) -> PhpResult<Self> {
        self.with(Role::Assistant, content)
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
