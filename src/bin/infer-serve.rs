//! `infer-serve`: the supervisor of the llama-server that the PHP processes
//! of one installation share (`Model::load($path, ['shared' => true])`,
//! php.ini `infer.server_model`). It is started by the first process that
//! needs the server (see `src/remote/shared.rs`), and it:
//!
//! - leaves that process at once (it forks, and the parent exits, so that the
//!   PHP worker reaps it and never waits for it), in a session of its own;
//! - starts llama-server with its output appended to the log file, and writes
//!   `server.json` in the state directory (its pid, the server's, the port,
//!   the settings' tag) atomically, mode 0600;
//! - every quarter of a second: when the server has exited, it marks
//!   `server.json` so (`"exited"`) and exits (the next request starts a new
//!   one); when the
//!   state directory no longer names it, when no registered client process
//!   (`clients/<pid>`) has been alive for two seconds, when nobody has used
//!   the server for the idle time (the `used` file's age), or on SIGTERM, it
//!   stops the server (SIGTERM, then SIGKILL after five seconds) and exits.
//!
//! Usage: `infer-serve --dir DIR --port N [--socket PATH] --tag TAG --idle
//! SECONDS --log FILE -- LLAMA_SERVER ARGS...` (`--socket`: the Unix socket
//! the server listens on, made mode 0600 as soon as it exists). It takes no other input and serves
//! nothing itself.

use std::ffi::OsString;
use std::fs;
use std::io::Write as _;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

/// How long no registered client may be alive before the server stops.
const ORPHAN_GRACE: Duration = Duration::from_secs(2);
/// How often the supervisor looks.
const TICK: Duration = Duration::from_millis(250);
/// How long a stopping server gets before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(5);

#[path = "../remote/private_file.rs"]
mod private_file;

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

struct Args {
    dir: PathBuf,
    port: u16,
    socket: Option<PathBuf>,
    tag: String,
    idle: u64,
    log: PathBuf,
    server: Vec<OsString>,
}

fn parse() -> Result<Args, String> {
    let mut it = std::env::args_os().skip(1);
    let (mut dir, mut port, mut tag, mut idle, mut log) = (None, None, None, 0u64, None);
    let mut socket = None;
    let mut server = Vec::new();
    while let Some(arg) = it.next() {
        let arg = arg.to_string_lossy().into_owned();
        if arg == "--" {
            server.extend(it.by_ref());
            break;
        }
        let value = it.next().ok_or_else(|| format!("{arg} needs a value"))?;
        match arg.as_str() {
            "--dir" => dir = Some(PathBuf::from(value)),
            "--log" => log = Some(PathBuf::from(value)),
            "--socket" => socket = Some(PathBuf::from(value)),
            "--tag" => tag = Some(value.to_string_lossy().into_owned()),
            "--port" => {
                port = Some(
                    value
                        .to_string_lossy()
                        .parse()
                        .map_err(|_| "--port needs a port number".to_owned())?,
                )
            }
            "--idle" => {
                idle = value
                    .to_string_lossy()
                    .parse()
                    .map_err(|_| "--idle needs seconds".to_owned())?
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    match (dir, port, tag, log, server.is_empty()) {
        (Some(dir), Some(port), Some(tag), Some(log), false) => Ok(Args {
            dir,
            port,
            socket,
            tag,
            idle,
            log,
            server,
        }),
        _ => Err("usage: infer-serve --dir DIR --port N [--socket PATH] --tag TAG --idle SECONDS --log FILE -- LLAMA_SERVER ARGS...".to_owned()),
    }
}

fn main() -> ExitCode {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("infer-serve: {e}");
            return ExitCode::from(2);
        }
    };
    // Leave the process that started us: it reaps the parent at once.
    // SAFETY: nothing but this thread runs yet; the child continues with a
    // copy of this single-threaded process.
    match unsafe { libc::fork() } {
        -1 => {
            eprintln!("infer-serve: fork failed");
            return ExitCode::from(1);
        }
        0 => {}
        _ => return ExitCode::SUCCESS,
    }
    // SAFETY: plain system calls on this process.
    unsafe {
        libc::setsid();
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGHUP, libc::SIG_IGN);
    }
    match supervise(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            log_line(&args.log, &format!("infer-serve: {e}"));
            ExitCode::from(1)
        }
    }
}

