//! The llama.cpp backend: initialised once per process, with its log output
//! captured instead of printed.
//!
//! llama.cpp and ggml write progress and diagnostics to stderr by default. A
//! host process (a CLI tool, a web server's log) must never see that, so
//! the log callback hands each warning and error to the *sink* of the call
//! that caused it: [`logged`] opens one on the calling thread for the length
//! of a llama.cpp call, and an operation that fails puts what its sink
//! gathered into its error message. Calls on other threads have sinks of
//! their own, so no line is lost to, or mixed into, another call's message;
//! a line logged where no call listens (ggml's worker threads) is dropped.
//! File descriptor 2 is never touched: the only llama.cpp output that
//! bypasses the log callback is its grammar parser's complaint, and no
//! grammar llama.cpp would complain about reaches it (`grammar::check`, and
//! the token texts checked in `engine::sampler`).

use std::cell::RefCell;
use std::collections::VecDeque;
use std::ffi::{c_char, c_void, CStr};
use std::sync::OnceLock;

use llama_cpp_2::llama_backend::LlamaBackend;

use crate::backend::error::LoadError;

/// How many lines a sink keeps (the last ones) for an error message.
const KEPT_LINES: usize = 8;

thread_local! {
    /// The sink of the llama.cpp call in progress on this thread, if any.
    static SINK: RefCell<Option<VecDeque<String>>> = const { RefCell::new(None) };
}

static BACKEND: OnceLock<Result<LlamaBackend, String>> = OnceLock::new();

/// The process-wide backend, initialised on first use.
pub fn backend() -> Result<&'static LlamaBackend, LoadError> {
    let slot = BACKEND.get_or_init(|| {
        silence_logs();
        LlamaBackend::init().map_err(|e| e.to_string())
    });
    slot.as_ref().map_err(|reason| LoadError::Backend {
        reason: reason.clone(),
    })
}

/// Route llama.cpp and ggml logging into the calling thread's sink (see
/// [`logged`]). Also called before the backend exists, so that nothing
/// printed during initialisation escapes.
fn silence_logs() {
    // SAFETY: `capture_log` has the signature ggml expects and never unwinds;
    // a null user-data pointer is allowed.
    unsafe { llama_cpp_sys_2::llama_log_set(Some(capture_log), std::ptr::null_mut()) };
    // The multimodal library (the image projector) logs on its own.
    // SAFETY: as above.
    unsafe { llama_cpp_sys_2::mtmd_log_set(Some(capture_log), std::ptr::null_mut()) };
}

unsafe extern "C" fn capture_log(
    level: llama_cpp_sys_2::ggml_log_level,
    text: *const c_char,
    _user_data: *mut c_void,
) {
    use llama_cpp_sys_2::{GGML_LOG_LEVEL_CONT, GGML_LOG_LEVEL_ERROR, GGML_LOG_LEVEL_WARN};
    if text.is_null() {
        return;
    }
    let keep = level == GGML_LOG_LEVEL_ERROR || level == GGML_LOG_LEVEL_WARN;
    if !keep && level != GGML_LOG_LEVEL_CONT {
        return;
    }
    // SAFETY: ggml passes a NUL-terminated string that lives for this call.
    let line = unsafe { CStr::from_ptr(text) }.to_string_lossy();
    let line = line.trim_end();
    SINK.try_with(|cell| {
        let Ok(mut sink) = cell.try_borrow_mut() else {
            return;
        };
        let Some(lines) = sink.as_mut() else {
            return;
        };
        if level == GGML_LOG_LEVEL_CONT {
            if let Some(last) = lines.back_mut() {
                last.push_str(line);
            }
            return;
        }
        if line.is_empty() {
            return;
        }
        if lines.len() == KEPT_LINES {
            lines.pop_front();
        }
        lines.push_back(line.to_owned());
    })
    // A thread being torn down has no sink left: the line is dropped.
    .unwrap_or(());
}

/// Run `f` (a llama.cpp call) with a sink of its own on this thread, and
/// return what llama.cpp logged meanwhile (warnings and errors, the last
/// few lines joined with "; "), or `None` when it said nothing. A sink
/// opened inside another gathers its own lines; the outer one's are kept
/// for it.
pub fn logged<T>(f: impl FnOnce() -> T) -> (T, Option<String>) {
    /// Puts the outer sink back, also when `f` panics.
    struct Opened(Option<Option<VecDeque<String>>>);
    impl Drop for Opened {
        fn drop(&mut self) {
            if let Some(outer) = self.0.take() {
                let restored = SINK.try_with(|cell| cell.replace(outer));
                drop(restored);
            }
        }
    }
    let outer = SINK
        .try_with(|cell| cell.replace(Some(VecDeque::new())))
        .ok();
    let guard = Opened(outer);
    let value = f();
    let lines = SINK
        .try_with(|cell| cell.borrow_mut().take())
        .ok()
        .flatten()
        .filter(|lines| !lines.is_empty())
        .map(|lines| Vec::from(lines).join("; "));
    drop(guard);
    (value, lines)
}

