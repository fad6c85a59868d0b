//! String formats as grammars of the string content. Each grammar is a subset
//! of what the format's RFC allows, chosen so that every validator agrees the
//! output is valid (e.g. real calendar days, hostnames whose last label starts
//! with a letter).

use crate::grammar::expr::Expr;

/// The formats the converter enforces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Date,
    Time,
    DateTime,
    Duration,
    Uuid,
    Email,
    Hostname,
    Ipv4,
    Ipv6,
    Uri,
}

/// The names, for error messages.
pub const SUPPORTED: &str =
    "date, time, date-time, duration, uuid, email, hostname, ipv4, ipv6, uri";

impl Format {
    pub fn from_name(name: &str) -> Option<Format> {
        Some(match name {
            "date" => Format::Date,
            "time" => Format::Time,
            "date-time" => Format::DateTime,
            "duration" => Format::Duration,
            "uuid" => Format::Uuid,
            "email" => Format::Email,
            "hostname" => Format::Hostname,
            "ipv4" => Format::Ipv4,
            "ipv6" => Format::Ipv6,
            "uri" => Format::Uri,
            _ => return None,
        })
    }

    /// The rule name used for this format in generated grammars.
    pub fn rule_name(self) -> &'static str {
        match self {
            Format::Date => "fmt-date",
            Format::Time => "fmt-time",
            Format::DateTime => "fmt-date-time",
            Format::Duration => "fmt-duration",
            Format::Uuid => "fmt-uuid",
            Format::Email => "fmt-email",
            Format::Hostname => "fmt-hostname",
            Format::Ipv4 => "fmt-ipv4",
            Format::Ipv6 => "fmt-ipv6",
            Format::Uri => "fmt-uri",
        }
    }

    /// The language of the values (the same characters: formats need no
    /// JSON escaping).
    pub fn re(self) -> Option<crate::schema::lang::Re> {
        crate::schema::lang::Re::from_expr(&self.expr())
    }

    /// The grammar of the string content (without quotes).
    pub fn expr(self) -> Expr {
        match self {
            Format::Date => date(),
            Format::Time => time(),
            Format::DateTime => Expr::seq([date(), Expr::lit("T"), time()]),
            Format::Duration => duration(),
            Format::Uuid => uuid(),
            Format::Email => email(),
            Format::Hostname => hostname(),
            Format::Ipv4 => ipv4(),
            Format::Ipv6 => ipv6(),
            Format::Uri => uri(),
        }
    }
}

fn digit() -> Expr {
    Expr::class(&[('0', '9')])
}

fn digits(n: u32) -> Expr {
    digit().repeat(n, Some(n))
}

fn range(a: char, b: char) -> Expr {
    Expr::class(&[(a, b)])
}

fn hex() -> Expr {
    Expr::class(&[('0', '9'), ('A', 'F'), ('a', 'f')])
}

/// `YYYY-MM-DD`, a real calendar day (29 February only in leap years).
fn date() -> Expr {
    let year = digits(4);
    let m31 = Expr::alt(["01", "03", "05", "07", "08", "10", "12"].map(Expr::lit));
    let m30 = Expr::alt(["04", "06", "09", "11"].map(Expr::lit));
    let day_1_28 = Expr::alt([
        Expr::seq([Expr::lit("0"), range('1', '9')]),
        Expr::seq([Expr::lit("1"), digit()]),
        Expr::seq([Expr::lit("2"), range('0', '8')]),
    ]);
    let day_29_30 = Expr::alt([Expr::lit("29"), Expr::lit("30")]);
    let common = Expr::seq([
        year,
        Expr::lit("-"),
        Expr::alt([
            Expr::seq([
                m31,
                Expr::lit("-"),
                Expr::alt([day_1_28.clone(), day_29_30.clone(), Expr::lit("31")]),
            ]),
            Expr::seq([
                m30,
                Expr::lit("-"),
                Expr::alt([day_1_28.clone(), day_29_30]),
            ]),
            Expr::seq([Expr::lit("02-"), day_1_28]),
        ]),
    ]);
    Expr::alt([common, Expr::seq([leap_year(), Expr::lit("-02-29")])])
}

