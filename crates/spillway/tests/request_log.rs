//! The request log (`telemetry.request_log`): one JSON line per request,
//! written off the request's path, read back and checked per outcome —
//! answered, failed over, continued, handed off, rejected — streamed and
//! whole, through the real composition root.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)] // tests: fail loudly

mod common;

use common::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;

const REPLY: &str = "The quick brown fox jumps over the lazy dog and keeps running far into the evening.";

fn temp_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("spillway-reqlog-test-{}", fastrand::u64(..)));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A gateway whose request log goes to `dir/requests.jsonl`: `ok/a`
/// answers, `ok/down` always fails with a 503, `ok/cut` breaks every
/// stream mid-answer; cascades `fine` (a), `failover` (down, a),
/// `continued` (cut, a), `person` (down, then the handoff).
fn config(dir: &Path, extra: &str) -> String {
    format!(
        "server:\n  api_keys: [key-a]\nstate:\n  data_dir: {dir}\ntelemetry:\n  request_log:\n    path: {dir}/requests.jsonl\n{extra}providers:\n  ok:\n    kind: mock\n    models:\n      - {{ id: a, price_per_1m: {{ input: 1, output: 2 }}, behavior: {{ reply: \"{REPLY}\" }} }}\n      - {{ id: down, behavior: {{ error_rate: 1.0, error_status: 503 }} }}\n      - {{ id: cut, behavior: {{ reply: \"{REPLY}\", cut_rate: 1.0 }} }}\n      - {{ id: vec, dimensions: 8 }}\n{FAST_HEALTH}cascades:\n  vectors:\n    kind: embedding\n    models: [ok/vec]\n  fine:\n    models: [ok/a]\n  failover:\n    models: [ok/down, ok/a]\n  continued:\n    models: [ok/cut, ok/a]\n  person:\n    models: [ok/down]\n    handoff: true\n",
        dir = dir.display()
    )
}

async fn ask(gw: &TestGateway, key: Option<&str>, body: &Value) -> reqwest::Response {
    let mut req = client().post(format!("{}/v1/chat/completions", gw.url)).json(body);
    if let Some(k) = key {
        req = req.bearer_auth(k);
    }
    req.send().await.unwrap()
}

/// Asks, reads the whole answer, returns the request id.
async fn exchange(gw: &TestGateway, key: Option<&str>, body: &Value) -> (u16, String) {
    let resp = ask(gw, key, body).await;
    let status = resp.status().as_u16();
    let id = header(&resp, "x-request-id").to_string();
    let _ = resp.bytes().await.unwrap();
    (status, id)
}

