//! `infer-serve`: the supervisor of the llama-server that the PHP processes
//! of one installation share (`Model::load($path, ['shared' => true])`,
//! php.ini `infer.server_model`). It is started by the first process that
//! needs the server (see `src/remote/shared.rs`), and it:
//!
//! - leaves that process at once (it forks, and the parent exits, so that the
//!   PHP worker reaps it and never waits for it), in a session of its own;
//! - starts llama-server with its output appended to the log file, and writes
//!   `server.json` in the state directory (itself and the server, each as
//!   pid and start time, the boot, the settings' tag) atomically, mode
//!   0600;
//! - every quarter of a second: when the server has exited, it marks
//!   `server.json` so (`"exited"`) and exits (the next request starts a new
//!   one); when the
//!   state directory no longer names it, when no registered client process
//!   (`clients/<pid>`) has been alive for two seconds, when nobody has used
//!   the server for the idle time (the `used` file's age, with no call in
//!   flight: `busy` unlocked), or on SIGTERM, it
//!   stops the server (SIGTERM, then SIGKILL after five seconds) and exits.
//!
//! Usage: `infer-serve --dir DIR --tag TAG --idle SECONDS --log FILE --
//! LLAMA_SERVER ARGS...` (llama-server listens on `server.sock` in DIR, made
//! mode 0600 as soon as it exists). It takes no other input and serves
//! nothing itself.
//!
//! It trusts nothing it did not make: it closes every descriptor it was
//! given besides 0-2 before anything else, passes llama-server only the
//! allowed variables of its environment, reaches the state directory
//! through a descriptor proven to be its user's, and counts a client only
//! while the process with its pid is the one that registered (its start
//! time).

use std::ffi::OsString;
use std::fs;
use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

/// How long no registered client may be alive before the server stops.
const ORPHAN_GRACE: Duration = Duration::from_secs(2);
/// How often the supervisor looks.
const TICK: Duration = Duration::from_millis(250);
/// How long a stopping server gets before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(5);

use infer_shared::private_dir::{PrivateDir, Rule};
use infer_shared::process::{self, ProcessId};
use infer_shared::state::{self, ServerRecord};

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

struct Args {
    dir: PathBuf,
    tag: String,
    idle: u64,
    log: PathBuf,
    server: Vec<OsString>,
}

fn parse() -> Result<Args, String> {
    let mut it = std::env::args_os().skip(1);
    let (mut dir, mut tag, mut idle, mut log) = (None, None, 0u64, None);
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
            "--tag" => tag = Some(value.to_string_lossy().into_owned()),
            "--idle" => {
                idle = value
                    .to_string_lossy()
                    .parse()
                    .map_err(|_| "--idle needs seconds".to_owned())?
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    match (dir, tag, log, server.is_empty()) {
        (Some(dir), Some(tag), Some(log), false) => Ok(Args {
            dir,
            tag,
            idle,
            log,
            server,
        }),
        _ => Err("usage: infer-serve --dir DIR --tag TAG --idle SECONDS --log FILE -- LLAMA_SERVER ARGS...".to_owned()),
    }
}

fn main() -> ExitCode {
    // Whatever descriptors the starting process left open are not ours.
    process::shut_descriptors_from(3, process::Shut::Now);
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
    let dir = PrivateDir::open(&args.dir, Rule::Private, false)
        .map_err(|p| format!("the state directory {} {p}", args.dir.display()))?;
    let clients = dir
        .subdir(state::CLIENTS, Rule::Private)
        .map_err(|p| format!("the state directory's {}/ {p}", state::CLIENTS))?;
    let log = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(&args.log)
        .map_err(|e| format!("cannot open the log {}: {e}", args.log.display()))?;
    let err = log.try_clone().map_err(|e| e.to_string())?;
    let mut server = Command::new(&args.server[0]);
    server.args(&args.server[1..]).stdout(log).stderr(err);
    process::start_clean(&mut server, &process::allowed_env(std::env::vars_os()));
    // Whatever llama-server creates (its Unix socket) is this user's alone.
    // SAFETY: umask has no failure mode.
    unsafe { libc::umask(0o077) };
    let mut child = server
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", args.server[0].to_string_lossy()))?;
    // The child cannot be reaped before we wait for it: its pid is its own.
    let identities = ProcessId::me().zip(ProcessId::of(child.id()));
    let Some((me, server_id)) = identities else {
        stop(&mut child);
        return Err(
            "cannot read this process's or llama-server's start time from /proc".to_owned(),
        );
    };
    let mut record = ServerRecord {
        supervisor: me,
        server: server_id,
        boot: process::boot_id(),
        tag: args.tag.clone(),
        exited: None,
    };
    if let Err(e) = record.write(&dir) {
        stop(&mut child);
        return Err(format!("cannot write {}: {e}", state::RECORD));
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
            // (it reports the log) and for the next request (it starts anew).
            if ServerRecord::names(&dir, me) {
                record.exited = Some(status.to_string());
                let _marked = record.write(&dir).is_ok();
            }
            return Ok(());
        }
        if !socket_private {
            // Mode 0600 once it exists (the umask already kept others out).
            socket_private = state::make_socket_private(&dir);
        }
        let why = if STOP.load(Ordering::SeqCst) {
            Some("stopped by a signal".to_owned())
        } else if !dir.still_named() || !ServerRecord::names(&dir, me) {
            Some("the state directory no longer names this server".to_owned())
        } else if let Some(idle) = state::idle_for(&dir, started).filter(|d| {
            // A call in flight is use, however long ago it started.
            args.idle > 0 && d.as_secs() >= args.idle && !state::busy(&dir)
        }) {
            Some(format!("unused for {} s", idle.as_secs()))
        } else if state::live_clients(&clients) == 0 {
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
            if ServerRecord::names(&dir, me) {
                ServerRecord::remove(&dir);
            }
            return Ok(());
        }
    }
}

/// SIGTERM, then SIGKILL after [`STOP_GRACE`].
fn stop(child: &mut Child) {
    if let Ok(pid) = libc::pid_t::try_from(child.id()) {
        // SAFETY: signalling our own child, not yet reaped.
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

fn log_line(log: &Path, line: &str) {
    if let Ok(mut f) = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(log)
    {
        let _written = writeln!(f, "{line}").is_ok();
    }
}
