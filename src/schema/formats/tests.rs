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

/// Every format, in [`SUPPORTED`]'s order.
fn all() -> Vec<Format> {
    SUPPORTED
        .split(", ")
        .map(|name| Format::from_name(name).unwrap_or_else(|| panic!("{name}")))
        .collect()
}

#[test]
fn names_round_trip() {
    let formats = all();
    assert_eq!(formats.len(), 16);
    for (name, f) in SUPPORTED.split(", ").zip(&formats) {
        assert_eq!(f.rule_name(), format!("fmt-{name}"));
    }
    for (i, f) in formats.iter().enumerate() {
        assert!(!formats[..i].contains(f), "{f:?} twice");
    }
    assert_eq!(Format::from_name("int32"), None);
}

#[test]
fn format_names_are_enforced_refused_corrected_or_annotations() {
    assert_eq!(FormatName::of("date"), FormatName::Enforced(Format::Date));
    for name in ["regex", "uri-template", "idn-email", "idn-hostname"] {
        assert_eq!(FormatName::of(name), FormatName::Unenforced, "{name}");
    }
    for (name, meant) in [
        ("url", "uri"),
        ("URI", "uri"),
        ("date_time", "date-time"),
        ("DateTime", "date-time"),
        ("hostnam", "hostname"),
        ("full-date", "date"),
        ("regexp", "regex"),
    ] {
        assert_eq!(FormatName::of(name), FormatName::NearMiss(meant), "{name}");
    }
    for name in [
        "textarea", "topic", "path", "expose", "int32", "color", "semver", "ip",
    ] {
        assert_eq!(FormatName::of(name), FormatName::Custom, "{name}");
    }
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
            "0004-02-29",
            "0001-01-01",
            "0010-10-10",
            "0100-01-01",
            "1600-02-29",
            "9999-12-31",
        ],
        &[
            // No year 0 (Python's validators reject it).
            "0000-01-01",
            "0000-02-29",
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
        let leap = ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0) && y != 0;
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
            "12:00:00+23:59",
            "12:00:00-00:00",
            "12:00:00+14:45",
            "12:00:00.123456789Z",
        ],
        &[
            "24:00:00Z",
            "12:60:00Z",
            "12:00:60Z",
            "23:59:60Z",
            "12:00:00",
            "12:00Z",
            "1:00:00Z",
            "12:00:00+24:00",
            "12:00:00+12:60",
            "12:00:00+0100",
            "12:00:00+01",
            "12:00:00z",
            "12:00:00.Z",
            "12:00:00.1234567890Z",
        ],
    );
    check(
        Format::DateTime,
        &[
            "2024-05-01T12:00:00Z",
            "2024-02-29T00:00:00.5+02:00",
            "0001-01-01T00:00:00-23:59",
        ],
        &[
            "2024-05-01 12:00:00Z",
            "2024-05-01T12:00:00",
            "2023-02-29T00:00:00Z",
            "2024-05-01t12:00:00Z",
            "2024-05-01T12:00:00z",
            "2024-05-01T12:00:00+24:00",
            "0000-01-01T00:00:00Z",
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
    let l62 = "a".repeat(62);
    let l63 = "a".repeat(63);
    check(
        Format::Hostname,
        &[
            "example.com",
            "localhost",
            "a-b.c1.example.org",
            "x",
            "ab-c.com",
            "a--b.com",
            "ab-c-d.com",
            "abc--d",
            &format!("{l62}.com"),
        ],
        &[
            "-a.com",
            "a-.com",
            "a..b",
            "example.123",
            "",
            "a_b.com",
            // Hyphens in the third and fourth places: an A-label, which
            // validators decode as Punycode.
            "ab--cd.com",
            "xn--nxasmq6b.com",
            "example.ab--c",
            &format!("{l63}.com"),
            "a.b.c.d.e",
        ],
    );
    let long_atom = format!("{}@x.com", "a".repeat(64));
    let long_dotted = format!("{0}.{0}.{0}.{0}@x.com", "b".repeat(15));
    let too_long_atom = format!("{}@x.com", "a".repeat(65));
    let l46 = "c".repeat(46);
    let l47 = "c".repeat(47);
    // 64 + 1 + 188 = 253 characters.
    let longest = format!("{}@{l62}.{l62}.{l62}", "a".repeat(64));
    assert_eq!(longest.len(), 253);
    let four_labels = format!("{}@{l46}.{l46}.{l46}.{l46}", "a".repeat(64));
    check(
        Format::Email,
        &[
            "john.doe@example.com",
            "a+b@mail.co",
            "x_y-z@a.b.c.de",
            &long_atom,
            &long_dotted,
            &longest,
            &four_labels,
        ],
        &[
            "@example.com",
            "john@",
            "a b@c.d",
            "john..doe@x.com",
            ".john@x.com",
            "john.@x.com",
            &too_long_atom,
            // Undotted domains: ajv-formats and FILTER_VALIDATE_EMAIL reject them.
            "x@y",
            "john@localhost",
            "a@b.1c",
            "a@ab--cd.com",
            "a@b.c.d.e.f",
            &format!("a@{l63}.com"),
            &format!("a@{l46}.{l46}.{l46}.{l47}"),
            &format!("a@{l62}.{l62}.{l62}.com"),
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
            "http://a.com/%C3%A9?x=%20#/a?b",
            "http://a.com//x/:@!$&'()*+,;=",
        ],
        &[
            "example.com",
            "/relative/path",
            "http://",
            "https://exa mple.com",
            "1http://x.com",
            "http://a.com/%zz",
            "http://a.com/#a#b",
            "http://a.com/\u{e9}",
            "http://a.com/[x]",
            "http://ab--c.com",
        ],
    );
}

#[test]
fn ports_are_tcp_ports() {
    let re = regex::Regex::new(&format!("^(?:{})$", Format::Uri.expr().to_regex())).unwrap();
    for port in 0..=70000u32 {
        let uri = format!("http://a.bc:{port}/");
        assert_eq!(re.is_match(&uri), port <= 65535, "{uri}");
    }
    for uri in ["http://a.bc:080/", "http://a.bc:00/", "http://a.bc:/"] {
        assert!(!re.is_match(uri), "{uri}");
    }
}

#[test]
fn uri_references() {
    check(
        Format::UriReference,
        &[
            "",
            "https://example.com/a?b#c",
            "#",
            "#frag",
            "#/definitions/a",
            "?q=1",
            "/",
            "/a/b",
            "/a//b/",
            "a",
            "a/b:c",
            "./a:b",
            "../x?y#z",
            "//example.com",
            "//h.io:80/x",
            "//10.0.0.1/",
            "a@b",
            "%20x",
            "-._~!$&'()*+,;=@",
        ],
        &[
            ":a", "a:b/c", "1a:b", "a b", "%zz", "#a#b", "a\\b", "a\"b", "http://", "//",
            "/a?b#c#d", "\u{e9}", "a[1]",
        ],
    );
}

#[test]
fn iris() {
    check(
        Format::Iri,
        &[
            "https://example.com",
            "https://example.com/gr\u{f6}\u{df}e?q=\u{fc}#frag\u{20ac}",
            "http://a.bc/\u{4e2d}\u{6587}/\u{e9}",
            "http://a.bc/?\u{e000}\u{f8ff}",
            "http://a.bc/\u{a0}\u{d7ff}\u{f900}\u{fdcf}\u{fdf0}\u{ffef}",
        ],
        &[
            "/relative",
            "http://a.bc/#\u{e000}",
            "http://a.bc/\u{e000}",
            "http://a.bc/\u{200e}",
            "http://a.bc/\u{202e}",
            "http://a.bc/\u{7f}",
            "http://a.bc/\u{85}",
            "http://a.bc/\u{9f}",
            "http://a.bc/\u{fdd0}",
            "http://a.bc/\u{fffe}",
            // Valid, but outside the BMP (see UCSCHAR).
            "http://a.bc/\u{1f600}",
            "http://a.bc/?\u{f0000}",
            "http://a.bc/x y",
            "http://\u{e9}.com/",
        ],
    );
    check(
        Format::IriReference,
        &[
            "",
            "/gr\u{f6}\u{df}e",
            "\u{fc}ber/x",
            "#\u{fc}",
            "?\u{e000}",
            "https://a.bc/\u{e9}",
        ],
        &[":\u{fc}", "\u{fc}:x", "#\u{e000}", "\u{200f}", "a b"],
    );
}

#[test]
fn ucschar_is_rfc_3987_in_the_bmp_less_bidi_formatting() {
    let ours = UCSCHAR;
    for w in ours.windows(2) {
        assert!((w[0].1 as u32) < w[1].0 as u32, "{ours:x?}");
    }
    let bidi = |c: u32| matches!(c, 0x61C | 0x200E | 0x200F | 0x202A..=0x202E | 0x2066..=0x2069);
    // RFC 3987, section 2.2, in the BMP.
    let rfc = |c: u32| matches!(c, 0xA0..=0xD7FF | 0xF900..=0xFDCF | 0xFDF0..=0xFFEF);
    for c in 0..=0x10FFFFu32 {
        let mine = ours
            .iter()
            .any(|&(a, b)| (a as u32..=b as u32).contains(&c));
        assert_eq!(mine, rfc(c) && !bidi(c), "U+{c:04X}");
    }
}

#[test]
fn json_pointers() {
    check(
        Format::JsonPointer,
        &[
            "",
            "/",
            "//",
            "/a",
            "/a~0b/~1",
            "/foo/0",
            "/ /%/^/|/'",
            "/\u{e9}\u{1f600}",
        ],
        &[
            "a", "#/a", "/~2", "/~", "/a~", "/~a", "/a\"b", "/a\\b", "/a\u{7f}", "/a\u{85}",
            "/a\nb",
        ],
    );
    check(
        Format::RelativeJsonPointer,
        &[
            "0",
            "0#",
            "0/",
            "1/a",
            "10/~0",
            "123#",
            "0/a/~1/b",
            "999999999",
            "120/0",
        ],
        &[
            // Valid, but Python's jsonschema rejects them.
            "100", "105#", // Invalid.
            "", "01", "01/a", "00#", "#", "/a", "0~1", "-1", "0##", "1#/a", "1/~2", "0+1/a", "1a",
            " 1",
        ],
    );
}

#[test]
fn base64() {
    check(
        Format::Byte,
        &[
            "", "TWFu", "TWE=", "TQ==", "AAAA", "+/+/", "YWJjZA==", "YWJjZGU=", "////", "AA==",
            "Aw==", "AAA=", "AA8=", "9999", "zz0=",
        ],
        &[
            "TWF", "TWE", "T", "=", "==", "A===", "AAAAA",
            // Nonzero bits under the padding.
            "TR==", "TWF=", "AB==", "AAB=", "AAz=", "TQ==TWFu", "TQ=", "TW-u", "TW_u", "TWFu\n",
            " TWFu",
        ],
    );
}

/// A small deterministic generator (SplitMix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi`.
    fn between(&mut self, lo: u32, hi: u32) -> u32 {
        lo + (self.next() % (u64::from(hi - lo) + 1)) as u32
    }
}

