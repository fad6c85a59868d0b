//! The extension's php.ini settings. All are system level (php.ini, the
//! command line's `-d`, a pool's `php_admin_value`): a script's `ini_set()`
//! cannot change them.

use std::ffi::{c_char, c_int, CStr};

use ext_php_rs::ffi::E_WARNING;
use ext_php_rs::flags::IniEntryPermission;
use ext_php_rs::zend::{IniEntryDef, IniEntryDefs};

use crate::chat::image::Bounds;

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
/// `infer.server_mmproj`: the image projector it loads beside the model
/// (empty: none, no images).
pub const SERVER_MMPROJ_INI: &CStr = c"infer.server_mmproj";
/// `infer.server_lora`: LoRA adapters it loads beside the model (absolute
/// paths separated by `:`, as `open_basedir`'s; empty: none), which calls
/// choose with their option `lora`.
pub const SERVER_LORA_INI: &CStr = c"infer.server_lora";
/// `infer.server_slots`: the sequences it decodes together.
pub const SERVER_SLOTS_INI: &CStr = c"infer.server_slots";
/// `infer.server_threads`: its threads (0: llama-server's default).
pub const SERVER_THREADS_INI: &CStr = c"infer.server_threads";
/// `infer.server_ctx`: the context of each slot, in tokens.
pub const SERVER_CTX_INI: &CStr = c"infer.server_ctx";
/// `infer.server_dir`: its state directory (empty: `infer-server-<uid>` in
/// the temporary directory the extension started with).
pub const SERVER_DIR_INI: &CStr = c"infer.server_dir";
/// `infer.server_port`: removed (the server listens only on a Unix socket
/// in its state directory); registered so that a value other than 0 is
/// refused loudly rather than ignored.
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
/// `infer.server_start_timeout`: seconds a start of the shared server may
/// take (the model loads before it answers).
pub const SERVER_START_TIMEOUT_INI: &CStr = c"infer.server_start_timeout";
/// `infer.prompt_cache_namespace`: the prompt store's entries are shared
/// only between processes of the same namespace (a PHP-FPM pool's
/// `php_admin_value`: one per application).
pub const PROMPT_CACHE_NAMESPACE_INI: &CStr = c"infer.prompt_cache_namespace";

/// `infer.max_image_pixels`: the most pixels (width × height) an image may
/// declare; a larger one is refused before it is decoded.
pub const MAX_IMAGE_PIXELS_INI: &CStr = c"infer.max_image_pixels";
/// `infer.max_image_side`: the longest width or height an image may
/// declare; a longer one is refused before it is decoded (a strip of
/// 16,777,216 × 1 pixels passes the pixel count, and a projector's resizing
/// of it takes a gigabyte).
pub const MAX_IMAGE_SIDE_INI: &CStr = c"infer.max_image_side";

/// `infer.max_lora_contexts`: the most contexts a model's load option
/// `lora_contexts` may keep (each is a KV cache: 47 MB for SmolLM2 at 2,048
/// tokens, 0.25-1 GB for a 7-8B model), so that an administrator bounds
/// what a script can make one process hold.
pub const MAX_LORA_CONTEXTS_INI: &CStr = c"infer.max_lora_contexts";
/// Its default.
const DEFAULT_MAX_LORA_CONTEXTS: u32 = 8;

