//! A config generation owns its background jobs: a reload starts the new
//! generation's and stops the old one's. Started the way `spillway serve`
//! starts (the composition root, from a file, every job running), reloaded
//! through the admin API. (Round 1 found every reload leaking the old
//! generation's jobs: after three reloads one handoff called its webhook
//! four times.)

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)] // tests: fail loudly

mod common;
mod file_gateway;

use common::{chat, FakeUpstream, Reply};
use file_gateway::{FileGateway, TempDir, ADMIN};
use std::time::Duration;

/// A cascade whose only model fails and which hands off; alerts and
/// handoffs go to `alert_hook` and `handoff_hook`; provider `local`'s load
/// is scraped from `metrics` every 20 ms. `generation` changes the file.
fn config(dir: &TempDir, alert_hook: &str, handoff_hook: &str, metrics: &str, generation: u32) -> String {
    format!(
        "# generation {generation}
server:
  admin_token: {ADMIN}
state:
  data_dir: {}
providers:
  down:
    kind: mock
    models: [{{ id: m, behavior: {{ error_rate: 1.0 }} }}]
  local:
    kind: mock
    models: [{{ id: t }}]
    load:
      source: vllm_metrics
      url: {metrics}
      interval: 20ms
      profiles: [{{ name: normal, below: 0.9 }}, {{ name: lazy }}]
alerts:
  webhook: {{ url: \"{alert_hook}\" }}
  repeat_after: 1ms
handoff:
  webhook: {handoff_hook}
cascades:
  chat:
    models: [down/m]
    handoff: true
{}",
        dir.path().join("data").display(),
        common::FAST_HEALTH
    )
}

async fn hook() -> (FakeUpstream, String) {
    let up = FakeUpstream::start_at("/hook").await;
    up.set_default(Reply::json(serde_json::json!({"ok": true})));
    let url = format!("{}/hook", up.origin());
    (up, url)
}

/// Polls `f` every 10 ms for up to 2 s until it holds.
async fn eventually(mut f: impl FnMut() -> bool) -> bool {
    for _ in 0..200 {
        if f() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    f()
}

async fn reload(gw: &FileGateway) {
    let (status, body) = gw.admin_post("/admin/config/reload").await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn after_three_reloads_one_handoff_calls_its_webhook_once() {
    let dir = TempDir::new("gen-handoff");
    let (alerts, alert_url) = hook().await;
    let (handoffs, handoff_url) = hook().await;
    let metrics = FakeUpstream::start_at("/metrics").await;
    let metrics_url = format!("{}/metrics", metrics.origin());
    let gw = FileGateway::start(dir.path(), &config(&dir, &alert_url, &handoff_url, &metrics_url, 0)).await;
    for generation in 1..=3 {
        std::fs::write(&gw.config_path, config(&dir, &alert_url, &handoff_url, &metrics_url, generation)).unwrap();
        reload(&gw).await;
    }
    let resp = common::client().post(format!("{}/v1/chat/completions", gw.url)).json(&chat("chat", false)).send();
    let resp = resp.await.unwrap();
    assert_eq!(common::header(&resp, "x-spillway-tier"), "handoff");
    assert!(eventually(|| handoffs.calls() >= 1).await, "the handoff webhook was called");
    // Give any leaked dispatcher time to send its copy.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(handoffs.calls(), 1, "exactly one call, not one per generation");
    let kinds: Vec<String> = alerts.requests().iter().map(|r| r["kind"].as_str().unwrap_or("").to_string()).collect();
    let queued = kinds.iter().filter(|k| *k == "handoff_queued").count();
    assert_eq!(queued, 1, "one handoff alert from the live generation only: {kinds:?}");
    gw.stop().await;
}

#[tokio::test]
async fn the_old_generations_load_monitor_and_alert_sinks_stop() {
    let dir = TempDir::new("gen-jobs");
    let (old_alerts, old_alert_url) = hook().await;
    let (new_alerts, new_alert_url) = hook().await;
    let (_handoffs, handoff_url) = hook().await;
    let (old_metrics, new_metrics) =
        (FakeUpstream::start_at("/metrics").await, FakeUpstream::start_at("/metrics").await);
    let (old_metrics_url, new_metrics_url) =
        (format!("{}/metrics", old_metrics.origin()), format!("{}/metrics", new_metrics.origin()));
    let gw = FileGateway::start(dir.path(), &config(&dir, &old_alert_url, &handoff_url, &old_metrics_url, 0)).await;
    assert!(eventually(|| old_metrics.calls() >= 2).await, "the first generation's monitor polls");

    std::fs::write(&gw.config_path, config(&dir, &new_alert_url, &handoff_url, &new_metrics_url, 1)).unwrap();
    reload(&gw).await;
    assert!(eventually(|| new_metrics.calls() >= 2).await, "the new generation's monitor polls");
    let scraped = old_metrics.calls();
    // Ten intervals later the old monitor has not polled again (one scrape
    // may have been in flight when its generation stopped).
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(old_metrics.calls() <= scraped + 1, "old monitor still polls: {} -> {}", scraped, old_metrics.calls());

    // Alerts now go to the new generation's sink only. (Several: a leaked
    // dispatcher would race the live one for each, deduplicated on the
    // shared bus, and win about half of them.)
    for _ in 0..6 {
        let resp = common::client().post(format!("{}/v1/chat/completions", gw.url)).json(&chat("chat", false)).send();
        assert_eq!(resp.await.unwrap().status(), 200);
    }
    let handoff_alerts = || new_alerts.requests().iter().filter(|r| r["kind"] == "handoff_queued").count();
    assert!(eventually(|| handoff_alerts() >= 6).await, "the new sink hears of every handoff");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let old_after: Vec<_> = old_alerts.requests().iter().map(|r| r["kind"].clone()).collect();
    assert!(!old_after.iter().any(|k| k == "handoff_queued"), "the old sink got {old_after:?}");
    gw.stop().await;
}
