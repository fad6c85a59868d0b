//! Sharing the machine's cores between processes that generate at once.
//!
//! ggml's worker threads meet at a barrier after every node of the graph, and
//! wait there by spinning. Two processes that each run a thread per core
//! preempt each other's threads mid-graph, and every waiting thread then
//! spins through its time slice: two PHP-FPM workers generating at once made
//! 0.085x the tokens of one. So, unless the caller fixed `n_threads`, a
//! generating call takes a *slot* in a registry that every process of the
//! same user shares, and runs `cores / generating processes` threads (at
//! least one; the remainder goes to the lowest slots), recounting as others
//! start and finish. A lone process keeps every core.
//!
//! The registry is a directory of slot files (`/dev/shm/infer-<uid>`, else
//! in the temporary directory PHP started with), opened as a
//! [`PrivateDir`]: this user's alone, never through a link, its slot files
//! regular files of this user's (another user who made the directory first,
//! or planted links in it, gets it refused rather than used). A slot is held
//! with `flock`, which the kernel releases when the process dies, so a
//! crashed worker never leaks one. Where the registry cannot be used, every
//! call runs on every core, as before.
//!
//! Counting the slots takes up to [`SLOTS`] `flock` calls. A generating
//! call recounts every few tokens, so the count is shared by the process's
//! threads and kept for [`CENSUS_TTL`]: however many threads generate, the
//! slots are counted at most once per period (and at once after this
//! process takes or frees one).

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::private_dir::{self, PrivateDir, Rule};

/// Slots in the registry: at most this many processes are counted; more
/// generate with one thread each.
pub const SLOTS: usize = 64;

/// How long a count of the occupied slots serves before it is taken again:
/// about the time of four tokens of a small model, the cadence at which a
/// call asks.
pub const CENSUS_TTL: Duration = Duration::from_millis(40);

/// The slot files of this process, opened once (again after a `fork()`: a
/// child must not share open file descriptions, and so locks, with its
/// parent).
struct SlotFiles {
    files: Vec<File>,
    /// Slots held by this process (a thread-safe PHP build may generate on
    /// several threads at once; `flock` cannot tell them apart).
    held: [bool; SLOTS],
    /// The last count of occupied slots and when it was taken.
    census: Option<(Instant, [bool; SLOTS])>,
    /// How many counts were taken (for tests).
    counts: u64,
}

/// This process's registry, once tried: the pid it was opened in, and the
/// registry, or `None` where it cannot be had (not retried on every call).
static REGISTRY: Mutex<Option<(u32, Option<SlotFiles>)>> = Mutex::new(None);

fn registry_dir() -> PathBuf {
    let shm = std::path::Path::new("/dev/shm");
    let base = if shm.is_dir() {
        shm.to_path_buf()
    } else {
        private_dir::startup_temp_dir()
    };
    base.join(format!("infer-{}", private_dir::euid()))
}

impl SlotFiles {
    fn open() -> Option<Self> {
        // Another process may create it at the same moment: whoever made
        // it, it is checked as opened.
        let dir = PrivateDir::open(&registry_dir(), Rule::Private, true).ok()?;
        let files = (0..SLOTS)
            .map(|i| dir.open_file(&format!("slot-{i}"), libc::O_RDWR | libc::O_CREAT))
            .collect::<Result<Vec<_>, _>>()
            .ok()?;
        Some(Self {
            files,
            held: [false; SLOTS],
            census: None,
            counts: 0,
        })
    }

    /// `flock(op | LOCK_NB)` on slot `i`; true when it succeeded.
    fn try_lock(&self, i: usize, op: libc::c_int) -> bool {
        // SAFETY: flock on a descriptor this registry keeps open.
        unsafe { libc::flock(self.files[i].as_raw_fd(), op | libc::LOCK_NB) == 0 }
    }

    fn unlock(&self, i: usize) {
        // SAFETY: as above; unlocking a descriptor that holds no lock is a no-op.
        unsafe { libc::flock(self.files[i].as_raw_fd(), libc::LOCK_UN) };
    }

    /// Take the first free slot.
    fn claim(&mut self) -> Option<usize> {
        let slot = (0..SLOTS).find(|&i| !self.held[i] && self.try_lock(i, libc::LOCK_EX))?;
        self.held[slot] = true;
        self.census = None;
        Some(slot)
    }

    fn release(&mut self, slot: usize) {
        if self.held[slot] {
            self.unlock(slot);
            self.held[slot] = false;
            self.census = None;
        }
    }

    /// Which slots are held: the count of the last [`CENSUS_TTL`], or a
    /// new one.
    fn occupied(&mut self) -> [bool; SLOTS] {
        let now = Instant::now();
        if let Some((taken, occupied)) = self.census {
            if now.duration_since(taken) < CENSUS_TTL {
                return occupied;
            }
        }
        let occupied = self.count();
        self.census = Some((now, occupied));
        self.counts += 1;
        occupied
    }

    /// Which slots are held now, by this process or another.
    fn count(&self) -> [bool; SLOTS] {
        let mut out = self.held;
        for (i, busy) in out.iter_mut().enumerate() {
            if !*busy {
                // A shared lock is refused while another process holds the
                // exclusive one; when granted, it is dropped at once.
                if self.try_lock(i, libc::LOCK_SH) {
                    self.unlock(i);
                } else {
                    *busy = true;
                }
            }
        }
        out
    }
}

