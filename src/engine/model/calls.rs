//! The calls made on a model loaded in this process: the [`Backend`] that
//! `Displace\\Infer\\Model` holds, and how each call takes a context off
//! the model's shelves, runs in it and puts it back.

use std::borrow::Cow;
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};

use llama_cpp_2::token::LlamaToken;
use serde_json::{json, Value};

use super::Model;
use crate::backend::error::{InferenceError, InferenceResult, List};
use crate::backend::params::{GenerateParams, StopCheck};
use crate::backend::{Backend, Generation, PieceStream, Prompt, Prompts};
use crate::chat::reasoning::Parts;
use crate::chat::Message;
use crate::engine::cache::prefix_cache;
use crate::engine::decode::input::Input;
use crate::engine::decode::sampler::{Biases, CallSampling, GrammarSampler, Sampler};
use crate::engine::decode::session::Session;
use crate::engine::decode::stream::Stream;
use crate::engine::decode::{batch, generate, score};
use crate::engine::embed;
use crate::engine::llama::context::{Context, Shape};
use crate::engine::llama::devices::{self, Device};
use crate::engine::llama::lora::ActiveSet;
use crate::engine::llama::shelf::{Fit, Shelf};
use crate::engine::llama::threads::Claim;

impl Backend for Model {
    /// Render a transcript with the model's chat template, or tokenize a
    /// text, and generate.
    fn generate(&self, prompt: Prompt<'_>, params: &GenerateParams) -> InferenceResult<Generation> {
        let (tokens, params, _) = self.prompt_tokens(prompt, params)?;
        self.generate_tokens(&tokens, &params)
    }

    /// Stream what [`Backend::generate`] makes (see [`Stream`]).
    fn stream(
        self: Arc<Self>,
        prompt: Prompt<'_>,
        params: GenerateParams,
    ) -> InferenceResult<Box<dyn PieceStream>> {
        let (tokens, params, parts) = self.prompt_tokens(prompt, &params)?;
        let params = params.into_owned();
        Ok(Box::new(self.stream_tokens(tokens, params, parts)?))
    }

    /// Generate from each of `prompts` together, at most `parallel` at a
    /// time, as parallel sequences of one context; the results are in the
    /// order of `prompts`.
    fn generate_many(
        &self,
        prompts: Prompts<'_>,
        params: &GenerateParams,
        parallel: u32,
    ) -> InferenceResult<Vec<Generation>> {
        // A chat's tools are planned once for all its transcripts.
        let params = match prompts {
            Prompts::Chat(_) => self.plan_tools(params)?,
            Prompts::Text { .. } => Cow::Borrowed(params),
        };
        let tokens = prompts
            .iter()
            .enumerate()
            .map(|(i, prompt)| {
                self.planned_tokens(prompt, &params)
                    .map(|(tokens, _)| tokens)
                    .map_err(|e| e.in_prompt(i))
            })
            .collect::<InferenceResult<Vec<_>>>()?;
        self.generate_many_tokens(&tokens, &params, parallel)
    }

    /// The pooled embedding of each of `texts`, in order (see
    /// [`embed::embed`]). Each text gets the special tokens the model's
    /// tokenizer adds to a sequence (BERT's `[CLS]` and `[SEP]`), and must
    /// fit in the context the model was trained for. `stop` ends the call
    /// with `InferenceError::Aborted` when it comes.
    fn embed_many(&self, texts: &[String], stop: StopCheck) -> InferenceResult<Vec<Vec<f32>>> {
        if self.embedding.is_none() {
            return Err(InferenceError::NotForEmbeddings);
        }
        let max = self.context_length();
        let tokens = texts
            .iter()
            .enumerate()
            .map(|(i, text)| {
                let tokens = self.tokenize(text, true);
                if text.is_empty() {
                    Err(InferenceError::EmptyText.in_list(List::Texts, i))
                } else if max > 0 && tokens.len() > max as usize {
                    Err(InferenceError::TextTooLong {
                        tokens: tokens.len(),
                        max,
                    }
                    .in_list(List::Texts, i))
                } else {
                    Ok(tokens)
                }
            })
            .collect::<InferenceResult<Vec<_>>>()?;
        self.embed_tokens(&tokens, stop)
    }

    /// How many tokens `text` is, without BOS; `parse_special` reads
    /// control tokens' markup as those tokens rather than as text.
    fn count_tokens(&self, text: &str, parse_special: bool) -> InferenceResult<usize> {
        Ok(self
            .model()
            .vocab()
            .tokenize(text.as_bytes(), false, parse_special)
            .len())
    }

