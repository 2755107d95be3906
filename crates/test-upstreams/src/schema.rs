//! Validation against the official OpenAI schemas
//! (`crates/spillway/testdata/openai-chat-schemas.json`, a copy of
//! `shared/reference/openai-chat-schemas.json`).

use serde_json::{json, Value};
use std::sync::OnceLock;

fn components() -> &'static Value {
    static COMPONENTS: OnceLock<Value> = OnceLock::new();
    COMPONENTS.get_or_init(|| {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../spillway/testdata/openai-chat-schemas.json");
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let doc: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
        doc["components"].clone()
    })
}

/// Panics with every violation unless `value` validates against the named
/// schema (`CreateChatCompletionResponse`, `CreateChatCompletionStreamResponse`,
/// `ErrorResponse`, `ListModelsResponse`, …).
pub fn assert_valid(schema_name: &str, value: &Value) {
    let schema = json!({"$ref": format!("#/components/schemas/{schema_name}"), "components": components()});
    let validator = jsonschema::draft202012::new(&schema).unwrap_or_else(|e| panic!("schema {schema_name}: {e}"));
    let errors: Vec<String> = validator.iter_errors(value).map(|e| format!("{} at {}", e, e.instance_path)).collect();
    assert!(errors.is_empty(), "{schema_name} violations: {errors:#?}\nvalue: {value:#}");
}
