//! The schema converter on arbitrary JSON: it must never panic, and every
//! grammar it emits must pass our GBNF checker (which mirrors llama.cpp's
//! parser and rejects grammars that would hang or exhaust it). libFuzzer's
//! `-timeout=1` turns any input slower than a second into a finding.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(schema) = serde_json::from_str::<serde_json::Value>(text) else {
        return;
    };
    if let Ok(gbnf) = infer::schema::to_gbnf(&schema) {
        if let Err(e) = infer::grammar::check::check(&gbnf) {
            panic!("the converter emitted a grammar the checker refuses: {e}\n{gbnf}");
        }
    }
});
