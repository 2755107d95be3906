//! Test helpers shared by the Anthropic translator's tests: fixture loading,
//! a minimal SSE splitter, and validation against the official OpenAI
//! schemas the gateway's output must satisfy.

use serde_json::{json, Value};

/// Where the official OpenAI chat schemas may live: a copy in the crate's
/// testdata first, else the project's shared reference.
const SCHEMA_PATHS: [&str; 1] = [concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/openai-chat-schemas.json")];

/// Reads a fixture from `testdata/anthropic/`.
pub(crate) fn fixture(name: &str) -> String {
    let path = format!("{}/testdata/anthropic/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {path}: {e}"))
}

/// Splits an SSE transcript into `(event name, joined data)` pairs. Test
/// only: the gateway's real parser lives in the core and is more tolerant.
pub(crate) fn sse_events(text: &str) -> Vec<(Option<String>, String)> {
    let mut events = Vec::new();
    for raw in text.split("\n\n") {
        let mut name = None;
        let mut data: Vec<&str> = Vec::new();
        for line in raw.lines() {
            if let Some(v) = line.strip_prefix("event:") {
                name = Some(v.trim_start().to_owned());
            } else if let Some(v) = line.strip_prefix("data:") {
                data.push(v.strip_prefix(' ').unwrap_or(v));
            }
        }
        if name.is_some() || !data.is_empty() {
            events.push((name, data.join("\n")));
        }
    }
    events
}

/// Stamps what the gateway adds (`id`, `created`, `model`) onto `value`.
pub(crate) fn stamp(value: &Value) -> Value {
    let mut value = value.clone();
    if let Some(obj) = value.as_object_mut() {
        obj.insert("id".into(), json!("chatcmpl-test"));
        obj.insert("created".into(), json!(1_760_000_000));
        obj.insert("model".into(), json!("anthropic/claude-test"));
    }
    value
}

/// Asserts that `value`, once stamped, validates against the named schema
/// (`CreateChatCompletionResponse`, `CreateChatCompletionStreamResponse`).
pub(crate) fn assert_valid(schema_name: &str, value: &Value) {
    let text = SCHEMA_PATHS
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok())
        .unwrap_or_else(|| panic!("openai-chat-schemas.json not found in {SCHEMA_PATHS:?}"));
    let doc: Value = serde_json::from_str(&text).unwrap();
    let schema = json!({
        "$ref": format!("#/components/schemas/{schema_name}"),
        "components": doc["components"],
    });
    let validator = jsonschema::draft202012::new(&schema).unwrap();
    let stamped = stamp(value);
    let errors: Vec<String> = validator.iter_errors(&stamped).map(|e| format!("{e} at {}", e.instance_path)).collect();
    assert!(errors.is_empty(), "{schema_name} violations: {errors:#?}\nin {stamped:#}");
}

#[test]
#[should_panic(expected = "violations")]
fn schema_check_rejects_a_bad_chunk() {
    let bad =
        json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": "done"}]});
    assert_valid("CreateChatCompletionStreamResponse", &bad);
}

#[test]
#[should_panic(expected = "violations")]
fn schema_check_rejects_a_bad_response() {
    let bad = json!({"object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant"}, "finish_reason": "stop", "logprobs": null}]});
    assert_valid("CreateChatCompletionResponse", &bad);
}
