//! File paths from PHP callers, resolved and checked against `open_basedir`
//! the way PHP's own file functions do it. Every path the extension opens
//! goes through [`allowed_path`] first, and the path it returns is the one
//! opened.
//!
//! A relative path is resolved against PHP's working directory, which on a
//! thread-safe PHP is the request's *virtual* one (`chdir()` changes it, not
//! the process's): opening the path as given would read the file of the
//! process's working directory, which `open_basedir` never checked.

use std::ffi::{c_char, c_int, CStr, CString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use ext_php_rs::zend::ProcessGlobals;

use super::errors::LoadCallError;
use crate::engine::LoadError;

extern "C" {
    /// PHP's own check (main/fopen_wrappers.c): 0 when `path` may be opened
    /// under the current `open_basedir` (always, when it is not set), -1 when
    /// not. It resolves `..`, symbolic links and relative paths exactly as
    /// PHP's file functions do. With `warn` = 0 it raises no warning, except
    /// for a path longer than `MAXPATHLEN`, which [`allowed_path`] refuses
    /// before asking.
    fn php_check_open_basedir_ex(path: *const c_char, warn: c_int) -> c_int;
    /// PHP's resolution of a path (main/fopen_wrappers.c), which its plain
    /// file functions open: absolute against the request's working
    /// directory (virtual on a thread-safe PHP), `.` and `..` resolved.
    /// Writes at most `MAXPATHLEN` bytes into `real_path` and returns it, or
    /// null when the path cannot be resolved.
    fn expand_filepath(filepath: *const c_char, real_path: *mut c_char) -> *mut c_char;
}

/// Longest path PHP's check accepts without a warning (`MAXPATHLEN` - 1).
const MAX_PATH_BYTES: usize = libc::PATH_MAX as usize - 1;

/// `path` as PHP resolves it, if PHP's `open_basedir` allows opening it:
/// the path to open.
pub fn allowed_path(path: &Path) -> Result<PathBuf, LoadCallError> {
    let bytes = path.as_os_str().as_bytes();
    let c_path = CString::new(bytes).map_err(|_| LoadError::NulInPath)?;
    let unreadable = |reason: String| LoadError::Unreadable {
        path: path.to_path_buf(),
        reason,
    };
    if bytes.len() > MAX_PATH_BYTES {
        return Err(unreadable(format!("the path is longer than {MAX_PATH_BYTES} bytes")).into());
    }
    // An absolute path names the same file for PHP and for the kernel, and
    // is kept as given (messages and `info()` show it); a relative one is
    // PHP's working directory's.
    // An empty path names no file: the loader says so.
    let resolved = if path.is_absolute() || bytes.is_empty() {
        path.to_path_buf()
    } else {
        resolve(&c_path).ok_or_else(|| {
            unreadable("PHP cannot resolve the path from the working directory".to_owned())
        })?
    };
    let Some(allowed) = open_basedir() else {
        return Ok(resolved);
    };
    let c_resolved =
        CString::new(resolved.as_os_str().as_bytes()).map_err(|_| LoadError::NulInPath)?;
    // SAFETY: a NUL-terminated string that lives across the call; PHP's
    // function only reads it and the open_basedir setting.
    if unsafe { php_check_open_basedir_ex(c_resolved.as_ptr(), 0) } == 0 {
        Ok(resolved)
    } else {
        Err(LoadCallError::OpenBasedir {
            path: path.to_path_buf(),
            allowed,
        })
    }
}

/// `path` resolved by PHP (see [`expand_filepath`]).
fn resolve(path: &CStr) -> Option<PathBuf> {
    let mut buffer = vec![0u8; libc::PATH_MAX as usize + 1];
    // SAFETY: `path` is NUL-terminated; `buffer` holds MAXPATHLEN bytes and
    // more, all PHP writes (a NUL-terminated path) into a caller's buffer.
    let written = unsafe { expand_filepath(path.as_ptr(), buffer.as_mut_ptr().cast()) };
    if written.is_null() {
        return None;
    }
    let end = buffer.iter().position(|&b| b == 0)?;
    buffer.truncate(end);
    (!buffer.is_empty()).then(|| PathBuf::from(std::ffi::OsString::from_vec(buffer)))
}

/// The current `open_basedir` setting, when one is in effect.
fn open_basedir() -> Option<String> {
    let globals = ProcessGlobals::get();
    let ptr = globals.open_basedir;
    if ptr.is_null() {
        return None;
    }
    // SAFETY: PHP keeps the INI value as a NUL-terminated string for the
    // whole request; the read guard is held while it is copied.
    let value = unsafe { CStr::from_ptr(ptr) }
        .to_string_lossy()
        .into_owned();
    (!value.is_empty()).then_some(value)
}
