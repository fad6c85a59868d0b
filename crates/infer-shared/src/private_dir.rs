//! Directories the extension shares between processes — the shared server's
//! state directory and the prompt store — opened, not named.
//!
//! A [`PrivateDir`] is a directory descriptor that was proven, on the opened
//! directory itself, to belong to this process's user and to be closed to
//! others as its [`Rule`] says; every path from `/` to it was walked one
//! component at a time without following a symbolic link, and every parent
//! on the way is the user's or root's and writable by nobody else unless it
//! is sticky (as `/tmp`): nobody else can rename the directory away or put
//! another in its place. Files inside are reached from the descriptor (the
//! `*at()` calls) with `O_NOFOLLOW`, and only regular files are read or
//! written (a FIFO is refused without blocking: `O_NONBLOCK`).
//!
//! Used by the extension (`src/remote/shared.rs`,
//! `src/engine/cache/prefix_store/`) and by the supervisor
//! (`src/bin/infer-serve.rs`).

use std::ffi::{CStr, CString, OsStr, OsString};
use std::fs::File;
use std::io::{self, Read as _, Write as _};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt as _, OsStringExt as _};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Who besides the owner may use a directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// Nobody else: mode 0700 (the shared server's key and socket).
    Private,
    /// Others may read or enter it but not write to it (the prompt store,
    /// whose entries are each mode 0600).
    NoOtherWriters,
}

impl Rule {
    fn forbidden(self) -> u32 {
        match self {
            Rule::Private => 0o077,
            Rule::NoOtherWriters => 0o022,
        }
    }
}

/// Why a directory is not used; its `Display` is the end of a sentence that
/// starts with the directory's path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DirProblem {
    NotAbsolute,
    /// A `..` in the path (it would be resolved through whatever the
    /// component before it is).
    DotDot,
    /// A component is a symbolic link.
    Symlink(PathBuf),
    /// The directory itself (`None`) or a component on the way to it.
    NotADirectory(Option<PathBuf>),
    /// The directory is another user's.
    Owner {
        owner: u32,
        me: u32,
    },
    /// Others may read or write it.
    Mode {
        mode: u32,
        rule: Rule,
    },
    /// A parent on the way may be changed by another user.
    ParentOwner {
        parent: PathBuf,
        owner: u32,
    },
    ParentWritable {
        parent: PathBuf,
        mode: u32,
    },
    /// A system call failed.
    Io {
        what: &'static str,
        error: String,
    },
}

impl std::fmt::Display for DirProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DirProblem::NotAbsolute => write!(f, "is not an absolute path"),
            DirProblem::DotDot => write!(f, "has a \"..\" component; give the directory's real path"),
            DirProblem::Symlink(at) => write!(
                f,
                "passes through the symbolic link {}; give the directory's real path",
                at.display()
            ),
            DirProblem::NotADirectory(None) => write!(f, "is not a directory"),
            DirProblem::NotADirectory(Some(at)) => write!(f, "is not a directory ({})", at.display()),
            DirProblem::Owner { owner, me } => write!(
                f,
                "belongs to user {owner}, not to this process's user {me}"
            ),
            DirProblem::Mode { mode, rule: Rule::Private } => write!(
                f,
                "may be read or written by other users (mode {mode:o}); it must be 0700"
            ),
            DirProblem::Mode { mode, rule: Rule::NoOtherWriters } => {
                write!(f, "other users can write to it (mode {mode:o})")
            }
            DirProblem::ParentOwner { parent, owner } => write!(
                f,
                "is inside {}, which belongs to user {owner} (neither root nor this process's user), who could move it away",
                parent.display()
            ),
            DirProblem::ParentWritable { parent, mode } => write!(
                f,
                "is inside {}, which other users can write to without the sticky bit (mode {mode:o}): they could move it away",
                parent.display()
            ),
            DirProblem::Io { what, error } => write!(f, "cannot be {what}: {error}"),
        }
    }
}

