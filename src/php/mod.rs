//! The PHP binding: one file per class. Methods convert arguments, call the
//! engine, and map its errors to exceptions; nothing else happens here.

mod convert;
mod errors;
mod exceptions;
mod grammar;
mod message;
mod model;
mod options;
mod paths;
mod prompt;
mod response;

use ext_php_rs::prelude::*;
use ext_php_rs::zend::ModuleEntry;
use ext_php_rs::{info_table_end, info_table_row, info_table_start};

/// MINIT: the exception classes have no Rust object behind them, so they are
/// registered by hand before the macro registers the classes below.
extern "C" fn startup(_type: i32, _module_number: i32) -> i32 {
    match exceptions::register() {
        Ok(()) => 0,
        Err(_) => -1,
    }
}

extern "C" fn info(_module: *mut ModuleEntry) {
    info_table_start!();
    info_table_row!("infer support", "enabled");
    info_table_row!("version", env!("CARGO_PKG_VERSION"));
    info_table_end!();
}

#[php_module]
pub fn get_module(module: ModuleBuilder) -> ModuleBuilder {
    module
        .name("infer")
        .startup_function(startup)
        .info_function(info)
        .class::<message::Message>()
        .class::<prompt::Prompt>()
        .class::<response::Response>()
        .class::<model::Model>()
        .class::<grammar::Grammar>()
}
