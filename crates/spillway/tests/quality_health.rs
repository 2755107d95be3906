//! Quality health through the composition root, on a paused clock: a model
//! that keeps answering 200 but in the wrong script is demoted behind the
//! healthy model after `min_answers`, its probes fail while it is still bad
//! (the period doubles), it comes back once its probes pass, and a demoted
//! model that is the only one of its cascade still answers. Whole and
//! streamed (a stream is judged at its end: the next requests move).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)]

mod common;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use serde_json::json;
use spillway::server::AppState;
use std::sync::Arc;
use std::time::Duration;

/// `bad/m` answers Russian prompts in English for its first 3 minutes;
/// `good/m` always answers well.
const YAML: &str = "
providers:
  bad:
    kind: mock
    models: [ { id: m, behavior: { reply: 'Ответ модели по существу вопроса, на русском языке.', wrong_script_rate: 1.0, bad_windows: [ { start: 0s, duration: 3m } ] } } ]
  good:
    kind: mock
    models: [ { id: m, behavior: { reply: 'Хороший ответ на русском языке, по существу вопроса.' } } ]
cascades:
  pair:
    models: [bad/m, good/m]
    quality: { window: 20, min_answers: 4, max_bad_share: 0.3, demote_for: 1m, demote_max: 10m, probe_every: 2, probe_answers: 2 }
  only:
    models: [bad/m]
    quality: { window: 20, min_answers: 4, max_bad_share: 0.3, demote_for: 1m, probe_every: 2, probe_answers: 2 }
";

fn start(yaml: &str) -> Arc<AppState> {
    common::app_state(yaml)
}

/// One Russian question, read to its end: status and answering model.
async fn ask(state: &Arc<AppState>, cascade: &str, stream: bool) -> (u16, String) {
    let body = json!({"model": cascade, "stream": stream,
        "messages": [{"role": "user", "content": "Как работает кэширование в браузере?"}]});
    let request = http::Request::post("/v1/chat/completions")
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap();
    let response = spillway::server::chat::chat(state.clone(), request).await;
    let status = response.status().as_u16();
    let model = response.headers().get("x-spillway-model").map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default();
    response.into_body().collect().await.unwrap();
    (status, model)
}

fn demoted(state: &Arc<AppState>, model: &str) -> Option<u64> {
    state.gateway.load().health.find_model(model).and_then(|m| m.quality.demoted_until())
}

async fn demotes_probes_and_restores(stream: bool) {
    let state = start(YAML);
    // Four wrong-script answers: over the rule (0.3) once min_answers is reached.
    for i in 0..4 {
        assert_eq!(ask(&state, "pair", stream).await, (200, "bad/m".into()), "answer {i}");
    }
    assert!(demoted(&state, "bad/m").is_some(), "demoted after 4 bad answers");
    // Demoted: the healthy model goes first.
    for _ in 0..5 {
        assert_eq!(ask(&state, "pair", stream).await, (200, "good/m".into()));
    }
    // The period is over but the model is still bad: one request in two
    // probes it; two bad probes demote it again, for twice as long.
    tokio::time::advance(Duration::from_secs(61)).await;
    let mut probed = 0;
    for _ in 0..4 {
        if ask(&state, "pair", stream).await.1 == "bad/m" {
            probed += 1;
        }
    }
    assert_eq!(probed, 2, "one request in two probes, never a burst");
    let until = demoted(&state, "bad/m").expect("still demoted");
    let now = spillway::health::clock::now_ms();
    assert!(until >= now + 110_000, "the second period is twice the first: {}", until - now);
    for _ in 0..3 {
        assert_eq!(ask(&state, "pair", stream).await, (200, "good/m".into()));
    }
    // The model recovers (its bad window ends at 3 min); after the period
    // two good probes restore it.
    tokio::time::advance(Duration::from_secs(125)).await;
    let mut answered = Vec::new();
    for _ in 0..4 {
        answered.push(ask(&state, "pair", stream).await.1);
    }
    assert_eq!(demoted(&state, "bad/m"), None, "restored: {answered:?}");
    assert_eq!(ask(&state, "pair", stream).await, (200, "bad/m".into()), "back at its place");
}

#[tokio::test(start_paused = true)]
async fn a_model_that_answers_badly_is_demoted_probed_and_restored_whole() {
    demotes_probes_and_restores(false).await;
}

#[tokio::test(start_paused = true)]
async fn a_model_that_answers_badly_is_demoted_probed_and_restored_streamed() {
    demotes_probes_and_restores(true).await;
}

/// The demotion and the restoration are alerts (the second resolves the
/// first), and `spillway_quality_demoted` follows the model.
#[tokio::test(start_paused = true)]
async fn demotion_alerts_and_its_restoration_resolves_it() {
    let state = start(YAML);
    let mut tap = state.gateway.load().shared.alerts.tap(64).unwrap();
    let gauge = |state: &Arc<AppState>| {
        let gw = state.gateway.load();
        spillway::health::registry::export_gauges(&gw.health, &state.metrics);
        let text = state.metrics.render();
        text.lines()
            .find_map(|l| l.strip_prefix("spillway_quality_demoted{provider=\"bad\",model=\"m\"} "))
            .map(str::to_owned)
    };
    assert_eq!(gauge(&state), None, "no series before a demotion");
    for _ in 0..4 {
        ask(&state, "pair", false).await;
    }
    assert_eq!(gauge(&state).as_deref(), Some("1"));
    tokio::time::advance(Duration::from_secs(200)).await;
    for _ in 0..4 {
        ask(&state, "pair", true).await;
    }
    assert_eq!(demoted(&state, "bad/m"), None);
    assert_eq!(gauge(&state).as_deref(), Some("0"));
    tokio::time::sleep(Duration::from_secs(1)).await;
    let mut kinds = Vec::new();
    while let Ok(m) = tap.try_recv() {
        kinds.push((m.body["kind"].as_str().unwrap().to_owned(), m.body["resolves"].clone(), m.body["text"].clone()));
    }
    let demoted_at = kinds.iter().position(|k| k.0 == "quality_demoted").expect("a demotion alert");
    let restored_at = kinds.iter().position(|k| k.0 == "quality_restored").expect("a restoration message");
    assert!(demoted_at < restored_at, "{kinds:?}");
    assert_eq!(kinds[restored_at].1, "quality_demoted:bad/m", "{kinds:?}");
    assert!(kinds[demoted_at].2.as_str().unwrap().contains("wrong_script"), "{kinds:?}");
}

#[tokio::test(start_paused = true)]
async fn a_demoted_model_still_answers_when_it_is_the_only_one() {
    let state = start(YAML);
    for stream in [false, true, false, true, false] {
        assert_eq!(ask(&state, "only", stream).await, (200, "bad/m".into()));
    }
    assert!(demoted(&state, "bad/m").is_some());
    for stream in [false, true] {
        assert_eq!(ask(&state, "only", stream).await, (200, "bad/m".into()), "not dead: it still answers");
    }
}
