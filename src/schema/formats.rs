//! String formats as grammars of the string content. Each grammar is a subset
//! of what the format's RFC allows, chosen so that every validator agrees the
//! output is valid (e.g. real calendar days, hostnames whose last label starts
//! with a letter).
//!
//! Every grammar is built from literals, classes, sequences, alternations and
//! repetitions only (no negated class, no rule reference), and none holds `"`,
//! `\` or a control character, so the content needs no JSON escaping and can be
//! turned into an automaton over decoded characters.

use crate::grammar::expr::Expr;

/// The formats the converter enforces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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
    UriReference,
    Iri,
    IriReference,
    JsonPointer,
    RelativeJsonPointer,
    Byte,
}

/// The names, for error messages.
pub const SUPPORTED: &str = "date, time, date-time, duration, uuid, email, hostname, ipv4, ipv6, \
     uri, uri-reference, iri, iri-reference, json-pointer, relative-json-pointer, byte";

/// Formats that JSON Schema defines (and validators check) but the
/// converter does not enforce: they throw.
pub const UNENFORCED: &[&str] = &["regex", "uri-template", "idn-email", "idn-hostname"];

/// Names people write for a standard format under another name.
const ALIASES: &[(&str, &str)] = &[
    ("url", "uri"),
    ("iso8601", "date-time"),
    ("iso-8601", "date-time"),
    ("full-date", "date"),
    ("full-time", "time"),
    ("ip-address", "ipv4"),
    ("host-name", "hostname"),
];

/// What a `format` name is to the converter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FormatName {
    /// Enforced.
    Enforced(Format),
    /// A format JSON Schema defines that the converter cannot enforce.
    Unenforced,
    /// Most likely a misspelling of (or another name for) this standard one.
    NearMiss(&'static str),
    /// A name no JSON Schema vocabulary defines (`textarea`, `topic`): an
    /// annotation, which validators ignore and so does the converter.
    Custom,
}

impl FormatName {
    pub fn of(name: &str) -> FormatName {
        if let Some(f) = Format::from_name(name) {
            return FormatName::Enforced(f);
        }
        if UNENFORCED.contains(&name) {
            return FormatName::Unenforced;
        }
        let lower = name.to_ascii_lowercase();
        if let Some((_, meant)) = ALIASES.iter().find(|(a, _)| *a == lower) {
            return FormatName::NearMiss(meant);
        }
        let plain = |s: &str| -> String {
            s.chars()
                .filter(|c| !matches!(c, '-' | '_' | ' '))
                .collect::<String>()
                .to_ascii_lowercase()
        };
        let limit = if name.len() >= 8 { 2 } else { 1 };
        let standard = STANDARD_NAMES.iter().chain(UNENFORCED);
        let near = standard
            .map(|s| {
                let d = if plain(s) == plain(name) {
                    0
                } else {
                    crate::schema::keywords::distance(&lower, s)
                };
                (*s, d)
            })
            .filter(|(_, d)| *d <= limit)
            .min_by_key(|(_, d)| *d);
        match near {
            // Short names count only when equal but for case and dashes.
            Some((meant, d)) if d == 0 || name.len() >= 4 => FormatName::NearMiss(meant),
            _ => FormatName::Custom,
        }
    }
}

