//! A generation handed out piece by piece as it is produced.
//!
//! The stream drives the same [`Generator`] as a one-shot call, one token per
//! step, and only when the next piece is asked for: nothing is computed
//! between two requests, and a stream that is dropped or cancelled stops at
//! once. While it is open it owns its model's session (context and cache),
//! so every other call on the model on its thread is refused; the session
//! goes back to the model's [`Sessions`] when the stream ends, holding
//! exactly the tokens it evaluated.
//!
//! A piece is released only when it is final: a character split across
//! tokens waits for its last byte, a tail that could still become a stop
//! string waits until it cannot, and (for a chat reply) a `<think>` tag cut
//! off waits until it is whole. So the pieces, put together, are exactly the
//! final text.

use std::sync::Arc;
use std::thread::ThreadId;

use llama_cpp_2::model::LlamaModel;

use super::generate::Generator;
use super::input::Input;
use super::sampler::Sampler;
use super::session::{Session, Sessions};
use crate::backend::error::{InferenceError, InferenceResult};
use crate::backend::generation::Release;
use crate::backend::params::GenerateParams;
use crate::backend::{FinishReason, Generation, Piece, PieceStream};
use crate::chat::reasoning::Parts;
use crate::engine::llama::threads::Claim;

/// Where the generation of a stream is.
enum State {
    /// Not begun: the prompt is evaluated when the first piece is asked for.
    Ready {
        sampler: Sampler,
        prompt: Input,
    },
    Running(Box<Generator>),
    Done(Generation),
    /// An evaluation failed; the stream reports the same error from then on.
    Failed(InferenceError),
}

/// The resources a running stream holds: the model's session and the share
/// of the cores. Given back together when the stream ends.
struct Lease {
    session: Session,
    claim: Option<Claim>,
}

/// A generation read piece by piece (see the module documentation).
pub struct Stream {
    model: Arc<LlamaModel>,
    /// The threads whose share of the cores the stream claims when it
    /// begins (`None`: the model runs a fixed number).
    cores: Option<u32>,
    /// Where the session goes back when the stream ends.
    home: Arc<Sessions>,
    /// The thread that opened the stream, whose other calls on the model
    /// are refused until it ends.
    thread: ThreadId,
    params: GenerateParams,
    lease: Option<Lease>,
    state: State,
    /// What has been handed out as pieces, and how the rest is cut.
    release: Release,
}

impl std::fmt::Debug for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stream")
            .field("released", &self.release.released())
            .field("finished", &self.is_finished())
            .finish()
    }
}

impl Stream {
    /// A stream of the reply to `prompt` in `session`, taken from `home`
    /// (and given back when the stream ends), opened on `thread`, of
    /// `model` running on `cores` (see the field `cores`). `parts` is set
    /// for a chat reply.
    pub fn new(
        (model, cores): (Arc<LlamaModel>, Option<u32>),
        (home, thread): (Arc<Sessions>, ThreadId),
        session: Session,
        sampler: Sampler,
        prompt: Input,
        params: GenerateParams,
        parts: Option<Parts>,
    ) -> Self {
        Self {
            model,
            cores,
            home,
            thread,
            lease: Some(Lease {
                session,
                claim: None,
            }),
            release: Release::new(parts, params.logprobs.is_some()),
            state: State::Ready { sampler, prompt },
            params,
        }
    }

    /// Whether the generation has ended (or failed): no more tokens will come,
    /// though pieces of what came may still be waiting to be handed out.
    pub fn is_finished(&self) -> bool {
        matches!(self.state, State::Done(_) | State::Failed(_))
    }

    /// The state, moved out to be replaced (every caller puts one back
    /// before it returns; the stand-in is never seen).
    fn take_state(&mut self) -> State {
        std::mem::replace(&mut self.state, State::Failed(InferenceError::Busy))
    }

    /// The result, once the generation has ended.
    fn generation(&self) -> InferenceResult<&Generation> {
        match &self.state {
            State::Done(generation) => Ok(generation),
            State::Failed(e) => Err(e.clone()),
            State::Ready { .. } | State::Running(_) => Err(InferenceError::StreamInProgress),
        }
    }

