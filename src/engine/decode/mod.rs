//! Where a token is chosen: the sampler and its grammar ([`sampler`],
//! [`probe`]), a generation's progress — forced runs, proposals, the
//! checks of each token ([`progress`], [`lookup`], [`think`], [`output`]) —
//! and the loops that drive it: one sequence ([`generate`], [`stream`]) or
//! many at once ([`batch`]), each in a [`session`] (a context with its
//! cached tokens).

pub mod batch;
pub mod generate;
pub mod input;
pub mod logprobs;
pub mod lookup;
pub mod output;
pub mod probe;
pub mod progress;
pub mod sampler;
pub mod score;
pub mod session;
pub mod stream;
pub mod think;
