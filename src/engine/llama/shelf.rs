//! What a model keeps between calls (contexts with their KV caches), lent
//! to one call at a time.
//!
//! A call takes an item off the shelf, uses it without any lock held, and
//! puts it back when it succeeded. Calls that run at once on several
//! threads (thread-safe PHP, a Rust host) each get their own item: the one
//! on the shelf that suits it best, or a new one when the shelf has none.
//! So the shelf never holds more items than calls ran at once, and a
//! process that makes one call at a time keeps exactly one, as before;
//! unless the caller keeps items for other calls ([`Fit::Pass`]: a context
//! per LoRA adapter set), up to a bound of its own.
//!
//! The lock is held only inside these methods, which run no caller code
//! except the `score` of [`Shelf::take`]; a panic there leaves the items
//! whole, so a poisoned lock is used as it is.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Items of type `T`, lent out one per call.
#[derive(Debug)]
pub struct Shelf<T> {
    items: Mutex<Vec<T>>,
}

impl<T> Default for Shelf<T> {
    fn default() -> Self {
        Self {
            items: Mutex::new(Vec::new()),
        }
    }
}

/// How well an item on the shelf suits a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Fit {
    /// Usable, but kept for the calls it suits better (a context under
    /// other LoRA adapters, while the model may keep one per set): neither
    /// lent nor dropped; the call makes its own item.
    Pass,
    /// Unusable for this call (another shape): dropped when the call must
    /// make a new item, so that memory is freed before it is allocated.
    Misfit,
    /// Usable; a higher rank is preferred (a longer cached prefix).
    Fits(usize),
}

/// What an item does when it goes back on the shelf, between calls.
pub trait Idle {
    /// Stop using resources that only a call needs (a context's pool
    /// threads, which would otherwise spin for a while after the call).
    fn rest(&mut self);
}

impl<T: Idle> Shelf<T> {
    fn lock(&self) -> MutexGuard<'_, Vec<T>> {
        self.items.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The item that fits best, taken off the shelf; `None` when none fits,
    /// after dropping one misfit (the call is about to allocate its own).
    /// Items that [`Fit::Pass`] stay.
    pub fn take(&self, score: impl Fn(&T) -> Fit) -> Option<T> {
        let mut items = self.lock();
        let best = items
            .iter()
            .enumerate()
            .map(|(i, item)| (score(item), i))
            .max()?;
        match best {
            (Fit::Fits(_), i) => Some(items.swap_remove(i)),
            (Fit::Pass, _) => None,
            (Fit::Misfit, i) => {
                let misfit = items.swap_remove(i);
                // Freed outside the lock: dropping a context joins threads.
                drop(items);
                drop(misfit);
                None
            }
        }
    }

    /// Give `item` back after a call that succeeded.
    pub fn put(&self, mut item: T) {
        item.rest();
        self.lock().push(item);
    }

    /// Drop every item.
    pub fn clear(&self) {
        let items = std::mem::take(&mut *self.lock());
        drop(items);
    }

    /// Read something from the items on the shelf now.
    pub fn inspect<R>(&self, f: impl FnOnce(&[T]) -> R) -> R {
        f(&self.lock())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Idle for (u32, usize) {
        fn rest(&mut self) {}
    }

    #[derive(Debug, PartialEq)]
    struct Pool {
        resting: bool,
    }

    impl Idle for Pool {
        fn rest(&mut self) {
            self.resting = true;
        }
    }

    #[test]
    fn an_item_rests_when_it_goes_back_on_the_shelf() {
        let shelf = Shelf::default();
        shelf.put(Pool { resting: false });
        assert_eq!(shelf.take(|_| Fit::Fits(0)), Some(Pool { resting: true }));
    }

    fn by_value(wanted: u32) -> impl Fn(&(u32, usize)) -> Fit {
        move |&(shape, prefix)| {
            if shape == wanted {
                Fit::Fits(prefix)
            } else {
                Fit::Misfit
            }
        }
    }

    #[test]
    fn an_empty_shelf_lends_nothing() {
        let shelf: Shelf<(u32, usize)> = Shelf::default();
        assert_eq!(shelf.take(by_value(1)), None);
    }

    #[test]
    fn the_best_fitting_item_is_lent_and_comes_back() {
        let shelf = Shelf::default();
        shelf.put((1, 3));
        shelf.put((1, 9));
        shelf.put((1, 5));
        assert_eq!(shelf.take(by_value(1)), Some((1, 9)));
        assert_eq!(shelf.take(by_value(1)), Some((1, 5)));
        shelf.put((1, 9));
        assert_eq!(shelf.inspect(<[_]>::len), 2);
    }

    #[test]
    fn a_call_that_finds_no_fit_frees_a_misfit_first() {
        let shelf = Shelf::default();
        shelf.put((2, 7));
        shelf.put((3, 7));
        assert_eq!(shelf.take(by_value(1)), None);
        assert_eq!(shelf.inspect(<[_]>::len), 1, "one misfit dropped");
        assert_eq!(shelf.take(by_value(1)), None);
        assert_eq!(shelf.inspect(<[_]>::len), 0);
    }

    #[test]
    fn an_item_that_passes_stays_and_is_not_lent() {
        let shelf = Shelf::default();
        shelf.put((2, 7));
        let pass_others = |&(shape, prefix): &(u32, usize)| {
            if shape == 1 {
                Fit::Fits(prefix)
            } else {
                Fit::Pass
            }
        };
        assert_eq!(shelf.take(pass_others), None);
        assert_eq!(shelf.inspect(<[_]>::len), 1, "kept, not dropped");
        // A misfit beside it is still dropped first; an item that fits is
        // still lent before either.
        shelf.put((1, 3));
        assert_eq!(shelf.take(pass_others), Some((1, 3)));
        shelf.put((3, 0));
        let misfit_three = |&(shape, _): &(u32, usize)| {
            if shape == 3 {
                Fit::Misfit
            } else {
                Fit::Pass
            }
        };
        assert_eq!(shelf.take(misfit_three), None);
        assert_eq!(shelf.inspect(|items| items.to_vec()), vec![(2, 7)]);
    }

    #[test]
    fn calls_on_several_threads_each_get_their_own_item() {
        let shelf = std::sync::Arc::new(Shelf::default());
        shelf.put((1, 0));
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(4));
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let shelf = std::sync::Arc::clone(&shelf);
                let barrier = std::sync::Arc::clone(&barrier);
                std::thread::spawn(move || {
                    barrier.wait();
                    // A new item when the shelf is empty, as a call does.
                    let item = shelf.take(by_value(1)).unwrap_or((1, 0));
                    barrier.wait();
                    shelf.put(item);
                })
            })
            .collect();
        for h in handles {
            assert!(h.join().is_ok());
        }
        // Four calls held an item at once: four items now, one per call.
        assert_eq!(shelf.inspect(<[_]>::len), 4);
    }
}
