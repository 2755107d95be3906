//! The streamed twin of every health behaviour: what a streamed answer does
//! to breakers, dead marks, TTFT and the metrics must be what a whole
//! answer does — settled once, where the stream ends. (Round 1 found the
//! breaker deaf to streamed successes; these tests fail on that code.)

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)] // tests: fail loudly, spawn freely

mod common;

use common::*;
use serde_json::Value;
use std::time::Duration;

const ADMIN: &str = "admin-secret";

/// Providers `a`, `b`; cascade `chat: [a/m1, a/m2, b/m]`; a breaker that
/// opens after 2 failures in a row for 1.5 s. Continuation off: these
/// tests look at one attempt's settlement (tests/continuation.rs at the
/// continued ones).
fn config(a: &FakeUpstream, b: &FakeUpstream) -> String {
    format!(
        "server:\n  admin_token: {ADMIN}\nproviders:\n{}{}\
health:\n  dead_ttl: 1h\n  breaker: {{ consecutive_failures: 2, open_for: 1500ms, window: 60s, failure_rate: 0.9, min_requests: 50 }}\n  retries: {{ max: 0, backoff: 1ms, jitter: 0 }}\n  timeouts: {{ connect: 1s, first_token: 2s, idle: 2s, total: 10s }}\n\
cascades:\n  chat:\n    models: [a/m1, a/m2, b/m]\n    continue_streams: false\n",
        openai_provider("a", a),
        openai_provider("b", b)
    )
}

async fn setup() -> (FakeUpstream, FakeUpstream, TestGateway) {
    let (a, b) = (FakeUpstream::start().await, FakeUpstream::start().await);
    b.set_default(Reply::stream(&["from ", "b"]));
    let gw = start(&config(&a, &b)).await;
    (a, b, gw)
}

/// Streams a request to its end; the answering model and the events.
async fn stream(gw: &TestGateway) -> (String, Vec<String>) {
    let resp = gw.post(&chat("chat", true)).await;
    assert_eq!(resp.status(), 200);
    let model = header(&resp, "x-spillway-model").to_string();
    (model, sse_events(resp).await)
}

async fn m1(gw: &TestGateway) -> Value {
    let st = gw.admin_get("/admin/state", ADMIN).await;
    st["cascades"][0]["models"].as_array().unwrap().iter().find(|m| m["model"] == "a/m1").unwrap().clone()
}

fn ok_stream() -> Reply {
    Reply::stream(&["m1 ", "answers"])
}

fn boom() -> Reply {
    Reply::error(500, "server_error", "boom")
}

#[tokio::test]
async fn streamed_successes_reset_the_consecutive_failure_count() {
    let (a, _b, gw) = setup().await;
    // m1 fails, m2 answers; then m1 answers a stream; then m1 fails again.
    a.push(boom()).push(Reply::stream(&["m2"]));
    assert_eq!(stream(&gw).await.0, "a/m2");
    a.push(ok_stream());
    let (model, events) = stream(&gw).await;
    assert_eq!(model, "a/m1");
    assert_eq!(events.last().unwrap(), "[DONE]");
    a.push(boom()).push(Reply::stream(&["m2"]));
    assert_eq!(stream(&gw).await.0, "a/m2");
    // Two failures, but not in a row: the streamed answer between them counts.
    assert_eq!(m1(&gw).await["breaker"]["state"], "closed");
    a.push(ok_stream());
    assert_eq!(stream(&gw).await.0, "a/m1", "m1 still serves");
}

