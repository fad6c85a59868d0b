//! A remote generation read event by event: the server streams every reply
//! (server-sent events), and the pieces handed out are cut from the text
//! received as a local stream cuts them (a `<think>` tag is released whole).
//! The caller's deadline and interrupt are checked between two events and
//! while one arrives (see `events::Events`); a stream that stops early
//! (cancelled, timed out) closes the connection, and the server stops
//! generating. What the server claims (tokens generated, cached, each
//! token's probabilities) must fit what was asked (`limits::Asked`).

use super::events::{Event, Events};
use super::limits::Asked;
use super::{llama_server, openai, EngineKind};
use crate::backend::error::{InferenceError, InferenceResult};
use crate::backend::generation::{FinishReason, Generation};
use crate::backend::generation::{Piece, Release, TokenLogprob};
use crate::backend::params::StopCheck;
use crate::backend::{CacheSource, Timings};
use crate::backend::{PieceStream, RemoteError};
use crate::chat::reasoning::Parts;
use infer_shared::state::InUse;
use std::time::Instant;

/// The format of the events.
#[derive(Debug, Clone, Copy)]
pub enum Wire {
    LlamaServer,
    OpenAi { engine: EngineKind, chat: bool },
}

enum State {
    Running(Events),
    Done(Generation),
    Failed(InferenceError),
}

/// A remote generation in progress (see the module documentation).
pub struct RemoteStream {
    state: State,
    wire: Wire,
    url: String,
    stop_check: StopCheck,
    text: String,
    release: Release,
    prompt_tokens: u32,
    /// Tokens generated so far, as the server counts them.
    generated: u32,
    /// What the request asked, which the server's figures must fit; the
    /// events, and the tokens with probabilities, received so far.
    asked: Asked,
    events: u32,
    tokens_with_logprobs: u64,
    /// The probabilities received, when they were asked for (each lists
    /// `asked.top` of the most likely tokens; the server lists at least 1).
    logprobs: Option<Vec<TokenLogprob>>,
    /// What an OpenAI-style stream said of its end before `[DONE]`.
    ending: Option<openai::Ending>,
    usage: Option<openai::Usage>,
    /// When the request was answered, and when its first text came (the
    /// timings of a remote generation are measured here, by the client).
    began: Instant,
    first_text: Option<Instant>,
    /// On the installation's shared server: the call is in flight (the
    /// supervisor does not stop the server for idleness) until it ends.
    in_use: Option<InUse>,
}

impl std::fmt::Debug for RemoteStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteStream")
            .field("url", &self.url)
            .field("released", &self.release.released())
            .field("finished", &self.is_finished())
            .finish()
    }
}

impl RemoteStream {
    pub(super) fn new(
        events: Events,
        wire: Wire,
        url: String,
        stop_check: StopCheck,
        prompt_tokens: u32,
        parts: Option<Parts>,
        asked: Asked,
    ) -> Self {
        let top_logprobs = asked.top;
        Self {
            state: State::Running(events),
            wire,
            url,
            stop_check,
            text: String::new(),
            release: Release::new(parts, top_logprobs.is_some()),
            logprobs: top_logprobs.map(|_| Vec::new()),
            prompt_tokens,
            generated: 0,
            asked,
            events: 0,
            tokens_with_logprobs: 0,
            ending: None,
            usage: None,
            began: Instant::now(),
            first_text: None,
            in_use: None,
        }
    }

    /// Keep the shared server in use while this generation runs.
    pub(super) fn hold(&mut self, in_use: Option<InUse>) {
        if !self.is_finished() {
            self.in_use = in_use;
        }
    }

    /// A generation that ends before any request for it (no room left in
    /// the context, or the deadline came first), with `finish`.
    pub(super) fn ended(
        finish: FinishReason,
        prompt_tokens: u32,
        parts: Option<Parts>,
        top_logprobs: Option<u32>,
    ) -> Self {
        let nothing =
            Events::from_reader(Box::new(std::io::empty()), "", None, StopCheck::default());
        let asked = Asked {
            max_tokens: 0,
            top: top_logprobs,
            n_vocab: None,
        };
        let mut stream = Self::new(
            nothing,
            Wire::LlamaServer,
            String::new(),
            StopCheck::default(),
            prompt_tokens,
            parts,
            asked,
        );
        stream.end(finish);
        stream
    }