/// The names of the enforced formats.
const STANDARD_NAMES: &[&str] = &[
    "date",
    "time",
    "date-time",
    "duration",
    "uuid",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "json-pointer",
    "relative-json-pointer",
    "byte",
];

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
            "uri-reference" => Format::UriReference,
            "iri" => Format::Iri,
            "iri-reference" => Format::IriReference,
            "json-pointer" => Format::JsonPointer,
            "relative-json-pointer" => Format::RelativeJsonPointer,
            "byte" => Format::Byte,
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
            Format::UriReference => "fmt-uri-reference",
            Format::Iri => "fmt-iri",
            Format::IriReference => "fmt-iri-reference",
            Format::JsonPointer => "fmt-json-pointer",
            Format::RelativeJsonPointer => "fmt-relative-json-pointer",
            Format::Byte => "fmt-byte",
        }
    }

    /// Its strings within `min..=max` characters written without an
    /// automaton, for bounds whose automaton would be too large (a URI of at
    /// most 255 characters): every repetition capped at the largest count
    /// that keeps the longest string within `max`. That is a subset of the
    /// format's strings of those lengths (sound; the whole set when the
    /// format is already short enough). `None` when the shortest string is
    /// below `min` (a lower bound cannot be written without counting) or
    /// even the fewest repetitions exceed `max`.
    pub fn expr_within(self, min: u64, max: Option<u64>) -> Option<Expr> {
        let expr = self.expr();
        if shortest(&expr) < min {
            return None;
        }
        let Some(max) = max else {
            return Some(expr);
        };
        let fits = |e: &Expr| e.longest_len().is_some_and(|l| l <= max);
        if fits(&expr) {
            return Some(expr);
        }
        // The longest string grows with the cap: the largest cap that fits.
        let ceiling = u32::try_from(max).unwrap_or(u32::MAX);
        if !fits(&capped(&expr, 0)) {
            return None;
        }
        let (mut lo, mut hi) = (0u32, ceiling);
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            if fits(&capped(&expr, mid)) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        Some(capped(&expr, lo))
    }

    /// The most characters of any of its strings; `None`: unbounded.
    pub fn longest_len(self) -> Option<u64> {
        thread_local! {
            static LONGEST: std::cell::RefCell<crate::hashing::Map<Format, Option<u64>>> =
                std::cell::RefCell::default();
        }
        LONGEST.with(|memo| {
            *memo
                .borrow_mut()
                .entry(self)
                .or_insert_with(|| self.expr().longest_len())
        })
    }

    /// The fewest characters of any of its strings.
    pub fn shortest_len(self) -> u64 {
        thread_local! {
            static SHORTEST: std::cell::RefCell<crate::hashing::Map<Format, u64>> =
                std::cell::RefCell::default();
        }
        SHORTEST.with(|memo| {
            *memo
                .borrow_mut()
                .entry(self)
                .or_insert_with(|| shortest(&self.expr()))
        })
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
            Format::Uri => uri(&UriChars::new(false)),
            Format::UriReference => uri_reference(&UriChars::new(false)),
            Format::Iri => uri(&UriChars::new(true)),
            Format::IriReference => uri_reference(&UriChars::new(true)),
            Format::JsonPointer => json_pointer(),
            Format::RelativeJsonPointer => relative_json_pointer(),
            Format::Byte => byte(),
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

/// A set of single characters as a class.
fn chars(set: &str) -> Expr {
    let mut ranges: Vec<(char, char)> = set.chars().map(|c| (c, c)).collect();
    ranges.sort_unstable();
    Expr::class(&ranges)
}

/// `YYYY-MM-DD`, a real calendar day (29 February only in leap years) of the
/// years 0001-9999: Python's validators (`datetime.date`, rfc3339-validator)
/// have no year 0.
fn date() -> Expr {
    let year = Expr::alt([
        Expr::seq([range('1', '9'), digits(3)]),
        Expr::seq([Expr::lit("0"), range('1', '9'), digits(2)]),
        Expr::seq([Expr::lit("00"), range('1', '9'), digit()]),
        Expr::seq([Expr::lit("000"), range('1', '9')]),
    ]);
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

/// Four-digit years divisible by 4, except centuries not divisible by 400,
/// and except 0000 (see [`date`]).
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
        // Centuries: 0400, 0800, 1200, ..., i.e. first two digits divisible by 4 (not 0000).
        Expr::seq([century_mult4, Expr::lit("00")]),
    ])
}

/// `HH:MM:SS`, optional fraction, and a `Z` or `±HH:MM` offset (HH 00-23,
/// MM 00-59). Seconds stop at 59: a leap second is valid only at 23:59:60 UTC,
/// which depends on the offset. RFC 3339 allows a lowercase `t` and `z`, and the
/// JSON Schema validators accept them, but other consumers (PHP's
/// `DateTime::createFromFormat(DATE_RFC3339)`) do not: uppercase only.
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

