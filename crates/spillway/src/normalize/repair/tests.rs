//! Unit tests of the tolerant parser: one per repair rule.

use super::*;
use crate::normalize::node::write_compact;

fn repaired(src: &str) -> (String, Vec<Fix>) {
    let parsed = parse_prefix(src).unwrap_or_else(|e| panic!("{src:?}: {e:?}"));
    let mut out = String::new();
    write_compact(&parsed.node, &mut out);
    (out, parsed.fixes)
}

fn check(src: &str, want: &str, fix: Fix) {
    let (got, fixes) = repaired(src);
    assert_eq!(got, want, "input {src:?}");
    assert!(fixes.contains(&fix), "input {src:?}: {fixes:?} lacks {fix:?}");
}

#[test]
fn strict_json_needs_no_fix() {
    let (got, fixes) = repaired(r#"{"a": [1, -2.5e3, "x\"y\u00e9\ud83d\ude00", true, null], "b": {}}"#);
    assert_eq!(got, r#"{"a":[1,-2.5e3,"x\"yé😀",true,null],"b":{}}"#);
    assert!(fixes.is_empty(), "{fixes:?}");
}

#[test]
fn trailing_and_doubled_commas() {
    check(r#"{"a": 1, "b": [1, 2,],}"#, r#"{"a":1,"b":[1,2]}"#, Fix::TrailingComma);
    check("[1,,2]", "[1,2]", Fix::TrailingComma);
}

#[test]
fn quotes() {
    check("{'a': 'it's fine'}", r#"{"a":"it's fine"}"#, Fix::SingleQuotes);
    check("{“name”: “Иван”}", r#"{"name":"Иван"}"#, Fix::SmartQuotes);
    check("{‘a’: «b»}", r#"{"a":"b"}"#, Fix::SmartQuotes);
    check(r#"{"q": "he said "hi" to me"}"#, r#"{"q":"he said \"hi\" to me"}"#, Fix::UnescapedQuote);
    // Smart quotes inside a normal string are text.
    let (got, fixes) = repaired(r#"{"q": "«ёлочки» and “curly”"}"#);
    assert_eq!(got, r#"{"q":"«ёлочки» and “curly”"}"#);
    assert!(fixes.is_empty());
}

#[test]
fn unquoted_keys_and_python_literals() {
    check(
        "{name: 'x', is_ok: True, other: None, no: False}",
        r#"{"name":"x","is_ok":true,"other":null,"no":false}"#,
        Fix::UnquotedKey,
    );
    check("[True, None]", "[true,null]", Fix::PythonLiteral);
    check("[NaN, -Infinity, undefined]", "[null,null,null]", Fix::PythonLiteral);
}

#[test]
fn comments() {
    check("{\n // the id\n \"id\": 1, /* two */ \"n\": 2 # three\n}", r#"{"id":1,"n":2}"#, Fix::Comment);
}

#[test]
fn missing_commas() {
    check("{\"a\": 1\n\"b\": 2}", r#"{"a":1,"b":2}"#, Fix::MissingComma);
    check("[{\"a\":1} {\"a\":2}]", r#"[{"a":1},{"a":2}]"#, Fix::MissingComma);
}

#[test]
fn numbers() {
    check("[+1, .5, 5., 007, -0.25, 1E5]", "[1,0.5,5,7,-0.25,1E5]", Fix::NumberFormat);
    assert!(parse_prefix("[1.2.3]").is_err());
    assert!(parse_prefix("[2024-01-05]").is_err());
}

#[test]
fn escapes_and_control_characters() {
    check(r#"["a\d", "\'x\'"]"#, r#"["a\\d","'x'"]"#, Fix::BadEscape);
    check("[\"line\nbreak\"]", r#"["line\nbreak"]"#, Fix::ControlCharacter);
    assert_eq!(repaired(r#"["\ud800x"]"#).0, "[\"\u{fffd}x\"]");
}

#[test]
fn truncated_tails() {
    check(r#"{"a": "Hello wor"#, r#"{"a":"Hello wor"}"#, Fix::ClosedTruncated);
    check(r#"{"a": [1, 2, {"b": tr"#, r#"{"a":[1,2,{}]}"#, Fix::ClosedTruncated);
    check(r#"{"a": 1, "b":"#, r#"{"a":1}"#, Fix::ClosedTruncated);
    check(r#"{"a": 1, "bc"#, r#"{"a":1}"#, Fix::ClosedTruncated);
    check(r#"{"a": 1.5e"#, r#"{"a":1.5}"#, Fix::ClosedTruncated);
    check(r#"[1, 2, -"#, r#"[1,2]"#, Fix::ClosedTruncated);
    check(r#"{"a": "x\"#, r#"{"a":"x"}"#, Fix::ClosedTruncated);
}

#[test]
fn stops_after_the_value() {
    let parsed = parse_prefix("{\"a\": 1} and then some prose").unwrap();
    assert_eq!(parsed.end, 8);
}

#[test]
fn refuses_prose_and_depth() {
    assert!(parse_prefix("{braces} in prose").is_err());
    assert!(parse_prefix("{the answer is below}").is_err());
    assert!(parse_prefix("[see note]").is_err());
    let deep = "[".repeat(500);
    assert_eq!(parse_prefix(&deep).unwrap_err().reason, "nesting too deep");
}