/// A random string of `e`'s language. Repetitions take their least or
/// most count a quarter of the time each (unbounded ones at most 6 more
/// than the least), so that length limits are reached.
fn sample(e: &Expr, rng: &mut Rng, out: &mut String) {
    match e {
        Expr::Lit(s) => out.push_str(s),
        Expr::Class {
            negated: false,
            ranges,
        } => loop {
            let (a, b) = ranges[rng.between(0, ranges.len() as u32 - 1) as usize];
            if let Some(c) = char::from_u32(rng.between(a as u32, b as u32)) {
                out.push(c);
                break;
            }
        },
        Expr::Seq(items) => items.iter().for_each(|x| sample(x, rng, out)),
        Expr::Alt(items) => {
            let pick = rng.between(0, items.len() as u32 - 1) as usize;
            sample(&items[pick], rng, out);
        }
        Expr::Repeat { expr, min, max } => {
            let most = max.unwrap_or(min + 6);
            let n = match rng.between(0, 3) {
                0 => *min,
                1 => most,
                _ => rng.between(*min, most),
            };
            for _ in 0..n {
                sample(expr, rng, out);
            }
        }
        other => panic!("not a format grammar: {other:?}"),
    }
}

fn samples(format: Format, n: usize) -> Vec<String> {
    let e = format.expr();
    let mut rng = Rng(0x5EED ^ format as u64);
    (0..n)
        .map(|_| {
            let mut s = String::new();
            sample(&e, &mut rng, &mut s);
            s
        })
        .collect()
}

