//! Virtual keys (`keys:`) through the composition root: who may call, what
//! each may use, its limits and budget, the error shapes and the OpenAI
//! rate-limit headers, reservations settled for whole, streamed and
//! client-cancelled answers, per-user limits, and the Redis backend's
//! exact counts over three instances.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)]

#[path = "../common/mod.rs"]
mod common;
#[path = "../redis_support/mod.rs"]
mod redis_support;

mod admin;
mod bench;
mod limits;
mod shared;

use common::*;
use serde_json::{json, Value};

/// A gateway with a free mock (`free/m`), a slow one (`free/slow`), a paid
/// fake upstream (`paid/m`, usage 5 + 2 tokens at $100,000 per 1M: $0.70 an
/// answer), a paid mock that streams (`free/pricey`) and `keys`.
pub fn yaml(paid: &FakeUpstream, keys: &str, extra: &str) -> String {
    format!(
        "server:\n  api_keys: [plain-key-1]\n{extra}providers:\n{}    models: [{{ id: m, price_per_1m: {{ input: 100000, output: 100000 }} }}]\n  free:\n    kind: mock\n    models:\n      - {{ id: m, price_per_1m: {{ input: 0, output: 0 }}, behavior: {{ reply: \"free answer\" }} }}\n      - {{ id: slow, price_per_1m: {{ input: 0, output: 0 }}, behavior: {{ latency: 400ms, first_token: 400ms, tokens_per_s: 20, reply_tokens: 40 }} }}\n      - {{ id: pricey, price_per_1m: {{ input: 100000, output: 100000 }}, behavior: {{ reply_tokens: 10 }} }}\n{FAST_HEALTH}cascades:\n  chat:\n    models: [free/m]\n  paid:\n    models: [paid/m]\n  slow:\n    models: [free/slow]\n  pricey:\n    models: [free/pricey]\nkeys:\n{keys}",
        openai_provider("paid", paid),
    )
}

/// `POST path` with `key` as Bearer and `headers`.
pub async fn call(
    gw: &TestGateway,
    path: &str,
    key: &str,
    body: &Value,
    headers: &[(&str, &str)],
) -> reqwest::Response {
    let mut r = client().post(format!("{}{path}", gw.url)).bearer_auth(key).json(body);
    for (k, v) in headers {
        r = r.header(*k, *v);
    }
    r.send().await.unwrap()
}

/// A chat completion of `model` with `key`.
pub async fn ask(gw: &TestGateway, key: &str, model: &str, stream: bool) -> reqwest::Response {
    call(gw, "/v1/chat/completions", key, &chat(model, stream), &[]).await
}

/// An Anthropic message with `key` as `x-api-key`.
pub async fn message(gw: &TestGateway, key: &str, model: &str, user: Option<&str>) -> reqwest::Response {
    let mut body = json!({"model": model, "max_tokens": 50, "messages": [{"role": "user", "content": "Hello?"}]});
    if let Some(u) = user {
        body["metadata"] = json!({"user_id": u});
    }
    client()
        .post(format!("{}/v1/messages", gw.url))
        .header("x-api-key", key)
        .header("anthropic-version", "2023-06-01")
        .json(&body)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn unknown_expired_and_plain_keys() {
    let paid = FakeUpstream::start().await;
    let keys =
        "  - { id: team-a, key: sk-team-a-secret }\n  - { id: old, key: sk-old-secret-1, expires_at: 2001-01-01 }\n";
    let gw = start(&yaml(&paid, keys, "")).await;
    assert_eq!(ask(&gw, "sk-team-a-secret", "chat", false).await.status(), 200);
    assert_eq!(ask(&gw, "sk-team-a-secret", "chat", true).await.status(), 200);
    assert_eq!(ask(&gw, "plain-key-1", "chat", false).await.status(), 200, "server.api_keys still work");
    for bad in ["sk-nobody", "sk-old-secret-1"] {
        let resp = ask(&gw, bad, "chat", false).await;
        assert_eq!(resp.status(), 401);
        let body: Value = resp.json().await.unwrap();
        assert_eq!(body["error"]["code"], "invalid_api_key");
        let resp = message(&gw, bad, "chat", None).await;
        assert_eq!(resp.status(), 401);
        let body: Value = resp.json().await.unwrap();
        assert_eq!(body["error"]["type"], "authentication_error");
    }
    assert_eq!(message(&gw, "sk-team-a-secret", "chat", None).await.status(), 200, "x-api-key on /v1/messages");
    let models = client().get(format!("{}/v1/models", gw.url)).bearer_auth("sk-team-a-secret").send().await.unwrap();
    assert_eq!(models.status(), 200);
}

#[tokio::test]
async fn a_key_uses_only_its_cascades() {
    let paid = FakeUpstream::start().await;
    let gw = start(&yaml(&paid, "  - { id: a, key: sk-a-secret-1, cascades: [chat] }\n", "")).await;
    assert_eq!(ask(&gw, "sk-a-secret-1", "chat", false).await.status(), 200);
    let resp = ask(&gw, "sk-a-secret-1", "paid", false).await;
    assert_eq!(resp.status(), 403);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["type"], "permission_error");
    let resp = message(&gw, "sk-a-secret-1", "paid", None).await;
    assert_eq!(resp.status(), 403);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["type"], "permission_error");
    assert_eq!(paid.calls(), 0);
}

#[tokio::test]
async fn stored_responses_belong_to_the_key() {
    let paid = FakeUpstream::start().await;
    let keys = "  - { id: a, key: sk-a-secret-1 }\n  - { id: b, key: sk-b-secret-1 }\n";
    let dir = std::env::temp_dir().join(format!("spillway-keys-stored-{}", fastrand::u64(..)));
    let gw = start(&yaml(&paid, keys, &format!("state: {{ data_dir: '{}' }}\n", dir.display()))).await;
    let body = json!({"model": "chat", "input": "Hello?"});
    let resp = call(&gw, "/v1/responses", "sk-a-secret-1", &body, &[]).await;
    assert_eq!(resp.status(), 200);
    let id = resp.json::<Value>().await.unwrap()["id"].as_str().unwrap().to_string();
    let get = |key: &'static str| {
        let url = format!("{}/v1/responses/{id}", gw.url);
        async move { client().get(url).bearer_auth(key).send().await.unwrap().status() }
    };
    assert_eq!(get("sk-a-secret-1").await, 200);
    assert_eq!(get("sk-b-secret-1").await, 404, "another key finds nothing");
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn the_key_and_the_user_are_on_the_request_log_lines() {
    let logs = Logs::capture("info");
    let paid = FakeUpstream::start().await;
    let gw = start(&yaml(&paid, "  - { id: team-log, key: sk-team-log-1, per_user: { rpm: 1 } }\n", "")).await;
    let headers = [("x-spillway-user", "ann-log")];
    assert_eq!(call(&gw, "/v1/chat/completions", "sk-team-log-1", &chat("chat", false), &headers).await.status(), 200);
    assert_eq!(call(&gw, "/v1/chat/completions", "sk-team-log-1", &chat("chat", false), &headers).await.status(), 429);
    let text = logs.text();
    // Other tests of this binary log through the same subscriber: this key's line.
    let line = text
        .lines()
        .find(|l| l.contains("refused by its limits") && l.contains("team-log"))
        .unwrap_or_else(|| panic!("{text}"));
    let span = line.split("}:").next().unwrap();
    assert!(span.contains("key=team-log") && span.contains("user=ann-log"), "{line}");
    assert!(!text.contains("sk-team-log-1"), "the secret is never logged");
}
