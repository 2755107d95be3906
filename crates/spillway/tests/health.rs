//! The cascade runner's health rules through the real server: SPEC §6's
//! outcome table row by row, dead marks, breakers, bulkheads, hedging and
//! the admin API.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)] // tests: fail loudly, spawn freely

mod common;

use common::*;
use serde_json::{json, Value};
use std::time::Duration;

const ADMIN: &str = "admin-secret";

/// Providers `a`, `b` (fake upstreams) in a cascade `chat: [a/m1, a/m2, b/m]`.
fn config(a: &FakeUpstream, b: &FakeUpstream, extra: &str) -> String {
    format!(
        "server:\n  admin_token: {ADMIN}\nproviders:\n{}{}\
health:\n  dead_ttl: 1h\n  breaker: {{ consecutive_failures: 2, open_for: 1500ms, window: 60s, failure_rate: 0.9, min_requests: 50 }}\n  retries: {{ max: 1, backoff: 1ms, jitter: 0 }}\n  timeouts: {{ connect: 1s, first_token: 2s, idle: 2s, total: 10s }}\n\
cascades:\n  chat:\n    models: [a/m1, a/m2, b/m]\n{extra}",
        openai_provider("a", a),
        openai_provider("b", b)
    )
}

async fn setup(extra: &str) -> (FakeUpstream, FakeUpstream, TestGateway) {
    let (a, b) = (FakeUpstream::start().await, FakeUpstream::start().await);
    b.set_default(Reply::text("from b"));
    let gw = start(&config(&a, &b, extra)).await;
    (a, b, gw)
}

async fn model_of(gw: &TestGateway) -> String {
    let resp = gw.post(&chat("chat", false)).await;
    assert_eq!(resp.status(), 200, "{:?}", resp.text().await);
    header(&resp, "x-spillway-model").to_string()
}

async fn admin_state(gw: &TestGateway) -> Value {
    gw.admin_get("/admin/state", ADMIN).await
}

fn model<'v>(state: &'v Value, name: &str) -> &'v Value {
    state["cascades"][0]["models"].as_array().unwrap().iter().find(|m| m["model"] == name).unwrap()
}

/// Which upstream model ids were requested, in order.
fn asked(up: &FakeUpstream) -> Vec<String> {
    up.requests().iter().map(|r| r["model"].as_str().unwrap().to_string()).collect()
}

#[tokio::test]
async fn empty_answer_marks_dead_and_is_skipped_next_time() {
    let (a, _b, gw) = setup("").await;
    a.push(Reply::empty());
    a.set_default(Reply::text("m2 answers"));
    assert_eq!(model_of(&gw).await, "a/m2");
    assert_eq!(model_of(&gw).await, "a/m2");
    assert_eq!(asked(&a), ["m1", "m2", "m2"], "m1 was not asked again while dead");
    let st = admin_state(&gw).await;
    assert_eq!(model(&st, "a/m1")["dead"]["reason"], "empty");
    assert_eq!(model(&st, "a/m1")["alive"], false);
}

#[tokio::test]
async fn rate_limit_dead_until_retry_after() {
    let (a, _b, gw) = setup("").await;
    a.push(Reply::error(429, "rate_limit_exceeded", "slow down").header("retry-after", "7"));
    a.set_default(Reply::text("m2"));
    assert_eq!(model_of(&gw).await, "a/m2");
    let st = admin_state(&gw).await;
    let dead = &model(&st, "a/m1")["dead"];
    assert_eq!(dead["reason"], "rate_limited");
    let left = dead["seconds_left"].as_u64().unwrap();
    assert!((5..=7).contains(&left), "dead for {left}s, expected about 7");
}

#[tokio::test]
async fn rate_limit_reset_headers_in_groq_form() {
    let (a, _b, gw) = setup("").await;
    a.push(
        Reply::error(429, "rate_limit_exceeded", "tpm")
            .header("x-ratelimit-remaining-requests", "0")
            .header("x-ratelimit-reset-requests", "2m59.56s"),
    );
    a.set_default(Reply::text("m2"));
    model_of(&gw).await;
    let left = model(&admin_state(&gw).await, "a/m1")["dead"]["seconds_left"].as_u64().unwrap();
    assert!((177..=180).contains(&left), "dead for {left}s, expected about 180");
}