/// The entries, registered in MINIT.
pub static INI: IniEntryDefs<23> = IniEntryDefs::new([
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
    IniEntryDef::new(PROMPT_CACHE_NAMESPACE_INI, c"", IniEntryPermission::System),
    IniEntryDef::new(SERVER_MODEL_INI, c"", IniEntryPermission::System),
    IniEntryDef::new(SERVER_MMPROJ_INI, c"", IniEntryPermission::System),
    IniEntryDef::new(SERVER_LORA_INI, c"", IniEntryPermission::System),
    IniEntryDef::new(SERVER_SLOTS_INI, c"4", IniEntryPermission::System),
    IniEntryDef::new(SERVER_THREADS_INI, c"0", IniEntryPermission::System),
    IniEntryDef::new(SERVER_CTX_INI, c"4096", IniEntryPermission::System),
    IniEntryDef::new(SERVER_DIR_INI, c"", IniEntryPermission::System),
    IniEntryDef::new(SERVER_PORT_INI, c"0", IniEntryPermission::System),
    IniEntryDef::new(SERVER_LOG_INI, c"", IniEntryPermission::System),
    IniEntryDef::new(SERVER_IDLE_INI, c"0", IniEntryPermission::System),
    IniEntryDef::new(SERVER_BINARY_INI, c"", IniEntryPermission::System),
    IniEntryDef::new(SERVER_START_TIMEOUT_INI, c"120", IniEntryPermission::System),
    IniEntryDef::new(
        MAX_IMAGE_PIXELS_INI,
        c"16777216",
        IniEntryPermission::System,
    ),
    IniEntryDef::new(MAX_LORA_CONTEXTS_INI, c"8", IniEntryPermission::System),
    IniEntryDef::new(MAX_IMAGE_SIDE_INI, c"16384", IniEntryPermission::System),
    IniEntryDef::end(),
]);

extern "C" {
    fn zend_ini_string(name: *const c_char, name_length: usize, orig: bool) -> *mut c_char;
    fn php_error_docref(docref: *const c_char, type_: c_int, format: *const c_char, ...);
    fn php_log_err_with_severity(message: *const c_char, syslog_type: c_int);
}

/// What a setting's value must be.
#[derive(Debug, Clone, Copy)]
enum Rule {
    /// A whole number in this range.
    Int { min: i64, max: i64 },
    /// Empty, or an absolute path.
    AbsolutePath,
    /// Empty, or absolute paths separated by `:`.
    AbsolutePaths,
    /// Only 0: the shared server's TCP port was removed.
    NoPort,
    /// Up to 64 letters, digits, `.`, `_` and `-`.
    Name,
}

/// What stays off while a setting is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Feature {
    PersistentModels,
    MemoryCache,
    Store,
    SharedServer,
    ImageLimit,
    LoraLimit,
    ImageSide,
}

impl Feature {
    fn off(self) -> &'static str {
        match self {
            Feature::PersistentModels => "no model is kept between requests",
            Feature::MemoryCache => "the prompt cache stays off",
            Feature::Store => "the prompt store stays off",
            Feature::SharedServer => "the shared server stays off",
            Feature::ImageLimit => "images are bounded by the default of 16777216 pixels",
            Feature::LoraLimit => "lora_contexts is bounded by the default of 8",
            Feature::ImageSide => "images are bounded by the default of 16384 pixels a side",
        }
    }
}

const MIB_MAX: i64 = 1 << 20;
const COUNT_MAX: i64 = 1 << 30;

