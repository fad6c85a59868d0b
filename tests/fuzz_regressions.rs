//! Every input the fuzz targets (fuzz/) ever flagged, kept as a regression
//! test: schemas in fuzz/regressions/*.json must convert or be refused without
//! panicking, and a grammar the converter emits must pass the GBNF checker;
//! grammars in *.gbnf must be checked without panicking.

use std::path::PathBuf;

use infer::grammar::check::check;
use infer::schema;

fn inputs(extension: &str) -> Vec<(PathBuf, String)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/regressions");
    let mut out: Vec<(PathBuf, String)> = std::fs::read_dir(&dir)
        .expect("fuzz/regressions exists")
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == extension))
        .map(|p| {
            let text =
                String::from_utf8_lossy(&std::fs::read(&p).expect("readable file")).into_owned();
            (p, text)
        })
        .collect();
    out.sort();
    out
}

#[test]
fn flagged_schemas_convert_to_grammars_the_checker_accepts() {
    let cases = inputs("json");
    assert!(!cases.is_empty());
    for (path, text) in cases {
        let Ok(value) = serde_json::from_str::<serde_json::Value>(&text) else {
            continue;
        };
        if let Ok(gbnf) = schema::to_gbnf(&value) {
            if let Err(e) = check(&gbnf) {
                panic!("{}: emitted grammar refused: {e}", path.display());
            }
        }
    }
}

#[test]
fn flagged_grammars_are_checked_without_panicking() {
    for (_, text) in inputs("gbnf") {
        let _ = check(&text);
    }
}
