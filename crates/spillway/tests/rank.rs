//! The reserve's share, visible for every cascade: fallback traffic counted
//! by position (anything but the cascade's first model), so a fixed chain
//! whose second model carries the traffic raises the fallback-share alert
//! (the webhook gets it, naming the cascade, the share, the model and how
//! long); `x-spillway-rank` on whole and streamed answers and through the
//! Responses and Messages APIs; the `rank` label of
//! `spillway_served_total`; and `health.breaker` overridden per cascade
//! entry and per provider.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)]

mod common;

use common::*;
use serde_json::json;
use std::time::Duration;

/// A GigaChat-like primary that is down, a Yandex-like reserve and a local
/// emergency tier, every one `preferred` (a fixed chain).
fn yaml(hook: &FakeUpstream) -> String {
    format!(
        "providers:
  gigachat:
    kind: mock
    models:
      - {{ id: GigaChat-Pro, behavior: {{ error_rate: 1.0, error_status: 502 }} }}
  yandex:
    kind: mock
    models: [ {{ id: yandexgpt }} ]
  local:
    kind: mock
    models: [ {{ id: t-lite }} ]
{FAST_HEALTH}cascades:
  chat:
    models: [gigachat/GigaChat-Pro, yandex/yandexgpt, local/t-lite]
alerts:
  webhook: {{ url: \"{}/alerts\" }}
  fallback_share: {{ above: 0.2, for: 1s }}
  repeat_after: 1h
",
        hook.origin()
    )
}

#[tokio::test]
async fn a_fixed_chain_whose_second_model_carries_the_traffic_raises_the_fallback_share_alert() {
    let hook = FakeUpstream::start_at("/alerts").await;
    let gw = start(&yaml(&hook)).await;
    let share_alerts = |h: &FakeUpstream| h.requests().into_iter().filter(|r| r["kind"] == "fallback_share").count();
    // Traffic until the share has held above 20% for the window (1 s; the
    // rule checks every second), at most a few seconds.
    let started = tokio::time::Instant::now();
    while share_alerts(&hook) == 0 && started.elapsed() < Duration::from_secs(10) {
        for _ in 0..5 {
            let resp = gw.post(&chat("chat", false)).await;
            assert_eq!(resp.status(), 200);
            assert_eq!(header(&resp, "x-spillway-model"), "yandex/yandexgpt");
            assert_eq!(header(&resp, "x-spillway-tier"), "preferred", "every model of a fixed chain is preferred");
            assert_eq!(header(&resp, "x-spillway-rank"), "2");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let alert = hook.requests().into_iter().find(|r| r["kind"] == "fallback_share").expect("the alert fired");
    let text = alert["text"].as_str().unwrap();
    assert!(text.starts_with("Cascade chat: fallback models (not its first) serve 100% of traffic"), "{text}");
    assert!(text.contains("carried by yandex/yandexgpt 100%"), "{text}");
    assert!(text.contains(" for ") && text.contains(" since "), "{text}");
    let served =
        r#"spillway_served_total{cascade="chat",tier="preferred",provider="yandex",model="yandexgpt",rank="2"}"#;
    assert!(gw.metric(served).await >= 5.0);
    let first =
        r#"spillway_served_total{cascade="chat",tier="preferred",provider="gigachat",model="GigaChat-Pro",rank="1"}"#;
    assert_eq!(gw.metric(first).await, 0.0);
}

#[tokio::test]
async fn the_rank_header_is_on_whole_streamed_responses_and_messages_answers() {
    let hook = FakeUpstream::start_at("/alerts").await;
    let gw = start(&yaml(&hook)).await;
    let whole = gw.post(&chat("chat", false)).await;
    assert_eq!(header(&whole, "x-spillway-rank"), "2");
    let streamed = gw.post(&chat("chat", true)).await;
    assert_eq!(header(&streamed, "x-spillway-rank"), "2");
    assert!(!streamed_text(&sse_events(streamed).await).is_empty());
    // Straight to a model: rank 1 of its own one-model plan.
    let direct = gw.post(&chat("local/t-lite", false)).await;
    assert_eq!(header(&direct, "x-spillway-rank"), "1");
    let c = client();
    for stream in [false, true] {
        let r =
            c.post(format!("{}/v1/responses", gw.url)).json(&json!({"model": "chat", "input": "Hi", "stream": stream}));
        let r = r.send().await.unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(header(&r, "x-spillway-rank"), "2", "responses, stream={stream}");
        let m = c
            .post(format!("{}/v1/messages", gw.url))
            .header("anthropic-version", "2023-06-01")
            .json(&json!({"model": "chat", "max_tokens": 16, "stream": stream, "messages": [{"role": "user", "content": "Hi"}]}));
        let m = m.send().await.unwrap();
        assert_eq!(m.status(), 200);
        assert_eq!(header(&m, "x-spillway-rank"), "2", "messages, stream={stream}");
    }
    let streamed_series =
        r#"spillway_served_total{cascade="chat",tier="preferred",provider="yandex",model="yandexgpt",rank="2"}"#;
    assert_eq!(gw.metric(streamed_series).await, 6.0, "whole and streamed answers count the same");
}

/// Every model fails; the default rule opens a breaker after 2 failures in a
/// row. The emergency tier overridden per cascade entry, and a provider
/// overridden as a whole, stay closed (tried every time).
#[tokio::test]
async fn breaker_rules_can_be_overridden_per_cascade_entry_and_per_provider() {
    let yaml = "server: { admin_token: adm }
providers:
  p:
    kind: mock
    models:
      - { id: strict, behavior: { error_rate: 1.0, error_status: 503 } }
      - { id: flaky, behavior: { error_rate: 1.0, error_status: 503 } }
  q:
    kind: mock
    breaker: { consecutive_failures: 100, min_requests: 1000 }
    models:
      - { id: tolerant, behavior: { error_rate: 1.0, error_status: 503 } }
health:
  retries: { max: 0, backoff: 1ms, jitter: 0 }
  breaker: { consecutive_failures: 2, open_for: 1h, open_min: 1h }
cascades:
  primary:
    models: [p/strict]
  emergency:
    models: [p/flaky, q/tolerant]
    breakers:
      p/flaky: { consecutive_failures: 100, min_requests: 1000 }
";
    let gw = start(yaml).await;
    for stream in [false, true, false, true, false] {
        assert_eq!(gw.post(&chat("primary", stream)).await.status(), 503);
        assert_eq!(gw.post(&chat("emergency", stream)).await.status(), 503);
    }
    let state = gw.admin_get("/admin/state", "adm").await;
    let breaker =
        |cascade: usize, model: usize| state["cascades"][cascade]["models"][model]["breaker"]["state"].clone();
    assert_eq!(breaker(0, 0), "open", "health.breaker: 2 in a row: {state}");
    assert_eq!(breaker(1, 0), "closed", "cascades.emergency.breakers.p/flaky: {state}");
    assert_eq!(breaker(1, 1), "closed", "providers.q.breaker: {state}");
    let flaky =
        r#"spillway_attempt_failures_total{cascade="emergency",provider="p",model="flaky",reason="upstream_error"}"#;
    assert_eq!(gw.metric(flaky).await, 5.0, "tried on every request");
}
