//! Incident 001's alerts, through the composition root on a paused clock:
//! the fallback-share alert goes out `for` after the share first rose
//! (within one evaluation), what a digest held goes out when the state
//! ends (never stale after it), and every alert that opens a state — the
//! breaker, the fallback share, a dead cascade — is followed by its
//! resolved message. Requests go to the real handler in-process, whole and
//! streamed alike; the alerts are read from the bus's tap, as the sinks
//! would get them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)]

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use serde_json::{json, Value};
use spillway::alerts::sink::Message;
use spillway::app::App;
use spillway::server::AppState;
use std::sync::Arc;
use std::time::Duration;

const MIN: u64 = 60_000;

/// The seed's premium cascade with its breaker (5 in a row or 30 % in 60 s,
/// open 120 s) and alert ("reserve > 20 % for 10 min", repeats every 30
/// min); the primary fails with `outage` from 5 min on.
fn yaml(outage: &str) -> String {
    format!(
        "providers:
  gigachat:
    kind: mock
    models:
      - {{ id: GigaChat-Pro, behavior: {{ latency: 200ms, outages: [ {outage} ] }} }}
  yandex:
    kind: mock
    models: [ {{ id: yandexgpt, behavior: {{ latency: 300ms }} }} ]
health:
  breaker: {{ window: 60s, consecutive_failures: 5, failure_rate: 0.3, min_requests: 10, open_for: 120s }}
  timeouts: {{ first_token: 5s }}
cascades:
  support:
    models: [gigachat/GigaChat-Pro, yandex/yandexgpt]
  lonely:
    models: [gigachat/GigaChat-Pro]
alerts:
  fallback_share: {{ above: 0.2, for: 10m }}
  repeat_after: 30m
"
    )
}

struct Gateway {
    state: Arc<AppState>,
    tap: tokio::sync::mpsc::Receiver<Message>,
    /// The gateway clock's reading at the start, Unix ms.
    t0: u64,
}

fn start(yaml: &str) -> Gateway {
    let config = spillway::config::load_str(yaml, None, &|_| None).unwrap_or_else(|e| panic!("{e}"));
    let app = App::start(config).unwrap();
    let state = app.state.clone();
    let tap = state.gateway.load().shared.alerts.tap(4096).unwrap();
    // The jobs live as long as the test's runtime.
    std::mem::forget(app);
    Gateway { state, tap, t0: spillway::health::clock::now_ms() }
}

/// One request to `cascade`, whole or streamed, read to its end: the status.
async fn ask(state: &Arc<AppState>, cascade: &str, stream: bool) -> u16 {
    let body = json!({"model": cascade, "stream": stream, "messages": [{"role": "user", "content": "Где мой заказ?"}]});
    let request = http::Request::post("/v1/chat/completions")
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap();
    let response = spillway::server::chat::chat(state.clone(), request).await;
    let status = response.status().as_u16();
    let _ = response.into_body().collect().await;
    status
}

/// Requests every 2.5 s (0.4 a second, whole and streamed in turn) for `for_`.
async fn traffic(state: &Arc<AppState>, cascade: &str, for_: Duration) -> Vec<u16> {
    let mut tasks = tokio::task::JoinSet::new();
    let end = tokio::time::Instant::now() + for_;
    let mut n = 0u32;
    while tokio::time::Instant::now() < end {
        let (state, cascade) = (state.clone(), cascade.to_owned());
        tasks.spawn(async move { ask(&state, &cascade, n % 2 == 1).await });
        n += 1;
        tokio::time::sleep(Duration::from_millis(2500)).await;
    }
    let mut statuses = Vec::new();
    while let Some(s) = tasks.join_next().await {
        statuses.push(s.unwrap());
    }
    statuses
}

/// Every message that went out: (minutes from the start, body).
fn sent(gw: &mut Gateway) -> Vec<(f64, Value)> {
    let mut out = Vec::new();
    while let Ok(m) = gw.tap.try_recv() {
        let at = m.body["at_ms"].as_u64().unwrap().saturating_sub(gw.t0) as f64 / MIN as f64;
        out.push((at, m.body));
    }
    out
}

fn position(msgs: &[(f64, Value)], f: impl Fn(&Value) -> bool) -> Option<usize> {
    msgs.iter().position(|(_, b)| f(b))
}