fn alnum() -> Expr {
    Expr::class(&[('0', '9'), ('A', 'Z'), ('a', 'z')])
}

/// One DNS label of at most `max` (5 to 63) characters: letters, digits and
/// inner hyphens, never two hyphens in the third and fourth places (RFC 5891
/// reserves those for A-labels such as `xn--…`, whose Punycode validators
/// decode and check).
fn label(first: Expr, max: u32) -> Expr {
    let inner = Expr::class(&[('-', '-'), ('0', '9'), ('A', 'Z'), ('a', 'z')]);
    // The third and fourth characters, when neither is the last.
    let third_fourth = Expr::alt([
        Expr::seq([alnum(), inner.clone()]),
        Expr::seq([Expr::lit("-"), alnum()]),
    ]);
    let tail = Expr::alt([
        alnum(),
        Expr::seq([inner.clone(), alnum()]),
        Expr::seq([inner.clone(), inner.clone(), alnum()]),
        Expr::seq([
            inner.clone(),
            third_fourth,
            inner.repeat(0, Some(max - 5)),
            alnum(),
        ]),
    ]);
    Expr::seq([first, tail.opt()])
}

/// `n` to `m` labels joined by dots, each of at most `max` characters; the
/// last starts with a letter (so that no validator reads an IPv4 address).
fn labels(n: u32, m: u32, max: u32) -> Expr {
    let any = label(alnum(), max);
    let last = label(Expr::class(&[('A', 'Z'), ('a', 'z')]), max);
    Expr::seq([
        Expr::seq([any, Expr::lit(".")]).repeat(n - 1, Some(m - 1)),
        last,
    ])
}

/// Up to four labels of at most 62 characters (at most 251 in all).
fn hostname() -> Expr {
    labels(1, 4, 62)
}

/// `local@domain` with a dot-atom local part of at most 64 characters (RFC
/// 5321): one atom of up to 64, or up to four atoms of up to 15 joined by dots.
/// The domain is dotted, as ajv-formats and PHP's `FILTER_VALIDATE_EMAIL`
/// require: two or three labels of up to 62 characters, or four of up to 46,
/// so that the whole address stays within 254 characters.
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
    let domain = Expr::alt([labels(2, 3, 62), labels(4, 4, 46)]);
    Expr::seq([local, Expr::lit("@"), domain])
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

/// RFC 3987 `ucschar` in the Basic Multilingual Plane, less the
/// bidirectional formatting characters, which RFC 3987 (section 4.1) forbids
/// in IRIs (U+200E, U+200F, U+202A-U+202E, and the Arabic letter mark U+061C
/// and isolates U+2066-U+2069 that Unicode added since). The supplementary
/// planes are left out: rfc3987-syntax, which Python's jsonschema uses without
/// the GPL-licensed rfc3987, knows only the BMP ranges.
const UCSCHAR: [(char, char); 7] = [
    ('\u{A0}', '\u{61B}'),
    ('\u{61D}', '\u{200D}'),
    ('\u{2010}', '\u{2029}'),
    ('\u{202F}', '\u{2065}'),
    ('\u{206A}', '\u{D7FF}'),
    ('\u{F900}', '\u{FDCF}'),
    ('\u{FDF0}', '\u{FFEF}'),
];

/// RFC 3987 `iprivate` in the BMP (as [`UCSCHAR`]): private-use code points,
/// allowed in an IRI's query only.
const IPRIVATE: (char, char) = ('\u{E000}', '\u{F8FF}');

/// The characters of a URI's (or, with `iri`, an IRI's) path, query and
/// fragment.
struct UriChars {
    /// `pchar`: unreserved, sub-delims, `:`, `@` or a percent-encoding.
    pchar: Expr,
    /// `segment-nz-nc`'s character: a `pchar` other than `:`.
    pchar_nc: Expr,
    /// A query's character: a `pchar`, `/` or `?` (and `iprivate` in an IRI).
    query: Expr,
    /// A fragment's character: a `pchar`, `/` or `?`.
    fragment: Expr,
}

