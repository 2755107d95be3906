//! Validation against the official OpenAI schemas
//! (`crates/spillway/testdata/openai-chat-schemas.json` and
//! `openai-responses-schemas.json`, copies of the files in
//! `shared/reference/`).

use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

fn load(name: &str) -> Value {
    let path = format!("{}/../spillway/testdata/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let doc: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
    doc["components"].clone()
}

fn components() -> &'static Value {
    static COMPONENTS: OnceLock<Value> = OnceLock::new();
    COMPONENTS.get_or_init(|| load("openai-chat-schemas.json"))
}

fn responses_components() -> &'static Value {
    static COMPONENTS: OnceLock<Value> = OnceLock::new();
    COMPONENTS.get_or_init(|| load("openai-responses-schemas.json"))
}

/// Panics with every violation unless `value` validates against the named
/// schema (`CreateChatCompletionResponse`, `CreateChatCompletionStreamResponse`,
/// `ErrorResponse`, `ListModelsResponse`, …).
pub fn assert_valid(schema_name: &str, value: &Value) {
    check(schema_name, "chat", components(), value);
}

/// [`assert_valid`] against the Responses and embeddings schemas
/// (`Response`, `ResponseStreamEvent`, `CreateEmbeddingResponse`,
/// `ErrorResponse`, …).
pub fn assert_valid_responses(schema_name: &str, value: &Value) {
    check(schema_name, "responses", responses_components(), value);
}

type Validators = Mutex<HashMap<(&'static str, String), Arc<jsonschema::Validator>>>;

/// Compiled once per schema: a stream's events validate against the same one.
fn check(schema_name: &str, file: &'static str, components: &Value, value: &Value) {
    static VALIDATORS: OnceLock<Validators> = OnceLock::new();
    let cache = VALIDATORS.get_or_init(Validators::default);
    let key = (file, schema_name.to_string());
    let cached = cache.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(&key).cloned();
    let validator = cached.unwrap_or_else(|| {
        let schema = json!({"$ref": format!("#/components/schemas/{schema_name}"), "components": components});
        let v = Arc::new(jsonschema::draft202012::new(&schema).unwrap_or_else(|e| panic!("schema {schema_name}: {e}")));
        cache.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(key, v.clone());
        v
    });
    let errors: Vec<String> = validator.iter_errors(value).map(|e| format!("{} at {}", e, e.instance_path)).collect();
    assert!(errors.is_empty(), "{schema_name} violations: {errors:#?}\nvalue: {value:#}");
}
