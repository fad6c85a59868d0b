//! The extension's php.ini settings. All are system level (php.ini, the
//! command line's `-d`, a pool's `php_admin_value`): a script's `ini_set()`
//! cannot change them.

use std::ffi::{c_char, CStr};

use ext_php_rs::ffi::zend_long;
use ext_php_rs::flags::IniEntryPermission;
use ext_php_rs::zend::{IniEntryDef, IniEntryDefs};

/// `infer.max_persistent_models`: how many persistent models one process
/// keeps (least recently used evicted; 0 keeps none).
pub const MAX_MODELS_INI: &CStr = c"infer.max_persistent_models";
/// `infer.prompt_cache_mb`: the bound of the process's prefix cache, in MiB
/// (0: off; each call then reuses only what its context holds).
pub const PROMPT_CACHE_MB_INI: &CStr = c"infer.prompt_cache_mb";
/// `infer.prompt_cache_min_tokens`: how many tokens a prompt must add to the
/// cached prefixes for its state to be kept.
pub const PROMPT_CACHE_MIN_TOKENS_INI: &CStr = c"infer.prompt_cache_min_tokens";

/// `infer.prompt_cache_dir`: the directory of the prompt store shared by
/// the processes of the machine (empty: no store).
pub const PROMPT_CACHE_DIR_INI: &CStr = c"infer.prompt_cache_dir";
/// `infer.prompt_cache_dir_mb`: the bound of that directory, in MiB.
pub const PROMPT_CACHE_DIR_MB_INI: &CStr = c"infer.prompt_cache_dir_mb";
/// `infer.prompt_cache_dir_min_tokens`: how many tokens a prompt must add
/// to the stored prefixes for its state to be written.
pub const PROMPT_CACHE_DIR_MIN_TOKENS_INI: &CStr = c"infer.prompt_cache_dir_min_tokens";

/// The entries, registered in MINIT.
pub static INI: IniEntryDefs<7> = IniEntryDefs::new([
    IniEntryDef::new(MAX_MODELS_INI, c"2", IniEntryPermission::System),
    IniEntryDef::new(PROMPT_CACHE_MB_INI, c"128", IniEntryPermission::System),
    IniEntryDef::new(
        PROMPT_CACHE_MIN_TOKENS_INI,
        c"32",
        IniEntryPermission::System,
    ),
    IniEntryDef::new(PROMPT_CACHE_DIR_INI, c"", IniEntryPermission::System),
    IniEntryDef::new(PROMPT_CACHE_DIR_MB_INI, c"512", IniEntryPermission::System),
    IniEntryDef::new(
        PROMPT_CACHE_DIR_MIN_TOKENS_INI,
        c"64",
        IniEntryPermission::System,
    ),
    IniEntryDef::end(),
]);

extern "C" {
    fn zend_ini_long(name: *const c_char, name_length: usize, orig: bool) -> zend_long;
    fn zend_ini_string(name: *const c_char, name_length: usize, orig: bool) -> *mut c_char;
}

/// Apply the prompt cache's settings to the engine: at startup and at
/// each request, since PHP-FPM applies a pool's `php_admin_value`s in the
/// worker, after the extension started in the master.
pub fn configure_prompt_cache() {
    crate::engine::prefix_cache::configure(prompt_cache_bytes(), prompt_cache_min_tokens());
    let dir_mb = u64::try_from(non_negative(PROMPT_CACHE_DIR_MB_INI)).unwrap_or(u64::MAX);
    crate::engine::prefix_store::configure(
        &string(PROMPT_CACHE_DIR_INI),
        dir_mb.saturating_mul(1 << 20),
        non_negative(PROMPT_CACHE_DIR_MIN_TOKENS_INI),
    );
}

/// A registered string setting ("" when unset or not UTF-8).
fn string(name: &CStr) -> String {
    // SAFETY: `name` is a registered entry (MINIT) and its length is exact;
    // PHP returns its own NUL-terminated value, or null.
    unsafe {
        let value = zend_ini_string(name.as_ptr(), name.count_bytes(), false);
        if value.is_null() {
            return String::new();
        }
        CStr::from_ptr(value)
            .to_str()
            .unwrap_or_default()
            .to_owned()
    }
}

/// A registered integer setting; negative counts as 0.
fn non_negative(name: &CStr) -> usize {
    // SAFETY: `name` is a registered entry (MINIT) and its length is exact.
    let value = unsafe { zend_ini_long(name.as_ptr(), name.count_bytes(), false) };
    usize::try_from(value).unwrap_or(0)
}

/// The `infer.max_persistent_models` setting.
pub fn max_models() -> usize {
    non_negative(MAX_MODELS_INI)
}

/// The prefix cache's bound in bytes.
fn prompt_cache_bytes() -> usize {
    non_negative(PROMPT_CACHE_MB_INI).saturating_mul(1 << 20)
}

fn prompt_cache_min_tokens() -> usize {
    non_negative(PROMPT_CACHE_MIN_TOKENS_INI)
}
