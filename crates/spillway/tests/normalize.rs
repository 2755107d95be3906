//! JSON answers through the gateway (SPEC §7): normalized before they are
//! returned, invalid ones move on to the next model, streams with a schema
//! are validated first and then streamed.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)] // tests: fail loudly

mod common;

use common::*;
use serde_json::{json, Value};

fn schema_request(stream: bool) -> Value {
    json!({
        "model": "chat",
        "stream": stream,
        "messages": [{"role": "user", "content": "Extract the person."}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "person", "strict": true, "schema": {
            "type": "object",
            "properties": {"first_name": {"type": "string"}, "age": {"type": "integer"}},
            "required": ["first_name", "age"],
            "additionalProperties": false
        }}}
    })
}

async fn pair() -> (FakeUpstream, FakeUpstream, TestGateway) {
    let (a, b) = (FakeUpstream::start().await, FakeUpstream::start().await);
    let yaml = format!(
        "providers:\n{}{}{FAST_HEALTH}cascades:\n  chat:\n    models: [a/m, b/m]\n",
        openai_provider("a", &a),
        openai_provider("b", &b)
    );
    let gw = start(&yaml).await;
    (a, b, gw)
}

#[tokio::test]
async fn fenced_renamed_json_is_returned_clean() {
    let (a, _b, gw) = pair().await;
    a.push(Reply::text("Вот ваш JSON:\n```json\n{'FirstName': 'Ada', 'age': 36,}\n```"));
    let resp = gw.post(&schema_request(false)).await;
    assert_eq!(header(&resp, "x-spillway-model"), "a/m");
    let body: Value = resp.json().await.unwrap();
    assert_valid("CreateChatCompletionResponse", &body);
    let content: Value = serde_json::from_str(body["choices"][0]["message"]["content"].as_str().unwrap()).unwrap();
    assert_eq!(content, json!({"first_name": "Ada", "age": 36}));
    let metrics = gw.get("/metrics").await.text().await.unwrap();
    assert!(metrics.contains(r#"spillway_normalize_total{provider="a",model="m",result="repaired"} 1"#), "{metrics}");
}

#[tokio::test]
async fn invalid_output_moves_to_the_next_model_without_tripping_the_breaker() {
    let (a, b, gw) = pair().await;
    a.set_default(Reply::text("I cannot help with that."));
    b.set_default(Reply::text(r#"{"first_name": "Ada", "age": 36}"#));
    for _ in 0..6 {
        let resp = gw.post(&schema_request(false)).await;
        assert_eq!(header(&resp, "x-spillway-model"), "b/m");
    }
    assert_eq!(a.calls(), 6, "invalid output is not a breaker failure: a is still tried");
    let metrics = gw.get("/metrics").await.text().await.unwrap();
    assert!(metrics.contains(r#"result="invalid_output"} 6"#), "{metrics}");
    assert!(metrics.contains(r#"spillway_normalize_total{provider="b",model="m",result="valid"} 6"#), "{metrics}");
}

#[tokio::test]
async fn every_answer_invalid_is_503_listing_invalid_output() {
    let (a, b, gw) = pair().await;
    a.push(Reply::text("no json here"));
    b.push(Reply::text(r#"{"first_name": 5}"#));
    let resp = gw.post(&schema_request(false)).await;
    assert_eq!(resp.status(), 503);
    let body: Value = resp.json().await.unwrap();
    let msg = body["error"]["message"].as_str().unwrap();
    assert!(msg.contains("a/m: invalid_output") && msg.contains("b/m: invalid_output"), "{msg}");
}

#[tokio::test]
async fn a_stream_with_a_schema_is_validated_then_streamed() {
    let (a, b, gw) = pair().await;
    // a streams broken JSON that cannot be saved; b streams it in pieces with a fence.
    a.push(Reply::stream(&["Sorry, ", "no."]));
    b.push(Reply::stream(&["```json\n{\"first_", "name\": \"Ada\", \"age\": 3", "6}\n```"]));
    let resp = gw.post(&schema_request(true)).await;
    assert_eq!(header(&resp, "x-spillway-model"), "b/m");
    let events = sse_events(resp).await;
    assert_eq!(events.last().unwrap(), "[DONE]");
    for e in &events[..events.len() - 1] {
        assert_valid("CreateChatCompletionStreamResponse", &serde_json::from_str::<Value>(e).unwrap());
    }
    let text = streamed_text(&events);
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), json!({"first_name": "Ada", "age": 36}));
}

#[tokio::test]
async fn json_object_accepts_any_object() {
    let (a, _b, gw) = pair().await;
    a.push(Reply::text("Sure! {\"ok\": True, \"items\": [1, 2,]} Hope that helps."));
    let mut req = chat("chat", false);
    req["response_format"] = json!({"type": "json_object"});
    let body: Value = gw.post(&req).await.json().await.unwrap();
    assert_eq!(body["choices"][0]["message"]["content"], r#"{"ok":true,"items":[1,2]}"#);
}

#[tokio::test]
async fn tool_call_arguments_are_checked_against_the_tool_schema() {
    let (a, b, gw) = pair().await;
    let call = |args: &str| {
        Reply::json(
            json!({"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
            "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": args}}]}}]}),
        )
    };
    a.push(call("{\"town\": 5}"));
    b.push(call("{'City': 'Oslo',}"));
    let req = json!({"model": "chat", "messages": [{"role": "user", "content": "Weather in Oslo?"}],
        "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {
            "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": false}}}]});
    let resp = gw.post(&req).await;
    assert_eq!(header(&resp, "x-spillway-model"), "b/m");
    let body: Value = resp.json().await.unwrap();
    assert_valid("CreateChatCompletionResponse", &body);
    assert_eq!(body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"], r#"{"city":"Oslo"}"#);
}

