//! Command-line arguments shared by the benchmarks: `[DATA] [MODEL] [--flag N]…`.

mod paths {
    #![allow(dead_code)] // each benchmark compiles its own copy
    include!("../tests/common/paths.rs");
}

/// Flags whose value is text rather than a number.
const TEXT_FLAGS: &[&str] = &["--lines", "--dump"];

/// The benchmark's arguments.
pub struct Args {
    all: Vec<String>,
    /// The data file (default: the shared maskbench file).
    pub data: String,
    /// The GGUF model (default: the model `make model` fetches).
    #[allow(dead_code)] // not every benchmark loads a model
    pub model: String,
}

impl Args {
    pub fn parse() -> Self {
        let all: Vec<String> = std::env::args().skip(1).collect();
        // Positional: not a flag, and not the number after one.
        let mut positional = all
            .iter()
            .enumerate()
            .filter(|(i, a)| {
                let after_flag = i
                    .checked_sub(1)
                    .and_then(|p| all.get(p))
                    .is_some_and(|p| p.starts_with("--"));
                let after_text_flag = i
                    .checked_sub(1)
                    .and_then(|p| all.get(p))
                    .is_some_and(|p| TEXT_FLAGS.contains(&p.as_str()));
                let flag_value = after_flag && (a.parse::<f64>().is_ok() || after_text_flag);
                !a.starts_with("--") && !flag_value
            })
            .map(|(_, a)| a.clone());
        let data = positional
            .next()
            .unwrap_or_else(|| "../shared/data/maskbench-visible.jsonl".to_owned());
        let model = positional
            .next()
            .unwrap_or_else(|| paths::model_path().to_string_lossy().into_owned());
        Self { all, data, model }
    }

    /// The number after `--name`, or `default`.
    pub fn number(&self, name: &str, default: usize) -> usize {
        self.all
            .iter()
            .position(|a| a == name)
            .and_then(|i| self.all.get(i + 1))
            .and_then(|n| n.parse().ok())
            .unwrap_or(default)
    }

    /// The text after `--name` (a flag listed in `TEXT_FLAGS`).
    #[allow(dead_code)] // each benchmark compiles its own copy; not all use it
    pub fn value(&self, name: &str) -> Option<&str> {
        self.all
            .iter()
            .position(|a| a == name)
            .and_then(|i| self.all.get(i + 1))
            .map(String::as_str)
    }

    /// Whether `--name` was given.
    #[allow(dead_code)] // each benchmark compiles its own copy; not all use it
    pub fn has(&self, name: &str) -> bool {
        self.all.iter().any(|a| a == name)
    }
}

/// Run `run` on a thread with a `stack`-byte stack (the converters and
/// llama.cpp's grammar engine recurse deeply on some schemas), and return its
/// result.
#[allow(dead_code)] // each benchmark compiles its own copy; not all use it
pub fn on_large_stack(
    stack: usize,
    run: fn() -> Result<(), Box<dyn std::error::Error>>,
) -> Result<(), Box<dyn std::error::Error>> {
    let worker = std::thread::Builder::new()
        .stack_size(stack)
        .spawn(move || run().map_err(|e| e.to_string()))?;
    worker
        .join()
        .map_err(|_| "the benchmark thread panicked")??;
    Ok(())
}
