use super::*;
use crate::normalize::SchemaCache;

fn sampled(schema: Value) -> Value {
    let compiled = SchemaCache::default().get_or_compile(&schema).unwrap();
    let value = sample(&compiled);
    assert_eq!(compiled.check(&value), Ok(()), "{value} for {schema}");
    value
}

#[test]
fn simple_schemas_keep_their_familiar_values() {
    let s = json!({"type":"object","properties":{"first_name":{"type":"string"},"age":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}}}});
    assert_eq!(sampled(s), json!({"first_name":"mock","age":1,"tags":["mock"]}));
}

#[test]
fn optional_refs_get_real_values_and_recursion_ends() {
    let s = json!({"$defs": {"Node": {"type": "object", "required": ["name", "children"], "properties": {
        "name": {"type": "string"},
        "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
        "parent": {"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]}}}},
        "$ref": "#/$defs/Node"});
    let v = sampled(s);
    assert_eq!(v["name"], "mock");
    assert!(v["parent"].is_object(), "an Optional nested model is filled in near the top: {v}");
}

#[test]
fn nullable_type_arrays_prefer_the_value() {
    assert_eq!(sampled(json!({"type": ["string", "null"]})), json!("mock"));
    assert_eq!(sampled(json!({"type": ["null", "integer"], "minimum": 3})), json!(3));
}

#[test]
fn bounds_and_multiples() {
    assert_eq!(sampled(json!({"type": "integer", "minimum": 10, "multipleOf": 5})), json!(10));
    assert_eq!(sampled(json!({"type": "integer", "exclusiveMaximum": 0})), json!(-1));
    let v = sampled(json!({"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1}));
    assert_eq!(v, json!(0.5));
    sampled(
        json!({"$schema": "http://json-schema.org/draft-04/schema#", "type": "number", "maximum": 1, "exclusiveMaximum": true}),
    );
}

#[test]
fn strings_follow_format_pattern_and_length() {
    assert_eq!(sampled(json!({"type": "string", "format": "date-time"})), json!("2024-01-01T00:00:00Z"));
    assert_eq!(sampled(json!({"type": "string", "pattern": "^ORD-[0-9]{3}$"})), json!("ORD-111"));
    assert_eq!(sampled(json!({"type": "string", "minLength": 6})), json!("mockxx"));
    assert_eq!(sampled(json!({"type": "string", "maxLength": 2})), json!("mo"));
}

#[test]
fn all_of_merges_and_one_of_picks_a_branch_that_validates() {
    let v = sampled(json!({"allOf": [
        {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
        {"properties": {"b": {"type": "integer"}}, "required": ["b"]}]}));
    assert_eq!(v, json!({"a": "mock", "b": 1}));
    // "mock" satisfies both string branches: a later strategy picks the
    // integer one, which only one branch accepts.
    sampled(json!({"oneOf": [{"type": "string"}, {"type": "string", "minLength": 1}, {"type": "integer"}]}));
}

#[test]
fn an_unsatisfiable_schema_still_gets_an_answer() {
    let compiled =
        SchemaCache::default().get_or_compile(&json!({"type": "string", "not": {"type": "string"}})).unwrap();
    let v = sample(&compiled);
    assert!(compiled.check(&v).is_err(), "nothing satisfies it; the mock answers its best try: {v}");
}