impl UriChars {
    fn new(iri: bool) -> UriChars {
        let mut nc = vec![
            // unreserved: ALPHA DIGIT - . _ ~
            ('-', '.'),
            ('0', '9'),
            ('A', 'Z'),
            ('_', '_'),
            ('a', 'z'),
            ('~', '~'),
            // sub-delims: ! $ & ' ( ) * + , ; =
            ('!', '!'),
            ('$', '$'),
            ('&', ','),
            (';', ';'),
            ('=', '='),
            ('@', '@'),
        ];
        if iri {
            nc.extend(UCSCHAR);
        }
        let mut pchar = nc.clone();
        pchar.push((':', ':'));
        let mut fragment = pchar.clone();
        fragment.extend([('/', '/'), ('?', '?')]);
        let mut query = fragment.clone();
        if iri {
            query.push(IPRIVATE);
        }
        let with_pct = |mut ranges: Vec<(char, char)>| {
            ranges.sort_unstable();
            Expr::alt([
                Expr::class(&ranges),
                Expr::seq([Expr::lit("%"), hex(), hex()]),
            ])
        };
        UriChars {
            pchar: with_pct(pchar),
            pchar_nc: with_pct(nc),
            query: with_pct(query),
            fragment: with_pct(fragment),
        }
    }

    /// `path-abempty`: any number of `/segment`.
    fn path_abempty(&self) -> Expr {
        Expr::seq([Expr::lit("/"), self.pchar.clone().repeat(0, None)]).repeat(0, None)
    }

    /// `[ "?" query ] [ "#" fragment ]`.
    fn query_fragment(&self) -> Expr {
        Expr::seq([
            Expr::seq([Expr::lit("?"), self.query.clone().repeat(0, None)]).opt(),
            Expr::seq([Expr::lit("#"), self.fragment.clone().repeat(0, None)]).opt(),
        ])
    }
}

/// `host [":" port]`: a hostname or an IPv4 address (ASCII, also in IRIs),
/// a port 0-65535 without leading zeros (RFC 3986 allows any digits, PHP's
/// `FILTER_VALIDATE_URL` and WHATWG URL parsers only a TCP port).
fn authority() -> Expr {
    let port = Expr::alt([
        digit(),
        Expr::seq([range('1', '9'), digit().repeat(1, Some(3))]),
        Expr::seq([range('1', '5'), digits(4)]),
        Expr::seq([Expr::lit("6"), range('0', '4'), digits(3)]),
        Expr::seq([Expr::lit("65"), range('0', '4'), digits(2)]),
        Expr::seq([Expr::lit("655"), range('0', '2'), digit()]),
        Expr::seq([Expr::lit("6553"), range('0', '5')]),
    ]);
    Expr::seq([
        Expr::alt([hostname(), ipv4()]),
        Expr::seq([Expr::lit(":"), port]).opt(),
    ])
}

/// `scheme ":"`: a letter, then up to 15 letters, digits, `+`, `-` or `.`.
fn scheme() -> Expr {
    Expr::seq([
        Expr::class(&[('A', 'Z'), ('a', 'z')]),
        Expr::class(&[('+', '+'), ('-', '.'), ('0', '9'), ('A', 'Z'), ('a', 'z')])
            .repeat(0, Some(15)),
        Expr::lit(":"),
    ])
}

/// An absolute URI (or IRI) with an authority:
/// `scheme://host[:port][/path][?query][#fragment]`.
fn uri(c: &UriChars) -> Expr {
    Expr::seq([
        scheme(),
        Expr::lit("//"),
        authority(),
        c.path_abempty(),
        c.query_fragment(),
    ])
}

/// A URI as [`uri`] or an RFC 3986 `relative-ref`: a network path
/// (`//host[:port]/path`), an absolute path (`/a/b`, never `//`), a relative
/// path whose first segment has no colon (`a/b`, not `a:b`, which would read
/// as a scheme), or none; then an optional query and fragment (`?q`, `#f`, and
/// the empty reference). A URI and a network path share their grammar, the
/// scheme optional.
fn uri_reference(c: &UriChars) -> Expr {
    let segments = Expr::seq([Expr::lit("/"), c.pchar.clone().repeat(0, None)]).repeat(0, None);
    let part = Expr::alt([
        Expr::seq([
            scheme().opt(),
            Expr::lit("//"),
            authority(),
            c.path_abempty(),
        ]),
        Expr::seq([
            Expr::lit("/"),
            Expr::seq([c.pchar.clone().repeat(1, None), segments.clone()]).opt(),
        ]),
        Expr::seq([c.pchar_nc.clone().repeat(1, None), segments]),
    ])
    .opt();
    Expr::seq([part, c.query_fragment()])
}

