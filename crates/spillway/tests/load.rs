//! Load-aware degradation through the gateway (SPEC §9): the admin API's
//! emulated load, profile headers and metrics, `skip_when_lazy`, and
//! streams through a degraded profile.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)] // tests: fail loudly, spawn freely

#[allow(unused)]
mod common;

use common::*;
use futures_util::StreamExt;
use serde_json::{json, Value};
use std::time::Duration;

const PROFILES: &str = "
      profiles:
        - { name: normal, below: 0.75 }
        - { name: tired, below: 0.90, system_prompt: Answer briefly., max_tokens_factor: 0.7 }
        - { name: lazy, system_prompt: One line., max_tokens_factor: 0.3 }
";

/// `local` (emulated load) then `backup`, and `busy` with a measured source.
fn config(local: &FakeUpstream, backup: &FakeUpstream, skip_when_lazy: bool) -> String {
    format!(
        "server:\n  admin_token: t\nproviders:\n{}    default_max_tokens: 1000\n    skip_when_lazy: {skip_when_lazy}\n    load:\n      source: emulated\n{PROFILES}{}  busy:\n    kind: mock\n    models: [{{ id: m }}]\n    load:\n      source: inflight\n      capacity: 4\n      interval: 1h\n{PROFILES}{FAST_HEALTH}cascades:\n  chat:\n    models: [local/model-a, backup/model-b]\n",
        openai_provider("local", local),
        openai_provider("backup", backup),
    )
}

async fn put_load(gw: &TestGateway, provider: &str, body: &str, token: &str) -> reqwest::Response {
    client()
        .put(format!("{}/admin/load/{provider}", gw.url))
        .bearer_auth(token)
        .header("content-type", "application/json")
        .body(body.to_owned())
        .send()
        .await
        .unwrap()
}

async fn admin_get(gw: &TestGateway, path: &str) -> Value {
    let resp = client().get(format!("{}{path}", gw.url)).bearer_auth("t").send().await.unwrap();
    assert_eq!(resp.status(), 200);
    resp.json().await.unwrap()
}

