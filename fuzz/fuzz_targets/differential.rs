//! The differential soundness test of `tests/soundness.rs`, driven by the
//! fuzzer: its bytes are the generator's choices (schema, then instances),
//! the judges are the `jsonschema` crate and llama.cpp's grammar engine.
//! A grammar that accepts an instance the validator refuses, a converter
//! panic, or a grammar llama.cpp refuses is a crash, printed minimised.
//!
//! Run (llama.cpp is linked, so without a sanitizer; the model is the
//! default one or `INFER_MODEL`):
//! `cd fuzz && cargo +nightly fuzz run --features differential --sanitizer none differential -- -max_total_time=3600`
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/differential/mod.rs"]
mod differential;

use differential::gen::{Bytes, Gen};
use infer::engine::decode::probe::GrammarProbe;

fn model_path() -> std::path::PathBuf {
    std::env::var_os("INFER_MODEL").map_or_else(
        || {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../models/SmolLM2-135M-Instruct.Q4_1.gguf")
        },
        std::path::PathBuf::from,
    )
}

fn probe() -> &'static GrammarProbe {
    static PROBE: OnceLock<GrammarProbe> = OnceLock::new();
    PROBE.get_or_init(|| {
        GrammarProbe::new(&model_path())
            .unwrap_or_else(|e| panic!("load the vocabulary (run `make model`): {e}"))
    })
}

fuzz_target!(|data: &[u8]| {
    let mut g = Gen::new(Bytes::new(data));
    let case = differential::case(&mut g, 8);
    let mut tally = differential::Tally::default();
    differential::judge(probe(), &case, &mut tally);
    if let Some(v) = tally.violations.first() {
        panic!("{v}");
    }
});
