//! Escalation wiring: a frustrated user (the built-in detector) or
//! `x-spillway-escalate: true` moves the request to the rule's target
//! cascade; the answer says so in `x-spillway-escalated: true` and in
//! `spillway_escalations_total`. (The detector's own table is in
//! `src/escalation/frustration.rs`.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)]

mod common;

use common::*;
use serde_json::json;

const YAML: &str = "providers:\n  p:\n    kind: mock\n    models: [{ id: basic }, { id: strong }]\ncascades:\n  chat:\n    models: [p/basic]\n  chat_escalated:\n    models: [p/strong]\nescalation:\n  - { from: chat, to: chat_escalated, when: frustrated }\n";

#[tokio::test]
async fn a_frustrated_user_is_escalated() {
    let gw = start(YAML).await;
    let calm = gw.post(&chat("chat", false)).await;
    assert_eq!(header(&calm, "x-spillway-model"), "p/basic");
    assert_eq!(header(&calm, "x-spillway-escalated"), "");

    let angry = json!({"model": "chat", "messages": [
        {"role": "user", "content": "How do I reset my password?"},
        {"role": "assistant", "content": "Click 'Forgot password'."},
        {"role": "user", "content": "That doesn't work!!! This is useless"},
    ]});
    let resp = gw.post(&angry).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(header(&resp, "x-spillway-cascade"), "chat_escalated");
    assert_eq!(header(&resp, "x-spillway-model"), "p/strong");
    assert_eq!(header(&resp, "x-spillway-escalated"), "true");
    let metrics = gw.get("/metrics").await.text().await.unwrap();
    assert!(
        metrics.contains("spillway_escalations_total{from=\"chat\",to=\"chat_escalated\",reason=\"frustrated\"} 1"),
        "{metrics}"
    );
}

#[tokio::test]
async fn the_header_forces_escalation() {
    let gw = start(YAML).await;
    let resp = client()
        .post(format!("{}/v1/chat/completions", gw.url))
        .header("x-spillway-escalate", "true")
        .json(&chat("chat", false))
        .send()
        .await
        .unwrap();
    assert_eq!(header(&resp, "x-spillway-model"), "p/strong");
    assert_eq!(header(&resp, "x-spillway-escalated"), "true");
    // No rule from chat_escalated: the header changes nothing there.
    let resp = client()
        .post(format!("{}/v1/chat/completions", gw.url))
        .header("x-spillway-escalate", "true")
        .json(&chat("chat_escalated", false))
        .send()
        .await
        .unwrap();
    assert_eq!(header(&resp, "x-spillway-escalated"), "");
}
