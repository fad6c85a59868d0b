//! The classes of characters a description distinguishes: the coarsest
//! partition of the code points in which every set it mentions is a union of
//! classes. Sets then become bit sets over the classes.

use crate::hashing::Map;

use crate::schema::strings::CharSet;

/// A set of classes. Alphabets of up to 128 classes (nearly all) keep their
/// words inline: the automata build, intersect and hash millions of these
/// sets, and an allocation for each was a tenth of a slow conversion.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) struct Bits(Words);

/// Words inline (their count, the unused ones zero) or on the heap; one
/// alphabet's sets all take the same form, so the derived comparisons agree
/// with comparing the words.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Words {
    Inline([u64; INLINE], u8),
    Heap(Box<[u64]>),
}

/// Words kept inline.
const INLINE: usize = 2;

impl Bits {
    /// The set of `len` words given by `words`.
    fn collect(len: usize, words: impl Iterator<Item = u64>) -> Bits {
        if len <= INLINE {
            let mut inline = [0u64; INLINE];
            for (slot, w) in inline.iter_mut().zip(words) {
                *slot = w;
            }
            Bits(Words::Inline(inline, len as u8))
        } else {
            Bits(Words::Heap(words.collect()))
        }
    }

    fn words(&self) -> &[u64] {
        match &self.0 {
            Words::Inline(w, len) => w.get(..usize::from(*len)).unwrap_or(w),
            Words::Heap(w) => w,
        }
    }

    fn words_mut(&mut self) -> &mut [u64] {
        match &mut self.0 {
            Words::Inline(w, len) => {
                let len = usize::from(*len).min(INLINE);
                &mut w[..len]
            }
            Words::Heap(w) => w,
        }
    }

    pub(super) fn empty(n: usize) -> Bits {
        let len = n.div_ceil(64).max(1);
        Bits::collect(len, std::iter::repeat_n(0, len))
    }

    pub(super) fn full(n: usize) -> Bits {
        let mut b = Bits::empty(n);
        for i in 0..n {
            b.insert(i);
        }
        b
    }

    pub(super) fn insert(&mut self, i: usize) {
        if let Some(w) = self.words_mut().get_mut(i / 64) {
            *w |= 1 << (i % 64);
        }
    }

    pub(super) fn has(&self, i: usize) -> bool {
        self.words()
            .get(i / 64)
            .is_some_and(|w| w & (1 << (i % 64)) != 0)
    }

    pub(super) fn is_empty(&self) -> bool {
        self.words().iter().all(|w| *w == 0)
    }

    /// The words of `self` and `other` combined by `op`.
    fn zip(&self, other: &Bits, op: impl Fn(u64, u64) -> u64) -> Bits {
        let (a, b) = (self.words(), other.words());
        Bits::collect(
            a.len().min(b.len()),
            a.iter().zip(b.iter()).map(|(x, y)| op(*x, *y)),
        )
    }

    pub(super) fn and(&self, other: &Bits) -> Bits {
        self.zip(other, |a, b| a & b)
    }

    pub(super) fn or(&self, other: &Bits) -> Bits {
        self.zip(other, |a, b| a | b)
    }

    pub(super) fn minus(&self, other: &Bits) -> Bits {
        self.zip(other, |a, b| a & !b)
    }

    /// The lowest class in the set.
    pub(super) fn first(&self) -> Option<usize> {
        self.words()
            .iter()
            .enumerate()
            .find(|(_, w)| **w != 0)
            .map(|(i, w)| i * 64 + w.trailing_zeros() as usize)
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.words().iter().enumerate().flat_map(|(i, w)| {
            (0..64)
                .filter(move |b| w & (1u64 << b) != 0)
                .map(move |b| i * 64 + b)
        })
    }
}

/// The partition of the code points into classes.
#[derive(Debug, Clone)]
pub(super) struct Alphabet {
    /// Each class as a set of characters.
    classes: Vec<CharSet>,
    /// Sorted starts of the elementary intervals, with the class of each
    /// (`None` for the surrogate block, which holds no character).
    starts: Vec<(u32, Option<usize>)>,
}

