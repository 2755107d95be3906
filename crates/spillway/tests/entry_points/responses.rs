//! `POST /v1/responses`: whole and streamed answers through a cascade's
//! fallback, validated against the official Responses schemas; function
//! calls and their outputs; the API's errors.

use super::common::*;
use super::support::*;
use serde_json::{json, Value};
use test_upstreams::schema::assert_valid_responses;

async fn responses(gw: &TestGateway, body: &Value) -> reqwest::Response {
    post(gw, "/v1/responses", body, &[]).await
}

#[tokio::test]
async fn a_whole_response_falls_back_to_the_second_model_and_validates() {
    let (a, b) = (FakeUpstream::start().await, FakeUpstream::start().await);
    a.push(Reply::error(503, "overloaded", "try later"));
    b.push(Reply::text("Hello there"));
    let gw = start(&two_upstreams(&a, &b, "")).await;
    let body = json!({"model": "chat", "instructions": "Be brief.", "max_output_tokens": 64, "metadata": {"k": "v"},
        "input": [{"role": "user", "content": [{"type": "input_text", "text": "Hi"}]}]});
    let resp = responses(&gw, &body).await;
    assert_eq!(resp.status(), 200);
    assert_eq!((header(&resp, "x-spillway-model"), header(&resp, "x-spillway-attempts")), ("b/m", "2"));
    let r: Value = resp.json().await.unwrap();
    assert_valid_responses("Response", &r);
    assert_eq!(
        (r["object"].as_str(), r["status"].as_str(), r["model"].as_str()),
        (Some("response"), Some("completed"), Some("b/m"))
    );
    assert!(r["id"].as_str().unwrap().starts_with("resp_"));
    assert_eq!(r["output"][0]["content"][0]["text"], "Hello there");
    assert_eq!((r["instructions"].as_str(), r["metadata"]["k"].as_str()), (Some("Be brief."), Some("v")));
    assert_eq!(r["usage"]["input_tokens"], 5);
    assert_eq!(r["usage"]["total_tokens"], 7);
    // The chat request the upstream got.
    let sent = &b.requests()[0];
    assert_eq!(sent["messages"][0], json!({"role": "system", "content": "Be brief."}));
    assert_eq!(sent["messages"][1]["content"][0], json!({"type": "text", "text": "Hi"}));
    assert_eq!((sent["model"].as_str(), sent["max_tokens"].as_u64()), (Some("m"), Some(64)));
    assert_eq!(a.calls(), 1);
}

#[tokio::test]
async fn a_streamed_response_falls_back_and_every_event_validates() {
    let (a, b) = (FakeUpstream::start().await, FakeUpstream::start().await);
    a.push(Reply::error(500, "server_error", "boom"));
    b.push(Reply::stream(&["Hel", "lo"]));
    let gw = start(&two_upstreams(&a, &b, "")).await;
    let resp = responses(&gw, &json!({"model": "chat", "input": "Hi", "stream": true})).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(header(&resp, "x-spillway-model"), "b/m");
    let events = named_events(resp).await;
    // The validator is strict: an event without its fields fails it.
    let bare = std::panic::catch_unwind(|| {
        assert_valid_responses("ResponseStreamEvent", &json!({"type": "response.created"}))
    });
    assert!(bare.is_err());
    for (i, (_, data)) in events.iter().enumerate() {
        assert_valid_responses("ResponseStreamEvent", data);
        assert_eq!(data["sequence_number"], i as u64);
    }
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names.first(), Some(&"response.created"));
    assert_eq!(names.last(), Some(&"response.completed"));
    let text: String = events
        .iter()
        .filter(|(n, _)| n == "response.output_text.delta")
        .map(|(_, d)| d["delta"].as_str().unwrap())
        .collect();
    assert_eq!(text, "Hello");
    let done = &events.last().unwrap().1["response"];
    assert_valid_responses("Response", done);
    assert_eq!(done["output"][0]["content"][0]["text"], "Hello");
    // The gateway asked for usage so `response.completed` can carry it.
    assert_eq!(b.requests()[0]["stream_options"]["include_usage"], true);
}

