//! Feeds every grammar of the checker's test tables
//! (`src/grammar/check/cases.rs`) to llama.cpp's own grammar parser, so that
//! what the tables claim about llama.cpp is checked, not asserted:
//!
//! * every `VALID` grammar is accepted by llama.cpp, and allows some token at
//!   the start;
//! * every `INVALID` grammar does in llama.cpp what [`EXPECTED`] says: it is
//!   rejected, or accepted and then misbehaves in the way described (checked
//!   by feeding it text), or crashes, hangs or exhausts memory.
//!
//! Each grammar runs in a child process (this binary, re-invoked with
//! `--child KIND INDEX`) limited to [`MEMORY_LIMIT`] of address space and
//! [`TIME_LIMIT`] of wall-clock time, since some of them bring llama.cpp
//! down. The child calls the C API directly (`llama_sampler_init_grammar`,
//! the function `LlamaSampler::grammar` wraps): the Rust wrapper refuses a
//! text without the substring `root` or with a NUL before llama.cpp sees it,
//! and catches C++ exceptions, both of which would hide what llama.cpp does.
//!
//! Prints one line per mismatch and ends with `N passed, M failed`; the exit
//! status is non-zero when something failed.

#[path = "../src/grammar/check/cases.rs"]
mod cases;
mod common;

use std::ffi::{c_char, c_void, CStr, CString};
use std::io::{Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use llama_cpp_sys_2 as sys;

/// Wall-clock limit for one child; a child still running then is "hung".
/// Generous: under [`MEMORY_LIMIT`] the grammars that eat memory fail within
/// a few seconds, but the machine may be busy.
const TIME_LIMIT: Duration = Duration::from_secs(30);
/// Address-space limit of a child (a vocabulary-only model needs well under
/// 100 MB), so that runaway allocation fails in seconds.
const MEMORY_LIMIT: u64 = 1 << 30;
/// Children run at once.
const PARALLEL: usize = 2;
/// Tokens a child accepts after the grammar loads (the first allowed one at
/// each step), to reach what only sampling exercises.
const WALK_STEPS: usize = 4;

/// What llama.cpp does with a grammar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    /// `llama_sampler_init_grammar` returns null (a parse or validation error).
    Rejected,
    /// The grammar loads and sampling with it runs.
    Accepted,
    /// The process dies from a signal (segfault, abort).
    Crashed,
    /// Allocation fails under [`MEMORY_LIMIT`] (`std::bad_alloc`), whether
    /// llama.cpp's parser catches it or the process aborts.
    OutOfMemory,
    /// Still running after [`TIME_LIMIT`].
    Hung,
}

