//! The keywords the converter enforces and the annotations it ignores: the
//! whole of its strictness, in one place. Any other keyword is an error that
//! names it and where it appears. Every list of keyword names the converter
//! uses (by type, `$ref` targets) lives here too.

/// Keywords that are enforced exactly by the generated grammar: the generic
/// ones, those of each type ([`OBJECT`] to [`NUMBER`]), the combinators and
/// [`DEFINITIONS`]. Built from those lists, so that a keyword cannot be
/// listed for a type without being classified as enforced; their order is
/// that of the error message that lists them ([`supported_list`]) and of
/// the search for a misspelling.
pub const SUPPORTED: &[&str] = &SUPPORTED_ARRAY;

const SUPPORTED_PARTS: &[&[&str]] = &[
    &["type", "not", "enum", "const"],
    OBJECT,
    ARRAY,
    STRING,
    NUMBER,
    &["anyOf", "oneOf", "allOf", "if", "then", "else", "$ref"],
    DEFINITIONS,
];

const SUPPORTED_ARRAY: [&str; total_len(SUPPORTED_PARTS)] = concat(SUPPORTED_PARTS);

/// The number of names in `parts`, at compile time.
const fn total_len(parts: &[&[&str]]) -> usize {
    let mut total = 0;
    let mut i = 0;
    while i < parts.len() {
        total += parts[i].len();
        i += 1;
    }
    total
}