    /// The log-probability of each of `answers` as the reply to `messages`
    /// (see [`score::score`]).
    fn score(
        &self,
        messages: &[Message],
        answers: &[String],
        params: &GenerateParams,
    ) -> InferenceResult<Vec<f64>> {
        let (input, params, _) = self.prompt_tokens(Prompt::Chat(messages), params)?;
        let model = self.model();
        generate::check_fits(model, &input, params.n_ctx)?;
        let answers = score::answer_tokens(model, answers, input.len(), params.n_ctx)?;
        self.refuse_during_stream()?;
        let mut session = self.session_for(&input, &params)?;
        let claim = self.claim();
        let result = score::score(&mut session, &input, &answers, &params, claim.as_ref());
        if result.is_ok() {
            self.reusable.sessions.put(session);
        }
        result
    }

    /// The text [`Model::chat`] gives the model for `messages` with
    /// `params` (its tools checked against the template as a chat checks
    /// them).
    fn render_prompt(
        &self,
        messages: &[Message],
        params: &GenerateParams,
    ) -> InferenceResult<String> {
        let params = self.plan_tools(params)?;
        Ok(self.chat_prompt(messages, &params)?.text())
    }

    /// What the model runs on and what it is, as `Model::info()` shows it.
    fn info(&self) -> Value {
        let model = self.model();
        let layers = model.n_layer() + 1;
        let all = devices::devices();
        let gpus: Vec<&Device> = all.iter().filter(|d| d.is_gpu()).collect();
        let main = gpus.get(self.main_gpu.unwrap_or(0) as usize).copied();
        let gpu_layers = match main {
            Some(_) => self.n_gpu_layers.min(layers),
            None => 0,
        };
        let backend = match main {
            Some(d) if gpu_layers > 0 => d.backend.clone(),
            _ => "cpu".to_owned(),
        };
        let file_type = model
            .meta_val_str("general.file_type")
            .ok()
            .and_then(|t| t.trim().parse::<u32>().ok());
        let devices: Vec<Value> = all
            .iter()
            .map(|d| {
                json!({
                    "name": d.name,
                    "description": d.description,
                    "backend": d.backend,
                    "type": d.kind,
                    "memory_total": d.memory_total,
                    "memory_free": d.memory_free,
                })
            })
            .collect();
        json!({
            "backend": backend,
            "backends": devices::compiled_backends(),
            "devices": devices,
            "gpu_layers": gpu_layers,
            "layers": layers,
            "context_length": model.n_ctx_train(),
            "context_size": Some(self.last_n_ctx.load(Ordering::Relaxed)).filter(|&n| n > 0),
            "threads": self.n_threads,
            "file_size": std::fs::metadata(&self.path).map(|m| m.len()).ok(),
            "parameters": model.n_params(),
            "quantization": file_type.map(devices::file_type_name),
            "vision": self.projector.is_some(),
            "mmproj": self.projector.as_ref().map(|p| p.path().display().to_string()),
            "lora": self.adapters.specs().map(|a| json!({
                "name": a.name,
                "path": a.path.display().to_string(),
                "scale": a.scale(),
            })).collect::<Vec<_>>(),
        })
    }

    /// The context length the model was trained for.
    fn context_length(&self) -> u32 {
        self.model().n_ctx_train()
    }

    /// The chat template stored in the GGUF, if any.
    fn chat_template(&self) -> Option<String> {
        self.model().chat_template(None).ok()?.to_string().ok()
    }

    /// How conversations are rendered: `"jinja"` (the GGUF's template) or
    /// `"chatml"` (llama.cpp's built-in format, for a GGUF without one).
    fn chat_template_kind(&self) -> &'static str {
        self.renderer().kind()
    }

    /// Whether a stream of this model is open on the calling thread.
    fn is_streaming(&self) -> bool {
        self.reusable
            .sessions
            .is_streaming(std::thread::current().id())
    }
}