/// llama.cpp's description of the CPU features its kernels use (empty when
/// it gives none).
pub fn system_info() -> Vec<u8> {
    // SAFETY: llama.cpp returns a pointer to a static string.
    let info = unsafe { llama_cpp_sys_2::llama_print_system_info() };
    if info.is_null() {
        return Vec::new();
    }
    // SAFETY: checked not null; NUL-terminated by llama.cpp.
    unsafe { std::ffi::CStr::from_ptr(info) }
        .to_bytes()
        .to_vec()
}

#[cfg(test)]
mod tests {
    use std::ffi::CString;

    use super::*;
    use llama_cpp_sys_2::{GGML_LOG_LEVEL_CONT, GGML_LOG_LEVEL_ERROR, GGML_LOG_LEVEL_INFO};

    /// What llama.cpp does when it logs: call the callback.
    fn log(level: llama_cpp_sys_2::ggml_log_level, text: &str) {
        let text = CString::new(text).unwrap_or_default();
        // SAFETY: a NUL-terminated string that lives for the call.
        unsafe { capture_log(level, text.as_ptr(), std::ptr::null_mut()) };
    }

    #[test]
    fn a_call_gets_the_warnings_and_errors_logged_during_it() {
        let ((), lines) = logged(|| {
            log(GGML_LOG_LEVEL_INFO, "loading, not kept\n");
            log(GGML_LOG_LEVEL_ERROR, "failed to read");
            log(GGML_LOG_LEVEL_CONT, " the header\n");
            log(GGML_LOG_LEVEL_ERROR, "second error\n");
        });
        assert_eq!(
            lines.as_deref(),
            Some("failed to read the header; second error")
        );
        let ((), nothing) = logged(|| log(GGML_LOG_LEVEL_INFO, "progress"));
        assert_eq!(nothing, None);
    }

    #[test]
    fn lines_logged_outside_any_call_are_dropped() {
        log(GGML_LOG_LEVEL_ERROR, "nobody listens");
        let ((), lines) = logged(|| ());
        assert_eq!(lines, None);
    }

    #[test]
    fn a_sink_inside_another_keeps_its_own_lines() {
        let (inner, outer) = logged(|| {
            log(GGML_LOG_LEVEL_ERROR, "outer one");
            let ((), inner) = logged(|| log(GGML_LOG_LEVEL_ERROR, "inner"));
            log(GGML_LOG_LEVEL_ERROR, "outer two");
            inner
        });
        assert_eq!(inner.as_deref(), Some("inner"));
        assert_eq!(outer.as_deref(), Some("outer one; outer two"));
    }

    #[test]
    fn a_sink_keeps_the_last_lines() {
        let ((), lines) = logged(|| {
            for i in 0..20 {
                log(GGML_LOG_LEVEL_ERROR, &format!("line {i}"));
            }
        });
        let expected: Vec<String> = (12..20).map(|i| format!("line {i}")).collect();
        assert_eq!(lines, Some(expected.join("; ")));
    }

    #[test]
    fn a_panicking_call_leaves_the_outer_sink_in_place() {
        let (caught, outer) = logged(|| {
            let caught = std::panic::catch_unwind(|| {
                logged(|| {
                    log(GGML_LOG_LEVEL_ERROR, "inner");
                    panic!("inside the call");
                })
            });
            log(GGML_LOG_LEVEL_ERROR, "after");
            caught.is_err()
        });
        assert!(caught);
        assert_eq!(outer.as_deref(), Some("after"));
    }

    #[test]
    fn calls_on_several_threads_never_mix_their_lines() {
        let threads: Vec<_> = (0..8)
            .map(|i| {
                std::thread::spawn(move || {
                    for round in 0..200 {
                        let line = format!("thread {i} round {round}");
                        let ((), lines) = logged(|| log(GGML_LOG_LEVEL_ERROR, &line));
                        assert_eq!(lines.as_deref(), Some(line.as_str()));
                    }
                })
            })
            .collect();
        for t in threads {
            assert!(t.join().is_ok());
        }
    }
}
