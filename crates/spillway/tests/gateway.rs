//! End-to-end: requests through the real HTTP server to fake upstreams.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)] // tests: fail loudly, spawn freely

mod common;

use common::*;
use serde_json::{json, Value};

async fn two_upstreams() -> (FakeUpstream, FakeUpstream) {
    (FakeUpstream::start().await, FakeUpstream::start().await)
}

fn config(a: &FakeUpstream, b: &FakeUpstream) -> String {
    format!(
        "providers:\n{}{}{FAST_HEALTH}cascades:\n  chat:\n    models: [a/model-a, b/model-b]\n",
        openai_provider("a", a),
        openai_provider("b", b)
    )
}

#[tokio::test]
async fn non_stream_round_trip_is_openai_conformant() {
    let (a, b) = two_upstreams().await;
    a.push(Reply::text("Hi there"));
    let gw = start(&config(&a, &b)).await;
    let resp = gw.post(&chat("chat", false)).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(header(&resp, "x-spillway-cascade"), "chat");
    assert_eq!(header(&resp, "x-spillway-model"), "a/model-a");
    assert_eq!(header(&resp, "x-spillway-tier"), "preferred");
    assert_eq!(header(&resp, "x-spillway-attempts"), "1");
    let body: Value = resp.json().await.unwrap();
    assert_valid("CreateChatCompletionResponse", &body);
    assert_eq!(body["model"], "a/model-a");
    assert_eq!(body["choices"][0]["message"]["content"], "Hi there");
    // The upstream got the model id, the client's messages and our key.
    let sent = &a.requests()[0];
    assert_eq!(sent["model"], "model-a");
    assert_eq!(sent["messages"][0]["content"], "Hello?");
    assert_eq!(a.request_headers()[0]["authorization"], "Bearer test-key-a");
    assert_eq!(b.calls(), 0);
}

