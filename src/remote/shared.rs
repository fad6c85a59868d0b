//! The llama-server shared by every process of one installation: found, or
//! started under a lock, by the process that needs it.
//!
//! State lives in one directory per installation, opened and checked as a
//! [`PrivateDir`] (mode 0700, this user's, reached without a symbolic link
//! through parents nobody else may change); its files are written and read
//! by `infer_shared::state`, which the supervisor links too:
//!
//! - `lock`: taken (`flock`, a bounded wait) while the server is looked up
//!   or started, so that two processes racing to start it start one;
//! - `server.json`: written by the supervisor (`infer-serve`, see
//!   `src/bin/infer-serve.rs`) once llama-server is started: the
//!   supervisor and the server, each as pid and start time, the boot, the
//!   settings' tag. Nobody is signalled or trusted on its word alone: the
//!   processes it names must be the very ones it was written for;
//! - `server.sock`: the Unix socket the server listens on (mode 0600), the
//!   only way to it: a TCP port could be taken first by another user;
//! - `key`: the API key generated at each start (0600);
//! - `failed`: why the last start failed, with its tag and time: a request
//!   within [`RETRY_AFTER`] of it gets the same error without a new start
//!   (no restart loop on a bad model);
//! - `clients/<pid>`: one file per process that used the server, holding its
//!   start time; the supervisor stops the server when none of them runs;
//! - `used`: touched at each load of the shared model; the supervisor stops
//!   a server unused for `infer.server_idle` seconds.
//!
//! The supervisor starts with the environment captured when the extension
//! started ([`capture_environment`], from MINIT: nothing a script `putenv()`s
//! reaches it), no descriptor of the PHP process and a process group of its
//! own.
//!
//! No PHP here: the binding reads the settings and maps [`SharedError`].

use std::ffi::OsString;
use std::io::{Read as _, Seek as _};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime};

use super::http::{Http, HttpConfig};
use crate::backend::error::LoadError;
use crate::private_dir::{self, LockError, PrivateDir, Rule};
use infer_shared::process::{self, ProcessId};
use infer_shared::state::{self, FailedStart, ServerRecord};

/// How long after a failed start the same settings fail at once.
pub const RETRY_AFTER: Duration = Duration::from_secs(10);
/// How long a start may take by default (the model loads before the server
/// answers): php.ini `infer.server_start_timeout`.
pub const DEFAULT_START_TIMEOUT: Duration = Duration::from_secs(120);

/// The environment the processes the extension starts get, and the
/// temporary directory the default state directory is in: both fixed
/// when the extension starts.
#[derive(Debug)]
struct Captured {
    vars: Vec<(OsString, OsString)>,
}

static CAPTURED: OnceLock<Captured> = OnceLock::new();

/// Take the environment as it is now, once: the binding calls this at
/// MINIT, before any script runs; later calls change nothing.
pub fn capture_environment() {
    captured();
}

fn captured() -> &'static Captured {
    CAPTURED.get_or_init(|| {
        private_dir::startup_temp_dir();
        Captured {
            vars: process::allowed_env(process::startup_environment().iter().cloned()),
        }
    })
}

/// The state directory when php.ini names none: `infer-server-<uid>` in the
/// temporary directory the extension started with.
pub fn default_dir() -> PathBuf {
    private_dir::startup_temp_dir().join(format!("infer-server-{}", private_dir::euid()))
}

/// The settings of the shared server (php.ini `infer.server_*`).
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// The model it serves.
    pub model: PathBuf,
    /// Its image projector (`--mmproj`), if any.
    pub mmproj: Option<PathBuf>,
    /// Its LoRA adapters (`--lora`, each at scale 1 unless a call says).
    pub lora: Vec<PathBuf>,
    /// Sequences decoded together (`--parallel`).
    pub slots: u32,
    /// Threads (`--threads`); 0: llama-server's default.
    pub threads: u32,
    /// The context of each slot, in tokens.
    pub ctx: u32,
    /// The state directory.
    pub dir: PathBuf,
    /// The server's log; `None`: `server.log` in the state directory.
    pub log: Option<PathBuf>,
    /// Seconds without a request after which the server stops (0: never).
    pub idle: u64,
    /// How long a start may take before it is given up.
    pub start_timeout: Duration,
    /// llama-server, and the supervisor.
    pub server_binary: PathBuf,
    pub supervisor_binary: PathBuf,
}

