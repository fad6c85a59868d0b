//! Judging the grammars of llama.cpp's own JSON-schema converter in a child
//! process, so that one that hangs llama.cpp's grammar engine or makes it
//! exhaust memory costs that schema, not the run.
//!
//! The child is the benchmark binary itself, started with [`WORKER_FLAG`]:
//! it limits its address space to [`MEMORY_LIMIT`] bytes, loads the model's
//! vocabulary once, and then reads one request per line on stdin (a schema to
//! convert with llama.cpp's converter, or a grammar and the texts to try) and
//! answers one line on stdout. The conversion runs there too: on some schemas
//! llama.cpp's converter itself grows without bound. The parent gives each
//! request a wall-clock limit; a worker that overruns it is killed, one that
//! dies is noted, and either is replaced by a fresh one.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::Duration;

use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use llama_cpp_2::token::LlamaToken;
use serde_json::{json, Value};

/// The hidden flag that turns the benchmark binary into a worker.
pub const WORKER_FLAG: &str = "--baseline-worker";

/// The worker's address-space limit (`RLIMIT_AS`), its stack included.
pub const MEMORY_LIMIT: u64 = 4 << 30;

/// The worker thread's stack: llama.cpp's grammar engine recurses deeply.
const WORKER_STACK: usize = 512 << 20;

/// The worker's exit status when C++ `operator new` fails under the limit.
const OUT_OF_MEMORY_EXIT: i32 = 86;

/// Protocol lines start with this; anything else on the worker's stdout is
/// ignored.
const PREFIX: &str = "@@";

/// How long a fresh worker may take to load the vocabulary.
const START_LIMIT: Duration = Duration::from_secs(120);

/// Why a request got no answer.
pub enum Failure {
    TimedOut,
    /// C++ `operator new` failed under [`MEMORY_LIMIT`].
    OutOfMemory,
    /// The worker died otherwise (a signal, or an unexpected exit).
    Crashed(String),
}

/// What llama.cpp's converter made of one schema.
pub enum Conversion {
    Grammar(String),
    /// It refused the schema (an exception other than out of memory).
    Rejected,
    Failed(Failure),
}

/// What became of one grammar.
pub enum Outcome {
    /// Loaded; whether each text was accepted.
    Judged(Vec<bool>),
    /// llama.cpp's grammar parser refused it.
    Refused,
    Failed(Failure),
}

/// The parent's handle on a worker process.
pub struct Worker {
    model: String,
    child: Child,
    stdin: ChildStdin,
    replies: Receiver<String>,
}

