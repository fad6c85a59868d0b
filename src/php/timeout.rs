//! PHP's time limit (`max_execution_time`, `set_time_limit()`) seen from a
//! native call.
//!
//! PHP's timer only raises a flag; the engine reports the timeout when the
//! native call returns, and kills the process if the call is still running
//! `hard_timeout` seconds later. A generation therefore asks after every
//! token and stops at once, which leaves the model (and a persistent model's
//! cache) consistent for the next request.

use ext_php_rs::ffi::zend_atomic_bool;
use ext_php_rs::zend::ExecutorGlobals;

extern "C" {
    fn zend_atomic_bool_load(obj: *const zend_atomic_bool) -> bool;
}

/// True once the request's time limit has run out.
pub fn timed_out() -> bool {
    let globals = ExecutorGlobals::get();
    // SAFETY: the executor globals live as long as the process; the flag is
    // an atomic PHP's signal handler sets.
    unsafe { zend_atomic_bool_load(&raw const globals.timed_out) }
}

/// What stops a native call that has no deadline of its own (embeddings,
/// reranking): PHP's time limit.
pub fn stop_check() -> crate::common::params::StopCheck {
    crate::common::params::StopCheck {
        interrupt: Some(timed_out),
        deadline: None,
    }
}