/// `parts` one after the other, at compile time (`N` is their
/// [`total_len`]).
const fn concat<const N: usize>(parts: &[&[&'static str]]) -> [&'static str; N] {
    let mut out = [""; N];
    let mut at = 0;
    let mut i = 0;
    while i < parts.len() {
        let mut j = 0;
        while j < parts[i].len() {
            out[at] = parts[i][j];
            at += 1;
            j += 1;
        }
        i += 1;
    }
    out
}

/// Keywords that carry no constraint and are ignored (`id` is draft 4's `$id`).
pub const ANNOTATIONS: &[&str] = &[
    "title",
    "description",
    "default",
    "examples",
    "$schema",
    "$id",
    "id",
    "$comment",
    "deprecated",
    "readOnly",
    "writeOnly",
];

/// Keywords of the JSON Schema vocabularies (drafts 3 to 2020-12) that
/// constrain instances and that the converter does not enforce: each is an
/// error, never ignored.
pub const UNSUPPORTED: &[&str] = &[
    "unevaluatedProperties",
    "unevaluatedItems",
    "$anchor",
    "$dynamicRef",
    "$dynamicAnchor",
    "$recursiveRef",
    "$recursiveAnchor",
    "$vocabulary",
    "contentEncoding",
    "contentMediaType",
    "contentSchema",
    "divisibleBy",
    "disallow",
    "extends",
];

/// The keywords specific to objects; when `type` is absent, one of them
/// makes the schema an object schema (and likewise for the lists below).
pub const OBJECT: &[&str] = &[
    "properties",
    "required",
    "additionalProperties",
    "patternProperties",
    "propertyNames",
    "minProperties",
    "maxProperties",
    "dependentRequired",
    "dependentSchemas",
    "dependencies",
];
/// The keywords specific to arrays.
pub const ARRAY: &[&str] = &[
    "items",
    "prefixItems",
    "additionalItems",
    "minItems",
    "maxItems",
    "uniqueItems",
    "contains",
    "minContains",
    "maxContains",
];
/// The keywords specific to strings.
pub const STRING: &[&str] = &["minLength", "maxLength", "pattern", "format"];
/// The keywords specific to numbers.
pub const NUMBER: &[&str] = &[
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
];
/// The keywords that hold `$ref` targets (`definitions` is draft 4's `$defs`).
pub const DEFINITIONS: &[&str] = &["$defs", "definitions"];

/// What the converter does with a key of a schema object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Enforced.
    Supported,
    /// A standard annotation: ignored.
    Annotation,
    /// A standard keyword that is not enforced: an error.
    Unsupported,
    /// Not a JSON Schema keyword but so close to one that it is almost
    /// certainly a typo of it: an error naming the keyword meant.
    Misspelled(&'static str),
    /// Not part of any JSON Schema vocabulary (`x-…` extensions, `_…`
    /// disabled keywords, tool-specific metadata). JSON Schema treats these
    /// as annotations and so does the converter.
    Unknown,
}

/// Classify a key of a schema object.
pub fn classify(key: &str) -> Class {
    if is_supported(key) {
        return Class::Supported;
    }
    if is_annotation(key) {
        return Class::Annotation;
    }
    if UNSUPPORTED.contains(&key) {
        return Class::Unsupported;
    }
    match misspelling_of(key) {
        Some(meant) => Class::Misspelled(meant),
        None => Class::Unknown,
    }
}

/// The enforced or standard keyword that `key` most likely misspells: equal
/// ignoring case, or within edit distance 1 (2 for names of 8+ letters).
/// Names that are not plain letters (`x-…`, `_format`, `$…`) are deliberate
/// and never count as misspellings.
fn misspelling_of(key: &str) -> Option<&'static str> {
    if key.len() < 4 || !key.chars().all(|c| c.is_ascii_alphabetic()) {
        return None;
    }
    let limit = if key.len() >= 8 { 2 } else { 1 };
    let lower = key.to_ascii_lowercase();
    SUPPORTED
        .iter()
        .chain(UNSUPPORTED)
        .filter(|k| !k.starts_with('$') && k.len().abs_diff(key.len()) <= limit)
        .map(|k| (*k, distance(&lower, &k.to_ascii_lowercase())))
        .filter(|(_, d)| *d <= limit)
        .min_by_key(|(_, d)| *d)
        .map(|(k, _)| k)
}

/// Optimal string alignment distance (edits and adjacent transpositions).
pub(crate) fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

/// Whether `keyword` is an annotation.
pub fn is_annotation(keyword: &str) -> bool {
    ANNOTATIONS.contains(&keyword)
}

/// Whether `keyword` is enforced.
pub fn is_supported(keyword: &str) -> bool {
    SUPPORTED.contains(&keyword)
}

/// The supported keywords as a comma-separated list, for error messages.
pub fn supported_list() -> String {
    SUPPORTED.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The order of the list in error messages (and of the search for a
    /// misspelling) is that of the parts [`SUPPORTED`] is built from.
    #[test]
    fn supported_keywords_in_order() {
        assert_eq!(
            supported_list(),
            "type, not, enum, const, properties, required, additionalProperties, \
             patternProperties, propertyNames, minProperties, maxProperties, \
             dependentRequired, dependentSchemas, dependencies, items, prefixItems, \
             additionalItems, minItems, maxItems, uniqueItems, contains, minContains, \
             maxContains, minLength, maxLength, pattern, format, minimum, maximum, \
             exclusiveMinimum, exclusiveMaximum, multipleOf, anyOf, oneOf, allOf, if, \
             then, else, $ref, $defs, definitions"
        );
    }

    #[test]
    fn classification() {
        assert_eq!(classify("minLength"), Class::Supported);
        assert_eq!(classify("title"), Class::Annotation);
        assert_eq!(classify("id"), Class::Annotation);
        assert_eq!(classify("not"), Class::Supported);
        assert_eq!(classify("uniqueItems"), Class::Supported);
        assert_eq!(classify("unevaluatedItems"), Class::Unsupported);
        assert_eq!(classify("minLenght"), Class::Misspelled("minLength"));
        assert_eq!(
            classify("additonalProperties"),
            Class::Misspelled("additionalProperties")
        );
        assert_eq!(classify("maxlength"), Class::Misspelled("maxLength"));
        assert_eq!(classify("requried"), Class::Misspelled("required"));
        assert_eq!(classify("types"), Class::Misspelled("type"));
        for unknown in [
            "x-kubernetes-group-version-kind",
            "_format",
            "self",
            "readonly",
            "example",
            "links",
            "version",
            "name",
            "javaType",
            "markdownDescription",
        ] {
            assert_eq!(classify(unknown), Class::Unknown, "{unknown}");
        }
    }
}
