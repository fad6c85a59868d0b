//! The llama.cpp backend: initialised once per process, with its log output
//! captured instead of printed.
//!
//! llama.cpp and ggml write progress and diagnostics to stderr by default. A
//! host process (a CLI tool, a web server's log) must never see that, so the log callback keeps
//! the last warnings and errors of the current thread in a small buffer; an
//! operation that fails reads them back and puts them into its error message.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::ffi::{c_char, c_void, CStr};
use std::sync::OnceLock;

use llama_cpp_2::llama_backend::LlamaBackend;

use crate::common::error::LoadError;

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
/// sees.
///
/// fd 2 belongs to the whole process, so captures are serialised by a
/// process-wide lock (a host may run requests on several
/// threads), and fd 2 is restored by a guard that also runs when `f`
/// panics. Whatever another thread writes to stderr meanwhile lands in the
/// capture rather than on the terminal. Where anonymous files do not exist,
/// or the redirection fails, `f` runs without capture.
pub fn capture_stderr<T>(f: impl FnOnce() -> T) -> (T, String) {
    #[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
    {
        stderr_capture::run(f)
    }
    #[cfg(not(any(target_os = "linux", target_os = "android", target_os = "freebsd")))]
    {
        (f(), String::new())
    }
}

#[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
mod stderr_capture {
    use std::sync::{Mutex, PoisonError};

    /// Held for the whole of a capture: two captures never swap fd 2 at once.
    static STDERR_LOCK: Mutex<()> = Mutex::new(());

    /// Most bytes of a capture that are kept.
    const KEPT_BYTES: usize = 64 * 1024;

    /// fd 2 redirected into an anonymous file; dropping it puts the saved
    /// descriptor back and closes both, on every path out, panics included.
    struct Redirected {
        sink: libc::c_int,
        saved: libc::c_int,
    }

    impl Redirected {
        fn start() -> Option<Self> {
            // SAFETY: plain POSIX calls on descriptors this function creates;
            // each is closed on the error path that follows it.
            unsafe {
                let sink = libc::memfd_create(c"infer-stderr".as_ptr(), libc::MFD_CLOEXEC);
                if sink < 0 {
                    return None;
                }
                let saved = libc::dup(2);
                if saved < 0 {
                    libc::close(sink);
                    return None;
                }
                if libc::dup2(sink, 2) < 0 {
                    libc::close(sink);
                    libc::close(saved);
                    return None;
                }
                Some(Self { sink, saved })
            }
        }

        /// What was written so far (at most [`KEPT_BYTES`]).
        fn text(&self) -> String {
            let mut text = Vec::new();
            // SAFETY: `sink` is open until `drop`; the buffer has `keep` bytes.
            unsafe {
                let size = libc::lseek(self.sink, 0, libc::SEEK_END);
                if size > 0 {
                    let keep = usize::try_from(size).map_or(KEPT_BYTES, |s| s.min(KEPT_BYTES));
                    text.resize(keep, 0);
                    let read = libc::pread(self.sink, text.as_mut_ptr().cast(), keep, 0);
                    text.truncate(usize::try_from(read).unwrap_or(0));
                }
            }
            String::from_utf8_lossy(&text).trim().to_owned()
        }
    }

    impl Drop for Redirected {
        fn drop(&mut self) {
            // SAFETY: both descriptors were opened in `start` and are closed
            // once, here, after fd 2 gets its saved target back.
            unsafe {
                libc::dup2(self.saved, 2);
                libc::close(self.saved);
                libc::close(self.sink);
            }
        }
    }

    pub fn run<T>(f: impl FnOnce() -> T) -> (T, String) {
        // A capture that panicked leaves nothing behind to protect (its guard
        // restored fd 2), so a poisoned lock is still usable.
        let _lock = STDERR_LOCK.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(redirected) = Redirected::start() else {
            return (f(), String::new());
        };
        let result = f();
        let text = redirected.text();
        drop(redirected);
        (result, text)
    }

    #[cfg(test)]
    mod tests {
        use std::os::fd::AsRawFd;

        use super::*;

        /// The inode behind fd 2, to see whether it is the original target.
        fn stderr_target() -> (u64, u64) {
            // SAFETY: fstat on fd 2 into a zeroed stat buffer.
            unsafe {
                let mut st: libc::stat = std::mem::zeroed();
                assert_eq!(libc::fstat(std::io::stderr().as_raw_fd(), &mut st), 0);
                (st.st_dev, st.st_ino)
            }
        }

        #[test]
        fn captures_what_is_written_to_fd_2_and_restores_it() {
            let before = stderr_target();
            let (value, text) = run(|| {
                // SAFETY: writes a static buffer to fd 2.
                unsafe { libc::write(2, b"parse error at x\n".as_ptr().cast(), 17) };
                42
            });
            assert_eq!((value, text.as_str()), (42, "parse error at x"));
            assert_eq!(stderr_target(), before, "fd 2 not restored");
        }

        #[test]
        fn restores_fd_2_when_the_closure_panics() {
            let before = stderr_target();
            let outcome = std::panic::catch_unwind(|| {
                run(|| {
                    assert_ne!(stderr_target(), before, "fd 2 was not redirected");
                    panic!("inside the capture");
                })
            });
            assert!(outcome.is_err(), "the panic must propagate");
            assert_eq!(stderr_target(), before, "fd 2 not restored after a panic");
            // The lock is usable again, and captures still work.
            let ((), text) = run(|| unsafe {
                libc::write(2, b"again".as_ptr().cast(), 5);
            });
            assert_eq!(text, "again");
        }

        #[test]
        fn concurrent_captures_never_mix_their_output() {
            let threads: Vec<_> = (0..8)
                .map(|i| {
                    std::thread::spawn(move || {
                        let line = format!("thread {i} wrote this");
                        let ((), text) = run(|| {
                            for _ in 0..50 {
                                // SAFETY: writes `line`'s bytes to fd 2.
                                unsafe { libc::write(2, line.as_ptr().cast(), line.len()) };
                            }
                        });
                        assert_eq!(text, line.repeat(50), "thread {i}");
                    })
                })
                .collect();
            for t in threads {
                assert!(t.join().is_ok());
            }
        }
    }
}

/// The first non-empty line of `text`, at most 300 characters.
pub fn first_line(text: &str) -> Option<String> {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    Some(line.chars().take(300).collect())
}
