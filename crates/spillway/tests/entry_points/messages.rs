//! `POST /v1/messages`: Anthropic's Messages API over any cascade — whole
//! and streamed answers through fallback, `tool_use` / `tool_result`, and
//! errors in Anthropic's shape.

use super::common::*;
use super::support::*;
use serde_json::{json, Value};

const VERSION: (&str, &str) = ("anthropic-version", "2023-06-01");

async fn messages(gw: &TestGateway, body: &Value) -> reqwest::Response {
    post(gw, "/v1/messages", body, &[VERSION]).await
}

/// What Anthropic's SDKs read of a message (there is no official schema file).
fn assert_message(m: &Value) {
    assert_eq!((m["type"].as_str(), m["role"].as_str()), (Some("message"), Some("assistant")), "{m:#}");
    assert!(m["id"].as_str().unwrap().starts_with("msg_"));
    assert!(m["model"].is_string());
    assert!(m["stop_sequence"].is_null());
    assert!(["end_turn", "max_tokens", "stop_sequence", "tool_use", "refusal"]
        .contains(&m["stop_reason"].as_str().unwrap()));
    for k in ["input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"] {
        assert!(m["usage"][k].is_u64(), "usage.{k}: {m:#}");
    }
    for b in m["content"].as_array().unwrap() {
        match b["type"].as_str().unwrap() {
            "text" => assert!(b["text"].is_string()),
            "tool_use" => assert!(b["id"].is_string() && b["name"].is_string() && b["input"].is_object()),
            other => panic!("unexpected block {other}"),
        }
    }
}

/// Anthropic's error body.
fn assert_error(e: &Value, kind: &str) {
    assert_eq!(e["type"], "error", "{e:#}");
    assert_eq!(e["error"]["type"], kind, "{e:#}");
    assert!(e["error"]["message"].is_string());
    assert!(e["request_id"].as_str().unwrap().starts_with("req_"));
}

#[tokio::test]
async fn a_whole_message_falls_back_to_the_second_model() {
    let (a, b) = (FakeUpstream::start().await, FakeUpstream::start().await);
    a.push(Reply::error(503, "overloaded", "later"));
    b.push(Reply::text("Hello there"));
    let gw = start(&two_upstreams(&a, &b, "")).await;
    let body = json!({"model": "chat", "max_tokens": 128, "system": "Be brief.", "stop_sequences": ["END"],
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}]});
    let resp = messages(&gw, &body).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(header(&resp, "x-spillway-model"), "b/m");
    let m: Value = resp.json().await.unwrap();
    assert_message(&m);
    assert_eq!(m["content"], json!([{"type": "text", "text": "Hello there"}]));
    assert_eq!((m["stop_reason"].as_str(), m["model"].as_str()), (Some("end_turn"), Some("b/m")));
    assert_eq!((m["usage"]["input_tokens"].as_u64(), m["usage"]["output_tokens"].as_u64()), (Some(5), Some(2)));
    let sent = &b.requests()[0];
    assert_eq!(sent["messages"][0], json!({"role": "system", "content": "Be brief."}));
    assert_eq!((sent["max_tokens"].as_u64(), sent["stop"][0].as_str()), (Some(128), Some("END")));
}

#[tokio::test]
async fn a_streamed_message_falls_back_and_follows_anthropics_event_order() {
    let (a, b) = (FakeUpstream::start().await, FakeUpstream::start().await);
    a.push(Reply::error(500, "server_error", "boom"));
    b.push(Reply::stream(&["Hel", "lo"]));
    let gw = start(&two_upstreams(&a, &b, "")).await;
    let body =
        json!({"model": "chat", "max_tokens": 64, "stream": true, "messages": [{"role": "user", "content": "Hi"}]});
    let resp = messages(&gw, &body).await;
    assert_eq!((resp.status().as_u16(), header(&resp, "x-spillway-model")), (200, "b/m"));
    let events = named_events(resp).await;
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop"
        ]
    );
    let start = &events[0].1["message"];
    assert_eq!((start["content"].as_array().map(Vec::len), start["usage"]["input_tokens"].is_u64()), (Some(0), true));
    let text: String = events[2..4].iter().map(|(_, d)| d["delta"]["text"].as_str().unwrap()).collect();
    assert_eq!(text, "Hello");
    assert_eq!(
        events[1].1,
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})
    );
    assert_eq!(events[5].1["delta"]["stop_reason"], "end_turn");
    assert!(events[5].1["usage"]["output_tokens"].is_u64());
}