/// The temporary directory as it was when the extension started (the
/// binding calls this at MINIT, before any script can `putenv("TMPDIR=…")`;
/// later calls return the same).
pub fn startup_temp_dir() -> PathBuf {
    static AT_START: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    AT_START
        .get_or_init(|| {
            // TMPDIR as the process was started with it (see
            // process::startup_environment), else /tmp, as std's temp_dir.
            crate::process::startup_environment()
                .iter()
                .find(|(name, value)| name == "TMPDIR" && !value.is_empty())
                .map_or_else(|| PathBuf::from("/tmp"), |(_, value)| PathBuf::from(value))
        })
        .clone()
}

/// This process's effective user.
pub fn euid() -> u32 {
    // SAFETY: geteuid has no failure mode.
    unsafe { libc::geteuid() }
}

fn c_name(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
}

fn fstat(fd: RawFd) -> io::Result<libc::stat> {
    // SAFETY: stat is plain data; fstat fills it for a valid descriptor.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `fd` is a descriptor the caller holds.
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st)
}

/// The entry `name` in `dir`, as it is (a link is not followed).
fn lstat_at(dir: &OwnedFd, name: &CStr) -> Option<libc::stat> {
    // SAFETY: stat is plain data, filled by fstatat for valid arguments.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a valid descriptor and NUL-terminated name.
    let found = unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            name.as_ptr(),
            &mut st,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    } == 0;
    found.then_some(st)
}

/// Whether `name` in `dir` is a symbolic link.
fn is_link(dir: &OwnedFd, name: &CStr) -> bool {
    lstat_at(dir, name).is_some_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFLNK)
}

fn owner_of(dir: &OwnedFd, name: &CStr) -> Option<u32> {
    lstat_at(dir, name).map(|st| st.st_uid)
}

fn is_dir(st: &libc::stat) -> bool {
    st.st_mode & libc::S_IFMT == libc::S_IFDIR
}