/// RFC 6901: empty, or `/`-prefixed reference tokens in which `~` is only
/// followed by `0` or `1`. Unescaped characters: printable ASCII (less `"`, `/`,
/// `\`, `~`) and every non-control code point but U+FFFE and U+FFFF.
fn json_pointer() -> Expr {
    let unescaped = Expr::class(&[
        (' ', '!'),
        ('#', '.'),
        ('0', '['),
        (']', '}'),
        ('\u{A0}', '\u{D7FF}'),
        ('\u{E000}', '\u{FFFD}'),
        ('\u{10000}', '\u{10FFFF}'),
    ]);
    let token_char = Expr::alt([unescaped, Expr::lit("~0"), Expr::lit("~1")]);
    Expr::seq([Expr::lit("/"), token_char.repeat(0, None)]).repeat(0, None)
}

/// A non-negative integer without leading zeros, then `#` or a JSON pointer
/// (draft-handrews-relative-json-pointer-01; the index adjustments of later
/// drafts, `0+1`, are left out, as validators differ). Python's jsonschema
/// rejects a digit after a `0` anywhere in the integer (`105`, `100`), so a
/// zero comes only last: `0`, or up to nine nonzero digits and an optional `0`.
fn relative_json_pointer() -> Expr {
    let int = Expr::alt([
        Expr::lit("0"),
        Expr::seq([range('1', '9').repeat(1, Some(9)), Expr::lit("0").opt()]),
    ]);
    Expr::seq([int, Expr::alt([Expr::lit("#"), json_pointer()])])
}

/// Base64 (RFC 4648, standard alphabet, `=` padding), the empty string
/// included. The bits that padding leaves over are zero, as strict decoders
/// require: before `=` the last character encodes a multiple of 4, before
/// `==` a multiple of 16.
fn byte() -> Expr {
    let b64 = Expr::class(&[('+', '+'), ('/', '9'), ('A', 'Z'), ('a', 'z')]);
    let one_pad = Expr::seq([
        b64.clone(),
        b64.clone(),
        chars("AEIMQUYcgkosw048"),
        Expr::lit("="),
    ]);
    let two_pad = Expr::seq([b64.clone(), chars("AQgw"), Expr::lit("==")]);
    Expr::seq([
        b64.repeat(4, Some(4)).repeat(0, None),
        Expr::alt([one_pad, two_pad]).opt(),
    ])
}

/// The fewest characters a string of `expr` has (a rule counts as none).
fn shortest(expr: &Expr) -> u64 {
    match expr {
        Expr::Lit(s) => s.chars().count() as u64,
        Expr::Class { .. } => 1,
        Expr::Seq(items) => items.iter().map(shortest).fold(0, u64::saturating_add),
        Expr::Alt(items) => items.iter().map(shortest).min().unwrap_or(0),
        Expr::Repeat { expr, min, .. } => shortest(expr).saturating_mul(u64::from(*min)),
        Expr::Rule(_) => 0,
    }
}

/// `expr` with every repetition's maximum lowered to `cap` (never below its
/// minimum).
fn capped(expr: &Expr, cap: u32) -> Expr {
    match expr {
        Expr::Seq(items) => Expr::Seq(items.iter().map(|e| capped(e, cap)).collect()),
        Expr::Alt(items) => Expr::Alt(items.iter().map(|e| capped(e, cap)).collect()),
        Expr::Repeat { expr, min, max } => Expr::Repeat {
            expr: Box::new(capped(expr, cap)),
            min: *min,
            max: Some(max.map_or(cap, |m| m.min(cap)).max(*min)),
        },
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests;