#[tokio::test]
async fn a_complete_answer_passes_through_with_our_stamp_and_its_extras() {
    let (a, b) = two_upstreams().await;
    // What OpenAI sends, with a vendor's extra fields and escaped text.
    a.push(Reply::json(json!({
        "id": "up-1", "object": "chat.completion", "created": 1, "model": "model-a-2025", "service_tier": "default",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "say \"hi\"\n\u{e9}", "refusal": null,
                     "annotations": []}, "logprobs": null, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14,
                  "prompt_tokens_details": {"cached_tokens": 0}},
        "system_fingerprint": "fp_1", "x_vendor": {"region": "eu"},
    })));
    let gw = start(&config(&a, &b)).await;
    let resp = gw.post(&chat("chat", false)).await;
    assert_eq!(header(&resp, "content-type"), "application/json");
    let body: Value = resp.json().await.unwrap();
    assert_valid("CreateChatCompletionResponse", &body);
    assert!(body["id"].as_str().unwrap().starts_with("chatcmpl-") && body["id"] != "up-1");
    assert_eq!(body["model"], "a/model-a");
    assert!(body["created"].as_u64().unwrap() > 1);
    assert_eq!(body["choices"][0]["message"]["content"], "say \"hi\"\n\u{e9}");
    assert_eq!(body["x_vendor"]["region"], "eu");
    assert_eq!(body["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
    let metrics = gw.get("/metrics").await.text().await.unwrap();
    assert!(metrics.contains("spillway_tokens_total{provider=\"a\",model=\"model-a\",kind=\"input\"} 11"), "{metrics}");
}

#[tokio::test]
async fn fills_fields_an_upstream_omits() {
    let (a, b) = two_upstreams().await;
    // A bare-bones server: no id, no refusal, no logprobs, no finish_reason.
    a.push(Reply::json(json!({"choices": [{"message": {"content": "x"}}]})));
    let gw = start(&config(&a, &b)).await;
    let body: Value = gw.post(&chat("chat", false)).await.json().await.unwrap();
    assert_valid("CreateChatCompletionResponse", &body);
}

#[tokio::test]
async fn falls_through_on_upstream_failures_and_lists_every_attempt() {
    let (a, b) = two_upstreams().await;
    a.push(Reply::error(500, "server_error", "boom"));
    b.push(Reply::text("from b"));
    let gw = start(&config(&a, &b)).await;
    let resp = gw.post(&chat("chat", false)).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(header(&resp, "x-spillway-model"), "b/model-b");
    assert_eq!(header(&resp, "x-spillway-attempts"), "2");

    a.push(Reply::garbage());
    b.push(Reply::error(503, "overloaded", "busy"));
    let resp = gw.post(&chat("chat", false)).await;
    assert_eq!(resp.status(), 503);
    let body: Value = resp.json().await.unwrap();
    assert_valid("ErrorResponse", &body);
    assert_eq!(body["error"]["type"], "all_models_failed");
    let msg = body["error"]["message"].as_str().unwrap();
    assert!(msg.contains("a/model-a: broken_body"), "{msg}");
    assert!(msg.contains("b/model-b: upstream_error"), "{msg}");
    // The metric's `result` is SPEC §10's set (a broken body is an
    // upstream_error); the finer reason has its own counter.
    let metrics = gw.get("/metrics").await.text().await.unwrap();
    let a = r#"{cascade="chat",provider="a",model="model-a""#;
    assert!(metrics.contains(&format!(r#"spillway_attempts_total{a},result="upstream_error"}} 2"#)), "{metrics}");
    assert!(metrics.contains(&format!(r#"spillway_attempt_failures_total{a},reason="broken_body"}} 1"#)), "{metrics}");
    assert!(
        metrics.contains(&format!(r#"spillway_attempt_failures_total{a},reason="upstream_error"}} 1"#)),
        "{metrics}"
    );
    let results: std::collections::BTreeSet<&str> = metrics
        .lines()
        .filter(|l| l.starts_with("spillway_attempts_total{"))
        .filter_map(|l| l.split("result=\"").nth(1)?.split('"').next())
        .collect();
    // Written out from SPEC §10, not taken from `RESULT_LABELS`: a change
    // there must fail here.
    let spec = [
        "ok",
        "rate_limited",
        "forbidden",
        "not_found",
        "empty",
        "invalid_output",
        "timeout",
        "upstream_error",
        "connect_error",
        "skipped_dead",
        "skipped_open",
        "saturated",
    ];
    assert_eq!(results, spec.into_iter().collect(), "exactly SPEC §10's result values");
}

#[tokio::test]
async fn garbage_truncated_and_wrong_content_type_bodies_are_classified_failures() {
    let (a, b) = two_upstreams().await;
    b.set_default(Reply::text("fine"));
    // A connection cut before the response is a reset and is retried once:
    // let the retry fail too.
    a.set_default(Reply::garbage());
    let gw = start(&config(&a, &b)).await;
    for bad in [
        Reply::garbage(),
        Reply::raw(200, "application/json", "{\"choices\": [{\"mess"),
        Reply::raw(200, "application/json", "[1,2,3]"),
        Reply::json(json!({"choices": "nope"})),
        Reply::text("ok").cut_after(0),
    ]
    .into_iter()
    .enumerate()
    {
        a.push(bad.1);
        let resp = gw.post(&chat("chat", false)).await;
        assert_eq!(resp.status(), 200);
        assert_eq!(header(&resp, "x-spillway-model"), "b/model-b", "case {}", bad.0);
    }
    // A stream answered with JSON instead of SSE.
    a.push(Reply::text("not a stream"));
    b.push(Reply::stream(&["fine"]));
    let resp = gw.post(&chat("chat", true)).await;
    assert_eq!(header(&resp, "x-spillway-model"), "b/model-b");
}

#[tokio::test]
async fn empty_answer_moves_on() {
    let (a, b) = two_upstreams().await;
    a.push(Reply::empty());
    b.push(Reply::text("from b"));
    let gw = start(&config(&a, &b)).await;
    let resp = gw.post(&chat("chat", false)).await;
    assert_eq!(header(&resp, "x-spillway-model"), "b/model-b");
}

#[tokio::test]
async fn client_error_from_upstream_is_returned_as_is_and_not_retried() {
    let (a, b) = two_upstreams().await;
    a.push(Reply::error(400, "invalid_value", "temperature is weird"));
    let gw = start(&config(&a, &b)).await;
    let resp = gw.post(&chat("chat", false)).await;
    assert_eq!(resp.status(), 400);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["code"], "invalid_value");
    assert_eq!(body["error"]["message"], "temperature is weird");
    assert_eq!(b.calls(), 0);
}

#[tokio::test]
async fn model_auto_and_direct_refs() {
    let (a, b) = two_upstreams().await;
    let gw = start(&config(&a, &b)).await;
    let resp = gw.post(&chat("auto", false)).await;
    assert_eq!(header(&resp, "x-spillway-cascade"), "chat");
    // A model the config names is reachable directly.
    let resp = gw.post(&chat("b/model-b", false)).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(header(&resp, "x-spillway-model"), "b/model-b");
    // One it does not name is not, unless the provider allows any model.
    let calls = b.calls();
    let resp = gw.post(&chat("b/some-other-model", false)).await;
    assert_eq!(resp.status(), 404);
    let err: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(err["error"]["code"], "model_not_found");
    assert_eq!(b.calls(), calls, "nothing was called");
    let open = config(&a, &b).replace("test-key-b\n", "test-key-b\n    allow_any_model: true\n");
    let gw = start(&open).await;
    let resp = gw.post(&chat("b/some-other-model", false)).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(header(&resp, "x-spillway-model"), "b/some-other-model");
    assert_eq!(b.requests().last().unwrap()["model"], "some-other-model");
}

#[tokio::test]
async fn invented_model_refs_cannot_grow_state_without_bound() {
    let (a, b) = two_upstreams().await;
    b.set_default(Reply::text("any"));
    let open = config(&a, &b).replace("test-key-b\n", "test-key-b\n    allow_any_model: true\n");
    let gw = start(&open).await;
    for i in 0..100 {
        let resp = gw.post(&chat(&format!("b/invented-{i}"), false)).await;
        assert_eq!(resp.status(), 200);
        assert_eq!(header(&resp, "x-spillway-model"), format!("b/invented-{i}"), "the answer names the ref asked for");
    }
    let metrics = gw.get("/metrics").await.text().await.unwrap();
    let ids: std::collections::HashSet<&str> = metrics
        .lines()
        .filter(|l| l.starts_with("spillway_attempts_total{") && l.contains(r#"provider="b""#))
        .filter_map(|l| l.split(r#"model=""#).nth(1)?.split('"').next())
        .collect();
    // The 64 first invented ids, the configured model-b, and `other`.
    assert_eq!(ids.len(), spillway::gateway::build::UNLISTED_PER_PROVIDER + 2, "{ids:?}");
    assert!(ids.contains("other"));
    let other = r#"spillway_attempts_total{cascade="direct",provider="b",model="other",result="ok"}"#;
    assert_eq!(gw.metric(other).await, (100 - spillway::gateway::build::UNLISTED_PER_PROVIDER) as f64);
    let known = gw.state.gateway.load().health.models().len();
    assert!(known <= spillway::gateway::build::UNLISTED_PER_PROVIDER + 2, "{known} health entries");
}

#[tokio::test]
async fn models_listing_is_conformant() {
    let (a, b) = two_upstreams().await;
    let gw = start(&config(&a, &b)).await;
    let body: Value = gw.get("/v1/models").await.json().await.unwrap();
    assert_valid("ListModelsResponse", &body);
    let ids: Vec<&str> = body["data"].as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["chat", "a/model-a", "b/model-b"]);
}

#[tokio::test]
async fn health_ready_and_metrics() {
    let (a, b) = two_upstreams().await;
    let gw = start(&config(&a, &b)).await;
    gw.post(&chat("chat", false)).await;
    assert_eq!(gw.get("/healthz").await.status(), 200);
    assert_eq!(gw.get("/readyz").await.status(), 200);
    let text = gw.get("/metrics").await.text().await.unwrap();
    for needle in [
        "spillway_requests_total{cascade=\"chat\",outcome=\"ok\"} 1",
        "spillway_attempts_total{cascade=\"chat\",provider=\"a\",model=\"model-a\",result=\"ok\"} 1",
        "spillway_request_duration_seconds_count{cascade=\"chat\"} 1",
        "spillway_ttft_seconds_count{provider=\"a\",model=\"model-a\"} 1",
    ] {
        assert!(text.contains(needle), "missing {needle} in\n{text}");
    }
}

#[tokio::test]
async fn demo_config_compiles_and_fails_over() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/demo.yaml")).unwrap();
    let gw = start(&text).await;
    // fast-free allows 3 requests a minute; the 4th spills over.
    let mut models = Vec::new();
    for _ in 0..4 {
        let resp = gw.post(&chat("chat", false)).await;
        assert_eq!(resp.status(), 200);
        models.push(header(&resp, "x-spillway-model").to_string());
    }
    assert_eq!(&models[..3], ["free/fast-free"; 3]);
    assert_ne!(models[3], "free/fast-free");
}

/// A mock model calls an offered tool (SPEC §5: tools work for every
/// provider kind), whole and streamed, in OpenAI's shape.
#[tokio::test]
async fn mock_models_call_offered_tools() {
    let gw = start(
        "providers:\n  m:\n    kind: mock\n    models: [ { id: tools } ]\ncascades:\n  agent:\n    models: [m/tools]\n",
    )
    .await;
    let mut body = chat("agent", false);
    body["tools"] = json!([{"type": "function", "function": {"name": "lookup_order", "parameters": {
        "type": "object", "required": ["order_id"], "properties": {"order_id": {"type": "string"}}}}}]);
    let resp = gw.post(&body).await;
    assert_eq!(resp.status(), 200);
    let v: Value = resp.json().await.unwrap();
    assert_valid("CreateChatCompletionResponse", &v);
    assert_eq!(v["choices"][0]["finish_reason"], "tool_calls");
    let call = &v["choices"][0]["message"]["tool_calls"][0];
    assert_eq!(call["function"]["name"], "lookup_order");
    assert_eq!(call["function"]["arguments"], r#"{"order_id":"mock"}"#);

    body["stream"] = json!(true);
    let events = sse_events(gw.post(&body).await).await;
    let mut arguments = String::new();
    for e in events.iter().filter(|e| *e != "[DONE]") {
        let chunk: Value = serde_json::from_str(e).unwrap();
        assert_valid("CreateChatCompletionStreamResponse", &chunk);
        if let Some(a) = chunk["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"].as_str() {
            arguments.push_str(a);
        }
    }
    assert_eq!(arguments, r#"{"order_id":"mock"}"#);
}
