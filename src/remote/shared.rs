//! The llama-server shared by every process of one installation: found, or
//! started under a lock, by the process that needs it.
//!
//! State lives in one directory per installation (mode 0700, owned by the
//! installation's user; another user's processes are refused before they
//! read anything):
//!
//! - `lock`: taken (`flock`) while the server is looked up or started, so
//!   that two processes racing to start it start one;
//! - `server.json`: written by the supervisor (`infer-serve`, see
//!   `src/bin/infer-serve.rs`) once llama-server is started: the
//!   supervisor's and the server's pids, the port, the settings' tag;
//! - `server.sock`: the Unix socket the server listens on (mode 0600, in a
//!   directory only this user may enter); with `infer.server_port` set it
//!   listens on 127.0.0.1 instead;
//! - `key`: the API key generated at each start (0600): the server answers
//!   nobody without it (what guards the TCP port; kept for the socket too);
//! - `failed`: why the last start failed, with its tag and time: a request
//!   within [`RETRY_AFTER`] of it gets the same error without a new start
//!   (no restart loop on a bad model);
//! - `clients/<pid>`: one empty file per process that used the server; the
//!   supervisor stops the server when none of them is alive;
//! - `used`: touched at each load of the shared model; the supervisor stops
//!   a server unused for `infer.server_idle` seconds.
//!
//! No PHP here: the binding reads the settings and maps [`SharedError`].

use std::fs;
use std::io::Read as _;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value as Json;

use super::http::{Http, HttpConfig};
use super::private_file::write_private;
use crate::common::error::LoadError;

/// How long after a failed start the same settings fail at once.
pub const RETRY_AFTER: Duration = Duration::from_secs(10);
/// How long a start may take (the model loads before the server answers).
const START_TIMEOUT: Duration = Duration::from_secs(120);

/// The settings of the shared server (php.ini `infer.server_*`).
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// The model it serves.
    pub model: PathBuf,
    /// Sequences decoded together (`--parallel`).
    pub slots: u32,
    /// Threads (`--threads`); 0: llama-server's default.
    pub threads: u32,
    /// The context of each slot, in tokens.
    pub ctx: u32,
    /// The state directory.
    pub dir: PathBuf,
    /// The port on 127.0.0.1; 0: the Unix socket in the state directory.
    pub port: u16,
    /// The server's log; `None`: `server.log` in the state directory.
    pub log: Option<PathBuf>,
    /// Seconds without a request after which the server stops (0: never).
    pub idle: u64,
    /// llama-server, and the supervisor.
    pub server_binary: PathBuf,
    pub supervisor_binary: PathBuf,
}

