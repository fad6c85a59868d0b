//! The shared server's protocol between the extension (`shared.rs`) and its
//! supervisor (`src/bin/infer-serve.rs`, which includes this file by path):
//! the state directory's file names, the record the supervisor writes
//! (`server.json`), the clients' registrations, and how a process is told
//! apart from another that got its pid later.
//!
//! A process is named by its pid **and** its start time (`/proc/PID/stat`,
//! clock ticks since boot) on this boot (`/proc/sys/kernel/random/boot_id`):
//! a pid that another process got since, or a record from before a reboot,
//! names nobody, and nobody is signalled or counted on its word.

use std::io;
use std::path::Path;

use serde_json::Value as Json;

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
/// The directory of the clients' registrations.
pub const CLIENTS: &str = "clients";
/// The server's log when php.ini names none.
pub const LOG: &str = "server.log";
/// The most a state file may hold.
pub const MAX_STATE_FILE: u64 = 64 * 1024;

/// A process: its pid and when it started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessId {
    pub pid: u32,
    /// Clock ticks after boot (field 22 of `/proc/PID/stat`).
    pub start: u64,
}

/// What `/proc/PID/stat` says of a process: its state letter and start time.
fn stat_of(pid: u32) -> Option<(char, u64)> {
    if pid == 0 || libc::pid_t::try_from(pid).is_err() {
        return None;
    }
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold anything: the fields
    // after it start after the last ") ".
    let (_, rest) = stat.rsplit_once(") ")?;
    let mut fields = rest.split(' ');
    let state = fields.next()?.chars().next()?;
    // Field 22 is the 20th after the state (field 3).
    let start = fields.nth(18)?.parse().ok()?;
    Some((state, start))
}

impl ProcessId {
    /// The process that has `pid` now.
    pub fn of(pid: u32) -> Option<ProcessId> {
        stat_of(pid).map(|(_, start)| ProcessId { pid, start })
    }

    /// This process.
    pub fn me() -> Option<ProcessId> {
        ProcessId::of(std::process::id())
    }

    /// Whether this very process runs: its pid is held by a process started
    /// when it was, which has not exited (a zombie has).
    pub fn running(&self) -> bool {
        matches!(stat_of(self.pid), Some((state, start)) if start == self.start && state != 'Z' && state != 'X')
    }

    /// Send `sig` to this process, and to no other that has its pid now.
    /// False when it is not running.
    pub fn signal(&self, sig: libc::c_int) -> bool {
        let Ok(pid) = libc::pid_t::try_from(self.pid) else {
            return false;
        };
        // SAFETY: pidfd_open takes a pid and flags; the result is a new
        // descriptor or -1.
        let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        if pidfd < 0 {
            // A kernel without pidfds (before 5.3): check, then signal.
            // SAFETY: signalling the process just proven to be this one.
            return self.running() && unsafe { libc::kill(pid, sig) } == 0;
        }
        let Ok(pidfd) = libc::c_int::try_from(pidfd) else {
            return false;
        };
        // The descriptor holds the process it was opened for: checked after
        // it is open, the start time proves which one that is.
        let sent = self.running()
            // SAFETY: a pidfd just opened; no siginfo; no flags.
            && unsafe {
                libc::syscall(libc::SYS_pidfd_send_signal, pidfd, sig, std::ptr::null::<libc::siginfo_t>(), 0)
            } == 0;
        // SAFETY: the descriptor opened above, closed once.
        unsafe { libc::close(pidfd) };
        sent
    }

    #[cfg_attr(not(test), allow(dead_code))] // written by the supervisor
    fn to_json(self) -> Json {
        serde_json::json!({"pid": self.pid, "start": self.start})
    }

    fn from_json(v: &Json) -> Option<ProcessId> {
        Some(ProcessId {
            pid: v.get("pid")?.as_u64().and_then(|p| u32::try_from(p).ok())?,
            start: v.get("start")?.as_u64()?,
        })
    }
}

/// This boot's id ("" when the kernel does not say).
pub fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_owned())
        .unwrap_or_default()
}

