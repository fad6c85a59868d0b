//! UTF-8 read one byte at a time, with a character left pending across
//! calls as llama.cpp's `decode_utf8` leaves it (`llama_partial_utf8`).
//!
//! Stricter than llama.cpp on malformed text: llama.cpp's decoder reads any
//! byte after a lead byte as a continuation, and so turns overlong forms,
//! surrogates and values above U+10FFFF into code points; here those are
//! rejected. A byte sequence llama.cpp reads leniently therefore kills a
//! recognizer, which then forces nothing: the cost of the difference is a
//! lost fast-forward on malformed output, never a wrong one. A NUL byte is
//! rejected too (llama.cpp stops reading a piece at NUL and never samples a
//! piece that starts with one).

/// The last Unicode code point.
pub(super) const LAST_SCALAR: u32 = 0x10_FFFF;

/// Whether `c` is a Unicode scalar value other than NUL: what a model's
/// valid UTF-8 output can contain.
pub(super) fn is_scalar(c: u32) -> bool {
    (1..=LAST_SCALAR).contains(&c) && !(0xD800..=0xDFFF).contains(&c)
}

/// A character whose first bytes were read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Partial {
    /// The bits read so far.
    value: u32,
    /// Continuation bytes still to come; 0: no character is pending.
    remain: u8,
    /// Length of the whole sequence in bytes.
    len: u8,
}

/// What one byte did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Step {
    /// A character is complete.
    Char(u32),
    /// More bytes of the character are needed.
    Pending,
    /// No valid UTF-8 continues this way.
    Invalid,
}

impl Partial {
    pub(super) fn is_pending(self) -> bool {
        self.remain > 0
    }

    /// Read one byte.
    pub(super) fn push(&mut self, byte: u8) -> Step {
        if self.remain == 0 {
            let (len, bits) = match byte {
                0x01..=0x7F => return Step::Char(u32::from(byte)),
                0xC2..=0xDF => (2, byte & 0x1F),
                0xE0..=0xEF => (3, byte & 0x0F),
                0xF0..=0xF4 => (4, byte & 0x07),
                // NUL, a stray continuation byte, an overlong lead (C0, C1)
                // or a lead beyond U+10FFFF (F5..FF).
                _ => return Step::Invalid,
            };
            *self = Partial {
                value: u32::from(bits),
                remain: len - 1,
                len,
            };
        } else {
            if byte & 0xC0 != 0x80 {
                *self = Partial::default();
                return Step::Invalid;
            }
            self.value = (self.value << 6) | u32::from(byte & 0x3F);
            self.remain -= 1;
        }
        match self.completions() {
            None => {
                *self = Partial::default();
                Step::Invalid
            }
            Some((c, _)) if self.remain == 0 => {
                *self = Partial::default();
                Step::Char(c)
            }
            Some(_) => Step::Pending,
        }
    }

    /// The scalar values `low..=high` the pending sequence may still become
    /// (llama.cpp's range in `match_partial_char`, without the overlong
    /// forms, surrogates and values beyond U+10FFFF it would let through),
    /// or `None` when no valid character starts with these bytes.
    pub(super) fn completions(self) -> Option<(u32, u32)> {
        let shift = 6 * u32::from(self.remain);
        let mut low = self.value << shift;
        let mut high = low | ((1u32 << shift) - 1);
        let shortest = match self.len {
            2 => 0x80,
            3 => 0x800,
            4 => 0x1_0000,
            _ => 0,
        };
        low = low.max(shortest);
        high = high.min(LAST_SCALAR);
        // Surrogate boundaries are 64-aligned, so a pending range never
        // holds surrogates strictly inside with scalars on both sides.
        if (0xD800..=0xDFFF).contains(&low) {
            low = 0xE000;
        }
        if (0xD800..=0xDFFF).contains(&high) {
            high = 0xD7FF;
        }
        (low <= high).then_some((low, high))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(bytes: &[u8]) -> Vec<Step> {
        let mut p = Partial::default();
        bytes.iter().map(|&b| p.push(b)).collect()
    }

    #[test]
    fn valid_sequences_decode_to_their_code_points() {
        for text in ["a", "é", "€", "😀", "\u{10FFFF}", "\u{E000}", "\u{D7FF}"] {
            let steps = read(text.as_bytes());
            let c = text.chars().next().map_or(0, u32::from);
            assert_eq!(steps.last(), Some(&Step::Char(c)), "{text:?}");
            assert!(
                steps[..steps.len() - 1].iter().all(|s| *s == Step::Pending),
                "{text:?}: {steps:?}"
            );
        }
    }

    #[test]
    fn malformed_sequences_are_refused_at_the_first_byte_that_rules_them_out() {
        let cases: [(&[u8], usize); 8] = [
            (b"\x00", 0),
            (b"\x80", 0),
            (b"\xC0\x80", 0),
            (b"\xE0\x80\x80", 1),
            (b"\xED\xA0\x80", 1),
            (b"\xF4\x90\x80\x80", 1),
            (b"\xF5", 0),
            (b"\xC3A", 1),
        ];
        for (bytes, at) in cases {
            let steps = read(bytes);
            assert_eq!(steps.get(at), Some(&Step::Invalid), "{bytes:?}: {steps:?}");
        }
    }

    #[test]
    fn a_pending_sequence_names_the_code_points_it_may_become() {
        let mut p = Partial::default();
        assert_eq!(p.push(0xC3), Step::Pending);
        assert_eq!(p.completions(), Some((0xC0, 0xFF)));
        let mut p = Partial::default();
        assert_eq!(p.push(0xED), Step::Pending);
        assert_eq!(p.completions(), Some((0xD000, 0xD7FF)));
        let mut p = Partial::default();
        assert_eq!(p.push(0xF0), Step::Pending);
        assert_eq!(p.completions(), Some((0x1_0000, 0x3_FFFF)));
    }
}
