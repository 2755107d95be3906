//! Test helpers shared by the GigaChat and Yandex translator tests: fixture
//! loading and validation against the official OpenAI schemas.

use std::sync::OnceLock;

use serde_json::{json, Value};

/// The bytes of `testdata/<path>`.
pub(crate) fn fixture(path: &str) -> Vec<u8> {
    let full = format!("{}/testdata/{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&full).unwrap_or_else(|e| panic!("fixture {full}: {e}"))
}

/// The `components` of the OpenAI Chat Completions schemas.
fn components() -> &'static Value {
    static COMPONENTS: OnceLock<Value> = OnceLock::new();
    COMPONENTS.get_or_init(|| {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/openai-chat-schemas.json");
        let text = std::fs::read_to_string(path).expect("openai-chat-schemas.json");
        let doc: Value = serde_json::from_str(&text).unwrap();
        doc["components"].clone()
    })
}

fn validate(schema_name: &str, mut value: Value) {
    // What the gateway stamps before anything leaves it.
    value["id"] = json!("chatcmpl-test");
    value["created"] = json!(1_760_000_000);
    value["model"] = json!("test/model");
    let schema = json!({
        "$ref": format!("#/components/schemas/{schema_name}"),
        "components": components(),
    });
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(&value).map(|e| format!("{e} at {}", e.instance_path)).collect();
    assert!(errors.is_empty(), "{schema_name} invalid: {errors:?}\n{value:#}");
}

/// Asserts that a translated response is a valid `CreateChatCompletionResponse`.
pub(crate) fn validate_response(value: &Value) {
    validate("CreateChatCompletionResponse", value.clone());
}

/// Asserts that a chunk is a valid `CreateChatCompletionStreamResponse`.
pub(crate) fn validate_chunk(value: &Value) {
    validate("CreateChatCompletionStreamResponse", value.clone());
}
