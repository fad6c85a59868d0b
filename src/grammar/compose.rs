//! Putting grammars together: every rule of a grammar renamed with a prefix,
//! so that several grammars (one per tool, say) live in one without their
//! rules colliding, each reached through its own `PREFIX` + `root`.

/// `gbnf` with every rule name (definitions and references) prefixed by
/// `prefix`; string literals, character classes, token references and
/// comments are copied as they are.
pub fn with_prefix(gbnf: &str, prefix: &str) -> String {
    let mut out = String::with_capacity(gbnf.len() + gbnf.len() / 4);
    let mut chars = gbnf.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        match c {
            '"' | '[' => {
                let close = if c == '"' { '"' } else { ']' };
                out.push(c);
                while let Some((_, d)) = chars.next() {
                    out.push(d);
                    if d == '\\' {
                        if let Some((_, escaped)) = chars.next() {
                            out.push(escaped);
                        }
                    } else if d == close {
                        break;
                    }
                }
            }
            '<' | '{' => {
                // A token reference `<[123]>` or a repetition count `{2,5}`,
                // copied whole.
                let close = if c == '<' { '>' } else { '}' };
                out.push(c);
                for (_, d) in chars.by_ref() {
                    out.push(d);
                    if d == close {
                        break;
                    }
                }
            }
            '#' => {
                out.push(c);
                for (_, d) in chars.by_ref() {
                    out.push(d);
                    if d == '\n' {
                        break;
                    }
                }
            }
            c if is_name_char(c) => {
                let mut end = at + c.len_utf8();
                while let Some(&(i, d)) = chars.peek() {
                    if !is_name_char(d) {
                        break;
                    }
                    end = i + d.len_utf8();
                    chars.next();
                }
                out.push_str(prefix);
                out.push_str(&gbnf[at..end]);
            }
            _ => out.push(c),
        }
    }
    out
}

/// A character of a GBNF rule name (llama.cpp: `[a-zA-Z0-9-]`).
fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-'
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grammar::check::check;

    #[test]
    fn rule_names_are_prefixed_and_text_is_not() {
        let gbnf = "root ::= item (\", \" item)* # a list\nitem ::= \"root\\\" item\" [a-z\\]] x-1{2}\nx-1 ::= <[42]> | \"\\\\\"\n";
        assert_eq!(
            with_prefix(gbnf, "t0-"),
            "t0-root ::= t0-item (\", \" t0-item)* # a list\nt0-item ::= \"root\\\" item\" [a-z\\]] t0-x-1{2}\nt0-x-1 ::= <[42]> | \"\\\\\"\n"
        );
    }

    #[test]
    fn a_prefixed_grammar_still_checks_and_composes() {
        let a = "root ::= \"a\" x\nx ::= [0-9]+\n";
        let b = "root ::= \"b\" x?\nx ::= \"x\"\n";
        let joined = format!(
            "root ::= t0-root | t1-root\n{}{}",
            with_prefix(a, "t0-"),
            with_prefix(b, "t1-")
        );
        assert!(check(&joined).is_ok(), "{joined}");
    }
}