/// `openat(dir, name, flags)` with `O_CLOEXEC`, as an owned descriptor.
fn open_at(dir: RawFd, name: &CStr, flags: libc::c_int, mode: libc::mode_t) -> io::Result<OwnedFd> {
    // SAFETY: a valid descriptor and NUL-terminated name; the result is
    // checked before it is owned.
    let fd = unsafe {
        libc::openat(
            dir,
            name.as_ptr(),
            flags | libc::O_CLOEXEC,
            mode as libc::c_uint,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a descriptor just opened, owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// A directory opened and proven to be this user's (see the module).
#[derive(Debug)]
pub struct PrivateDir {
    fd: OwnedFd,
    path: PathBuf,
}

impl PrivateDir {
    fn open_walk(path: &Path, rule: Rule, create: bool) -> Result<PrivateDir, DirProblem> {
        if !path.is_absolute() {
            return Err(DirProblem::NotAbsolute);
        }
        let root = c"/";
        let mut fd =
            open_at(libc::AT_FDCWD, root, libc::O_RDONLY | libc::O_DIRECTORY, 0).map_err(|e| {
                DirProblem::Io {
                    what: "opened",
                    error: e.to_string(),
                }
            })?;
        let mut walked = PathBuf::from("/");
        let me = euid();
        for component in path.components() {
            let name = match component {
                Component::RootDir | Component::CurDir => continue,
                Component::ParentDir => return Err(DirProblem::DotDot),
                Component::Normal(name) => name,
                Component::Prefix(_) => return Err(DirProblem::NotAbsolute),
            };
            // The directory we are in will hold the next one: nobody else
            // may rename entries in it.
            let st = fstat(fd.as_raw_fd()).map_err(|e| DirProblem::Io {
                what: "looked at",
                error: e.to_string(),
            })?;
            if st.st_uid != 0 && st.st_uid != me {
                return Err(DirProblem::ParentOwner {
                    parent: walked,
                    owner: st.st_uid,
                });
            }
            if st.st_mode & 0o022 != 0 && st.st_mode & libc::S_ISVTX == 0 {
                return Err(DirProblem::ParentWritable {
                    parent: walked,
                    mode: st.st_mode & 0o7777,
                });
            }
            walked.push(name);
            let c = c_name(name).map_err(|e| DirProblem::Io {
                what: "named",
                error: e.to_string(),
            })?;
            fd = Self::step(&fd, &c, &walked, create)?;
        }
        let dir = PrivateDir {
            fd,
            path: path.to_path_buf(),
        };
        dir.check(rule)?;
        Ok(dir)
    }

    /// Open the directory at `path`, creating it (and any missing parent,
    /// each mode 0700 and exclusively) when `create`; then check it. A
    /// problem with the directory itself (not a component on the way) does
    /// not repeat its path. with the directory itself
    /// (not a component on the way) does not repeat its path.
    pub fn open(path: &Path, rule: Rule, create: bool) -> Result<PrivateDir, DirProblem> {
        Self::open_walk(path, rule, create).map_err(|p| match p {
            DirProblem::NotADirectory(Some(at)) if at == path => DirProblem::NotADirectory(None),
            other => other,
        })
    }

    /// Enter `name` in `parent` without following a link, creating it
    /// (mode 0700, exclusively) when missing and `create`.
    fn step(
        parent: &OwnedFd,
        name: &CStr,
        walked: &Path,
        create: bool,
    ) -> Result<OwnedFd, DirProblem> {
        let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW;
        let refused = |e: io::Error| match e.raw_os_error() {
            Some(libc::ELOOP) => DirProblem::Symlink(walked.to_path_buf()),
            // O_DIRECTORY is checked before O_NOFOLLOW: a link is also "not
            // a directory"; say which.
            Some(libc::ENOTDIR) if is_link(parent, name) => {
                DirProblem::Symlink(walked.to_path_buf())
            }
            Some(libc::ENOTDIR) => DirProblem::NotADirectory(Some(walked.to_path_buf())),
            // Closed to this user: say whose it is.
            Some(libc::EACCES) => match owner_of(parent, name) {
                Some(owner) if owner != euid() => DirProblem::Owner { owner, me: euid() },
                _ => DirProblem::Io {
                    what: "opened",
                    error: e.to_string(),
                },
            },
            _ => DirProblem::Io {
                what: "opened",
                error: e.to_string(),
            },
        };
        match open_at(parent.as_raw_fd(), name, flags, 0) {
            Ok(fd) => Ok(fd),
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) && create => {
                // SAFETY: a valid descriptor and NUL-terminated name.
                let made = unsafe { libc::mkdirat(parent.as_raw_fd(), name.as_ptr(), 0o700) };
                if made != 0 {
                    let e = io::Error::last_os_error();
                    // Made by another process meanwhile: opened and checked
                    // as any existing directory.
                    if e.raw_os_error() != Some(libc::EEXIST) {
                        return Err(DirProblem::Io {
                            what: "created",
                            error: e.to_string(),
                        });
                    }
                }
                open_at(parent.as_raw_fd(), name, flags, 0).map_err(refused)
            }
            Err(e) => Err(refused(e)),
        }
    }

    /// Owner and mode, on the opened directory.
    fn check(&self, rule: Rule) -> Result<(), DirProblem> {
        let st = fstat(self.fd.as_raw_fd()).map_err(|e| DirProblem::Io {
            what: "looked at",
            error: e.to_string(),
        })?;
        if !is_dir(&st) {
            return Err(DirProblem::NotADirectory(None));
        }
        let me = euid();
        if st.st_uid != me {
            return Err(DirProblem::Owner {
                owner: st.st_uid,
                me,
            });
        }
        let mode = st.st_mode & 0o777;
        if mode & rule.forbidden() != 0 {
            return Err(DirProblem::Mode { mode, rule });
        }
        Ok(())
    }

    /// A directory inside this one, created (0700) when missing, checked as
    /// this one is.
    pub fn subdir(&self, name: &str, rule: Rule) -> Result<PrivateDir, DirProblem> {
        let path = self.path.join(name);
        let c = c_name(OsStr::new(name)).map_err(|e| DirProblem::Io {
            what: "named",
            error: e.to_string(),
        })?;
        let fd = Self::step(&self.fd, &c, &path, true)?;
        let dir = PrivateDir { fd, path };
        dir.check(rule)?;
        Ok(dir)
    }

    /// Whether this descriptor is still the directory its path names (it
    /// may have been removed or replaced since it was opened).
    pub fn still_named(&self) -> bool {
        let (Ok(held), Ok(named)) = (
            fstat(self.fd.as_raw_fd()),
            std::fs::symlink_metadata(&self.path),
        ) else {
            return false;
        };
        use std::os::unix::fs::MetadataExt as _;
        held.st_dev == named.dev() && held.st_ino == named.ino() && held.st_nlink > 0
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The path of `name` inside it, for another process (llama-server)
    /// that takes paths.
    pub fn join(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Open the regular file `name` with `flags` (`O_CREAT` creates it mode
    /// 0600): never through a link, never blocking on a FIFO, and refused
    /// unless it is a regular file of this user's that only this user may
    /// read or write.
    pub fn open_file(&self, name: &str, flags: libc::c_int) -> io::Result<File> {
        let c = c_name(OsStr::new(name))?;
        let fd = open_at(
            self.fd.as_raw_fd(),
            &c,
            flags | libc::O_NOFOLLOW | libc::O_NONBLOCK,
            0o600,
        )?;
        let st = fstat(fd.as_raw_fd())?;
        if st.st_mode & libc::S_IFMT != libc::S_IFREG {
            return Err(io::Error::other(format!("{name} is not a regular file")));
        }
        if st.st_uid != euid() || st.st_mode & 0o077 != 0 {
            return Err(io::Error::other(format!(
                "{name} is not this user's private file"
            )));
        }
        // Back to blocking reads and writes (it is a regular file: they
        // never wait).
        // SAFETY: a valid descriptor; F_SETFL with plain flags.
        unsafe {
            let fl = libc::fcntl(fd.as_raw_fd(), libc::F_GETFL);
            libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, fl & !libc::O_NONBLOCK);
        }
        Ok(File::from(fd))
    }

    /// A small state file as text (at most `max` bytes are read).
    pub fn read_small(&self, name: &str, max: u64) -> io::Result<String> {
        let mut text = String::new();
        self.open_file(name, libc::O_RDONLY)?
            .take(max)
            .read_to_string(&mut text)?;
        Ok(text.trim().to_owned())
    }

    /// Write `bytes` to `name` whole or not at all: a new temporary file
    /// (mode 0600, created exclusively), synced, renamed over `name`; on
    /// any failure (a full disk) the temporary file is removed.
    pub fn write_atomic(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        let tmp = temporary_name(name);
        let written = self
            .create_new(&tmp)
            .and_then(|mut f| f.write_all(bytes).and_then(|()| f.sync_all()))
            .and_then(|()| self.rename(&tmp, name));
        if written.is_err() {
            let _removed = self.remove(&tmp).is_ok();
        }
        written
    }

    /// Create `name`, which must not exist, mode 0600.
    pub fn create_new(&self, name: &str) -> io::Result<File> {
        let file = self.open_file(name, libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL)?;
        // The umask may only have narrowed the mode; make it exact.
        use std::os::unix::fs::PermissionsExt as _;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        Ok(file)
    }

    pub fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        let (from, to) = (c_name(OsStr::new(from))?, c_name(OsStr::new(to))?);
        let fd = self.fd.as_raw_fd();
        // SAFETY: valid descriptor and NUL-terminated names.
        if unsafe { libc::renameat(fd, from.as_ptr(), fd, to.as_ptr()) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Remove the entry `name` (a file, a socket; never what a link points to).
    pub fn remove(&self, name: &str) -> io::Result<()> {
        let c = c_name(OsStr::new(name))?;
        // SAFETY: valid descriptor and NUL-terminated name.
        if unsafe { libc::unlinkat(self.fd.as_raw_fd(), c.as_ptr(), 0) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// The entry `name` as it is (a link is described, not followed).
    pub fn stat(&self, name: &str) -> io::Result<libc::stat> {
        let c = c_name(OsStr::new(name))?;
        // SAFETY: stat is plain data, filled by fstatat for valid arguments.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: valid descriptor and NUL-terminated name.
        if unsafe {
            libc::fstatat(
                self.fd.as_raw_fd(),
                c.as_ptr(),
                &mut st,
                libc::AT_SYMLINK_NOFOLLOW,
            )
        } != 0
        {
            return Err(io::Error::last_os_error());
        }
        Ok(st)
    }

    /// The names in the directory (without `.` and `..`).
    pub fn names(&self) -> io::Result<Vec<OsString>> {
        self.names_starting_with(b"")
    }

    /// The names in the directory that start with `prefix` (only those are
    /// copied: a lookup among thousands of entries lists them all).
    pub fn names_starting_with(&self, prefix: &[u8]) -> io::Result<Vec<OsString>> {
        // SAFETY: dup of a valid descriptor; fdopendir owns the copy and
        // closedir closes it; readdir's entries are read before the next call.
        unsafe {
            let copy = libc::fcntl(self.fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 0);
            if copy < 0 {
                return Err(io::Error::last_os_error());
            }
            let stream = libc::fdopendir(copy);
            if stream.is_null() {
                let e = io::Error::last_os_error();
                libc::close(copy);
                return Err(e);
            }
            // From the start, whoever read this descriptor before.
            libc::rewinddir(stream);
            let mut names = Vec::new();
            loop {
                let entry = libc::readdir(stream);
                if entry.is_null() {
                    break;
                }
                let name = CStr::from_ptr((*entry).d_name.as_ptr()).to_bytes();
                if name != b"." && name != b".." && name.starts_with(prefix) {
                    names.push(OsString::from_vec(name.to_vec()));
                }
            }
            libc::closedir(stream);
            Ok(names)
        }
    }

    /// An exclusive lock on the file `name` (created mode 0600), waiting at
    /// most `wait` for another holder to let go.
    pub fn lock(&self, name: &str, wait: Duration) -> Result<Lock, LockError> {
        let file = self
            .open_file(name, libc::O_RDWR | libc::O_CREAT)
            .map_err(|e| LockError::Open(e.to_string()))?;
        let begin = Instant::now();
        loop {
            // SAFETY: a valid descriptor owned by `file`.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
                return Ok(Lock { _file: file });
            }
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EWOULDBLOCK) {
                return Err(LockError::Open(e.to_string()));
            }
            if begin.elapsed() >= wait {
                return Err(LockError::Held(wait));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Why a lock was not taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockError {
    Open(String),
    /// Another process held it for the whole wait.
    Held(Duration),
}

/// An exclusive `flock`, released when dropped.
#[derive(Debug)]
pub struct Lock {
    _file: File,
}

/// A name beside `name` that no other writer uses: the process and a counter.
fn temporary_name(name: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    format!(
        ".{name}.tmp-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    fn scratch(name: &str) -> PathBuf {
        let path =
            std::env::temp_dir().join(format!("infer-private-{}-{name}", std::process::id()));
        let _gone = std::fs::remove_dir_all(&path).is_ok();
        path
    }

    #[test]
    fn a_new_directory_is_created_0700_with_its_missing_parents() {
        let base = scratch("new");
        let dir = PrivateDir::open(&base.join("a/b"), Rule::Private, true);
        assert!(dir.is_ok(), "{dir:?}");
        for p in [base.join("a"), base.join("a/b")] {
            let mode = std::fs::metadata(&p)
                .map(|m| m.permissions().mode() & 0o777)
                .ok();
            assert_eq!(mode, Some(0o700), "{p:?}");
        }
        assert!(PrivateDir::open(&base.join("a/b"), Rule::Private, false).is_ok());
        assert_eq!(
            PrivateDir::open(&base.join("missing"), Rule::Private, false)
                .err()
                .map(|p| p.to_string()),
            Some("cannot be opened: No such file or directory (os error 2)".to_owned())
        );
    }

    #[test]
    fn a_parent_others_may_write_to_is_refused_unless_sticky() {
        let base = scratch("parent");
        std::fs::create_dir_all(base.join("open")).ok();
        std::fs::set_permissions(base.join("open"), std::fs::Permissions::from_mode(0o777)).ok();
        let refused = PrivateDir::open(&base.join("open/state"), Rule::Private, true);
        assert_eq!(
            refused.err(),
            Some(DirProblem::ParentWritable {
                parent: base.join("open"),
                mode: 0o777
            })
        );
        assert!(!base.join("open/state").exists(), "nothing created there");
        std::fs::set_permissions(base.join("open"), std::fs::Permissions::from_mode(0o1777)).ok();
        assert!(PrivateDir::open(&base.join("open/state"), Rule::Private, true).is_ok());
    }

    #[test]
    fn modes_and_kinds_are_checked_on_the_opened_directory() {
        let base = scratch("modes");
        std::fs::create_dir_all(base.join("wide")).ok();
        std::fs::set_permissions(base.join("wide"), std::fs::Permissions::from_mode(0o755)).ok();
        assert_eq!(
            PrivateDir::open(&base.join("wide"), Rule::Private, true).err(),
            Some(DirProblem::Mode {
                mode: 0o755,
                rule: Rule::Private
            })
        );
        assert!(PrivateDir::open(&base.join("wide"), Rule::NoOtherWriters, true).is_ok());
        std::fs::write(base.join("file"), b"x").ok();
        assert_eq!(
            PrivateDir::open(&base.join("file"), Rule::Private, true).err(),
            Some(DirProblem::NotADirectory(None))
        );
        assert_eq!(
            PrivateDir::open(Path::new("/tmp/../tmp"), Rule::Private, true).err(),
            Some(DirProblem::DotDot)
        );
    }

    #[test]
    fn files_are_opened_without_links_and_fifos_without_waiting() {
        let dir = PrivateDir::open(&scratch("files"), Rule::Private, true);
        let Ok(dir) = dir else {
            panic!("{dir:?}");
        };
        assert!(dir.write_atomic("a", b"hello").is_ok());
        assert_eq!(dir.read_small("a", 100).ok().as_deref(), Some("hello"));
        std::os::unix::fs::symlink(dir.join("a"), dir.join("link")).ok();
        assert!(
            dir.read_small("link", 100).is_err(),
            "a link is not followed"
        );
        let fifo = CString::new(dir.join("fifo").as_os_str().as_bytes()).unwrap_or_default();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        let begin = Instant::now();
        let refused = dir.read_small("fifo", 100).err().map(|e| e.to_string());
        assert_eq!(refused.as_deref(), Some("fifo is not a regular file"));
        assert!(begin.elapsed() < Duration::from_secs(1));
        std::fs::set_permissions(dir.join("a"), std::fs::Permissions::from_mode(0o644)).ok();
        assert!(
            dir.read_small("a", 100).is_err(),
            "a file others may read is not ours alone"
        );
        // A write that cannot be renamed into place leaves nothing behind.
        std::fs::create_dir(dir.join("taken")).ok();
        std::fs::write(dir.join("taken/x"), b"x").ok();
        assert!(dir.write_atomic("taken", b"x").is_err());
        let mut names: Vec<_> = dir.names().unwrap_or_default();
        names.sort();
        assert_eq!(names, ["a", "fifo", "link", "taken"].map(OsString::from));
    }

    #[test]
    fn a_lock_held_elsewhere_is_waited_for_a_bounded_time() {
        let dir = PrivateDir::open(&scratch("lock"), Rule::Private, true);
        let Ok(dir) = dir else {
            panic!("{dir:?}");
        };
        let held = dir.lock("lock", Duration::ZERO);
        assert!(held.is_ok());
        let begin = Instant::now();
        let second = dir.lock("lock", Duration::from_millis(200));
        assert_eq!(
            second.err(),
            Some(LockError::Held(Duration::from_millis(200)))
        );
        assert!(begin.elapsed() >= Duration::from_millis(200));
        drop(held);
        assert!(dir.lock("lock", Duration::ZERO).is_ok());
    }

    #[test]
    fn a_directory_removed_after_it_was_opened_is_no_longer_named() {
        let path = scratch("gone");
        let dir = PrivateDir::open(&path, Rule::Private, true);
        let Ok(dir) = dir else {
            panic!("{dir:?}");
        };
        assert!(dir.still_named());
        std::fs::remove_dir_all(&path).ok();
        assert!(!dir.still_named());
        std::fs::create_dir(&path).ok();
        assert!(!dir.still_named(), "another directory under its name");
    }
}
