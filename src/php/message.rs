//! `Displace\Infer\Message`: one turn of a transcript.

use ext_php_rs::flags::ClassFlags;
use ext_php_rs::prelude::*;

use super::exceptions::no_constructor;
use ext_php_rs::convert::IntoZval;
use ext_php_rs::types::Zval;

use super::image::Image;
use super::tool_call::ToolCall;
use crate::chat::Part;
use crate::engine;

/// One turn of a chat transcript.
#[php_class]
#[php(name = "Displace\\Infer\\Message")]
#[php(flags = ClassFlags::Final.union(ClassFlags::NotSerializable))]
#[derive(Debug)]
pub struct Message {
    pub(super) inner: engine::Message,
}

#[php_impl]
impl Message {
    /// Messages come from `Prompt::messages()`.
    pub fn __construct() -> PhpResult<Self> {
        Err(no_constructor("Message", "Prompt::messages()"))
    }

    /// `'system'`, `'user'`, `'assistant'` or `'tool'`.
    pub fn role(&self) -> &'static str {
        self.inner.role.as_str()
    }

    /// The text of the message, verbatim.
    pub fn content(&self) -> String {
        self.inner.content.clone()
    }

    /// The message as it was given: its text and `Image`s in order (a
    /// message of text alone: one string).
    pub fn parts(&self) -> Vec<Zval> {
        self.inner
            .parts()
            .into_iter()
            .filter_map(|part| match part {
                Part::Text(text) => text.into_zval(false).ok(),
                Part::Image(inner) => Image { inner }.into_zval(false).ok(),
            })
            .collect()
    }

    /// The message's images, in order.
    pub fn images(&self) -> Vec<Image> {
        self.inner
            .images
            .iter()
            .map(|p| Image {
                inner: p.image.clone(),
            })
            .collect()
    }

    /// The calls an assistant turn makes (`Prompt::withToolCalls()`).
    pub fn tool_calls(&self) -> Vec<ToolCall> {
        self.inner
            .tool_calls
            .iter()
            .map(|c| ToolCall { inner: c.clone() })
            .collect()
    }

    /// For a tool's result (`Prompt::withToolResult()`): the id of the call
    /// it answers; otherwise null.
    pub fn tool_call_id(&self) -> Option<String> {
        self.inner.tool_call_id.clone()
    }
}