/// Four-digit years divisible by 4, except centuries not divisible by 400.
fn leap_year() -> Expr {
    // Last two digits divisible by 4 and not 00: 04, 08, 12, ..., 96.
    let mult4 = Expr::alt([
        Expr::seq([
            Expr::class(&[('0', '0'), ('2', '2'), ('4', '4'), ('6', '6'), ('8', '8')]),
            Expr::class(&[('4', '4'), ('8', '8')]),
        ]),
        Expr::seq([
            Expr::class(&[('2', '2'), ('4', '4'), ('6', '6'), ('8', '8')]),
            Expr::lit("0"),
        ]),
        Expr::seq([
            Expr::class(&[('1', '1'), ('3', '3'), ('5', '5'), ('7', '7'), ('9', '9')]),
            Expr::class(&[('2', '2'), ('6', '6')]),
        ]),
    ]);
    let century_mult4 = mult4.clone();
    Expr::alt([
        Expr::seq([digits(2), mult4]),
        // Centuries: 0000, 0400, 0800, 1200, ..., i.e. first two digits divisible by 4.
        Expr::seq([Expr::alt([Expr::lit("00"), century_mult4]), Expr::lit("00")]),
    ])
}

/// `HH:MM:SS`, optional fraction, and a `Z` or `±HH:MM` offset.
fn time() -> Expr {
    let hour = Expr::alt([
        Expr::seq([range('0', '1'), digit()]),
        Expr::seq([Expr::lit("2"), range('0', '3')]),
    ]);
    let minute = Expr::seq([range('0', '5'), digit()]);
    let offset = Expr::alt([
        Expr::lit("Z"),
        Expr::seq([
            Expr::class(&[('+', '+'), ('-', '-')]),
            hour.clone(),
            Expr::lit(":"),
            minute.clone(),
        ]),
    ]);
    Expr::seq([
        hour,
        Expr::lit(":"),
        minute.clone(),
        Expr::lit(":"),
        minute,
        Expr::seq([Expr::lit("."), digit().repeat(1, Some(9))]).opt(),
        offset,
    ])
}

/// ISO 8601 durations as RFC 3339 (appendix A) writes them: `P1Y2M3DT4H5M6S`, `P2W`, `PT30M`.
fn duration() -> Expr {
    let n = || digit().repeat(1, Some(9));
    let unit = |u: &str| Expr::seq([n(), Expr::lit(u)]);
    let second = unit("S");
    let minute = Expr::seq([unit("M"), second.clone().opt()]);
    let hour = Expr::seq([unit("H"), minute.clone().opt()]);
    let time = Expr::seq([Expr::lit("T"), Expr::alt([hour, minute, second])]);
    let day = unit("D");
    let month = Expr::seq([unit("M"), day.clone().opt()]);
    let year = Expr::seq([unit("Y"), month.clone().opt()]);
    let date = Expr::seq([Expr::alt([year, month, day]), time.clone().opt()]);
    Expr::seq([Expr::lit("P"), Expr::alt([date, time, unit("W")])])
}

fn uuid() -> Expr {
    let h = |n: u32| hex().repeat(n, Some(n));
    Expr::seq([
        h(8),
        Expr::lit("-"),
        h(4),
        Expr::lit("-"),
        h(4),
        Expr::lit("-"),
        h(4),
        Expr::lit("-"),
        h(12),
    ])
}

/// One DNS label: letters, digits and inner hyphens, at most 62 characters.
fn label(first: Expr) -> Expr {
    let alnum = Expr::class(&[('0', '9'), ('A', 'Z'), ('a', 'z')]);
    let inner = Expr::class(&[('-', '-'), ('0', '9'), ('A', 'Z'), ('a', 'z')]);
    Expr::seq([first, Expr::seq([inner.repeat(0, Some(60)), alnum]).opt()])
}

/// Up to four labels (at most 251 characters); the last starts with a letter.
fn hostname() -> Expr {
    let any = label(Expr::class(&[('0', '9'), ('A', 'Z'), ('a', 'z')]));
    let last = label(Expr::class(&[('A', 'Z'), ('a', 'z')]));
    Expr::seq([Expr::seq([any, Expr::lit(".")]).repeat(0, Some(3)), last])
}

/// `local@host` with a dot-atom local part of at most 64 characters (RFC
/// 5321): one atom of up to 64, or up to four atoms of up to 15 joined by dots.
fn email() -> Expr {
    let atom_char = Expr::class(&[
        ('+', '+'),
        ('-', '-'),
        ('0', '9'),
        ('A', 'Z'),
        ('_', '_'),
        ('a', 'z'),
    ]);
    let short = atom_char.clone().repeat(1, Some(15));
    let dotted = Expr::seq([
        short.clone(),
        Expr::seq([Expr::lit("."), short]).repeat(1, Some(3)),
    ]);
    let local = Expr::alt([atom_char.repeat(1, Some(64)), dotted]);
    Expr::seq([local, Expr::lit("@"), hostname()])
}

