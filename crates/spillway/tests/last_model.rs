//! First-token deadlines through the composition root, on a paused clock:
//! on the last model a request can use (incident 004: a self-hosted GPU
//! that queues, the only model of its cascade) a slow first token is
//! waited for up to `timeouts.total` instead of becoming an error; where a
//! model follows, `first_token` still moves on; and a provider's own
//! `first_token` bounds a hang (incident 001's probe). Whole and streamed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)]

mod common;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use serde_json::json;
use spillway::server::AppState;
use std::sync::Arc;
use tokio::time::Instant;

/// `slow/gpu` takes 20 s to its first token; `spare/m` answers at once.
fn yaml(health: &str, slow_provider: &str) -> String {
    format!(
        "providers:
  slow:
    kind: mock
{slow_provider}    models: [ {{ id: gpu, behavior: {{ first_token: 20s, latency: 20s, reply_tokens: 5 }} }} ]
  spare:
    kind: mock
    models: [ {{ id: m }} ]
health:
  timeouts: {{ first_token: 15s, total: 120s{health} }}
cascades:
  only: {{ models: [slow/gpu] }}
  pair: {{ models: [slow/gpu, spare/m] }}
"
    )
}

fn start(yaml: &str) -> Arc<AppState> {
    common::app_state(yaml)
}

/// One request, read to its end: status, answering model, seconds taken.
async fn ask(state: &Arc<AppState>, cascade: &str, stream: bool) -> (u16, String, u64) {
    let body = json!({"model": cascade, "stream": stream, "messages": [{"role": "user", "content": "Hi"}]});
    let request = http::Request::post("/v1/chat/completions")
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap();
    let started = Instant::now();
    let response = spillway::server::chat::chat(state.clone(), request).await;
    let status = response.status().as_u16();
    let model = response.headers().get("x-spillway-model").map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let text = String::from_utf8_lossy(&body);
    assert!(!(stream && status == 200 && text.contains("\"error\"")), "{text}");
    (status, model, started.elapsed().as_secs())
}

#[tokio::test(start_paused = true)]
async fn the_last_model_is_waited_for_up_to_total() {
    let state = start(&yaml("", ""));
    for stream in [false, true] {
        let (status, model, secs) = ask(&state, "only", stream).await;
        assert_eq!((status, model.as_str()), (200, "slow/gpu"), "stream {stream}");
        assert!((20..=45).contains(&secs), "answered after {secs} s (stream {stream})");
    }
}

#[tokio::test(start_paused = true)]
async fn last_model_first_token_restores_the_deadline() {
    let state = start(&yaml(", last_model_first_token: 15s", ""));
    for stream in [false, true] {
        let (status, _, secs) = ask(&state, "only", stream).await;
        assert_eq!((status, secs), (503, 15), "stream {stream}");
    }
}

#[tokio::test(start_paused = true)]
async fn with_a_model_after_it_first_token_still_moves_on() {
    let state = start(&yaml("", ""));
    for stream in [false, true] {
        let (status, model, secs) = ask(&state, "pair", stream).await;
        assert_eq!((status, model.as_str(), secs), (200, "spare/m", 15), "stream {stream}");
    }
}

/// A provider that hangs rather than fails: its own `first_token` bounds
/// what each attempt (a half-open probe included) waits.
#[tokio::test(start_paused = true)]
async fn a_providers_own_first_token_bounds_a_hang() {
    let state = start(&yaml("", "    first_token: 3s\n"));
    for stream in [false, true] {
        let (status, model, secs) = ask(&state, "pair", stream).await;
        assert_eq!((status, model.as_str(), secs), (200, "spare/m", 3), "stream {stream}");
    }
    // As the last model, the rule for the last one wins over it.
    let (status, _, secs) = ask(&state, "only", false).await;
    assert_eq!(status, 200, "{secs}");
}