#[tokio::test]
async fn function_calls_and_their_outputs_round_trip() {
    let (a, b) = (FakeUpstream::start().await, FakeUpstream::start().await);
    a.push(tool_call_reply("call_7", "get_weather", "{\"city\":\"Oslo\"}"));
    a.push(Reply::text("Sunny in Oslo."));
    a.push(tool_call_stream("call_8", "get_weather", &["{\"city\":", "\"Bergen\"}"]));
    let gw = start(&two_upstreams(&a, &b, "")).await;
    let tools = json!([{"type": "function", "name": "get_weather", "description": "Weather by city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}, "strict": true}]);
    let first = json!({"model": "chat", "input": "Weather in Oslo?", "tools": tools, "tool_choice": "auto"});
    let r: Value = responses(&gw, &first).await.json().await.unwrap();
    assert_valid_responses("Response", &r);
    let call = r["output"].as_array().unwrap().iter().find(|i| i["type"] == "function_call").unwrap().clone();
    assert_eq!((call["call_id"].as_str(), call["name"].as_str()), (Some("call_7"), Some("get_weather")));
    assert_eq!(serde_json::from_str::<Value>(call["arguments"].as_str().unwrap()).unwrap(), json!({"city": "Oslo"}));
    assert_eq!(r["tools"][0]["name"], "get_weather");
    let sent = &a.requests()[0];
    assert_eq!(sent["tools"][0]["function"]["name"], "get_weather");
    assert_eq!(sent["tools"][0]["function"]["strict"], true);
    // The client sends the call back with its output, as the AI SDK does.
    let second = json!({"model": "chat", "tools": tools, "input": [
        {"role": "user", "content": [{"type": "input_text", "text": "Weather in Oslo?"}]},
        call,
        {"type": "function_call_output", "call_id": "call_7", "output": "{\"sky\":\"clear\"}"}]});
    let r: Value = responses(&gw, &second).await.json().await.unwrap();
    assert_valid_responses("Response", &r);
    assert_eq!(r["output"][0]["content"][0]["text"], "Sunny in Oslo.");
    let sent = &a.requests()[1]["messages"];
    assert_eq!(sent[1]["tool_calls"][0]["id"], "call_7");
    assert_eq!(sent[1]["tool_calls"][0]["function"]["arguments"], "{\"city\":\"Oslo\"}");
    assert_eq!(sent[2], json!({"role": "tool", "tool_call_id": "call_7", "content": "{\"sky\":\"clear\"}"}));
    // Streamed: one function_call item whose argument deltas add up.
    let mut streamed = first.clone();
    streamed["stream"] = json!(true);
    let events = named_events(responses(&gw, &streamed).await).await;
    for (_, d) in &events {
        assert_valid_responses("ResponseStreamEvent", d);
    }
    let args: String = events
        .iter()
        .filter(|(n, _)| n == "response.function_call_arguments.delta")
        .map(|(_, d)| d["delta"].as_str().unwrap())
        .collect();
    assert_eq!(args, "{\"city\":\"Bergen\"}");
    let added = events.iter().find(|(n, _)| n == "response.output_item.added").unwrap();
    assert_eq!(
        (added.1["item"]["type"].as_str(), added.1["item"]["call_id"].as_str()),
        (Some("function_call"), Some("call_8"))
    );
    let done = &events.last().unwrap().1["response"];
    assert_eq!(done["output"].as_array().unwrap().len(), 1, "no empty message item: {done:#}");
    assert_eq!(done["output"][0]["arguments"], "{\"city\":\"Bergen\"}");
}

#[tokio::test]
async fn text_format_and_a_json_answer() {
    let (a, b) = (FakeUpstream::start().await, FakeUpstream::start().await);
    a.push(Reply::text("{\"city\":\"Oslo\"}"));
    let gw = start(&two_upstreams(&a, &b, "")).await;
    let format = json!({"type": "json_schema", "name": "place", "strict": true,
        "schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": false}});
    let r: Value = responses(&gw, &json!({"model": "chat", "input": "Where?", "text": {"format": format}}))
        .await
        .json()
        .await
        .unwrap();
    assert_valid_responses("Response", &r);
    assert_eq!(r["text"]["format"]["name"], "place");
    let text = r["output"][0]["content"][0]["text"].as_str().unwrap();
    assert_eq!(serde_json::from_str::<Value>(text).unwrap(), json!({"city": "Oslo"}));
    let sent = &a.requests()[0]["response_format"];
    assert_eq!((sent["type"].as_str(), sent["json_schema"]["name"].as_str()), (Some("json_schema"), Some("place")));
}

#[tokio::test]
async fn errors_take_openais_shape() {
    let (a, b) = (FakeUpstream::start().await, FakeUpstream::start().await);
    a.set_default(Reply::error(503, "overloaded", "down"));
    b.set_default(Reply::error(502, "bad_gateway", "down"));
    let gw = start(&two_upstreams(&a, &b, "")).await;
    for (body, param) in [
        (json!({"model": "chat"}), "input"),
        (json!({"model": "chat", "input": "x", "previous_response_id": "resp_123"}), "previous_response_id"),
        (json!({"model": "chat", "input": [{"type": "item_reference", "id": "msg_1"}]}), "input[0]"),
        (json!({"model": "chat", "input": "x", "tools": [{"type": "web_search"}]}), "tools[0].type"),
    ] {
        let resp = responses(&gw, &body).await;
        assert_eq!(resp.status(), 400, "{body}");
        let e: Value = resp.json().await.unwrap();
        assert_valid_responses("ErrorResponse", &e);
        assert_eq!(
            (e["error"]["type"].as_str(), e["error"]["param"].as_str()),
            (Some("invalid_request_error"), Some(param))
        );
        if param == "previous_response_id" {
            // No such stored response (the gateway keeps them; `stored.rs`).
            assert_eq!(e["error"]["code"], "previous_response_not_found");
        }
    }
    for stream in [false, true] {
        let resp = responses(&gw, &json!({"model": "chat", "input": "x", "stream": stream})).await;
        assert_eq!(resp.status(), 503);
        let e: Value = resp.json().await.unwrap();
        assert_valid_responses("ErrorResponse", &e);
        assert_eq!(e["error"]["type"], "all_models_failed");
        let msg = e["error"]["message"].as_str().unwrap();
        assert!(msg.contains("a/m") && msg.contains("b/m"), "{msg}");
    }
    let resp = responses(&gw, &json!({"model": "nope", "input": "x"})).await;
    assert_eq!(resp.status(), 404);
    assert_eq!(resp.json::<Value>().await.unwrap()["error"]["code"], "model_not_found");
}

#[tokio::test]
async fn a_stream_cut_after_its_first_token_ends_with_response_failed() {
    let (a, b) = (FakeUpstream::start().await, FakeUpstream::start().await);
    a.push(Reply::stream(&["Hel", "lo", " world"]).cut_after(2));
    // Without continuation (tests/continuation.rs has it on, the default).
    let gw = start(&two_upstreams(&a, &b, "    continue_streams: false\n")).await;
    let events = named_events(responses(&gw, &json!({"model": "chat", "input": "Hi", "stream": true})).await).await;
    for (_, d) in &events {
        assert_valid_responses("ResponseStreamEvent", d);
    }
    let n = events.len();
    assert_eq!(events[n - 2].0, "error");
    assert!(events[n - 2].1["message"].as_str().unwrap().contains("mid-stream"));
    assert_eq!(events[n - 1].0, "response.failed");
    assert_eq!(events[n - 1].1["response"]["status"], "failed");
    assert_eq!(b.calls(), 0, "no fallback after the first token when continuation is off");
}

#[tokio::test]
async fn a_stream_cut_after_its_first_token_is_continued_by_the_next_model() {
    let (a, b) = (FakeUpstream::start().await, FakeUpstream::start().await);
    a.push(Reply::stream(&["Hel", "lo", " world"]).cut_after(3));
    b.push(Reply::stream(&[" world, continued."]));
    let gw = start(&two_upstreams(&a, &b, "")).await;
    let events = named_events(responses(&gw, &json!({"model": "chat", "input": "Hi", "stream": true})).await).await;
    for (_, d) in &events {
        assert_valid_responses("ResponseStreamEvent", d);
    }
    let text: String = events
        .iter()
        .filter(|(name, _)| name == "response.output_text.delta")
        .filter_map(|(_, d)| d["delta"].as_str())
        .collect();
    assert_eq!(text, "Hello world, continued.");
    assert_eq!(events.last().unwrap().0, "response.completed");
}

#[tokio::test]
async fn a_handoff_reply_is_a_response_and_a_message_too() {
    let dir = std::env::temp_dir().join(format!("spillway-entry-handoff-{}", spillway::handoff::new_id()));
    std::fs::create_dir_all(&dir).unwrap();
    let yaml = format!(
        "state:\n  data_dir: {}\nproviders:\n  down:\n    kind: mock\n    models:\n      - {{ id: m, behavior: {{ error_rate: 1.0, error_status: 503 }} }}\n{FAST_HEALTH}cascades:\n  support:\n    models: [down/m]\n    handoff: true\nhandoff:\n  reply: \"A person will answer.\"\n",
        dir.display()
    );
    let gw = start(&yaml).await;
    let resp = responses(&gw, &json!({"model": "support", "input": "Help"})).await;
    assert!(!header(&resp, "x-spillway-handoff-id").is_empty());
    let r: Value = resp.json().await.unwrap();
    assert_valid_responses("Response", &r);
    assert_eq!(r["output"][0]["content"][0]["text"], "A person will answer.");
    let events =
        named_events(responses(&gw, &json!({"model": "support", "input": "Help", "stream": true})).await).await;
    for (_, d) in &events {
        assert_valid_responses("ResponseStreamEvent", d);
    }
    assert_eq!(events.last().unwrap().1["response"]["output"][0]["content"][0]["text"], "A person will answer.");
    let body = json!({"model": "support", "max_tokens": 10, "stream": true, "messages": [{"role": "user", "content": "Help"}]});
    let events = named_events(post(&gw, "/v1/messages", &body, &[("anthropic-version", "2023-06-01")]).await).await;
    let text: String = events
        .iter()
        .filter(|(n, _)| n == "content_block_delta")
        .map(|(_, d)| d["delta"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(text, "A person will answer.");
    assert_eq!(events.last().unwrap().0, "message_stop");
    drop(gw);
    let _ = std::fs::remove_dir_all(&dir);
}