    /// Whether the generation has ended (or failed).
    pub fn is_finished(&self) -> bool {
        !matches!(self.state, State::Running(_))
    }

    /// Read to the end and take the result.
    pub fn into_generation(mut self) -> InferenceResult<Generation> {
        self.finish()?;
        match std::mem::replace(&mut self.state, State::Failed(InferenceError::Busy)) {
            State::Done(generation) => Ok(generation),
            State::Failed(e) => Err(e),
            State::Running(_) => Err(InferenceError::StreamInProgress),
        }
    }

    /// End the generation here with `finish` (the events, and with them the
    /// connection, are dropped).
    fn end(&mut self, finish: FinishReason) {
        self.done(finish, self.generated, self.prompt_tokens, 0);
    }

    /// The generation has ended: the text received, with these figures.
    fn done(&mut self, finish: FinishReason, generated: u32, prompt: u32, reused: u32) {
        self.in_use = None;
        self.state = State::Done(Generation {
            text: self.text.clone(),
            finish,
            tokens_generated: generated,
            prompt_tokens: prompt,
            reused_tokens: reused,
            tool_calls: Vec::new(),
            without_calls: None,
            timings: self.timings(reused),
            trace: Vec::new(),
            logprobs: self.logprobs.clone(),
        });
    }

    /// Time to the first text, and the rest; the server's cache when it
    /// reused prompt tokens.
    fn timings(&self, reused: u32) -> Timings {
        let now = Instant::now();
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
        let read = self.first_text.unwrap_or(now);
        Timings {
            prompt_ms: ms(read.duration_since(self.began)),
            generation_ms: ms(now.duration_since(read)),
            cache: if reused > 0 {
                CacheSource::Memory
            } else {
                CacheSource::None
            },
            ..Timings::default()
        }
    }

    fn fail(&mut self, e: InferenceError) -> InferenceError {
        self.in_use = None;
        self.state = State::Failed(e.clone());
        e
    }

    /// Read one event (or stop at the deadline).
    fn advance(&mut self) -> InferenceResult<()> {
        if self.stop_check.due() {
            self.end(FinishReason::Timeout);
            return Ok(());
        }
        let State::Running(events) = &mut self.state else {
            return Ok(());
        };
        let event = match events.next_event() {
            Ok(event) => event,
            // The deadline came while an event was on its way.
            Err(RemoteError::TimedOut { .. }) if self.stop_check.due() => {
                self.end(FinishReason::Timeout);
                return Ok(());
            }
            Err(e) => return Err(self.fail(e.into())),
        };
        self.events = self.events.saturating_add(1);
        if self.events > self.asked.most_events() {
            let figure = format!(
                "{} events, more than a reply of {} tokens sends",
                self.events, self.asked.max_tokens
            );
            return Err(self.fail(self.implausible(figure).into()));
        }
        let outcome = match event {
            None => Err(RemoteError::Truncated {
                url: self.url.clone(),
            }),
            Some(Event::Error(payload)) => Err(RemoteError::InStream {
                url: self.url.clone(),
                message: super::http::error_message(&payload),
            }),
            Some(Event::Data(data)) => self.apply(&data),
        };
        outcome.map_err(|e| self.fail(e.into()))
    }

    fn implausible(&self, figure: String) -> RemoteError {
        RemoteError::Implausible {
            url: self.url.clone(),
            figure,
        }
    }

    /// A figure the server reported must fit what was asked.
    fn fits(&self, check: Result<(), String>) -> Result<(), RemoteError> {
        check.map_err(|figure| self.implausible(figure))
    }

    fn bad(&self, engine: &'static str, detail: String) -> RemoteError {
        RemoteError::BadBody {
            url: self.url.clone(),
            engine,
            detail,
        }
    }

    /// The probabilities of the tokens of the text just received, which
    /// ends where the text now ends (kept when they were asked for): no
    /// more tokens than the reply may have, each one checked.
    fn took(&mut self, logprobs: Vec<TokenLogprob>) -> Result<(), RemoteError> {
        self.tokens_with_logprobs += logprobs.len() as u64;
        self.fits(
            self.asked
                .tokens("tokens with log-probabilities", self.tokens_with_logprobs),
        )?;
        for token in &logprobs {
            self.fits(self.asked.token(token))?;
        }
        if let Some(kept) = &mut self.logprobs {
            let end = self.text.len();
            let top = self.asked.top.unwrap_or(0) as usize;
            kept.extend(logprobs.into_iter().map(|mut e| {
                e.text_end = end;
                e.top.truncate(top);
                e
            }));
        }
        Ok(())
    }

