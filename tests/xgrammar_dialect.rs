//! The grammars Model::connect() sends to vLLM and SGLang, judged by
//! xgrammar itself (their grammar engine; scripts/xgrammar-venv.sh installs
//! it from PyPI): for real-world schemas (a sample of maskbench), the plain
//! BNF written for xgrammar must be accepted by xgrammar's parser, and must
//! accept exactly the texts llama.cpp's grammar engine accepts for the
//! original GBNF — valid and invalid instances alike. So a schema is
//! enforced by vLLM and SGLang exactly as in process.
//!
//! Needs `INFER_XGRAMMAR_PYTHON` (make sets it) and the maskbench data
//! (`../shared/data`, or `INFER_MASKBENCH`).

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use infer::grammar::check::plain_bnf;
use infer::schema::{self, canonical};
use serde_json::{json, Value};

/// Every how-many-th schema of maskbench is judged (about 700 of 7,432;
/// every fifth, 1,424 schemas and 8,388 texts, also agreed throughout).
const EVERY: usize = 10;

fn xgrammar() -> (String, String) {
    let python = std::env::var("INFER_XGRAMMAR_PYTHON").expect(
        "INFER_XGRAMMAR_PYTHON: run `make test` (or scripts/xgrammar-venv.sh, which prints it)",
    );
    let stubs = std::path::Path::new(&python)
        .parent()
        .and_then(|bin| bin.parent())
        .map(|venv| venv.join("stubs").display().to_string())
        .expect("a virtualenv's python");
    (python, stubs)
}

fn maskbench() -> String {
    std::env::var("INFER_MASKBENCH").unwrap_or_else(|_| {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../shared/data/maskbench-visible.jsonl"
        )
        .to_owned()
    })
}

/// Per schema: the plain BNF and the texts with llama.cpp's verdicts.
struct Case {
    name: String,
    bnf: String,
    texts: Vec<String>,
    llama: Vec<bool>,
}

#[test]
fn xgrammar_reads_our_grammars_and_accepts_exactly_what_llama_cpp_accepts() {
    let probe = common::probe();
    let data = std::fs::read_to_string(maskbench()).expect("maskbench data");
    let mut cases = Vec::new();
    for (index, line) in data.lines().enumerate() {
        if index % EVERY != 0 {
            continue;
        }
        let entry: Value = serde_json::from_str(line).expect("a JSON line");
        let Some(compiled) = entry.get("schema").and_then(|s| schema::compile(s).ok()) else {
            continue;
        };
        let Ok(mut grammar) = probe.load(&compiled.gbnf) else {
            continue;
        };
        let bnf = plain_bnf(compiled.gbnf.as_str()).expect("a converted schema has a plain form");
        let mut texts = Vec::new();
        for test in entry
            .get("tests")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(instance) = test.get("data") {
                texts.push(canonical::instance_text(
                    instance,
                    &compiled.root,
                    &compiled.defs,
                ));
                texts.push(instance.to_string());
            }
        }
        let llama = texts.iter().map(|t| grammar.accepts(t)).collect();
        let name = entry
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_owned();
        cases.push(Case {
            name,
            bnf,
            texts,
            llama,
        });
    }
    assert!(cases.len() > 600, "only {} schemas judged", cases.len());

    let (python, stubs) = xgrammar();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/xgrammar_accepts.py");
    let mut child = Command::new(python)
        .arg(script)
        .env("PYTHONPATH", stubs)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start xgrammar");
    let mut stdin = child.stdin.take().expect("stdin");
    let jobs: Vec<String> = cases
        .iter()
        .map(|c| json!({"grammar": c.bnf, "texts": c.texts}).to_string())
        .collect();
    let writer = std::thread::spawn(move || {
        for job in jobs {
            writeln!(stdin, "{job}").expect("write a job");
        }
    });
    let answers: Vec<Value> = BufReader::new(child.stdout.take().expect("stdout"))
        .lines()
        .map(|l| serde_json::from_str(&l.expect("a line")).expect("JSON"))
        .collect();
    writer.join().expect("writer");
    assert!(child.wait().expect("xgrammar ends").success());
    assert_eq!(answers.len(), cases.len());

    let (mut texts, mut accepted, mut refused) = (0, 0, 0);
    let mut disagreements = Vec::new();
    for (case, answer) in cases.iter().zip(&answers) {
        if let Some(error) = answer.get("error") {
            panic!(
                "xgrammar refused the grammar of {}: {error}\n{}",
                case.name, case.bnf
            );
        }
        let verdicts: Vec<bool> = answer["accepts"]
            .as_array()
            .expect("verdicts")
            .iter()
            .map(|v| v.as_bool().expect("a bool"))
            .collect();
        for ((text, llama), xgrammar) in case.texts.iter().zip(&case.llama).zip(verdicts) {
            texts += 1;
            if *llama {
                accepted += 1;
            } else {
                refused += 1;
            }
            if *llama != xgrammar {
                disagreements.push(format!(
                    "{}: llama.cpp {} / xgrammar {}: {text}",
                    case.name, llama, xgrammar
                ));
            }
        }
    }
    eprintln!(
        "{} schemas, {texts} texts ({accepted} accepted, {refused} refused by llama.cpp), {} disagreements",
        cases.len(),
        disagreements.len()
    );
    assert!(accepted > 500 && refused > 2000, "too few of one kind");
    assert!(
        disagreements.is_empty(),
        "{} disagreements, first: {:#?}",
        disagreements.len(),
        &disagreements[..disagreements.len().min(10)]
    );
}
