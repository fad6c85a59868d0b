//! The shared server's state directory: every file in it, written and read
//! by this module only, for the extension (`src/remote/shared.rs`, the
//! client that finds or starts the server) and the supervisor
//! (`src/bin/infer-serve.rs`).
//!
//! - `lock`: taken while the server is looked up or started;
//! - `server.json` ([`ServerRecord`]): written by the supervisor once
//!   llama-server runs, marked when it exits, removed when it is stopped;
//! - `server.sock`: the Unix socket the server listens on (mode 0600);
//! - `key`: the API key of the running server (0600);
//! - `failed` ([`FailedStart`]): why the last start failed;
//! - `clients/<pid>`: one registration per client process, holding its
//!   start time ([`register`], [`live_clients`]);
//! - `used`: its modification time is when a client last used the server
//!   ([`mark_used`], [`idle_for`]);
//! - `busy`: each call in flight holds a shared lock on it ([`InUse`]); the
//!   supervisor never stops a server for idleness while one is held
//!   ([`busy`]), however long the call runs.
//!
//! Every file is reached through the [`PrivateDir`] descriptor, never
//! trusted when damaged: a record that does not parse names nobody.

use std::io;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use crate::private_dir::{euid, PrivateDir};
use crate::process::{boot_id, ProcessId};

/// The lock taken while the server is looked up or started.
pub const LOCK: &str = "lock";
/// The supervisor's record of the running server.
pub const RECORD: &str = "server.json";
/// The Unix socket the server listens on.
pub const SOCKET: &str = "server.sock";
/// The API key of the running server.
pub const KEY: &str = "key";
/// Why the last start failed.
pub const FAILED: &str = "failed";
/// Touched at each load (the idle clock).
pub const USED: &str = "used";
/// Locked (shared) by every call in flight.
pub const BUSY: &str = "busy";
/// The directory of the clients' registrations.
pub const CLIENTS: &str = "clients";
/// The server's log when php.ini names none.
pub const LOG: &str = "server.log";
/// The most a state file may hold.
pub const MAX_STATE_FILE: u64 = 64 * 1024;
/// The most a registration may hold.
const MAX_REGISTRATION: u64 = 64;

/// What the supervisor writes to `server.json` once llama-server runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerRecord {
    pub supervisor: ProcessId,
    pub server: ProcessId,
    /// The boot both were started in.
    pub boot: String,
    /// The settings' tag: a server started with others is replaced.
    pub tag: String,
    /// How llama-server ended, once it has (the supervisor then exits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exited: Option<String>,
}

impl ServerRecord {
    /// The record in `dir`; `None` when there is none or it is damaged (an
    /// older layout, not JSON, too large).
    pub fn read(dir: &PrivateDir) -> Option<ServerRecord> {
        Self::parse(&dir.read_small(RECORD, MAX_STATE_FILE).ok()?)
    }

    /// Write the record to `dir`, atomically (mode 0600).
    pub fn write(&self, dir: &PrivateDir) -> io::Result<()> {
        let text = serde_json::to_string(self).map_err(io::Error::other)?;
        dir.write_atomic(RECORD, text.as_bytes())
    }

    /// Forget the record in `dir`.
    pub fn remove(dir: &PrivateDir) {
        let _gone = dir.remove(RECORD).is_ok();
    }

    /// Whether the record in `dir` names `supervisor` (a supervisor whose
    /// record was replaced or removed stops its server).
    pub fn names(dir: &PrivateDir, supervisor: ProcessId) -> bool {
        Self::read(dir).is_some_and(|r| r.supervisor == supervisor)
    }

    fn parse(text: &str) -> Option<ServerRecord> {
        serde_json::from_str(text).ok()
    }

    /// Whether the record is of this boot (pids of another mean nothing).
    pub fn this_boot(&self) -> bool {
        !self.boot.is_empty() && self.boot == boot_id()
    }

    /// Whether the supervisor and the server it names both run, as the
    /// very processes it was written for.
    pub fn serving(&self) -> bool {
        self.exited.is_none()
            && self.this_boot()
            && self.supervisor.running()
            && self.server.running()
    }
}