    /// One step: evaluate the prompt, or generate one token.
    fn advance(&mut self) -> InferenceResult<()> {
        let state = self.take_state();
        let Some(lease) = self.lease.as_mut() else {
            // The lease ends with the generation, so a stream without one
            // has ended; were it not so, stepping on would never end.
            self.state = match state {
                ended @ (State::Done(_) | State::Failed(_)) => ended,
                State::Ready { .. } | State::Running(_) => {
                    State::Failed(InferenceError::DecodeFailed {
                        detail: "the stream no longer holds the model's context".to_owned(),
                    })
                }
            };
            return Ok(());
        };
        if matches!(state, State::Ready { .. }) {
            // The share of the cores is taken when generation begins.
            lease.claim = self.cores.map(Claim::take);
        }
        let claim = lease.claim.as_ref();
        let outcome = match state {
            State::Ready { sampler, prompt } => {
                let model = &self.model;
                match Generator::start(
                    &mut lease.session,
                    model,
                    sampler,
                    &prompt,
                    &self.params,
                    claim,
                ) {
                    Ok(Ok(generator)) => Ok(State::Running(Box::new(generator))),
                    Ok(Err(stopped)) => Ok(State::Done(stopped)),
                    Err(e) => Err(e),
                }
            }
            State::Running(mut generator) => {
                let step = generator.step(&mut lease.session, &self.model, &self.params, claim);
                match step {
                    Ok(None) => Ok(State::Running(generator)),
                    Ok(Some(finish)) => Ok(State::Done(generator.finish(finish))),
                    Err(e) => Err(e),
                }
            }
            ended => Ok(ended),
        };
        match outcome {
            Ok(state) => {
                self.state = state;
                if self.is_finished() {
                    self.give_back(true);
                }
                Ok(())
            }
            Err(e) => {
                // The cache may no longer match what the session records.
                self.state = State::Failed(e.clone());
                self.give_back(false);
                Err(e)
            }
        }
    }

    /// End the lease: the session goes back home when it is `consistent`,
    /// and the model is free for other calls.
    fn give_back(&mut self, consistent: bool) {
        if let Some(lease) = self.lease.take() {
            self.home
                .end_stream(self.thread, consistent.then_some(lease.session));
        }
    }
}

impl PieceStream for Stream {
    /// The next piece, generating as many tokens as it takes; `None` once
    /// the whole text has been handed out.
    fn next_piece(&mut self) -> InferenceResult<Option<Piece>> {
        loop {
            let (text, complete, logprobs) = match &self.state {
                State::Ready { .. } => ("", false, None),
                State::Running(generator) => {
                    let (text, undecided) = generator.text();
                    (&text[..text.len() - undecided], false, generator.logprobs())
                }
                State::Done(generation) => (
                    generation.text.as_str(),
                    true,
                    generation.logprobs.as_deref(),
                ),
                State::Failed(e) => return Err(e.clone()),
            };
            if let Some(piece) =
                self.release
                    .next_with(text, complete, logprobs.unwrap_or_default())
            {
                return Ok(Some(piece));
            }
            if complete {
                return Ok(None);
            }
            self.advance()?;
        }
    }

    /// Generate to the end (the pieces not yet handed out stay available)
    /// and return the result.
    fn finish(&mut self) -> InferenceResult<&Generation> {
        while !self.is_finished() {
            self.advance()?;
        }
        self.generation()
    }

    /// Stop generating now, keeping what was generated: the finish reason is
    /// `Cancelled`, unless the generation had already ended. The model is
    /// free again at once.
    fn cancel(&mut self) {
        let state = self.take_state();
        self.state = match state {
            State::Ready { prompt, .. } => State::Done(Generation {
                text: String::new(),
                finish: FinishReason::Cancelled,
                tokens_generated: 0,
                prompt_tokens: prompt.len() as u32,
                reused_tokens: 0,
                tool_calls: Vec::new(),
                without_calls: None,
                timings: Default::default(),
                trace: Vec::new(),
                logprobs: self.params.logprobs.map(|_| Vec::new()),
            }),
            State::Running(generator) => State::Done(generator.finish(FinishReason::Cancelled)),
            ended => ended,
        };
        self.give_back(true);
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // A stream dropped mid-generation leaves the cache as it is: the
        // prompt and the tokens evaluated so far, which is what the session
        // records.
        self.give_back(true);
    }
}
