//! `infer-shared`: what the extension and the shared server's supervisor
//! (`infer-serve`) both run, in one crate they both link:
//!
//! - [`private_dir`]: directories shared between processes (the shared
//!   server's state, the prompt store), opened and proven to be this
//!   user's;
//! - [`state`]: the shared server's state directory, file by file: the
//!   supervisor's record, the clients' registrations, the idle clock, the
//!   last failed start;
//! - [`process`]: a process named by pid and start time, and child
//!   processes started clean.
//!
//! std, libc and serde only.

pub mod private_dir;
pub mod process;
pub mod state;