/// Groq's daily cap: a 429 whose reset header says hours keeps the model
/// dead for those hours — past `dead_ttl` (1h here), not minutes — whole
/// and streamed, and no request is spent on it meanwhile.
#[tokio::test]
async fn a_daily_cap_429_keeps_the_model_dead_for_hours() {
    for stream in [false, true] {
        let (a, _b, gw) = setup("").await;
        a.push(
            Reply::error(429, "rate_limit_exceeded", "Rate limit reached on requests per day (RPD)")
                .header("x-ratelimit-limit-requests", "1000")
                .header("x-ratelimit-remaining-requests", "0")
                .header("x-ratelimit-reset-requests", "2h3m0s"),
        );
        a.set_default(if stream { Reply::stream(&["m2"]) } else { Reply::text("m2") });
        for _ in 0..2 {
            let resp = gw.post(&chat("chat", stream)).await;
            assert_eq!(resp.status(), 200);
            assert_eq!(header(&resp, "x-spillway-model"), "a/m2", "stream: {stream}");
            let _ = resp.bytes().await;
        }
        assert_eq!(asked(&a), ["m1", "m2", "m2"], "stream: {stream}");
        let dead = model(&admin_state(&gw).await, "a/m1")["dead"].clone();
        assert_eq!(dead["reason"], "rate_limited");
        let left = dead["seconds_left"].as_u64().unwrap();
        assert!((7370..=7380).contains(&left), "dead for {left}s, expected about 2h3m (stream: {stream})");
    }
}

#[tokio::test]
async fn rate_limit_without_hints_uses_dead_ttl() {
    let (a, _b, gw) = setup("").await;
    a.push(Reply::error(429, "rate_limit_exceeded", "slow down"));
    a.set_default(Reply::text("m2"));
    model_of(&gw).await;
    let left = model(&admin_state(&gw).await, "a/m1")["dead"]["seconds_left"].as_u64().unwrap();
    assert!((3590..=3600).contains(&left), "dead for {left}s, expected the 1h dead_ttl");
}

/// Read off a 200 answer's head, whole and streamed alike (the head is read
/// before the answer's body takes either path).
#[tokio::test]
async fn remaining_zero_skips_the_model_without_spending_a_request() {
    for stream in [false, true] {
        let (a, _b, gw) = setup("").await;
        let last = if stream { Reply::stream(&["last one"]) } else { Reply::text("last one") };
        a.push(last.header("x-ratelimit-remaining-requests", "0").header("x-ratelimit-reset-requests", "30s"));
        a.set_default(if stream { Reply::stream(&["m2"]) } else { Reply::text("m2") });
        for expected in ["a/m1", "a/m2"] {
            let resp = gw.post(&chat("chat", stream)).await;
            assert_eq!(resp.status(), 200);
            assert_eq!(header(&resp, "x-spillway-model"), expected, "stream: {stream}");
            let _ = resp.bytes().await;
        }
        assert_eq!(asked(&a), ["m1", "m2"], "no request was spent to discover a 429 (stream: {stream})");
        assert_eq!(model(&admin_state(&gw).await, "a/m1")["dead"]["reason"], "quota_used_up", "stream: {stream}");
    }
}

#[tokio::test]
async fn forbidden_and_not_found_mark_dead() {
    for (status, code, reason) in [(403, "forbidden", "forbidden"), (404, "model_not_found", "not_found")] {
        let (a, _b, gw) = setup("").await;
        a.push(Reply::error(status, code, "no"));
        a.set_default(Reply::text("m2"));
        assert_eq!(model_of(&gw).await, "a/m2");
        assert_eq!(model_of(&gw).await, "a/m2");
        assert_eq!(a.calls(), 3);
        assert_eq!(model(&admin_state(&gw).await, "a/m1")["dead"]["reason"], reason);
    }
}

