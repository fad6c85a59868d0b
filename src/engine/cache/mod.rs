//! What the engine keeps between calls: prompt prefixes evaluated before
//! ([`prefix_cache`], in this process), the same shared by every process of
//! the machine through files ([`prefix_store`]), and the models a process
//! keeps loaded after the call that loaded them ([`persistent`]).

pub mod persistent;
pub mod prefix_cache;
pub mod prefix_store;