    /// Take in one `data:` payload.
    fn apply(&mut self, data: &str) -> Result<(), RemoteError> {
        match self.wire {
            Wire::LlamaServer => match llama_server::event(data) {
                Ok(llama_server::Event::Text(text, logprobs)) => {
                    self.first_text.get_or_insert_with(Instant::now);
                    self.text.push_str(&text);
                    self.took(logprobs)?;
                    self.generated += 1;
                    self.fits(
                        self.asked
                            .tokens("tokens streamed", u64::from(self.generated)),
                    )
                }
                Ok(llama_server::Event::Final(last)) => {
                    self.fits(
                        self.asked
                            .tokens("tokens_predicted", u64::from(last.tokens_generated)),
                    )?;
                    self.fits(self.asked.cached(last.reused_tokens, last.prompt_tokens))?;
                    self.text.push_str(&last.text);
                    self.took(last.logprobs)?;
                    self.done(
                        last.finish,
                        last.tokens_generated,
                        last.prompt_tokens,
                        last.reused_tokens,
                    );
                    Ok(())
                }
                Err(detail) => Err(self.bad("llama-server", detail)),
            },
            Wire::OpenAi { engine, chat } => {
                if data.trim() == "[DONE]" {
                    return self.done_openai(engine);
                }
                let chunk = openai::chunk(data, chat).map_err(|d| self.bad(engine.name(), d))?;
                if let Some(error) = chunk.error {
                    return Err(RemoteError::InStream {
                        url: self.url.clone(),
                        message: error,
                    });
                }
                if !chunk.text.is_empty() {
                    self.first_text.get_or_insert_with(Instant::now);
                    self.text.push_str(&chunk.text);
                    self.generated += 1;
                }
                self.took(chunk.logprobs)?;
                if chunk.ending.is_some() {
                    self.ending = chunk.ending;
                }
                if chunk.usage.is_some() {
                    self.usage = chunk.usage;
                }
                Ok(())
            }
        }
    }

    /// `[DONE]`: the stream must have said how it ended.
    fn done_openai(&mut self, engine: EngineKind) -> Result<(), RemoteError> {
        let Some(ending) = self.ending.take() else {
            return Err(RemoteError::Truncated {
                url: self.url.clone(),
            });
        };
        let finish = openai::finish_reason(&ending).map_err(|d| match d {
            openai::EndError::Aborted(message) => RemoteError::InStream {
                url: self.url.clone(),
                message,
            },
            openai::EndError::Unknown(detail) => self.bad(engine.name(), detail),
        })?;
        if let Some(u) = &self.usage {
            self.fits(
                self.asked
                    .tokens("completion_tokens", u64::from(u.completion_tokens)),
            )?;
            self.fits(self.asked.cached(u.cached_tokens, u.prompt_tokens))?;
        }
        match self.usage.take() {
            Some(u) => self.done(
                finish,
                u.completion_tokens,
                u.prompt_tokens,
                u.cached_tokens,
            ),
            None => self.end(finish),
        }
        Ok(())
    }
}

impl PieceStream for RemoteStream {
    /// The next piece; `None` once the whole text has been handed out.
    fn next_piece(&mut self) -> InferenceResult<Option<Piece>> {
        loop {
            let complete = match &self.state {
                State::Running(_) => false,
                State::Done(_) => true,
                State::Failed(e) => return Err(e.clone()),
            };
            let logprobs = self.logprobs.as_deref().unwrap_or_default();
            if let Some(piece) = self.release.next_with(&self.text, complete, logprobs) {
                return Ok(Some(piece));
            }
            if complete {
                return Ok(None);
            }
            self.advance()?;
        }
    }

    /// Read to the end and return the result.
    fn finish(&mut self) -> InferenceResult<&Generation> {
        while !self.is_finished() {
            self.advance()?;
        }
        match &self.state {
            State::Done(generation) => Ok(generation),
            State::Failed(e) => Err(e.clone()),
            State::Running(_) => Err(InferenceError::StreamInProgress),
        }
    }

    /// Stop now, keeping what was received: the connection is closed, so
    /// the server stops generating.
    fn cancel(&mut self) {
        if let State::Running(_) = self.state {
            self.end(FinishReason::Cancelled);
        }
    }
}