/// What an accepted grammar allows after `feed` (fed one byte per token)
/// has been accepted.
#[derive(Debug, Clone, Copy)]
enum After {
    /// Every token, end-of-generation included: there is no grammar at all.
    Everything,
    /// No token at all, end-of-generation included; and accepting a token
    /// anyway throws (a C++ exception out of `llama_sampler_accept`).
    Stuck,
    /// Some tokens, but not end-of-generation: the output can never end.
    NoEnd,
    /// End-of-generation and nothing else: the output is complete.
    OnlyEnd,
    /// This text (one token) is still allowed.
    Allows(&'static str),
    /// This text (one token) is refused.
    Refuses(&'static str),
}

#[derive(Debug, Clone, Copy)]
struct Check {
    /// Fed `times` times, one byte per token.
    feed: &'static [u8],
    times: usize,
    then: After,
}

/// What llama.cpp does with an `INVALID` grammar, and why the checker
/// refuses it anyway.
#[derive(Debug, Clone, Copy)]
struct Expect {
    verdict: Verdict,
    why: &'static str,
    /// For `Rejected`: part of llama.cpp's message (the first line it prints).
    message: &'static str,
    /// For `Accepted`: how it misbehaves.
    check: Option<Check>,
}

/// Rejected with `message` in the first line llama.cpp prints.
const fn rejected(message: &'static str) -> Expect {
    rejected_because(message, "")
}

const fn rejected_because(message: &'static str, why: &'static str) -> Expect {
    Expect {
        verdict: Verdict::Rejected,
        why,
        message,
        check: None,
    }
}

const fn accepted(why: &'static str, feed: &'static [u8], then: After) -> Expect {
    Expect {
        verdict: Verdict::Accepted,
        why,
        message: "",
        check: Some(Check {
            feed,
            times: 1,
            then,
        }),
    }
}

const fn fails(verdict: Verdict, why: &'static str) -> Expect {
    Expect {
        verdict,
        why,
        message: "",
        check: None,
    }
}

/// llama.cpp's behaviour for each `INVALID` entry, by name. Established by
/// running this harness and reading llama.cpp's source
/// (`src/llama-grammar.cpp`, llama-cpp-sys-2 0.1.161).
const EXPECTED: &[(&str, Expect)] = &[
    (
        "empty",
        accepted(
            "an empty text means \"no grammar\" to llama.cpp: output is unconstrained \
             (`LlamaSampler::grammar` refuses it first: no `root` in the text)",
            b"",
            After::Everything,
        ),
    ),
    (
        "only comments",
        rejected_because("failed to parse grammar", "no rules at all"),
    ),
    ("missing ::=", rejected("expecting ::=")),
    ("underscore in a rule name", rejected("expecting ::=")),
    (
        "underscore in a reference",
        rejected("expecting newline or end"),
    ),
    (
        "no root",
        rejected("grammar does not contain a 'root' symbol"),
    ),
    (
        "root only referenced (llama.cpp crashes)",
        fails(
            Verdict::Crashed,
            "`root` has a symbol id but no rule: llama.cpp indexes past its rule table",
        ),
    ),
    (
        "undefined rule",
        rejected("Undefined rule identifier 'item'"),
    ),
    (
        "undefined rule in an overwritten body with later rules",
        rejected_because(
            "Undefined rule",
            "the rule table keeps an empty slot for `foo`",
        ),
    ),
    (
        "inverted range",
        accepted(
            "the range z-a silently matches nothing (the rest of the class still works)",
            b"a",
            After::Refuses("m"),
        ),
    ),
    (
        "inverted escaped range",
        accepted(
            "the class matches nothing, so the sampler has no token at the start",
            b"",
            After::Stuck,
        ),
    ),
    ("unterminated literal", rejected("unexpected end of input")),
    (
        "literal spanning lines",
        rejected("unexpected end of input"),
    ),
    (
        "unterminated literal after backslash",
        rejected("unknown escape"),
    ),
    ("unterminated class", rejected("unexpected end of input")),
    ("unterminated range", rejected("unexpected end of input")),
    ("left recursion", rejected("left recursion detected")),
    ("direct left recursion", rejected("left recursion detected")),
    (
        "left recursion through an optional item",
        rejected_because(
            "left recursion detected",
            "`b?` becomes a rule with an explicitly empty alternative",
        ),
    ),
    (
        "left recursion through a rule with an empty alternative",
        rejected("left recursion detected"),
    ),
    (
        "left recursion through an indirectly empty rule (llama.cpp hangs)",
        fails(
            Verdict::OutOfMemory,
            "not detected (`b` is empty only through `c`): loading the grammar builds \
             the first parse stacks, pushing `\"x\"` once per turn until memory runs \
             out; std::bad_alloc aborts here (the wrapper behind `LlamaSampler::grammar` \
             would catch it and fail, after taking all the memory it can)",
        ),
    ),
    (
        "repetition of an empty group",
        rejected_because(
            "left recursion detected",
            "the repeated item is a rule with an explicitly empty alternative",
        ),
    ),
    (
        "star of an optional item",
        rejected_because(
            "left recursion detected",
            "the repeated item is a rule with an explicitly empty alternative",
        ),
    ),
    (
        "plus of a star",
        rejected_because(
            "left recursion detected",
            "the repeated item is a rule with an explicitly empty alternative",
        ),
    ),
    (
        "repetition count too large",
        rejected("number of repetitions exceeds sane defaults"),
    ),
    (
        "repetition count overflows 64 bits",
        rejected_because(
            "error parsing grammar: stoull",
            "std::stoull throws out_of_range",
        ),
    ),
    (
        "repetition maximum too large",
        Expect {
            verdict: Verdict::Accepted,
            message: "",
            why: "a maximum above 2000 is silently dropped: after 2001 \"a\" it allows more",
            check: Some(Check {
                feed: b"a",
                times: 2001,
                then: After::Allows("a"),
            }),
        },
    ),
    (
        "inverted repetition",
        fails(
            Verdict::OutOfMemory,
            "max - min wraps around to 2^64 - 1: llama.cpp generates rules until \
             memory runs out; its parser then reports \"std::bad_alloc\" as a parse error",
        ),
    ),
    (
        "nested repetition too large",
        rejected("number of rules that are going to be repeated multiplied"),
    ),
    (
        "repeated group naming new rules",
        rejected("number of rules that are going to be repeated multiplied"),
    ),
    (
        "nothing to repeat",
        rejected("expecting preceding item to */+/?/{"),
    ),
    (
        "repeating an empty literal",
        rejected("expecting preceding item to */+/?/{"),
    ),
    (
        "repeating a removed item",
        rejected("expecting preceding item to */+/?/{"),
    ),
    (
        "repetition after |",
        rejected("expecting preceding item to */+/?/{"),
    ),
    ("brace without number", rejected("expecting an int")),
    ("brace bad separator", rejected("expecting ','")),
    ("brace unclosed", rejected("expecting '}'")),
    ("unknown escape", rejected("unknown escape")),
    ("short hex escape", rejected("expecting 2 hex chars")),
    (
        "surrogate escape",
        accepted(
            "U+D800 is encoded like a character: llama.cpp generates the bytes ED A0 80 \
             (byte tokens), which are not UTF-8",
            b"\xED\xA0\x80",
            After::OnlyEnd,
        ),
    ),
    (
        "escape above U+10FFFF",
        accepted(
            "U+110000 is encoded like a character: llama.cpp generates the bytes F4 90 80 80 \
             (byte tokens), which are not UTF-8",
            b"\xF4\x90\x80\x80",
            After::OnlyEnd,
        ),
    ),
    (
        "root matches nothing",
        accepted(
            "`a` never ends, so end-of-generation is never allowed: output runs to max_tokens",
            b"xxx",
            After::NoEnd,
        ),
    ),
    (
        "root is an empty class",
        accepted(
            "the class matches nothing: stuck at the start",
            b"",
            After::Stuck,
        ),
    ),
    (
        "reachable rule matches nothing",
        accepted(
            "once \"b\" is chosen, `x` never ends: output runs to max_tokens",
            b"bccc",
            After::NoEnd,
        ),
    ),
    (
        "reachable empty class",
        accepted(
            "the class only holds \\x00, which no token contains: stuck after \"b\"",
            b"b",
            After::Stuck,
        ),
    ),
    (
        "reachable NUL literal",
        accepted(
            "no token contains \\x00: stuck after \"b\"",
            b"b",
            After::Stuck,
        ),
    ),
    (
        "NUL character",
        rejected_because(
            "unexpected end of input",
            "the C string ends at the NUL, inside the literal",
        ),
    ),
    ("unclosed group", rejected("expecting ')'")),
    ("unexpected character in a group", rejected("expecting ')'")),
    ("unmatched )", rejected("expecting newline or end")),
    ("single quotes", rejected("expecting newline or end")),
    (
        "trailing | before the next rule",
        rejected("expecting newline or end"),
    ),
    ("| starting a line", rejected("expecting name")),
    ("rule name missing", rejected("expecting name")),
    ("token id missing", rejected("expecting integer")),
    ("token id too large", rejected("parsed token id is too big")),
    ("token id unclosed", rejected("expecting ']'")),
    ("token without <", rejected("expecting '<'")),
    ("unterminated token", rejected("expecting '>'")),
];

/// `VALID` entries llama.cpp may reject depending on the model, with the
/// message it must then give: token texts depend on the vocabulary, which
/// the checker does not see (it checks token items for syntax only).
const VALID_IF_TOKENS_EXIST: &[(&str, &str)] = &[(
    "tokens",
    // Not one token in SmolLM2's vocabulary; `<|im_end|>` is.
    "invalid token '<think>'",
)];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if args.len() == 4 && args[1] == "--child" {
        let index = args[3].parse().expect("child index");
        child::run(&args[2], index);
    }
    parent()
}

/// An entry of the tables: `(kind, index)` with kind `valid` or `invalid`.
fn entry(kind: &str, index: usize) -> (&'static str, &'static str) {
    match kind {
        "valid" => cases::VALID[index],
        "invalid" => {
            let (name, gbnf, ..) = cases::INVALID[index];
            (name, gbnf)
        }
        _ => panic!("unknown table {kind:?}"),
    }
}

fn expected(name: &str) -> Option<&'static Expect> {
    EXPECTED.iter().find(|(n, _)| *n == name).map(|(_, e)| e)
}