fn supervise(args: &Args) -> Result<(), String> {
    let log = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(&args.log)
        .map_err(|e| format!("cannot open the log {}: {e}", args.log.display()))?;
    let err = log.try_clone().map_err(|e| e.to_string())?;
    let mut server = Command::new(&args.server[0]);
    server
        .args(&args.server[1..])
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(err)
        .process_group(0);
    // Whatever llama-server creates (its Unix socket) is this user's alone.
    // SAFETY: umask has no failure mode.
    unsafe { libc::umask(0o077) };
    let mut child = server
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", args.server[0].to_string_lossy()))?;
    let me = std::process::id();
    let mut record = serde_json::json!({
        "supervisor": me,
        "server": child.id(),
        "port": args.port,
        "tag": args.tag,
    });
    if let Err(e) =
        private_file::write_private(&args.dir.join("server.json"), record.to_string().as_bytes())
    {
        stop(&mut child);
        return Err(format!("cannot write server.json: {e}"));
    }
    let mut orphaned_since: Option<Instant> = None;
    let mut socket_private = false;
    let started = SystemTime::now();
    loop {
        std::thread::sleep(TICK);
        if let Ok(Some(status)) = child.try_wait() {
            log_line(
                &args.log,
                &format!("infer-serve: llama-server exited ({status})"),
            );
            // The record stays, marked, for the process waiting for the start
            // (it reports the log) and for the next request (it starts anew
            // without signalling pids that may have been reused).
            if names(&args.dir, me) {
                if let Some(map) = record.as_object_mut() {
                    map.insert("exited".to_owned(), status.to_string().into());
                }
                let _marked = private_file::write_private(
                    &args.dir.join("server.json"),
                    record.to_string().as_bytes(),
                )
                .is_ok();
            }
            return Ok(());
        }
        if let (Some(path), false) = (&args.socket, socket_private) {
            // Mode 0600 once it exists (the umask already kept others out).
            socket_private = fs::set_permissions(path, fs::Permissions::from_mode(0o600)).is_ok();
        }
        let why = if STOP.load(Ordering::SeqCst) {
            Some("stopped by a signal".to_owned())
        } else if !names(&args.dir, me) {
            Some("the state directory no longer names this server".to_owned())
        } else if let Some(idle) =
            idle_for(&args.dir, started).filter(|d| args.idle > 0 && d.as_secs() >= args.idle)
        {
            Some(format!("unused for {} s", idle.as_secs()))
        } else if live_clients(&args.dir) == 0 {
            let since = *orphaned_since.get_or_insert_with(Instant::now);
            (since.elapsed() >= ORPHAN_GRACE).then(|| "no client process is left".to_owned())
        } else {
            orphaned_since = None;
            None
        };
        if let Some(why) = why {
            log_line(
                &args.log,
                &format!("infer-serve: stopping llama-server: {why}"),
            );
            stop(&mut child);
            forget(&args.dir, me);
            return Ok(());
        }
    }
}

/// SIGTERM, then SIGKILL after [`STOP_GRACE`].
fn stop(child: &mut Child) {
    if let Ok(pid) = libc::pid_t::try_from(child.id()) {
        // SAFETY: signalling our own child.
        unsafe { libc::kill(pid, libc::SIGTERM) };
    }
    let begin = Instant::now();
    while begin.elapsed() < STOP_GRACE {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _killed = child.kill().is_ok();
    let _reaped = child.wait().is_ok();
}

/// Whether `server.json` still names this supervisor.
fn names(dir: &Path, me: u32) -> bool {
    fs::read_to_string(dir.join("server.json"))
        .ok()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .and_then(|v| v.get("supervisor").and_then(serde_json::Value::as_u64))
        == Some(u64::from(me))
}

/// Remove `server.json` if it names this supervisor.
fn forget(dir: &Path, me: u32) {
    if names(dir, me) {
        let _gone = fs::remove_file(dir.join("server.json")).is_ok();
    }
}

/// How long since a client last marked the server used; `None` until a
/// client has marked it used since it started (the process that starts it
/// marks it once it answers: a slow load is not idleness).
fn idle_for(dir: &Path, started: SystemTime) -> Option<Duration> {
    let used = fs::metadata(dir.join("used")).ok()?.modified().ok()?;
    if used < started {
        return None;
    }
    SystemTime::now().duration_since(used).ok()
}

/// The registered clients still alive; the files of those gone are removed.
fn live_clients(dir: &Path) -> usize {
    let Ok(entries) = fs::read_dir(dir.join("clients")) else {
        return 0;
    };
    let mut alive = 0;
    for entry in entries.flatten() {
        let pid = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<libc::pid_t>().ok());
        match pid {
            // SAFETY: signal 0 only asks whether the process exists.
            Some(pid) if pid > 0 && unsafe { libc::kill(pid, 0) } == 0 => alive += 1,
            Some(pid)
                if pid > 0
                    && std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM) =>
            {
                alive += 1
            }
            _ => {
                let _gone = fs::remove_file(entry.path()).is_ok();
            }
        }
    }
    alive
}

fn log_line(log: &Path, line: &str) {
    if let Ok(mut f) = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(log)
    {
        let _written = writeln!(f, "{line}").is_ok();
    }
}