#[test]
fn samples_match_their_own_grammar() {
    // A check of the generator itself.
    for f in all() {
        let re = regex::Regex::new(&format!("^(?:{})$", f.expr().to_regex())).unwrap();
        for s in samples(f, 50) {
            assert!(re.is_match(&s), "{f:?}: {s:?}");
        }
    }
}

#[test]
fn the_jsonschema_crate_accepts_every_sample() {
    for f in all() {
        if f == Format::Byte {
            // An OpenAPI format that jsonschema ignores: see `base64_samples_decode_strictly`.
            continue;
        }
        let name = &f.rule_name()["fmt-".len()..];
        let schema = serde_json::json!({"type": "string", "format": name});
        let validator = jsonschema::options()
            .should_validate_formats(true)
            .should_ignore_unknown_formats(false)
            .build(&schema)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let n = if matches!(f, Format::Date | Format::Time | Format::Uuid) {
            300
        } else {
            600
        };
        for s in samples(f, n) {
            assert!(
                validator.is_valid(&serde_json::Value::String(s.clone())),
                "jsonschema rejects {name} {s:?}"
            );
        }
        // And rejects some junk, so that the format is really checked.
        assert!(
            !validator.is_valid(&serde_json::json!("a b\"c")),
            "{name} is not checked"
        );
    }
    // The near misses that shaped the grammars, as jsonschema judges them.
    let rejects = |name: &str, s: &str| {
        let schema = serde_json::json!({"type": "string", "format": name});
        let v = jsonschema::options()
            .should_validate_formats(true)
            .build(&schema)
            .unwrap();
        !v.is_valid(&serde_json::json!(s))
    };
    assert!(rejects("hostname", "ab--cd.com"));
    assert!(rejects("email", "a@ab--cd.com"));
    assert!(rejects("date-time", "2024-01-01T00:00:00+24:00"));
    assert!(rejects("json-pointer", "/~2"));
    assert!(rejects("relative-json-pointer", "01"));
    assert!(rejects("uri-reference", ":a"));
    assert!(rejects("iri", "http://a.bc/#\u{e000}"));
}