/// What a child reported.
struct Outcome {
    verdict: Verdict,
    /// The child's stdout after the verdict word (observations).
    detail: String,
    /// The first non-empty line of the child's stderr.
    stderr: String,
}

fn parent() -> ExitCode {
    let started = Instant::now();
    let mut failures = table_coverage();
    let jobs: Vec<(&str, usize)> = (0..cases::VALID.len())
        .map(|i| ("valid", i))
        .chain((0..cases::INVALID.len()).map(|i| ("invalid", i)))
        .collect();
    let next = AtomicUsize::new(0);
    let outcomes = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..PARALLEL {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&(kind, index)) = jobs.get(i) else {
                    break;
                };
                let outcome = run_child(kind, index);
                outcomes.lock().unwrap().push((i, outcome));
            });
        }
    });
    let mut outcomes = outcomes.into_inner().unwrap();
    outcomes.sort_by_key(|(i, _)| *i);

    let verbose = std::env::var_os("CHECKER_VS_LLAMA_VERBOSE").is_some();
    let mut passed = 0;
    let mut tally = std::collections::BTreeMap::new();
    for (i, outcome) in &outcomes {
        let (kind, index) = jobs[*i];
        let (name, _) = entry(kind, index);
        if kind == "invalid" {
            *tally.entry(format!("{:?}", outcome.verdict)).or_insert(0) += 1;
        }
        if verbose {
            println!(
                "{kind} {name:?}: {:?} {} | {}",
                outcome.verdict, outcome.detail, outcome.stderr
            );
        }
        match judge(kind, name, outcome) {
            Ok(()) => passed += 1,
            Err(expected) => failures.push(format!(
                "MISMATCH {kind} {name:?}: expected {expected}; got {:?} {}; stderr: {}",
                outcome.verdict, outcome.detail, outcome.stderr
            )),
        }
    }
    for line in &failures {
        println!("{line}");
    }
    println!(
        "llama.cpp verdicts for INVALID: {tally:?} ({:.1} s)",
        started.elapsed().as_secs_f64()
    );
    println!("{passed} passed, {} failed", failures.len());
    if failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// [`EXPECTED`] names exactly the `INVALID` entries, each once.
