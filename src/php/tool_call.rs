//! `Displace\Infer\ToolCall`: one call of a tool, read from a reply or
//! carried by a transcript's assistant turn.

use ext_php_rs::flags::ClassFlags;
use ext_php_rs::prelude::*;
use ext_php_rs::types::Zval;

use super::convert::json_to_zval;
use super::exceptions::{inference_exception, no_constructor};
use crate::chat::tools;

/// A call of a tool: its id, the tool's name and the arguments.
#[php_class]
#[php(name = "Displace\\Infer\\ToolCall")]
#[php(flags = ClassFlags::Final.union(ClassFlags::NotSerializable))]
#[derive(Debug, Clone)]
pub struct ToolCall {
    pub(super) inner: tools::ToolCall,
}

#[php_impl]
impl ToolCall {
    /// Tool calls come from `Response::toolCalls()`.
    pub fn __construct() -> PhpResult<Self> {
        Err(no_constructor("ToolCall", "Response::toolCalls()"))
    }

    /// The call's id (`call_` and 24 hexadecimal digits), which its
    /// result refers to (`Prompt::withToolResult()`).
    pub fn id(&self) -> String {
        self.inner.id.clone()
    }

    /// The name of the tool called.
    pub fn name(&self) -> String {
        self.inner.name.clone()
    }

    /// The arguments, decoded (objects as PHP arrays).
    pub fn arguments(&self) -> PhpResult<Zval> {
        json_to_zval(&self.inner.arguments)
            .map_err(|e| inference_exception(format!("the arguments cannot be given to PHP: {e}")))
    }

    /// The arguments as the model wrote them (a JSON object).
    pub fn arguments_json(&self) -> String {
        self.inner.arguments_json.clone()
    }
}