#[tokio::test]
async fn groq_quirks_decommissioned_and_413_tokens() {
    let (a, _b, gw) = setup("").await;
    a.push(Reply::error(400, "model_decommissioned", "The model `m1` has been decommissioned"));
    a.push(Reply::raw(413, "application/json", r#"{"error":{"message":"Request too large on tokens per minute (TPM)","type":"tokens","code":"rate_limit_exceeded"}}"#));
    assert_eq!(model_of(&gw).await, "b/m", "neither is returned to the client");
    let st = admin_state(&gw).await;
    assert_eq!(model(&st, "a/m1")["dead"]["reason"], "not_found");
    assert_eq!(model(&st, "a/m2")["dead"]["reason"], "rate_limited");
}

#[tokio::test]
async fn unauthorized_kills_the_whole_provider_and_raises_an_event() {
    let (a, _b, gw) = setup("").await;
    let mut events = gw.state.gateway.load().health.subscribe();
    a.push(Reply::error(401, "invalid_api_key", "bad key"));
    assert_eq!(model_of(&gw).await, "b/m");
    assert_eq!(a.calls(), 1, "a/m2 shares the rejected key and was skipped");
    assert_eq!(model_of(&gw).await, "b/m");
    assert_eq!(a.calls(), 1);
    assert_eq!(events.try_recv().unwrap(), spillway::health::HealthEvent::KeyRejected { provider: "a".into() });
    assert_eq!(model(&admin_state(&gw).await, "a/m2")["dead"]["reason"], "key_rejected");
}

#[tokio::test]
async fn context_length_moves_to_a_larger_model_only() {
    let (a, b) = (FakeUpstream::start().await, FakeUpstream::start().await);
    let c = FakeUpstream::start().await;
    let yaml = format!(
        "providers:\n{}{}{}{FAST_HEALTH}cascades:\n  chat:\n    models: [a/small, b/smaller, c/large]\n",
        openai_provider("a", &a).replace("test-key-a\n", "test-key-a\n    models: [{id: small, context: 4000}]\n"),
        openai_provider("b", &b).replace("test-key-b\n", "test-key-b\n    models: [{id: smaller, context: 2000}]\n"),
        openai_provider("c", &c).replace("test-key-c\n", "test-key-c\n    models: [{id: large, context: 128000}]\n"),
    );
    let gw = start(&yaml).await;
    a.push(Reply::error(400, "context_length_exceeded", "This model's maximum context length is 4000 tokens"));
    c.push(Reply::text("large enough"));
    let resp = gw.post(&chat("chat", false)).await;
    assert_eq!(header(&resp, "x-spillway-model"), "c/large");
    assert_eq!(b.calls(), 0, "a model with a smaller context is not tried");
    let body: Value = gw
        .post(&json!({"model": "chat", "messages": [{"role": "user", "content": "x".repeat(20_000)}]}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(body["model"], "c/large", "a prompt of ~5000 tokens skips the 4000 and 2000 models up front");
    assert_eq!(a.calls(), 1);
}

#[tokio::test]
async fn breaker_opens_after_consecutive_failures_and_one_probe_closes_it() {
    let (a, _b, gw) = setup("").await;
    // m1 and m2 share upstream `a`: script each request as (m1's reply, m2's reply).
    a.push(Reply::error(500, "server_error", "boom")).push(Reply::text("m2"));
    assert_eq!(model_of(&gw).await, "a/m2");
    a.push(Reply::error(502, "bad_gateway", "boom")).push(Reply::text("m2"));
    assert_eq!(model_of(&gw).await, "a/m2");
    a.set_default(Reply::text("m2"));
    let st = admin_state(&gw).await;
    assert_eq!(model(&st, "a/m1")["breaker"]["state"], "open");
    assert_eq!(model(&st, "a/m1")["breaker"]["reason"], "2 consecutive failures");
    let before = asked(&a).iter().filter(|m| *m == "m1").count();
    assert_eq!(model_of(&gw).await, "a/m2");
    assert_eq!(asked(&a).iter().filter(|m| *m == "m1").count(), before, "open: m1 not called");
    // The breaker's clock is the runtime's; this test runs on real time, so
    // wait out `open_for` (1.5 s; long enough that a loaded machine does not reach it between two requests) for real.
    tokio::time::sleep(Duration::from_millis(1600)).await;
    a.push(Reply::text("m1 is back"));
    assert_eq!(model_of(&gw).await, "a/m1", "the probe succeeds");
    assert_eq!(model(&admin_state(&gw).await, "a/m1")["breaker"]["state"], "closed");
}

#[tokio::test]
async fn half_open_lets_exactly_one_of_100_concurrent_requests_through() {
    let (a, b, gw) = setup("").await;
    a.set_default(Reply::error(500, "server_error", "down"));
    model_of(&gw).await;
    model_of(&gw).await;
    assert_eq!(model(&admin_state(&gw).await, "a/m1")["breaker"]["state"], "open");
    tokio::time::sleep(Duration::from_millis(1600)).await;
    let m1_before = asked(&a).iter().filter(|m| *m == "m1").count();
    // The probe answers slowly, so every other request arrives while it is in flight.
    a.push(Reply::text("probe ok").delay(Duration::from_millis(500)));
    a.set_default(Reply::text("m2"));
    b.set_default(Reply::text("b"));
    let gw = std::sync::Arc::new(gw);
    let handles: Vec<_> = (0..100)
        .map(|_| {
            let gw = gw.clone();
            tokio::spawn(async move { gw.post(&chat("chat", false)).await.status() })
        })
        .collect();
    for h in handles {
        assert_eq!(h.await.unwrap(), 200);
    }
    let m1_calls = asked(&a).iter().filter(|m| *m == "m1").count() - m1_before;
    assert_eq!(m1_calls, 1, "exactly one probe reached the half-open model");
}

#[tokio::test]
async fn mid_stream_failure_counts_against_the_model() {
    let (a, _b, gw) = setup("    continue_streams: false\n").await;
    a.push(Reply::stream(&["one ", "two"]).cut_after(2));
    a.push(Reply::stream(&["one ", "two"]).cut_after(2));
    for _ in 0..2 {
        let events = sse_events(gw.post(&chat("chat", true)).await).await;
        assert!(events.last().unwrap().contains("\"error\""));
    }
    assert_eq!(model(&admin_state(&gw).await, "a/m1")["breaker"]["state"], "open");
}

#[tokio::test]
async fn timeouts_count_as_breaker_failures() {
    let (a, _b, gw) = setup("").await;
    for _ in 0..2 {
        // m1 answers after the 2s first-token deadline; m2 at once.
        a.push(Reply::text("late").delay(Duration::from_secs(5))).push(Reply::text("m2"));
    }
    assert_eq!(model_of(&gw).await, "a/m2");
    assert_eq!(model_of(&gw).await, "a/m2");
    assert_eq!(model(&admin_state(&gw).await, "a/m1")["breaker"]["state"], "open");
}

#[tokio::test]
async fn connect_errors_are_retried_then_fall_through() {
    // A port nothing listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let b = FakeUpstream::start().await;
    let yaml = format!(
        "providers:\n  dead:\n    kind: openai\n    base_url: http://{closed}/v1\n{}{FAST_HEALTH}cascades:\n  chat:\n    models: [dead/m, b/m]\n",
        openai_provider("b", &b)
    );
    let gw = start(&yaml).await;
    let resp = gw.post(&chat("chat", false)).await;
    assert_eq!(header(&resp, "x-spillway-model"), "b/m");
    assert_eq!(header(&resp, "x-spillway-attempts"), "3", "one call and one retry to the dead port, then b");
}

#[tokio::test]
async fn saturated_provider_is_skipped_while_another_serves() {
    let (a, b) = (FakeUpstream::start().await, FakeUpstream::start().await);
    let yaml = format!(
        "providers:\n{}{}{FAST_HEALTH}cascades:\n  chat:\n    models: [a/m, b/m]\n",
        openai_provider("a", &a).replace("test-key-a\n", "test-key-a\n    max_in_flight: 1\n"),
        openai_provider("b", &b)
    );
    let gw = std::sync::Arc::new(start(&yaml).await);
    a.push(Reply::text("slow a").delay(Duration::from_millis(600)));
    b.set_default(Reply::text("b"));
    let first = {
        let gw = gw.clone();
        tokio::spawn(async move { header(&gw.post(&chat("chat", false)).await, "x-spillway-model").to_string() })
    };
    assert!(a.wait_for(Duration::from_secs(2), |u| u.calls() == 1).await);
    let resp = gw.post(&chat("chat", false)).await;
    assert_eq!(header(&resp, "x-spillway-model"), "b/m");
    assert_eq!(a.calls(), 1, "the saturated provider was not called");
    assert_eq!(first.await.unwrap(), "a/m");
    let metrics = gw.get("/metrics").await.text().await.unwrap();
    assert!(
        metrics.contains(r#"spillway_attempts_total{cascade="chat",provider="a",model="m",result="saturated"} 1"#),
        "{metrics}"
    );
}

#[tokio::test]
async fn hedging_picks_the_faster_model_and_cancels_the_other() {
    let (a, b) = (FakeUpstream::start().await, FakeUpstream::start().await);
    let yaml = format!(
        "server:\n  admin_token: {ADMIN}\nproviders:\n{}{}{FAST_HEALTH}cascades:\n  chat:\n    models: [a/m, b/m]\n    hedge_after: 100ms\n",
        openai_provider("a", &a),
        openai_provider("b", &b)
    );
    let gw = start(&yaml).await;
    a.push(Reply::stream(&["slow"]).delay(Duration::from_millis(1500)));
    b.push(Reply::stream(&["fast"]));
    let resp = gw.post(&chat("chat", true)).await;
    assert_eq!(header(&resp, "x-spillway-model"), "b/m");
    assert_eq!(header(&resp, "x-spillway-attempts"), "2");
    assert_eq!(streamed_text(&sse_events(resp).await), "fast");
    assert!(a.wait_for(Duration::from_secs(3), |u| u.cancelled() == 1).await, "the slower request was cancelled");
    let st = client()
        .get(format!("{}/admin/state", gw.url))
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap()
        .json::<Value>()
        .await
        .unwrap();
    let am = &st["cascades"][0]["models"][0];
    assert_eq!(am["alive"], true, "the loser is not counted as failed: {am}");
    let metrics = gw.get("/metrics").await.text().await.unwrap();
    assert!(!metrics.contains(r#"provider="a",model="m",result="timeout"} 1"#));
}

#[tokio::test]
async fn openrouter_daily_cap_on_one_free_model_marks_all_free_models() {
    let (a, b) = (FakeUpstream::start().await, FakeUpstream::start().await);
    let yaml = format!(
        "server:\n  admin_token: {ADMIN}\nproviders:\n{}{}{FAST_HEALTH}cascades:\n  chat:\n    models: [or/x/one:free, or/y/two:free, or/z/paid, b/m]\n",
        openai_provider("or", &a),
        openai_provider("b", &b)
    );
    let gw = start(&yaml).await;
    a.push(Reply::error(429, "429", "Rate limit exceeded: free-models-per-day. Add 10 credits"));
    a.set_default(Reply::text("paid"));
    let resp = gw.post(&chat("chat", false)).await;
    assert_eq!(header(&resp, "x-spillway-model"), "or/z/paid");
    assert_eq!(asked(&a), ["x/one:free", "z/paid"], "the other :free model was not tried");
}

#[tokio::test]
async fn admin_api_needs_the_token_and_revive_clears_marks() {
    let (a, _b, gw) = setup("").await;
    a.push(Reply::error(404, "model_not_found", "gone"));
    a.set_default(Reply::text("ok"));
    model_of(&gw).await;
    assert_eq!(gw.get("/admin/state").await.status(), 401);
    let wrong = client().get(format!("{}/admin/state", gw.url)).bearer_auth("nope").send().await.unwrap();
    assert_eq!(wrong.status(), 401);
    let revived: Value = client()
        .post(format!("{}/admin/models/a/m1/revive", gw.url))
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(revived["alive"], true);
    assert_eq!(model_of(&gw).await, "a/m1");
}

#[tokio::test]
async fn admin_api_is_absent_without_a_token() {
    let (a, b) = (FakeUpstream::start().await, FakeUpstream::start().await);
    let gw = start(&config(&a, &b, "").replace(&format!("server:\n  admin_token: {ADMIN}\n"), "")).await;
    let resp = client().get(format!("{}/admin/state", gw.url)).bearer_auth(ADMIN).send().await.unwrap();
    assert_eq!(resp.status(), 404);
}

#[tokio::test]
async fn gauges_show_dead_models_and_breakers() {
    let (a, _b, gw) = setup("").await;
    a.push(Reply::error(404, "model_not_found", "gone"));
    a.set_default(Reply::text("ok"));
    model_of(&gw).await;
    let text = gw.get("/metrics").await.text().await.unwrap();
    assert!(text.contains(r#"spillway_model_dead{provider="a",model="m1"} 1"#), "{text}");
    assert!(text.contains(r#"spillway_breaker_state{provider="a",model="m1"} 0"#), "{text}");
    assert!(
        text.contains(r#"spillway_served_total{cascade="chat",tier="preferred",provider="a",model="m2",rank="2"} 1"#),
        "{text}"
    );
}

/// Past `timeouts.total` the client gets 504 — also when the deadline ran
/// out during the last model — unless the cascade hands off to a person.
#[tokio::test]
async fn the_total_deadline_is_a_504_or_a_handoff() {
    let dir = std::env::temp_dir().join(format!("spillway-deadline-{}", spillway::handoff::new_id()));
    std::fs::create_dir_all(&dir).unwrap();
    let gw = start(&format!(
        "state: {{ data_dir: {} }}\nproviders:\n  m:\n    kind: mock\n    models:\n      - {{ id: stuck, behavior: {{ hang: true }} }}\n\
         health:\n  timeouts: {{ connect: 1s, first_token: 5s, idle: 5s, total: 200ms }}\n\
         cascades:\n  last: {{ models: [m/stuck] }}\n  person: {{ models: [m/stuck], handoff: true }}\n",
        dir.display()
    ))
    .await;
    let resp = gw.post(&chat("last", false)).await;
    assert_eq!(resp.status(), 504);
    let body: Value = resp.json().await.unwrap();
    assert_valid("ErrorResponse", &body);
    assert_eq!(body["error"]["code"], "timeout");
    let resp = gw.post(&chat("person", false)).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(header(&resp, "x-spillway-tier"), "handoff");
    let metrics = gw.get("/metrics").await.text().await.unwrap();
    assert!(metrics.contains(r#"spillway_request_duration_seconds_count{cascade="last"} 1"#), "{metrics}");
}
