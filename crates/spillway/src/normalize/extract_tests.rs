//! Unit tests of extraction and the pipeline; the fixture corpus in
//! `corpus_tests.rs` covers realistic answers end to end.

use super::*;
use crate::normalize::{normalize, SchemaCache};
use serde_json::json;

fn schema(v: Value) -> Expected {
    let cache = SchemaCache::default();
    Expected::Schema { compiled: cache.get_or_compile(&v).unwrap(), strict: false }
}

#[test]
fn valid_passes_unchanged() {
    let text = "{\n  \"b\": 1,\n  \"a\": [1, 2]\n}";
    let n = normalize(&format!("  {text}\n"), &Expected::Object).unwrap();
    assert_eq!(n.json, text);
    assert_eq!(n.result, NormalizeResult::Valid);
    assert!(n.fixes.is_empty());
}

#[test]
fn fences_json_tag_first() {
    let text = "```python\nprint(1)\n```\nand\n```json\n{\"a\": 1,}\n```";
    let n = normalize(text, &Expected::Object).unwrap();
    assert_eq!(n.json, r#"{"a":1}"#);
    assert_eq!(n.fixes, vec![Fix::FencedBlock, Fix::TrailingComma]);
    assert_eq!(fences("```json{\"a\":1}```"), vec!["{\"a\":1}"]);
    assert_eq!(fences("```json\n{\"a\":\"```\"}\n```\n"), vec!["\n{\"a\":\"```\"}\n"]);
}

#[test]
fn prose_skips_values_that_do_not_fit() {
    let text = "Согласно [1], ответ {см. ниже}: {\"a\": 1} — готово.";
    let n = normalize(text, &Expected::Object).unwrap();
    assert_eq!(n.json, r#"{"a":1}"#);
    assert_eq!(n.fixes, vec![Fix::SurroundingText]);
    let s = schema(json!({"type": "object", "required": ["x"]}));
    let n = normalize("Empty is {} but here: {\"x\": 2}", &s).unwrap();
    assert_eq!(n.json, r#"{"x":2}"#);
}

#[test]
fn string_holding_json() {
    let n = normalize(r#""{\"a\": 1}""#, &Expected::Object).unwrap();
    assert_eq!(n.json, r#"{"a":1}"#);
    assert_eq!(n.fixes, vec![Fix::UnwrappedString]);
    let s = schema(json!({"type": "string"}));
    let n = normalize(r#""{\"a\": 1}""#, &s).unwrap();
    assert_eq!(n.result, NormalizeResult::Valid);
}

#[test]
fn errors_say_why() {
    assert_eq!(normalize("Sorry, I cannot help.", &Expected::Object), Err(NormalizeError::NoJson));
    assert_eq!(normalize("", &Expected::Object), Err(NormalizeError::NoJson));
    assert_eq!(normalize("[1, 2]", &Expected::Object), Err(NormalizeError::NotAnObject { found: "array" }));
    let err = normalize("Here: {a b c}", &Expected::Object).unwrap_err();
    assert_eq!(err.metric_label(), "unrepairable");
    let s = schema(json!({"type": "object", "required": ["x"]}));
    let err = normalize("{\"y\": 1}", &s).unwrap_err();
    assert_eq!(err.metric_label(), "schema_violation");
    assert_eq!(err.result().metric_label(), "invalid");
}

#[test]
fn rename_on_valid_json() {
    let s = schema(json!({"type": "object", "properties": {"user_id": {"type": "integer"}},
        "required": ["user_id"], "additionalProperties": false}));
    let n = normalize(r#"{"userId": 7}"#, &s).unwrap();
    assert_eq!(n.json, r#"{"user_id":7}"#);
    assert_eq!(n.fixes, vec![Fix::RenamedField { from: "userId".into(), to: "user_id".into() }]);
}

#[test]
fn hostile_input_is_bounded() {
    let text = "{".repeat(10_000) + &"[x".repeat(10_000);
    assert!(normalize(&text, &Expected::Object).is_err());
    assert!(normalize("```", &Expected::Object).is_err());
    assert!(normalize("[1e400]", &schema(json!({}))).is_err());
}
