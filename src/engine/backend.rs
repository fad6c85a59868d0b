//! The llama.cpp backend: initialised once per process, with its log output
//! captured instead of printed.
//!
//! llama.cpp and ggml write progress and diagnostics to stderr by default. A
//! PHP CLI user or an FPM log must never see that, so the log callback keeps
//! the last warnings and errors of the current thread in a small buffer; an
//! operation that fails reads them back and puts them into its error message.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::ffi::{c_char, c_void, CStr};
use std::sync::OnceLock;

use llama_cpp_2::llama_backend::LlamaBackend;

use super::error::LoadError;

/// How many diagnostic lines a thread keeps for the next error message.
const KEPT_LINES: usize = 8;

thread_local! {
    static DIAGNOSTICS: RefCell<VecDeque<String>> = const { RefCell::new(VecDeque::new()) };
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

/// Route llama.cpp and ggml logging into [`DIAGNOSTICS`]. Also called before
/// the backend exists, so that nothing printed during initialisation escapes.
fn silence_logs() {
    // SAFETY: `capture_log` has the signature ggml expects and never unwinds;
    // a null user-data pointer is allowed.
    unsafe { llama_cpp_sys_2::llama_log_set(Some(capture_log), std::ptr::null_mut()) };
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
    let _ = DIAGNOSTICS.try_with(|cell| {
        let Ok(mut lines) = cell.try_borrow_mut() else {
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
    });
}

/// Forget what was captured so far on this thread.
pub fn clear_diagnostics() {
    let _ = DIAGNOSTICS.try_with(|cell| {
        if let Ok(mut lines) = cell.try_borrow_mut() {
            lines.clear();
        }
    });
}

/// The diagnostics captured since the last [`clear_diagnostics`], joined with
/// "; ", or `None` when llama.cpp said nothing.
pub fn take_diagnostics() -> Option<String> {
    DIAGNOSTICS
        .try_with(|cell| {
            let mut lines = cell.try_borrow_mut().ok()?;
            if lines.is_empty() {
                return None;
            }
            let joined = lines.drain(..).collect::<Vec<_>>().join("; ");
            Some(joined)
        })
        .ok()
        .flatten()
}

/// Run `f` with the process's stderr (fd 2) redirected into an anonymous
/// file, and return what was written there. llama.cpp's grammar parser
/// reports errors with `fprintf(stderr, …)`, which the log callback never
/// sees. PHP runs requests on one thread (NTS builds), so nothing else writes
/// to stderr meanwhile. Without an anonymous file, `f` runs unredirected.
pub fn capture_stderr<T>(f: impl FnOnce() -> T) -> (T, String) {
    // SAFETY: plain POSIX calls on descriptors this function owns; fd 2 is
    // restored before returning.
    unsafe {
        let name = c"infer-stderr";
        let sink = libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC);
        if sink < 0 {
            return (f(), String::new());
        }
        let saved = libc::dup(2);
        if saved < 0 || libc::dup2(sink, 2) < 0 {
            libc::close(sink);
            if saved >= 0 {
                libc::close(saved);
            }
            return (f(), String::new());
        }
        let result = f();
        libc::dup2(saved, 2);
        libc::close(saved);
        let mut text = Vec::new();
        let size = libc::lseek(sink, 0, libc::SEEK_END);
        if size > 0 {
            let keep = size.min(64 * 1024) as usize;
            text.resize(keep, 0);
            let read = libc::pread(sink, text.as_mut_ptr().cast(), keep, 0);
            text.truncate(read.max(0) as usize);
        }
        libc::close(sink);
        (result, String::from_utf8_lossy(&text).trim().to_owned())
    }
}

/// The first non-empty line of `text`, at most 300 characters.
pub fn first_line(text: &str) -> Option<String> {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    Some(line.chars().take(300).collect())
}
