//! Tables of grammars for the checker's tests: `VALID` ones that must pass
//! and `INVALID` ones with the error expected. Plain data with no imports,
//! so an integration test can include it with `#[path]`.

/// llama.cpp's `grammars/json.gbnf` (current version).
pub const JSON: &str = r#"root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws

object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws

array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws

string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4}) # escapes
  )* "\"" ws

number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws

# Optional space: by convention, applied in this grammar after literal chars when allowed
ws ::= | " " | "\n" [ \t]{0,20}
"#;

/// An older `json.gbnf` (recursive `ws`, `\U0010FFFF` range).
pub const JSON_OLD: &str = r#"# Grammar for subset of JSON - doesn't support full string or number syntax

root  ::= object
value ::= object | array | string | number | boolean

object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}"

array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]"

string  ::=
  "\"" (
    [\x20\x21\x23-\x5b\x5d-\U0010FFFF] | # any code point except " (\x22) and \ (\x5c)
    "\\" (["\\/bfnrt] | "u" [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F]) # escapes
  )* "\""

# Only plain integers currently
number  ::= "-"? [0-9]+ ws
boolean ::= ("true" | "false") ws

# Optional space: by convention, applied in this grammar after literal chars when allowed
ws ::= ([ \t\n] ws)?
"#;

/// llama.cpp's `grammars/arithmetic.gbnf`.
pub const ARITHMETIC: &str = r#"root  ::= (expr "=" ws term "\n")+
expr  ::= term ([-+*/] term)*
term  ::= ident | num | "(" ws expr ")" ws
ident ::= [a-z] [a-z0-9_]* ws
num   ::= [0-9]+ ws
ws    ::= [ \t\n]*
"#;

pub const VALID: &[(&str, &str)] = &[
    ("json", JSON),
    ("json, older version", JSON_OLD),
    ("arithmetic", ARITHMETIC),
    ("no trailing newline", "root ::= \"a\""),
    ("crlf line ends", "root ::= a\r\na ::= \"x\" | \"y\"\r\n"),
    ("lone cr line ends", "root ::= a\ra ::= \"x\"\r"),
    (
        "comments",
        "# header\n\nroot ::= a # trailing\n# between\n   # indented\na ::= \"x\" # end",
    ),
    (
        "comment before ::= continuation",
        "root ::= # nothing yet\n  \"a\"",
    ),
    (
        "escapes",
        r#"root ::= "\x41\u00e9\U0001F600\t\n\r\"\\\[\]\-" [\x01-\x1F\[\]\-\\^] [\u0100-\U0010FFFF]"#,
    ),
    ("unicode", "root ::= \"héllo 世界 🎉\" [α-ω]+ [^é]"),
    ("raw newline inside a literal", "root ::= \"a\nb\""),
    (
        "repetitions",
        r#"root ::= "a"{3} "b"{2,} "c"{0,5} "d"{1,2} ("e" "f"){2,3} "g"*? [0-9]{0,2000} "h"{ 1 , 2 }"#,
    ),
    (
        "stacked repetition",
        "root ::= (\"a\"{2}){3} \"b\"*? \"c\"+? \"d\"{2}* \"e\"{0,3}{2}",
    ),
    ("empty alternative at the end", "root ::= a\na ::= \"x\" | "),
    ("empty alternative first", "root ::= | \"x\""),
    ("empty alternative in a group", "root ::= (\"x\" | ) \"y\""),
    ("empty rule at end of text", "root ::= a \"b\"\na ::="),
    (
        "alternatives continued after |",
        "root ::= \"a\" |\n  \"b\" |\n\n  \"c\"",
    ),
    (
        "groups span lines",
        "root ::= (\n  \"a\"\n  \"b\"\n |\n \"c\"\n)",
    ),
    ("any character", "root ::= . .* \"end\""),
    (
        "empty literal and empty class",
        "root ::= \"\" [] [^] \"a\"",
    ),
    (
        "class edge cases",
        "root ::= [a-] [-a] [--z] [\\]] [^^] [\\-]",
    ),
    (
        "names with digits and dashes",
        "root ::= 1st-rule\n1st-rule ::= \"x\"",
    ),
    (
        "tokens",
        "root ::= <[123]> !<[5]> <|im_end|> !<think> <[4294967295]>",
    ),
    ("right recursion", "root ::= \"x\" root | \"y\""),
    (
        "redefinition keeps the last",
        "root ::= \"a\"\nroot ::= \"b\"",
    ),
    (
        "nullable loop in tail position",
        "root ::= (line \"\\n\"?)*\nline ::= [a-z]*",
    ),
    ("optional inside star", "root ::= (\"a\"?)*"),
    (
        "indirectly empty rule before a tail self-reference",
        "root ::= b root | \"y\"\nb ::= c\nc ::= \"\" | \"z\"",
    ),
    (
        "unused unproductive rule",
        "root ::= \"a\"\nloop ::= \"b\" loop",
    ),
    (
        "unused empty class",
        "root ::= \"a\"\nnever ::= [^\\x00-\\U0010FFFF]",
    ),
    ("class containing NUL and more", "root ::= [\\x00-\\x1F]"),
    (
        "undefined rule only in an overwritten body (llama.cpp ignores it)",
        "root ::= foo\nroot ::= \"a\"",
    ),
    (
        "undefined rule dropped by {0} (llama.cpp ignores it)",
        "root ::= foo{0} \"a\"",
    ),
    (
        "repeated group of rules defined earlier",
        "a ::= \"x\"\nb ::= \"y\"\nc ::= \"z\"\nroot ::= (a b c){1000}",
    ),
    (
        "unreachable hidden left recursion",
        "root ::= \"a\"\na ::= b a \"x\" | \"y\"\nb ::= c\nc ::= \"\" | \"z\"",
    ),
    (
        "bottom-up definitions",
        "digit ::= [0-9]\nnumber ::= digit+\nvalue ::= number | \"x\"\nroot ::= value",
    ),
];

/// (name, grammar, line, column, message)
pub const INVALID: &[(&str, &str, usize, usize, &str)] = &[
    ("empty", "", 1, 1, "grammar is empty"),
    ("only comments", "# nothing\n  \n", 1, 1, "grammar is empty"),
    (
        "missing ::=",
        "root ::= \"a\"\n\nfoo  \"b\"",
        3,
        6,
        "expecting \"::=\" after rule name \"foo\"",
    ),
    (
        "underscore in a rule name",
        "my_rule ::= \"a\"",
        1,
        3,
        "expecting \"::=\" after rule name \"my\" (rule names may contain only ASCII letters, digits and \"-\")",
    ),
    (
        "underscore in a reference",
        "root ::= my_rule",
        1,
        12,
        "unexpected \"_\" (rule names may contain only ASCII letters, digits and \"-\")",
    ),
    ("no root", "rot ::= \"a\"", 1, 1, "grammar has no \"root\" rule"),
    (
        "root only referenced (llama.cpp crashes)",
        "a ::= root\na ::= \"x\"",
        1,
        1,
        "grammar has no \"root\" rule",
    ),
    ("undefined rule", "root ::= list\nlist ::= item (\",\" item)*", 2, 10, "undefined rule \"item\""),
    (
        "undefined rule in an overwritten body with later rules",
        "root ::= foo\nroot ::= \"a\"\nbar ::= \"b\"",
        1,
        10,
        "undefined rule \"foo\"",
    ),
    ("inverted range", "root ::= [a-zA-Z] [0-9z-a]", 1, 23, "character range is inverted: \"z\" > \"a\""),
    (
        "inverted escaped range",
        "root ::= [\\x7F-\\x00]",
        1,
        11,
        "character range is inverted: \"\\x7F\" > \"\\x00\"",
    ),
    ("unterminated literal", "root ::= \"abc", 1, 10, "unterminated string literal"),
    ("literal spanning lines", "root ::= x \"abc\nx ::= \"y\"", 2, 9, "unterminated string literal"),
    ("unterminated literal after backslash", "root ::= \"abc\\", 1, 10, "unterminated string literal"),
    ("unterminated class", "root ::= [abc", 1, 10, "unterminated character class"),
    ("unterminated range", "root ::= [a-", 1, 10, "unterminated character class"),
    (
        "left recursion",
        "root ::= expr\n# terms\nterm ::= \"x\" | expr \"*\"\nexpr ::= term \"+\" | \"1\"",
        3,
        1,
        "rule \"term\" is left-recursive (term -> expr -> term)",
    ),
    ("direct left recursion", "root ::= \"a\" | root \"a\"", 1, 1, "rule \"root\" is left-recursive (root -> root)"),
    (
        "left recursion through an optional item",
        "root ::= a\na ::= b? a \"x\" | \"y\"\nb ::= \"b\"",
        2,
        1,
        "rule \"a\" is left-recursive (a -> a)",
    ),
    (
        "left recursion through a rule with an empty alternative",
        "root ::= asdf\nasdf ::= \"a\" | foo \"b\"\nfoo ::= \"c\" | empty asdf \"d\" | \"e\"\nempty ::= \"blah\" | ",
        2,
        1,
        "rule \"asdf\" is left-recursive (asdf -> foo -> asdf)",
    ),
    (
        "left recursion through an indirectly empty rule (llama.cpp hangs)",
        "root ::= a\na ::= b a \"x\" | \"y\"\nb ::= c\nc ::= \"\" | \"z\"",
        2,
        1,
        "rule \"a\" is left-recursive (a -> a)",
    ),
    (
        "repetition of an empty group",
        "root ::= (\"\")*",
        1,
        14,
        "the repeated item can match the empty string, which makes rule \"root\" left-recursive for llama.cpp",
    ),
    (
        "star of an optional item",
        "root ::= \"a\" \"c\"?*",
        1,
        18,
        "the repeated item can match the empty string, which makes rule \"root\" left-recursive for llama.cpp",
    ),
    (
        "plus of a star",
        "root ::= x\nx ::= \"b\"*+",
        2,
        11,
        "the repeated item can match the empty string, which makes rule \"x\" left-recursive for llama.cpp",
    ),
    (
        "repetition count too large",
        "root ::= \"a\"{5000000000}",
        1,
        14,
        "repetition count 5000000000 exceeds the limit 2000",
    ),
    (
        "repetition count overflows 64 bits",
        "root ::= \"a\"{99999999999999999999}",
        1,
        14,
        "repetition count 99999999999999999999 exceeds the limit 2000",
    ),
    ("repetition maximum too large", "root ::= \"a\"{0,2001}", 1, 16, "repetition count 2001 exceeds the limit 2000"),
    (
        "inverted repetition",
        "root ::= \"a\"{3,2}",
        1,
        13,
        "repetition range is inverted: minimum 3 > maximum 2",
    ),
    (
        "nested repetition too large",
        "root ::= \"a\"{50}{50}",
        1,
        17,
        "nested repetition is too large: llama.cpp would copy 2500 rules (limit 2000)",
    ),
    (
        "repeated group naming new rules",
        "root ::= (a b c){1000}\na ::= \"x\"\nb ::= \"y\"\nc ::= \"z\"",
        1,
        17,
        "nested repetition is too large: llama.cpp would copy 4000 rules (limit 2000); rules first named inside the repeated group count too, so defining them before this rule may help",
    ),
    ("nothing to repeat", "root ::= *\"a\"", 1, 10, "\"*\" has nothing to repeat"),
    ("repeating an empty literal", "root ::= \"\"+", 1, 12, "\"+\" has nothing to repeat"),
    ("repeating a removed item", "root ::= \"a\"{0}?", 1, 16, "\"?\" has nothing to repeat"),
    ("repetition after |", "root ::= \"a\" | {2}", 1, 16, "\"{\" has nothing to repeat"),
    ("brace without number", "root ::= \"a\"{x}", 1, 14, "expected a number after \"{\", found \"x\""),
    ("brace bad separator", "root ::= \"a\"{1;}", 1, 15, "expected \",\" or \"}\" in repetition, found \";\""),
    ("brace unclosed", "root ::= \"a\"{1,2", 1, 17, "expected \"}\" to close the repetition, found end of input"),
    ("unknown escape", "root ::= \"a\\qb\"", 1, 12, "unknown escape \"\\q\""),
    ("short hex escape", "root ::= [\\x4]", 1, 11, "expected 2 hex digits after \"\\x\""),
    ("surrogate escape", "root ::= \"\\uD800\"", 1, 11, "escape \"\\uD800\" is a UTF-16 surrogate, not a character"),
    (
        "escape above U+10FFFF",
        "root ::= \"\\U00110000\"",
        1,
        11,
        "escape \"\\U00110000\" is above U+10FFFF, the last Unicode code point",
    ),
    ("root matches nothing", "root ::= a\na ::= \"x\" a", 1, 1, "rule \"root\" matches nothing"),
    ("root is an empty class", "root ::= [^\\x00-\\U0010FFFF]", 1, 1, "rule \"root\" matches nothing"),
    ("reachable rule matches nothing", "root ::= \"a\" | \"b\" x\nx ::= \"c\" x", 2, 1, "rule \"x\" matches nothing"),
    (
        "reachable empty class",
        "root ::= \"a\" | \"b\" [^\\x01-\\U0010FFFF]",
        1,
        20,
        "character class matches no character a model can generate, so the sampler would get stuck here",
    ),
    (
        "reachable NUL literal",
        "root ::= \"a\" | \"b\\x00\"",
        1,
        18,
        "\"\\x00\" can never be generated (token text cannot contain NUL), so the sampler would get stuck here",
    ),
    ("NUL character", "root ::= \"a\0\"", 1, 12, "grammar contains a NUL character"),
    ("unclosed group", "root ::= (\"a\" | \"b\"", 1, 10, "unclosed \"(\""),
    (
        "unexpected character in a group",
        "root ::=\n (\"a\" ]",
        2,
        7,
        "unexpected \"]\" inside the group opened at line 2, column 2; expected \")\"",
    ),
    ("unmatched )", "root ::= \"a\")", 1, 13, "unexpected \")\" without a matching \"(\""),
    ("single quotes", "root ::= 'a'", 1, 10, "unexpected \"'\""),
    (
        "trailing | before the next rule",
        "root ::= \"a\" |\nb ::= \"c\"",
        2,
        3,
        "unexpected \"::=\": each rule must start on a new line (does the previous line end with \"|\" or \"::=\"?)",
    ),
    ("| starting a line", "root ::= \"a\"\n  | \"b\"", 2, 3, "expected a rule name, found \"|\""),
    ("rule name missing", "::= \"a\"", 1, 1, "expected a rule name, found \":\""),
    ("token id missing", "root ::= <[abc]>", 1, 12, "expected a token id after \"<[\", found \"a\""),
    ("token id too large", "root ::= <[4294967296]>", 1, 12, "token id 4294967296 is too large"),
    ("token id unclosed", "root ::= <[12>", 1, 14, "expected \"]\" after the token id, found \">\""),
    ("token without <", "root ::= !x", 1, 11, "expected \"<\" after \"!\", found \"x\""),
    ("unterminated token", "root ::= <abc", 1, 10, "unterminated token: expected \">\""),

];
