//! What clients' bodies may hold: a lone UTF-16 surrogate escape (half an
//! emoji from a cut JavaScript string) is read as U+FFFD on every entry
//! point, and U+FFFD is what the upstream gets.

use super::common::*;
use super::support::*;
use serde_json::Value;

/// `text` holds `\ud83d` alone, as `JSON.stringify` writes half an emoji.
fn raw_post(gw: &TestGateway, path: &str, text: String) -> reqwest::RequestBuilder {
    client()
        .post(format!("{}{path}", gw.url))
        .header("content-type", "application/json")
        .header("anthropic-version", "2023-06-01")
        .body(text)
}

fn saw_replacement(up: &FakeUpstream) -> bool {
    let raw = up.raw_requests();
    let last = raw.last().unwrap();
    let text = String::from_utf8_lossy(last);
    (text.contains("\\ufffd") || text.contains('\u{fffd}')) && !text.contains("\\ud83d")
}

#[tokio::test]
async fn a_lone_surrogate_is_accepted_as_u_fffd_on_every_entry_point() {
    let (a, b) = (FakeUpstream::start().await, FakeUpstream::start().await);
    let gw = start(&two_upstreams(&a, &b, "")).await;
    let half = r"cut emoji \ud83d";
    let chat_body = |stream: bool| {
        format!(r#"{{"model":"chat","stream":{stream},"messages":[{{"role":"user","content":"{half}"}}]}}"#)
    };
    for stream in [false, true] {
        a.push(Reply::stream(&["fine"]));
        let resp = raw_post(&gw, "/v1/chat/completions", chat_body(stream)).send().await.unwrap();
        assert_eq!(resp.status(), 200, "chat, stream: {stream}");
        let _ = resp.text().await.unwrap();
        assert!(saw_replacement(&a), "chat, stream: {stream}");
    }
    let resp = raw_post(&gw, "/v1/responses", format!(r#"{{"model":"chat","input":"{half}"}}"#)).send().await.unwrap();
    assert_eq!(resp.status(), 200, "responses");
    assert!(saw_replacement(&a), "responses");
    let messages = format!(r#"{{"model":"chat","max_tokens":50,"messages":[{{"role":"user","content":"{half}"}}]}}"#);
    let resp = raw_post(&gw, "/v1/messages", messages.clone()).send().await.unwrap();
    assert_eq!(resp.status(), 200, "messages");
    assert!(saw_replacement(&a), "messages");
    let resp = raw_post(&gw, "/v1/messages/count_tokens", messages).send().await.unwrap();
    assert_eq!(resp.status(), 200, "count_tokens");
    assert!(resp.json::<Value>().await.unwrap()["input_tokens"].as_u64().unwrap() > 0);
    // An escaped backslash before `ud800` is text, not an escape.
    let text = r#"{"model":"chat","messages":[{"role":"user","content":"C:\\ud800"}]}"#;
    let resp = raw_post(&gw, "/v1/chat/completions", text.into()).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let sent = String::from_utf8_lossy(a.raw_requests().last().unwrap()).to_string();
    assert!(sent.contains(r"C:\\ud800"), "{sent}");
}

#[tokio::test]
async fn a_lone_surrogate_in_an_embedding_input_is_accepted() {
    let gw = start("providers:\n  p:\n    kind: mock\n    models: [{ id: e, dimensions: 8 }]\ncascades:\n  vectors:\n    kind: embedding\n    models: [p/e]\n").await;
    let resp = raw_post(&gw, "/v1/embeddings", r#"{"model":"vectors","input":"x\udc00"}"#.into()).send().await.unwrap();
    assert_eq!(resp.status(), 200);
}