#[tokio::test]
async fn providers_without_native_json_get_the_schema_as_an_instruction() {
    let a = FakeUpstream::start().await;
    let yaml = format!(
        "providers:\n{}{FAST_HEALTH}cascades:\n  chat:\n    models: [a/m]\n",
        openai_provider("a", &a).replace("test-key-a\n", "test-key-a\n    native_json: false\n")
    );
    let gw = start(&yaml).await;
    a.push(Reply::text(r#"{"first_name": "Ada", "age": 36}"#));
    assert_eq!(gw.post(&schema_request(false)).await.status(), 200);
    let sent = &a.requests()[0];
    assert!(sent.get("response_format").is_none(), "the field is not sent to a provider that may reject it");
    let system = sent["messages"][0]["content"].as_str().unwrap();
    assert_eq!(sent["messages"][0]["role"], "system");
    assert!(system.contains("first_name") && system.contains("JSON"), "{system}");
}

/// After a Russian system prompt (a prompt variant's prefix or the
/// client's), the instruction is Russian too; after an English one, English.
#[tokio::test]
async fn the_instruction_follows_a_russian_system_prompt_on_whole_and_streamed_requests() {
    let a = FakeUpstream::start().await;
    let yaml = format!(
        "providers:\n{}{FAST_HEALTH}cascades:\n  chat:\n    models: [a/m]\nprompts:\n  - match: a/*\n    system_prefix: \"Ты — помощник по извлечению данных.\"\n",
        openai_provider("a", &a).replace("test-key-a\n", "test-key-a\n    native_json: false\n")
    );
    let gw = start(&yaml).await;
    for stream in [false, true] {
        let answer = r#"{"first_name": "Ada", "age": 36}"#;
        a.push(if stream { Reply::stream(&[answer]) } else { Reply::text(answer) });
        assert_eq!(gw.post(&schema_request(stream)).await.status(), 200);
        let sent = a.requests().pop().unwrap();
        let system = sent["messages"][0]["content"].as_str().unwrap().to_string();
        assert!(system.starts_with("Ты — помощник"), "{system}");
        assert!(
            system.contains("Ответь одним JSON-значением, соответствующим JSON Schema ниже"),
            "stream={stream}: {system}"
        );
        assert!(!system.contains("Respond with"), "{system}");
    }
}

#[tokio::test]
async fn the_demo_sloppy_model_is_normalized() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/demo.yaml")).unwrap();
    let gw = start(&text).await;
    let mut req = schema_request(false);
    req["model"] = json!("extraction");
    let body: Value = gw.post(&req).await.json().await.unwrap();
    assert_eq!(body["model"], "paid/sloppy-json");
    let content: Value = serde_json::from_str(body["choices"][0]["message"]["content"].as_str().unwrap()).unwrap();
    assert_eq!(content, json!({"first_name": "mock", "age": 1}));
}
