// The one place the Rust tests, unit tests and benchmarks name the default
// model (the file `make model` fetches; the Makefile passes the same file as
// INFER_MODEL). Pulled in with `include!`, so no inner doc comment here.

/// The default model, relative to the crate's root.
pub const DEFAULT_MODEL: &str = "models/SmolLM2-135M-Instruct.Q4_1.gguf";

/// `INFER_MODEL` if set, else the default model under the crate's root.
pub fn model_path() -> std::path::PathBuf {
    std::env::var_os("INFER_MODEL").map_or_else(
        || std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(DEFAULT_MODEL),
        std::path::PathBuf::from,
    )
}