impl Settings {
    /// What identifies a server started with these settings: a server
    /// started with others is replaced.
    pub fn tag(&self) -> String {
        format!(
            "{}|{}|{}|{}|{}|{}|{}|{}",
            self.model.display(),
            self.mmproj.as_deref().unwrap_or(Path::new("")).display(),
            self.lora
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(":"),
            self.slots,
            self.threads,
            self.ctx,
            self.server_binary.display(),
            self.idle
        )
    }

    fn log_path(&self) -> PathBuf {
        self.log
            .clone()
            .unwrap_or_else(|| self.dir.join(state::LOG))
    }

    /// How long a load waits for another process's start.
    fn lock_wait(&self) -> Duration {
        self.start_timeout + Duration::from_secs(10)
    }
}

/// How to reach a running shared server.
#[derive(Debug, Clone, PartialEq)]
pub struct Endpoint {
    pub url: String,
    /// The Unix socket to reach it through.
    pub socket: Option<PathBuf>,
    pub api_key: String,
    /// The server's pid (for `info()` and the tests).
    pub server_pid: u32,
}

/// Why the shared server cannot be used.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum SharedError {
    #[error("the shared server's directory {} {problem}", .dir.display())]
    Directory { dir: PathBuf, problem: String },
    #[error("the shared server's {what} {} cannot be run: {reason}", .path.display())]
    Binary {
        what: &'static str,
        path: PathBuf,
        reason: String,
    },
    #[error("the shared server could not start: {detail} (its log: {})", .log.display())]
    StartFailed { detail: String, log: PathBuf },
    #[error("the shared server's model is unusable: {0}")]
    Model(String),
}

impl From<SharedError> for LoadError {
    fn from(e: SharedError) -> Self {
        LoadError::Shared {
            detail: e.to_string(),
        }
    }
}

fn dir_error(dir: &Path, problem: impl std::fmt::Display) -> SharedError {
    SharedError::Directory {
        dir: dir.to_path_buf(),
        problem: problem.to_string(),
    }
}

/// The running server for `settings`, started if none runs, and its state
/// directory (the calls mark it in use there).
pub fn ensure(settings: &Settings) -> Result<(Endpoint, PrivateDir), SharedError> {
    let dir = PrivateDir::open(&settings.dir, Rule::Private, true)
        .map_err(|p| dir_error(&settings.dir, p))?;
    let clients = dir.subdir(state::CLIENTS, Rule::Private).map_err(|p| {
        dir_error(
            &settings.dir,
            format!("cannot hold {}/: {p}", state::CLIENTS),
        )
    })?;
    let _lock = dir.lock(state::LOCK, settings.lock_wait()).map_err(|e| match e {
        LockError::Held(wait) => dir_error(
            &settings.dir,
            format!(
                "is locked by another process for over {} s (php.ini infer.server_start_timeout, plus 10 s)",
                wait.as_secs()
            ),
        ),
        LockError::Open(e) => dir_error(&settings.dir, format!("cannot hold its lock: {e}")),
    })?;
    let tag = settings.tag();
    if let Some(running) = ServerRecord::read(&dir) {
        if running.tag == tag && running.serving() && state::socket_answers(&dir) {
            let key = dir
                .read_small(state::KEY, state::MAX_STATE_FILE)
                .map_err(|e| dir_error(&settings.dir, format!("has no readable key: {e}")))?;
            register(&clients);
            state::mark_used(&dir);
            let endpoint = endpoint(&dir, key, running.server.pid);
            return Ok((endpoint, dir));
        }
        // Another settings' server, a half-dead one or one that no longer
        // accepts connections: stop what is left of it.
        retire(&dir, &running);
    }
    if let Some(failure) = recent_failure(&dir, &tag) {
        return Err(failure);
    }
    let started = start(settings, &dir, &clients);
    match &started {
        // A server that failed to start is not started again at once; a
        // setting or a file that is wrong is found again without a start.
        Err(e @ SharedError::StartFailed { .. }) => record_failure(&dir, &tag, e),
        Err(_) => {}
        Ok(_) => FailedStart::clear(&dir),
    }
    started.map(|endpoint| (endpoint, dir))
}