/// 0-255 without leading zeros.
fn octet() -> Expr {
    Expr::alt([
        Expr::seq([Expr::lit("25"), range('0', '5')]),
        Expr::seq([Expr::lit("2"), range('0', '4'), digit()]),
        Expr::seq([Expr::lit("1"), digit(), digit()]),
        Expr::seq([range('1', '9'), digit()]),
        digit(),
    ])
}

fn ipv4() -> Expr {
    Expr::seq([
        octet(),
        Expr::lit("."),
        octet(),
        Expr::lit("."),
        octet(),
        Expr::lit("."),
        octet(),
    ])
}

/// RFC 4291 text forms, `::` compression and an IPv4 tail included.
fn ipv6() -> Expr {
    let h16 = || hex().repeat(1, Some(4));
    let h16c = |n: u32| Expr::seq([h16(), Expr::lit(":")]).repeat(n, Some(n));
    let ls32 = Expr::alt([Expr::seq([h16(), Expr::lit(":"), h16()]), ipv4()]);
    // [ *k( h16 ":" ) h16 ] "::" n( h16 ":" ) ls32-or-less
    let before =
        |k: u32| Expr::seq([Expr::seq([h16(), Expr::lit(":")]).repeat(0, Some(k)), h16()]).opt();
    let mut forms = vec![
        Expr::seq([h16c(6), ls32.clone()]),
        Expr::seq([Expr::lit("::"), h16c(5), ls32.clone()]),
    ];
    for (k, n) in [(0u32, 4u32), (1, 3), (2, 2), (3, 1)] {
        forms.push(Expr::seq([
            before(k),
            Expr::lit("::"),
            h16c(n),
            ls32.clone(),
        ]));
    }
    forms.push(Expr::seq([before(4), Expr::lit("::"), ls32]));
    forms.push(Expr::seq([before(5), Expr::lit("::"), h16()]));
    forms.push(Expr::seq([before(6), Expr::lit("::")]));
    Expr::alt(forms)
}

