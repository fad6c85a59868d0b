//! File paths from PHP callers, checked against `open_basedir` the way PHP's
//! own file functions check them. Every path the extension opens goes
//! through [`allowed_path`] first.

use std::ffi::{c_char, c_int, CStr, CString};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

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
}

/// Longest path PHP's check accepts without a warning (`MAXPATHLEN` - 1).
const MAX_PATH_BYTES: usize = libc::PATH_MAX as usize - 1;

/// `path`, if PHP's `open_basedir` allows opening it.
pub fn allowed_path(path: &Path) -> Result<&Path, LoadCallError> {
    let bytes = path.as_os_str().as_bytes();
    let Some(allowed) = open_basedir() else {
        return Ok(path);
    };
    let c_path = CString::new(bytes).map_err(|_| LoadError::NulInPath)?;
    if bytes.len() > MAX_PATH_BYTES {
        return Err(LoadError::Unreadable {
            path: path.to_path_buf(),
            reason: format!("the path is longer than {MAX_PATH_BYTES} bytes"),
        }
        .into());
    }
    // SAFETY: a NUL-terminated string that lives across the call; PHP's
    // function only reads it and the open_basedir setting.
    if unsafe { php_check_open_basedir_ex(c_path.as_ptr(), 0) } == 0 {
        Ok(path)
    } else {
        Err(LoadCallError::OpenBasedir {
            path: path.to_path_buf(),
            allowed,
        })
    }
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
