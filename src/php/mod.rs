//! The PHP binding: one file per class. Methods convert arguments, call the
//! engine, and map its errors to exceptions; nothing else happens here.

mod attributes;
mod convert;
mod embedding;
mod errors;
mod exceptions;
mod grammar;
mod image;
mod logprobs;
mod lora_options;
mod message;
mod model;
mod options;
mod paths;
mod problem;
mod prompt;
mod reflect;
mod rerank_model;
mod response;
mod sampling_options;
mod schema;
mod schema_arg;
mod settings;
mod stream;
mod timeout;
mod tool_call;
mod tools;

use ext_php_rs::prelude::*;
use ext_php_rs::zend::{IniEntryDef, ModuleEntry};
use ext_php_rs::{info_table_end, info_table_header, info_table_row, info_table_start};

extern "C" {
    fn display_ini_entries(module: *mut ModuleEntry);
}

/// MINIT: the php.ini settings, then the exception classes, which have no
/// Rust object behind them and so are registered by hand before the macro
/// registers the classes below.
extern "C" fn startup(_type: i32, module_number: i32) -> i32 {
    IniEntryDef::register(settings::INI.as_slice(), module_number);
    // Before any script can putenv(): what the processes the extension
    // starts get, and where the shared server's default directory is.
    crate::remote::shared::capture_environment();
    settings::warn_at_startup();
    settings::configure_prompt_cache(false);
    attributes::install();
    start_shared_server_in_fpm_master();
    match exceptions::register() {
        Ok(()) => 0,
        Err(_) => -1,
    }
}

/// Under PHP-FPM, the master starts the installation's shared server (php.ini
/// `infer.server_model`) when it starts, before it forks its workers: no
/// request waits for the model to load, and the server, whose client the
/// master is, lives as long as PHP-FPM. A failure is said once on stderr (the
/// master's log); the first request meets it again, with the same message.
fn start_shared_server_in_fpm_master() {
    // SAFETY: the SAPI sets its module before any extension starts; `name`
    // is a static NUL-terminated string or null.
    let name = unsafe { ext_php_rs::ffi::sapi_module.name };
    if name.is_null() {
        return;
    }
    // SAFETY: checked non-null above; static for the process's life.
    if unsafe { std::ffi::CStr::from_ptr(name) }.to_bytes() != b"fpm-fcgi" {
        return;
    }
    // A refused setting was said by the startup warning.
    if let Ok(Some(shared)) = settings::shared_server() {
        if let Err(e) = crate::remote::shared::ensure(&shared) {
            eprintln!("infer: {e}");
        }
    }
}

/// RINIT: the prompt cache's settings as this worker sees them (a PHP-FPM
/// pool's `php_admin_value`s are applied after MINIT, in the worker).
extern "C" fn request_startup(_type: i32, _module_number: i32) -> i32 {
    settings::configure_prompt_cache(true);
    0
}

/// MSHUTDOWN: free the persistent models (their thread pools are joined).
extern "C" fn shutdown(_type: i32, _module_number: i32) -> i32 {
    crate::loader::persistent::clear();
    0
}

/// `phpinfo()`: the version, the persistent models this process holds, and
/// the php.ini settings.
extern "C" fn info(module: *mut ModuleEntry) {
    let (models, loads) = crate::loader::persistent::listing();
    info_table_start!();
    info_table_row!("infer support", "enabled");
    info_table_row!("version", env!("CARGO_PKG_VERSION"));
    info_table_row!(
        "compiled backends",
        crate::engine::llama::devices::compiled_backends().join(", ")
    );
    info_table_row!("persistent models held", models.len().to_string());
    info_table_row!("persistent model loads", loads.to_string());
    let cache = crate::engine::cache::prefix_cache::stats();
    info_table_row!(
        "prompt cache (memory)",
        format!(
            "{} prefixes, {:.1} of {} MiB",
            cache.entries,
            cache.bytes as f64 / f64::from(1 << 20),
            cache.limit_bytes >> 20
        )
    );
    info_table_row!(
        "prompt cache hits / misses / evictions",
        format!("{} / {} / {}", cache.hits, cache.misses, cache.evictions)
    );
    let shared = crate::engine::cache::prefix_store::stats();
    let place = match (&shared.dir, &shared.problem) {
        (None, _) => "off".to_owned(),
        (Some(dir), Some(problem)) => format!("{} not used: {problem}", dir.display()),
        (Some(dir), None) => format!(
            "{}: {} prefixes, {:.1} of {} MiB",
            dir.display(),
            shared.entries,
            shared.bytes as f64 / f64::from(1 << 20),
            shared.limit_bytes >> 20
        ),
    };
    info_table_row!("prompt cache (shared)", place);
    info_table_row!(
        "shared prompt cache hits / misses / writes",
        format!("{} / {} / {}", shared.hits, shared.misses, shared.writes)
    );
    info_table_row!(
        "shared prompt cache failed writes / rejected entries / evictions",
        format!(
            "{} / {} / {}",
            shared.failed_writes, shared.rejected, shared.evictions
        )
    );
    info_table_end!();
    if !models.is_empty() {
        info_table_start!();
        info_table_header!("persistent model", "loads answered");
        for m in &models {
            info_table_row!(m.path.display().to_string(), m.uses.to_string());
        }
        info_table_end!();
    }
    // SAFETY: `module` is this extension's entry, passed by PHP.
    unsafe { display_ini_entries(module) };
}

#[php_module]
pub fn get_module(module: ModuleBuilder) -> ModuleBuilder {
    module
        .name("infer")
        .startup_function(startup)
        .shutdown_function(shutdown)
        .request_startup_function(request_startup)
        .info_function(info)
        .class::<tool_call::ToolCall>()
        .class::<image::Image>()
        .class::<message::Message>()
        .class::<prompt::Prompt>()
        .class::<response::Response>()
        .class::<embedding::Embedding>()
        .class::<model::Model>()
        .class::<stream::Stream>()
        .class::<grammar::Grammar>()
        .class::<rerank_model::RerankModel>()
        .class::<schema::Schema>()
        .class::<attributes::Description>()
        .class::<attributes::Constraint>()
        .class::<attributes::ListOf>()
}
