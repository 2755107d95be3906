//! Each test here would hang or exhaust memory without the bounds; they run
//! the work on a thread with a deadline, so a regression fails instead of
//! stalling the suite.

use std::sync::mpsc;
use std::time::Duration;

use serde_json::{json, Value};

use super::*;
use crate::normalize::{CompiledSchema, ResponseFormatError};

/// Runs `f` on its own thread; panics when it takes longer than `secs`.
pub(crate) fn within<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(secs)).expect("did not finish in time: unbounded work")
}

fn problem(schema: Value) -> SchemaProblem {
    match within(5, move || CompiledSchema::compile(&schema)) {
        Err(ResponseFormatError::Unusable(p)) => p,
        other => panic!("expected an unusable schema, got {other:?}"),
    }
}

#[test]
fn a_ref_cycle_is_refused_with_its_path() {
    let cyclic = json!({"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"});
    let p = problem(cyclic);
    assert!(matches!(&p, SchemaProblem::RefCycle { at, .. } if at == "#/$defs/a"), "{p:?}");
    assert!(p.to_string().starts_with("`$ref` cycle at #/$defs/a: #/$defs/a → #/$defs/b → #/$defs/a"), "{p}");
}

#[test]
fn cycles_through_branches_and_definitions_are_refused() {
    let self_ref = json!({"$schema": "http://json-schema.org/draft-07/schema#",
        "definitions": {"x": {"anyOf": [{"type": "string"}, {"$ref": "#/definitions/x"}]}},
        "type": "object", "properties": {"v": {"$ref": "#/definitions/x"}}});
    assert!(matches!(problem(self_ref), SchemaProblem::RefCycle { at, .. } if at == "#/definitions/x"));
    let root = json!({"allOf": [{"$ref": "#"}]});
    assert!(matches!(problem(root), SchemaProblem::RefCycle { .. }));
}

#[test]
fn recursion_through_a_property_is_a_valid_schema() {
    let tree = json!({"$defs": {"n": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/n"}}}}},
        "$ref": "#/$defs/n"});
    let compiled = within(5, move || CompiledSchema::compile(&tree)).unwrap();
    assert!(compiled.check(&json!({"kids": [{"kids": []}]})).is_ok());
    assert!(compiled.check(&json!({"kids": [{"kids": 1}]})).is_err());
}

#[test]
fn an_unused_cyclic_definition_does_not_matter() {
    let s = json!({"$defs": {"a": {"$ref": "#/$defs/a"}}, "type": "string"});
    assert!(CompiledSchema::compile(&s).is_ok());
}

#[test]
fn references_outside_the_document_are_refused() {
    let remote = json!({"$ref": "https://example.com/schema.json"});
    assert!(matches!(problem(remote), SchemaProblem::UnresolvedRef { .. }));
    let missing = json!({"properties": {"a": {"$ref": "#/$defs/Nope"}}});
    let p = problem(missing);
    assert_eq!(p.to_string(), "`$ref` \"#/$defs/Nope\" at #/properties/a does not resolve inside the schema (remote references are not fetched)");
    // References to `$id`s and anchors inside the document resolve.
    let ids = json!({"$defs": {"item": {"$id": "https://x.test/item.json", "type": "string"},
        "named": {"$anchor": "Named", "type": "integer"}},
        "properties": {"a": {"$ref": "https://x.test/item.json"}, "b": {"$ref": "#Named"}}});
    let compiled = CompiledSchema::compile(&ids);
    assert!(compiled.is_ok(), "{compiled:?}");
}

#[test]
fn an_exponential_expansion_is_refused() {
    // Each level refers to the next twice: 2^30 subschemas unrolled.
    let mut defs = serde_json::Map::new();
    for i in 0..30 {
        let next = format!("#/$defs/d{}", i + 1);
        defs.insert(format!("d{i}"), json!({"anyOf": [{"$ref": next}, {"$ref": next}]}));
    }
    defs.insert("d30".into(), json!({"type": "string"}));
    let s = json!({"$defs": defs, "$ref": "#/$defs/d0"});
    assert_eq!(problem(s), SchemaProblem::TooComplex { limit: MAX_EXPANDED });
}

#[test]
fn size_and_depth_are_capped() {
    let props: serde_json::Map<String, Value> =
        (0..MAX_SCHEMA_NODES + 1).map(|i| (format!("p{i}"), json!({}))).collect();
    assert!(matches!(problem(json!({"properties": props})), SchemaProblem::TooLarge { .. }));
    let mut deep = json!({"type": "string"});
    for _ in 0..MAX_SCHEMA_DEPTH + 2 {
        deep = json!({"not": deep});
    }
    assert!(matches!(problem(deep), SchemaProblem::TooDeep { .. }));
}

#[test]
fn a_deep_answer_against_a_multiplying_recursive_schema_is_refused_quickly() {
    // Both branches recurse into `x`: a validator that reports every error
    // tries 2^depth paths. The answer fails at the bottom, so every path is
    // walked.
    let s = json!({"type": "object", "anyOf": [
        {"properties": {"x": {"$ref": "#"}}}, {"properties": {"x": {"$ref": "#"}}}]});
    let compiled = CompiledSchema::compile(&s).unwrap();
    let mut answer = json!(1);
    for _ in 0..40 {
        answer = json!({"x": answer});
    }
    let messages = within(10, move || compiled.check(&answer)).unwrap_err();
    assert!(messages[0].contains("too large or too deep"), "{messages:?}");
}

#[test]
fn ordinary_answers_pass_the_work_count() {
    let s = json!({"$defs": {"n": {"type": "object", "properties": {"v": {"type": "integer"},
        "kids": {"type": "array", "items": {"$ref": "#/$defs/n"}}}}}, "$ref": "#/$defs/n"});
    let compiled = CompiledSchema::compile(&s).unwrap();
    let mut answer = json!({"v": 1, "kids": []});
    for _ in 0..60 {
        answer = json!({"v": 1, "kids": [answer.clone(), {"v": 2}]});
    }
    assert_eq!(compiled.check(&answer), Ok(()));
}
