//! The deterministic generator of the numeric and regex tests' random cases
//! (no dependency on `rand`; the same cases on every run). One definition,
//! so that both draw from the same sequence they always have.

/// A 64-bit linear congruential generator; the field is its state (the
/// seed, to begin with).
pub(crate) struct Lcg(pub(crate) u64);

impl Lcg {
    /// The next number, in `0..n` (`n > 0`).
    pub(crate) fn next(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }

    /// The next index, in `0..n` (`n > 0`).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        self.next(n as u64) as usize
    }
}