#[tokio::test]
async fn tool_use_and_tool_result_round_trip() {
    let (a, b) = (FakeUpstream::start().await, FakeUpstream::start().await);
    a.push(tool_call_reply("toolu_01", "get_weather", "{\"city\":\"Oslo\"}"));
    a.push(Reply::text("Sunny in Oslo."));
    a.push(tool_call_stream("toolu_02", "get_weather", &["{\"city\":", "\"Bergen\"}"]));
    let gw = start(&two_upstreams(&a, &b, "")).await;
    let tools = json!([{"name": "get_weather", "description": "Weather by city",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]);
    let ask = json!({"role": "user", "content": "Weather in Oslo?"});
    let first =
        json!({"model": "chat", "max_tokens": 100, "tools": tools, "tool_choice": {"type": "auto"}, "messages": [ask]});
    let m: Value = messages(&gw, &first).await.json().await.unwrap();
    assert_message(&m);
    assert_eq!(m["stop_reason"], "tool_use");
    let tool_use = m["content"].as_array().unwrap().iter().find(|b| b["type"] == "tool_use").unwrap().clone();
    assert_eq!(
        tool_use,
        json!({"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"city": "Oslo"}})
    );
    assert_eq!(a.requests()[0]["tools"][0]["function"]["parameters"]["required"][0], "city");
    let second = json!({"model": "chat", "max_tokens": 100, "tools": tools, "messages": [
        ask,
        {"role": "assistant", "content": [tool_use]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "clear sky"}]}]});
    let m: Value = messages(&gw, &second).await.json().await.unwrap();
    assert_message(&m);
    assert_eq!(m["content"][0]["text"], "Sunny in Oslo.");
    let sent = &a.requests()[1]["messages"];
    assert_eq!(sent[1]["tool_calls"][0]["id"], "toolu_01");
    assert_eq!(sent[1]["tool_calls"][0]["function"]["arguments"], "{\"city\":\"Oslo\"}");
    assert_eq!(sent[2], json!({"role": "tool", "tool_call_id": "toolu_01", "content": "clear sky"}));
    // Streamed: a tool_use block whose input_json_deltas parse to an object.
    let mut streamed = first.clone();
    streamed["stream"] = json!(true);
    let events = named_events(messages(&gw, &streamed).await).await;
    let block = events.iter().find(|(n, _)| n == "content_block_start").unwrap();
    assert_eq!(
        block.1["content_block"],
        json!({"type": "tool_use", "id": "toolu_02", "name": "get_weather", "input": {}})
    );
    let json_text: String = events
        .iter()
        .filter(|(n, d)| n == "content_block_delta" && d["delta"]["type"] == "input_json_delta")
        .map(|(_, d)| d["delta"]["partial_json"].as_str().unwrap())
        .collect();
    assert_eq!(serde_json::from_str::<Value>(&json_text).unwrap(), json!({"city": "Bergen"}));
    let delta = events.iter().find(|(n, _)| n == "message_delta").unwrap();
    assert_eq!(delta.1["delta"]["stop_reason"], "tool_use");
}

#[tokio::test]
async fn errors_take_anthropics_shape() {
    let (a, b) = (FakeUpstream::start().await, FakeUpstream::start().await);
    a.set_default(Reply::error(503, "overloaded", "down"));
    b.set_default(Reply::error(502, "bad_gateway", "down"));
    let gw = start(&two_upstreams(&a, &b, "")).await;
    let msgs = json!([{"role": "user", "content": "Hi"}]);
    // `max_tokens` is required, as in Anthropic's API.
    let resp = messages(&gw, &json!({"model": "chat", "messages": msgs})).await;
    assert_eq!(resp.status(), 400);
    let e: Value = resp.json().await.unwrap();
    assert_error(&e, "invalid_request_error");
    assert!(e["error"]["message"].as_str().unwrap().contains("max_tokens"), "{e}");
    // So is the version header.
    let resp = post(&gw, "/v1/messages", &json!({"model": "chat", "max_tokens": 5, "messages": msgs}), &[]).await;
    assert_eq!(resp.status(), 400);
    assert_error(&resp.json().await.unwrap(), "invalid_request_error");
    let resp = messages(&gw, &json!({"model": "nope", "max_tokens": 5, "messages": msgs})).await;
    assert_eq!(resp.status(), 404);
    assert_error(&resp.json().await.unwrap(), "not_found_error");
    for stream in [false, true] {
        let resp = messages(&gw, &json!({"model": "chat", "max_tokens": 5, "stream": stream, "messages": msgs})).await;
        assert_eq!(resp.status(), 503);
        let e: Value = resp.json().await.unwrap();
        assert_error(&e, "overloaded_error");
        assert!(e["error"]["message"].as_str().unwrap().contains("a/m"), "{e}");
    }
}

#[tokio::test]
async fn anthropic_clients_authenticate_with_x_api_key() {
    let (a, b) = (FakeUpstream::start().await, FakeUpstream::start().await);
    let gw = start(&two_upstreams(&a, &b, "server:\n  api_keys: [sk-client]\n")).await;
    let body = json!({"model": "chat", "max_tokens": 5, "messages": [{"role": "user", "content": "Hi"}]});
    let resp = post(&gw, "/v1/messages", &body, &[VERSION, ("x-api-key", "sk-client")]).await;
    assert_eq!(resp.status(), 200);
    let resp = post(&gw, "/v1/messages", &body, &[VERSION, ("x-api-key", "wrong")]).await;
    assert_eq!(resp.status(), 401);
    assert_error(&resp.json().await.unwrap(), "authentication_error");
    let resp = post(&gw, "/v1/messages/count_tokens", &body, &[VERSION, ("authorization", "Bearer sk-client")]).await;
    assert_eq!(resp.status(), 200);
    assert!(resp.json::<Value>().await.unwrap()["input_tokens"].as_u64().unwrap() > 0);
}