#[tokio::test]
async fn a_streamed_half_open_probe_closes_the_breaker() {
    let (a, _b, gw) = setup().await;
    for _ in 0..2 {
        a.push(boom()).push(Reply::stream(&["m2"]));
        assert_eq!(stream(&gw).await.0, "a/m2");
    }
    assert_eq!(m1(&gw).await["breaker"]["state"], "open");
    assert_eq!(gw.metric(r#"spillway_breaker_state{provider="a",model="m1"}"#).await, 1.0);
    // The breaker's clock is the runtime's and the gateway serves real
    // sockets here, so `open_for` (1.5 s) is waited out for real.
    tokio::time::sleep(Duration::from_millis(1600)).await;
    a.push(ok_stream());
    assert_eq!(stream(&gw).await.0, "a/m1", "the streamed probe answers");
    assert_eq!(m1(&gw).await["breaker"]["state"], "closed");
    assert_eq!(gw.metric(r#"spillway_breaker_state{provider="a",model="m1"}"#).await, 0.0);
    // Closed: every one of a burst of concurrent streams is admitted to m1.
    a.set_default(ok_stream().pause_after(1, Duration::from_millis(100)));
    let gw = std::sync::Arc::new(gw);
    let burst: Vec<_> = (0..10)
        .map(|_| {
            let gw = gw.clone();
            tokio::spawn(async move { stream(&gw).await.0 })
        })
        .collect();
    for h in burst {
        assert_eq!(h.await.unwrap(), "a/m1");
    }
}

#[tokio::test]
async fn a_streamed_429_and_an_empty_stream_mark_dead() {
    let (a, _b, gw) = setup().await;
    a.push(Reply::error(429, "rate_limit_exceeded", "slow down").header("retry-after", "7"));
    a.push(Reply::stream(&[]));
    assert_eq!(stream(&gw).await.0, "b/m", "m1 rate limited, m2 empty");
    let st = gw.admin_get("/admin/state", ADMIN).await;
    let models = st["cascades"][0]["models"].as_array().unwrap();
    let dead = |name: &str| models.iter().find(|m| m["model"] == name).unwrap()["dead"]["reason"].clone();
    assert_eq!(dead("a/m1"), "rate_limited");
    assert_eq!(dead("a/m2"), "empty");
    assert_eq!(stream(&gw).await.0, "b/m");
    assert_eq!(a.calls(), 2, "neither dead model was asked again");
}

#[tokio::test]
async fn a_stream_cut_after_its_first_byte_is_a_failure_everywhere() {
    let (a, _b, gw) = setup().await;
    for _ in 0..2 {
        a.push(ok_stream().cut_after(2));
        let (model, events) = stream(&gw).await;
        assert_eq!(model, "a/m1");
        assert!(events.last().unwrap().contains("\"error\""), "{events:?}");
    }
    assert_eq!(m1(&gw).await["breaker"]["state"], "open", "two cuts in a row open the breaker");
    let series = |name: &str, labels: &str| format!("{name}{{{labels}}}");
    let m1_labels = r#"cascade="chat",provider="a",model="m1""#;
    assert_eq!(gw.metric(&series("spillway_requests_total", r#"cascade="chat",outcome="error""#)).await, 2.0);
    assert_eq!(gw.metric(&series("spillway_requests_total", r#"cascade="chat",outcome="ok""#)).await, 0.0);
    let attempts = |result: &str| series("spillway_attempts_total", &format!("{m1_labels},result=\"{result}\""));
    assert_eq!(gw.metric(&attempts("upstream_error")).await, 2.0);
    assert_eq!(gw.metric(&attempts("ok")).await, 0.0);
    let broken = series("spillway_attempt_failures_total", &format!("{m1_labels},reason=\"broken_body\""));
    assert_eq!(gw.metric(&broken).await, 2.0);
    let served = series("spillway_served_total", r#"cascade="chat",tier="preferred",provider="a",model="m1",rank="1""#);
    assert_eq!(gw.metric(&served).await, 0.0, "a broken stream was not served");
}

#[tokio::test]
async fn a_clean_stream_counts_as_ok_served_and_a_ttft_sample() {
    let (a, _b, gw) = setup().await;
    a.push(ok_stream());
    stream(&gw).await;
    let m1_labels = r#"cascade="chat",provider="a",model="m1""#;
    assert_eq!(gw.metric(r#"spillway_requests_total{cascade="chat",outcome="ok"}"#).await, 1.0);
    assert_eq!(gw.metric(&format!("spillway_attempts_total{{{m1_labels},result=\"ok\"}}")).await, 1.0);
    let served = r#"spillway_served_total{cascade="chat",tier="preferred",provider="a",model="m1",rank="1"}"#;
    assert_eq!(gw.metric(served).await, 1.0);
    assert_eq!(gw.metric(r#"spillway_ttft_seconds_count{provider="a",model="m1"}"#).await, 1.0);
    assert!(m1(&gw).await["ttft_ms"].as_f64().is_some(), "the TTFT sample reached the health view");
}

/// Reads a stream up to its first content chunk, then drops the connection.
async fn disconnect_after_first_token(gw: &TestGateway) {
    use futures_util::StreamExt;
    let resp = gw.post(&chat("chat", true)).await;
    assert_eq!(header(&resp, "x-spillway-model"), "a/m1");
    let mut body = resp.bytes_stream();
    let mut seen = String::new();
    while !seen.contains("m1 ") {
        seen.push_str(&String::from_utf8_lossy(&body.next().await.unwrap().unwrap()));
    }
}

#[tokio::test]
async fn a_client_disconnect_mid_stream_changes_no_breaker_count() {
    let (a, _b, gw) = setup().await;
    let hanging = || Reply::stream(&["m1 ", "never ", "ends"]).pause_after(1, Duration::from_secs(30));
    // Two disconnects in a row are not two failures...
    for _ in 0..2 {
        a.push(hanging());
        disconnect_after_first_token(&gw).await;
    }
    assert_eq!(m1(&gw).await["breaker"]["state"], "closed");
    // ...and not a success either: fail, disconnect, fail opens the breaker.
    a.push(boom()).push(Reply::stream(&["m2"]));
    assert_eq!(stream(&gw).await.0, "a/m2");
    a.push(hanging());
    disconnect_after_first_token(&gw).await;
    a.push(boom()).push(Reply::stream(&["m2"]));
    assert_eq!(stream(&gw).await.0, "a/m2");
    assert_eq!(m1(&gw).await["breaker"]["state"], "open");
    // The disconnects are counted as such, not as the model's outcomes.
    let disconnects = r#"spillway_client_disconnects_total{cascade="chat"}"#;
    let mut counted = 0.0;
    for _ in 0..100 {
        counted = gw.metric(disconnects).await;
        if counted >= 3.0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(counted, 3.0);
    let m1_ok = r#"spillway_attempts_total{cascade="chat",provider="a",model="m1",result="ok"}"#;
    assert_eq!(gw.metric(m1_ok).await, 0.0);
}
