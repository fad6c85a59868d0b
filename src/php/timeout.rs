//! PHP's time limit (`max_execution_time`, `set_time_limit()`) seen from a
//! native call.
//!
//! PHP's timer only raises a flag; the engine reports the timeout when the
//! native call returns, and kills the process if the call is still running
//! `hard_timeout` seconds later. A generation therefore asks after every
//! token and stops at once, which leaves the model (and a persistent model's
//! cache) consistent for the next request.
//!
//! A thread-safe PHP on Linux counts the limit in wall time, on a timer of
//! the request's thread, and never kills: a read blocked on a server would
//! hold the request past its limit until the server answered. There the
//! time left on that timer is also a deadline ([`wall_deadline`]), which
//! every wait of a call is bounded by.

use std::ffi::c_void;
use std::time::Instant;

use ext_php_rs::ffi::zend_atomic_bool;
use ext_php_rs::zend::ExecutorGlobals;

use crate::backend::params::{earliest, Interrupt, StopCheck};

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
        deadline: wall_deadline(),
    }
}

/// The earlier of `deadline` and PHP's own wall-clock limit.
pub fn within_limit(deadline: Option<Instant>) -> Option<Instant> {
    earliest(deadline, wall_deadline())
}

/// When PHP's time limit of this request runs out, where PHP counts it in
/// wall time (see the module documentation); `None` where it counts CPU
/// time, or no limit is set.
#[cfg(php_wall_timer)]
pub fn wall_deadline() -> Option<Instant> {
    let globals = ExecutorGlobals::get();
    let timer = globals.max_execution_timer_timer;
    // SAFETY: an all-zero itimerspec is a valid value to overwrite.
    let mut left: libc::itimerspec = unsafe { std::mem::zeroed() };
    // SAFETY: the request's own timer (created for its thread when the
    // request started, deleted when the thread ends); timer_gettime only
    // reads it, and fails cleanly for a timer that is not armed or valid.
    if unsafe { libc::timer_gettime(timer.cast(), &mut left) } != 0 {
        return None;
    }
    let secs = u64::try_from(left.it_value.tv_sec).ok()?;
    let nanos = u32::try_from(left.it_value.tv_nsec).ok()?;
    let left = std::time::Duration::new(secs, nanos);
    // Disarmed (no limit, or it ran out and the flag is raised).
    (!left.is_zero())
        .then(|| Instant::now().checked_add(left))
        .flatten()
}

/// Where PHP counts its limit in CPU time, a blocked read does not use it:
/// the flag is asked between reads, and there is no wall-clock deadline.
#[cfg(not(php_wall_timer))]
pub fn wall_deadline() -> Option<Instant> {
    None
}