#[tokio::test]
async fn emulated_load_set_through_the_admin_api_drives_profile_header_body_and_metrics() {
    let (local, backup) = (FakeUpstream::start().await, FakeUpstream::start().await);
    let gw = start(&config(&local, &backup, false)).await;

    let resp = gw.post(&chat("chat", false)).await;
    assert_eq!(header(&resp, "x-spillway-load-profile"), "normal", "unknown load: first profile");
    assert!(local.requests()[0].get("max_tokens").is_none(), "normal leaves the body alone");

    let resp = put_load(&gw, "local", r#"{"load": 0.8}"#, "t").await;
    assert_eq!(resp.status(), 200);
    let snap: Value = resp.json().await.unwrap();
    assert_eq!(
        snap,
        json!({"provider": "local", "source": "emulated", "load": 0.8, "profile": "tired", "stale": false})
    );

    let resp = gw.post(&chat("chat", false)).await;
    assert_eq!(header(&resp, "x-spillway-load-profile"), "tired");
    let sent = &local.requests()[1];
    assert_eq!(sent["messages"][0], json!({"role": "system", "content": "Answer briefly."}));
    assert_eq!(sent["max_tokens"], 700, "ceil(0.7 × default_max_tokens)");

    let metrics = gw.get("/metrics").await.text().await.unwrap();
    for line in [
        r#"spillway_load{provider="local"} 0.8"#,
        r#"spillway_load_profile{provider="local",profile="tired"} 1"#,
        r#"spillway_load_profile{provider="local",profile="normal"} 0"#,
        r#"spillway_load_stale{provider="local"} 0"#,
    ] {
        assert!(metrics.contains(line), "{line} missing from:\n{metrics}");
    }
    let state = admin_get(&gw, "/admin/state").await;
    let local_state = state["load"].as_array().unwrap().iter().find(|p| p["provider"] == "local").unwrap();
    assert_eq!(local_state["profile"], "tired");
    let listed = admin_get(&gw, "/admin/load").await;
    assert_eq!(listed["providers"].as_array().unwrap().len(), 2);

    // Hysteresis applies to set loads too: 0.74 is not 0.03 under 0.75.
    put_load(&gw, "local", r#"{"load": 0.74}"#, "t").await;
    let resp = gw.post(&chat("chat", false)).await;
    assert_eq!(header(&resp, "x-spillway-load-profile"), "tired");
    // null: unknown again, back to the first profile.
    let snap: Value = put_load(&gw, "local", r#"{"load": null}"#, "t").await.json().await.unwrap();
    assert_eq!((snap["load"].clone(), snap["profile"].clone()), (Value::Null, json!("normal")));
}

#[tokio::test]
async fn admin_load_errors() {
    let (local, backup) = (FakeUpstream::start().await, FakeUpstream::start().await);
    let gw = start(&config(&local, &backup, false)).await;
    let cases = [
        ("local", r#"{"load": 0.5}"#, "wrong", 401),
        ("nobody", r#"{"load": 0.5}"#, "t", 404),
        ("backup", r#"{"load": 0.5}"#, "t", 404),
        ("local", r#"{"load": 1.5}"#, "t", 400),
        ("local", r#"{"level": 0.5}"#, "t", 400),
        ("local", "not json", "t", 400),
        ("busy", r#"{"load": 0.5}"#, "t", 409),
    ];
    for (provider, body, token, status) in cases {
        let resp = put_load(&gw, provider, body, token).await;
        assert_eq!(resp.status(), status, "{provider} {body}");
        let err: Value = resp.json().await.unwrap();
        assert!(err["error"]["message"].is_string(), "{err}");
    }
}

#[tokio::test]
async fn skip_when_lazy_routes_around_a_lazy_provider_and_only_then() {
    for skip in [true, false] {
        let (local, backup) = (FakeUpstream::start().await, FakeUpstream::start().await);
        let gw = start(&config(&local, &backup, skip)).await;
        put_load(&gw, "local", r#"{"load": 0.8}"#, "t").await;
        let resp = gw.post(&chat("chat", false)).await;
        assert_eq!(header(&resp, "x-spillway-model"), "local/model-a", "tired is never skipped");
        put_load(&gw, "local", r#"{"load": 0.95}"#, "t").await;
        let resp = gw.post(&chat("chat", false)).await;
        if skip {
            assert_eq!(header(&resp, "x-spillway-model"), "backup/model-b");
            assert_eq!(local.calls(), 1, "no call to the lazy provider");
        } else {
            assert_eq!(header(&resp, "x-spillway-model"), "local/model-a");
            assert_eq!(header(&resp, "x-spillway-load-profile"), "lazy");
            assert_eq!(local.requests()[1]["max_tokens"], 300);
        }
    }
}

#[tokio::test]
async fn a_stream_through_a_degraded_profile_is_forwarded_chunk_by_chunk() {
    let (local, backup) = (FakeUpstream::start().await, FakeUpstream::start().await);
    local.push(Reply::stream(&["first ", "second"]).pause_after(1, Duration::from_secs(1)));
    let gw = start(&config(&local, &backup, false)).await;
    put_load(&gw, "local", r#"{"load": 0.97}"#, "t").await;
    let mut body = chat("chat", true);
    body["max_completion_tokens"] = json!(200);
    let resp = gw.post(&body).await;
    assert_eq!(header(&resp, "x-spillway-load-profile"), "lazy");
    let mut stream = resp.bytes_stream();
    let mut seen = String::new();
    while !seen.contains("first ") {
        seen.push_str(&String::from_utf8_lossy(&stream.next().await.unwrap().unwrap()));
    }
    assert_eq!(local.finished(), 0, "chunk 1 waited for the upstream to finish");
    assert!(!seen.contains("second"));
    let mut rest = String::new();
    while let Some(b) = stream.next().await {
        rest.push_str(&String::from_utf8_lossy(&b.unwrap()));
    }
    assert!(rest.contains("second") && rest.contains("[DONE]"));
    let sent = &local.requests()[0];
    assert_eq!(sent["messages"][0]["content"], "One line.");
    assert_eq!(sent["max_completion_tokens"], 60);
    assert_eq!(sent["stream"], true);
}
