//! `Displace\Infer\Prompt`: an immutable chat transcript.

use ext_php_rs::flags::ClassFlags;
use ext_php_rs::prelude::*;

use super::exceptions::no_constructor;
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
    fn with(&self, role: Role, content: String) -> Self {
        let mut messages = self.messages.clone();
        messages.push(engine::Message::new(role, content));
        Self { messages }
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
    pub fn system(content: String) -> Self {
        Self::default().with(Role::System, content)
    }

    /// A transcript that starts with a user message.
    pub fn user(content: String) -> Self {
        Self::default().with(Role::User, content)
    }

    /// This transcript plus a system message.
    pub fn with_system(&self, content: String) -> Self {
        self.with(Role::System, content)
    }

    /// This transcript plus a user message.
    pub fn with_user(&self, content: String) -> Self {
        self.with(Role::User, content)
    }

    /// This transcript plus an assistant message.
    pub fn with_assistant(&self, content: String) -> Self {
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