impl Worker {
    pub fn start(model: &str) -> Result<Self, String> {
        let exe = std::env::current_exe().map_err(|e| format!("cannot find own binary: {e}"))?;
        let mut child = Command::new(exe)
            .arg(WORKER_FLAG)
            .arg(model)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            // llama.cpp's grammar parser prints its errors there.
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start the baseline worker: {e}"))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err("the baseline worker has no stdin/stdout pipe".to_owned());
        };
        let (tx, replies) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(reply) = line.strip_prefix(PREFIX) {
                    if tx.send(reply.to_owned()).is_err() {
                        break;
                    }
                }
            }
        });
        let mut worker = Self {
            model: model.to_owned(),
            child,
            stdin,
            replies,
        };
        match worker.replies.recv_timeout(START_LIMIT) {
            Ok(reply) if reply == "ready" => Ok(worker),
            Ok(reply) => {
                worker.stop();
                Err(format!("the baseline worker failed to start: {reply}"))
            }
            Err(_) => {
                worker.stop();
                Err("the baseline worker did not start".to_owned())
            }
        }
    }

    fn stop(&mut self) -> Option<ExitStatus> {
        let _ = self.child.kill();
        self.child.wait().ok()
    }

    fn restart(&mut self) -> Result<(), String> {
        self.stop();
        *self = Self::start(&self.model)?;
        Ok(())
    }

    /// Convert `schema` (JSON text) with llama.cpp's converter, within `limit`.
    pub fn convert(&mut self, schema: &str, limit: Duration) -> Result<Conversion, String> {
        Ok(match self.request(&json!({ "convert": schema }), limit)? {
            Reply::Answer(reply) => match reply.get("gbnf").and_then(Value::as_str) {
                Some(gbnf) => Conversion::Grammar(gbnf.to_owned()),
                None => Conversion::Rejected,
            },
            Reply::Failed(failure) => Conversion::Failed(failure),
        })
    }

    /// Load `gbnf` in the worker and try each text, within `limit`.
    pub fn judge(
        &mut self,
        gbnf: &str,
        texts: &[String],
        limit: Duration,
    ) -> Result<Outcome, String> {
        let reply = match self.request(&json!({ "gbnf": gbnf, "texts": texts }), limit)? {
            Reply::Answer(reply) => reply,
            Reply::Failed(failure) => return Ok(Outcome::Failed(failure)),
        };
        if reply.get("loaded").and_then(Value::as_bool) != Some(true) {
            return Ok(Outcome::Refused);
        }
        let accepted: Vec<bool> = reply
            .get("accepted")
            .and_then(Value::as_array)
            .map(|a| a.iter().map(|b| b.as_bool() == Some(true)).collect())
            .unwrap_or_default();
        if accepted.len() != texts.len() {
            return Err(format!(
                "the baseline worker judged {} texts of {}",
                accepted.len(),
                texts.len()
            ));
        }
        Ok(Outcome::Judged(accepted))
    }

    /// Send one request and wait up to `limit` for its answer.
    fn request(&mut self, request: &Value, limit: Duration) -> Result<Reply, String> {
        let sent = writeln!(self.stdin, "{request}").and_then(|()| self.stdin.flush());
        if sent.is_err() {
            return self.died();
        }
        match self.replies.recv_timeout(limit) {
            Ok(reply) => serde_json::from_str(&reply)
                .map(Reply::Answer)
                .map_err(|e| format!("unreadable reply from the baseline worker: {e}")),
            Err(RecvTimeoutError::Timeout) => {
                self.restart()?;
                Ok(Reply::Failed(Failure::TimedOut))
            }
            Err(RecvTimeoutError::Disconnected) => self.died(),
        }
    }

    /// The worker exited under a request: why, then a fresh worker.
    fn died(&mut self) -> Result<Reply, String> {
        use std::os::unix::process::ExitStatusExt;
        let status = self.child.wait().ok();
        let failure = match status {
            Some(s) if s.code() == Some(OUT_OF_MEMORY_EXIT) => Failure::OutOfMemory,
            Some(s) => Failure::Crashed(match (s.signal(), s.code()) {
                (Some(6), _) => "SIGABRT".to_owned(),
                (Some(11), _) => "SIGSEGV".to_owned(),
                (Some(sig), _) => format!("signal {sig}"),
                (None, Some(code)) => format!("exit {code}"),
                (None, None) => "unknown".to_owned(),
            }),
            None => Failure::Crashed("unknown".to_owned()),
        };
        self.restart()?;
        Ok(Reply::Failed(failure))
    }
}

/// A worker's answer, or why there is none.
enum Reply {
    Answer(Value),
    Failed(Failure),
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.stop();
    }
}

extern "C" {
    /// `std::set_new_handler` (libstdc++, linked in with llama.cpp).
    #[link_name = "_ZSt15set_new_handlerPFvvE"]
    fn set_new_handler(handler: Option<extern "C" fn()>) -> Option<extern "C" fn()>;
}

/// Called by C++ `operator new` when an allocation fails: leave with a
/// status the parent reads as "out of memory" (the C++ wrappers of
/// llama-cpp-2 would otherwise catch `std::bad_alloc` and report a mere
/// rejection).
extern "C" fn out_of_memory() {
    // SAFETY: `_exit` is async-signal-safe and ends the process at once.
    unsafe { libc::_exit(OUT_OF_MEMORY_EXIT) }
}