/// Why the last start failed, for the settings with `tag`: a request soon
/// after gets the same error without a new start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailedStart {
    pub tag: String,
    /// Seconds since the epoch.
    pub at: u64,
    pub error: String,
    /// The server's log ("" when the failure came before it was started).
    pub log: String,
}

impl FailedStart {
    /// The failure recorded in `dir`, when there is one and it is whole.
    pub fn read(dir: &PrivateDir) -> Option<FailedStart> {
        serde_json::from_str(&dir.read_small(FAILED, MAX_STATE_FILE).ok()?).ok()
    }

    /// Record the failure in `dir` (best effort: a failure to record one
    /// only means the next request tries again).
    pub fn write(&self, dir: &PrivateDir) {
        if let Ok(text) = serde_json::to_string(self) {
            let _written = dir.write_atomic(FAILED, text.as_bytes()).is_ok();
        }
    }

    /// Forget the failure (a start succeeded).
    pub fn clear(dir: &PrivateDir) {
        let _forgotten = dir.remove(FAILED).is_ok();
    }
}

/// Note `me` as a client of the server: the file `clients/<pid>` holds its
/// start time, so that a later process with that pid is not taken for it.
pub fn register(clients: &PrivateDir, me: ProcessId) {
    let (name, content) = (me.pid.to_string(), me.start.to_string());
    if clients.read_small(&name, MAX_REGISTRATION).ok().as_deref() != Some(content.as_str()) {
        let _registered = clients.write_atomic(&name, content.as_bytes()).is_ok();
    }
}

/// The client a registration names, when its file name and content agree.
fn registered(name: &str, content: &str) -> Option<ProcessId> {
    Some(ProcessId {
        pid: name.parse().ok()?,
        start: content.trim().parse().ok()?,
    })
}

/// The registered clients still running (the very processes that
/// registered); the registrations of those gone are removed.
pub fn live_clients(clients: &PrivateDir) -> usize {
    let Ok(names) = clients.names() else {
        return 0;
    };
    let mut alive = 0;
    for name in names {
        let Some(name) = name.to_str() else {
            continue;
        };
        if name.starts_with('.') {
            // A registration being written.
            continue;
        }
        let client = clients
            .read_small(name, MAX_REGISTRATION)
            .ok()
            .and_then(|content| registered(name, &content));
        if client.is_some_and(|c| c.running()) {
            alive += 1;
        } else {
            let _gone = clients.remove(name).is_ok();
        }
    }
    alive
}

/// Mark the server used now (the supervisor's idle clock).
pub fn mark_used(dir: &PrivateDir) {
    let _touched = dir
        .open_file(USED, libc::O_WRONLY | libc::O_CREAT)
        .and_then(|f| f.set_modified(SystemTime::now()))
        .is_ok();
}

/// How long since a client last marked the server used; `None` until a
/// client has marked it used after `started` (the process that starts the
/// server marks it once it answers: a slow load is not idleness).
pub fn idle_for(dir: &PrivateDir, started: SystemTime) -> Option<Duration> {
    let st = dir.stat(USED).ok()?;
    let used = SystemTime::UNIX_EPOCH
        + Duration::new(
            u64::try_from(st.st_mtime).ok()?,
            u32::try_from(st.st_mtime_nsec).ok()?,
        );
    if used < started {
        return None;
    }
    SystemTime::now().duration_since(used).ok()
}

/// A call in flight on the server: marks it used when the call starts and
/// when it ends, and holds a shared lock on `busy` meanwhile (released with
/// the process, however it ends).
#[derive(Debug)]
pub struct InUse {
    dir: Arc<PrivateDir>,
    _lock: Option<std::fs::File>,
}

