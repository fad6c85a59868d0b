//! The text a generation produces: token pieces appended one at a time,
//! decoded as UTF-8 as they arrive (a character split across tokens waits for
//! its last byte), with stop strings searched in the decoded text.

use crate::chat::reasoning::start_at_end;

/// Generated text plus the stop strings to watch for.
#[derive(Debug)]
pub struct Output {
    text: String,
    /// The start of a character whose other bytes have not come yet.
    partial: Vec<u8>,
    stop: Vec<String>,
    longest_stop: usize,
}

impl Output {
    pub fn new(stop: Vec<String>) -> Self {
        let longest_stop = stop.iter().map(String::len).max().unwrap_or(0);
        Self {
            text: String::new(),
            partial: Vec::new(),
            stop,
            longest_stop,
        }
    }

    /// Append one token's piece. Returns `true` when a stop string now occurs,
    /// in which case the text is cut right before its first occurrence.
    pub fn push(&mut self, piece: &[u8]) -> bool {
        let before = self.text.len();
        if self.partial.is_empty() {
            decode_into(&mut self.text, &mut self.partial, piece);
        } else {
            let mut bytes = std::mem::take(&mut self.partial);
            bytes.extend_from_slice(piece);
            decode_into(&mut self.text, &mut self.partial, &bytes);
        }
        if self.stop.is_empty() || self.text.len() == before {
            return false;
        }
        // Only a match that ends inside the new text can be new.
        let mut from = before.saturating_sub(self.longest_stop.saturating_sub(1));
        while !self.text.is_char_boundary(from) {
            from -= 1;
        }
        let window = &self.text.as_bytes()[from..];
        let first = self
            .stop
            .iter()
            .filter_map(|s| find(window, s.as_bytes()))
            .min();
        match first {
            Some(at) => {
                self.text.truncate(from + at);
                self.partial.clear();
                true
            }
            None => false,
        }
    }

    /// The text so far (a character still missing bytes is not in it).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// How many bytes at the end of [`Output::text`] could still become the
    /// start of a stop string: the longest tail that is a proper prefix of
    /// one. A stream holds them back until the next token decides.
    pub fn undecided_tail(&self) -> usize {
        self.stop
            .iter()
            .map(|s| start_at_end(&self.text, s))
            .max()
            .unwrap_or(0)
    }

    /// The text generated. A character cut off at the end (a run that
    /// stopped mid-character) is dropped; invalid bytes elsewhere became
    /// U+FFFD as they came.
    pub fn into_text(self) -> String {
        self.text
    }
}

/// Decode `bytes` onto `text` as `String::from_utf8_lossy` would, except that
/// an incomplete character at the end goes to `partial` (empty on entry) to
/// wait for its other bytes. Decoding piece by piece this way gives the same
/// text as decoding all the bytes at once.
fn decode_into(text: &mut String, partial: &mut Vec<u8>, mut bytes: &[u8]) {
    loop {
        match std::str::from_utf8(bytes) {
            Ok(valid) => {
                text.push_str(valid);
                return;
            }
            Err(e) => {
                let (valid, rest) = bytes.split_at(e.valid_up_to());
                // `valid_up_to` marks a valid prefix: this never falls back.
                text.push_str(std::str::from_utf8(valid).unwrap_or_default());
                match e.error_len() {
                    Some(n) => {
                        text.push(char::REPLACEMENT_CHARACTER);
                        bytes = &rest[n..];
                    }
                    None => {
                        partial.extend_from_slice(rest);
                        return;
                    }
                }
            }
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || needle.len() > haystack.len() {
        return None;
    }
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stops(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn stop_string_spanning_pieces_cuts_before_it() {
        let stop = stops(&["END"]);
        let mut out = Output::new(stop);
        assert!(!out.push(b"hello E"));
        assert!(!out.push(b"N"));
        assert!(out.push(b"D and more"));
        assert_eq!(out.into_text(), "hello ");
    }

    #[test]
    fn earliest_of_several_stop_strings_wins() {
        let stop = stops(&["zzz", "b"]);
        let mut out = Output::new(stop);
        assert!(out.push(b"a b zzz"));
        assert_eq!(out.into_text(), "a ");
    }

    #[test]
    fn without_stop_strings_everything_is_kept() {
        let mut out = Output::new(Vec::new());
        assert!(!out.push(b"abc"));
        assert_eq!(out.into_text(), "abc");
    }

    #[test]
    fn truncated_multibyte_character_is_dropped() {
        let mut out = Output::new(Vec::new());
        out.push("é".as_bytes());
        out.push(&"€".as_bytes()[..2]);
        assert_eq!(out.into_text(), "é");
    }

    #[test]
    fn invalid_bytes_in_the_middle_become_replacement_characters() {
        let mut out = Output::new(Vec::new());
        out.push(b"a\xFFb");
        assert_eq!(out.into_text(), "a\u{FFFD}b");
    }

    #[test]
    fn piecewise_decoding_equals_decoding_everything_at_once() {
        // Bytes from a small generator, rich in UTF-8 lead and continuation
        // bytes, cut into pieces of 1 to 4 bytes.
        let mut state = 0x2545_f491_u32;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            state
        };
        let alphabet = [
            b'a', 0x80, 0xBF, 0xC3, 0xA9, 0xE2, 0x82, 0xAC, 0xF0, 0x9F, 0xFF, 0xED, 0xA0,
        ];
        for _ in 0..2000 {
            let bytes: Vec<u8> = (0..(next() % 24))
                .map(|_| alphabet[(next() as usize) % alphabet.len()])
                .collect();
            let mut out = Output::new(Vec::new());
            let mut rest = &bytes[..];
            while !rest.is_empty() {
                let n = (1 + next() as usize % 4).min(rest.len());
                out.push(&rest[..n]);
                rest = &rest[n..];
            }
            let text = out.into_text();
            // What decoding all the bytes gives, less a character cut off at
            // the very end (at most 3 bytes).
            let matches = (0..=bytes.len().min(3))
                .any(|cut| String::from_utf8_lossy(&bytes[..bytes.len() - cut]) == text);
            assert!(matches, "{bytes:x?} decoded piecewise to {text:?}");
            assert!(
                String::from_utf8_lossy(&bytes).starts_with(&text),
                "{bytes:x?}"
            );
        }
    }

    #[test]
    fn a_character_split_across_pieces_appears_when_complete() {
        let euro = "€".as_bytes();
        let mut out = Output::new(Vec::new());
        out.push(b"a");
        out.push(&euro[..1]);
        assert_eq!(out.text(), "a");
        out.push(&euro[1..]);
        assert_eq!(out.text(), "a€");
    }

    #[test]
    fn undecided_tail_is_the_longest_prefix_of_a_stop_string_at_the_end() {
        let mut out = Output::new(stops(&["</end>", "ab"]));
        out.push(b"x </e");
        assert_eq!(out.undecided_tail(), 3);
        out.push(b"x a");
        assert_eq!(out.undecided_tail(), 1);
        out.push(b"c");
        assert_eq!(out.undecided_tail(), 0);
        assert_eq!(Output::new(Vec::new()).undecided_tail(), 0);
    }

    #[test]
    fn stop_string_with_a_multibyte_character_matches_when_it_is_complete() {
        let mut out = Output::new(stops(&["é!"]));
        let e = "é".as_bytes();
        assert!(!out.push(&[b'x', e[0]]));
        assert!(!out.push(&e[1..]));
        assert_eq!(out.undecided_tail(), 2);
        assert!(out.push(b"!y"));
        assert_eq!(out.into_text(), "x");
    }
}
