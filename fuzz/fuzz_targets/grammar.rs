//! The GBNF checker on arbitrary text: it must never panic or take more than
//! a second (libFuzzer's `-timeout=1`), whatever it is given.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = infer::grammar::check::check(text);
    }
});
