//! The exception family: `InferException extends \RuntimeException`, with
//! `ModelLoadException` and `InferenceException` below it.
//!
//! They are plain PHP classes (no Rust object behind them) so that PHP code can
//! construct, throw, catch and extend them like any other exception.

use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};

use ext_php_rs::args::ArgInfoTables;
use ext_php_rs::builders::ClassBuilder;
use ext_php_rs::exception::PhpException;
use ext_php_rs::ffi::{ext_php_rs_compiler_globals, zend_hash_str_find_ptr_lc};
use ext_php_rs::zend::{ce, ClassEntry};

pub const INFER_EXCEPTION: &str = "Displace\\Infer\\InferException";
pub const MODEL_LOAD_EXCEPTION: &str = "Displace\\Infer\\ModelLoadException";
pub const INFERENCE_EXCEPTION: &str = "Displace\\Infer\\InferenceException";

static INFER_CE: AtomicPtr<ClassEntry> = AtomicPtr::new(ptr::null_mut());
static MODEL_LOAD_CE: AtomicPtr<ClassEntry> = AtomicPtr::new(ptr::null_mut());
static INFERENCE_CE: AtomicPtr<ClassEntry> = AtomicPtr::new(ptr::null_mut());

/// Register the three classes. Runs in MINIT, before the Rust-backed classes.
pub fn register() -> ext_php_rs::error::Result<()> {
    ClassBuilder::new(INFER_EXCEPTION)
        .extends((runtime_exception, "\\RuntimeException"))
        .registration(|ce, tables| keep(&INFER_CE, ce, tables))
        .register()?;
    ClassBuilder::new(MODEL_LOAD_EXCEPTION)
        .extends((infer_exception_ce, "\\Displace\\Infer\\InferException"))
        .registration(|ce, tables| keep(&MODEL_LOAD_CE, ce, tables))
        .register()?;
    ClassBuilder::new(INFERENCE_EXCEPTION)
        .extends((infer_exception_ce, "\\Displace\\Infer\\InferException"))
        .registration(|ce, tables| keep(&INFERENCE_CE, ce, tables))
        .register()
}

fn keep(slot: &AtomicPtr<ClassEntry>, ce: &'static mut ClassEntry, tables: ArgInfoTables) {
    slot.store(ce, Ordering::Release);
    // The engine keeps pointers into the (empty) argument tables for the life
    // of the process.
    std::mem::forget(tables);
}

/// `\RuntimeException` (see [`internal_class`]).
fn runtime_exception() -> &'static ClassEntry {
    internal_class("RuntimeException").unwrap_or_else(ce::exception)
}

/// A class PHP or an extension registered, looked up by name in the
/// compiler's class table: during MINIT the executor's table (which
/// `ClassEntry::try_find` reads) is not set yet.
pub fn internal_class(name: &str) -> Option<&'static ClassEntry> {
    let lower = name.trim_start_matches('\\').to_ascii_lowercase();
    // SAFETY: the compiler globals exist for the life of the engine; the
    // class table is its live table and the name is valid for its length.
    // Class entries found there live as long as the process.
    let globals = unsafe { ext_php_rs_compiler_globals().as_ref() }?;
    let table = globals.class_table;
    if table.is_null() {
        return None;
    }
    let found = unsafe { zend_hash_str_find_ptr_lc(table, lower.as_ptr().cast(), lower.len()) };
    unsafe { found.cast::<ClassEntry>().as_ref() }
}

fn load(slot: &AtomicPtr<ClassEntry>) -> &'static ClassEntry {
    let p = slot.load(Ordering::Acquire);
    // SAFETY: only ever set from a `&'static mut ClassEntry` handed over by
    // the engine at registration; class entries live until the process ends.
    unsafe { p.as_ref() }.unwrap_or_else(runtime_exception)
}

fn infer_exception_ce() -> &'static ClassEntry {
    load(&INFER_CE)
}

/// `message` with each NUL byte written `\0`: PHP cannot take a message
/// with one, and ext-php-rs then throws a bare `\Error` in its place (a
/// sampler named "k\0" did), which is not one of this extension's classes.
fn printable(message: String) -> String {
    if message.contains('\0') {
        message.replace('\0', "\\0")
    } else {
        message
    }
}

/// An `InferException` (the base class) with `message`.
pub fn infer_exception(message: impl Into<String>) -> PhpException {
    PhpException::new(printable(message.into()), 0, load(&INFER_CE))
}

/// A `ModelLoadException` with `message`.
pub fn model_load_exception(message: impl Into<String>) -> PhpException {
    PhpException::new(printable(message.into()), 0, load(&MODEL_LOAD_CE))
}

/// An `InferenceException` with `message`.
pub fn inference_exception(message: impl Into<String>) -> PhpException {
    PhpException::new(printable(message.into()), 0, load(&INFERENCE_CE))
}

/// A `\TypeError` with `message`: an argument of the wrong type.
pub fn type_error(message: impl Into<String>) -> PhpException {
    PhpException::new(printable(message.into()), 0, ce::type_error())
}

/// The message of `new X()` on a class that only has factories.
pub fn no_constructor(class: &str, factory: &str) -> PhpException {
    infer_exception(format!(
        "Displace\\Infer\\{class} cannot be created with new; use {factory} instead."
    ))
}
