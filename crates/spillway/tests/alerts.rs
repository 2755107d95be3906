//! Alerts end to end: a fake Telegram Bot API receives the cascade-change
//! diff, alerts are deduplicated within `repeat_after`, a webhook gets JSON,
//! and a sink that fails or hangs never slows or fails a request. (The
//! fallback-share window and dedupe arithmetic are unit-tested under paused
//! time in `src/alerts/`.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)]

mod common;

use common::*;
use spillway::alerts::Event;
use std::time::Duration;

fn yaml(up: &FakeUpstream, alerts: &str) -> String {
    format!(
        "providers:\n{}  down:\n    kind: mock\n    models:\n      - {{ id: m, behavior: {{ error_rate: 1.0, error_status: 503 }} }}\n{FAST_HEALTH}cascades:\n  chat:\n    models: [down/m, up/m]\n  dead:\n    models: [down/m]\nalerts:\n{alerts}",
        openai_provider("up", up)
    )
}

fn telegram(fake: &FakeUpstream) -> String {
    format!("  telegram: {{ bot_token: \"123:SECRET\", chat_id: \"-100\", api_base: \"{}\" }}\n", fake.origin())
}

#[tokio::test]
async fn telegram_receives_the_cascade_change_diff() {
    let tg = FakeUpstream::start_at("/sendMessage").await;
    let up = FakeUpstream::start().await;
    let gw = start(&yaml(&up, &telegram(&tg))).await;
    let diff = "extraction: +groq/qwen3-235b, -groq/llama-guard-4 (removed)";
    gw.state
        .gateway
        .load()
        .shared
        .alerts
        .publish(Event::CascadeChanged { cascade: "extraction".into(), diff: diff.into() });
    assert!(tg.wait_for(Duration::from_secs(5), |t| t.calls() == 1).await);
    let body = &tg.requests()[0];
    assert_eq!(body["chat_id"], "-100");
    let text = body["text"].as_str().unwrap();
    assert!(text.starts_with(&format!("Cascade changed: {diff}")), "{text}");
    assert!(text.contains(" UTC"), "{text}");
}

#[tokio::test]
async fn the_same_alert_goes_out_once_within_repeat_after() {
    let hook = FakeUpstream::start_at("/alerts").await;
    let up = FakeUpstream::start().await;
    let sinks = format!("  webhook: {{ url: \"{}/alerts\" }}\n  repeat_after: 1h\n", hook.origin());
    let gw = start(&yaml(&up, &sinks)).await;
    for _ in 0..3 {
        assert_eq!(gw.post(&chat("dead", false)).await.status(), 503);
    }
    assert!(hook.wait_for(Duration::from_secs(5), |h| h.calls() >= 1).await);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let dead: Vec<_> = hook.requests().into_iter().filter(|b| b["kind"] == "cascade_dead").collect();
    assert_eq!(dead.len(), 1, "{dead:?}");
    assert!(dead[0]["text"].as_str().unwrap().contains("cascade dead"), "{dead:?}");
}

#[tokio::test]
async fn a_failing_or_hanging_sink_does_not_touch_requests() {
    let tg = FakeUpstream::start_at("/sendMessage").await;
    tg.set_default(Reply::hang());
    let hook = FakeUpstream::start_at("/alerts").await;
    hook.set_default(Reply::error(500, "server_error", "down"));
    let up = FakeUpstream::start().await;
    let sinks = format!("{}  webhook: {{ url: \"{}/alerts\" }}\n  repeat_after: 1ms\n", telegram(&tg), hook.origin());
    let gw = start(&yaml(&up, &sinks)).await;
    // A request that waited on a sink would take the sink's whole send
    // timeout (the telegram fake never answers): no request may come near
    // it. (A bound on the total made this fail on a loaded machine.)
    let mut slowest = Duration::ZERO;
    for _ in 0..20 {
        let started = tokio::time::Instant::now();
        let resp = gw.post(&chat("chat", false)).await;
        assert_eq!(resp.status(), 200);
        assert_eq!(header(&resp, "x-spillway-model"), "up/m");
        assert_eq!(gw.post(&chat("dead", false)).await.status(), 503);
        slowest = slowest.max(started.elapsed());
    }
    assert!(slowest < Duration::from_secs(3), "requests waited on the sinks: the slowest pair took {slowest:?}");
    // The sinks were tried (and failed) meanwhile.
    assert!(hook.wait_for(Duration::from_secs(5), |h| h.calls() >= 1).await);
    assert!(tg.wait_for(Duration::from_secs(5), |t| t.calls() >= 1).await);
}
