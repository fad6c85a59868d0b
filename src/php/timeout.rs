//! PHP's time limit (`max_execution_time`, `set_time_limit()`) seen from a
//! native call.
//!
//! PHP's timer only raises a flag; the engine reports the timeout when the
//! native call returns, and kills the process if the call is still running
//! `hard_timeout` seconds later. A generation therefore asks after every
//! token and stops at once, which leaves the model (and a persistent model's
//! cache) consistent for the next request.

use std::ffi::c_void;

use ext_php_rs::ffi::zend_atomic_bool;
use ext_php_rs::zend::ExecutorGlobals;

use crate::backend::params::{Interrupt, StopCheck};

extern "C" {
    fn zend_atomic_bool_load(obj: *const zend_atomic_bool) -> bool;
}

/// Read a `zend_atomic_bool`.
unsafe extern "C" fn read_flag(flag: *const c_void) -> bool {
    // SAFETY: `flag` is the `timed_out` of executor globals (`interrupt`).
    unsafe { zend_atomic_bool_load(flag.cast()) }
}

/// The request's time-limit flag, taken on the PHP thread that makes the
/// call: readable from any thread that computes for it, since it names this
/// thread's executor globals rather than asking for the reader's.
pub fn interrupt() -> Interrupt {
    let globals = ExecutorGlobals::get();
    let flag: *const zend_atomic_bool = &raw const globals.timed_out;
    // SAFETY: the flag is an atomic PHP's timer raises, read with PHP's
    // atomic load; the executor globals live as long as the thread that
    // owns them (the process, without threads), longer than any call.
    unsafe { Interrupt::new(read_flag, flag.cast()) }
}

/// What stops a native call that has no deadline of its own (embeddings,
/// reranking): PHP's time limit.
pub fn stop_check() -> StopCheck {
    StopCheck {
        interrupt: Some(interrupt()),
        deadline: None,
    }
}
