//! llama.cpp itself: the process-wide runtime and its captured log
//! ([`runtime`]), contexts with their thread pools ([`context`]), the
//! compute devices ([`devices`]), the share of the cores a call runs on
//! ([`threads`]) and the shelf that lends kept contexts to one call at a
//! time ([`shelf`]), image projectors ([`vision`]) and LoRA adapters ([`lora`]). Nothing here knows
//! about prompts, caches or sampling.

pub mod context;
pub mod devices;
pub mod lora;
pub mod runtime;
pub mod shelf;
pub mod threads;
pub mod vision;
