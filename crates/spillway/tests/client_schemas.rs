//! Client schemas through the gateway: untrusted schemas are refused with a
//! 400 that names the problem (before any model is called, so nothing hangs),
//! and the JSON guarantee holds for the drafts real clients send — zod's
//! draft-07 with `definitions`, the AI SDK's draft-07 tools, pydantic's `$defs`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)] // tests: fail loudly

mod common;

use std::time::Duration;

use common::*;
use serde_json::{json, Value};

const CLIENTS: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/schemas/clients.json"));

fn fixture(prefix: &str) -> Value {
    let all: Vec<Value> = serde_json::from_str(CLIENTS).unwrap();
    all.into_iter().find(|f| f["name"].as_str().unwrap().starts_with(prefix)).unwrap()
}

fn cyclic() -> Value {
    json!({"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"})
}

fn with_schema(schema: Value) -> Value {
    json!({"model": "chat", "messages": [{"role": "user", "content": "Extract."}],
           "response_format": {"type": "json_schema", "json_schema": {"name": "x", "strict": true, "schema": schema}}})
}

fn with_tool(parameters: Value) -> Value {
    json!({"model": "chat", "messages": [{"role": "user", "content": "Weather in Oslo?"}],
           "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": parameters}}]})
}

async fn pair() -> (FakeUpstream, FakeUpstream, TestGateway) {
    let (a, b) = (FakeUpstream::start().await, FakeUpstream::start().await);
    let yaml = format!(
        "providers:\n{}{}{FAST_HEALTH}cascades:\n  chat:\n    models: [a/m, b/m]\n",
        openai_provider("a", &a),
        openai_provider("b", &b)
    );
    (a, b, start(&yaml).await)
}

/// Posts with a deadline: a regression to unbounded work fails the test
/// instead of hanging it.
async fn post(gw: &TestGateway, body: &Value) -> (u16, Value) {
    let resp =
        tokio::time::timeout(Duration::from_secs(20), gw.post(body)).await.expect("the gateway answered in time");
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap())
}

#[tokio::test]
async fn a_ref_cycle_in_response_format_is_a_400_naming_it() {
    let (a, b, gw) = pair().await;
    let (status, body) = post(&gw, &with_schema(cyclic())).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["type"], "invalid_request_error");
    assert_eq!(body["error"]["param"], "response_format");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("`$ref` cycle at #/$defs/a"), "{message}");
    assert_eq!(a.calls() + b.calls(), 0, "refused before any model is called");
}

#[tokio::test]
async fn a_ref_cycle_in_tool_parameters_is_a_400_naming_the_tool() {
    let (a, _b, gw) = pair().await;
    let (status, body) = post(&gw, &with_tool(cyclic())).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["param"], "tools");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("get_weather") && message.contains("`$ref` cycle at #/$defs/a"), "{message}");
    assert_eq!(a.calls(), 0);
}

#[tokio::test]
async fn a_ref_outside_the_schema_is_a_400() {
    let (_a, _b, gw) = pair().await;
    let (status, body) = post(&gw, &with_schema(json!({"$ref": "https://example.com/s.json"}))).await;
    assert_eq!(status, 400);
    assert!(body["error"]["message"].as_str().unwrap().contains("does not resolve inside the schema"), "{body}");
}

#[tokio::test]
async fn mock_models_never_see_an_unusable_schema() {
    let yaml = "providers:\n  m:\n    kind: mock\n    models: [ { id: x } ]\ncascades:\n  chat:\n    models: [m/x]\n";
    let gw = start(yaml).await;
    assert_eq!(post(&gw, &with_schema(cyclic())).await.0, 400);
    assert_eq!(post(&gw, &with_tool(cyclic())).await.0, 400);
}