impl Alphabet {
    /// The coarsest partition that every set in `sets` respects.
    pub(super) fn of(sets: &[&CharSet]) -> Alphabet {
        let mut cuts: Vec<u32> = vec![0, 0xD800, 0xE000];
        for set in sets {
            for &(a, b) in set.ranges() {
                cuts.push(a as u32);
                cuts.push(b as u32 + 1);
            }
        }
        cuts.retain(|&c| c <= char::MAX as u32);
        // Each elementary interval's membership signature decides its class.
        Alphabet::grouped(cuts, |c| {
            sets.iter().map(|s| s.contains(c)).collect::<Vec<bool>>()
        })
        .0
    }

    /// The classes of the elementary intervals that `cuts` start, grouped by
    /// `signature` of their first character; with each new class's signature,
    /// in class order.
    fn grouped<S: Clone + Eq + std::hash::Hash>(
        mut cuts: Vec<u32>,
        signature: impl Fn(char) -> S,
    ) -> (Alphabet, Vec<S>) {
        cuts.sort_unstable();
        cuts.dedup();
        let mut by_signature: Map<S, usize> = Map::default();
        let mut signatures: Vec<S> = Vec::new();
        let mut members: Vec<Vec<(char, char)>> = Vec::new();
        let mut starts = Vec::with_capacity(cuts.len());
        for (i, &start) in cuts.iter().enumerate() {
            let end = cuts.get(i + 1).map_or(char::MAX as u32, |n| n - 1);
            let (Some(a), Some(b)) = (char::from_u32(start), char::from_u32(end)) else {
                starts.push((start, None));
                continue;
            };
            let sig = signature(a);
            let next = members.len();
            let class = *by_signature.entry(sig.clone()).or_insert(next);
            if class == next {
                members.push(Vec::new());
                signatures.push(sig);
            }
            if let Some(m) = members.get_mut(class) {
                m.push((a, b));
            }
            starts.push((start, Some(class)));
        }
        let alphabet = Alphabet {
            classes: members.into_iter().map(CharSet::from_ranges).collect(),
            starts,
        };
        (alphabet, signatures)
    }

    pub(super) fn len(&self) -> usize {
        self.classes.len()
    }

    /// The coarsest common refinement of several alphabets, with, for each
    /// of them, the class of its own that each class of the refinement lies
    /// in (`None` cannot happen: every alphabet covers every character).
    pub(super) fn refinement(alphabets: &[&Alphabet]) -> (Alphabet, Vec<Vec<Option<usize>>>) {
        let cuts: Vec<u32> = alphabets
            .iter()
            .flat_map(|a| a.starts.iter().map(|(s, _)| *s))
            .collect();
        // Each elementary interval's classes in the alphabets decide its class.
        let (joint, signatures) = Alphabet::grouped(cuts, |c| {
            alphabets
                .iter()
                .map(|x| x.class_of(c))
                .collect::<Vec<Option<usize>>>()
        });
        let maps = (0..alphabets.len())
            .map(|i| {
                signatures
                    .iter()
                    .map(|sig| sig.get(i).copied().flatten())
                    .collect()
            })
            .collect();
        (joint, maps)
    }

    /// The class of a character.
    pub(super) fn class_of(&self, c: char) -> Option<usize> {
        let code = c as u32;
        let i = self.starts.partition_point(|(s, _)| *s <= code);
        self.starts
            .get(i.checked_sub(1)?)
            .and_then(|(_, class)| *class)
    }

    /// The classes a set (one of those the alphabet was made of) covers.
    pub(super) fn bits_of(&self, set: &CharSet) -> Bits {
        let mut bits = Bits::empty(self.len());
        for (i, class) in self.classes.iter().enumerate() {
            if let Some(&(a, _)) = class.ranges().first() {
                if set.contains(a) {
                    bits.insert(i);
                }
            }
        }
        bits
    }

    /// The characters of a set of classes.
    pub(super) fn chars_of(&self, bits: &Bits) -> CharSet {
        let mut ranges = Vec::new();
        for i in bits.iter() {
            if let Some(class) = self.classes.get(i) {
                ranges.extend_from_slice(class.ranges());
            }
        }
        CharSet::from_ranges(ranges)
    }
}