fn table_coverage() -> Vec<String> {
    let mut failures = Vec::new();
    for (name, ..) in cases::INVALID {
        if !EXPECTED.iter().any(|(n, _)| n == name) {
            failures.push(format!("MISSING expectation for INVALID {name:?}"));
        }
    }
    for (name, _) in VALID_IF_TOKENS_EXIST {
        if !cases::VALID.iter().any(|(n, _)| n == name) {
            failures.push(format!(
                "STALE VALID_IF_TOKENS_EXIST {name:?}: no such VALID entry"
            ));
        }
    }
    for (i, (name, _)) in EXPECTED.iter().enumerate() {
        if !cases::INVALID.iter().any(|(n, ..)| n == name) {
            failures.push(format!("STALE expectation {name:?}: no such INVALID entry"));
        }
        if EXPECTED[..i].iter().any(|(n, _)| n == name) {
            failures.push(format!("DUPLICATE expectation {name:?}"));
        }
    }
    failures
}

/// `Ok` when the outcome is what is expected, else what was expected.
fn judge(kind: &str, name: &str, outcome: &Outcome) -> Result<(), String> {
    if kind == "valid" {
        let ok = outcome.verdict == Verdict::Accepted && !outcome.detail.contains("start=0/");
        let model_message = VALID_IF_TOKENS_EXIST.iter().find(|(n, _)| *n == name);
        return match model_message {
            _ if ok => Ok(()),
            Some((_, message))
                if outcome.verdict == Verdict::Rejected && outcome.stderr.contains(message) =>
            {
                Ok(())
            }
            Some((_, message)) => Err(format!(
                "Accepted with some token allowed at the start, or Rejected with {message:?}"
            )),
            None => Err("Accepted, with some token allowed at the start".into()),
        };
    }
    let Some(expect) = expected(name) else {
        return Ok(()); // reported by `table_coverage`
    };
    let check_ok = !outcome.detail.contains("check=failed");
    if outcome.verdict == expect.verdict && check_ok && outcome.stderr.contains(expect.message) {
        return Ok(());
    }
    let mut wanted = format!("{:?}", expect.verdict);
    if !expect.message.is_empty() {
        wanted += &format!(" with {:?}", expect.message);
    }
    if !expect.why.is_empty() {
        wanted += &format!(" ({})", expect.why);
    }
    Err(wanted)
}

