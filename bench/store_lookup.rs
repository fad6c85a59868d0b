//! The prompt store's lookup with many entries in its directory (issue 47:
//! the hardening may cost at most 1 ms a lookup). A directory of ENTRIES
//! entries (one real entry of 120 tokens and a 1 MiB state, the others
//! hard links to it under the names of other prompts), then lookups of a
//! prompt that finds that entry (a hit: the entry is read and verified) and
//! of one whose first tokens match no entry (a miss: the directory is
//! listed). No model: the store is called directly.
//!
//! Prints the median and mean microseconds per lookup, over ROUNDS rounds of
//! 50 lookups each. Run: `cargo run --release --no-default-features
//! --features engine --example store_lookup -- [ENTRIES] [ROUNDS]`.

use std::time::Instant;

use infer::engine::cache::persistent::FileId;
use infer::engine::cache::prefix_store::{self, ModelIdentity, StateBound};
use llama_cpp_2::token::LlamaToken;

const STATE: usize = 1 << 20;

fn prompt(sys: i32) -> Vec<LlamaToken> {
    (sys * 1000..sys * 1000 + 120).map(LlamaToken).collect()
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let entries: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(10_000);
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(20);
    let dir = std::env::temp_dir().join(format!("infer-store-lookup-{}", std::process::id()));
    let _fresh = std::fs::remove_dir_all(&dir).is_ok();
    prefix_store::configure(&dir.display().to_string(), u64::MAX >> 1, 16, "");
    let model = ModelIdentity {
        file: FileId {
            dev: 1,
            ino: 2,
            size: 3,
            mtime_sec: 4,
            mtime_nsec: 5,
        },
        n_gpu_layers: 0,
        main_gpu: None,
        n_vocab: 49152,
        n_layer: 30,
        n_embd: 576,
        projector: None,
        bound: StateBound::for_shape(30, 576),
    };
    let Some(key) = prefix_store::key(&model, 1) else {
        eprintln!("the build cannot be identified");
        std::process::exit(1);
    };
    prefix_store::write(key, 1, &prompt(1), 0, &vec![7u8; STATE], &[]);
    let Some(real) = std::fs::read_dir(&dir)
        .ok()
        .and_then(|mut r| {
            r.find_map(|e| {
                e.ok()
                    .filter(|e| e.file_name().to_string_lossy().ends_with(".kv"))
            })
        })
        .map(|e| e.file_name().to_string_lossy().into_owned())
    else {
        eprintln!("the entry was not written");
        std::process::exit(1);
    };
    // `{key}-{head}-{len}-{full}.kv`: the same entry under other heads.
    let parts: Vec<&str> = real.split('-').collect();
    for i in 1..entries {
        let name = format!(
            "{}-{:016x}-{}-{}",
            parts[0],
            i as u64 * 0x9e37_79b9,
            parts[2],
            parts[3]
        );
        if let Err(e) = std::fs::hard_link(dir.join(&real), dir.join(name)) {
            eprintln!("cannot link: {e}");
            std::process::exit(1);
        }
    }
    let time = |p: &[LlamaToken], hit: bool| {
        let mut per = Vec::new();
        for _ in 0..rounds {
            let begin = Instant::now();
            for _ in 0..50 {
                let found = prefix_store::find(key, model.bound, p, 4096, 16);
                assert_eq!(found.is_some_and(|f| f.found.is_some()), hit);
            }
            per.push(begin.elapsed().as_secs_f64() * 1e6 / 50.0);
        }
        let mean = per.iter().sum::<f64>() / per.len() as f64;
        (median(per), mean)
    };
    let (hit_median, hit_mean) = time(&prompt(1), true);
    let (miss_median, miss_mean) = time(&prompt(99_999), false);
    println!("| {entries} | {hit_median:.0} | {hit_mean:.0} | {miss_median:.0} | {miss_mean:.0} |");
    let _gone = std::fs::remove_dir_all(&dir).is_ok();
}