/// What the supervisor writes to `server.json` once llama-server runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerRecord {
    pub supervisor: ProcessId,
    pub server: ProcessId,
    /// The boot both were started in.
    pub boot: String,
    /// The settings' tag: a server started with others is replaced.
    pub tag: String,
    /// How llama-server ended, once it has (the supervisor then exits).
    pub exited: Option<String>,
}

impl ServerRecord {
    #[cfg_attr(not(test), allow(dead_code))] // written by the supervisor
    pub fn to_json(&self) -> String {
        let mut v = serde_json::json!({
            "supervisor": self.supervisor.to_json(),
            "server": self.server.to_json(),
            "boot": self.boot,
            "tag": self.tag,
        });
        if let (Some(exited), Some(map)) = (&self.exited, v.as_object_mut()) {
            map.insert("exited".to_owned(), exited.clone().into());
        }
        v.to_string()
    }

    /// A record as written; `None` for anything else (damaged, an older
    /// layout, not JSON).
    pub fn parse(text: &str) -> Option<ServerRecord> {
        let v: Json = serde_json::from_str(text).ok()?;
        Some(ServerRecord {
            supervisor: ProcessId::from_json(v.get("supervisor")?)?,
            server: ProcessId::from_json(v.get("server")?)?,
            boot: v.get("boot")?.as_str()?.to_owned(),
            tag: v.get("tag")?.as_str()?.to_owned(),
            exited: v.get("exited").and_then(Json::as_str).map(str::to_owned),
        })
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

/// A client's registration: the file `clients/<pid>` holds its start time,
/// so that a later process with that pid is not taken for it.
pub fn registration(me: ProcessId) -> (String, String) {
    (me.pid.to_string(), me.start.to_string())
}

/// The client a registration names, when its file name and content agree.
#[cfg_attr(not(test), allow(dead_code))] // read by the supervisor
pub fn registered(name: &str, content: &str) -> Option<ProcessId> {
    Some(ProcessId {
        pid: name.parse().ok()?,
        start: content.trim().parse().ok()?,
    })
}

/// Whether `path` names a regular file that could be run.
pub fn runnable(path: &Path) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    let meta = std::fs::metadata(path)?;
    if meta.is_file() && meta.permissions().mode() & 0o111 != 0 {
        Ok(())
    } else {
        Err(io::Error::other("not an executable file"))
    }
}

/// The variables of the environment the extension was started with (MINIT)
/// that reach the processes it starts; nothing else does (`LD_PRELOAD`, a
/// script's `putenv()`, llama-server's own `LLAMA_ARG_*`).
pub const ALLOWED_ENV: &[&str] = &[
    "PATH",
    "LANG",
    "LC_ALL",
    "TZ",
    // Which GPUs the installation gives llama.cpp.
    "CUDA_VISIBLE_DEVICES",
    "HIP_VISIBLE_DEVICES",
    "GGML_VK_VISIBLE_DEVICES",
];

/// The allowed variables among `vars`.
pub fn allowed_env(
    vars: impl Iterator<Item = (std::ffi::OsString, std::ffi::OsString)>,
) -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
    vars.filter(|(k, _)| {
        ALLOWED_ENV
            .iter()
            .any(|a| k.as_os_str() == std::ffi::OsStr::new(a))
    })
    .collect()
}

/// Make `command` start clean: exactly the environment `env`, stdin from
/// `/dev/null`, a process group of its own, and no descriptor of this
/// process but 0-2 (those it sets) open in it.
pub fn start_clean(
    command: &mut std::process::Command,
    env: &[(std::ffi::OsString, std::ffi::OsString)],
) {
    use std::os::unix::process::CommandExt as _;
    command
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(std::process::Stdio::null())
        .process_group(0);
    // SAFETY: the closure runs in the child between fork and exec and only
    // makes system calls (close_range, getrlimit, fcntl), which are
    // async-signal-safe. Descriptors are marked close-on-exec rather than
    // closed, so that the pipe std reports a failed exec through still works.
    unsafe {
        command.pre_exec(|| {
            shut_descriptors_from(3, Shut::OnExec);
            Ok(())
        });
    }
}

/// When descriptors are shut.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Shut {
    /// Now.
    Now,
    /// At the next exec (close-on-exec).
    OnExec,
}