fn run_child(kind: &str, index: usize) -> Outcome {
    let exe = std::env::current_exe().expect("path of this test binary");
    let mut child = Command::new(exe)
        .args(["--child", kind, &index.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start a child");
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out_reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let err_reader = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = stderr.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for a child") {
            break Some(status);
        }
        if started.elapsed() > TIME_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let out = out_reader.join().unwrap();
    let err = err_reader.join().unwrap();
    let stderr = err
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
        .to_owned();
    let (word, detail) = out.trim().split_once(' ').unwrap_or((out.trim(), ""));
    let verdict = match status {
        None => Verdict::Hung,
        Some(_) if err.contains("bad_alloc") => Verdict::OutOfMemory,
        Some(s) if s.signal().is_some() => {
            return Outcome {
                verdict: Verdict::Crashed,
                detail: format!("signal={}", s.signal().unwrap()),
                stderr,
            }
        }
        Some(s) if s.success() && word == "rejected" => Verdict::Rejected,
        Some(s) if s.success() && word == "accepted" => Verdict::Accepted,
        Some(s) => {
            return Outcome {
                verdict: Verdict::Crashed,
                detail: format!("(child failed: {s}, stdout {:?})", out.trim()),
                stderr,
            }
        }
    };
    Outcome {
        verdict,
        detail: detail.to_owned(),
        stderr,
    }
}

/// The child: loads one grammar into llama.cpp and reports on stdout.
mod child {
    use super::*;

    pub fn run(kind: &str, index: usize) -> ! {
        limit_memory();
        let (name, gbnf) = entry(kind, index);
        let llama = Llama::load();
        let text = c_text(gbnf);
        let Some(mut sampler) = llama.grammar(&text) else {
            println!("rejected");
            std::process::exit(0);
        };
        let mut report = format!("accepted {}", llama.walk(&mut sampler));
        if let Some(check) = (kind == "invalid").then(|| expected(name)).flatten() {
            if let Some(check) = check.check {
                let mut fresh = llama.grammar(&text).expect("loads a second time");
                match llama.check(&mut fresh, check) {
                    Ok(seen) => report += &format!(" check=ok({seen})"),
                    Err(why) => report += &format!(" check=failed({why})"),
                }
            }
        }
        println!("{report}");
        let _ = std::io::stdout().flush();
        std::process::exit(0);
    }

    fn limit_memory() {
        let limit = libc::rlimit {
            rlim_cur: MEMORY_LIMIT,
            rlim_max: MEMORY_LIMIT,
        };
        // SAFETY: a plain system call on a valid struct.
        let rc = unsafe { libc::setrlimit(libc::RLIMIT_AS, &limit) };
        assert_eq!(rc, 0, "setrlimit");
    }

    /// The text as C sees it: up to the first NUL.
    fn c_text(gbnf: &str) -> CString {
        let end = gbnf.find('\0').unwrap_or(gbnf.len());
        CString::new(&gbnf[..end]).unwrap()
    }

    /// llama.cpp's errors go to stderr (the parser itself prints there with
    /// fprintf); the rest of its log is dropped.
    unsafe extern "C" fn log_errors(
        level: sys::ggml_log_level,
        text: *const c_char,
        _: *mut c_void,
    ) {
        if level == sys::GGML_LOG_LEVEL_ERROR && !text.is_null() {
            // SAFETY: llama.cpp passes a NUL-terminated string.
            eprint!("{}", unsafe { CStr::from_ptr(text) }.to_string_lossy());
        }
    }

    /// A vocabulary, through the C API.
    struct Llama {
        vocab: *const sys::llama_vocab,
        /// Each token's text, as the grammar sees it.
        pieces: Vec<Vec<u8>>,
    }

    struct Sampler(*mut sys::llama_sampler);

    impl Llama {
        fn load() -> Self {
            let path = common::model_path();
            let path = CString::new(path.to_str().expect("UTF-8 model path")).unwrap();
            // SAFETY: plain C API calls; the callback never unwinds.
            let vocab = unsafe {
                sys::llama_log_set(Some(log_errors), std::ptr::null_mut());
                sys::llama_backend_init();
                let mut params = sys::llama_model_default_params();
                params.vocab_only = true;
                let model = sys::llama_model_load_from_file(path.as_ptr(), params);
                assert!(!model.is_null(), "load the vocabulary");
                sys::llama_model_get_vocab(model)
            };
            // SAFETY: `vocab` lives as long as the (never freed) model.
            let n = unsafe { sys::llama_vocab_n_tokens(vocab) };
            let pieces = (0..n)
                .map(|id| {
                    let mut buf = vec![0u8; 256];
                    // SAFETY: the buffer holds `buf.len()` bytes.
                    let len = unsafe {
                        sys::llama_token_to_piece(vocab, id, buf.as_mut_ptr().cast(), 256, 0, true)
                    };
                    buf.truncate(len.max(0) as usize);
                    buf
                })
                .collect();
            Self { vocab, pieces }
        }

        /// `llama_sampler_init_grammar`, unwrapped: a C++ exception escaping
        /// it aborts the process (so it shows as a crash).
        fn grammar(&self, text: &CStr) -> Option<Sampler> {
            // SAFETY: valid vocabulary and NUL-terminated strings.
            let ptr = unsafe {
                sys::llama_sampler_init_grammar(self.vocab, text.as_ptr(), c"root".as_ptr())
            };
            (!ptr.is_null()).then_some(Sampler(ptr))
        }

        /// Which tokens the grammar allows now (the whole vocabulary applied).
        fn allowed(&self, sampler: &mut Sampler) -> Vec<bool> {
            let mut data: Vec<sys::llama_token_data> = (0..self.pieces.len() as i32)
                .map(|id| sys::llama_token_data {
                    id,
                    logit: 0.0,
                    p: 0.0,
                })
                .collect();
            let mut array = sys::llama_token_data_array {
                data: data.as_mut_ptr(),
                size: data.len(),
                selected: -1,
                sorted: false,
            };
            // SAFETY: `array` points at `data`, alive for the call.
            unsafe { sys::llama_sampler_apply(sampler.0, &mut array) };
            let mut allowed = vec![false; self.pieces.len()];
            for t in &data {
                allowed[t.id as usize] = t.logit.is_finite();
            }
            allowed
        }

        /// Whether the grammar allows one token now (cheaper than [`Self::allowed`]).
        fn allows(&self, sampler: &mut Sampler, id: usize) -> bool {
            let mut one = sys::llama_token_data {
                id: id as i32,
                logit: 0.0,
                p: 0.0,
            };
            let mut array = sys::llama_token_data_array {
                data: &mut one,
                size: 1,
                selected: -1,
                sorted: false,
            };
            // SAFETY: `array` points at `one`, alive for the call.
            unsafe { sys::llama_sampler_apply(sampler.0, &mut array) };
            one.logit.is_finite()
        }

        fn is_eog(&self, id: usize) -> bool {
            // SAFETY: `id` is a token of the vocabulary.
            unsafe { sys::llama_vocab_is_eog(self.vocab, id as i32) }
        }

        /// Accept a token the grammar allows (unwrapped: an exception aborts).
        fn accept(&self, sampler: &mut Sampler, id: usize) {
            // SAFETY: valid sampler and token.
            unsafe { sys::llama_sampler_accept(sampler.0, id as i32) };
        }

        /// Apply and accept the first allowed token a few times. Reports
        /// `start=ALLOWED/VOCAB` and how many steps were taken.
        fn walk(&self, sampler: &mut Sampler) -> String {
            let mut start = None;
            let mut steps = 0;
            for _ in 0..WALK_STEPS {
                let allowed = self.allowed(sampler);
                start.get_or_insert(allowed.iter().filter(|a| **a).count());
                let Some(id) = (0..allowed.len()).find(|&id| allowed[id] && !self.is_eog(id))
                else {
                    break;
                };
                self.accept(sampler, id);
                steps += 1;
            }
            format!(
                "start={}/{} walked={steps}",
                start.unwrap_or(0),
                self.pieces.len()
            )
        }

        /// The token whose text is exactly `text`.
        fn token(&self, text: &[u8]) -> Result<usize, String> {
            self.pieces
                .iter()
                .position(|p| p == text)
                .ok_or_else(|| format!("no token {:?}", String::from_utf8_lossy(text)))
        }

        /// Feed `check.feed` one character per token, then test `check.then`.
        /// `Ok` says what was seen, `Err` what went otherwise.
        fn check(&self, sampler: &mut Sampler, check: Check) -> Result<String, String> {
            let feed = check.feed.repeat(check.times);
            for (i, byte) in feed.iter().enumerate() {
                let id = self.token(&[*byte])?;
                if !self.allows(sampler, id) {
                    return Err(format!(
                        "byte {byte:#04x} refused after {i} bytes of the feed"
                    ));
                }
                self.accept(sampler, id);
            }
            let allowed = self.allowed(sampler);
            let count = allowed.iter().filter(|a| **a).count();
            let eog = (0..allowed.len()).any(|id| allowed[id] && self.is_eog(id));
            let seen = format!(
                "after {} bytes: {count} allowed, end {}",
                feed.len(),
                if eog { "allowed" } else { "refused" }
            );
            let ok = match check.then {
                After::Everything => count == allowed.len(),
                After::NoEnd => count > 0 && !eog,
                After::OnlyEnd => {
                    eog && (0..allowed.len()).all(|id| !allowed[id] || self.is_eog(id))
                }
                After::Allows(text) => allowed[self.token(text.as_bytes())?],
                After::Refuses(text) => !allowed[self.token(text.as_bytes())?],
                After::Stuck => {
                    if count != 0 {
                        false
                    } else {
                        // What llama.cpp's loop would do next: accept a
                        // token anyway. The exception-catching wrapper tells.
                        let id = (0..allowed.len()).find(|&id| !self.is_eog(id)).unwrap();
                        // SAFETY: valid sampler and token.
                        let status = unsafe { sys::llama_rs_sampler_accept(sampler.0, id as i32) };
                        if status == sys::LLAMA_RS_STATUS_OK {
                            return Err(format!("{seen}, yet accepting a token did not throw"));
                        }
                        return Ok(format!("{seen}; accepting a token throws"));
                    }
                }
            };
            if ok {
                Ok(seen)
            } else {
                Err(seen)
            }
        }
    }
}
