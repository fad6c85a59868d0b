//! Processes: a process named so that a later one with its pid is not
//! taken for it, and the processes the extension and the supervisor start,
//! started clean (an allowed environment, no inherited descriptors, a
//! process group of their own).
//!
//! A process is named by its pid **and** its start time (`/proc/PID/stat`,
//! clock ticks since boot) on this boot (`/proc/sys/kernel/random/boot_id`):
//! a pid that another process got since, or a record from before a reboot,
//! names nobody, and nobody is signalled or counted on its word.

use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// A process: its pid and when it started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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
}

/// This boot's id ("" when the kernel does not say).
pub fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_owned())
        .unwrap_or_default()
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

/// The environment this process was started with, as `execve` gave it
/// (`/proc/self/environ`; std's view when that cannot be read), read once:
/// the captured variables and the startup TMPDIR both come from it.
///
/// Not `std::env::vars_os()` alone: an extension that PHP loads with
/// `RTLD_DEEPBIND` into an executable holding a copy-relocated `environ`
/// (PHP 8.3 built from source here) binds std's `environ` to libc's own,
/// unused copy, and sees an empty environment.
pub fn startup_environment() -> &'static [(std::ffi::OsString, std::ffi::OsString)] {
    static AT_START: std::sync::OnceLock<Vec<(std::ffi::OsString, std::ffi::OsString)>> =
        std::sync::OnceLock::new();
    AT_START.get_or_init(|| {
        use std::os::unix::ffi::OsStrExt as _;
        let Ok(bytes) = std::fs::read("/proc/self/environ") else {
            return std::env::vars_os().collect();
        };
        bytes
            .split(|&b| b == 0)
            .filter_map(|entry| {
                let at = entry.iter().position(|&b| b == b'=')?;
                let (name, value) = (&entry[..at], &entry[at + 1..]);
                (!name.is_empty()).then(|| {
                    (
                        std::ffi::OsStr::from_bytes(name).to_owned(),
                        std::ffi::OsStr::from_bytes(value).to_owned(),
                    )
                })
            })
            .collect()
    })
}

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
    spawn_with_env(command, env);
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

/// Make `command` start with exactly the environment `env`, stdin from
/// `/dev/null` and a process group of its own, for a program that shuts
/// the descriptors it was given itself, first thing (infer-serve). Without
/// a `pre_exec` closure std starts it with `posix_spawn`, which hands it
/// `env` as its own environment block. With one, std forks, points the
/// global `environ` at `env` and calls `execvp`, and in a PHP whose
/// executable holds a copy-relocated `environ` (PHP 8.3 built from source
/// here) the child was given the live environment instead: a script's
/// `putenv()` (`LD_PRELOAD`…) reached the supervisor.
pub fn spawn_with_env(
    command: &mut std::process::Command,
    env: &[(std::ffi::OsString, std::ffi::OsString)],
) {
    use std::os::unix::process::CommandExt as _;
    command
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(std::process::Stdio::null())
        .process_group(0);
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
    fn the_startup_environment_is_what_this_process_was_started_with() {
        let env = startup_environment();
        let path = env
            .iter()
            .find(|(k, _)| k == "PATH")
            .map(|(_, v)| v.clone());
        assert_eq!(path, std::env::var_os("PATH"), "PATH as the process got it");
        // A variable set afterwards is not in it.
        assert!(env.iter().all(|(k, _)| k != "INFER_SET_AFTER_START"));
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