fn endpoint(dir: &PrivateDir, api_key: String, server_pid: u32) -> Endpoint {
    Endpoint {
        url: "http://localhost".to_owned(),
        socket: Some(dir.join(state::SOCKET)),
        api_key,
        server_pid,
    }
}

/// Stop the supervisor and the server a record names, when they are the
/// processes it was written for (it stops its server), and forget the
/// record. Processes that merely have their pids now are left alone.
fn retire(dir: &PrivateDir, running: &ServerRecord) {
    if running.exited.is_none() && running.this_boot() && running.supervisor.signal(libc::SIGTERM) {
        let begin = Instant::now();
        while running.supervisor.running() && begin.elapsed() < Duration::from_secs(8) {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    if running.exited.is_none() && running.this_boot() {
        let _killed = running.server.signal(libc::SIGKILL);
    }
    ServerRecord::remove(dir);
}

fn start(
    settings: &Settings,
    dir: &PrivateDir,
    clients: &PrivateDir,
) -> Result<Endpoint, SharedError> {
    crate::backend::model_file::check_file(&settings.model)
        .map_err(|e| SharedError::Model(e.to_string()))?;
    for adapter in &settings.lora {
        crate::backend::model_file::check_file(adapter)
            .map_err(|e| SharedError::Model(format!("infer.server_lora: {e}")))?;
    }
    for (what, path) in [
        ("llama-server", &settings.server_binary),
        ("supervisor", &settings.supervisor_binary),
    ] {
        process::runnable(path).map_err(|e| SharedError::Binary {
            what,
            path: path.clone(),
            reason: e.to_string(),
        })?;
    }
    let key = new_key()
        .and_then(|key| dir.write_atomic(state::KEY, key.as_bytes()).map(|()| key))
        .map_err(|e| dir_error(&settings.dir, format!("cannot hold a new key: {e}")))?;
    let _stale = dir.remove(state::SOCKET).is_ok();
    let socket = dir.join(state::SOCKET);
    let log = settings.log_path();
    // llama-server listens on a path that ends in .sock (mode 0600, set by
    // the supervisor).
    let mut server_args: Vec<String> = vec![
        settings.server_binary.display().to_string(),
        "--model".into(),
        settings.model.display().to_string(),
        "--host".into(),
        socket.display().to_string(),
        "--api-key-file".into(),
        dir.join(state::KEY).display().to_string(),
        "--parallel".into(),
        settings.slots.to_string(),
        "--ctx-size".into(),
        (u64::from(settings.ctx) * u64::from(settings.slots)).to_string(),
        "--no-webui".into(),
        // As every context this extension creates: greedy replies then match
        // the in-process ones token for token.
        "--flash-attn".into(),
        "off".into(),
        // Its threads sleep between batches instead of spinning: they share
        // the cores with the PHP workers (as the engine's own pool threads).
        "--poll".into(),
        "0".into(),
        // No host-memory copy of finished prompts (up to 8 GiB by default):
        // each slot keeps its own prefix, and the installation's memory
        // stays what the slots take. Neither changes tokens/s measurably
        // (docs/benchmarks/remote.md, "One server for every PHP-FPM worker").
        "--cache-ram".into(),
        "0".into(),
    ];
    if let Some(mmproj) = &settings.mmproj {
        server_args.push("--mmproj".into());
        server_args.push(mmproj.display().to_string());
    }
    for adapter in &settings.lora {
        server_args.push("--lora".into());
        server_args.push(adapter.display().to_string());
    }
    if settings.threads > 0 {
        server_args.push("--threads".into());
        server_args.push(settings.threads.to_string());
    }
    // The same client as the calls, asked once at a time, briefly.
    let probe = Http::new(HttpConfig {
        base: "http://localhost".to_owned(),
        api_key: None,
        timeout: Duration::from_secs(2),
        max_response: super::limits::DEFAULT_MAX_RESPONSE,
        retries: 0,
        verify_tls: true,
        unix_socket: Some(socket.clone()),
    });
    let before = log_len(&log);
    // A client from the start: the supervisor stops a server nobody uses.
    register(clients);
    let mut supervisor = Command::new(&settings.supervisor_binary);
    supervisor
        .arg("--dir")
        .arg(dir.path())
        .arg("--tag")
        .arg(settings.tag())
        .arg("--idle")
        .arg(settings.idle.to_string())
        .arg("--log")
        .arg(&log)
        .arg("--")
        .args(&server_args)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // The supervisor shuts every descriptor it was given before anything
    // else: no pre_exec closure, so that its environment block is `vars`
    // whatever the PHP executable does with `environ` (see
    // process::spawn_with_env).
    process::spawn_with_env(&mut supervisor, &captured().vars);
    let status = supervisor.status().map_err(|e| SharedError::Binary {
        what: "supervisor",
        path: settings.supervisor_binary.clone(),
        reason: e.to_string(),
    })?;
    if !status.success() {
        return Err(SharedError::StartFailed {
            detail: format!("the supervisor exited with {status}"),
            log,
        });
    }
    let begin = Instant::now();
    loop {
        let running = ServerRecord::read(dir);
        match &running {
            Some(r) if !r.serving() => {
                return Err(SharedError::StartFailed {
                    detail: format!(
                        "llama-server exited while starting: {}",
                        log_tail(&log, before)
                    ),
                    log,
                });
            }
            // llama-server answers 503 while it loads, 200 once it serves.
            Some(r) if probe.get_json("/health", "llama-server", None).is_ok() => {
                state::mark_used(dir);
                return Ok(endpoint(dir, key, r.server.pid));
            }
            _ => {}
        }
        if running.is_none() && begin.elapsed() > Duration::from_secs(10) {
            return Err(SharedError::StartFailed {
                detail: format!("the supervisor wrote no record: {}", log_tail(&log, before)),
                log,
            });
        }
        if begin.elapsed() > settings.start_timeout {
            if let Some(r) = &running {
                retire(dir, r);
            }
            return Err(SharedError::StartFailed {
                detail: format!(
                    "not ready within {} s (php.ini infer.server_start_timeout)",
                    settings.start_timeout.as_secs()
                ),
                log,
            });
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Note this process as a client of the server (its pid and start time).
fn register(clients: &PrivateDir) {
    if let Some(me) = ProcessId::me() {
        state::register(clients, me);
    }
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The last start's failure, when it was with these settings and within
/// [`RETRY_AFTER`].
fn recent_failure(dir: &PrivateDir, tag: &str) -> Option<SharedError> {
    let failed = FailedStart::read(dir).filter(|f| f.tag == tag)?;
    let ago = now_secs().saturating_sub(failed.at);
    if ago >= RETRY_AFTER.as_secs() {
        return None;
    }
    Some(SharedError::StartFailed {
        detail: format!(
            "{}; the last start failed {ago} s ago, the next is tried {} s after it",
            failed.error,
            RETRY_AFTER.as_secs()
        ),
        log: PathBuf::from(failed.log),
    })
}

fn record_failure(dir: &PrivateDir, tag: &str, error: &SharedError) {
    let (error, log) = match error {
        SharedError::StartFailed { detail, log } => (detail.clone(), log.display().to_string()),
        other => (other.to_string(), String::new()),
    };
    FailedStart {
        tag: tag.to_owned(),
        at: now_secs(),
        error,
        log,
    }
    .write(dir);
}

/// 32 random bytes from the kernel, as hex.
fn new_key() -> std::io::Result<String> {
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn log_len(log: &Path) -> u64 {
    std::fs::metadata(log).map_or(0, |m| m.len())
}

/// The last lines the log got since `from` (at most its last 8 KiB are
/// read, 2 KiB kept).
fn log_tail(log: &Path, from: u64) -> String {
    const WINDOW: u64 = 8 * 1024;
    let read = || -> std::io::Result<Vec<u8>> {
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(log)?;
        let len = file.metadata()?.len();
        file.seek(std::io::SeekFrom::Start(
            from.max(len.saturating_sub(WINDOW)),
        ))?;
        let mut bytes = Vec::new();
        file.take(WINDOW).read_to_end(&mut bytes)?;
        Ok(bytes)
    };
    let Ok(bytes) = read() else {
        return "its log is unreadable".to_owned();
    };
    let new = String::from_utf8_lossy(&bytes);
    let lines: Vec<&str> = new.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = lines[lines.len().saturating_sub(4)..].join(" / ");
    let mut tail: String = tail
        .chars()
        .rev()
        .take(2048)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    if tail.is_empty() {
        tail = "it wrote nothing".to_owned();
    }
    tail
}
