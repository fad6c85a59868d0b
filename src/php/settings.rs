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

/// `infer.server_model`: the GGUF the installation's shared llama-server
/// serves (`Model::load($path, ['shared' => true])`); empty: no shared server.
pub const SERVER_MODEL_INI: &CStr = c"infer.server_model";
/// `infer.server_slots`: the sequences it decodes together.
pub const SERVER_SLOTS_INI: &CStr = c"infer.server_slots";
/// `infer.server_threads`: its threads (0: llama-server's default).
pub const SERVER_THREADS_INI: &CStr = c"infer.server_threads";
/// `infer.server_ctx`: the context of each slot, in tokens.
pub const SERVER_CTX_INI: &CStr = c"infer.server_ctx";
/// `infer.server_dir`: its state directory (empty: `infer-server-<uid>` in
/// the system's temporary directory).
pub const SERVER_DIR_INI: &CStr = c"infer.server_dir";
/// `infer.server_port`: its port on 127.0.0.1 (0: a Unix socket in the
/// state directory instead).
pub const SERVER_PORT_INI: &CStr = c"infer.server_port";
/// `infer.server_log`: its log file (empty: `server.log` in the directory).
pub const SERVER_LOG_INI: &CStr = c"infer.server_log";
/// `infer.server_idle`: seconds without a `Model::load()` of it after which
/// it stops (0: only when no process that used it is left).
pub const SERVER_IDLE_INI: &CStr = c"infer.server_idle";
/// `infer.server_binary`: llama-server (empty: `infer-llama-server` beside
/// the extension, where `make install` puts it; the supervisor
/// `infer-serve` is looked for beside the extension, then beside it).
pub const SERVER_BINARY_INI: &CStr = c"infer.server_binary";

/// The entries, registered in MINIT.
pub static INI: IniEntryDefs<16> = IniEntryDefs::new([
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
    IniEntryDef::new(SERVER_MODEL_INI, c"", IniEntryPermission::System),
    IniEntryDef::new(SERVER_SLOTS_INI, c"4", IniEntryPermission::System),
    IniEntryDef::new(SERVER_THREADS_INI, c"0", IniEntryPermission::System),
    IniEntryDef::new(SERVER_CTX_INI, c"4096", IniEntryPermission::System),
    IniEntryDef::new(SERVER_DIR_INI, c"", IniEntryPermission::System),
    IniEntryDef::new(SERVER_PORT_INI, c"0", IniEntryPermission::System),
    IniEntryDef::new(SERVER_LOG_INI, c"", IniEntryPermission::System),
    IniEntryDef::new(SERVER_IDLE_INI, c"0", IniEntryPermission::System),
    IniEntryDef::new(SERVER_BINARY_INI, c"", IniEntryPermission::System),
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

/// The shared server's settings, or `None` when `infer.server_model` is
/// empty.
pub fn shared_server() -> Option<crate::remote::shared::Settings> {
    use std::path::PathBuf;
    let model = string(SERVER_MODEL_INI);
    if model.is_empty() {
        return None;
    }
    let count = |name: &CStr, least: usize| {
        u32::try_from(non_negative(name).max(least)).unwrap_or(u32::MAX)
    };
    let dir = match string(SERVER_DIR_INI) {
        d if d.is_empty() => {
            // SAFETY: geteuid has no failure mode.
            let uid = unsafe { libc::geteuid() };
            std::env::temp_dir().join(format!("infer-server-{uid}"))
        }
        d => PathBuf::from(d),
    };
    let beside = extension_dir().unwrap_or_default();
    let server_binary = match string(SERVER_BINARY_INI) {
        b if b.is_empty() => beside.join("infer-llama-server"),
        b => PathBuf::from(b),
    };
    // The supervisor beside the extension (where `make install` and the
    // build put it), else beside llama-server.
    let supervisor_binary = Some(beside.join("infer-serve"))
        .filter(|p| p.is_file())
        .or_else(|| server_binary.parent().map(|d| d.join("infer-serve")))
        .unwrap_or_else(|| beside.join("infer-serve"));
    Some(crate::remote::shared::Settings {
        model: PathBuf::from(model),
        slots: count(SERVER_SLOTS_INI, 1),
        threads: count(SERVER_THREADS_INI, 0),
        ctx: count(SERVER_CTX_INI, 64),
        dir,
        port: u16::try_from(non_negative(SERVER_PORT_INI)).unwrap_or(0),
        log: Some(string(SERVER_LOG_INI))
            .filter(|l| !l.is_empty())
            .map(PathBuf::from),
        idle: u64::try_from(non_negative(SERVER_IDLE_INI)).unwrap_or(0),
        server_binary,
        supervisor_binary,
    })
}

/// The directory this extension's shared object was loaded from.
fn extension_dir() -> Option<std::path::PathBuf> {
    use std::os::unix::ffi::OsStrExt as _;
    // SAFETY: Dl_info is plain pointers, for which zero is a valid value.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: `extension_dir` is code of this library; dladdr fills `info`
    // with pointers into the loader's own tables, valid while it is loaded.
    let found = unsafe { libc::dladdr(extension_dir as *const libc::c_void, &mut info) };
    if found == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: a NUL-terminated path owned by the loader.
    let path = unsafe { CStr::from_ptr(info.dli_fname) };
    let path = std::path::Path::new(std::ffi::OsStr::from_bytes(path.to_bytes()));
    path.parent().map(std::path::Path::to_path_buf)
}