/// A 20-minute outage of the primary (a 502, then a hang): the share alert
/// 10 min after it began (within the rule's 1-minute evaluation), the
/// breaker's re-openings in a digest sent when it closes, then the breaker
/// and the share resolved — and nothing of either kind after that.
#[tokio::test(start_paused = true)]
async fn an_outage_alerts_on_time_and_every_alert_is_resolved() {
    for outage in ["{ start: 5m, duration: 20m, status: 502 }", "{ start: 5m, duration: 20m, status: 0 }"] {
        let mut gw = start(&yaml(outage));
        let statuses = traffic(&gw.state, "support", Duration::from_secs(40 * 60)).await;
        assert!(statuses.iter().all(|s| *s == 200), "{outage}: the reserve answers everything");
        // Past every digest window.
        tokio::time::sleep(Duration::from_secs(35 * 60)).await;
        let msgs = sent(&mut gw);
        let kinds: Vec<(String, String)> =
            msgs.iter().map(|(at, b)| (format!("{at:.1}"), b["kind"].as_str().unwrap().to_owned())).collect();

        let share = position(&msgs, |b| b["kind"] == "fallback_share").expect("the share alert");
        let fired = msgs[share].0;
        assert!((14.0..=16.0).contains(&fired), "{outage}: fired at {fired:.2} min, the outage began at 5: {kinds:?}");

        let opened = position(&msgs, |b| b["kind"] == "breaker_opened").unwrap();
        let closed = position(&msgs, |b| b["kind"] == "breaker_closed").expect("the breaker resolved");
        let back = position(&msgs, |b| b["kind"] == "fallback_share_back").expect("the share resolved");
        assert!(opened < share && share < closed && closed < back, "{outage}: {kinds:?}");
        assert!(msgs[closed].1["resolves"] == "breaker_opened:gigachat/GigaChat-Pro", "{:?}", msgs[closed]);
        assert!(msgs[back].1["text"].as_str().unwrap().starts_with("Resolved after "), "{:?}", msgs[back]);
        assert!((25.0..=28.0).contains(&msgs[closed].0) && msgs[back].0 <= 30.0, "{outage}: {kinds:?}");
        // The breaker re-opened through the outage: one digest, sent as it
        // closed (not 30 min after it opened), right before the resolution.
        let digest = &msgs[closed - 1].1;
        assert!(digest["digest"] == true && digest["kind"] == "breaker_opened", "{outage}: {kinds:?}");
        assert!(msgs[closed - 1].0 >= msgs[closed].0 - 0.01);
        // No stale repeats: nothing of either state after its resolution.
        assert!(!msgs[closed..].iter().any(|(_, b)| b["kind"] == "breaker_opened"), "{outage}: {kinds:?}");
        assert!(!msgs[back..].iter().any(|(_, b)| b["kind"] == "fallback_share"), "{outage}: {kinds:?}");
        // Every alert that opened was resolved, once.
        assert_eq!(msgs.iter().filter(|(_, b)| b.get("resolves").is_some()).count(), 2, "{outage}: {kinds:?}");
    }
}

/// A cascade with nothing left: its alert, then — once a model answers
/// again, whole or streamed — the resolved message.
#[tokio::test(start_paused = true)]
async fn a_dead_cascade_is_resolved_when_it_answers_again() {
    for stream in [false, true] {
        let mut gw = start(&yaml("{ start: 0s, duration: 1m, status: 502 }"));
        for _ in 0..3 {
            assert_eq!(ask(&gw.state, "lonely", stream).await, 503);
        }
        tokio::time::sleep(Duration::from_secs(5 * 60)).await;
        assert_eq!(ask(&gw.state, "lonely", stream).await, 200);
        assert_eq!(ask(&gw.state, "lonely", stream).await, 200);
        tokio::time::sleep(Duration::from_secs(1)).await;
        let msgs = sent(&mut gw);
        let of = |kind: &str| msgs.iter().filter(|(_, b)| b["kind"] == kind && b.get("digest").is_none()).count();
        assert_eq!((of("cascade_dead"), of("cascade_alive")), (1, 1), "stream {stream}: {msgs:?}");
        // The two later failures were held; their digest goes out as the
        // cascade answers again, before the resolution, not 30 min later.
        let at = position(&msgs, |b| b["kind"] == "cascade_alive").unwrap();
        assert_eq!(msgs[at - 1].1["digest"], true, "{msgs:?}");
        assert_eq!(msgs[at - 1].1["count"], 2, "{msgs:?}");
        let alive = &msgs[at].1;
        assert_eq!(alive["resolves"], "cascade_dead:lonely");
        assert!(alive["text"].as_str().unwrap().contains("Cascade lonely answers again since"), "{alive}");
    }
}

/// A cascade that flaps (dies, answers, dies again within `repeat_after`)
/// is one alert and its resolution, then one digest for the window that
/// says the last time ended too — not a pair of messages per flap.
#[tokio::test(start_paused = true)]
async fn a_flapping_state_is_one_alert_one_resolution_and_one_digest() {
    let mut gw = start(&yaml("{ start: 0s, duration: 1m, status: 502 }, { start: 5m, duration: 1m, status: 502 }"));
    for at_minute in [0u64, 5] {
        let until = Duration::from_secs(at_minute * 60 + 30);
        tokio::time::sleep(until.saturating_sub(Duration::from_millis(spillway::health::clock::now_ms() - gw.t0)))
            .await;
        assert_eq!(ask(&gw.state, "lonely", at_minute == 5).await, 503);
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert_eq!(ask(&gw.state, "lonely", at_minute == 0).await, 200);
    }
    tokio::time::sleep(Duration::from_secs(30 * 60)).await;
    let msgs = sent(&mut gw);
    let kinds: Vec<&str> = msgs.iter().map(|(_, b)| b["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["cascade_dead", "cascade_alive", "cascade_dead"], "{msgs:?}");
    let digest = &msgs[2].1;
    assert_eq!((digest["digest"].as_bool(), digest["count"].as_u64()), (Some(true), Some(1)));
    assert!(digest["text"].as_str().unwrap().contains(" Over again since "), "{digest}");
    assert!((30.0..31.0).contains(&msgs[2].0), "at the window's end: {msgs:?}");
}