#[tokio::test]
async fn a_zod_draft07_answer_is_renamed_and_an_invalid_one_moves_on() {
    let (a, b, gw) = pair().await;
    let f = fixture("openai-node zodResponseFormat");
    // Before: draft-07 switched validation off and this came back as sent.
    a.push(Reply::text(f["renamed"]["answer"].as_str().unwrap()));
    let (status, body) = post(&gw, &with_schema(f["schema"].clone())).await;
    assert_eq!(status, 200, "{body}");
    let content: Value = serde_json::from_str(body["choices"][0]["message"]["content"].as_str().unwrap()).unwrap();
    assert_eq!(content, f["renamed"]["expect"]);
    // An answer without a required field is invalid output: the next model answers.
    a.push(Reply::text(&f["invalid"][0].to_string()));
    b.push(Reply::text(&f["valid"][0].to_string()));
    let (status, body) = post(&gw, &with_schema(f["schema"].clone())).await;
    assert_eq!(status, 200);
    assert_eq!(
        serde_json::from_str::<Value>(body["choices"][0]["message"]["content"].as_str().unwrap()).unwrap(),
        f["valid"][0]
    );
    assert_eq!(b.calls(), 1);
    let metrics = gw.get("/metrics").await.text().await.unwrap();
    assert!(metrics.contains(r#"spillway_normalize_total{provider="a",model="m",result="invalid"} 1"#), "{metrics}");
}

fn tool_call(args: &str) -> Reply {
    Reply::json(
        json!({"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
        "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": args}}]}}]}),
    )
}

#[tokio::test]
async fn ai_sdk_tool_arguments_are_validated_with_draft07() {
    let (a, b, gw) = pair().await;
    let f = fixture("AI SDK tool parameters");
    a.push(tool_call(r#"{"city": "Oslo", "unit": "kelvin", "days": 3}"#));
    b.push(tool_call(r#"{"City": "Oslo", "Unit": "celsius", "Days": 3}"#));
    let resp = tokio::time::timeout(Duration::from_secs(20), gw.post(&with_tool(f["schema"].clone()))).await.unwrap();
    assert_eq!(header(&resp, "x-spillway-model"), "b/m", "the invalid argument moved the request on");
    let body: Value = resp.json().await.unwrap();
    let args = body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"].as_str().unwrap();
    assert_eq!(serde_json::from_str::<Value>(args).unwrap(), json!({"city": "Oslo", "unit": "celsius", "days": 3}));
}

#[tokio::test]
async fn every_choice_of_n_is_checked() {
    let (a, b, gw) = pair().await;
    let choice = |i: u32, content: &str| json!({"index": i, "finish_reason": "stop", "message": {"role": "assistant", "content": content}});
    let good = r#"{"first_name": "Ada", "age": 36}"#;
    a.push(Reply::json(json!({"choices": [choice(0, good), choice(1, "no JSON here")]})));
    b.push(Reply::json(json!({"choices": [choice(0, good), choice(1, good)]})));
    let schema = json!({"type": "object", "required": ["first_name", "age"],
        "properties": {"first_name": {"type": "string"}, "age": {"type": "integer"}}});
    let mut req = with_schema(schema);
    req["n"] = json!(2);
    let resp = gw.post(&req).await;
    assert_eq!(header(&resp, "x-spillway-model"), "b/m");
    assert_eq!(a.calls() + b.calls(), 2);
}

#[tokio::test]
async fn mock_models_answer_pydantic_and_zod_schemas_validly() {
    let yaml = "providers:\n  m:\n    kind: mock\n    models: [ { id: x, behavior: { json: fenced } } ]\ncascades:\n  chat:\n    models: [m/x]\n";
    let gw = start(yaml).await;
    for prefix in ["pydantic v2 model_json_schema", "openai-node zodResponseFormat", "pydantic v2 recursive"] {
        let f = fixture(prefix);
        let (status, body) = post(&gw, &with_schema(f["schema"].clone())).await;
        assert_eq!(status, 200, "{prefix}: {body}");
        let content: Value = serde_json::from_str(body["choices"][0]["message"]["content"].as_str().unwrap()).unwrap();
        assert!(content.is_object(), "{prefix}: {content}");
    }
    let metrics = gw.get("/metrics").await.text().await.unwrap();
    assert!(metrics.contains(r#"spillway_normalize_total{provider="m",model="x",result="repaired"} 3"#), "{metrics}");
}