impl Settings {
    /// What identifies a server started with these settings: a server
    /// started with others is replaced.
    pub fn tag(&self) -> String {
        format!(
            "{}|{}|{}|{}|{}|{}",
            self.model.display(),
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
            .unwrap_or_else(|| self.dir.join("server.log"))
    }
}

/// How to reach a running shared server.
#[derive(Debug, Clone, PartialEq)]
pub struct Endpoint {
    pub url: String,
    /// The Unix socket to reach it through (`None`: TCP on 127.0.0.1).
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

/// The running server for `settings`, started if none runs.
pub fn ensure(settings: &Settings) -> Result<Endpoint, SharedError> {
    let dir = &settings.dir;
    prepare_dir(dir)?;
    let _lock = Lock::take(&dir.join("lock"))?;
    let tag = settings.tag();
    if let Some(running) = read_running(dir) {
        // A removed socket makes the server unreachable: start another.
        let reachable = running.port != 0 || socket_path(dir).exists();
        if running.tag == tag && running.serving() && reachable {
            let key = read_small(&dir.join("key")).map_err(|e| SharedError::Directory {
                dir: dir.clone(),
                problem: format!("has no readable key: {e}"),
            })?;
            register(dir);
            touch(dir);
            let (url, socket) = address(dir, running.port);
            return Ok(Endpoint {
                url,
                socket,
                api_key: key,
                server_pid: running.server,
            });
        }
        // Another settings' server, or a half-dead one: stop what is left.
        retire(dir, &running);
    }
    if let Some(failure) = recent_failure(dir, &tag) {
        return Err(failure);
    }
    let started = start(settings);
    match &started {
        // A server that failed to start is not started again at once; a
        // setting or a file that is wrong is found again without a start.
        Err(e @ SharedError::StartFailed { .. }) => record_failure(dir, &tag, e),
        Err(_) => {}
        Ok(_) => {
            let _forgotten = fs::remove_file(dir.join("failed")).is_ok();
        }
    }
    started
}

/// The socket in the state directory the server listens on when no port is
/// set.
fn socket_path(dir: &Path) -> PathBuf {
    dir.join("server.sock")
}

/// The URL and socket of a server on `port` (0: the Unix socket).
fn address(dir: &Path, port: u16) -> (String, Option<PathBuf>) {
    match port {
        0 => ("http://localhost".to_owned(), Some(socket_path(dir))),
        p => (format!("http://127.0.0.1:{p}"), None),
    }
}

/// Mark the server used now (the supervisor's idle clock).
fn touch(dir: &Path) {
    let _touched = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(dir.join("used"))
        .and_then(|f| f.set_modified(SystemTime::now()))
        .is_ok();
}

struct Running {
    supervisor: u32,
    server: u32,
    port: u16,
    tag: String,
    /// How llama-server ended, once it has (the supervisor then exits).
    exited: Option<String>,
}

impl Running {
    fn serving(&self) -> bool {
        self.exited.is_none() && alive(self.supervisor) && alive(self.server)
    }
}

fn read_running(dir: &Path) -> Option<Running> {
    let text = read_small(&dir.join("server.json")).ok()?;
    let v: Json = serde_json::from_str(&text).ok()?;
    let pid = |k: &str| v.get(k)?.as_u64().and_then(|n| u32::try_from(n).ok());
    Some(Running {
        supervisor: pid("supervisor")?,
        server: pid("server")?,
        port: v
            .get("port")?
            .as_u64()
            .and_then(|p| u16::try_from(p).ok())?,
        tag: v.get("tag")?.as_str()?.to_owned(),
        exited: v.get("exited").and_then(Json::as_str).map(str::to_owned),
    })
}

/// Stop a supervisor that is still there (it stops its server), and forget
/// the record.
fn retire(dir: &Path, running: &Running) {
    if running.exited.is_none() && alive(running.supervisor) {
        signal(running.supervisor, libc::SIGTERM);
        let begin = Instant::now();
        while alive(running.supervisor) && begin.elapsed() < Duration::from_secs(8) {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    if running.exited.is_none() && alive(running.server) {
        signal(running.server, libc::SIGKILL);
    }
    let _gone = fs::remove_file(dir.join("server.json")).is_ok();
}

fn start(settings: &Settings) -> Result<Endpoint, SharedError> {
    let dir = &settings.dir;
    crate::engine::model::check_file(&settings.model)
        .map_err(|e| SharedError::Model(e.to_string()))?;
    for (what, path) in [
        ("llama-server", &settings.server_binary),
        ("supervisor", &settings.supervisor_binary),
    ] {
        let runnable = fs::metadata(path).map_err(|e| e.to_string()).and_then(|m| {
            if m.is_file() && m.permissions().mode() & 0o111 != 0 {
                Ok(())
            } else {
                Err("not an executable file".to_owned())
            }
        });
        if let Err(reason) = runnable {
            return Err(SharedError::Binary {
                what,
                path: path.clone(),
                reason,
            });
        }
    }
    let key = new_key()
        .and_then(|key| write_private(&dir.join("key"), key.as_bytes()).map(|()| key))
        .map_err(|e| SharedError::Directory {
            dir: dir.clone(),
            problem: format!("cannot hold a new key: {e}"),
        })?;
    let port = settings.port;
    let (url, socket) = address(dir, port);
    // llama-server listens on a path that ends in .sock (mode 0600, set by
    // the supervisor), or on 127.0.0.1.
    let listen: Vec<String> = match &socket {
        Some(path) => {
            let _stale = fs::remove_file(path).is_ok();
            vec!["--host".into(), path.display().to_string()]
        }
        None => vec![
            "--host".into(),
            "127.0.0.1".into(),
            "--port".into(),
            port.to_string(),
        ],
    };
    let log = settings.log_path();
    let mut server_args: Vec<String> = vec![
        settings.server_binary.display().to_string(),
        "--model".into(),
        settings.model.display().to_string(),
    ];
    server_args.extend(listen);
    server_args.extend([
        "--api-key-file".into(),
        dir.join("key").display().to_string(),
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
        // (BENCHMARKS.md, "One server for every PHP-FPM worker").
        "--cache-ram".into(),
        "0".into(),
    ]);
    if settings.threads > 0 {
        server_args.push("--threads".into());
        server_args.push(settings.threads.to_string());
    }
    // The same client as the calls, asked once at a time, briefly.
    let probe = Http::new(HttpConfig {
        base: url.clone(),
        api_key: None,
        timeout: Duration::from_secs(2),
        retries: 0,
        verify_tls: true,
        unix_socket: socket.clone(),
    });
    let before = log_len(&log);
    // A client from the start: the supervisor stops a server nobody uses.
    register(dir);
    let status = Command::new(&settings.supervisor_binary)
        .arg("--dir")
        .arg(dir)
        .arg("--port")
        .arg(port.to_string())
        .args(
            socket
                .iter()
                .flat_map(|path| [std::ffi::OsStr::new("--socket"), path.as_os_str()]),
        )
        .arg("--tag")
        .arg(settings.tag())
        .arg("--idle")
        .arg(settings.idle.to_string())
        .arg("--log")
        .arg(&log)
        .arg("--")
        .args(&server_args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| SharedError::Binary {
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
        let running = read_running(dir);
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
            Some(r) if probe.get_json("/health", "llama-server").is_ok() => {
                touch(dir);
                return Ok(Endpoint {
                    url,
                    socket,
                    api_key: key,
                    server_pid: r.server,
                });
            }
            _ => {}
        }
        if running.is_none() && begin.elapsed() > Duration::from_secs(10) {
            return Err(SharedError::StartFailed {
                detail: format!("the supervisor wrote no record: {}", log_tail(&log, before)),
                log,
            });
        }
        if begin.elapsed() > START_TIMEOUT {
            if let Some(r) = &running {
                retire(dir, r);
            }
            return Err(SharedError::StartFailed {
                detail: format!("not ready within {} s", START_TIMEOUT.as_secs()),
                log,
            });
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Create the directory (0700) or check that this user owns it and nobody
/// else may write or read it.
fn prepare_dir(dir: &Path) -> Result<(), SharedError> {
    let problem = |p: String| SharedError::Directory {
        dir: dir.to_path_buf(),
        problem: p,
    };
    match fs::symlink_metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let mut builder = fs::DirBuilder::new();
            builder.recursive(true).mode(0o700);
            builder
                .create(dir)
                .map_err(|e| problem(format!("cannot be created: {e}")))?;
        }
        Err(e) => return Err(problem(format!("cannot be read: {e}"))),
        Ok(meta) => {
            // SAFETY: getuid has no failure mode.
            let me = unsafe { libc::geteuid() };
            if !meta.is_dir() {
                return Err(problem("is not a directory".to_owned()));
            }
            if meta.uid() != me {
                return Err(problem(format!(
                    "belongs to user {}, not to this process's user {me}: the shared server serves one user's processes only",
                    meta.uid()
                )));
            }
            if meta.mode() & 0o077 != 0 {
                return Err(problem(format!(
                    "may be read or written by other users (mode {:o}); it must be 0700",
                    meta.mode() & 0o777
                )));
            }
        }
    }
    let clients = dir.join("clients");
    if !clients.is_dir() {
        let mut builder = fs::DirBuilder::new();
        builder.mode(0o700);
        builder
            .create(&clients)
            .or_else(|e| if clients.is_dir() { Ok(()) } else { Err(e) })
            .map_err(|e| problem(format!("cannot hold clients/: {e}")))?;
    }
    Ok(())
}

/// Note this process as a client of the server.
fn register(dir: &Path) {
    let path = dir.join("clients").join(std::process::id().to_string());
    if !path.exists() {
        let _created = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(path)
            .is_ok();
    }
}

fn recent_failure(dir: &Path, tag: &str) -> Option<SharedError> {
    let text = read_small(&dir.join("failed")).ok()?;
    let v: Json = serde_json::from_str(&text).ok()?;
    if v.get("tag")?.as_str()? != tag {
        return None;
    }
    let at = v.get("at")?.as_u64()?;
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .ok()?
        .as_secs();
    if now.saturating_sub(at) >= RETRY_AFTER.as_secs() {
        return None;
    }
    let message = v.get("error")?.as_str()?.to_owned();
    Some(SharedError::StartFailed {
        detail: format!(
            "{message}; the last start failed {} s ago, the next is tried {} s after it",
            now.saturating_sub(at),
            RETRY_AFTER.as_secs()
        ),
        log: PathBuf::from(v.get("log")?.as_str()?),
    })
}

fn record_failure(dir: &Path, tag: &str, error: &SharedError) {
    let (message, log) = match error {
        SharedError::StartFailed { detail, log } => (detail.clone(), log.display().to_string()),
        other => (other.to_string(), String::new()),
    };
    let at = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let record = serde_json::json!({"tag": tag, "at": at, "error": message, "log": log});
    let _written = write_private(&dir.join("failed"), record.to_string().as_bytes()).is_ok();
}

/// 32 random bytes from the kernel, as hex.
fn new_key() -> std::io::Result<String> {
    let mut bytes = [0u8; 32];
    fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// A small state file, refused past 64 KiB.
fn read_small(path: &Path) -> std::io::Result<String> {
    let mut text = String::new();
    fs::File::open(path)?
        .take(64 * 1024)
        .read_to_string(&mut text)?;
    Ok(text.trim().to_owned())
}

fn log_len(log: &Path) -> u64 {
    fs::metadata(log).map_or(0, |m| m.len())
}

/// The last lines the log got since `from` (at most 2 KiB).
fn log_tail(log: &Path, from: u64) -> String {
    let Ok(bytes) = fs::read(log) else {
        return "its log is unreadable".to_owned();
    };
    let start = usize::try_from(from).unwrap_or(0).min(bytes.len());
    let new = String::from_utf8_lossy(&bytes[start..]);
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

/// Whether the process runs: it exists and has not exited (a killed
/// server stays a zombie until its supervisor reaps it).
fn alive(pid: u32) -> bool {
    let Ok(id) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: signal 0 only asks whether the process exists.
    if id <= 0 || unsafe { libc::kill(id, 0) } != 0 {
        return false;
    }
    // The state follows the command name, which is in parentheses.
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_none_or(|(_, rest)| !rest.starts_with('Z')),
        Err(_) => true,
    }
}

fn signal(pid: u32, sig: libc::c_int) {
    if let Ok(pid) = libc::pid_t::try_from(pid) {
        if pid > 0 {
            // SAFETY: signalling a process this installation started.
            unsafe { libc::kill(pid, sig) };
        }
    }
}

/// An exclusive `flock` on a file, released when dropped.
struct Lock {
    _file: fs::File,
}

impl Lock {
    fn take(path: &Path) -> Result<Lock, SharedError> {
        let file = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(path)
            .map_err(|e| SharedError::Directory {
                dir: path.parent().map(Path::to_path_buf).unwrap_or_default(),
                problem: format!("cannot hold its lock: {e}"),
            })?;
        use std::os::fd::AsRawFd as _;
        // SAFETY: a valid descriptor owned by `file`.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(SharedError::Directory {
                dir: path.parent().map(Path::to_path_buf).unwrap_or_default(),
                problem: format!("cannot be locked: {}", std::io::Error::last_os_error()),
            });
        }
        Ok(Lock { _file: file })
    }
}
