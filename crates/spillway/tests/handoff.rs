//! The handoff queue end to end through the HTTP API: a cascade where
//! everything fails queues the request, the client gets `handoff.reply`
//! and an id, an operator answers, the client reads the answer — with the
//! same client key only — and the queue survives a restart.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)]

mod common;

use common::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

const REPLY: &str = "A person will answer shortly.";

pub fn temp_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("spillway-handoff-test-{}", spillway::handoff::new_id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn yaml(dir: &Path) -> String {
    format!(
        "server:\n  api_keys: [key-a, key-b]\n  admin_token: adm\nstate:\n  data_dir: {}\nproviders:\n  down:\n    kind: mock\n    models:\n      - {{ id: m, behavior: {{ error_rate: 1.0, error_status: 503 }} }}\n{FAST_HEALTH}cascades:\n  support:\n    models: [down/m]\n    handoff: true\n  plain:\n    models: [down/m]\nhandoff:\n  reply: \"{REPLY}\"\n",
        dir.display()
    )
}

async fn ask(gw: &TestGateway, key: &str, body: &Value) -> reqwest::Response {
    client().post(format!("{}/v1/chat/completions", gw.url)).bearer_auth(key).json(body).send().await.unwrap()
}

async fn fetch(gw: &TestGateway, key: Option<&str>, id: &str) -> reqwest::Response {
    let mut req = client().get(format!("{}/v1/handoff/{id}", gw.url));
    if let Some(k) = key {
        req = req.bearer_auth(k);
    }
    req.send().await.unwrap()
}

async fn admin_list(gw: &TestGateway, status: &str) -> Value {
    gw.admin_get(&format!("/admin/handoff?status={status}"), "adm").await
}

async fn admin_answer(gw: &TestGateway, id: &str, text: &str) -> reqwest::Response {
    client()
        .post(format!("{}/admin/handoff/{id}/answer", gw.url))
        .bearer_auth("adm")
        .json(&json!({"text": text}))
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn handoff_end_to_end() {
    let dir = temp_dir();
    let gw = start(&yaml(&dir)).await;
    let body = json!({"model": "support", "messages": [{"role": "user", "content": "My order never came"}]});
    let resp = ask(&gw, "key-a", &body).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(header(&resp, "x-spillway-tier"), "handoff");
    assert_eq!(header(&resp, "x-spillway-cascade"), "support");
    let id = header(&resp, "x-spillway-handoff-id").to_string();
    assert!(id.starts_with("ho_"), "{id}");
    let completion: Value = resp.json().await.unwrap();
    assert_valid("CreateChatCompletionResponse", &completion);
    assert_eq!(completion["choices"][0]["message"]["content"], REPLY);
    // Served by the handoff tier, which belongs to the cascade, not to a model.
    let metrics = gw.get("/metrics").await.text().await.unwrap();
    let served = r#"spillway_served_total{cascade="support",tier="handoff",provider="spillway",model="handoff",rank="handoff"} 1"#;
    assert!(metrics.contains(served), "{metrics}");
    assert!(!metrics.contains(r#"tier="handoff",provider="down""#), "{metrics}");

    // The client sees it open; another key and no key do not see it at all.
    let open: Value = fetch(&gw, Some("key-a"), &id).await.json().await.unwrap();
    assert_eq!((open["status"].as_str(), &open["answer"]), (Some("open"), &Value::Null));
    assert_eq!(fetch(&gw, Some("key-b"), &id).await.status(), 404);
    assert_eq!(fetch(&gw, None, &id).await.status(), 401);
    assert_eq!(fetch(&gw, Some("key-a"), "ho_unknown").await.status(), 404);

    // The operator sees the messages and every attempt with its reason.
    let list = admin_list(&gw, "open").await;
    let items = list["data"].as_array().unwrap();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["id"], id.as_str());
    assert_eq!(items[0]["cascade"], "support");
    assert_eq!(items[0]["messages"][0]["content"], "My order never came");
    assert_eq!(items[0]["attempts"][0]["model"], "down/m");
    assert!(items[0]["attempts"][0]["reason"].as_str().is_some_and(|r| !r.is_empty()));
    assert!(gw.get("/metrics").await.text().await.unwrap().contains("spillway_handoff_queue_depth 1"));

    assert_eq!(admin_answer(&gw, &id, "It ships today.").await.status(), 200);
    assert_eq!(admin_answer(&gw, &id, "Twice?").await.status(), 409);
    assert_eq!(admin_answer(&gw, "ho_unknown", "x").await.status(), 404);
    let answered: Value = fetch(&gw, Some("key-a"), &id).await.json().await.unwrap();
    assert_eq!((answered["status"].as_str(), answered["answer"].as_str()), (Some("answered"), Some("It ships today.")));
    assert!(admin_list(&gw, "open").await["data"].as_array().unwrap().is_empty());
    assert_eq!(admin_list(&gw, "answered").await["data"].as_array().unwrap().len(), 1);
    assert!(gw.get("/metrics").await.text().await.unwrap().contains("spillway_handoff_queue_depth 0"));

    // A cascade without handoff still answers 503.
    let resp = ask(&gw, "key-a", &json!({"model": "plain", "messages": [{"role": "user", "content": "hi"}]})).await;
    assert_eq!(resp.status(), 503);
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn a_streaming_client_gets_a_short_stream() {
    let dir = temp_dir();
    let gw = start(&yaml(&dir)).await;
    let mut body = chat("support", true);
    body["stream_options"] = json!({"include_usage": true});
    let resp = ask(&gw, "key-b", &body).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(header(&resp, "x-spillway-tier"), "handoff");
    assert!(header(&resp, "content-type").starts_with("text/event-stream"));
    let id = header(&resp, "x-spillway-handoff-id").to_string();
    let events = sse_events(resp).await;
    assert_eq!(events.last().map(String::as_str), Some("[DONE]"));
    for e in &events[..events.len() - 1] {
        assert_valid("CreateChatCompletionStreamResponse", &serde_json::from_str(e).unwrap());
    }
    assert_eq!(streamed_text(&events), REPLY);
    assert_eq!(fetch(&gw, Some("key-b"), &id).await.status(), 200);
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn the_queue_survives_a_restart_with_the_same_data_dir() {
    let dir = temp_dir();
    let mut first = start(&yaml(&dir)).await;
    let resp = ask(&first, "key-a", &chat("support", false)).await;
    let id = header(&resp, "x-spillway-handoff-id").to_string();
    first.shutdown.cancel();
    first.stopped(std::time::Duration::from_secs(10)).await.unwrap();
    drop(first);

    let second = start(&yaml(&dir)).await;
    // Before anything is queued or answered here, the depth is the store's.
    let metrics = second.get("/metrics").await.text().await.unwrap();
    assert!(metrics.contains("spillway_handoff_queue_depth 1\n"), "{metrics}");
    let state = second.admin_get("/admin/state", "adm").await;
    assert_eq!(state["handoff_queue_depth"], 1, "`spillway status` shows it");
    let item: Value = fetch(&second, Some("key-a"), &id).await.json().await.unwrap();
    assert_eq!(item["status"], "open");
    assert_eq!(admin_answer(&second, &id, "Done.").await.status(), 200);
    let metrics = second.get("/metrics").await.text().await.unwrap();
    assert!(metrics.contains("spillway_handoff_queue_depth 0\n"), "{metrics}");
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn the_handoff_webhook_hears_of_each_new_item() {
    let dir = temp_dir();
    let hook = FakeUpstream::start_at("/hook").await;
    let yaml = yaml(&dir).replace("handoff:\n", &format!("handoff:\n  webhook: {}/hook\n", hook.origin()));
    let gw = start(&yaml).await;
    let resp = ask(&gw, "key-a", &chat("support", false)).await;
    let id = header(&resp, "x-spillway-handoff-id").to_string();
    assert!(hook.wait_for(std::time::Duration::from_secs(5), |h| h.calls() == 1).await);
    let body = &hook.requests()[0];
    assert_eq!((body["id"].as_str(), body["cascade"].as_str()), (Some(id.as_str()), Some("support")));
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn owners_are_keyed_ids_and_items_under_the_old_id_stay_readable() {
    use spillway::handoff::{key_id, sqlite::SqliteQueue, Item, Queue, Status};
    let dir = temp_dir();
    // An item written by an older Spillway, owned by `key-a` under the old id.
    let old = Item {
        id: spillway::handoff::new_id(),
        status: Status::Open,
        cascade: "support".into(),
        client_key_id: Some(key_id::legacy_id("key-a")),
        request_id: None,
        user: None,
        messages: json!([{"role": "user", "content": "hi"}]),
        attempts: Vec::new(),
        created_ms: 1,
        answer: None,
        closed: false,
        answered_ms: None,
    };
    SqliteQueue::open(dir.clone()).await.unwrap().push(old.clone()).await.unwrap();
    let gw = start(&yaml(&dir)).await;
    assert_eq!(fetch(&gw, Some("key-a"), &old.id).await.status(), 200, "its client still reads it");
    assert_eq!(fetch(&gw, Some("key-b"), &old.id).await.status(), 404);
    // New items carry the keyed id, derived with the key kept in data_dir.
    let resp = ask(&gw, "key-a", &chat("support", false)).await;
    let id = header(&resp, "x-spillway-handoff-id").to_string();
    let list = admin_list(&gw, "open").await;
    let owner = list["data"].as_array().unwrap().iter().find(|i| i["id"] == id.as_str()).unwrap()["client_key_id"]
        .as_str()
        .unwrap()
        .to_string();
    let secret = std::fs::read_to_string(dir.join(key_id::KEY_FILE)).unwrap();
    assert_eq!(owner, key_id::KeyIds::from_hex(secret.trim()).unwrap().id("key-a"));
    assert!(owner.starts_with("k2_"), "{owner}");
    assert_eq!(fetch(&gw, Some("key-a"), &id).await.status(), 200);
    assert_eq!(fetch(&gw, Some("key-b"), &id).await.status(), 404);
    let _ = std::fs::remove_dir_all(dir);
}