const B64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn b64_encode(bytes: &[u8]) -> String {
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.push(B64[(n >> (18 - 6 * i) & 63) as usize] as char);
        }
        for _ in chunk.len()..3 {
            out.push('=');
        }
    }
    out
}

/// Decodes leniently (ignoring leftover bits), or `None` on a character
/// outside the alphabet or misplaced padding.
fn b64_decode(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(4) {
        return None;
    }
    let body = s.trim_end_matches('=');
    if s.len() - body.len() > 2 {
        return None;
    }
    let mut bits = 0u32;
    let mut n = 0;
    let mut out = Vec::new();
    for c in body.bytes() {
        bits = bits << 6 | B64.iter().position(|&x| x == c)? as u32;
        n += 6;
        if n >= 8 {
            n -= 8;
            out.push((bits >> n) as u8);
        }
    }
    Some(out)
}

#[test]
fn base64_samples_decode_strictly() {
    // Strict decoders (Rust's base64, Go's Strict) accept exactly the
    // canonical encodings: decoding and encoding again gives the input.
    assert_eq!(b64_encode(b"Man"), "TWFu");
    assert_eq!(b64_encode(b"Ma"), "TWE=");
    assert_eq!(b64_encode(b"M"), "TQ==");
    let re = regex::Regex::new(&format!("^(?:{})$", Format::Byte.expr().to_regex())).unwrap();
    for s in samples(Format::Byte, 600) {
        let decoded = b64_decode(&s).unwrap_or_else(|| panic!("{s:?}"));
        assert_eq!(b64_encode(&decoded), s);
    }
    // Conversely, every canonical encoding of up to 2 bytes matches.
    for len in 0..=2 {
        for n in 0..1u32 << (8 * len) {
            let bytes: Vec<u8> = (0..len).map(|i| (n >> (8 * i)) as u8).collect();
            let s = b64_encode(&bytes);
            assert!(re.is_match(&s), "{s:?}");
            let s4 = format!("TWFu{s}");
            assert!(re.is_match(&s4), "{s4:?}");
        }
    }
}