/// An absolute URI with an authority: `scheme://host[:port][/path][?query][#fragment]`.
fn uri() -> Expr {
    let scheme = Expr::seq([
        Expr::class(&[('A', 'Z'), ('a', 'z')]),
        Expr::class(&[('+', '+'), ('-', '.'), ('0', '9'), ('A', 'Z'), ('a', 'z')])
            .repeat(0, Some(15)),
    ]);
    let unreserved = [
        ('-', '.'),
        ('0', '9'),
        ('A', 'Z'),
        ('_', '_'),
        ('a', 'z'),
        ('~', '~'),
    ];
    let sub_delims = [('!', '!'), ('$', '$'), ('&', ','), (';', ';'), ('=', '=')];
    let pct = Expr::seq([Expr::lit("%"), hex(), hex()]);
    let pchar_set: Vec<(char, char)> = unreserved
        .iter()
        .chain(sub_delims.iter())
        .copied()
        .chain([(':', ':'), ('@', '@')])
        .collect();
    let pchar = Expr::alt([Expr::class(&pchar_set), pct.clone()]);
    let mut qset = pchar_set.clone();
    qset.extend([('/', '/'), ('?', '?')]);
    let qchar = Expr::alt([Expr::class(&qset), pct]);
    let host = Expr::alt([hostname(), ipv4()]);
    let port = Expr::seq([Expr::lit(":"), digit().repeat(1, Some(5))]).opt();
    let path = Expr::seq([Expr::lit("/"), pchar.repeat(0, None)]).repeat(0, None);
    Expr::seq([
        scheme,
        Expr::lit("://"),
        host,
        port,
        path,
        Expr::seq([Expr::lit("?"), qchar.clone().repeat(0, None)]).opt(),
        Expr::seq([Expr::lit("#"), qchar.repeat(0, None)]).opt(),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(format: Format, good: &[&str], bad: &[&str]) {
        let re = regex::Regex::new(&format!("^(?:{})$", format.expr().to_regex())).unwrap();
        for g in good {
            assert!(re.is_match(g), "{format:?} should accept {g:?}");
        }
        for b in bad {
            assert!(!re.is_match(b), "{format:?} should reject {b:?}");
        }
    }

    #[test]
    fn names_round_trip() {
        for name in SUPPORTED.split(", ") {
            assert!(Format::from_name(name).is_some(), "{name}");
        }
        assert_eq!(Format::from_name("int32"), None);
    }

    #[test]
    fn dates_are_real_calendar_days() {
        check(
            Format::Date,
            &[
                "2024-01-31",
                "2024-02-29",
                "2000-02-29",
                "1999-12-31",
                "2023-04-30",
                "0000-02-29",
                "1600-02-29",
            ],
            &[
                "2023-02-29",
                "1900-02-29",
                "2024-04-31",
                "2024-13-01",
                "2024-00-10",
                "2024-01-00",
                "24-01-01",
                "2024-1-01",
                "2024-01-32",
            ],
        );
    }

    #[test]
    fn leap_years_follow_the_gregorian_rule() {
        let re = regex::Regex::new(&format!("^(?:{})$", leap_year().to_regex())).unwrap();
        for y in 0..10000u32 {
            let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
            assert_eq!(re.is_match(&format!("{y:04}")), leap, "{y}");
        }
    }

    #[test]
    fn times_and_date_times() {
        check(
            Format::Time,
            &[
                "00:00:00Z",
                "23:59:59+01:00",
                "12:30:00.123Z",
                "08:00:00-05:30",
            ],
            &["24:00:00Z", "12:60:00Z", "12:00:00", "12:00Z", "1:00:00Z"],
        );
        check(
            Format::DateTime,
            &["2024-05-01T12:00:00Z", "2024-02-29T00:00:00.5+02:00"],
            &[
                "2024-05-01 12:00:00Z",
                "2024-05-01T12:00:00",
                "2023-02-29T00:00:00Z",
            ],
        );
    }

    #[test]
    fn durations() {
        check(
            Format::Duration,
            &[
                "P1Y",
                "P1Y2M3DT4H5M6S",
                "PT30M",
                "P2W",
                "P3D",
                "PT1H30M",
                "P1M",
            ],
            &["P", "PT", "1Y", "P1H", "P1W2D", "PT1D", "P1.5Y"],
        );
    }

    #[test]
    fn uuids() {
        check(
            Format::Uuid,
            &[
                "123e4567-e89b-12d3-a456-426614174000",
                "ABCDEF01-2345-6789-ABCD-EF0123456789",
            ],
            &[
                "123e4567e89b12d3a456426614174000",
                "123e4567-e89b-12d3-a456-42661417400",
                "g23e4567-e89b-12d3-a456-426614174000",
            ],
        );
    }

    #[test]
    fn hostnames_and_emails() {
        check(
            Format::Hostname,
            &["example.com", "localhost", "a-b.c1.example.org", "x"],
            &["-a.com", "a-.com", "a..b", "example.123", "", "a_b.com"],
        );
        let long_atom = format!("{}@x.com", "a".repeat(64));
        let long_dotted = format!("{0}.{0}.{0}.{0}@x.com", "b".repeat(15));
        let too_long_atom = format!("{}@x.com", "a".repeat(65));
        check(
            Format::Email,
            &[
                "john.doe@example.com",
                "a+b@mail.co",
                "x@y",
                &long_atom,
                &long_dotted,
            ],
            &[
                "@example.com",
                "john@",
                "a b@c.d",
                "john..doe@x.com",
                &too_long_atom,
                // Local parts over 64 characters, as SmolLM2 once wrote them.
                "Hi.Ivehadachemate.Iveveentourage.IrelandIrelandIrelandIrelandIrel@a.britania.com",
                "ThisExampleEmailSyntaxExample1.py.py.py123255768661681551987413405545@gmail.com",
            ],
        );
    }

    #[test]
    fn ip_addresses() {
        check(
            Format::Ipv4,
            &["0.0.0.0", "192.168.1.1", "255.255.255.255"],
            &["256.1.1.1", "01.2.3.4", "1.2.3", "1.2.3.4.5"],
        );
        check(
            Format::Ipv6,
            &[
                "::",
                "::1",
                "2001:db8::1",
                "fe80::1:2:3:4",
                "1:2:3:4:5:6:7:8",
                "::ffff:192.168.0.1",
                "1::",
                "1:2:3:4:5:6:7::",
            ],
            &[
                "1:2:3:4:5:6:7:8:9",
                ":::",
                "1::2::3",
                "12345::",
                "g::1",
                "1:2:3:4:5:6:7",
            ],
        );
    }

    #[test]
    fn uris() {
        check(
            Format::Uri,
            &[
                "https://example.com",
                "http://a.b:8080/x/y?q=1&r=2#frag",
                "ftp://192.168.0.1/file.txt",
                "urn-x://h",
            ],
            &[
                "example.com",
                "/relative/path",
                "http://",
                "https://exa mple.com",
                "1http://x.com",
            ],
        );
    }
}
