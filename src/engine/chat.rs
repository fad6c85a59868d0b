//! Chat transcripts: roles, messages, and rendering them with the template
//! stored in the GGUF (as Jinja, [`super::template`]), or llama.cpp's
//! built-in ChatML for a GGUF without one.

use llama_cpp_2::model::{LlamaChatMessage, LlamaChatTemplate, LlamaModel};
use serde_json::{Map, Value as Json};

use super::error::{InferenceError, InferenceResult};
use super::template::{ChatTemplate, RenderInput, TemplateError};
use super::tools::{ToolCall, ToolFormat, ToolFormatError};

/// Who said a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    System,
    User,
    Assistant,
    /// The result of a tool call.
    Tool,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

/// One turn of a transcript.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub role: Role,
    pub content: String,
    /// The calls an assistant turn makes.
    pub tool_calls: Vec<ToolCall>,
    /// For a tool's result: the call it answers, and the tool's name.
    pub tool_call_id: Option<String>,
    pub name: Option<String>,
}

impl Message {
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        Self {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            name: None,
        }
    }

    /// An assistant turn that calls tools.
    pub fn calling(calls: Vec<ToolCall>) -> Self {
        Self {
            tool_calls: calls,
            ..Self::new(Role::Assistant, "")
        }
    }

    /// The result of the call `call_id` (of the tool `name`).
    pub fn tool_result(call_id: String, content: String, name: Option<String>) -> Self {
        Self {
            tool_call_id: Some(call_id),
            name,
            ..Self::new(Role::Tool, content)
        }
    }
}

/// The chat template stored in the model, if any.
pub fn stored_template(model: &LlamaModel) -> Option<String> {
    model.chat_template(None).ok()?.to_string().ok()
}

/// Which renderer a model's conversations go through.
#[derive(Debug)]
pub enum Renderer {
    /// The GGUF's Jinja template, rendered as Hugging Face renders it.
    Jinja(Box<ChatTemplate>),
    /// The GGUF's template could not be read as Jinja.
    Unreadable(TemplateError),
    /// No template in the GGUF: llama.cpp's built-in ChatML renderer.
    BuiltIn,
}

impl Renderer {
    /// The renderer for `model`'s stored template.
    pub fn of(model: &LlamaModel) -> Self {
        match stored_template(model) {
            Some(source) => match ChatTemplate::new(&source) {
                Ok(template) => Renderer::Jinja(Box::new(template)),
                Err(e) => Renderer::Unreadable(e),
            },
            None => Renderer::BuiltIn,
        }
    }

    /// What renders: `"jinja"` (the GGUF's template) or `"chatml"`
    /// (llama.cpp's built-in format, for a GGUF without a template).
    pub fn kind(&self) -> &'static str {
        match self {
            Renderer::Jinja(_) | Renderer::Unreadable(_) => "jinja",
            Renderer::BuiltIn => "chatml",
        }
    }

    /// How the model's template writes tool calls.
    pub fn tool_format(&self) -> Result<ToolFormat, ToolFormatError> {
        match self {
            Renderer::Jinja(template) => ToolFormat::of_template(template.source()),
            Renderer::Unreadable(_) | Renderer::BuiltIn => Err(ToolFormatError::NoSupport),
        }
    }

    /// Whether the rendered text carries its own BOS token.
    pub fn writes_bos(&self) -> bool {
        matches!(self, Renderer::Jinja(t) if t.writes_bos())
    }

    /// Render `messages`, ending with the opening of an assistant turn so
    /// that generation continues as the assistant. `bos` and `eos` are the
    /// model's special tokens as text; `tools` the template's `tools`.
    /// `model` renders for a GGUF without a template (llama.cpp's built-in
    /// ChatML); a renderer without one (a remote server's) has a template.
    pub fn render(
        &self,
        model: Option<&LlamaModel>,
        messages: &[Message],
        specials: (&str, &str),
        vars: &Map<String, Json>,
        tools: Option<&Json>,
    ) -> InferenceResult<String> {
        check_messages(messages)?;
        match self {
            Renderer::Jinja(template) => template
                .render(&RenderInput {
                    messages,
                    add_generation_prompt: true,
                    bos_token: specials.0,
                    eos_token: specials.1,
                    vars,
                    tools,
                })
                .map_err(InferenceError::from),
            Renderer::Unreadable(e) => Err(e.clone().into()),
            Renderer::BuiltIn => {
                if tools.is_some() || messages.iter().any(|m| !m.tool_calls.is_empty()) {
                    return Err(ToolFormatError::NoSupport.into());
                }
                if let Some(name) = vars.keys().next() {
                    return Err(InferenceError::TemplateFailed {
                        detail: format!(
                            "the model has no chat template of its own (llama.cpp's built-in ChatML is used), so template variable \"{name}\" has nothing to set"
                        ),
                    });
                }
                match model {
                    Some(model) => built_in(model, messages),
                    None => Err(InferenceError::TemplateFailed {
                        detail: "the server publishes no chat template".to_owned(),
                    }),
                }
            }
        }
    }
}

/// What every rendering asks of a conversation: at least one message, and
/// no NUL byte in a message's text.
pub fn check_messages(messages: &[Message]) -> InferenceResult<()> {
    if messages.is_empty() {
        return Err(InferenceError::NoMessages);
    }
    if let Some(index) = messages.iter().position(|m| m.content.contains('\0')) {
        return Err(InferenceError::NulInMessage {
            index,
            role: messages[index].role.as_str(),
        });
    }
    Ok(())
}

/// `messages` in llama.cpp's built-in ChatML format.
fn built_in(model: &LlamaModel, messages: &[Message]) -> InferenceResult<String> {
    let failed = |detail: String| InferenceError::TemplateFailed { detail };
    let template = LlamaChatTemplate::new("chatml").map_err(|e| failed(e.to_string()))?;
    let mut chat = Vec::with_capacity(messages.len());
    for (index, m) in messages.iter().enumerate() {
        let message = LlamaChatMessage::new(m.role.as_str().to_owned(), m.content.clone())
            .map_err(|_| InferenceError::NulInMessage {
                index,
                role: m.role.as_str(),
            })?;
        chat.push(message);
    }
    model
        .apply_chat_template(&template, &chat, true)
        .map_err(|e| failed(e.to_string()))
}