/// What a JSON string must escape (`"`, `\\`, C0 controls) and the C1
/// controls with DEL.
const UNSAFE: [(u32, u32); 4] = [(0, 0x1F), (0x22, 0x22), (0x5C, 0x5C), (0x7F, 0x9F)];

fn unsafe_char(c: u32) -> bool {
    UNSAFE.iter().any(|&(lo, hi)| (lo..=hi).contains(&c))
}

fn assert_plain(e: &Expr, f: Format) {
    match e {
        Expr::Lit(s) => assert!(
            !s.chars().any(|c| unsafe_char(c as u32)),
            "{f:?}: literal {s:?}"
        ),
        Expr::Class { negated, ranges } => {
            assert!(!negated, "{f:?}: negated class");
            for &(a, b) in ranges {
                assert!(a <= b, "{f:?}: {a:?}-{b:?}");
                for (lo, hi) in UNSAFE {
                    assert!(
                        (b as u32) < lo || a as u32 > hi,
                        "{f:?}: {a:?}-{b:?} meets U+{lo:04X}-U+{hi:04X}"
                    );
                }
            }
        }
        Expr::Seq(items) | Expr::Alt(items) => {
            assert!(
                !items.is_empty() || matches!(e, Expr::Seq(_)),
                "{f:?}: empty alt"
            );
            items.iter().for_each(|x| assert_plain(x, f));
        }
        Expr::Repeat { expr, min, max } => {
            assert!(
                max.is_none_or(|m| m >= *min && m <= 64),
                "{f:?}: {min}..{max:?}"
            );
            assert_plain(expr, f);
        }
        Expr::Rule(name) => panic!("{f:?}: rule {name}"),
    }
}

#[test]
fn no_format_needs_json_escapes_or_rules() {
    for f in all() {
        assert_plain(&f.expr(), f);
        for s in samples(f, 100) {
            assert!(!s.chars().any(|c| unsafe_char(c as u32)), "{f:?}: {s:?}");
        }
    }
}

#[test]
fn every_format_compiles_and_passes_the_grammar_checker() {
    for f in all() {
        let name = &f.rule_name()["fmt-".len()..];
        let compiled =
            crate::schema::compile(&serde_json::json!({"type": "string", "format": name}))
                .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(
            compiled.gbnf.as_str().contains(f.rule_name()),
            "{name}: {}",
            compiled.gbnf
        );
    }
}