/// The log's line of request `id`, once the writer has written it.
async fn line_of(dir: &Path, id: &str) -> Value {
    let path = dir.join("requests.jsonl");
    for _ in 0..500 {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        for l in text.lines() {
            let v: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}"));
            if v["id"] == id {
                return v;
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("no line for {id} in {}", path.display());
}

fn body(model: &str, stream: bool) -> Value {
    json!({"model": model, "stream": stream, "user": "user-42",
           "messages": [{"role": "user", "content": "Tell me about foxes"}]})
}

fn attempts(v: &Value) -> Vec<(String, String)> {
    v["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["model"].as_str().unwrap().to_string(), a["outcome"].as_str().unwrap().to_string()))
        .collect()
}

fn pair(model: &str, outcome: &str) -> (String, String) {
    (model.to_string(), outcome.to_string())
}

#[tokio::test]
async fn answered_requests_are_logged_with_tokens_cost_and_times() {
    let dir = temp_dir();
    let gw = start(&config(&dir, "")).await;
    for stream in [false, true] {
        let (status, id) = exchange(&gw, Some("key-a"), &body("fine", stream)).await;
        assert_eq!(status, 200);
        let v = line_of(&dir, &id).await;
        assert_eq!(v["outcome"], "answered", "{v}");
        assert_eq!(v["status"], 200);
        assert_eq!(v["entry"], "/v1/chat/completions");
        assert_eq!(v["cascade"], "fine");
        assert_eq!(v["model"], "fine");
        assert_eq!(v["stream"], stream);
        assert_eq!(v["user"], "user-42");
        assert!(v["key"].is_null(), "a `server.api_keys` key has no id");
        assert_eq!(v["answered_by"], "ok/a");
        assert_eq!(v["rank"], 1);
        assert_eq!(attempts(&v), [pair("ok/a", "answered")]);
        assert!(v["tokens"]["input"].as_u64().unwrap() > 0, "{v}");
        assert!(v["tokens"]["output"].as_u64().unwrap() > 0, "{v}");
        assert!(v["cost_usd"].as_f64().unwrap() > 0.0, "{v}");
        assert!(v["latency_ms"].as_f64().unwrap() >= v["ttft_ms"].as_f64().unwrap());
        assert_eq!(v["finish_reasons"], json!(["stop"]));
        assert_eq!(v["continued"], false);
        assert!(v["ts"].as_str().unwrap().ends_with('Z'));
        assert!(v.get("content").is_none(), "no content unless asked: {v}");
        assert!(!v.to_string().contains("foxes"), "the prompt is not in the line");
    }
}

#[tokio::test]
async fn a_failover_lists_every_attempt_and_why() {
    let dir = temp_dir();
    let gw = start(&config(&dir, "")).await;
    for stream in [false, true] {
        let (status, id) = exchange(&gw, Some("key-a"), &body("failover", stream)).await;
        assert_eq!(status, 200);
        let v = line_of(&dir, &id).await;
        assert_eq!(v["outcome"], "answered");
        assert_eq!(v["answered_by"], "ok/a");
        assert_eq!(v["rank"], 2);
        let tried = attempts(&v);
        assert_eq!(tried.first(), Some(&pair("ok/down", "failed")), "{v}");
        assert_eq!(tried.last(), Some(&pair("ok/a", "answered")));
        let failed = &v["attempts"][0];
        assert_eq!(failed["reason"], "upstream_error", "{v}");
        assert!(failed["detail"].as_str().unwrap().contains("503"), "{v}");
        assert!(failed["ttft_ms"].is_null());
    }
}

#[tokio::test]
async fn a_continued_stream_names_both_models_and_the_mode() {
    let dir = temp_dir();
    let gw = start(&config(&dir, "")).await;
    let (status, id) = exchange(&gw, Some("key-a"), &body("continued", true)).await;
    assert_eq!(status, 200);
    let v = line_of(&dir, &id).await;
    assert_eq!(v["outcome"], "answered", "{v}");
    assert_eq!(v["continued"], true);
    assert_eq!(attempts(&v), [pair("ok/cut", "failed"), pair("ok/a", "answered")]);
    assert_eq!(v["attempts"][0]["continuation"], Value::Null);
    assert_eq!(v["attempts"][1]["continuation"], "prefill");
    assert!(v["attempts"][0]["ttft_ms"].is_number(), "the broken stream had its first token");
    // Both parts' tokens are counted.
    assert!(v["tokens"]["output"].as_u64().unwrap() > 0);
}

#[tokio::test]
async fn a_handed_off_request_carries_its_handoff_id() {
    let dir = temp_dir();
    let gw = start(&config(&dir, "")).await;
    for stream in [false, true] {
        let resp = ask(&gw, Some("key-a"), &body("person", stream)).await;
        assert_eq!(resp.status(), 200);
        let (id, handoff) =
            (header(&resp, "x-request-id").to_string(), header(&resp, "x-spillway-handoff-id").to_string());
        let _ = resp.bytes().await.unwrap();
        let v = line_of(&dir, &id).await;
        assert_eq!(v["outcome"], "handoff", "{v}");
        assert_eq!(v["handoff_id"], handoff.as_str());
        assert_eq!(attempts(&v), [pair("ok/down", "failed")]);
    }
}

#[tokio::test]
async fn rejected_requests_are_logged_with_their_status() {
    let dir = temp_dir();
    let gw = start(&config(&dir, "")).await;
    let (status, id) = exchange(&gw, None, &body("fine", false)).await;
    assert_eq!(status, 401);
    let v = line_of(&dir, &id).await;
    assert_eq!(v["outcome"], "rejected");
    assert_eq!(v["status"], 401);
    assert_eq!(v["attempts"], json!([]));
    let (status, id) = exchange(&gw, Some("key-a"), &json!({"model": "fine", "messages": "not a list"})).await;
    assert_eq!(status, 400);
    assert_eq!(line_of(&dir, &id).await["outcome"], "rejected");
    let (status, id) = exchange(&gw, Some("key-a"), &body("no-such-cascade", true)).await;
    assert_eq!(status, 404);
    assert_eq!(line_of(&dir, &id).await["outcome"], "rejected");
}

#[tokio::test]
async fn all_models_failing_is_an_error_with_its_message() {
    let dir = temp_dir();
    let yaml = config(&dir, "")
        .replace("  person:\n    models: [ok/down]\n    handoff: true\n", "  person:\n    models: [ok/down]\n");
    let gw = start(&yaml).await;
    for stream in [false, true] {
        let (status, id) = exchange(&gw, Some("key-a"), &body("person", stream)).await;
        assert_eq!(status, 503);
        let v = line_of(&dir, &id).await;
        assert_eq!(v["outcome"], "error", "{v}");
        assert_eq!(v["status"], 503);
        assert_eq!(v["error"], "all models failed", "{v}");
        assert_eq!(attempts(&v), [pair("ok/down", "failed")]);
    }
}

#[tokio::test]
async fn every_client_entry_point_is_logged() {
    let dir = temp_dir();
    let gw = start(&config(&dir, "")).await;
    let calls = [
        ("/v1/responses", json!({"model": "fine", "input": "Hi", "user": "u-r"}), "chat"),
        (
            "/v1/messages",
            json!({"model": "fine", "max_tokens": 20, "messages": [{"role": "user", "content": "Hi"}]}),
            "chat",
        ),
        ("/v1/embeddings", json!({"model": "vectors", "input": "Hi", "user": "u-e"}), "embeddings"),
    ];
    for (path, body, _) in calls {
        let resp = client()
            .post(format!("{}{path}", gw.url))
            .bearer_auth("key-a")
            .header("anthropic-version", "2023-06-01")
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200, "{path}");
        let id = header(&resp, "x-request-id").to_string();
        let _ = resp.bytes().await.unwrap();
        let v = line_of(&dir, &id).await;
        assert_eq!(v["entry"], path);
        assert_eq!(v["outcome"], "answered", "{v}");
        assert_eq!(attempts(&v).len(), 1, "{v}");
        assert!(v["tokens"]["input"].as_u64().unwrap() > 0, "{v}");
        if path == "/v1/embeddings" {
            assert_eq!(v["cascade"], "vectors");
            assert_eq!(v["answered_by"], "ok/vec");
            assert_eq!(v["user"], "u-e");
        }
    }
}

#[tokio::test]
async fn content_is_logged_only_when_asked() {
    let dir = temp_dir();
    let gw = start(&config(&dir, "  capture_content: true\n")).await;
    for stream in [false, true] {
        let (_, id) = exchange(&gw, Some("key-a"), &body("fine", stream)).await;
        let v = line_of(&dir, &id).await;
        assert!(v["content"]["prompt"].as_str().unwrap().contains("Tell me about foxes"), "{v}");
        assert_eq!(v["content"]["answer"], REPLY, "{v}");
    }
}

#[tokio::test]
async fn the_log_is_rotated_by_size() {
    let dir = temp_dir();
    let gw =
        start(&config(&dir, "").replace("requests.jsonl\n", "requests.jsonl\n    max_size: 4KiB\n    keep: 2\n")).await;
    let mut last = String::new();
    for _ in 0..12 {
        last = exchange(&gw, Some("key-a"), &body("fine", false)).await.1;
    }
    line_of(&dir, &last).await;
    let rotated = std::fs::read_to_string(dir.join("requests.jsonl.1")).unwrap();
    assert!(rotated.lines().count() >= 2, "{rotated}");
    assert!(std::fs::metadata(dir.join("requests.jsonl")).unwrap().len() <= 4096);
    assert!(!dir.join("requests.jsonl.3").exists());
}

#[tokio::test]
async fn a_virtual_key_and_its_end_user_are_on_the_line() {
    let dir = temp_dir();
    let keys = "keys:\n  - { id: team-a, key: sk-team-a-secret }\n";
    let gw = start(&config(&dir, keys)).await;
    for stream in [false, true] {
        let mut b = body("fine", stream);
        b.as_object_mut().unwrap().remove("user");
        let resp = client()
            .post(format!("{}/v1/chat/completions", gw.url))
            .bearer_auth("sk-team-a-secret")
            .header("x-spillway-user", "alice")
            .json(&b)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        let id = header(&resp, "x-request-id").to_string();
        let _ = resp.bytes().await.unwrap();
        let v = line_of(&dir, &id).await;
        assert_eq!(v["key"], "team-a", "{v}");
        assert_eq!(v["user"], "alice", "{v}");
        assert!(!v.to_string().contains("sk-team-a-secret"), "never the secret: {v}");
    }
    let (status, id) = exchange(&gw, Some("key-a"), &body("fine", false)).await;
    assert_eq!(status, 200);
    let v = line_of(&dir, &id).await;
    assert!(v["key"].is_null(), "{v}");
    assert_eq!(v["user"], "user-42");
}