impl InUse {
    /// Mark the server of `dir` in use until the result is dropped. Best
    /// effort: a lock that cannot be taken leaves only the `used` clock.
    pub fn start(dir: Arc<PrivateDir>) -> InUse {
        mark_used(&dir);
        let lock = dir
            .open_file(BUSY, libc::O_RDWR | libc::O_CREAT)
            .ok()
            .filter(|file| {
                use std::os::fd::AsRawFd as _;
                // SAFETY: a valid descriptor owned by `file`. Shared locks
                // never wait for each other; the supervisor's exclusive
                // probe is non-blocking, so this waits for nothing.
                unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_SH) == 0 }
            });
        InUse { dir, _lock: lock }
    }
}

impl Drop for InUse {
    fn drop(&mut self) {
        mark_used(&self.dir);
    }
}

/// Whether a call is in flight on the server of `dir` (a client holds
/// `busy`).
pub fn busy(dir: &PrivateDir) -> bool {
    use std::os::fd::AsRawFd as _;
    let Ok(file) = dir.open_file(BUSY, libc::O_RDWR | libc::O_CREAT) else {
        return false;
    };
    // SAFETY: a valid descriptor owned by `file`; closing it releases a
    // lock taken here.
    let free = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0;
    !free
}

/// Whether the server's socket is a socket of this user's that accepts a
/// connection (a server that runs but no longer listens is replaced).
pub fn socket_answers(dir: &PrivateDir) -> bool {
    let ours = dir
        .stat(SOCKET)
        .is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFSOCK && st.st_uid == euid());
    ours && std::os::unix::net::UnixStream::connect(dir.join(SOCKET)).is_ok()
}