impl Model {
    /// The tokens of `prompt`, the parameters a chat's tools make of
    /// `params`, and where the reply starts (inside reasoning or not).
    fn prompt_tokens<'p>(
        &self,
        prompt: Prompt<'_>,
        params: &'p GenerateParams,
    ) -> InferenceResult<(Input, Cow<'p, GenerateParams>, Option<Parts>)> {
        let params = match prompt {
            Prompt::Chat(_) => self.plan_tools(params)?,
            Prompt::Text { .. } => Cow::Borrowed(params),
        };
        let (tokens, parts) = self.planned_tokens(prompt, &params)?;
        Ok((tokens, params, parts))
    }

    /// The tokens of `prompt`, with `params` planned already.
    fn planned_tokens(
        &self,
        prompt: Prompt<'_>,
        params: &GenerateParams,
    ) -> InferenceResult<(Input, Option<Parts>)> {
        Ok(match prompt {
            Prompt::Chat(messages) => {
                let rendered = self.chat_prompt(messages, params)?;
                let parts = Parts::after_prompt(&rendered.text());
                (self.chat_input(&rendered)?, Some(parts))
            }
            Prompt::Text { text, add_bos } => (self.tokenize(text, add_bos).into(), None),
        })
    }

    fn generate_tokens(
        &self,
        prompt: &Input,
        params: &GenerateParams,
    ) -> InferenceResult<Generation> {
        let (mut session, sampler) = self.prepare(prompt, params)?;
        let claim = self.claim();
        let result = generate::run(
            &mut session,
            self.model(),
            sampler,
            prompt,
            params,
            claim.as_ref(),
        );
        // After an error the cache may not match what the session records.
        if result.is_ok() {
            self.reusable.sessions.put(session);
        }
        result
    }

    fn generate_many_tokens(
        &self,
        prompts: &[Input],
        params: &GenerateParams,
        parallel: u32,
    ) -> InferenceResult<Vec<Generation>> {
        let model = &self.model;
        if prompts.is_empty() {
            return Err(InferenceError::NoPrompts);
        }
        for (i, prompt) in prompts.iter().enumerate() {
            generate::check_fits(model, prompt, params.n_ctx).map_err(|e| e.in_prompt(i))?;
            prompt.check_ends_with_text().map_err(|e| e.in_prompt(i))?;
        }
        self.refuse_during_stream()?;
        let sampling = self.sampling(params)?;
        let adapters = self.adapters.resolve(params.lora.as_deref())?;
        let owner = prefix_cache::Owner {
            adapters: adapters.id,
            ..self.cache_owner
        };
        let shape = batch::shape_for(prompts, params, parallel);
        self.in_kept_context(
            &self.reusable.many,
            (shape, &adapters),
            params.stop_check,
            |ctx, claim| {
                batch::run(
                    ctx,
                    params.cache_prompt.then_some(owner),
                    model,
                    prompts,
                    params,
                    &sampling,
                    claim,
                )
            },
        )
    }

    /// Run `call` in a context of `shape` from `shelf` (else a new one),
    /// under the LoRA `adapters`, on the call's share of the cores, stopped
    /// by `stop`; the context goes back on the shelf when the call
    /// succeeded (after an error its cache may not match what it records).
    fn in_kept_context<R>(
        &self,
        shelf: &Shelf<Context>,
        (shape, adapters): (Shape, &ActiveSet<'_>),
        stop: StopCheck,
        call: impl FnOnce(&mut Context, Option<&Claim>) -> InferenceResult<R>,
    ) -> InferenceResult<R> {
        let spare = shelf.inspect(<[_]>::len) < self.set_contexts;
        let kept = shelf.take(|c| {
            if c.shape() == shape && c.is_usable() {
                fit_adapters((c.adapters(), adapters.id), 0, spare)
            } else {
                Fit::Misfit
            }
        });
        let mut ctx = match kept {
            Some(c) => c,
            None => self.new_context(shape)?,
        };
        ctx.set_adapters(adapters)?;
        let claim = self.claim();
        if let Some(claim) = &claim {
            ctx.set_threads(claim.threads());
        }
        ctx.set_stop(stop);
        let result = call(&mut ctx, claim.as_ref());
        if result.is_ok() {
            shelf.put(ctx);
        }
        result
    }

    /// The checks, the sampler and the session of a generation from
    /// `prompt`: the kept session of that size that shares most of the
    /// prompt, else a new one.
    fn prepare(
        &self,
        prompt: &Input,
        params: &GenerateParams,
    ) -> InferenceResult<(Session, Sampler)> {
        self.refuse_during_stream()?;
        let model = &self.model;
        generate::check_fits(model, prompt, params.n_ctx)?;
        let sampler = self
            .sampling(params)?
            .into_sampler(model, params, &prompt.text_tokens());
        Ok((self.session_for(prompt, params)?, sampler))
    }

    /// The kept session of the size `params` asks for that shares most of
    /// `prompt`, else a new one.
    fn session_for(&self, prompt: &Input, params: &GenerateParams) -> InferenceResult<Session> {
        let model = &self.model;
        let adapters = self.adapters.resolve(params.lora.as_deref())?;
        let spare = self.reusable.sessions.kept() < self.set_contexts;
        let kept = self.reusable.sessions.take(|s| {
            if s.n_ctx() == params.n_ctx && s.is_usable() {
                fit_adapters(
                    (s.adapters(), adapters.id),
                    s.shared_with(prompt.tokens(), adapters.id),
                    spare,
                )
            } else {
                Fit::Misfit
            }
        });
        let mut session = match kept {
            Some(s) => s,
            None => Session::new(
                model,
                self.cache_owner,
                self.n_threads,
                params.n_ctx,
                self.poll(),
            )?,
        };
        session.use_adapters(&adapters)?;
        self.last_n_ctx.store(params.n_ctx, Ordering::Relaxed);
        Ok(session)
    }

    /// What the samplers of a call start from: the grammar of `params`
    /// and its logit biases, resolved for this model.
    fn sampling(&self, params: &GenerateParams) -> InferenceResult<CallSampling> {
        Ok(CallSampling {
            grammar: self.grammar(params)?,
            biases: Biases::of(&self.model, &params.sampling)?,
        })
    }

    /// A fresh grammar sampler for the constraint of `params`, parsed once
    /// per model.
    fn grammar(&self, params: &GenerateParams) -> InferenceResult<Option<GrammarSampler>> {
        // A parse that panicked added nothing: the cache is still whole.
        let mut grammars = self
            .reusable
            .grammars
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        grammars.for_params(&self.model, params)
    }

    /// Refuse a call made on a thread that has a stream of this model open.
    fn refuse_during_stream(&self) -> InferenceResult<()> {
        if self.is_streaming() {
            return Err(InferenceError::StreamInProgress);
        }
        Ok(())
    }

    fn stream_tokens(
        &self,
        prompt: Input,
        params: GenerateParams,
        parts: Option<Parts>,
    ) -> InferenceResult<Stream> {
        let (session, sampler) = self.prepare(&prompt, &params)?;
        let thread = std::thread::current().id();
        self.reusable.sessions.open_stream(thread);
        Ok(Stream::new(
            (Arc::clone(&self.model), self.cores()),
            (Arc::clone(&self.reusable.sessions), thread),
            session,
            sampler,
            prompt,
            params,
            parts,
        ))
    }

    /// The pooled output of each of `texts` (already tokenized and checked
    /// against the context), in order.
    pub(in crate::engine) fn embed_tokens(
        &self,
        texts: &[Vec<LlamaToken>],
        stop: StopCheck,
    ) -> InferenceResult<Vec<Vec<f32>>> {
        let Some(pooling) = self.embedding else {
            return Err(InferenceError::NotForEmbeddings);
        };
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let longest = texts.iter().map(Vec::len).max().unwrap_or(1);
        let shape = embed::shape_for(longest, pooling);
        let adapters = self.adapters.resolve(None)?;
        self.in_kept_context(
            &self.reusable.embedder,
            (shape, &adapters),
            stop,
            |ctx, _| embed::embed(ctx, texts),
        )
    }
}