/// Close every descriptor from `first` up, now or at the next exec.
pub fn shut_descriptors_from(first: libc::c_uint, when: Shut) {
    const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;
    let flags = if when == Shut::Now {
        0
    } else {
        CLOSE_RANGE_CLOEXEC
    };
    // SAFETY: close_range on descriptors this process does not use past
    // this point (the supervisor at its start; a child before its exec).
    let done =
        unsafe { libc::syscall(libc::SYS_close_range, first, libc::c_uint::MAX, flags) } == 0;
    if done {
        return;
    }
    // Kernels before 5.11: every descriptor up to the limit.
    // SAFETY: rlimit is plain data, filled by getrlimit.
    let mut limit: libc::rlimit = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to the struct above.
    let max = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 {
        limit.rlim_cur.min(1 << 20)
    } else {
        4096
    };
    for fd in u64::from(first)..max {
        let Ok(fd) = libc::c_int::try_from(fd) else {
            break;
        };
        // SAFETY: fcntl/close on a number that may or may not be a
        // descriptor, which this process no longer uses.
        unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFD);
            if flags >= 0 {
                if when == Shut::Now {
                    libc::close(fd);
                } else {
                    libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_is_told_apart_from_a_later_one_with_its_pid() {
        let Ok(mut child) = std::process::Command::new("sleep").arg("30").spawn() else {
            panic!("sleep could not start");
        };
        let real = ProcessId::of(child.id());
        let Some(real) = real else {
            panic!("no start time for {}", child.id());
        };
        assert!(real.running());
        let impostor = ProcessId {
            start: real.start + 1,
            ..real
        };
        assert!(!impostor.running());
        assert!(
            !impostor.signal(libc::SIGKILL),
            "not signalled on a pid alone"
        );
        assert_eq!(child.try_wait().ok(), Some(None), "still running");
        assert!(real.signal(libc::SIGKILL));
        assert!(child.wait().is_ok());
        assert!(!real.running(), "reaped");
        assert!(ProcessId::me().is_some_and(|me| me.running()));
    }

    #[test]
    fn a_record_reads_back_as_written_and_nothing_else_reads_as_one() {
        let me = ProcessId::me().unwrap_or(ProcessId { pid: 1, start: 1 });
        let record = ServerRecord {
            supervisor: me,
            server: me,
            boot: boot_id(),
            tag: "model|4".to_owned(),
            exited: None,
        };
        assert_eq!(ServerRecord::parse(&record.to_json()), Some(record.clone()));
        assert!(record.serving());
        let exited = ServerRecord {
            exited: Some("signal 9".to_owned()),
            ..record.clone()
        };
        assert_eq!(ServerRecord::parse(&exited.to_json()), Some(exited.clone()));
        assert!(!exited.serving());
        let other_boot = ServerRecord {
            boot: "another".to_owned(),
            ..record
        };
        assert!(!other_boot.serving(), "pids of another boot name nobody");
        // The layout before start times: bare pids.
        for text in [
            "",
            "{",
            r#"{"supervisor": 1, "server": 2, "port": 0, "tag": "t"}"#,
        ] {
            assert_eq!(ServerRecord::parse(text), None, "{text}");
        }
    }

    #[test]
    fn a_registration_names_its_process() {
        let me = ProcessId::me().unwrap_or(ProcessId { pid: 1, start: 1 });
        let (name, content) = registration(me);
        assert_eq!(registered(&name, &content), Some(me));
        assert_eq!(registered(&name, ""), None, "an empty file names nobody");
        assert_eq!(registered("x", &content), None);
    }

    #[test]
    fn only_allowed_variables_pass() {
        let vars = [
            ("PATH", "/bin"),
            ("LD_PRELOAD", "/tmp/evil.so"),
            ("TMPDIR", "/x"),
            ("LLAMA_ARG_HOST", "0.0.0.0"),
        ]
        .map(|(k, v)| (std::ffi::OsString::from(k), std::ffi::OsString::from(v)));
        let kept = allowed_env(vars.into_iter());
        assert_eq!(
            kept,
            vec![(
                std::ffi::OsString::from("PATH"),
                std::ffi::OsString::from("/bin")
            )]
        );
    }
}