/// Make the socket mode 0600; false until it exists.
pub fn make_socket_private(dir: &PrivateDir) -> bool {
    std::fs::set_permissions(
        dir.join(SOCKET),
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::private_dir::Rule;

    fn scratch(name: &str) -> PrivateDir {
        let path = std::env::temp_dir().join(format!("infer-state-{}-{name}", std::process::id()));
        let _gone = std::fs::remove_dir_all(&path).is_ok();
        match PrivateDir::open(&path, Rule::Private, true) {
            Ok(dir) => dir,
            Err(e) => panic!("{}: {e}", path.display()),
        }
    }

    #[test]
    fn a_record_reads_back_as_written_and_nothing_else_reads_as_one() {
        let dir = scratch("record");
        let me = ProcessId::me().unwrap_or(ProcessId { pid: 1, start: 1 });
        assert_eq!(ServerRecord::read(&dir), None, "no record yet");
        let record = ServerRecord {
            supervisor: me,
            server: me,
            boot: boot_id(),
            tag: "model|4".to_owned(),
            exited: None,
        };
        assert!(record.write(&dir).is_ok());
        assert_eq!(ServerRecord::read(&dir), Some(record.clone()));
        assert!(ServerRecord::names(&dir, me));
        assert!(!ServerRecord::names(
            &dir,
            ProcessId {
                start: me.start + 1,
                ..me
            }
        ));
        assert!(record.serving());
        let exited = ServerRecord {
            exited: Some("signal 9".to_owned()),
            ..record.clone()
        };
        assert!(exited.write(&dir).is_ok());
        assert_eq!(ServerRecord::read(&dir), Some(exited.clone()));
        assert!(!exited.serving());
        let other_boot = ServerRecord {
            boot: "another".to_owned(),
            ..record
        };
        assert!(!other_boot.serving(), "pids of another boot name nobody");
        // Damaged, and the layout before start times (bare pids).
        for text in [
            "",
            "{",
            r#"{"supervisor": 1, "server": 2, "port": 0, "tag": "t"}"#,
        ] {
            assert!(dir.write_atomic(RECORD, text.as_bytes()).is_ok());
            assert_eq!(ServerRecord::read(&dir), None, "{text}");
        }
        // Too large to be one.
        let big = format!(r#"{{"tag": "{}"}}"#, "x".repeat(70_000));
        assert!(dir.write_atomic(RECORD, big.as_bytes()).is_ok());
        assert_eq!(ServerRecord::read(&dir), None);
        ServerRecord::remove(&dir);
        assert!(!dir.join(RECORD).exists());
    }

    #[test]
    fn the_record_keeps_the_layout_older_builds_read() {
        let record = ServerRecord {
            supervisor: ProcessId { pid: 10, start: 20 },
            server: ProcessId { pid: 11, start: 21 },
            boot: "b".to_owned(),
            tag: "t".to_owned(),
            exited: None,
        };
        let text = serde_json::to_string(&record).unwrap_or_default();
        assert_eq!(
            text,
            r#"{"supervisor":{"pid":10,"start":20},"server":{"pid":11,"start":21},"boot":"b","tag":"t"}"#
        );
    }

    #[test]
    fn a_registration_counts_while_its_process_runs() {
        let dir = scratch("clients");
        let Ok(mut child) = std::process::Command::new("sleep").arg("30").spawn() else {
            panic!("sleep could not start");
        };
        let Some(client) = ProcessId::of(child.id()) else {
            panic!("no start time for {}", child.id());
        };
        register(&dir, client);
        assert_eq!(live_clients(&dir), 1);
        // A registration of the same pid with another start time is of a
        // process gone: it is not counted, and it is removed.
        register(
            &dir,
            ProcessId {
                start: client.start + 1,
                ..client
            },
        );
        assert_eq!(live_clients(&dir), 0);
        assert!(!dir.join(&client.pid.to_string()).exists());
        register(&dir, client);
        // Damaged registrations name nobody.
        for (name, content) in [("x", "1"), ("12345", ""), ("12346", "later")] {
            assert!(dir.write_atomic(name, content.as_bytes()).is_ok());
        }
        assert_eq!(live_clients(&dir), 1);
        assert!(child.kill().is_ok() && child.wait().is_ok());
        assert_eq!(live_clients(&dir), 0, "reaped");
    }

    #[test]
    fn the_idle_clock_starts_at_the_first_use_after_the_start() {
        let dir = scratch("used");
        let started = SystemTime::now();
        assert_eq!(idle_for(&dir, started), None, "never used");
        mark_used(&dir);
        let idle = idle_for(&dir, started);
        assert!(idle.is_some_and(|d| d < Duration::from_secs(5)), "{idle:?}");
        let later = SystemTime::now() + Duration::from_secs(60);
        assert_eq!(idle_for(&dir, later), None, "used before that start");
    }

    #[test]
    fn a_call_in_flight_keeps_the_server_busy_and_marks_it_used() {
        let dir = Arc::new(scratch("busy"));
        let started = SystemTime::now();
        assert!(!busy(&dir));
        let call = InUse::start(Arc::clone(&dir));
        assert!(busy(&dir), "busy while the call runs");
        let other = InUse::start(Arc::clone(&dir));
        assert!(busy(&dir));
        drop(call);
        assert!(busy(&dir), "busy while another call runs");
        drop(other);
        assert!(!busy(&dir), "free once every call has ended");
        assert!(idle_for(&dir, started).is_some(), "marked used");
        // A call held by another process counts as well, and ends with it.
        let path = dir.join(BUSY);
        // The shell becomes `sleep`, holding descriptor 9 and its lock.
        let Ok(mut holder) = std::process::Command::new("sh")
            .args(["-c", "exec 9<>\"$0\" && flock -s 9 && exec sleep 30"])
            .arg(&path)
            .spawn()
        else {
            panic!("sh could not start");
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while !busy(&dir) && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(busy(&dir), "another process's call");
        assert!(holder.kill().is_ok() && holder.wait().is_ok());
        assert!(!busy(&dir), "released when that process ended");
    }

    #[test]
    fn a_failed_start_reads_back_and_is_forgotten() {
        let dir = scratch("failed");
        assert_eq!(FailedStart::read(&dir), None);
        let failed = FailedStart {
            tag: "t".to_owned(),
            at: 42,
            error: "exited".to_owned(),
            log: "/l".to_owned(),
        };
        failed.write(&dir);
        assert_eq!(FailedStart::read(&dir), Some(failed));
        assert!(dir.write_atomic(FAILED, b"{\"tag\": 1}").is_ok());
        assert_eq!(FailedStart::read(&dir), None, "damaged");
        FailedStart::clear(&dir);
        assert!(!dir.join(FAILED).exists());
    }
}