/// How a kept context of the right shape, under the LoRA adapter set
/// `theirs`, suits a call under `ours`: one under the same set first,
/// ranked by the `prefix` of the prompt it holds; one under another set
/// is switched to the call's set (its cache emptied) unless the shelf has
/// room to `spare` for a context per set (`lora_contexts`): then it is
/// kept for its own set's calls, and the call makes a context of its own.
fn fit_adapters((theirs, ours): (u64, u64), prefix: usize, spare: bool) -> Fit {
    if theirs == ours {
        Fit::Fits(prefix.saturating_add(1))
    } else if spare {
        Fit::Pass
    } else {
        Fit::Fits(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_context_under_the_calls_adapters_comes_before_one_to_switch() {
        let same_empty = fit_adapters((7, 7), 0, false);
        let other = fit_adapters((3, 7), 0, false);
        assert!(same_empty > other, "{same_empty:?} against {other:?}");
        assert!(fit_adapters((7, 7), 5, false) > same_empty);
        // Room for a context per set: another set's context is left alone,
        // and a misfit (another shape) is still dropped before it.
        assert_eq!(fit_adapters((3, 7), 0, true), Fit::Pass);
        assert!(Fit::Misfit > Fit::Pass);
        assert!(fit_adapters((7, 7), 0, true) > Fit::Misfit);
    }
}