/// Run `f` on this process's registry, opening it first (or again, in a
/// forked child); `None` when no registry can be had.
fn with_registry<T>(f: impl FnOnce(&mut SlotFiles) -> Option<T>) -> Option<T> {
    let mut guard = REGISTRY.lock().unwrap_or_else(PoisonError::into_inner);
    let pid = std::process::id();
    if guard
        .as_ref()
        .is_none_or(|(opened_in, _)| *opened_in != pid)
    {
        // Not tried yet, or forked: the inherited descriptions (and any lock
        // on them) are shared with the parent. Closing this process's copies
        // leaves the parent's locks alone (only an explicit unlock would
        // drop them).
        *guard = Some((pid, SlotFiles::open()));
    }
    f(guard.as_mut()?.1.as_mut()?)
}

/// The threads slot `slot` gets when `occupied` slots generate on `cores`.
pub fn share(cores: u32, occupied: &[bool], slot: usize) -> u32 {
    let active = occupied.iter().filter(|&&b| b).count().max(1) as u32;
    let rank = occupied[..slot.min(occupied.len())]
        .iter()
        .filter(|&&b| b)
        .count() as u32;
    let base = cores / active;
    let extra = u32::from(rank < cores % active);
    (base + extra).max(1)
}

/// A generating call's place in the registry; released on drop.
#[derive(Debug)]
pub struct Claim {
    place: Place,
    cores: u32,
}

#[derive(Debug, Clone, Copy)]
enum Place {
    /// No registry can be had here: the call uses every core, as before.
    NoRegistry,
    /// Every slot is taken: so many processes generate that one thread each
    /// is all there is.
    Full,
    Slot(usize),
}

impl Claim {
    /// Take a slot for a call that may use up to `cores` threads.
    pub fn take(cores: u32) -> Self {
        let place = with_registry(|r| Some(r.claim().map_or(Place::Full, Place::Slot)))
            .unwrap_or(Place::NoRegistry);
        Self { place, cores }
    }

    /// How many threads this call should run now.
    pub fn threads(&self) -> u32 {
        match self.place {
            Place::NoRegistry => self.cores,
            Place::Full => 1,
            Place::Slot(slot) => with_registry(|r| Some(share(self.cores, &r.occupied(), slot)))
                .unwrap_or(self.cores),
        }
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        if let Place::Slot(slot) = self.place {
            with_registry(|r| {
                r.release(slot);
                Some(())
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn occupied(slots: &[usize]) -> Vec<bool> {
        let mut out = vec![false; SLOTS];
        for &s in slots {
            out[s] = true;
        }
        out
    }

    #[test]
    fn a_lone_process_gets_every_core() {
        assert_eq!(share(8, &occupied(&[5]), 5), 8);
    }

    #[test]
    fn cores_are_divided_and_the_remainder_goes_to_the_lowest_slots() {
        let occ = occupied(&[0, 3, 9]);
        let got: Vec<u32> = [0, 3, 9].iter().map(|&s| share(8, &occ, s)).collect();
        assert_eq!(got, vec![3, 3, 2]);
        assert_eq!(got.iter().sum::<u32>(), 8, "every core used, none twice");
    }

    #[test]
    fn claims_in_one_process_are_counted_and_released() {
        let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
        let first = Claim::take(4);
        assert!(matches!(first.place, Place::Slot(_)), "{first:?}");
        let alone = first.threads();
        let second = Claim::take(4);
        // Other processes of this user may be generating too (other test
        // binaries); with both claims held, each gets at most half.
        assert!(first.threads() <= 2 && second.threads() <= 2);
        assert!(alone >= first.threads());
        drop(second);
        assert_eq!(first.threads(), alone, "the second claim was released");
    }

    /// Held by the tests that use this process's registry, whose counts
    /// the others would change.
    static SERIAL: Mutex<()> = Mutex::new(());

    /// How many times this process counted the slots.
    fn counts() -> u64 {
        with_registry(|r| Some(r.counts)).unwrap_or(0)
    }

    #[test]
    fn threads_asking_at_once_share_one_count_of_the_slots() {
        let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
        let claims: Vec<Claim> = (0..4).map(|_| Claim::take(2)).collect();
        let first = claims[0].threads();
        let before = counts();
        let started = Instant::now();
        let asked: Vec<u32> = std::thread::scope(|s| {
            let handles: Vec<_> = claims
                .iter()
                .map(|c| s.spawn(move || (0..50).map(|_| c.threads()).sum::<u32>()))
                .collect();
            handles.into_iter().filter_map(|h| h.join().ok()).collect()
        });
        let recounts = counts() - before;
        assert_eq!(asked.len(), 4);
        // 200 questions; the slots were counted once per period at most.
        let periods = started.elapsed().as_millis() / CENSUS_TTL.as_millis() + 1;
        assert!(
            u128::from(recounts) <= periods,
            "{recounts} counts in {periods} periods"
        );
        assert!(first >= 1);
        drop(claims);
        // Freeing a slot here is seen at once.
        let alone = Claim::take(2);
        let before = counts();
        assert!(alone.threads() >= 1);
        assert_eq!(counts(), before + 1, "a fresh count after the claim");
    }

    #[test]
    fn more_processes_than_cores_get_one_thread_each() {
        let occ = occupied(&[0, 1, 2, 3]);
        for s in 0..4 {
            assert_eq!(share(2, &occ, s), 1, "slot {s}");
        }
    }
}
