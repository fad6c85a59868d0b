//! `Displace\Infer\Message`: one turn of a transcript.

use ext_php_rs::flags::ClassFlags;
use ext_php_rs::prelude::*;

use super::exceptions::no_constructor;
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

    /// `'system'`, `'user'` or `'assistant'`.
    pub fn role(&self) -> &'static str {
        self.inner.role.as_str()
    }

    /// The text of the message, verbatim.
    pub fn content(&self) -> String {
        self.inner.content.clone()
    }
}
