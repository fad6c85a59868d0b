//! Rendering a conversation, as text: roles and messages, the model's Jinja
//! template ([`template`]) or ChatML for a model without one, message text
//! kept as text ([`plain_text`]), tool calls written and read back
//! ([`tools`]), and a reply split into its reasoning and its answer
//! ([`reasoning`]). Pure Rust: no llama.cpp type, nothing that needs a
//! model; the engine and the remote backend tokenize what it renders.

pub mod image;
pub mod plain_text;
pub mod reasoning;
pub mod template;
pub mod tools;

use serde_json::{Map, Value as Json};

use self::image::Image;

use template::{ChatTemplate, RenderInput, TemplateError};
use tools::{ToolCall, ToolFormat, ToolFormatError};

/// Why a conversation could not be rendered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChatError {
    #[error("prompt has no messages")]
    NoMessages,
    #[error("message {index} ({role}) contains a NUL byte, which a chat template cannot carry")]
    NulInMessage { index: usize, role: &'static str },
    /// The GGUF's Jinja template cannot render the conversation.
    #[error(transparent)]
    Template(#[from] TemplateError),
    /// The model's template cannot take the tools.
    #[error(transparent)]
    Tools(#[from] ToolFormatError),
    #[error("the model's chat template could not be applied: {detail}")]
    TemplateFailed { detail: String },
}

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
    /// The message's text; its images stand between its characters
    /// (`images`).
    pub content: String,
    /// The images of the message, each at its byte offset in `content`, in
    /// order.
    pub images: Vec<Placed>,
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
            images: Vec::new(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            name: None,
        }
    }

    /// A message of text and images, in order.
    pub fn from_parts(role: Role, parts: Vec<Part>) -> Self {
        let mut message = Self::new(role, String::new());
        for part in parts {
            match part {
                Part::Text(text) => message.content.push_str(&text),
                Part::Image(image) => message.images.push(Placed {
                    at: message.content.len(),
                    image,
                }),
            }
        }
        message
    }

    /// The message as text and images in order (adjacent text in one part;
    /// no empty text part).
    pub fn parts(&self) -> Vec<Part> {
        let mut parts = Vec::new();
        let mut from = 0;
        for placed in &self.images {
            let at = placed.at.clamp(from, self.content.len());
            if let Some(text) = self.content.get(from..at).filter(|t| !t.is_empty()) {
                parts.push(Part::Text(text.to_owned()));
            }
            parts.push(Part::Image(placed.image.clone()));
            from = at;
        }
        if let Some(text) = self.content.get(from..).filter(|t| !t.is_empty()) {
            parts.push(Part::Text(text.to_owned()));
        }
        parts
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

/// An image at its place in a message's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placed {
    /// A byte offset in the message's `content`, at a character boundary.
    pub at: usize,
    pub image: Image,
}

/// A piece of a message: text, or an image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    Text(String),
    Image(Image),
}

/// Which renderer a model's conversations go through.
#[derive(Debug)]
pub enum Renderer {
    /// The GGUF's Jinja template, rendered as Hugging Face renders it.
    Jinja(Box<ChatTemplate>),
    /// The GGUF's template could not be read as Jinja.
    Unreadable(TemplateError),
    /// No template in the GGUF: ChatML, as llama.cpp's built-in renderer
    /// writes it.
    BuiltIn,
    /// No template, and none to fall back on (a server that publishes
    /// none: its own fallback is not known here).
    Missing,
}

impl Renderer {
    /// The renderer for a model's stored template (`None`: the model has
    /// none, and ChatML is written).
    pub fn of(stored: Option<&str>) -> Self {
        match stored {
            Some(source) => Self::jinja(source),
            None => Renderer::BuiltIn,
        }
    }

    /// The renderer of a Jinja template's text.
    pub fn jinja(source: &str) -> Self {
        match ChatTemplate::new(source) {
            Ok(template) => Renderer::Jinja(Box::new(template)),
            Err(e) => Renderer::Unreadable(e),
        }
    }

    /// What renders: `"jinja"` (the GGUF's template) or `"chatml"`
    /// (llama.cpp's built-in format, for a GGUF without a template).
    pub fn kind(&self) -> &'static str {
        match self {
            Renderer::Jinja(_) | Renderer::Unreadable(_) => "jinja",
            Renderer::BuiltIn | Renderer::Missing => "chatml",
        }
    }

    /// How the model's template writes tool calls.
    pub fn tool_format(&self) -> Result<ToolFormat, ToolFormatError> {
        match self {
            Renderer::Jinja(template) => ToolFormat::of_template(template.source()),
            Renderer::Unreadable(_) | Renderer::BuiltIn | Renderer::Missing => {
                Err(ToolFormatError::NoSupport)
            }
        }
    }

    /// Whether the rendered text carries its own BOS token.
    pub fn writes_bos(&self) -> bool {
        matches!(self, Renderer::Jinja(t) if t.writes_bos())
    }

    /// Render `messages`, ending with the opening of an assistant turn so
    /// that generation continues as the assistant. `bos` and `eos` are the
    /// model's special tokens as text; `tools` the template's `tools`.
    pub fn render(
        &self,
        messages: &[Message],
        specials: (&str, &str),
        vars: &Map<String, Json>,
        tools: Option<&Json>,
    ) -> Result<String, ChatError> {
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
                .map_err(ChatError::from),
            Renderer::Unreadable(e) => Err(e.clone().into()),
            Renderer::BuiltIn | Renderer::Missing => {
                if tools.is_some() || messages.iter().any(|m| !m.tool_calls.is_empty()) {
                    return Err(ToolFormatError::NoSupport.into());
                }
                if let Some(name) = vars.keys().next() {
                    return Err(ChatError::TemplateFailed {
                        detail: format!(
                            "the model has no chat template of its own (llama.cpp's built-in ChatML is used), so template variable \"{name}\" has nothing to set"
                        ),
                    });
                }
                match self {
                    Renderer::BuiltIn => Ok(chatml(messages)),
                    _ => Err(ChatError::TemplateFailed {
                        detail: "the server publishes no chat template".to_owned(),
                    }),
                }
            }
        }
    }
}

/// What every rendering asks of a conversation: at least one message, and
/// no NUL byte in a message's text.
pub fn check_messages(messages: &[Message]) -> Result<(), ChatError> {
    if messages.is_empty() {
        return Err(ChatError::NoMessages);
    }
    if let Some(index) = messages.iter().position(|m| m.content.contains('\0')) {
        return Err(ChatError::NulInMessage {
            index,
            role: messages[index].role.as_str(),
        });
    }
    Ok(())
}

/// `messages` in ChatML, exactly as llama.cpp's built-in renderer writes
/// it (`llm_chat_apply_template`, "chatml"), ending with the opening of an
/// assistant turn.
pub fn chatml(messages: &[Message]) -> String {
    let mut out = String::new();
    for m in messages {
        out.push_str("<|im_start|>");
        out.push_str(m.role.as_str());
        out.push('\n');
        out.push_str(&m.content);
        out.push_str("<|im_end|>\n");
    }
    out.push_str("<|im_start|>assistant\n");
    out
}