/// Every setting's rule and the feature it belongs to.
const RULES: [(&CStr, Rule, Feature); 22] = [
    (
        MAX_MODELS_INI,
        Rule::Int { min: 0, max: 1024 },
        Feature::PersistentModels,
    ),
    (
        PROMPT_CACHE_MB_INI,
        Rule::Int {
            min: 0,
            max: MIB_MAX,
        },
        Feature::MemoryCache,
    ),
    (
        PROMPT_CACHE_MIN_TOKENS_INI,
        Rule::Int {
            min: 0,
            max: COUNT_MAX,
        },
        Feature::MemoryCache,
    ),
    (PROMPT_CACHE_DIR_INI, Rule::AbsolutePath, Feature::Store),
    (
        PROMPT_CACHE_DIR_MB_INI,
        Rule::Int {
            min: 0,
            max: MIB_MAX,
        },
        Feature::Store,
    ),
    (
        PROMPT_CACHE_DIR_MIN_TOKENS_INI,
        Rule::Int {
            min: 0,
            max: COUNT_MAX,
        },
        Feature::Store,
    ),
    (PROMPT_CACHE_NAMESPACE_INI, Rule::Name, Feature::Store),
    (SERVER_MODEL_INI, Rule::AbsolutePath, Feature::SharedServer),
    (SERVER_MMPROJ_INI, Rule::AbsolutePath, Feature::SharedServer),
    (SERVER_LORA_INI, Rule::AbsolutePaths, Feature::SharedServer),
    (
        SERVER_SLOTS_INI,
        Rule::Int { min: 1, max: 256 },
        Feature::SharedServer,
    ),
    (
        SERVER_THREADS_INI,
        Rule::Int { min: 0, max: 512 },
        Feature::SharedServer,
    ),
    (
        SERVER_CTX_INI,
        Rule::Int {
            min: 64,
            max: 1 << 24,
        },
        Feature::SharedServer,
    ),
    (SERVER_DIR_INI, Rule::AbsolutePath, Feature::SharedServer),
    (SERVER_PORT_INI, Rule::NoPort, Feature::SharedServer),
    (SERVER_LOG_INI, Rule::AbsolutePath, Feature::SharedServer),
    (
        SERVER_IDLE_INI,
        Rule::Int {
            min: 0,
            max: COUNT_MAX,
        },
        Feature::SharedServer,
    ),
    (SERVER_BINARY_INI, Rule::AbsolutePath, Feature::SharedServer),
    (
        SERVER_START_TIMEOUT_INI,
        Rule::Int { min: 1, max: 3600 },
        Feature::SharedServer,
    ),
    (
        MAX_IMAGE_PIXELS_INI,
        Rule::Int {
            min: 1,
            max: 1 << 32,
        },
        Feature::ImageLimit,
    ),
    (
        MAX_LORA_CONTEXTS_INI,
        Rule::Int {
            min: 1,
            max: crate::backend::params::MAX_LORA_CONTEXTS as i64,
        },
        Feature::LoraLimit,
    ),
    (
        MAX_IMAGE_SIDE_INI,
        Rule::Int {
            min: 1,
            max: u32::MAX as i64,
        },
        Feature::ImageSide,
    ),
];

/// A setting whose value is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub name: &'static str,
    pub value: String,
    pub why: String,
    pub feature: Feature,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "php.ini {} = \"{}\" is refused: {}",
            self.name, self.value, self.why
        )
    }
}