/// The worker process: never returns.
pub fn worker_main(model: String) -> ! {
    let status = match std::thread::Builder::new()
        .stack_size(WORKER_STACK)
        .spawn(move || serve(&model))
    {
        Ok(thread) => match thread.join() {
            Ok(Ok(())) => 0,
            Ok(Err(_)) | Err(_) => 1,
        },
        Err(_) => 1,
    };
    std::process::exit(status)
}

fn serve(model_path: &str) -> Result<(), ()> {
    // Protocol on a copy of stdout; fd 1 itself goes to stderr, so that
    // nothing llama.cpp prints can be mistaken for a reply.
    // SAFETY: plain fd and rlimit calls on this process's own descriptors.
    let protocol_fd = unsafe {
        let limit = libc::rlimit {
            rlim_cur: MEMORY_LIMIT,
            rlim_max: MEMORY_LIMIT,
        };
        libc::setrlimit(libc::RLIMIT_AS, &limit);
        set_new_handler(Some(out_of_memory));
        let fd = libc::dup(1);
        libc::dup2(2, 1);
        fd
    };
    if protocol_fd < 0 {
        return Err(());
    }
    // SAFETY: `protocol_fd` is a fresh descriptor that nothing else owns.
    let mut out = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(protocol_fd) };
    let mut reply = |text: String| -> Result<(), ()> {
        writeln!(out, "{PREFIX}{text}")
            .and_then(|()| out.flush())
            .map_err(|_| ())
    };
    let backend = match LlamaBackend::init() {
        Ok(b) => b,
        Err(e) => return reply(format!("backend: {e}")),
    };
    let params = LlamaModelParams::default().with_vocab_only(true);
    let model = match LlamaModel::load_from_file(&backend, model_path, &params) {
        Ok(m) => m,
        Err(e) => return reply(format!("cannot load {model_path}: {e}")),
    };
    reply("ready".to_owned())?;
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { return Err(()) };
        let request: Value = serde_json::from_str(&line).map_err(|_| ())?;
        if let Some(schema) = request.get("convert").and_then(Value::as_str) {
            let answer = match llama_cpp_2::json_schema_to_grammar(schema) {
                Ok(gbnf) => json!({ "gbnf": gbnf }),
                Err(_) => json!({ "rejected": true }),
            };
            reply(answer.to_string())?;
            continue;
        }
        let gbnf = request.get("gbnf").and_then(Value::as_str).unwrap_or("");
        let answer = match LlamaSampler::grammar(&model, gbnf, "root") {
            Err(_) => json!({ "loaded": false }),
            Ok(mut grammar) => {
                let accepted: Vec<bool> = request
                    .get("texts")
                    .and_then(Value::as_array)
                    .map(|texts| {
                        texts
                            .iter()
                            .map(|t| accepts(&model, &mut grammar, t.as_str().unwrap_or("")))
                            .collect()
                    })
                    .unwrap_or_default();
                json!({ "loaded": true, "accepted": accepted })
            }
        };
        reply(answer.to_string())?;
    }
    Ok(())
}

/// Whether the grammar accepts exactly `text`: every token allowed in turn,
/// then end-of-generation (as `infer::engine::decode::probe::LoadedGrammar::accepts`).
fn accepts(model: &LlamaModel, grammar: &mut LlamaSampler, text: &str) -> bool {
    grammar.reset();
    let vocab = model.vocab();
    for token in vocab.tokenize(text.as_bytes(), false, false) {
        if !allows(grammar, token) || grammar.try_accept(token).is_err() {
            return false;
        }
    }
    allows(grammar, vocab.eos())
}

fn allows(grammar: &mut LlamaSampler, token: LlamaToken) -> bool {
    let mut one = LlamaTokenDataArray::new(vec![LlamaTokenData::new(token, 0.0, 0.0)], false);
    grammar.apply(&mut one);
    one.data.first().is_some_and(|t| t.logit().is_finite())
}
