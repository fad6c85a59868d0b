//! Repetition operators (`*`, `+`, `?`, `{m,n}`) and their expansion into
//! copies and generated rules, as llama.cpp expands them.
//!
//! One concern with `parser.rs`, split for size: the parser reads an
//! operator into a [`Repeat`] and this file expands it on the parser's
//! state (they import each other on purpose).

use super::elements::{Elem, Kind, Origin};
use super::errors::{excerpt, Fail};
use super::parser::{Frame, Number, Parser};
use super::{MAX_EXPANSION, MAX_REPETITION, UNSET};

/// What a repetition operator asks for.
pub(super) struct Repeat {
    pub(super) op: usize,
    pub(super) min: u64,
    pub(super) max: Option<u64>,
}

impl<'a> Parser<'a> {
    pub(super) fn braces(&mut self, open: usize, frame: &mut Frame) -> Result<usize, Fail> {
        let nested = frame.nested;
        let pos = self.skip_space(open + 1, nested);
        let (Some(min), after_min) = self.number(pos) else {
            return Err(self.expected(pos, "a number after \"{\""));
        };
        let min = count(&min)?;
        let pos = self.skip_space(after_min, nested);
        let (max, end) = match self.byte(pos) {
            Some(b'}') => (Some(min), pos),
            Some(b',') => {
                let (max, end) = self.brace_max(pos + 1, nested)?;
                (max.as_ref().map(count).transpose()?, end)
            }
            _ => return Err(self.expected(pos, "\",\" or \"}\" in repetition")),
        };
        if let Some(max) = max.filter(|&max| max < min) {
            return Err(Fail::new(
                open,
                format!("repetition range is inverted: minimum {min} > maximum {max}"),
            ));
        }
        self.repeat(frame, &Repeat { op: open, min, max })?;
        Ok(self.skip_space(end + 1, nested))
    }

    /// After `{m,`: the optional maximum and the position of `}`.
    fn brace_max(&self, pos: usize, nested: bool) -> Result<(Option<Number<'a>>, usize), Fail> {
        let mut pos = self.skip_space(pos, nested);
        let (max, after) = self.number(pos);
        if max.is_some() {
            pos = self.skip_space(after, nested);
        }
        self.expect_byte(pos, b'}', "\"}\" to close the repetition")?;
        Ok((max, pos))
    }

    /// Expand a repetition of the frame's last item the way llama.cpp does:
    /// `S{m,n}` becomes m copies of S and a chain of n-m optional rules
    /// (`S'(k) ::= S S'(k-1) |`), `S{m,}` m copies and `S' ::= S S' |`.
    pub(super) fn repeat(&mut self, frame: &mut Frame, rep: &Repeat) -> Result<(), Fail> {
        if frame.last_start >= frame.elems.len() {
            return Err(Fail::new(
                rep.op,
                format!("{} has nothing to repeat", self.found(rep.op)),
            ));
        }
        let total = match rep.max {
            Some(max) if max > 0 => max,
            _ => rep.min.max(1),
        };
        let n_prev = frame.n_prev.saturating_mul(total);
        if n_prev > MAX_REPETITION {
            let hint = if frame.n_prev_has_names {
                "; rules first named inside the repeated group count too, so defining them \
                 before this rule may help"
            } else {
                ""
            };
            return Err(Fail::new(
                rep.op,
                format!(
                    "nested repetition is too large: llama.cpp would copy {n_prev} rules \
                     (limit {MAX_REPETITION}){hint}"
                ),
            ));
        }
        let span = frame.elems.split_off(frame.last_start);
        let n_opt = rep.max.map_or(1, |max| max.saturating_sub(rep.min));
        self.charge_expansion(rep, span.len() as u64, n_opt)?;
        for _ in 0..rep.min {
            frame.elems.extend_from_slice(&span);
        }
        let mut last = UNSET;
        for i in 0..n_opt {
            let id = self.generated(rep.op, Origin::Repetition);
            let start = self.arena.len();
            self.arena.extend_from_slice(&span);
            if rep.max.is_none() {
                self.arena.push(Elem::new(Kind::Ref, id));
            } else if i > 0 {
                self.arena.push(Elem::new(Kind::Ref, last));
            }
            self.arena.push(Elem::new(Kind::Alt, 0));
            self.arena.push(Elem::new(Kind::End, 0));
            self.set_rule(id, start);
            last = id;
        }
        if n_opt > 0 {
            frame.push(Kind::Ref, last);
        }
        frame.n_prev = n_prev;
        Ok(())
    }

    fn charge_expansion(&mut self, rep: &Repeat, span: u64, n_opt: u64) -> Result<(), Fail> {
        let copies = rep.min.saturating_sub(1).saturating_mul(span);
        let rules = n_opt.saturating_mul(span.saturating_add(3));
        self.expanded = self
            .expanded
            .saturating_add(copies)
            .saturating_add(rules)
            .saturating_add(1);
        if self.expanded > MAX_EXPANSION {
            return Err(Fail::new(
                rep.op,
                format!(
                    "repetitions expand the grammar to more than {MAX_EXPANSION} elements; \
                     repeat shorter items or fewer times"
                ),
            ));
        }
        Ok(())
    }
}

/// A repetition count, within [`MAX_REPETITION`].
fn count(number: &Number<'_>) -> Result<u64, Fail> {
    match number.value {
        Some(value) if value <= MAX_REPETITION => Ok(value),
        _ => Err(Fail::new(
            number.pos,
            format!(
                "repetition count {} exceeds the limit {MAX_REPETITION}",
                excerpt(number.text)
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use crate::grammar::check::tests::{expect_message, timed, NEAR_LIMIT};

    #[test]
    fn hostile_repetitions() {
        // (name, before, piece, count, after, expected): the grammar is
        // `before`, `piece` repeated `count` times, `after`; `None`:
        // accepted, `Some(part)`: refused with a message containing `part`.
        type Case<'a> = (&'a str, &'a str, &'a str, usize, &'a str, Option<&'a str>);
        let expands = Some("repetitions expand the grammar");
        let cases: &[Case] = &[
            (
                "1000-char literal x2000",
                "root ::= \"",
                "a",
                1000,
                "\"{2000}",
                None,
            ),
            (
                "long literal x2000",
                "root ::= \"",
                "a",
                1001,
                "\"{2000}",
                expands,
            ),
            (
                "1 MB of stacked +",
                "root ::= \"a\"",
                "+",
                NEAR_LIMIT - 16,
                "",
                expands,
            ),
            (
                "1 MB of stacked *",
                "root ::= \"a\"",
                "*",
                NEAR_LIMIT - 16,
                "",
                expands,
            ),
            (
                "1000 stacked *",
                "root ::= \"a\"",
                "*",
                1000,
                "",
                Some("can match the empty string"),
            ),
            ("1000 stacked ?", "root ::= \"a\"", "?", 1000, "", None),
            (
                "150 x {0,2000}",
                "root ::= ",
                "[a-z]{0,2000} ",
                150,
                "",
                None,
            ),
            (
                "1000 x {0,2000}",
                "root ::= ",
                "[a-z]{0,2000} ",
                1000,
                "",
                expands,
            ),
            (
                "1 MB repetition count",
                "root ::= \"a\"{",
                "9",
                NEAR_LIMIT - 16,
                "}",
                Some("exceeds the limit 2000"),
            ),
        ];
        for &(name, before, piece, count, after, expected) in cases {
            let text = format!("{before}{}{after}", piece.repeat(count));
            match expected {
                None => assert!(timed(name, &text).is_ok(), "{name}"),
                Some(needle) => expect_message(timed(name, &text), needle),
            }
        }
    }
}
