//! `Displace\Infer\Stream`: a reply read piece by piece with `foreach`.

use ext_php_rs::flags::ClassFlags;
use ext_php_rs::prelude::*;
use ext_php_rs::zend::ce;

use super::errors::CallError;
use super::exceptions::no_constructor;
use super::response::Response;
use crate::backend::{Generation, Piece, PieceStream};

/// A generation in progress: iterating it generates the next piece.
#[php_class]
#[php(name = "Displace\\Infer\\Stream")]
#[php(implements(ce = ce::iterator, stub = "\\Iterator"))]
#[php(flags = ClassFlags::Final.union(ClassFlags::NotSerializable))]
#[derive(Debug)]
pub struct Stream {
    inner: Box<dyn PieceStream>,
    /// From `stream()`: the result is a chat response (reasoning split).
    chat: bool,
    /// The piece the iteration is at.
    current: Option<Piece>,
    /// `rewind()` has begun the iteration.
    began: bool,
    /// `next()` has moved past the first piece.
    moved: bool,
}

impl Stream {
    pub fn new(inner: Box<dyn PieceStream>, chat: bool) -> Self {
        Self {
            inner,
            chat,
            current: None,
            began: false,
            moved: false,
        }
    }

    fn fetch(&mut self) -> Result<(), CallError> {
        self.current = None;
        self.current = self.inner.next_piece()?;
        Ok(())
    }

    fn generation(&mut self) -> Result<&Generation, CallError> {
        Ok(self.inner.finish()?)
    }
}

#[php_impl]
impl Stream {
    /// Streams come from `Model::stream()` and `Model::rawStream()`.
    pub fn __construct() -> PhpResult<Self> {
        Err(no_constructor(
            "Stream",
            "Model::stream() or Model::rawStream()",
        ))
    }

    /// Begin the iteration: the prompt is evaluated and the first piece
    /// generated. A stream is iterated once.
    pub fn rewind(&mut self) -> PhpResult<()> {
        if self.began {
            if self.moved || self.current.is_none() {
                return Err(CallError::IteratedTwice.into());
            }
            // Still at the first piece (a generator rewinds the same way).
            return Ok(());
        }
        self.began = true;
        Ok(self.fetch()?)
    }

    /// Whether there is a piece at the current position.
    pub fn valid(&self) -> bool {
        self.current.is_some()
    }

    /// The current piece of text.
    pub fn current(&self) -> Option<String> {
        self.current.as_ref().map(|p| p.text.clone())
    }

    /// `'reasoning'` or `'answer'` for a chat reply, `'text'` for a plain
    /// completion.
    pub fn key(&self) -> Option<&'static str> {
        self.current.as_ref().map(|p| p.kind.as_str())
    }

    /// The log-probabilities of the tokens whose text ends in the current
    /// piece (see `Response::logprobs()`), when the call asked for them;
    /// null otherwise, and past the end.
    pub fn logprobs(
        &self,
    ) -> PhpResult<Option<ext_php_rs::boxed::ZBox<ext_php_rs::types::ZendHashTable>>> {
        self.current
            .as_ref()
            .and_then(|p| p.logprobs.as_deref())
            .map(super::logprobs::to_php)
            .transpose()
    }

    /// Generate the next piece.
    pub fn next(&mut self) -> PhpResult<()> {
        if self.current.is_none() {
            return Ok(());
        }
        self.moved = true;
        Ok(self.fetch()?)
    }

    /// Stop generating, keeping what was generated (finish reason
    /// `'cancelled'` unless it had ended already); the model is free again.
    pub fn cancel(&mut self) {
        self.inner.cancel();
    }

    /// The whole result, generated to the end first if need be.
    pub fn response(&mut self) -> PhpResult<Response> {
        let chat = self.chat;
        let generation = self.generation()?.clone();
        Ok(if chat {
            Response::from(generation)
        } else {
            Response::plain(generation)
        })
    }

    /// The whole text, generated to the end first if need be.
    pub fn text(&mut self) -> PhpResult<String> {
        Ok(self.generation()?.text.clone())
    }

    /// Why the generation ended (`'eos'`, `'length'`, `'stop'`, `'timeout'`
    /// or `'cancelled'`), generated to the end first if need be.
    pub fn finish_reason(&mut self) -> PhpResult<&'static str> {
        Ok(self.generation()?.finish.as_str())
    }
}