impl Rule {
    /// Why `value` breaks the rule.
    fn refuses(self, value: &str) -> Option<String> {
        match self {
            Rule::Int { min, max } => {
                let v = value.trim();
                let ok = !v.is_empty()
                    && v.strip_prefix('-').unwrap_or(v).bytes().all(|b| b.is_ascii_digit())
                    && v.parse::<i64>().is_ok_and(|n| (min..=max).contains(&n));
                (!ok).then(|| format!("not a whole number from {min} to {max}"))
            }
            Rule::AbsolutePath => (!value.is_empty() && !value.starts_with('/'))
                .then(|| "not an absolute path (a relative one would depend on each request's working directory)".to_owned()),
            Rule::AbsolutePaths => (!value.is_empty()
                && value.split(':').any(|p| !p.starts_with('/')))
            .then(|| "not absolute paths separated by ':' (a relative one would depend on each request's working directory)".to_owned()),
            Rule::NoPort => (value.trim() != "0" && !value.trim().is_empty()).then(|| {
                "the shared server listens only on the Unix socket in its state directory (a TCP port on 127.0.0.1 can be taken first by another local user, who would then get the key and every prompt); remove the setting".to_owned()
            }),
            Rule::Name => (value.len() > 64
                || !value
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-'))
            .then(|| "not a name of at most 64 letters, digits, '.', '_' and '-'".to_owned()),
        }
    }
}

/// The refused settings of `feature` (all features: `None`), as this
/// process sees them now.
pub fn refused(feature: Option<Feature>) -> Vec<Refused> {
    RULES
        .iter()
        .filter(|(_, _, f)| feature.is_none_or(|want| *f == want))
        .filter_map(|&(name, rule, feature)| {
            let value = string(name);
            let why = rule.refuses(&value)?;
            Some(Refused {
                name: name.to_str().unwrap_or_default(),
                value,
                why,
                feature,
            })
        })
        .collect()
}

/// At MINIT: a startup warning for each refused setting, naming it, its
/// value and what stays off.
pub fn warn_at_startup() {
    for r in refused(None) {
        let line = format!("infer: {r}; {}", r.feature.off());
        said().push(line.clone());
        let Ok(message) = std::ffi::CString::new(line) else {
            continue;
        };
        // SAFETY: a "%s" format with one NUL-terminated string; PHP is in
        // MINIT, where startup warnings are reported (logged, and shown
        // where display_startup_errors says).
        unsafe {
            php_error_docref(
                std::ptr::null(),
                E_WARNING as c_int,
                c"%s".as_ptr(),
                message.as_ptr(),
            )
        };
    }
}

/// The refusals this process has said (at MINIT, or in the error log).
fn said() -> std::sync::MutexGuard<'static, Vec<String>> {
    static SAID: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    SAID.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// At a request's start: a setting refused in this worker that MINIT did
/// not see (a PHP-FPM pool's `php_admin_value`) goes to the error log once
/// per process (under PHP-FPM without an `error_log`: the FastCGI error
/// stream, which the web server logs); never to the output.
fn log_refused_once(refusals: &[Refused]) {
    let mut said = said();
    for r in refusals {
        let line = format!("infer: {r}; {}", r.feature.off());
        if said.contains(&line) {
            continue;
        }
        if let Ok(message) = std::ffi::CString::new(line.as_str()) {
            // SAFETY: a NUL-terminated message; LOG_WARNING is a syslog level.
            unsafe { php_log_err_with_severity(message.as_ptr(), libc::LOG_WARNING) };
        }
        said.push(line);
    }
}

/// Apply the prompt cache's settings to the engine: at startup and at
/// each request, since PHP-FPM applies a pool's `php_admin_value`s in the
/// worker, after the extension started in the master. A refused setting
/// turns its cache off.
pub fn configure_prompt_cache(at_request: bool) {
    let memory_refused = refused(Some(Feature::MemoryCache));
    let store_refused = refused(Some(Feature::Store));
    if at_request {
        log_refused_once(&memory_refused);
        log_refused_once(&store_refused);
    }
    if memory_refused.is_empty() {
        crate::engine::cache::prefix_cache::configure(
            number(PROMPT_CACHE_MB_INI).saturating_mul(1 << 20),
            number(PROMPT_CACHE_MIN_TOKENS_INI),
        );
    } else {
        crate::engine::cache::prefix_cache::configure(0, 0);
    }
    match store_refused.first() {
        None => crate::engine::cache::prefix_store::configure(
            &string(PROMPT_CACHE_DIR_INI),
            u64::try_from(number(PROMPT_CACHE_DIR_MB_INI))
                .unwrap_or(0)
                .saturating_mul(1 << 20),
            number(PROMPT_CACHE_DIR_MIN_TOKENS_INI),
            &string(PROMPT_CACHE_NAMESPACE_INI),
        ),
        Some(r) => {
            crate::engine::cache::prefix_store::refuse(&string(PROMPT_CACHE_DIR_INI), r.to_string())
        }
    }
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

/// Whether PHP's own `allow_url_fopen` is on: `Model::connect()` reads
/// from a URL, which a PHP with it off forbids its scripts to do.
pub fn url_fopen_allowed() -> bool {
    let value = string(c"allow_url_fopen").trim().to_ascii_lowercase();
    matches!(value.as_str(), "on" | "yes" | "true") || value.parse::<i64>().is_ok_and(|n| n != 0)
}

/// A whole-number setting whose rule it meets (checked by the caller), as
/// a count; 0 otherwise.
fn number(name: &CStr) -> usize {
    string(name).trim().parse().unwrap_or(0)
}

/// The most pixels an image may declare (`infer.max_image_pixels`) and its
/// longest side (`infer.max_image_side`); each setting refused falls back to
/// its default.
pub fn image_bounds() -> Bounds {
    let mut bounds = Bounds::DEFAULT;
    if refused(Some(Feature::ImageLimit)).is_empty() {
        bounds.pixels = number(MAX_IMAGE_PIXELS_INI) as u64;
    }
    if refused(Some(Feature::ImageSide)).is_empty() {
        bounds.side = u32::try_from(number(MAX_IMAGE_SIDE_INI)).unwrap_or(bounds.side);
    }
    bounds
}

/// The most contexts `lora_contexts` may ask for
/// (`infer.max_lora_contexts`).
pub fn max_lora_contexts() -> u32 {
    if refused(Some(Feature::LoraLimit)).is_empty() {
        u32::try_from(number(MAX_LORA_CONTEXTS_INI)).unwrap_or(DEFAULT_MAX_LORA_CONTEXTS)
    } else {
        DEFAULT_MAX_LORA_CONTEXTS
    }
}

/// The `infer.max_persistent_models` setting (0 while it is refused).
fn max_models() -> usize {
    if refused(Some(Feature::PersistentModels)).is_empty() {
        number(MAX_MODELS_INI)
    } else {
        0
    }
}

/// The installation's settings as the loader asks for them.
pub struct Ini;

impl crate::loader::Installation for Ini {
    fn shared_server(&self) -> Result<Option<crate::remote::shared::Settings>, String> {
        shared_server().map_err(|refused| refused.to_string())
    }

    fn max_persistent_models(&self) -> usize {
        max_models()
    }
}

/// The shared server's settings: `Ok(None)` when `infer.server_model` is
/// empty, `Err` naming the first refused setting.
pub fn shared_server() -> Result<Option<crate::remote::shared::Settings>, Refused> {
    use std::path::PathBuf;
    if let Some(r) = refused(Some(Feature::SharedServer)).into_iter().next() {
        return Err(r);
    }
    let model = string(SERVER_MODEL_INI);
    if model.is_empty() {
        return Ok(None);
    }
    let count = |name: &CStr| u32::try_from(number(name)).unwrap_or(u32::MAX);
    let path = |name: &CStr| {
        Some(string(name))
            .filter(|s| !s.is_empty())
            .map(PathBuf::from)
    };
    let dir = path(SERVER_DIR_INI).unwrap_or_else(crate::remote::shared::default_dir);
    let beside = extension_dir().unwrap_or_default();
    let server_binary =
        path(SERVER_BINARY_INI).unwrap_or_else(|| beside.join("infer-llama-server"));
    // The supervisor beside the extension (where `make install` and the
    // build put it), else beside llama-server.
    let supervisor_binary = Some(beside.join("infer-serve"))
        .filter(|p| p.is_file())
        .or_else(|| server_binary.parent().map(|d| d.join("infer-serve")))
        .unwrap_or_else(|| beside.join("infer-serve"));
    Ok(Some(crate::remote::shared::Settings {
        model: PathBuf::from(model),
        mmproj: path(SERVER_MMPROJ_INI),
        lora: path(SERVER_LORA_INI)
            .map(|list| {
                list.to_string_lossy()
                    .split(':')
                    .map(PathBuf::from)
                    .collect()
            })
            .unwrap_or_default(),
        slots: count(SERVER_SLOTS_INI),
        threads: count(SERVER_THREADS_INI),
        ctx: count(SERVER_CTX_INI),
        dir,
        log: path(SERVER_LOG_INI),
        idle: u64::from(count(SERVER_IDLE_INI)),
        start_timeout: std::time::Duration::from_secs(u64::from(count(SERVER_START_TIMEOUT_INI))),
        server_binary,
        supervisor_binary,
    }))
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
