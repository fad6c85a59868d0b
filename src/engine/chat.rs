//! Chat transcripts: roles, messages, and rendering them with the template
//! stored in the GGUF.

use llama_cpp_2::model::{LlamaChatMessage, LlamaModel};

use super::error::{InferenceError, InferenceResult};

/// Who said a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    System,
    User,
    Assistant,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }
}

/// One turn of a transcript.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub role: Role,
    pub content: String,
}

impl Message {
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        Self {
            role,
            content: content.into(),
        }
    }
}

/// The chat template stored in the model, if any.
pub fn stored_template(model: &LlamaModel) -> Option<String> {
    model.chat_template(None).ok()?.to_string().ok()
}

/// Render `messages` with the model's template, ending with the opening of an
/// assistant turn so that generation continues as the assistant.
pub fn render(model: &LlamaModel, messages: &[Message]) -> InferenceResult<String> {
    if messages.is_empty() {
        return Err(InferenceError::NoMessages);
    }
    let template = model
        .chat_template(None)
        .map_err(|_| InferenceError::NoChatTemplate)?;
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
        .map_err(|e| InferenceError::TemplateFailed {
            detail: match e {
                llama_cpp_2::ApplyChatTemplateError::FfiError(_) => {
                    "llama.cpp does not recognise this template (only its built-in formats are supported)"
                        .to_owned()
                }
                other => other.to_string(),
            },
        })
}
