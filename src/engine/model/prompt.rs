//! A model's prompts: conversations rendered with its chat template (the
//! template's markup as control tokens, the messages as plain text), its
//! tools planned from the template's call format, and texts tokenized.

use std::borrow::Cow;

use llama_cpp_2::token::LlamaToken;
use serde_json::{Map, Value as Json};

use super::Model;
use crate::backend::error::{InferenceError, InferenceResult};
use crate::backend::params::{Constraint, GenerateParams};
use crate::backend::Backend;
use crate::chat::plain_text::{render_segments, ControlTexts, Inputs, Markup, Segments, Step};
use crate::chat::tools::{ToolPlan, Tools};
use crate::chat::{self, Message};
use crate::engine::decode::input::Input;
use crate::engine::llama::context;

impl Model {
    pub(super) fn renderer(&self) -> &chat::Renderer {
        self.renderer
            .get_or_init(|| chat::Renderer::of(self.chat_template().as_deref()))
    }

    /// Render a conversation with the model's chat template and `vars`,
    /// ending with the opening of the assistant's turn.
    pub fn render_chat(
        &self,
        messages: &[Message],
        vars: &Map<String, Json>,
    ) -> InferenceResult<String> {
        self.render(messages, vars, None)
    }

    fn render(
        &self,
        messages: &[Message],
        vars: &Map<String, Json>,
        tools: Option<&Json>,
    ) -> InferenceResult<String> {
        let vocab = self.model().vocab();
        let bos = self.special_text(vocab.bos());
        let eos = self.special_text(vocab.eos());
        Ok(self
            .renderer()
            .render(messages, (&bos, &eos), vars, tools)?)
    }

    /// Render a conversation for tokenizing, with the template variables
    /// and tools of `params`: the text of the messages is plain text, and
    /// only the template's own markup may become control tokens — unless
    /// `special_tokens_in_messages` trusts the messages to write control
    /// tokens too.
    pub fn chat_prompt(
        &self,
        messages: &[Message],
        params: &GenerateParams,
    ) -> InferenceResult<Segments> {
        let tools = params.tools.as_ref().map(Tools::template_value);
        let control = self
            .control
            .get_or_init(|| ControlTexts::new(context::control_texts(self.model())));
        render_segments(
            Inputs {
                messages,
                tools: tools.as_ref(),
                vars: &params.template_vars,
            },
            params.special_tokens_in_messages.unwrap_or(false),
            |messages, vars, tools| self.render(messages, vars, tools),
            Markup::Found(control),
        )
    }

    /// `params` with the plan for its tools (their grammar, and when it
    /// starts), from the call format of the model's template.
    pub(super) fn plan_tools<'p>(
        &self,
        params: &'p GenerateParams,
    ) -> InferenceResult<Cow<'p, GenerateParams>> {
        let Some(tools) = &params.tools else {
            return Ok(Cow::Borrowed(params));
        };
        let format = self.renderer().tool_format()?;
        let grammar = format
            .grammar(tools)
            .map_err(|e| InferenceError::ToolGrammar {
                detail: e.to_string(),
            })?;
        let mut planned = params.clone();
        planned.constraint = grammar.map(Constraint::Grammar);
        planned.tool_plan = Some(ToolPlan::new(format, tools));
        Ok(Cow::Owned(planned))
    }

    /// The input of a rendered conversation: its template text tokenized
    /// with special tokens parsed, its plain pieces without, its images as
    /// the projector makes them. The BOS the model's tokenizer asks for is
    /// added unless the template writes it itself.
    pub fn chat_input(&self, prompt: &Segments) -> InferenceResult<Input> {
        let vocab = self.model().vocab();
        let mut input = Input::with_projector(self.projector.clone());
        prompt.walk(self.renderer().writes_bos(), |step| match step {
            Step::Text {
                text,
                add_bos,
                special,
            } => {
                input.push_tokens(&vocab.tokenize(text.as_bytes(), add_bos, special));
                Ok(())
            }
            Step::Image(image) => input.push_image(image),
        })?;
        Ok(input)
    }

    /// A special token's text (empty for none).
    fn special_text(&self, token: LlamaToken) -> String {
        if token.0 < 0 || token.0 >= self.model().vocab().n_tokens() {
            return String::new();
        }
        String::from_utf8_lossy(&self.model().vocab().token_to_piece(token, true, None))
            .into_owned()
    }

    /// Tokenize a prompt. `add_bos` adds the special tokens the model's
    /// tokenizer asks for at the start of a sequence (BOS for most models).
    pub fn tokenize(&self, text: &str, add_bos: bool) -> Vec<LlamaToken> {
        self.model()
            .vocab()
            .tokenize(text.as_bytes(), add_bos, true)
    }
}
