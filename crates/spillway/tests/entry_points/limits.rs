//! Requests that can never succeed are the client's error, not an outage:
//! a prompt longer than every model's context is a 400
//! `context_length_exceeded` (Anthropic's `invalid_request_error` on
//! `/v1/messages`), never a 503 with `Retry-After` that SDKs retry forever.

use super::common::*;
use super::support::*;
use serde_json::{json, Value};

/// About 600 KB of prompt: ~150,000 tokens by the gateway's estimate.
fn long_prompt() -> String {
    "All work and no play makes Jack a dull boy. ".repeat(14_000)
}

fn yaml(a: &FakeUpstream, b: &FakeUpstream) -> String {
    format!(
        "providers:\n{}    models: [{{ id: m, context: 128000 }}]\n{}    models: [{{ id: m, context: 131072 }}]\n{FAST_HEALTH}cascades:\n  chat:\n    models: [a/m, b/m]\n",
        openai_provider("a", a),
        openai_provider("b", b),
    )
}

#[tokio::test]
async fn a_prompt_beyond_every_context_is_a_400_naming_the_largest_on_every_entry_point() {
    let (a, b) = (FakeUpstream::start().await, FakeUpstream::start().await);
    let gw = start(&yaml(&a, &b)).await;
    let prompt = long_prompt();
    for stream in [false, true] {
        let body = json!({"model": "chat", "stream": stream, "messages": [{"role": "user", "content": prompt}]});
        let resp = gw.post(&body).await;
        assert_eq!(resp.status(), 400, "stream: {stream}");
        assert!(resp.headers().get("retry-after").is_none());
        assert_eq!(header(&resp, "x-spillway-attempts"), "0");
        let e: Value = resp.json().await.unwrap();
        assert_valid("ErrorResponse", &e);
        assert_eq!(e["error"]["code"], "context_length_exceeded");
        assert_eq!(e["error"]["type"], "invalid_request_error");
        let msg = e["error"]["message"].as_str().unwrap();
        assert!(msg.contains("131072") && msg.contains("`chat`"), "{msg}");
    }
    let body = json!({"model": "chat", "input": prompt});
    let resp = post(&gw, "/v1/responses", &body, &[]).await;
    assert_eq!(resp.status(), 400);
    assert_eq!(resp.json::<Value>().await.unwrap()["error"]["code"], "context_length_exceeded");
    for stream in [false, true] {
        let body = json!({"model": "chat", "max_tokens": 100, "stream": stream,
            "messages": [{"role": "user", "content": prompt}]});
        let resp = post(&gw, "/v1/messages", &body, &[("anthropic-version", "2023-06-01")]).await;
        assert_eq!(resp.status(), 400);
        let e: Value = resp.json().await.unwrap();
        assert_eq!(e["error"]["type"], "invalid_request_error", "not overloaded_error: {e}");
    }
    assert_eq!((a.calls(), b.calls()), (0, 0));
}

/// A model of unknown context that refuses the prompt as too long counts as
/// too small; a model that is only dead for now might take it later, so
/// that walk stays a 503.
#[tokio::test]
async fn a_refusal_by_a_model_of_unknown_context_completes_the_proof_a_dead_one_does_not() {
    let (a, b) = (FakeUpstream::start().await, FakeUpstream::start().await);
    let yaml = format!(
        "providers:\n{}    models: [{{ id: m }}]\n{}    models: [{{ id: m, context: 8000 }}]\n{FAST_HEALTH}cascades:\n  chat:\n    models: [a/m, b/m]\n",
        openai_provider("a", &a),
        openai_provider("b", &b),
    );
    let gw = start(&yaml).await;
    let too_long = Reply::error(400, "context_length_exceeded", "This model's maximum context length is 32768 tokens.");
    a.push(too_long);
    let body = json!({"model": "chat", "messages": [{"role": "user", "content": "word ".repeat(40_000)}]});
    let resp = gw.post(&body).await;
    assert_eq!(resp.status(), 400);
    assert_eq!(header(&resp, "x-spillway-attempts"), "1");
    let e: Value = resp.json().await.unwrap();
    assert_eq!(e["error"]["code"], "context_length_exceeded");
    assert!(e["error"]["message"].as_str().unwrap().contains("8000"), "{e}");
    // A 429 from `a` marks it dead: it may take the prompt when it is
    // back, so neither that walk nor the next (a skipped) is a 400.
    a.push(Reply::error(429, "rate_limit_exceeded", "slow down"));
    for calls in [1, 0] {
        let resp = gw.post(&body).await;
        assert_eq!(resp.status(), 503, "a is dead for now, not too small");
        assert_eq!(header(&resp, "x-spillway-attempts"), calls.to_string());
        assert!(resp.headers().get("retry-after").is_some());
    }
}
